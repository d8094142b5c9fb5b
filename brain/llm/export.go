package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gemhq/gem/registry"
)

// Formats tools are exported in (GET /brain/tools?format=).
const (
	// FormatGEM is the registry's own description of a tool (the brain's API renders it).
	FormatGEM = "gem"
	// FormatOpenAI is a chat completions function tool, strict mode included, exactly as the LLM loop sends it.
	FormatOpenAI = "openai"
	// FormatAnthropic is a Messages API tool, exactly as the LLM loop sends it.
	FormatAnthropic = "anthropic"
	// FormatMCP is an MCP tools/list entry (MCPToolDef).
	FormatMCP = "mcp"
)

// ExportFormats are the formats tools can be exported in, FormatGEM (the default) first.
var ExportFormats = []string{FormatGEM, FormatOpenAI, FormatAnthropic, FormatMCP}

// Export renders one tool of the set in a provider's format (FormatOpenAI, FormatAnthropic or FormatMCP), as
// the wire JSON the provider receives: the same code builds the LLM loop's requests.
func (ts *ToolSet) Export(format, tool string) (json.RawMessage, error) {
	t, ok := ts.byName(tool)
	if !ok {
		return nil, fmt.Errorf("no tool %q in the set", tool)
	}
	var v any
	switch format {
	case FormatOpenAI, FormatAnthropic:
		def, _ := ts.Def(tool)
		if format == FormatOpenAI {
			v = openaiTool(def)
		} else {
			v = anthropicTool(def)
		}
	case FormatMCP:
		v = MCPToolDef(t)
	default:
		return nil, fmt.Errorf("cannot export in format %q: use %s, %s or %s", format, FormatOpenAI, FormatAnthropic, FormatMCP)
	}
	return json.Marshal(v)
}

func (ts *ToolSet) byName(tool string) (*registry.Tool, bool) {
	fn, ok := ts.function[tool]
	if !ok {
		return nil, false
	}
	return ts.byFunction[fn], true
}

// MCPTool is a tool as MCP's tools/list describes it (the 2025-11-25 schema's Tool).
type MCPTool struct {
	// Name is the tool's portable name (registry.PortableName): MCP allows dots, but most clients hand the
	// name to a model API as it is, and model APIs refuse them.
	Name string `json:"name"`
	// Title is a name for people, which holds GEM's name.
	Title       string `json:"title"`
	Description string `json:"description"`
	// InputSchema is the registry's input schema as clients that hand it to a model take it
	// (ModelInputSchema): without the keywords strict mode refuses, a root without properties closed.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema admits the registry's output schema and GEM's pending and error answers.
	OutputSchema json.RawMessage    `json:"outputSchema"`
	Annotations  MCPToolAnnotations `json:"annotations"`
	// Meta holds GEM's name of the tool, under MCPMetaName.
	Meta map[string]any `json:"_meta"`
}

// MCPMetaName is the _meta key of an MCP tool that holds GEM's (dotted) name of the tool.
const MCPMetaName = "gem/name"

// MCPToolAnnotations are a tool's behaviour hints, each stated (MCP's defaults assume the worst: destructive
// and open-world).
type MCPToolAnnotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// MCPToolDef describes a registry tool for MCP's tools/list, its hints derived from the registry
// (registry.Tool.Annotations: permissions, idempotency mode, implementation). Its output schema admits the
// tool's result and the two other answers GEM's MCP server gives: {call_id, status: "pending"} while the
// call runs, and {status, error} when it did not succeed (clients check structuredContent against the output
// schema, some even with isError).
func MCPToolDef(t *registry.Tool) MCPTool {
	a := t.Annotations()
	title := ToolTitle(t)
	result := string(t.OutputSchema)
	var output map[string]json.RawMessage
	_ = json.Unmarshal(t.OutputSchema, &output)
	var typ any
	_ = json.Unmarshal(output["type"], &typ)
	if typ != nil && typ != "object" {
		// structuredContent is an object: a result of another type is answered as {"result": value}.
		result = `{"type": "object", "properties": {"result": ` + result + `}, "required": ["result"]}`
	}
	// The output schema becomes a branch: its definitions go to the root, where its references ("#/$defs/x")
	// point.
	defs := map[string]json.RawMessage{}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := output[k]; ok {
			defs[k] = d
		}
	}
	hoisted := ""
	if len(defs) > 0 {
		b, _ := json.Marshal(defs)
		hoisted = ", " + string(b[1:len(b)-1])
	}
	return MCPTool{Name: registry.PortableName(t.Name), Title: title, Description: t.Description, InputSchema: ModelInputSchema(t.InputSchema),
		OutputSchema: json.RawMessage(`{"type": "object", "anyOf": [` + result + `, ` + mcpPendingSchema + `, ` + mcpErrorSchema + `]` + hoisted + `}`),
		Annotations: MCPToolAnnotations{Title: title, ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive,
			IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld},
		Meta: map[string]any{MCPMetaName: t.Name}}
}

// mcpPendingSchema is what an MCP call still running, or awaiting approval, answers (a branch of every
// tool's MCP output schema).
const mcpPendingSchema = `{
	"type": "object",
	"description": "The call is still running, or waits for a person's approval until expires_at: gem__get_receipt (gem.get_receipt) with this call_id returns its receipt.",
	"properties": {
		"call_id": {"type": "string", "format": "uuid"},
		"status": {"type": "string", "enum": ["pending", "awaiting_approval"]},
		"tool": {"type": "string"},
		"expires_at": {"type": "string", "format": "date-time"}
	},
	"required": ["call_id", "status"],
	"additionalProperties": false
}`

// mcpErrorSchema is what an MCP call that did not succeed answers, with isError (a branch of every tool's output
// schema: some clients check an error's structured content too). call_id is absent when arguments were
// refused before any call was made.
const mcpErrorSchema = `{
	"type": "object",
	"description": "The call did not succeed (isError): the receipt's status and error, or invalid_arguments when no call was made.",
	"properties": {
		"call_id": {"type": "string", "format": "uuid"},
		"status": {"type": "string", "enum": ["failed", "not_configured", "invalid_arguments", "not_found"]},
		"tool": {"type": "string"},
		"error": {
			"type": "object",
			"properties": {
				"code": {"type": "string"},
				"message": {"type": "string"},
				"details": {"type": "object", "additionalProperties": true}
			},
			"required": ["code", "message"],
			"additionalProperties": false
		}
	},
	"required": ["status", "error"],
	"additionalProperties": false
}`

// ToolTitle is a tool's name for people: its method in words, then GEM's name of it, which receipts, the
// studio and skills use ("Defer task (os.defer_task)").
func ToolTitle(t *registry.Tool) string {
	words := strings.ReplaceAll(t.Method(), "_", " ")
	if words != "" {
		words = strings.ToUpper(words[:1]) + words[1:]
	}
	return words + " (" + t.Name + ")"
}
