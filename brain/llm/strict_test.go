package llm_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestStrictEveryTool: every tool of the repository's registry and of GEM's is exported in OpenAI's strict
// mode with a schema that keeps strict mode's rules, and a tool whose values travel as JSON text says so in
// its exported description.
func TestStrictEveryTool(t *testing.T) {
	t.Parallel()
	ours, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	gem, err := testenv.GEMRegistry()
	require.NoError(t, err)
	require.Equal(t, 105, gem.Len())
	// The tools that send some values as JSON text: those whose values the registry leaves free-form (11 of
	// ours, docs/mcp-server.md lists them; 26 in GEM's contract, which declares none of their properties).
	for reg, leastEncoded := range map[*registry.Registry]int{ours: 10, gem: 26} {
		ts := llm.NewToolSet(reg.Tools())
		require.Len(t, ts.Defs(), reg.Len())
		encoded := 0
		for _, def := range ts.Defs() {
			tool, _ := ts.Tool(def.Name)
			require.True(t, def.Strict, "%s is strict", tool.Name)
			require.Empty(t, llm.StrictProblems(def.Parameters), "%s", tool.Name)
			paths := llm.EncodedProperties(tool.InputSchema)
			if len(paths) == 0 {
				require.Equal(t, tool.Description, def.Description, "%s: nothing added", tool.Name)
				continue
			}
			encoded++
			require.True(t, strings.HasPrefix(def.Description, tool.Description), tool.Name)
			require.Contains(t, def.Description, "take"+map[bool]string{true: "s", false: ""}[len(paths) == 1]+" JSON encoded as a string", tool.Name)
			for _, p := range paths {
				require.Contains(t, def.Description, p, tool.Name)
			}
		}
		t.Logf("%s: %d tools, all strict; %d send some values as JSON text", reg.Path, reg.Len(), encoded)
		require.GreaterOrEqual(t, encoded, leastEncoded, "GEM's free-form tools are strict now")
	}
	require.Equal(t, 124, ours.Len())
}

// TestStrictRoundTrip: for every tool, a valid input sent as a strict-mode LLM sends it (every property
// present, null for what it leaves out, JSON text for the values strict mode cannot describe) comes back from
// InputFromArguments as the same input, which the registry's schema accepts.
func TestStrictRoundTrip(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	withEncoded := 0
	for _, tool := range reg.Tools() {
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		input := example(schema, schema, 0)
		raw, _ := json.Marshal(input)
		require.NoError(t, tool.ValidateInput(raw), "%s: the example is valid: %s", tool.Name, raw)

		paths := llm.EncodedProperties(tool.InputSchema)
		if len(paths) > 0 {
			withEncoded++
		}
		args := asStrictArguments(t, input, schema, schema, paths)
		got, err := llm.InputFromArguments(tool, args)
		require.NoError(t, err, "%s: %s", tool.Name, args)
		require.NoError(t, tool.ValidateInput(got), tool.Name)
		// A property the schema lets be null keeps the null strict mode sent for it (null and absent mean the
		// same to such a tool); everything else is exactly the input.
		var back any
		require.NoError(t, json.Unmarshal(got, &back))
		dropAddedNulls(back, input)
		gotRaw, _ := json.Marshal(back)
		require.JSONEq(t, string(raw), string(gotRaw), "%s: arguments %s", tool.Name, args)
	}
	require.GreaterOrEqual(t, withEncoded, 10, "the tools whose values the registry leaves free-form")
}

