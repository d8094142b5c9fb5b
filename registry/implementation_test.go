package registry

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// implDoc is a registry with one MCP server and two tools whose implementations a test can break.
func implDoc(t *testing.T, servers map[string]any, rest, mcp map[string]any) []byte {
	t.Helper()
	input := map[string]any{"type": "object", "properties": map[string]any{
		"id": map[string]any{"type": "string"}, "q": map[string]any{"type": "string"}, "note": map[string]any{"type": "string"},
	}, "required": []any{"id"}}
	mk := func(name string, impl map[string]any) map[string]any {
		return map[string]any{"name": name, "description": "d", "input_schema": input, "output_schema": map[string]any{},
			"idempotency": map[string]any{"mode": "safe-retry"}, "timeout_ms": 1000, "permissions": []any{"read:external"},
			"implementation": impl}
	}
	doc := map[string]any{"version": "1", "mcp_servers": servers, "tools": []any{mk("ext.get_item", rest), mk("ext.echo", mcp)}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}

func TestImplementationValid(t *testing.T) {
	t.Parallel()
	servers := map[string]any{
		"everything": map[string]any{"command": "npx", "args": []any{"server-everything"}, "env": map[string]any{"TOKEN": "${EVERYTHING_TOKEN}"}},
		"docs":       map[string]any{"url": "${DOCS_MCP_URL}/mcp", "headers": map[string]any{"Authorization": "Bearer ${DOCS_TOKEN}"}},
	}
	rest := map[string]any{"type": "rest", "method": "GET", "url": "${ITEMS_API}/items/{id}?q={q}",
		"headers": map[string]any{"Authorization": "Bearer ${ITEMS_TOKEN}"}, "result_path": "data.item", "success_status": []any{200, 203}}
	r, err := Parse(implDoc(t, servers, rest, map[string]any{"type": "mcp", "server": "everything", "tool": "echo"}))
	require.NoError(t, err)

	get, _ := r.Tool("ext.get_item")
	require.Equal(t, ImplREST, get.ImplementationType())
	require.Equal(t, "none", get.Implementation.BodyMode())
	require.True(t, get.Implementation.Succeeded(203))
	require.False(t, get.Implementation.Succeeded(201))
	require.Equal(t, []string{"id", "q"}, TemplateFields(get.Implementation.URL))
	require.Equal(t, []string{"ITEMS_API"}, EnvRefs(get.Implementation.URL))

	echo, _ := r.Tool("ext.echo")
	require.Equal(t, ImplMCP, echo.ImplementationType())
	srv, ok := r.MCPServer("everything")
	require.True(t, ok)
	require.Equal(t, "stdio", srv.Transport())
	docs, _ := r.MCPServer("docs")
	require.Equal(t, "http", docs.Transport())
	require.Len(t, r.MCPServers(), 2)
	require.True(t, echo.Annotations().OpenWorld)

	out, missing := ExpandEnv("Bearer ${A}${B}", func(k string) string { return map[string]string{"A": "x"}[k] })
	require.Equal(t, "Bearer x", out)
	require.Equal(t, []string{"B"}, missing)
}

func TestImplementationProblemsNameToolAndField(t *testing.T) {
	t.Parallel()
	okServers := map[string]any{"everything": map[string]any{"command": "npx"}}
	okMCP := map[string]any{"type": "mcp", "server": "everything", "tool": "echo"}
	okREST := map[string]any{"type": "rest", "method": "GET", "url": "https://api.example.com/items/{id}"}
	cases := []struct {
		name                string
		servers, rest, mcp  map[string]any
		tool, field, substr string
	}{
		{"unknown server", okServers, okREST, map[string]any{"type": "mcp", "server": "nowhere", "tool": "echo"},
			"ext.echo", "implementation.server", `"nowhere" is not in mcp_servers (known: everything)`},
		{"no remote tool", okServers, okREST, map[string]any{"type": "mcp", "server": "everything"},
			"ext.echo", "implementation.tool", "is required"},
		{"missing url", okServers, map[string]any{"type": "rest", "method": "GET"}, okMCP,
			"ext.get_item", "implementation.url", "is required"},
		{"template field not in schema", okServers, map[string]any{"type": "rest", "method": "GET", "url": "https://x.test/{item_id}"}, okMCP,
			"ext.get_item", "implementation.url", "{item_id} is not a property of input_schema"},
		{"body template field not in schema", okServers, map[string]any{"type": "rest", "method": "POST", "url": "https://x.test/",
			"body": map[string]any{"id": "{id}", "who": "{owner}"}}, okMCP,
			"ext.get_item", "implementation.body", "{owner} is not a property of input_schema"},
		{"bad method", okServers, map[string]any{"type": "rest", "method": "TRACE", "url": "https://x.test/"}, okMCP,
			"ext.get_item", "implementation.method", `"TRACE" is not one of`},
		{"relative url", okServers, map[string]any{"type": "rest", "method": "GET", "url": "/items"}, okMCP,
			"ext.get_item", "implementation.url", "is not an absolute http or https URL"},
		{"bad env name", okServers, map[string]any{"type": "rest", "method": "GET", "url": "https://x.test/",
			"headers": map[string]any{"Authorization": "Bearer ${not a name}"}}, okMCP,
			"ext.get_item", "implementation.headers.Authorization", "${not a name} is not an environment variable name"},
		{"bad status", okServers, map[string]any{"type": "rest", "method": "GET", "url": "https://x.test/", "success_status": []any{42}}, okMCP,
			"ext.get_item", "implementation.success_status[0]", "42 is not an HTTP status"},
		{"field in the host", okServers, map[string]any{"type": "rest", "method": "GET", "url": "https://{id}.x.test/items"}, okMCP,
			"ext.get_item", "implementation.url", "{id} stands in the URL's host"},
		{"field right after the base URL", okServers, map[string]any{"type": "rest", "method": "GET", "url": "${ITEMS_API}{id}"}, okMCP,
			"ext.get_item", "implementation.url", `{id} follows the base URL ${ITEMS_API} directly`},
		{"environment in a body", okServers, map[string]any{"type": "rest", "method": "POST", "url": "https://x.test/",
			"body": map[string]any{"id": "{id}", "key": "${ITEMS_TOKEN}"}}, okMCP,
			"ext.get_item", "implementation.body", "${ITEMS_TOKEN}: a body template does not read the environment"},
		{"unknown type", okServers, map[string]any{"type": "grpc"}, okMCP,
			"ext.get_item", "implementation.type", `"grpc" is not a known implementation type`},
		{"unknown field", okServers, map[string]any{"type": "rest", "method": "GET", "url": "https://x.test/", "verb": "GET"}, okMCP,
			"ext.get_item", "implementation", `unknown field "verb"`},
		{"mcp fields on rest", okServers, map[string]any{"type": "rest", "method": "GET", "url": "https://x.test/", "server": "everything"}, okMCP,
			"ext.get_item", "implementation", `takes no "server"`},
		{"server with command and url", map[string]any{"everything": map[string]any{"command": "npx", "url": "http://x.test/mcp"}}, okREST, okMCP,
			"", "mcp_servers.everything", "has both"},
		{"server with neither", map[string]any{"everything": map[string]any{"args": []any{"x"}}}, okREST, okMCP,
			"", "mcp_servers.everything", `needs "command"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(implDoc(t, tc.servers, tc.rest, tc.mcp))
			ce, ok := AsCheckError(err)
			require.True(t, ok, "%v", err)
			found := false
			for _, p := range ce.Problems {
				if p.Tool == tc.tool && p.Field == tc.field {
					require.Contains(t, p.Message, tc.substr)
					found = true
				}
			}
			require.True(t, found, "no problem for %s %s in %v", tc.tool, tc.field, ce.Problems)
		})
	}
}

func TestAnnotations(t *testing.T) {
	t.Parallel()
	r, err := Load(repoRegistry)
	require.NoError(t, err)
	for name, want := range map[string]Annotations{
		"os.health_check":  {ReadOnly: true, Idempotent: true},
		"comms.send_sms":   {Destructive: true, Idempotent: true, OpenWorld: true},
		"leads.create":     {Idempotent: true},
		"os.search_notes":  {ReadOnly: true, Idempotent: true},
		"media.upload_url": {},
	} {
		tool, ok := r.Tool(name)
		if !ok {
			continue
		}
		got := tool.Annotations()
		require.Equal(t, want.ReadOnly, got.ReadOnly, name)
		require.Equal(t, want.Destructive, got.Destructive, name)
		require.Equal(t, want.OpenWorld, got.OpenWorld, name)
		require.Equal(t, ImplGo, tool.ImplementationType(), name)
	}
}

// TestMCPCommandLineNotExpanded: ${NAME} in a stdio server's command line would reach the server literally
// (only env, url and headers are expanded), so the check refuses it, naming the argument.
func TestMCPCommandLineNotExpanded(t *testing.T) {
	t.Parallel()
	okMCP := map[string]any{"type": "mcp", "server": "everything", "tool": "echo"}
	okREST := map[string]any{"type": "rest", "method": "GET", "url": "https://api.example.com/items/{id}"}
	for field, server := range map[string]map[string]any{
		"mcp_servers.everything.command": {"command": "${HOME}/bin/server"},
		"mcp_servers.everything.args[1]": {"command": "server", "args": []any{"--key", "${EVERYTHING_TOKEN}"}},
	} {
		_, err := Parse(implDoc(t, map[string]any{"everything": server}, okREST, okMCP))
		ce, ok := AsCheckError(err)
		require.True(t, ok, "%v", err)
		require.Len(t, ce.Problems, 1, "%v", ce.Problems)
		require.Equal(t, field, ce.Problems[0].Field)
		require.Contains(t, ce.Problems[0].Message, `is not expanded: give the server its settings and secrets in "env"`)
	}
	_, err := Parse(implDoc(t, map[string]any{"everything": map[string]any{"command": "server", "args": []any{"--port", "3001"},
		"env": map[string]any{"TOKEN": "${EVERYTHING_TOKEN}"}}}, okREST, okMCP))
	require.NoError(t, err)
}
