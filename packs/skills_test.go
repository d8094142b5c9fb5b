package packs_test

import (
	"testing"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// noSkill are the tools no built-in skill holds, each with the reason: agents cannot call them (people,
// psql and the rules planner can).
var noSkill = map[string]string{}

// TestEveryToolIsInASkillOfItsPack: every tool is in a built-in skill once its own pack's migration line has
// run, and in none before — a database migrated with the core's line and the packs' lines before that pack,
// then with that pack's — so a pack brings the skills of its tools, and an earlier line does not give agents a
// tool its pack has not made yet (a tool left out of every skill is one agents are never given:
// personal.close_commitment was, until this test).
func TestEveryToolIsInASkillOfItsPack(t *testing.T) {
	t.Parallel()
	lines := packs.Lines()
	for i, p := range packs.All {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, p.Name, lines[i].Name, "packs.Lines is not in packs.All's order")
			pool, _ := sqltest.EmptyDB(t)
			_, err := gemsql.Migrate(t.Context(), pool, nil, lines[:i]...)
			require.NoError(t, err)
			before := builtInSkillTools(t, pool)
			_, err = gemsql.Migrate(t.Context(), pool, nil, lines[:i+1]...)
			require.NoError(t, err)
			after := builtInSkillTools(t, pool)
			for _, tool := range p.Tools {
				if reason, ok := noSkill[tool]; ok {
					require.NotEmpty(t, reason, tool)
					continue
				}
				if before[tool] {
					t.Errorf("%s is in a built-in skill before the %s pack's line has run: an earlier line's skill names it; move it to one of its pack's skills (packs/%s/migrations)",
						tool, p.Name, p.Name)
				}
				if !after[tool] {
					t.Errorf("%s is in no built-in skill once the %s pack's line has run: add it to one of its pack's skills in a migration of packs/%s/migrations, or list it in noSkill with the reason",
						tool, p.Name, p.Name)
				}
			}
		})
	}
}

// builtInSkillTools are the tools the database's built-in skills hold.
func builtInSkillTools(t *testing.T, pool *pgxpool.Pool) map[string]bool {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT tools FROM skills WHERE is_builtin`)
	require.NoError(t, err)
	skills, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	require.NoError(t, err)
	held := map[string]bool{}
	for _, tools := range skills {
		for _, tool := range tools {
			held[tool] = true
		}
	}
	return held
}
