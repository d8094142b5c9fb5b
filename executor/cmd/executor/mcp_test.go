package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gemhq/gem/executor/remote/mcppeers"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// writeRegistry writes a registry document to a temporary file.
func writeRegistry(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tools.registry.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// mcpEntry is a registry entry for a tool of an MCP server.
func mcpEntry(name, server, tool string) map[string]any {
	return map[string]any{"name": name, "description": "d", "input_schema": map[string]any{"type": "object"}, "output_schema": map[string]any{},
		"permissions": []any{"read:external"}, "idempotency": map[string]any{"mode": "safe-retry"}, "timeout_ms": 5000,
		"implementation": map[string]any{"type": "mcp", "server": server, "tool": tool}}
}

// importedDoc parses mcp import's document and checks it loads on its own.
func importedDoc(t *testing.T, data []byte) (*registry.Registry, map[string]any) {
	t.Helper()
	reg, err := registry.Parse(data)
	require.NoError(t, err, "%s", data)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	return reg, doc
}

func TestMCPImportCommand(t *testing.T) {
	t.Parallel()
	bin := mcppeers.Everything(t)
	regPath := writeRegistry(t, map[string]any{"version": "7",
		"mcp_servers": map[string]any{"everything": map[string]any{"command": bin}},
		"tools":       []any{mcpEntry("everything.echo", "everything", "echo")}})

	// From the registry's mcp_servers, to a file.
	out := filepath.Join(t.TempDir(), "everything.json")
	code, stdout, stderr := runCmd("mcp", "import", "-registry", regPath, "-o", out, "everything")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stdout)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	reg, doc := importedDoc(t, data)
	require.Equal(t, "7", reg.Version)
	echo, ok := reg.Tool("everything.echo")
	require.True(t, ok)
	require.Equal(t, registry.ImplMCP, echo.ImplementationType())
	require.Equal(t, "echo", echo.Implementation.RemoteTool)
	require.Equal(t, int64(30000), echo.TimeoutMS)
	require.Equal(t, map[string]any{"command": bin}, doc["mcp_servers"].(map[string]any)["everything"])
	require.Contains(t, stderr, "of MCP server everything (stdio) written to "+out)
	require.Contains(t, stderr, "everything.echo  (tool echo; read:external, safe-retry)")
	require.Contains(t, stderr, "everything.toggle-simulated-logging  (tool toggle-simulated-logging; write:external, none)")
	require.Contains(t, stderr, "note: everything.echo is already in "+regPath)
	require.Contains(t, stderr, "docs/mcp-tools.md")

	// A stdio command given after --, with a prefix and a timeout, to stdout. The env is written as given.
	code, stdout, stderr = runCmd("mcp", "import", "-prefix", "ext.demo", "-timeout-ms", "5000", "-env", "HOME_COPY=${HOME}", "demo", "--", bin, "stdio")
	require.Equal(t, 0, code, stderr)
	reg, doc = importedDoc(t, []byte(stdout))
	sum, ok := reg.Tool("ext.demo.get-sum")
	require.True(t, ok, "tools: %v", doc["tools"])
	require.Equal(t, int64(5000), sum.TimeoutMS)
	require.Equal(t, "demo", sum.Implementation.Server)
	require.Equal(t, map[string]any{"command": bin, "args": []any{"stdio"}, "env": map[string]any{"HOME_COPY": "${HOME}"}},
		doc["mcp_servers"].(map[string]any)["demo"])

	// A variable the server needs and the environment lacks: nothing is started, exit 1.
	code, stdout, stderr = runCmd("mcp", "import", "-env", "TOKEN=${GEM_TEST_SURELY_UNSET}", "demo", "--", bin)
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "GEM_TEST_SURELY_UNSET")
}

func TestMCPImportCommandHTTP(t *testing.T) {
	t.Parallel()
	port, _ := mcppeers.StartEverythingHTTP(t, 0)

	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	code, stdout, stderr := runCmd("mcp", "import", "-url", url, "-header", "X-Api-Key: ${HOME}", "remote-everything")
	require.Equal(t, 0, code, stderr)
	reg, doc := importedDoc(t, []byte(stdout))
	_, ok := reg.Tool("remote-everything.get-structured-content")
	require.True(t, ok)
	require.Equal(t, map[string]any{"url": url, "headers": map[string]any{"X-Api-Key": "${HOME}"}}, doc["mcp_servers"].(map[string]any)["remote-everything"])
	require.Contains(t, stderr, "of MCP server remote-everything (http) written to stdout")
}

