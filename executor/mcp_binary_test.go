package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/executor/remote"
	"github.com/gemhq/gem/executor/remote/mcppeers"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// binaryServerTools are registry entries for the tools of scripts/mcp-peers/binary-server.mjs, named
// files.<remote name>; output schemas are the server's own, as executor mcp import copies them.
func binaryServerTools(t *testing.T) []json.RawMessage {
	t.Helper()
	const sizeIn = `{"type": "object", "properties": {"size": {"type": "integer"}, "seed": {"type": "integer"}}, "required": ["size"], "additionalProperties": false}`
	declaredOut := `{"type": "object", "properties": {"name": {"type": "string"}, "bytes": {"type": "integer"}, "sha256": {"type": "string"},
		"data": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"}}, "required": ["name", "bytes", "sha256", "data"]}`
	tool := func(name, remoteTool, output, idempotency string) json.RawMessage {
		input := sizeIn
		if strings.Contains(idempotency, "key_field") {
			input = strings.Replace(sizeIn, `"required": ["size"]`, `"required": ["size", "seed"]`, 1)
		}
		return json.RawMessage(fmt.Sprintf(`{"name": %q, "description": "%s of the binary test server", "input_schema": %s,
			"output_schema": %s, "permissions": ["read:external"], "idempotency": %s, "timeout_ms": 30000,
			"implementation": {"type": "mcp", "server": "files", "tool": %q}}`, name, remoteTool, input, output, idempotency, remoteTool))
	}
	safe := `{"mode": "safe-retry"}`
	return []json.RawMessage{
		tool("files.declared", "structured_declared", declaredOut, safe),
		tool("files.declared_keyed", "structured_declared", declaredOut, `{"mode": "keyed", "key_field": "seed"}`),
		// GEM's output schema wants a property the server never gives: the call fails output_contract.
		tool("files.declared_broken", "structured_declared", `{"type": "object", "required": ["thumbnail"]}`, safe),
		tool("files.undeclared", "structured_undeclared", `{}`, safe),
		tool("files.data_url", "structured_data_url", `{}`, safe),
		tool("files.mcp_shaped", "structured_mcp_shaped", `{}`, safe),
		tool("files.blocks", "blocks", `{}`, safe),
		tool("files.failing", "failing", `{}`, safe),
	}
}

// registryTool returns the repository registry's entry for a tool.
func registryTool(t *testing.T, name string) json.RawMessage {
	t.Helper()
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	data, err := os.ReadFile("../tools.registry.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	for _, raw := range doc.Tools {
		var head struct {
			Name string `json:"name"`
		}
		require.NoError(t, json.Unmarshal(raw, &head))
		if head.Name == name {
			return raw
		}
	}
	t.Fatalf("no tool %s in the registry", name)
	return nil
}

var gemfsRef = regexp.MustCompile(`^gemfs://([0-9a-f]{64})\.([a-z0-9]+)$`)

// requireStored checks that ref names a file of the store holding size bytes whose SHA-256 is digest (as the
// server computed it), and returns the file's extension.
func requireStored(t *testing.T, files *filestore.Store, ref any, size float64, digest any) string {
	t.Helper()
	s, ok := ref.(string)
	require.True(t, ok, "a reference, not %T", ref)
	m := gemfsRef.FindStringSubmatch(s)
	require.NotNil(t, m, "a gemfs:// reference: %.200s", s)
	data, err := files.Read(s)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	require.Equal(t, digest, hex.EncodeToString(sum[:]), "the stored bytes are the server's")
	require.Equal(t, m[1], digest)
	require.Equal(t, int(size), len(data))
	return m[2]
}

// receiptBytes is the size of a call's receipt as stored (its result, effects and error).
func (b *testBundle) receiptBytes(t *testing.T, ctx context.Context, id uuid.UUID) int {
	t.Helper()
	return b.count(t, ctx, `SELECT octet_length(coalesce(result::text, '')) + octet_length(effects::text) + octet_length(coalesce(error::text, ''))
		FROM core_tool_receipts WHERE call_id = $1`, id)
}

