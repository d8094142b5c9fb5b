package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestAnswersAreHeldToTheirSchema: an answer that breaks the output schema its tool advertises (a fault of
// GEM's) reaches the client as an isError answer that keeps to the schema's error branch, with the text it
// had, and is logged; an answer that keeps to it passes unchanged. The client is the Go SDK's, over the
// SDK's in-memory transport, calling the tool by either name.
func TestAnswersAreHeldToTheirSchema(t *testing.T) {
	t.Parallel()
	var logs sqltest.SyncBuffer
	s := newTestServer(t, zerolog.New(&logs))
	output := json.RawMessage(`{"type": "object", "anyOf": [
		{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
		{"type": "object", "properties": {"call_id": {"type": "string", "format": "uuid"}, "tool": {"type": "string"},
			"status": {"enum": ["failed"]}, "error": {"type": "object", "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
			"required": ["code", "message"], "additionalProperties": false}}, "required": ["status", "error"], "additionalProperties": false}]}`)
	answers := map[string]*mcp.CallToolResult{
		"gem.test_kept":   {StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}},
		"gem.test_broken": {StructuredContent: map[string]any{"ok": "yes"}, Content: []mcp.Content{&mcp.TextContent{Text: "the tool's text"}}},
		"gem.test_bare":   {Content: []mcp.Content{&mcp.TextContent{Text: "no structure"}}},
	}
	for name, answer := range answers {
		s.addOwnTool(name, &mcp.Tool{InputSchema: json.RawMessage(`{"type": "object"}`), OutputSchema: output},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				a := *answer
				a.Meta = mcp.Meta{metaCallID: "01900000-0000-7000-8000-000000000001"}
				return &a, nil
			})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(WithCaller(ctx, Caller{Name: "tester", Grants: registry.Grants{"*"}}), serverSide, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	require.NoError(t, err)
	defer cs.Close()
	schema, err := registry.CompileSchema("test output", output)
	require.NoError(t, err)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gem__test_kept"})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, map[string]any{"ok": true}, res.StructuredContent)

	for _, name := range []string{"gem__test_broken", "gem.test_bare"} {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		require.NoError(t, err)
		require.True(t, res.IsError, name)
		doc, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, schema.Validate(doc), "the error keeps to the schema: %s", doc)
		e := res.StructuredContent.(map[string]any)["error"].(map[string]any)
		require.Equal(t, string(registry.CodeOutputContract), e["code"])
		require.Equal(t, "01900000-0000-7000-8000-000000000001", res.StructuredContent.(map[string]any)["call_id"])
		require.Contains(t, e["message"], "broke the tool's outputSchema")
	}
	require.Equal(t, "no structure", res.Content[len(res.Content)-1].(*mcp.TextContent).Text, "the text the answer had is kept")
	require.Contains(t, logs.String(), `"problem":"it has no structured content"`)
	require.Contains(t, logs.String(), `"tool":"gem.test_broken"`)
	require.Contains(t, logs.String(), `"level":"error"`)
}
