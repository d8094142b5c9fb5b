// Package testenv starts the parts a brain test needs that the brain may not import: a real executor,
// built from the sibling module and run as its own process, exactly as in production.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemcontract"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// RepoRoot is the repository's root folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// RegistryPath is the repository's registry.
func RegistryPath() string { return filepath.Join(RepoRoot(), "tools.registry.json") }

// GEMRegistry is the original GEM's contract, the one GEM's users call, from the repository's extract
// (registry/gemcontract): GEM's 105 tools with GEM's schemas, modes, permissions, timeouts and receipt fields,
// described in the words of the repository's registry.
func GEMRegistry() (*registry.Registry, error) {
	ours, err := os.ReadFile(RegistryPath())
	if err != nil {
		return nil, err
	}
	return gemcontract.Registry(ours)
}

// GEMRegistryDocument is GEMRegistry as a registry document, for a process that loads a registry file.
func GEMRegistryDocument() ([]byte, error) {
	ours, err := os.ReadFile(RegistryPath())
	if err != nil {
		return nil, err
	}
	return gemcontract.Document(ours)
}

// GEMContractRegistry is GEM's contract with the repository's own tools added (those GEM has not): every
// GEM tool with exactly GEM's contract, whatever state the repository's registry is in.
func GEMContractRegistry() (*registry.Registry, error) {
	ours, err := os.ReadFile(RegistryPath())
	if err != nil {
		return nil, err
	}
	return gemcontract.WithOurTools(ours)
}

// ExecutorBinary builds the executor once per test binary and returns its path.
func ExecutorBinary() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gem-executor-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "executor")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/executor")
		cmd.Dir = filepath.Join(RepoRoot(), "executor")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("error building the executor: %v\n%s", err, out)
		}
	})
	return binary, buildErr
}

// RemoveBuilds removes the executor ExecutorBinary built, once the tests that run it are done (a TestMain's
// last step): each build is ~130 MB in the temp folder.
func RemoveBuilds() {
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
}

// Executor is a running executor process.
type Executor struct {
	ID  string
	cmd *exec.Cmd
	// files is the executor's own file store (GEM_FILE_STORE), removed when it stops.
	files string
}

// StartExecutor runs an executor on the database and waits until it has registered. Extra environment
// entries (KEY=value) are added to its environment.
func StartExecutor(dbURL string, env ...string) (*Executor, error) {
	bin, err := ExecutorBinary()
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("test-executor-%d-%d", os.Getpid(), time.Now().UnixNano())
	files, err := os.MkdirTemp("", "gem-test-files-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+RegistryPath(), "GEM_EXECUTOR_ID="+id, "GEM_LOG_LEVEL=warn",
		"GEM_FILE_STORE="+files)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(files)
		return nil, err
	}
	e := &Executor{ID: id, cmd: cmd, files: files}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		e.Stop()
		return nil, err
	}
	defer conn.Close(ctx)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM core_executors WHERE id = $1 AND stopped_at IS NULL`, id).Scan(&n); err != nil {
			e.Stop()
			return nil, fmt.Errorf("executor did not register: %w", err)
		}
		if n == 1 {
			return e, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the executor with SIGTERM (and SIGKILL after 10 seconds).
func (e *Executor) Stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(e.files)
}

// Shared is a test database and the executor serving it, which a package's TestMain starts once for all its
// tests (each works on rows of its own), instead of an executor process per test.
type Shared struct {
	// DatabaseURL is the database's URL.
	DatabaseURL string
	// Executor is the executor process serving the database.
	Executor *Executor
	drop     func()
}

// StartShared makes a migrated database on the tests' PostgreSQL (sqltest.FindServer) and starts an executor
// on it. A TestMain calls Stop once its tests have run.
func StartShared(ctx context.Context) (*Shared, error) {
	admin, err := sqltest.FindServer()
	if err != nil {
		return nil, fmt.Errorf("no PostgreSQL for tests: %w", err)
	}
	dbURL, drop, err := sqltest.CreateDatabase(ctx, admin)
	if err != nil {
		return nil, err
	}
	e, err := StartExecutor(dbURL)
	if err != nil {
		RemoveBuilds()
		drop()
		return nil, err
	}
	return &Shared{DatabaseURL: dbURL, Executor: e, drop: drop}, nil
}

// Stop stops the executor, removes its build and drops the database.
func (s *Shared) Stop() {
	s.Executor.Stop()
	RemoveBuilds()
	s.drop()
}