// TestMCPBinaryResults: files an MCP server returns as base64 — in structuredContent, declared by the output
// schema or not, as data: URLs or MCP-shaped objects, and as image, resource and audio content blocks — go
// to GEM's file store, and the receipt holds their gemfs:// references: a few hundred bytes for 2 and 3.5 MB
// files, which GEM's own tools then read from the store. A call that fails writes no file, and a repeated
// keyed call writes none again.
func TestMCPBinaryResults(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	dir := t.TempDir()
	files := filestore.New(dir)
	command, args := mcppeers.BinaryServer(t)
	tools := append(binaryServerTools(t), registryTool(t, "media.register_asset"))
	reg := mcpRegistry(t, map[string]any{"files": map[string]any{"command": command, "args": args}}, tools...)
	h := testHandlers(b.outsideLog, businesspack.Config{FileStore: dir})
	closeRemote, err := remote.Register(context.Background(), reg, h, remote.Options{
		Getenv: mcpGetenv(map[string]string{filestore.EnvDir: dir}), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	t.Cleanup(closeRemote)
	b.startExecutorWith(t, executor.Config{}, reg, h, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))

	const mb2, mb35 = 2 << 20, 3*(1<<20) + 1<<19
	declared := b.call(t, ctx, "files.declared", fmt.Sprintf(`{"size": %d}`, mb2))
	large := b.call(t, ctx, "files.declared", fmt.Sprintf(`{"size": %d, "seed": 7}`, mb35))
	receipts := b.wait(t, ctx, declared, large)

	t.Run("base64 declared by the output schema", func(t *testing.T) {
		for id, size := range map[uuid.UUID]int{declared: mb2, large: mb35} {
			r := receipts[id]
			out := mcpResult(t, r)
			require.Equal(t, float64(size), out["bytes"])
			require.Equal(t, "png", requireStored(t, files, out["data"], out["bytes"].(float64), out["sha256"]))
			require.Equal(t, []registry.FileWritten{{Ref: out["data"].(string), Name: "photo.png", ContentType: "image/png",
				Bytes: int64(size), SHA256: out["sha256"].(string)}}, r.Effects.FilesWritten)
			n := b.receiptBytes(t, ctx, id)
			t.Logf("%d-byte file: receipt %d bytes, result %s", size, n, r.Result)
			require.Less(t, n, 1000, "the receipt holds a reference, not the file")
		}
	})

	t.Run("GEM's tools read the stored file", func(t *testing.T) {
		ref := mcpResult(t, receipts[declared])["data"].(string)
		r := b.waitOne(t, ctx, b.call(t, ctx, "media.register_asset", mustJSON(t, map[string]any{"file_ref": ref, "asset_type": "photo", "suburb": "Enmore"})))
		asset := mcpResult(t, r)["asset"].(map[string]any)
		require.Equal(t, mcpResult(t, receipts[declared])["sha256"], asset["sha256"])
		require.Equal(t, float64(mb2), asset["size_bytes"])
		require.Equal(t, "image/png", asset["content_type"])
	})

	t.Run("other shapes", func(t *testing.T) {
		const size = 300_000
		input := fmt.Sprintf(`{"size": %d, "seed": 3}`, size)
		undeclared := b.call(t, ctx, "files.undeclared", input)
		dataURL := b.call(t, ctx, "files.data_url", input)
		shaped := b.call(t, ctx, "files.mcp_shaped", input)
		blocks := b.call(t, ctx, "files.blocks", input)
		rs := b.wait(t, ctx, undeclared, dataURL, shaped, blocks)

		// Undeclared: the long base64 string is a file; a short base64 cursor and a long hex digest are not.
		out := mcpResult(t, rs[undeclared])
		file := out["file"].(map[string]any)
		require.Equal(t, "blob.bin", file["name"])
		requireStored(t, files, file["content"], size, out["sha256"])
		require.NotContains(t, out["cursor"], "gemfs://")
		require.Len(t, out["digest_hex"], 64*1024)

		out = mcpResult(t, rs[dataURL])
		require.Equal(t, "pdf", requireStored(t, files, out["url"], size, out["sha256"]))

		out = mcpResult(t, rs[shaped])
		image, attachment := out["image"].(map[string]any), out["attachment"].(map[string]any)
		require.Equal(t, "png", requireStored(t, files, image["data"], size, image["sha256"]))
		require.Equal(t, "pdf", requireStored(t, files, attachment["blob"], size, attachment["sha256"]))
		require.Equal(t, "application/pdf", attachment["mimeType"])

		// Content blocks: each binary block's summary names its file.
		out = mcpResult(t, rs[blocks])
		var facts map[string]map[string]any
		require.NoError(t, json.Unmarshal([]byte(out["text"].(string)), &facts))
		content := out["content"].([]any)
		require.Len(t, content, 3)
		for i, kind := range []string{"image", "resource", "audio"} {
			block := content[i].(map[string]any)
			require.Equal(t, kind, block["type"])
			requireStored(t, files, block["ref"], facts[kind]["bytes"].(float64), facts[kind]["sha256"])
			require.Equal(t, facts[kind]["bytes"], block["bytes"])
		}
		require.Equal(t, "file:///reports/report.pdf", content[1].(map[string]any)["uri"])
		require.Len(t, rs[blocks].Effects.FilesWritten, 3)
		require.Equal(t, "blocks-content-1.png", rs[blocks].Effects.FilesWritten[0].Name)
		require.Equal(t, "report.pdf", rs[blocks].Effects.FilesWritten[1].Name)
		require.Equal(t, "audio/wav", rs[blocks].Effects.FilesWritten[2].ContentType)

		base64Run := regexp.MustCompile(`[A-Za-z0-9+/]{1000}`)
		for id, r := range rs {
			out := mcpResult(t, r)
			delete(out, "digest_hex") // a 64 KiB hex string, kept as it is
			require.False(t, base64Run.MatchString(mustJSON(t, out)), "%s: no base64 in the receipt", r.ToolName)
			require.Less(t, b.receiptBytes(t, ctx, id), 70_000, r.ToolName)
		}
	})

	t.Run("a call that fails writes no file", func(t *testing.T) {
		before := storedFiles(t, dir)
		input := fmt.Sprintf(`{"size": %d, "seed": 11}`, mb2)
		failing := b.call(t, ctx, "files.failing", input)
		broken := b.call(t, ctx, "files.declared_broken", input)
		rs := b.wait(t, ctx, failing, broken)
		requireFailed(t, rs[failing], registry.CodeRemoteError, "did not render")
		requireFailed(t, rs[broken], registry.CodeOutputContract, "thumbnail")
		for id, r := range rs {
			require.Empty(t, r.Effects.FilesWritten)
			require.Less(t, b.receiptBytes(t, ctx, id), 2000, "%s: no base64 in a failed receipt", r.ToolName)
		}
		require.Equal(t, before, storedFiles(t, dir), "no file was written for a call that failed")
	})

	t.Run("a repeated keyed call writes no second file", func(t *testing.T) {
		before := len(storedFiles(t, dir))
		first := b.waitOne(t, ctx, b.call(t, ctx, "files.declared_keyed", `{"size": 100000, "seed": 21}`))
		second := b.waitOne(t, ctx, b.call(t, ctx, "files.declared_keyed", `{"size": 100000, "seed": 21}`))
		require.True(t, second.IdempotencyHit)
		require.Equal(t, mcpResult(t, first)["data"], mcpResult(t, second)["data"])
		require.Len(t, storedFiles(t, dir), before+1)
	})

	for _, name := range storedFiles(t, dir) {
		require.False(t, strings.HasPrefix(name, "."), "no temporary file is left: %s", name)
	}
}