func TestMCPImportCommandUsage(t *testing.T) {
	t.Parallel()
	regPath := writeRegistry(t, map[string]any{"version": "1", "tools": []any{},
		"mcp_servers": map[string]any{"everything": map[string]any{"command": "/nonexistent/server"}}})

	for _, args := range [][]string{{"mcp", "-h"}, {"mcp", "import", "-h"}, {"help", "mcp"}} {
		code, stdout, stderr := runCmd(args...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		require.Contains(t, stdout, "Usage: executor mcp import", "%v", args)
		require.Contains(t, stdout, "-prefix DOMAIN")
	}
	code, stdout, _ := runCmd("help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "executor mcp import [-registry FILE]")

	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"mcp"}, "the only mcp command is import"},
		{[]string{"mcp", "list"}, "the only mcp command is import"},
		{[]string{"mcp", "import"}, "name the server"},
		{[]string{"mcp", "import", "-registry", regPath, "elsewhere"}, `no MCP server "elsewhere" in mcp_servers (it has: everything)`},
		{[]string{"mcp", "import", "-url", "http://127.0.0.1:1/mcp", "x", "--", "server"}, "not both"},
		{[]string{"mcp", "import", "-registry", regPath, "-header", "A: b", "everything"}, "-header and -env describe a server given here"},
		{[]string{"mcp", "import", "-registry", regPath, "-timeout-ms", "5", "everything"}, "-timeout-ms 5 is outside"},
		{[]string{"mcp", "import", "-registry", regPath, "everything", "-o", "x.json"}, "flags go before SERVER"},
		{[]string{"mcp", "import", "-url", "ftp://x.test/mcp", "x"}, "is not an absolute http or https URL"},
		{[]string{"mcp", "import", "-header", "no colon", "-url", "http://x.test/mcp", "x"}, "is not Name: value"},
		{[]string{"mcp", "import", "-bogus"}, "flag provided but not defined"},
		{[]string{"mcp", "import", "bad name!", "--", "server"}, "mcp_servers.bad name!"},
	} {
		code, stdout, stderr := runCmd(tt.args...)
		require.Equal(t, 2, code, "%v: %s", tt.args, stderr)
		require.Empty(t, stdout, "%v", tt.args)
		require.Contains(t, stderr, tt.says, "%v", tt.args)
		require.Contains(t, stderr, "usage: executor mcp import", "%v", tt.args)
	}

	// A server that cannot start: exit 1, saying why.
	code, stdout, stderr := runCmd("mcp", "import", "-registry", regPath, "everything")
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "error connecting to MCP server everything")
}

// TestRegistryCheckMCP: registry check shows each tool's implementation, the MCP servers with the
// variables still unset, and counts rest and mcp tools as handled.
func TestRegistryCheckMCP(t *testing.T) {
	t.Parallel()
	rest := map[string]any{"name": "ext.get_item", "description": "d",
		"input_schema":  map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}},
		"output_schema": map[string]any{}, "permissions": []any{"read:external"}, "idempotency": map[string]any{"mode": "safe-retry"}, "timeout_ms": 5000,
		"implementation": map[string]any{"type": "rest", "method": "GET", "url": "https://api.example.com/items/{id}"}}
	path := writeRegistry(t, map[string]any{"version": "1",
		"mcp_servers": map[string]any{
			"everything": map[string]any{"command": "server-everything", "args": []any{"stdio"}, "env": map[string]any{"TOKEN": "${GEM_TEST_SURELY_UNSET}"}},
			"docs":       map[string]any{"url": "https://docs.example.com/mcp"},
		},
		"tools": []any{mcpEntry("ext.echo", "everything", "echo"), rest}})

	code, out, errOut := runCmd("registry", "check", path)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2 of 2 tools have a handler in this executor.")
	require.Contains(t, out, "MCP servers (connected on a tool's first call):")
	require.Regexp(t, `everything\s+stdio\s+server-everything stdio\s+1 tool\s+set GEM_TEST_SURELY_UNSET`, out)
	require.Regexp(t, `docs\s+http\s+https://docs.example.com/mcp\s+0 tools`, out)
	require.Regexp(t, `ext.echo\s+mcp\s+everything/echo`, out)
	require.Regexp(t, `ext.get_item\s+rest\s+GET https://api.example.com/items/\{id\}`, out)
	require.Contains(t, out, "Answer not_configured until configured: ext.echo (set GEM_TEST_SURELY_UNSET)")

	code, out, _ = runCmd("registry", "check", "-json", path)
	require.Equal(t, 0, code)
	var res registryCheckResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	byName := map[string]toolSummary{}
	for _, s := range res.Tools {
		byName[s.Name] = s
	}
	require.Equal(t, toolSummary{Name: "ext.echo", Mode: "safe-retry", TimeoutMS: 5000, Implementation: "mcp", Target: "everything/echo",
		Handler: true, RequiredEnv: []string{"GEM_TEST_SURELY_UNSET"}, MissingEnv: []string{"GEM_TEST_SURELY_UNSET"}}, byName["ext.echo"])
	require.Equal(t, "rest", byName["ext.get_item"].Implementation)
	require.True(t, byName["ext.get_item"].Handler)
	require.Equal(t, []mcpServerSummary{
		{Name: "docs", Transport: "http", Target: "https://docs.example.com/mcp"},
		{Name: "everything", Transport: "stdio", Target: "server-everything stdio", Tools: 1,
			RequiredEnv: []string{"GEM_TEST_SURELY_UNSET"}, MissingEnv: []string{"GEM_TEST_SURELY_UNSET"}},
	}, res.MCPServers)

	// GEM's own registry: every tool a Go handler.
	code, out, _ = runCmd("registry", "check", "-json", "../../../tools.registry.json")
	require.Equal(t, 0, code)
	res = registryCheckResult{}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	for _, s := range res.Tools {
		require.Equal(t, registry.ImplGo, s.Implementation, s.Name)
	}
	require.Empty(t, res.MCPServers)

	// A registry that makes a Go tool remote is refused by check and by run (before any database).
	conflict := writeRegistry(t, map[string]any{"version": "1",
		"mcp_servers": map[string]any{"everything": map[string]any{"command": "server-everything"}},
		"tools":       []any{mcpEntry("os.create_note", "everything", "echo")}})
	code, _, errOut = runCmd("registry", "check", conflict)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "tool os.create_note: the registry gives it a mcp implementation, but the executor also has a Go handler")
	code, _, errOut = runCmd("run", "-registry", conflict)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "the registry gives it a mcp implementation, but the executor also has a Go handler")
}
