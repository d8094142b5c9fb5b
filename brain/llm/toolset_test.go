package llm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestToolExport exports every registry tool: names map back exactly, every strict schema obeys strict
// mode's rules, and arguments an LLM gives in strict mode (nulls for what it leaves out) become input the
// executor's schema accepts.
func TestToolExport(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	ts := llm.NewToolSet(reg.Tools())
	require.Equal(t, reg.Len(), ts.Len())

	strict := 0
	for _, def := range ts.Defs() {
		tool, ok := ts.Tool(def.Name)
		require.True(t, ok, def.Name)
		fn, _ := ts.Function(tool.Name)
		require.Equal(t, def.Name, fn, "the mapping is exact both ways")
		require.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, def.Name)
		require.Equal(t, registry.PortableName(tool.Name), def.Name, "the name /mcp lists it by")
		require.Equal(t, tool.Name, registry.DottedName(def.Name), "and it reads back by rule")
		if !def.Strict {
			t.Logf("%s is exported without strict mode (its schema has a free-form object or a map)", tool.Name)
			continue
		}
		strict++
		require.Empty(t, llm.StrictProblems(def.Parameters), tool.Name)

		// An LLM in strict mode sends every property; optional ones it does not use are null.
		args := map[string]any{}
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		for name := range schema.Properties {
			args[name] = nil
		}
		raw, _ := json.Marshal(args)
		input, err := llm.InputFromArguments(tool, string(raw))
		require.NoError(t, err)
		// Nulls the registry does not allow were dropped, so what is left to complain about is what is
		// missing (required, minProperties, ...), never a null of the wrong type.
		if err := tool.ValidateInput(input); err != nil {
			var ve *registry.ValidationError
			require.ErrorAs(t, err, &ve)
			for _, v := range ve.Violations {
				require.NotContains(t, []string{"type", "enum", "format", "const"}, v.Keyword, "%s: %s", tool.Name, err)
			}
		}
	}
	require.Greater(t, strict, reg.Len()*3/4, "most tools are strict")

	// Long or clashing names are refused when the registry loads, each named: no function name needs a hash.
	long := strings.Repeat("x", 70)
	_, err = registry.Parse([]byte(fmt.Sprintf(`{"version": "1", "tools": [
		{"name": "a.%s", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000},
		{"name": "a__b.c", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000},
		{"name": "a.b__c", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`, long)))
	require.ErrorContains(t, err, "tool a."+long+": field name is longer than model APIs accept")
	require.ErrorContains(t, err, `tool a__b.c: field name is exported as "a__b__c"`)
	require.ErrorContains(t, err, `tool a.b__c: field name is exported as "a__b__c"`)
}
