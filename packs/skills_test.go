package packs_test

import (
	"io/fs"
	"regexp"
	"slices"
	"testing"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// noSkill are the tools no built-in skill holds, each with the reason: agents cannot call them (people,
// psql and the rules planner can).
var noSkill = map[string]string{}

// TestEveryToolIsInASkillOfItsPack: every tool is in a built-in skill, and the skill's row is written by its
// own pack's migration line, so a pack brings the skills of its tools (a tool left out of every skill is
// one agents are never given: personal.close_commitment was, until this test).
func TestEveryToolIsInASkillOfItsPack(t *testing.T) {
	t.Parallel()
	pool, _ := sqltest.NewDB(t)
	rows, err := pool.Query(t.Context(), `SELECT slug, tools FROM skills WHERE is_builtin ORDER BY slug`)
	require.NoError(t, err)
	type skill struct {
		Slug  string
		Tools []string
	}
	skills, err := pgx.CollectRows(rows, pgx.RowToStructByPos[skill])
	require.NoError(t, err)

	for _, p := range packs.All {
		text := lineText(t, p.Migrations().Files)
		for _, tool := range p.Tools {
			if reason, ok := noSkill[tool]; ok {
				require.NotEmpty(t, reason, tool)
				continue
			}
			i := slices.IndexFunc(skills, func(s skill) bool { return slices.Contains(s.Tools, tool) })
			if !assertf(t, i >= 0, "%s (pack %s) is in no built-in skill: add it to one of its pack's skills in a migration of packs/%s/migrations, or list it in noSkill with the reason", tool, p.Name, p.Name) {
				continue
			}
			slug := skills[i].Slug
			written := regexp.MustCompile(`INSERT INTO skills [^;]*?VALUES \(\s*'` + regexp.QuoteMeta(slug) + `'`)
			assertf(t, written.MatchString(text), "%s is in the skill %s, which the %s pack's migration line does not write", tool, slug, p.Name)
		}
	}
}

func assertf(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

// lineText is a migration line's files, one after another.
func lineText(t *testing.T, files fs.FS) string {
	t.Helper()
	var text string
	require.NoError(t, fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, path)
		text += string(b) + "\n"
		return err
	}))
	return text
}
