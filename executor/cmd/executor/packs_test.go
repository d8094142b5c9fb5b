package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// buildExecutor builds this command into the test's temporary folder and returns the binary's path.
func buildExecutor(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "executor")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// startExecutorProcess runs the executor binary on the database with exactly env (and PATH); it is stopped
// with SIGTERM when the test ends. It returns the process's stderr, the log, and a context that ends when the
// process exits.
func startExecutorProcess(t *testing.T, dbURL string, env ...string) (*sqltest.SyncBuffer, context.Context) {
	t.Helper()
	reg, err := filepath.Abs(filepath.Join("..", "..", "..", registry.DefaultPath))
	require.NoError(t, err)
	cmd := exec.Command(buildExecutor(t), "run")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dbURL, "GEM_REGISTRY=" + reg,
		"GEM_FILE_STORE=" + t.TempDir(), "GEM_EXECUTOR_METRICS_ADDR=off", "GEM_LOG_FORMAT=json"}, env...)
	log := &sqltest.SyncBuffer{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	running, exited := context.WithCancelCause(t.Context())
	go func() { exited(fmt.Errorf("the executor exited (%v):\n%s", cmd.Wait(), log)) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-running.Done():
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-running.Done()
		}
	})
	return log, running
}

// callTool inserts a call as any SQL client may and waits for its receipt.
func callTool(t *testing.T, ctx context.Context, pool *pgxpool.Pool, waiter *gemsql.ReceiptWaiter, tool, input string) *registry.Receipt {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`, tool, input).Scan(&id))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := waiter.WaitOne(ctx, id)
	require.NoError(t, err, "no receipt for %s: %v", tool, context.Cause(ctx))
	return r
}

// TestPackSettingsReportedAtStart: a tool pack's setting that is set but cannot be used is reported when
// the executor starts, a warning naming the variable and what is wrong for each, and the executor runs all
// the same: the tools that need the setting answer not_configured naming it, as they always have.
func TestPackSettingsReportedAtStart(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	waiter := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, waiter.Start(t.Context()))
	t.Cleanup(waiter.Stop)
	log, running := startExecutorProcess(t, dbURL, "GEM_BUSINESS_TIMEZONE=Mars/Olympus", "GEM_LLM_TIMEOUT=soon",
		"GEM_HIGHLEVEL_RETRY_BASE_DELAY=often", "GEM_WEB_SEARCH_PROVIDER=altavista")

	// It runs all the same: the tools that need the settings answer not_configured, naming the variable.
	r := callTool(t, running, pool, waiter, "finance.generate_cashflow_snapshot", `{}`)
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%+v", r.Error)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Equal(t, []string{"GEM_BUSINESS_TIMEZONE"}, d.RequiredEnv)
	require.Contains(t, d.Reason, `GEM_BUSINESS_TIMEZONE="Mars/Olympus" is not a time zone`)
	// The os pack reads it too (its Config): the business's state needs today's date.
	r = callTool(t, running, pool, waiter, ospack.GetStateSnapshot, `{"domain": "business"}`)
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%+v", r.Error)
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Equal(t, []string{"GEM_BUSINESS_TIMEZONE"}, d.RequiredEnv)
	require.Contains(t, d.Reason, `GEM_BUSINESS_TIMEZONE="Mars/Olympus" is not a time zone`)

	r = callTool(t, running, pool, waiter, "sentiment.analyze", `{"text": "fine"}`)
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%+v", r.Error)
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.RequiredEnv, "GEM_LLM_TIMEOUT")
	require.Contains(t, d.Reason, `GEM_LLM_TIMEOUT: "soon" is not a duration`)

	r = callTool(t, running, pool, waiter, "web.search", `{"query": "roof"}`)
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%+v", r.Error)
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.RequiredEnv, "GEM_WEB_SEARCH_PROVIDER")
	require.Contains(t, d.Reason, `GEM_WEB_SEARCH_PROVIDER is "altavista"`)

	// The integrations pack runs as well: its HighLevel tools, with no token, name the variables to set.
	r = callTool(t, running, pool, waiter, "integrations.highlevel.health_check", `{}`)
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%+v", r.Error)
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.RequiredEnv, "GEM_HIGHLEVEL_TOKEN")

	// And it said so when it started, apart from any call: one warning per problem, each naming its
	// variable and value, each once (the business and agent skills packs both read GEM_LLM_*, the os and
	// business packs GEM_BUSINESS_TIMEZONE).
	var warnings []string
	scanner := bufio.NewScanner(strings.NewReader(log.String()))
	for scanner.Scan() {
		var line struct {
			Level, Message, Error string
			CallID                string `json:"call_id"`
		}
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &line), scanner.Text())
		if line.Level == "warn" && line.CallID == "" {
			warnings = append(warnings, line.Message+": "+line.Error)
		}
	}
	for _, want := range []string{`GEM_BUSINESS_TIMEZONE="Mars/Olympus"`, `GEM_LLM_TIMEOUT: "soon"`,
		`GEM_HIGHLEVEL_RETRY_BASE_DELAY="often"`, `GEM_WEB_SEARCH_PROVIDER is "altavista"`} {
		n := 0
		for _, w := range warnings {
			if strings.Contains(w, want) {
				n++
			}
		}
		require.Equal(t, 1, n, "one warning with %s in %q", want, warnings)
	}
}

// TestRegistryCheckListsPackSettings: executor registry check lists the packs' settings that cannot be used,
// each once, as text and in -json, and still exits 0 (they do not break the registry). Not parallel: the
// command reads the process environment.
func TestRegistryCheckListsPackSettings(t *testing.T) {
	reg := filepath.Join("..", "..", "..", registry.DefaultPath)
	code, out, errOut := runCmd("registry", "check", reg)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "Settings that cannot be used")

	t.Setenv("GEM_BUSINESS_TIMEZONE", "Mars/Olympus")
	t.Setenv("GEM_PHONE_REGION", "ZZ") // read by the business pack, which Main hands to the integrations pack too
	t.Setenv("GEM_HIGHLEVEL_TASK_DUE_DAYS", "soon")
	code, out, errOut = runCmd("registry", "check", reg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Settings that cannot be used")
	require.Contains(t, out, `  GEM_BUSINESS_TIMEZONE="Mars/Olympus" is not a time zone`)
	require.Equal(t, 1, strings.Count(out, `GEM_PHONE_REGION="ZZ"`), out)

	code, out, _ = runCmd("registry", "check", "-json", reg)
	require.Equal(t, 0, code)
	var res registryCheckResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.True(t, res.OK)
	require.Len(t, res.SettingProblems, 3, "%q", res.SettingProblems)
	for i, env := range []string{"GEM_BUSINESS_TIMEZONE", "GEM_PHONE_REGION", "GEM_HIGHLEVEL_TASK_DUE_DAYS"} {
		require.Contains(t, res.SettingProblems[i], env)
	}
}

// TestPacksReadNoEnvironment: no tool pack, nor any of this repository's packages it uses, reads the
// environment itself (os.Getenv and its kin): Main reads every setting, once, through packsFromEnv. Every
// package under a pack's folder (packs/NAME/...: its contract, handlers, plan and test fakes, and any
// package added there) is read, with what it imports. The executor's upkeep is left out: its one read,
// MissingEnv (which registers what is missing in core_executors, and serves registry check), is the process's.
func TestPacksReadNoEnvironment(t *testing.T) {
	t.Parallel()
	var pkgs []string
	for f := range reflect.TypeFor[packs]().Fields() {
		pkgs = append(pkgs, f.Type.PkgPath()+"/...")
	}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}	{{.Dir}}	{{join .GoFiles "	"}}{{end}}`}, pkgs...)...).Output()
	require.NoError(t, err)
	reads := map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true}
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSpace(line), "\t")
		if !strings.HasPrefix(fields[0], "github.com/gemhq/gem/") || fields[0] == "github.com/gemhq/gem/executor/internal/upkeep" {
			continue
		}
		for _, name := range fields[2:] {
			path := filepath.Join(fields[1], name)
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			osName := ""
			for _, imp := range file.Imports {
				if imp.Path.Value == `"os"` {
					osName = "os"
					if imp.Name != nil {
						osName = imp.Name.Name
					}
				}
			}
			checked++
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && osName != "" && reads[sel.Sel.Name] {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName {
						t.Errorf("%s (%s) reads the environment with os.%s: take the setting from the pack's Config", path, fields[0], sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	require.Greater(t, checked, 150, "the packs' files were read")
}