// TestStrictEncodedValues: JSON text that is not JSON, or not the kind of value the schema wants, is a
// validation error naming the value, never a crash; a value sent as itself (a model without strict mode) is
// kept.
func TestStrictEncodedValues(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	// identity.update_self_model's patch and identity.score_pattern's evidence_refs hold free-form objects.
	update, _ := reg.Tool("identity.update_self_model")
	score, _ := reg.Tool("identity.score_pattern")

	for _, tt := range []struct {
		name, tool, args, path, message string
	}{
		{"not JSON", "identity.update_self_model", `{"patch": "{persona: Bob}"}`, "/patch", "the text is not JSON"},
		{"an array for an object", "identity.update_self_model", `{"patch": "[1, 2]"}`, "/patch", "holds a JSON array"},
		{"a string for an object", "identity.update_self_model", `{"patch": "\"Bob\""}`, "/patch", "holds a JSON string"},
		{"an item not JSON", "identity.score_pattern", `{"key": "k", "value": {}, "confidence": 1, "evidence_refs": ["{\"job\": \"j1\"}", "oops"]}`, "/evidence_refs/1", "not JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tool, _ := reg.Tool(tt.tool)
			_, err := llm.InputFromArguments(tool, tt.args)
			var ve *registry.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, tt.path, ve.Violations[0].Path)
			require.Equal(t, "json_string", ve.Violations[0].Keyword)
			require.Contains(t, ve.Violations[0].Message, tt.message)
			require.Contains(t, err.Error(), "encoded as a string")
		})
	}

	// The value itself, or null for an optional one, passes through.
	got, err := llm.InputFromArguments(update, `{"patch": {"persona": {"name": "Bob"}}}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"patch": {"persona": {"name": "Bob"}}}`, string(got))
	got, err = llm.InputFromArguments(score, `{"key": "k", "value": {}, "confidence": 1, "evidence_refs": [{"job": "j1"}, "{\"job\": \"j2\"}"]}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"key": "k", "value": {}, "confidence": 1, "evidence_refs": [{"job": "j1"}, {"job": "j2"}]}`, string(got))
	create, _ := reg.Tool("calendar.create_event")
	got, err = llm.InputFromArguments(create, `{"title": "t", "start_at": "2026-01-01T10:00:00Z", "end_at": "2026-01-01T11:00:00Z", "location": null, "context_ref": null}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"title": "t", "start_at": "2026-01-01T10:00:00Z", "end_at": "2026-01-01T11:00:00Z"}`, string(got))
}

