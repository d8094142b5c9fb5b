package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/stretchr/testify/require"
)

// runCmd runs the command with args and returns its exit code, stdout and stderr.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// envRead returns every environment variable the executor's configuration reads.
func envRead(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	getenv := func(name string) string { seen[name] = true; return "" }
	_, err := executor.ConfigFromEnv(getenv)
	require.NoError(t, err)
	packsFromEnv(getenv)
	// Read by this command itself.
	for _, name := range []string{"GEM_LOG_LEVEL", "GEM_LOG_FORMAT", "GEM_PPROF_ADDR", "GEM_REGISTRY", "DATABASE_URL"} {
		seen[name] = true
	}
	var names []string
	for name := range seen {
		names = append(names, name)
	}
	require.Greater(t, len(names), 20)
	return names
}

func TestHelp(t *testing.T) {
	t.Parallel()

	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		code, out, errOut := runCmd(args...)
		require.Equal(t, 0, code, "executor %v", args)
		require.Empty(t, errOut)
		require.NotContains(t, out, "Usage of")
		for _, want := range []string{"executor [run] [-migrate] [-registry FILE]", "executor migrate",
			"executor registry check [-json] [FILE]", "executor version", "executor help",
			"-migrate\n", "-registry FILE\n", "-json\n"} {
			require.Contains(t, out, want, "executor %v", args)
		}
		for _, name := range envRead(t) {
			require.Contains(t, out, "  "+name+" ", "executor %v lists %s", args, name)
		}
		// Defaults come from the executor's constants.
		require.Regexp(t, `GEM_EXECUTOR_MAX_WORKERS +default: 200\n`, out)
		require.Regexp(t, `GEM_DB_CONNECT_WAIT +default: 1m\n`, out)
		require.Regexp(t, `GEM_EXECUTOR_FETCH_COOLDOWN +default: 1ms\n`, out)
		require.Regexp(t, `GEM_RETENTION +default: 400d\n`, out)
	}

	// Each command's own help: its synopsis and flags, on stdout, exit 0.
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "-h"}, []string{"Usage: executor [run] [-migrate] [-registry FILE]", "-migrate", "DATABASE_URL", "GEM_EXECUTOR_DRAIN_TIMEOUT", "GEM_SMTP_URL"}},
		{[]string{"run", "--help"}, []string{"Usage: executor [run]"}},
		{[]string{"-migrate", "-h"}, []string{"Usage: executor [run]"}},
		{[]string{"help", "run"}, []string{"Usage: executor [run]"}},
		{[]string{"migrate", "-h"}, []string{"Usage: executor migrate", "DATABASE_URL", "GEM_LOG_FORMAT"}},
		{[]string{"help", "migrate"}, []string{"Usage: executor migrate"}},
		{[]string{"registry", "-h"}, []string{"Usage: executor registry check [-json] [FILE]", "-json", "GEM_REGISTRY"}},
		{[]string{"registry", "check", "-h"}, []string{"Usage: executor registry check", "-json"}},
		{[]string{"registry", "check", "--help"}, []string{"Usage: executor registry check"}},
		{[]string{"help", "registry"}, []string{"Usage: executor registry check"}},
		{[]string{"version", "-h"}, []string{"Usage: executor version"}},
	} {
		code, out, errOut := runCmd(tt.args...)
		require.Equal(t, 0, code, "executor %v: %s", tt.args, errOut)
		require.Empty(t, errOut, "executor %v", tt.args)
		for _, want := range tt.want {
			require.Contains(t, out, want, "executor %v", tt.args)
		}
	}

	// Usage errors: a short usage on stderr, exit 2.
	for _, args := range [][]string{{"frobnicate"}, {"run", "-bogus"}, {"-bogus"}, {"migrate", "-x"}, {"migrate", "extra"},
		{"registry"}, {"registry", "list"}, {"registry", "check", "a", "b"}, {"help", "frobnicate"}} {
		code, out, errOut := runCmd(args...)
		require.Equal(t, 2, code, "executor %v", args)
		require.Empty(t, out, "executor %v", args)
		require.NotEmpty(t, errOut, "executor %v", args)
	}
}

// TestHelpMatchesOperationsDoc keeps docs/operations.md listing every variable the executor reads.
func TestHelpMatchesOperationsDoc(t *testing.T) {
	t.Parallel()
	var docs string
	for _, f := range []string{"operations.md", "business-pack.md", "agent-skills-pack.md", "integrations.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", f))
		require.NoError(t, err)
		docs += string(b)
	}
	for _, name := range envRead(t) {
		require.True(t, strings.Contains(docs, "`"+name+"`"), "docs list %s", name)
	}
}

func TestRegistryCheck(t *testing.T) {
	t.Parallel()

	code, out, errOut := runCmd("registry", "check", "../../../tools.registry.json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "OK")
	require.Contains(t, out, "leads")
	require.Contains(t, out, "have a handler in this executor")

	code, out, _ = runCmd("registry", "check", "-json", "../../../tools.registry.json")
	require.Equal(t, 0, code)
	var summary registryCheckResult
	require.NoError(t, json.Unmarshal([]byte(out), &summary))
	require.True(t, summary.OK)
	require.Empty(t, summary.Problems)
	require.NotEmpty(t, summary.Tools)
	for _, s := range summary.Tools {
		require.True(t, s.Handler, "%s has a handler", s.Name)
	}

	// A registry with tools this executor cannot run lists them as not_configured.
	code, out, _ = runCmd("registry", "check", "../../../registry/testdata/varied.registry.json")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Answer not_configured (no handler here): ai.vision.describe_image")
	require.Contains(t, out, "Handlers for tools this registry lacks")
}

func TestRegistryCheckBroken(t *testing.T) {
	t.Parallel()

	broken := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte(`{"version":"1","tools":[{"name":"nodot","description":"x"}]}`), 0o600))

	code, out, errOut := runCmd("registry", "check", broken)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "tool nodot: field name")
	require.Contains(t, errOut, "tool nodot: field idempotency")

	// -json: the problems as JSON on stdout, still exit 1.
	code, out, errOut = runCmd("registry", "check", "-json", broken)
	require.Equal(t, 1, code)
	require.Empty(t, errOut)
	var res registryCheckResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.False(t, res.OK)
	require.Equal(t, broken, res.Path)
	require.Empty(t, res.Tools)
	fields := map[string]bool{}
	for _, p := range res.Problems {
		require.Equal(t, "nodot", p.Tool)
		fields[p.Field] = true
	}
	require.True(t, fields["name"], "%+v", res.Problems)
	require.True(t, fields["idempotency"], "%+v", res.Problems)
	// The raw JSON says ok false (not omitted).
	require.Contains(t, out, `"ok": false`)

	// A file that is not there is a problem too.
	missing := filepath.Join(t.TempDir(), "missing.json")
	code, out, _ = runCmd("registry", "check", "-json", missing)
	require.Equal(t, 1, code)
	res = registryCheckResult{}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.False(t, res.OK)
	require.Len(t, res.Problems, 1)
	require.NotEmpty(t, res.Problems[0].Message)
}
