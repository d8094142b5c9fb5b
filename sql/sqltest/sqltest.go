// Package sqltest gives tests a real, migrated PostgreSQL database of their own.
//
// The server is DATABASE_URL when set; otherwise the repository's private cluster, started on demand with
// sql/dev-postgres.sh, so `go test` works on a fresh machine without a manual step. Each NewDB call copies
// a migrated template database (built once per schema version) and drops the copy when the test ends.
package sqltest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	adminOnce sync.Once
	adminURL  string
	adminErr  error

	templateOnce sync.Once
	templateName string
	templateErr  error
)

// AdminURL returns the URL of the test server's maintenance database, starting the private cluster if
// DATABASE_URL is not set.
func AdminURL(t testing.TB) string {
	t.Helper()
	u, err := FindServer()
	if err != nil {
		t.Fatalf("no PostgreSQL for tests: %v", err)
	}
	return u
}

func findServer() (string, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate sql/dev-postgres.sh")
	}
	script := filepath.Join(filepath.Dir(file), "..", "dev-postgres.sh")
	out, err := exec.Command(script, "start").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("%s start: %v\n%s", script, err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// WithDatabase returns u with its database name replaced.
func WithDatabase(u, name string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	parsed.Path = "/" + name
	return parsed.String()
}

// NewDB creates a migrated database for one test and returns a pool on it and its URL. The database is
// dropped when the test ends.
func NewDB(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	dbURL, drop, err := CreateDatabase(ctx, AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-test", MaxConns: 30})
	if err != nil {
		drop()
		t.Fatalf("error opening test database: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		drop()
	})
	return pool, dbURL
}

// EmptyDB creates a database with nothing in it (not migrated: for tests of migrating) and returns a pool on it
// and its URL. The database is dropped when the test ends.
func EmptyDB(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	admin := AdminURL(t)
	name := "gem_test_empty_" + strings.ReplaceAll(uuid.NewString()[:18], "-", "")
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatalf("error connecting to the test server: %v", err)
	}
	_, err = conn.Exec(t.Context(), "CREATE DATABASE "+name)
	_ = conn.Close(t.Context())
	if err != nil {
		t.Fatalf("error creating an empty database: %v", err)
	}
	url := WithDatabase(admin, name)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatalf("error opening the empty database: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		dropDatabase(admin, name)
	})
	return pool, url
}

// FindServer returns the test server's maintenance URL, starting the private cluster if DATABASE_URL is
// not set (for TestMain, which has no testing.TB).
func FindServer() (string, error) {
	adminOnce.Do(func() { adminURL, adminErr = findServer() })
	return adminURL, adminErr
}

// CreateDatabase creates a migrated database on the server at admin and returns its URL and a function
// that drops it.
func CreateDatabase(ctx context.Context, admin string) (string, func(), error) {
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx, admin) })
	if templateErr != nil {
		return "", nil, fmt.Errorf("error preparing the template database: %w", templateErr)
	}
	name := "gem_test_" + strings.ReplaceAll(uuid.NewString()[:18], "-", "")
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, templateName)); err != nil {
		return "", nil, fmt.Errorf("error creating test database: %w", err)
	}
	return WithDatabase(admin, name), func() { dropDatabase(admin, name) }, nil
}

// dropDatabase drops a test's database, closing whatever connections it still has.
func dropDatabase(admin, name string) {
	conn, err := pgx.Connect(context.Background(), admin)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	_, _ = conn.Exec(context.Background(), fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
}

// ensureTemplate builds the template, migrated with the core's line and every pack's, once per schema version
// (a hash of the lines' files), under an advisory lock so parallel test binaries build it once.
func ensureTemplate(ctx context.Context, admin string) (string, error) {
	h := sha256.New()
	for _, line := range append([]gemsql.Line{gemsql.CoreLine()}, packs.Lines()...) {
		err := fs.WalkDir(line.Files, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(line.Files, path)
			h.Write([]byte(line.Name + "/" + path))
			h.Write(b)
			return err
		})
		if err != nil {
			return "", err
		}
	}
	name := "gem_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]

	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7355608)"); err != nil {
		return "", err
	}
	defer func() { _, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock(7355608)") }()

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: WithDatabase(admin, building), ApplicationName: "gem-test-template"})
	if err != nil {
		return "", err
	}
	migrateCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = gemsql.Migrate(migrateCtx, pool, nil, packs.Lines()...)
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("error migrating the template: %w", err)
	}
	// Rename only when complete, so an interrupted build is never used as a template.
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, name)); err != nil {
		return "", err
	}
	return name, nil
}
