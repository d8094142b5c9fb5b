package gemsql_test

import (
	"context"
	"io/fs"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"
)

// TestLegacyDatabaseAdoptsTheLines: a database the legacy migrations made, at their end or stopped part way,
// is brought to their end, adopts the core's and the packs' lines without running their first migrations,
// and ends with the schema and the built-in rows of a database the lines made (schema.sql). So does one whose
// adoption an earlier start left part done: one line adopted alone, or a line's table made and nothing in it.
func TestLegacyDatabaseAdoptsTheLines(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile("../schema.sql")
	require.NoError(t, err)
	fresh, _ := sqltest.NewDB(t)
	want := builtInRows(t, fresh)
	later := []string{"core/00002_tool_stumbles.sql", "core/00003_stumbles_unknown_tools.sql", "business/00002_personal_close_commitment.sql"} // the lines' migrations after their first

	for _, tc := range []struct {
		name    string
		stopAt  int64 // 0: every legacy migration
		prepare func(t *testing.T, pool *pgxpool.Pool)
		applied []string
	}{
		{name: "at_the_end", applied: later},
		{name: "stopped_at_40", stopAt: 40, applied: append(legacyAfter(t, 40), later...)},
		{name: "core_adopted_alone", applied: later, prepare: func(t *testing.T, pool *pgxpool.Pool) {
			recordVersions(t, pool, gemsql.CoreLine().Table, 0, 1)
		}},
		{name: "a_line_at_version_0", applied: later, prepare: func(t *testing.T, pool *pgxpool.Pool) {
			recordVersions(t, pool, packs.Lines()[0].Table, 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, url := sqltest.EmptyDB(t)
			legacyMigrate(t, pool, tc.stopAt)
			if tc.prepare != nil {
				tc.prepare(t, pool)
			}

			res, err := gemsql.Migrate(t.Context(), pool, nil, packs.Lines()...)
			require.NoError(t, err)
			require.Equal(t, tc.applied, res.GEM)

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

// TestLinesDatabaseIgnoresAFailedLegacyStart: a GEM from before the lines, started on a database the lines
// made, makes the legacy migrations' table and fails at their first migration. The database is not one the
// legacy migrations made: migrating it again applies nothing and fails nothing.
func TestLinesDatabaseIgnoresAFailedLegacyStart(t *testing.T) {
	t.Parallel()
	pool, _ := sqltest.NewDB(t)
	recordVersions(t, pool, "gem_schema_migrations", 0)
	res, err := gemsql.Migrate(t.Context(), pool, nil, packs.Lines()...)
	require.NoError(t, err)
	require.Empty(t, res.GEM)
}

// recordVersions makes a goose table recording versions as applied, as an earlier start would have left it.
func recordVersions(t *testing.T, pool *pgxpool.Pool, table string, versions ...int64) {
	t.Helper()
	store, err := database.NewStore(goose.DialectPostgres, table)
	require.NoError(t, err)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	require.NoError(t, store.CreateVersionTable(t.Context(), db))
	for _, v := range versions {
		require.NoError(t, store.Insert(t.Context(), db, database.InsertRequest{Version: v}))
	}
}

// legacyAfter are the legacy migrations after version stopAt, as Migrate lists what it applied.
func legacyAfter(t *testing.T, stopAt int64) []string {
	t.Helper()
	names, err := fs.Glob(gemsql.LegacyMigrations(), "*.sql")
	require.NoError(t, err)
	var after []string
	for _, name := range names {
		v, err := strconv.ParseInt(name[:5], 10, 64)
		require.NoError(t, err)
		if v > stopAt {
			after = append(after, "legacy/"+name)
		}
	}
	return after
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

// TestMigrateOnAPoolOfOne: Migrate holds its lock's connection while River's migrations and the lines take
// another; on a pool of one connection it once waited for itself forever. It migrates through a pool of its
// own instead.
func TestMigrateOnAPoolOfOne(t *testing.T) {
	t.Parallel()
	_, url := sqltest.EmptyDB(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := gemsql.Migrate(ctx, pool, nil, packs.Lines()...)
	require.NoError(t, err)
	require.Contains(t, res.GEM, "core/00001_core.sql")
}
