package packs_test

import (
	"slices"
	"testing"

	"github.com/gemhq/gem/packs"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// noSkill are the tools no built-in skill holds, each with the reason: agents cannot call them (people,
// psql and the rules planner can).
var noSkill = map[string]string{}

// TestEveryToolIsInASkillOfItsPack: every tool is in a built-in skill once its own pack's migration line has
// run — on a database migrated with the core's line and the packs' lines up to that pack, and no further —
// so a pack brings the skills of its tools (a tool left out of every skill is one agents are never given:
// personal.close_commitment was, until this test).
func TestEveryToolIsInASkillOfItsPack(t *testing.T) {
	t.Parallel()
	lines := packs.Lines()
	for i, p := range packs.All {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			pool, _ := sqltest.EmptyDB(t)
			_, err := gemsql.Migrate(t.Context(), pool, nil, lines[:i+1]...)
			require.NoError(t, err)
			require.Equal(t, p.Name, lines[i].Name, "packs.Lines is not in packs.All's order")
			rows, err := pool.Query(t.Context(), `SELECT tools FROM skills WHERE is_builtin`)
			require.NoError(t, err)
			skills, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
			require.NoError(t, err)
			for _, tool := range p.Tools {
				if reason, ok := noSkill[tool]; ok {
					require.NotEmpty(t, reason, tool)
					continue
				}
				if !slices.ContainsFunc(skills, func(tools []string) bool { return slices.Contains(tools, tool) }) {
					t.Errorf("%s is in no built-in skill once the %s pack's line has run: add it to one of its pack's skills in a migration of packs/%s/migrations, or list it in noSkill with the reason",
						tool, p.Name, p.Name)
				}
			}
		})
	}
}