// TestStrictShapes covers the schemas strict mode cannot take as they are: each becomes strict, and an input
// round-trips through the arguments a strict-mode LLM would send.
func TestStrictShapes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		schema  string
		input   string
		args    string
		encoded []string
		check   func(t *testing.T, params map[string]any)
	}{
		{name: "free-form root", schema: `{"type": "object"}`,
			input: `{"a": 1, "b": [true]}`, args: `{"input": "{\"a\": 1, \"b\": [true]}"}`, encoded: []string{"input"}},
		{name: "root of any value", schema: `{}`,
			input: `{"x": "y"}`, args: `{"input": "{\"x\": \"y\"}"}`, encoded: []string{"input"}},
		{name: "map", schema: `{"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}, "required": ["tags"]}`,
			input: `{"tags": {"a": "b"}}`, args: `{"tags": "{\"a\": \"b\"}"}`, encoded: []string{"tags"}},
		{name: "nested free-form", schema: `{"type": "object", "properties": {"p": {"type": "object", "properties": {"q": {"type": "object"}, "r": {"type": "string"}}, "required": ["q"]}}, "required": ["p"]}`,
			input: `{"p": {"q": {"z": 1}}}`, args: `{"p": {"q": "{\"z\": 1}", "r": null}}`, encoded: []string{"p.q"}},
		{name: "array of anything", schema: `{"type": "object", "properties": {"xs": {"type": "array"}}, "required": ["xs"]}`,
			input: `{"xs": [1, "a", {"b": null}]}`, args: `{"xs": ["1", "\"a\"", "{\"b\": null}"]}`, encoded: []string{"xs[]"}},
		{name: "patternProperties", schema: `{"type": "object", "properties": {"m": {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}}, "required": ["m"]}`,
			input: `{"m": {"x1": 2}}`, args: `{"m": "{\"x1\": 2}"}`, encoded: []string{"m"}},
		{name: "anyOf with a free-form branch", schema: `{"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "object"}]}}, "required": ["v"]}`,
			input: `{"v": {"k": 1}}`, args: `{"v": "{\"k\": 1}"}`, encoded: []string{"v"}},
		{name: "allOf of objects is merged", schema: `{"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "integer"}}}]}`,
			input: `{"a": "x", "b": 2}`, args: `{"a": "x", "b": 2}`,
			check: func(t *testing.T, params map[string]any) {
				b, _ := json.Marshal(params)
				require.JSONEq(t, `{"type": "object", "additionalProperties": false, "required": ["a", "b"],
					"properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}}}`, string(b))
			}},
		{name: "allOf needing an intersection", schema: `{"type": "object", "properties": {"v": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}, "required": ["v"]}`,
			input: `{"v": "abc"}`, args: `{"v": "\"abc\""}`, encoded: []string{"v"}},
		{name: "not and if are dropped", schema: `{"type": "object", "properties": {"a": {"type": "string", "not": {"const": "x"}}}, "required": ["a"], "if": {"required": ["a"]}, "then": {"required": ["a"]}}`,
			input: `{"a": "y"}`, args: `{"a": "y"}`},
		{name: "a definition with a free-form object", schema: `{"type": "object", "$defs": {"ref": {"type": "object"}, "name": {"type": "string"}}, "properties": {"r": {"$ref": "#/$defs/ref"}, "n": {"$ref": "#/definitions/name"}}, "definitions": {"name": {"type": "string"}}, "required": ["r", "n"]}`,
			input: `{"r": {"type": "lead"}, "n": "x"}`, args: `{"r": "{\"type\": \"lead\"}", "n": "x"}`, encoded: []string{"r"},
			check: func(t *testing.T, params map[string]any) {
				require.Equal(t, map[string]any{"name": map[string]any{"type": "string"}}, params["$defs"])
				require.Equal(t, "#/$defs/name", params["properties"].(map[string]any)["n"].(map[string]any)["$ref"])
			}},
		{name: "a recursive definition", schema: `{"type": "object", "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}, "additionalProperties": false}}, "properties": {"head": {"$ref": "#/$defs/node"}}, "required": ["head"]}`,
			input: `{"head": {"next": {}}}`, args: `{"head": {"next": {"next": null}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tool := testTool(t, tt.schema)
			params, strict := llm.StrictSchema(tool.InputSchema)
			require.True(t, strict)
			require.Empty(t, llm.StrictProblems(params), "%v", params)
			require.Equal(t, tt.encoded, nilIfEmpty(llm.EncodedProperties(tool.InputSchema)))
			if tt.check != nil {
				tt.check(t, params)
			}
			got, err := llm.InputFromArguments(tool, tt.args)
			require.NoError(t, err)
			require.JSONEq(t, tt.input, string(got))
			require.NoError(t, tool.ValidateInput(got))
		})
	}

	_, strict := llm.StrictSchema([]byte(`not json`))
	require.False(t, strict, "only what is not a schema stays non-strict")
	wrapped := testTool(t, `{"type": "object"}`)
	_, err := llm.InputFromArguments(wrapped, `{"input": "[1]"}`)
	var ve *registry.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "/input", ve.Violations[0].Path)
	require.Contains(t, ve.Violations[0].Message, "the whole input")
	def := llm.NewToolSet([]*registry.Tool{wrapped}).Defs()[0]
	require.Contains(t, def.Description, "Property input takes the whole input as JSON encoded in a string.")
}

// dropAddedNulls removes from got the null properties want does not have.
func dropAddedNulls(got, want any) {
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		for k, v := range g {
			if _, has := w[k]; !has && v == nil {
				delete(g, k)
				continue
			}
			dropAddedNulls(v, w[k])
		}
	case []any:
		w, _ := want.([]any)
		for i := range g {
			if i < len(w) {
				dropAddedNulls(g[i], w[i])
			}
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func testTool(t *testing.T, schema string) *registry.Tool {
	t.Helper()
	reg, err := registry.Parse([]byte(fmt.Sprintf(`{"version": "t", "tools": [{"name": "t.shape", "description": "A shape.",
		"input_schema": %s, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`, schema)))
	require.NoError(t, err)
	return reg.Tools()[0]
}

// asStrictArguments is what a strict-mode LLM sends for input: every property of every object the strict
// schema describes (null for those input leaves out), and the values at the encoded paths as JSON text.
func asStrictArguments(t *testing.T, input any, schema, root map[string]any, encoded []string) string {
	t.Helper()
	var paths [][]string
	for _, e := range encoded {
		paths = append(paths, strings.Split(strings.ReplaceAll(e, "[]", ".[]"), "."))
	}
	var walk func(v any, s map[string]any, path []string) any
	walk = func(v any, s map[string]any, path []string) any {
		s = resolve(s, root)
		for _, p := range paths {
			if slices.Equal(p, path) {
				b, _ := json.Marshal(v)
				return string(b)
			}
		}
		switch v := v.(type) {
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			out := map[string]any{}
			for name := range props {
				out[name] = nil
			}
			for name, pv := range v {
				ps, _ := props[name].(map[string]any)
				out[name] = walk(pv, ps, append(slices.Clip(path), name))
			}
			return out
		case []any:
			items, _ := s["items"].(map[string]any)
			out := make([]any, len(v))
			for i, item := range v {
				out[i] = walk(item, items, append(slices.Clip(path), "[]"))
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(walk(input, schema, nil))
	require.NoError(t, err)
	return string(b)
}

func resolve(s, root map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		for _, k := range []string{"$defs", "definitions"} {
			if defs, ok := root[k].(map[string]any); ok && defs[name] != nil {
				return defs[name].(map[string]any)
			}
		}
	}
	return s
}

// example builds a value a schema accepts: required properties and every other optional one, a free-form
// object with a few values, strings that keep their format, pattern and lengths.
func example(s, root map[string]any, depth int) any {
	s = resolve(s, root)
	if c, ok := s["const"]; ok {
		return c
	}
	if enum, ok := s["enum"].([]any); ok {
		for _, v := range enum {
			if v != nil {
				return v
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if am := a.(map[string]any); am["type"] != "null" {
					return example(am, root, depth+1)
				}
			}
		}
	}
	typ, _ := s["type"].(string)
	if types, ok := s["type"].([]any); ok {
		for _, v := range types {
			if v != "null" {
				typ = v.(string)
				break
			}
		}
	}
	switch typ {
	case "object":
		props, hasProps := s["properties"].(map[string]any)
		if !hasProps {
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				return map[string]any{"key": example(ap, root, depth+1)}
			}
			return map[string]any{"note": "free-form", "count": 2.0, "nested": map[string]any{"ok": true}}
		}
		required := map[string]bool{}
		if r, ok := s["required"].([]any); ok {
			for _, n := range r {
				required[n.(string)] = true
			}
		}
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		out := map[string]any{}
		for i, n := range names {
			if required[n] || i%2 == 0 && depth < 4 {
				out[n] = example(props[n].(map[string]any), root, depth+1)
			}
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return []any{"any", 1.0}
		}
		return []any{example(items, root, depth+1)}
	case "integer", "number":
		v := 1.0
		if m, ok := s["minimum"].(float64); ok {
			v = m
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok {
			v = m + 1
		}
		if m, ok := s["maximum"].(float64); ok && v > m {
			v = m
		}
		return v
	case "boolean":
		return true
	case "string":
		return exampleString(s)
	}
	return "any"
}

func exampleString(s map[string]any) string {
	switch s["format"] {
	case "date-time":
		return "2026-03-04T05:06:07Z"
	case "date":
		return "2026-03-04"
	case "uuid":
		return "0190c0de-0000-7000-8000-000000000001"
	case "email":
		return "someone@example.com"
	case "uri":
		return "https://example.com/a"
	case "time":
		return "05:06:07Z"
	}
	v := "example"
	if p, ok := s["pattern"].(string); ok {
		re := regexp.MustCompile(p)
		for _, c := range []string{"example", "default", "abc", "a1", "A", "0412 345 678", "+61412345678", "2026-03-04", "10:00", "#ff0000", "x_y", "1024x1024", strings.Repeat("ab", 32)} {
			if re.MatchString(c) {
				v = c
				break
			}
		}
	}
	if n, ok := s["minLength"].(float64); ok {
		for len(v) < int(n) {
			v += "x"
		}
	}
	if n, ok := s["maxLength"].(float64); ok && len(v) > int(n) {
		v = v[:int(n)]
	}
	return v
}
