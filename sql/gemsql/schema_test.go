package gemsql_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// updateSchema rewrites schema.sql from the migrations (make schema).
var updateSchema = flag.Bool("update-schema", false, "write schema.sql from a freshly migrated database")

// TestSchemaMatchesMigrations: schema.sql is the schema every migration leaves, as pg_dump prints it, so a
// reader finds the current text of a function or a table in one place instead of in the migration that last
// changed it. A migration that changes the schema without `make schema` fails here.
func TestSchemaMatchesMigrations(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	dump, err := schemaDump(t.Context(), dbURL)
	require.NoError(t, err)
	if *updateSchema {
		require.NoError(t, os.WriteFile("../schema.sql", []byte(dump), 0o644))
		return
	}
	committed, err := os.ReadFile("../schema.sql")
	require.NoError(t, err, "schema.sql is missing: run make schema")
	if string(committed) != dump {
		t.Fatalf("schema.sql is not the schema the migrations make: run make schema and commit it. The first difference:\n%s",
			firstDifference(string(committed), dump))
	}
}

// migrationTables are goose's tables, one per line (gem_core_migrations, gem_pack_os_migrations, and the legacy
// gem_schema_migrations): bookkeeping, which differs between a database the lines made and one they adopted.
var migrationTables = regexp.MustCompile(`\bgem_\w*migrations\b`)

// monthly names the partitions made for the months around today (brain_runs_p2026_12): they differ from one
// month to the next, and are left out of schema.sql; the partitioned tables and their fixed partitions stay.
var monthly = regexp.MustCompile(`_p_?\d{4}_\d{2}`)

// schemaDump is the schema of the database at dbURL as pg_dump prints it, without its header, settings and
// monthly partitions, one statement after another.
func schemaDump(ctx context.Context, dbURL string) (string, error) {
	cmd := exec.CommandContext(ctx, pgDump(), "--schema-only", "--no-owner", "--dbname", dbURL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &dumpError{err: err, stderr: stderr.String()}
	}
	var kept, privileges []string
	for _, stmt := range strings.Split(string(out), ";\n") {
		var lines []string
		for _, line := range strings.Split(stmt, "\n") {
			// Comments, and psql's \restrict of a dump's own session (a random key each time).
			if strings.HasPrefix(line, "--") || strings.HasPrefix(line, `\restrict`) || strings.HasPrefix(line, `\unrestrict`) {
				continue
			}
			lines = append(lines, line)
		}
		s := strings.TrimSpace(strings.Join(lines, "\n"))
		if s == "" || strings.HasPrefix(s, "SET ") || strings.HasPrefix(s, "SELECT pg_catalog.set_config") || monthly.MatchString(s) ||
			migrationTables.MatchString(s) {
			continue
		}
		if strings.HasPrefix(s, "GRANT ") || strings.HasPrefix(s, "REVOKE ") {
			privileges = append(privileges, s+";")
			continue
		}
		kept = append(kept, s+";")
	}
	// Privileges last, sorted: the order of an object's grants is the order they were given in, which means
	// nothing.
	sort.Strings(privileges)
	kept = append(kept, strings.Join(privileges, "\n"))
	return "-- The schema the migration lines leave (River's, the core's in sql/migrations, each pack's in\n" +
		"-- packs/*/migrations), as pg_dump prints it: make schema writes it, and TestSchemaMatchesMigrations fails\n" +
		"-- when it is not current. The monthly partitions and goose's tables are left out; the privileges come last.\n\n" +
		strings.Join(kept, "\n\n") + "\n", nil
}

type dumpError struct {
	err    error
	stderr string
}

func (e *dumpError) Error() string {
	return "pg_dump: " + e.err.Error() + ": " + strings.TrimSpace(e.stderr)
}

// pgDump finds pg_dump as sql/dev-postgres.sh finds the server: GEM_PG_BINDIR, then pg_config's folder, then
// the newest /usr/lib/postgresql/*/bin, then the PATH.
func pgDump() string {
	if d := os.Getenv("GEM_PG_BINDIR"); d != "" {
		return filepath.Join(d, "pg_dump")
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if p := filepath.Join(strings.TrimSpace(string(out)), "pg_dump"); executable(p) {
			return p
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if p := filepath.Join(d, "pg_dump"); executable(p) {
			return p
		}
	}
	return "pg_dump"
}

// versionOf is the major version of a /usr/lib/postgresql/VERSION/bin folder (0 when it is not a number).
func versionOf(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// firstDifference shows the first line where two texts differ, with a few lines around it.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n  schema.sql:     " + x + "\n  the migrations: " + y
		}
	}
	return "(none)"
}
