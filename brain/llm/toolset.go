package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gemhq/gem/registry"
)

// Function names LLM providers accept: letters, digits, "_" and "-", at most 64 characters.
var functionNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ToolSet is a set of registry tools exported as LLM functions, with the mapping of function names back to
// registry names. Registry names contain dots, which providers refuse: "os.create_task" becomes
// "os__create_task"; a name that would collide or be too long gets a short hash instead. The mapping is
// looked up, never reversed by rule, so it is exact.
type ToolSet struct {
	tools      []*registry.Tool
	byFunction map[string]*registry.Tool
	function   map[string]string
	defs       []ToolDef
}

// NewToolSet exports tools (sorted by name).
func NewToolSet(tools []*registry.Tool) *ToolSet {
	ts := &ToolSet{byFunction: map[string]*registry.Tool{}, function: map[string]string{}}
	sorted := slices.Clone(tools)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, t := range sorted {
		fn := strings.ReplaceAll(t.Name, ".", "__")
		if _, taken := ts.byFunction[fn]; taken || !functionNameRe.MatchString(fn) {
			sum := sha256.Sum256([]byte(t.Name))
			clean := regexp.MustCompile(`[^a-zA-Z0-9_-]`).ReplaceAllString(fn, "_")
			fn = clean[:min(len(clean), 55)] + "_" + hex.EncodeToString(sum[:4])
		}
		ts.tools = append(ts.tools, t)
		ts.byFunction[fn] = t
		ts.function[t.Name] = fn
		params, strict := StrictSchema(t.InputSchema)
		ts.defs = append(ts.defs, ToolDef{Name: fn, Description: t.Description, Parameters: params, Strict: strict})
	}
	return ts
}

// Defs are the function definitions to offer.
func (ts *ToolSet) Defs() []ToolDef { return ts.defs }

// Tools are the registry tools in the set.
func (ts *ToolSet) Tools() []*registry.Tool { return ts.tools }

// Len is the number of tools.
func (ts *ToolSet) Len() int { return len(ts.tools) }

// Tool maps a function name back to its registry tool.
func (ts *ToolSet) Tool(function string) (*registry.Tool, bool) {
	t, ok := ts.byFunction[function]
	return t, ok
}

// Function maps a registry name to its function name.
func (ts *ToolSet) Function(tool string) (string, bool) {
	fn, ok := ts.function[tool]
	return fn, ok
}

// Def returns the definition of one tool.
func (ts *ToolSet) Def(tool string) (ToolDef, bool) {
	fn, ok := ts.function[tool]
	if !ok {
		return ToolDef{}, false
	}
	for _, d := range ts.defs {
		if d.Name == fn {
			return d, true
		}
	}
	return ToolDef{}, false
}

// Keywords OpenAI's strict mode accepts, per JSON type; others are dropped from the exported schema (the
// executor still validates the registry's full schema, and its violations go back to the LLM).
var strictKeywords = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "anyOf": true, "$ref": true, "$defs": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "minItems": true, "maxItems": true,
}

// Formats strict mode accepts.
var strictFormats = map[string]bool{"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true}

// StrictSchema adapts an input schema to OpenAI's strict mode: every object lists all its properties in
// required and has additionalProperties false, optional properties become nullable, oneOf becomes anyOf,
// and keywords strict mode refuses are dropped. It reports false (and returns the schema unchanged) when the
// schema cannot be strict: a free-form object, a map (additionalProperties a schema), allOf/not/if.
func StrictSchema(input json.RawMessage) (map[string]any, bool) {
	var schema map[string]any
	if err := json.Unmarshal(input, &schema); err != nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}, false
	}
	strict, ok := strictNode(schema)
	if !ok {
		delete(schema, "$schema")
		return schema, false
	}
	if m, _ := strict.(map[string]any); m != nil {
		return m, true
	}
	return schema, false
}

func strictNode(node any) (any, bool) {
	m, isMap := node.(map[string]any)
	if !isMap {
		return node, true // true/false schemas and plain values
	}
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas", "unevaluatedProperties", "prefixItems":
			return nil, false
		case "oneOf":
			k = "anyOf"
		case "definitions":
			k = "$defs"
		}
		if !strictKeywords[k] && k != "anyOf" {
			continue
		}
		out[k] = v
	}
	if f, ok := out["format"].(string); ok && !strictFormats[f] {
		delete(out, "format")
	}
	if defs, ok := out["$defs"].(map[string]any); ok {
		nd := map[string]any{}
		for name, d := range defs {
			sd, ok := strictNode(d)
			if !ok {
				return nil, false
			}
			nd[name] = sd
		}
		out["$defs"] = nd
	}
	if ref, ok := out["$ref"].(string); ok {
		out["$ref"] = strings.Replace(ref, "#/definitions/", "#/$defs/", 1)
	}
	if alts, ok := out["anyOf"].([]any); ok {
		na := make([]any, len(alts))
		for i, s := range alts {
			ss, ok := strictNode(s)
			if !ok {
				return nil, false
			}
			na[i] = ss
		}
		out["anyOf"] = na
	}
	if items, ok := out["items"]; ok {
		si, ok := strictNode(items)
		if !ok {
			return nil, false
		}
		out["items"] = si
	} else if hasType(out, "array") {
		return nil, false // strict mode needs items
	}
	props, hasProps := out["properties"].(map[string]any)
	if hasType(out, "object") || hasProps {
		if ap, set := out["additionalProperties"]; set && ap != false {
			return nil, false // a map or a free-form object
		}
		if !hasProps {
			if _, set := out["additionalProperties"]; !set {
				return nil, false // {"type": "object"} accepts anything
			}
			props = map[string]any{}
		}
		required := toStrings(out["required"])
		np := map[string]any{}
		names := make([]string, 0, len(props))
		for name, p := range props {
			sp, ok := strictNode(p)
			if !ok {
				return nil, false
			}
			if !slices.Contains(required, name) {
				sp = nullable(sp)
			}
			np[name] = sp
			names = append(names, name)
		}
		sort.Strings(names)
		out["properties"] = np
		out["required"] = names
		out["additionalProperties"] = false
	}
	return out, true
}

