package llm

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// TestExportIsWhatTheModelSees: every tool exported for OpenAI or Anthropic is, byte for byte in JSON, the
// tool the LLM loop's request carries (the request goes through the real SDK client to a transport that
// keeps it), strict mode included.
func TestExportIsWhatTheModelSees(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	ts := NewToolSet(reg.Tools())
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			transport := &benchLLMClient{provider: provider}
			hc := &http.Client{Transport: transport}
			var client Client
			if provider == llmconfig.ProviderOpenAI {
				client = &openaiLLM{cfg: llmconfig.Config{Model: "m"}, client: openai.NewClient(openaioption.WithAPIKey("k"),
					openaioption.WithMaxRetries(0), openaioption.WithBaseURL("http://llm.invalid/v1/"), openaioption.WithHTTPClient(hc),
					openaioption.WithRequestTimeout(time.Minute))}
			} else {
				client = &anthropicLLM{cfg: llmconfig.Config{Model: "m"}, client: anthropic.NewClient(anthropicoption.WithAPIKey("k"),
					anthropicoption.WithMaxRetries(0), anthropicoption.WithBaseURL("http://llm.invalid/"), anthropicoption.WithHTTPClient(hc),
					anthropicoption.WithRequestTimeout(time.Minute))}
			}
			_, err := client.Complete(t.Context(), &Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}, Tools: ts.Defs()})
			require.NoError(t, err)
			var sent struct {
				Tools []json.RawMessage `json:"tools"`
			}
			require.NoError(t, json.Unmarshal(transport.lastBody, &sent))
			require.Len(t, sent.Tools, ts.Len())
			for i, tool := range ts.Tools() {
				exported, err := ts.Export(provider, tool.Name)
				require.NoError(t, err)
				require.JSONEq(t, string(sent.Tools[i]), string(exported), tool.Name)
				if provider == llmconfig.ProviderOpenAI {
					var def struct {
						Type     string `json:"type"`
						Function struct {
							Name   string `json:"name"`
							Strict bool   `json:"strict"`
						} `json:"function"`
					}
					require.NoError(t, json.Unmarshal(exported, &def))
					require.Equal(t, "function", def.Type)
					require.True(t, def.Function.Strict, tool.Name)
				}
			}
		})
	}

	_, err = ts.Export("gem", "os.health_check")
	require.ErrorContains(t, err, "cannot export in format")
	_, err = ts.Export(FormatOpenAI, "no.such_tool")
	require.ErrorContains(t, err, "no tool")
}

