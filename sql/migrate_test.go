package gemsql_test

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/gemhq/gem/packs"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"
)

// TestLegacyDatabaseAdoptsTheLines: a database the legacy migrations made, at their end or stopped part way,
// is brought to their end, adopts the core's and the packs' lines without running their first migrations,
// and ends with the schema and the built-in rows of a database the lines made (schema.sql).
func TestLegacyDatabaseAdoptsTheLines(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile("schema.sql")
	require.NoError(t, err)
	fresh, _ := sqltest.NewDB(t)
	want := builtInRows(t, fresh)

	for _, stopAt := range []int64{0, 40} { // 0: every legacy migration
		t.Run(fmt.Sprintf("legacy_at_%d", stopAt), func(t *testing.T) {
			t.Parallel()
			pool, url := sqltest.EmptyDB(t)
			legacyMigrate(t, pool, stopAt)

			res, err := gemsql.Migrate(t.Context(), pool, nil, packs.Lines()...)
			require.NoError(t, err)
			for _, f := range res.GEM {
				// Every line's first migration restates the legacy migrations (FromLegacy 1).
				require.False(t, !strings.HasPrefix(f, "legacy/") && strings.Contains(f, "/00001_"),
					"a line's first migration ran on a legacy database instead of being adopted: %s", f)
			}
			require.Contains(t, res.GEM, "business/00002_personal_close_commitment.sql", "a line's later migration did not run")
			if stopAt > 0 {
				require.NotEmpty(t, res.GEM, "the legacy migrations after %d were not applied", stopAt)
			}

			dump, err := schemaDump(t.Context(), url)
			require.NoError(t, err)
			if string(committed) != dump {
				t.Fatalf("the adopted database's schema is not schema.sql. The first difference:\n%s", firstDifference(string(committed), dump))
			}
			require.Equal(t, want, builtInRows(t, pool))

			again, err := gemsql.Migrate(t.Context(), pool, nil, packs.Lines()...)
			require.NoError(t, err)
			require.Empty(t, again.GEM)
			status, err := gemsql.MigrationStatus(t.Context(), pool, packs.Lines()...)
			require.NoError(t, err)
			files := 0
			for _, line := range append([]gemsql.Line{gemsql.CoreLine()}, packs.Lines()...) {
				names, err := fs.Glob(line.Files, "*.sql")
				require.NoError(t, err)
				files += len(names)
			}
			require.Len(t, status, files)
			for _, s := range status {
				require.Equal(t, "applied", string(s.State), s.Source.Path)
			}
		})
	}
}

// TestLinesMadeLaterRunOnALegacyDatabase: a line that began after the legacy migrations (FromLegacy 0) runs
// from its first migration on a database they made; only lines that restate them are adopted.
func TestLinesMadeLaterRunOnALegacyDatabase(t *testing.T) {
	t.Parallel()
	pool, _ := sqltest.EmptyDB(t)
	legacyMigrate(t, pool, 0)
	later := gemsql.Line{Name: "later", Table: "gem_pack_later_migrations", Files: os.DirFS("testdata/later")}
	res, err := gemsql.Migrate(t.Context(), pool, nil, append(packs.Lines(), later)...)
	require.NoError(t, err)
	require.Contains(t, res.GEM, "later/00001_later.sql")
	require.NotContains(t, res.GEM, "core/00001_core.sql")
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM later_things`).Scan(&n))
	require.Zero(t, n)
}

// legacyMigrate makes the database as a GEM from before the lines did: River's migrations, then the legacy
// migrations up to stopAt (every one for 0).
func legacyMigrate(t *testing.T, pool *pgxpool.Pool, stopAt int64) {
	t.Helper()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(t.Context(), rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	db := stdlib.OpenDBFromPool(pool)
	provider, err := goose.NewProvider(goose.DialectPostgres, db, gemsql.LegacyMigrations(),
		goose.WithTableName("gem_schema_migrations"), goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	defer provider.Close()
	if stopAt == 0 {
		_, err = provider.Up(t.Context())
	} else {
		_, err = provider.UpTo(t.Context(), stopAt)
	}
	require.NoError(t, err)
}

// builtInRows are the rows the migrations write (the built-in skills and agents, and the migrating role as a
// caller), as text, without their generated ids and times.
func builtInRows(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var rows []string
	for _, q := range []string{
		`SELECT format('%s', (slug, name, description, instructions, tools, category, is_builtin, metadata)) FROM skills ORDER BY slug`,
		`SELECT format('%s -> %s', s.slug, r.slug) FROM skill_dependencies d JOIN skills s ON s.id = d.skill_id
			JOIN skills r ON r.id = d.requires_skill_id ORDER BY 1`,
		`SELECT format('%s', (slug, name, instructions, model, temperature, max_tool_iterations, enabled, code_mode)) FROM agents ORDER BY slug`,
		`SELECT format('%s', (a.slug, s.slug, config_overrides, priority, a_s.enabled, allowed_users, call_timeout_ms,
			call_max_attempts, call_priority)) FROM agent_skills a_s JOIN agents a ON a.id = a_s.agent_id
			JOIN skills s ON s.id = a_s.skill_id ORDER BY 1`,
		`SELECT format('%s', (name, kind, permissions, agents, token_sha256, note, revoked_at)) FROM core_callers ORDER BY name`,
	} {
		r, err := pool.Query(t.Context(), q)
		require.NoError(t, err)
		list, err := pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err)
		require.NotEmpty(t, list, q)
		rows = append(rows, list...)
	}
	return rows
}