func hasType(m map[string]any, typ string) bool {
	switch t := m["type"].(type) {
	case string:
		return t == typ
	case []any:
		for _, v := range t {
			if v == typ {
				return true
			}
		}
	}
	return false
}

// nullable lets a strict-mode property be null, which is how the LLM leaves an optional property out.
func nullable(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	switch t := out["type"].(type) {
	case string:
		if t != "null" {
			out["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			out["type"] = append(slices.Clone(t), "null")
		}
	default:
		if _, isRef := out["$ref"]; isRef || out["anyOf"] != nil {
			alts, _ := out["anyOf"].([]any)
			if alts == nil {
				alts = []any{map[string]any{"$ref": out["$ref"]}}
				delete(out, "$ref")
			}
			out["anyOf"] = append(slices.Clone(alts), map[string]any{"type": "null"})
		}
	}
	if enum, ok := out["enum"].([]any); ok && !slices.Contains(enum, any(nil)) {
		out["enum"] = append(slices.Clone(enum), nil)
	}
	return out
}

// StrictProblems checks a schema against OpenAI's strict-mode rules and lists what breaks them.
func StrictProblems(schema map[string]any) []string {
	var problems []string
	var walk func(path string, node any)
	walk = func(path string, node any) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		for k := range m {
			if !strictKeywords[k] {
				problems = append(problems, fmt.Sprintf("%s: keyword %q is not allowed in strict mode", path, k))
			}
		}
		if f, ok := m["format"].(string); ok && !strictFormats[f] {
			problems = append(problems, fmt.Sprintf("%s: format %q is not allowed in strict mode", path, f))
		}
		if props, ok := m["properties"].(map[string]any); ok || hasType(m, "object") {
			if m["additionalProperties"] != false {
				problems = append(problems, fmt.Sprintf("%s: additionalProperties must be false", path))
			}
			required := toStrings(m["required"])
			for name := range props {
				if !slices.Contains(required, name) {
					problems = append(problems, fmt.Sprintf("%s: property %q is not in required", path, name))
				}
			}
			for name, p := range props {
				walk(path+"/properties/"+name, p)
			}
		}
		if hasType(m, "array") {
			if _, ok := m["items"]; !ok {
				problems = append(problems, fmt.Sprintf("%s: an array needs items", path))
			}
		}
		if items, ok := m["items"]; ok {
			walk(path+"/items", items)
		}
		if alts, ok := m["anyOf"].([]any); ok {
			for i, a := range alts {
				walk(fmt.Sprintf("%s/anyOf/%d", path, i), a)
			}
		}
		if defs, ok := m["$defs"].(map[string]any); ok {
			for name, d := range defs {
				walk(path+"/$defs/"+name, d)
			}
		}
	}
	if !hasType(schema, "object") {
		problems = append(problems, "the root must be an object")
	}
	walk("", schema)
	sort.Strings(problems)
	return problems
}

// InputFromArguments turns an LLM's arguments into the tool's input: null values of properties the
// registry's schema does not let be null (strict mode's way of leaving them out) are removed, so the executor
// validates what the registry says.
func InputFromArguments(tool *registry.Tool, arguments string) (json.RawMessage, error) {
	var args any
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	obj, ok := args.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the arguments must be a JSON object")
	}
	var schema map[string]any
	_ = json.Unmarshal(tool.InputSchema, &schema)
	dropNulls(obj, schema, schema)
	out, _ := json.Marshal(obj)
	return out, nil
}

func dropNulls(value any, schema, root map[string]any) {
	schema = resolveRef(schema, root)
	switch v := value.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for k, pv := range v {
			ps, _ := props[k].(map[string]any)
			if pv == nil && !allowsNull(resolveRef(ps, root), root) {
				delete(v, k)
				continue
			}
			dropNulls(pv, ps, root)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, item := range v {
			dropNulls(item, items, root)
		}
	}
}

func resolveRef(s, root map[string]any) map[string]any {
	for range 10 {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		var defs map[string]any
		if strings.Contains(ref, "/definitions/") {
			defs, _ = root["definitions"].(map[string]any)
		} else {
			defs, _ = root["$defs"].(map[string]any)
		}
		next, _ := defs[name].(map[string]any)
		if next == nil {
			return s
		}
		s = next
	}
	return s
}

func allowsNull(s, root map[string]any) bool {
	if s == nil {
		return false // a property the schema does not know: leave it out rather than send null
	}
	if hasType(s, "null") {
		return true
	}
	if enum, ok := s["enum"].([]any); ok && slices.Contains(enum, any(nil)) {
		return true
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if am, ok := a.(map[string]any); ok && allowsNull(resolveRef(am, root), root) {
					return true
				}
			}
		}
	}
	_, hasType := s["type"]
	_, hasRef := s["$ref"]
	_, hasAny := s["anyOf"]
	_, hasOne := s["oneOf"]
	return !hasType && !hasRef && !hasAny && !hasOne && s["enum"] == nil && s["const"] == nil // {} accepts null
}
