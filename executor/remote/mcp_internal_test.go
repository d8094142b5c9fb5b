package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestMCPProtocolErrors calls a server built with the official Go SDK (server-everything reports every
// failure as isError; this one answers an unknown tool with a JSON-RPC error, as the SDK does): a JSON-RPC
// error is a failed remote_error carrying its code, and the session stays usable.
func TestMCPProtocolErrors(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "adder", Version: "v1"}, nil)
	type addInput struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type addOutput struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "adds"}, func(_ context.Context, _ *mcp.CallToolRequest, in addInput) (*mcp.CallToolResult, addOutput, error) {
		if in.A < 0 {
			return nil, addOutput{}, errors.New("a must not be negative")
		}
		return nil, addOutput{Sum: in.A + in.B}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)

	tool := func(name, remote string) string {
		return fmt.Sprintf(`{"name": %q, "description": "d", "input_schema": {"type": "object"}, "output_schema": {},
			"permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 5000,
			"implementation": {"type": "mcp", "server": "adder", "tool": %q}}`, name, remote)
	}
	reg, err := registry.Parse(fmt.Appendf(nil, `{"version": "1", "mcp_servers": {"adder": {"url": %q}}, "tools": [%s, %s]}`,
		srv.URL, tool("adder.add", "add"), tool("adder.nope", "nope")))
	require.NoError(t, err)
	pool := newMCPPool(reg, Options{Getenv: func(string) string { return "" }})
	t.Cleanup(pool.close)
	run := func(name, input string) (any, error) {
		tl, _ := reg.Tool(name)
		return pool.handler(tl).Run(context.Background(), &executor.Call{Tool: tl, Input: json.RawMessage(input)})
	}

	_, err = run("adder.nope", `{}`)
	var ee *executor.Error
	require.ErrorAs(t, err, &ee)
	require.Equal(t, registry.CodeRemoteError, ee.Code)
	require.Contains(t, ee.Message, `unknown tool "nope"`)
	require.EqualValues(t, -32602, ee.Details.(map[string]any)["rpc_code"])

	_, err = run("adder.add", `{"a": -1, "b": 2}`)
	require.ErrorAs(t, err, &ee)
	require.Equal(t, registry.CodeRemoteError, ee.Code)
	require.Contains(t, ee.Message, "a must not be negative")

	out, err := run("adder.add", `{"a": 2, "b": 3}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"sum": 5.0}, out)
}

func TestContentResultAndClip(t *testing.T) {
	t.Parallel()
	store := filestore.New(t.TempDir())
	image, err := store.Prepare("", ".png", "image/png", make([]byte, 300))
	require.NoError(t, err)
	blob, err := store.Prepare("", ".gz", "application/gzip", make([]byte, 10))
	require.NoError(t, err)
	content := []mcp.Content{
		&mcp.TextContent{Text: "one"},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 300)},
		&mcp.TextContent{Text: "two"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://b", MIMEType: "application/gzip", Blob: make([]byte, 10)}},
	}
	out, err := contentResult(content, &payloads{store: store, call: &executor.Call{}, tool: "t"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": "one\ntwo", "content": []map[string]any{
		{"type": "image", "mimeType": "image/png", "bytes": 300, "ref": image.Ref},
		{"type": "resource", "uri": "demo://b", "mimeType": "application/gzip", "bytes": 10, "ref": blob.Ref},
	}}, out)
	// An answer that keeps nothing (isError) only describes its blocks.
	out, err = contentResult(content, &payloads{store: store, tool: "t"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"type": "image", "mimeType": "image/png", "bytes": 300}, out["content"].([]map[string]any)[0])
	out, err = contentResult(nil, &payloads{store: store})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": ""}, out)

	require.Equal(t, "abc", clip("abc", 3))
	require.Equal(t, "ab… (truncated)", clip("abcd", 2))
	require.Equal(t, "a… (truncated)", clip("aé", 2), "never cuts a rune in two")
}

// TestImportNamesModelAPIsTake: imported tools get names the registry accepts — each exported with its dots
// as "__" in 64 characters, reading back as itself — whatever the server calls them, and a prefix that
// cannot give such names is refused.
func TestImportNamesModelAPIsTake(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "names", Version: "v1"}, nil)
	long := strings.Repeat("read_the_whole_", 6) // 90 characters
	for _, name := range []string{"get__thing", "9__lives", "trailing_", long + "one", long + "two", "x.y"} {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type": "object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	entry := &registry.MCPServer{Name: "names__srv_", URL: srv.URL}

	res, err := Import(context.Background(), entry, ImportOptions{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Document.Tools {
		names = append(names, tool.Name)
		require.NoError(t, registry.CheckToolName(tool.Name))
		require.LessOrEqual(t, len(registry.PortableName(tool.Name)), registry.PortableNameMaxLen, tool.Name)
	}
	require.Len(t, names, 6)
	require.Contains(t, names, "names_srv.get_thing")
	require.Contains(t, names, "names_srv.t_9_lives")
	require.Contains(t, names, "names_srv.trailing_")
	doc, err := json.Marshal(res.Document)
	require.NoError(t, err)
	_, err = registry.Parse(doc)
	require.NoError(t, err, "the document loads")

	for _, prefix := range []string{"ext_.docs", "ext.a__b", "gem", strings.Repeat("p", 60)} {
		_, err = Import(context.Background(), entry, ImportOptions{Prefix: prefix, Getenv: func(string) string { return "" }})
		require.ErrorContains(t, err, "cannot name tools model APIs and MCP clients take", prefix)
	}
}
