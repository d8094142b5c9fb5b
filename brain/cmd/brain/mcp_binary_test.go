package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// binaryRegistry writes the repository's registry with the MCP server scripts/mcp-peers/binary-server.mjs
// (made with the MCP TypeScript SDK) and its tool structured_declared as files.declared, which answers with a
// PNG as base64 in structuredContent; its output schema is the server's own.
func binaryRegistry(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the MCP test server")
	server := filepath.Join(repoRoot(t), "scripts", "mcp-peers", "binary-server.mjs")
	_, err = os.Stat(filepath.Join(repoRoot(t), "scripts", "mcp-peers", "node_modules", "@modelcontextprotocol", "sdk"))
	require.NoError(t, err, "the MCP TypeScript SDK is not installed: run make mcp-peers")
	data, err := os.ReadFile(testenv.RegistryPath())
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	doc["mcp_servers"] = map[string]any{"files": map[string]any{"command": node, "args": []string{server}}}
	var tool map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"name": "files.declared", "description": "A PNG of the size asked for, from the binary test server.",
		"input_schema": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}, "required": ["size"], "additionalProperties": false},
		"output_schema": {"type": "object", "properties": {"name": {"type": "string"}, "bytes": {"type": "integer"}, "sha256": {"type": "string"},
			"data": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"}}, "required": ["name", "bytes", "sha256", "data"]},
		"permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 30000,
		"implementation": {"type": "mcp", "server": "files", "tool": "structured_declared"}}`), &tool))
	doc["tools"] = append(doc["tools"].([]any), tool)
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// TestMCPBinaryOverMCP: a client of GEM's /mcp calls a tool of an MCP server that answers with a 2 MB PNG as
// base64 in structuredContent. The answer and the receipt hold the file's gemfs:// reference, the executor's
// file store holds the bytes, and GEM's media.register_asset, called over /mcp too, reads the file by it.
func TestMCPBinaryOverMCP(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	regPath := binaryRegistry(t)
	files := t.TempDir()
	e, err := testenv.StartExecutor(dbURL, "GEM_REGISTRY="+regPath, "GEM_FILE_STORE="+files)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	m, err := startBrain(dbURL, func(c *Config) { c.RegistryPath = regPath })
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	s := session(t, m.Server.URL()+"/mcp", nil, nil)
	ctx := context.Background()

	const size = 2 << 20
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "files.declared", Arguments: map[string]any{"size": size}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	out := res.StructuredContent.(map[string]any)
	ref, _ := out["data"].(string)
	require.True(t, regexp.MustCompile(`^gemfs://[0-9a-f]{64}\.png$`).MatchString(ref), "the answer names the file, not %.100s…", ref)
	require.Equal(t, float64(size), out["bytes"])

	stored, err := os.ReadFile(filepath.Join(files, strings.TrimPrefix(ref, "gemfs://")))
	require.NoError(t, err, "the file is in the executor's file store")
	sum := sha256.Sum256(stored)
	require.Equal(t, out["sha256"], hex.EncodeToString(sum[:]), "its bytes are the server's")

	callID, _ := res.Meta["gem/call_id"].(string)
	receipt, err := gemsql.ReceiptGet(ctx, pool, uuid.MustParse(callID))
	require.NoError(t, err)
	require.Less(t, len(receipt.Result), 400, "the receipt holds the reference: %s", receipt.Result)
	require.Len(t, receipt.Effects.FilesWritten, 1)
	require.Equal(t, ref, receipt.Effects.FilesWritten[0].Ref)
	require.Equal(t, "image/png", receipt.Effects.FilesWritten[0].ContentType)

	asset, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "media.register_asset", Arguments: map[string]any{"file_ref": ref, "asset_type": "photo", "suburb": "Enmore"}})
	require.NoError(t, err)
	require.False(t, asset.IsError, "%v", asset.Content)
	registered := asset.StructuredContent.(map[string]any)["asset"].(map[string]any)
	require.Equal(t, out["sha256"], registered["sha256"])
	require.Equal(t, float64(size), registered["size_bytes"])
}