// TestMCPToolDef: a registry tool as MCP's tools/list shows it: its registry name and schemas, a title, and
// every hint stated, derived from the registry.
func TestMCPToolDef(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	for _, tool := range reg.Tools() {
		def := MCPToolDef(tool)
		require.Equal(t, registry.PortableName(tool.Name), def.Name, "a name model APIs accept")
		require.Regexp(t, registry.PortableNameRe, def.Name)
		require.Equal(t, map[string]any{MCPMetaName: tool.Name}, def.Meta, "GEM's name in _meta")
		require.Contains(t, def.Title, tool.Name, "and in the title")
		fn, _ := NewToolSet([]*registry.Tool{tool}).Function(tool.Name)
		require.Equal(t, fn, def.Name, "the LLM loop's function name")
		require.Equal(t, tool.Description, def.Description)
		require.JSONEq(t, string(ModelInputSchema(tool.InputSchema)), string(def.InputSchema))
		require.NotEmpty(t, def.Title)
		require.Equal(t, def.Title, def.Annotations.Title)
		a := tool.Annotations()
		require.Equal(t, MCPToolAnnotations{Title: def.Title, ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive,
			IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld}, def.Annotations)
		raw, err := json.Marshal(def)
		require.NoError(t, err)
		var wire map[string]any
		require.NoError(t, json.Unmarshal(raw, &wire))
		hints := wire["annotations"].(map[string]any)
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			require.Contains(t, hints, k, "%s states %s (MCP's defaults assume the worst)", tool.Name, k)
		}
		require.Contains(t, wire, "inputSchema")
	}

	health, _ := reg.Tool("os.health_check")
	def := MCPToolDef(health)
	require.Equal(t, "Health check (os.health_check)", def.Title)
	require.True(t, def.Annotations.ReadOnlyHint)
	require.False(t, def.Annotations.DestructiveHint)
	var out struct {
		Type  string            `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
	}
	require.NoError(t, json.Unmarshal(def.OutputSchema, &out))
	require.Equal(t, "object", out.Type)
	require.Len(t, out.AnyOf, 3, "the result, pending and error")
	require.JSONEq(t, string(health.OutputSchema), string(out.AnyOf[0]))
	sms, _ := reg.Tool("comms.send_sms")
	def = MCPToolDef(sms)
	require.False(t, def.Annotations.ReadOnlyHint)
	require.True(t, def.Annotations.DestructiveHint)
	require.True(t, def.Annotations.OpenWorldHint)

	notObject, err := registry.Parse([]byte(`{"version": "t", "tools": [{"name": "t.list", "description": "d",
		"input_schema": {"type": "object"}, "output_schema": {"type": "array"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(MCPToolDef(notObject.Tools()[0]).OutputSchema, &out))
	require.JSONEq(t, `{"type": "object", "properties": {"result": {"type": "array"}}, "required": ["result"]}`, string(out.AnyOf[0]),
		"structuredContent is an object: a result of another type is answered as {result}")
}

// TestModelInputSchema: the input schema MCP clients get leaves out, at every level, the keywords strict mode
// refuses (as the LLM loop's strict schemas do) and keeps the rest as the registry has it; a root without
// properties is closed; property names that read like keywords are data.
func TestModelInputSchema(t *testing.T) {
	t.Parallel()
	in := `{"type": "object", "required": ["title"], "properties": {
		"title": {"type": "string", "minLength": 1, "maxLength": 140, "description": "Title."},
		"site": {"type": "string", "format": "uri"},
		"day": {"type": "string", "format": "date", "default": "2026-01-01"},
		"default": {"type": "integer", "minimum": 0, "not": {"const": 3}},
		"tags": {"type": "array", "maxItems": 3, "uniqueItems": true, "items": {"type": "string", "maxLength": 20, "pattern": "^[a-z]+$"}},
		"ref": {"oneOf": [{"type": "string", "maxLength": 9}, {"type": "null"}]},
		"extra": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "number", "default": 0}},
		"password": {"type": "string", "writeOnly": true}}}`
	want := `{"type": "object", "required": ["title"], "properties": {
		"title": {"type": "string", "description": "Title."},
		"site": {"type": "string"},
		"day": {"type": "string", "format": "date"},
		"default": {"type": "integer", "minimum": 0},
		"tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "pattern": "^[a-z]+$"}},
		"ref": {"oneOf": [{"type": "string"}, {"type": "null"}]},
		"extra": {"type": "object", "additionalProperties": {"type": "number"}},
		"password": {"type": "string"}}}`
	require.JSONEq(t, want, string(ModelInputSchema(json.RawMessage(in))))

	// The same rule as the LLM loop's: what strict mode keeps of a schema it can take whole is the same.
	strict, ok := StrictSchema(json.RawMessage(`{"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "maxLength": 3, "format": "uri"}}}`))
	require.True(t, ok)
	require.Equal(t, map[string]any{"type": "string"}, strict["properties"].(map[string]any)["a"])

	for _, root := range []string{`{"type": "object", "properties": {}}`, `{"type": "object"}`, `{}`} {
		require.JSONEq(t, `{"type": "object", "properties": {}, "additionalProperties": false}`, string(ModelInputSchema(json.RawMessage(root))), root)
	}
	for _, open := range []string{`{"type": "object", "additionalProperties": {"type": "string"}}`, `{"anyOf": [{"type": "object"}]}`} {
		require.JSONEq(t, open, string(ModelInputSchema(json.RawMessage(open))), "a root that takes input stays as it is")
	}
	require.Equal(t, "[1]", string(ModelInputSchema(json.RawMessage(`[1]`))), "not a schema object: as it is")
}
