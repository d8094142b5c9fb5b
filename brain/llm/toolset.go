package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/gemhq/gem/registry"
)

// ToolSet is a set of registry tools exported as LLM functions, with the mapping of function names back to
// registry names. Registry names contain dots, which providers refuse: each tool is offered under its
// portable name (registry.PortableName: "os.create_task" becomes "os__create_task"), the name GEM's MCP
// server lists it by too; the registry makes sure no two tools share one. A function outside the set is not
// the set's, whatever tool its name reads back as.
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
		fn := registry.PortableName(t.Name)
		ts.tools = append(ts.tools, t)
		ts.byFunction[fn] = t
		ts.function[t.Name] = fn
		form := strictFormOf(t.InputSchema)
		ts.defs = append(ts.defs, ToolDef{Name: fn, Description: t.Description + form.note(), Parameters: form.params, Strict: form.strict})
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

// Keywords that shape what a schema holds rather than narrow it: the exporters convert them (oneOf to anyOf,
// allOf merged, definitions through their references) or, where strict mode cannot take the shape, give the
// value up to JSON text (the LLM loop) or leave the tool non-strict (an MCP client) — they never just drop
// them. $schema names the schema's dialect.
var shapingKeywords = map[string]bool{"oneOf": true, "allOf": true, "$defs": true, "definitions": true,
	"patternProperties": true, "prefixItems": true, "$schema": true}

// strictRefuses reports whether a keyword of a schema (with its value) is one OpenAI's strict mode refuses
// and that only narrows or annotates what the schema accepts — maxLength, minLength, default, not, a format
// other than strictFormats... — so a schema offered to a model leaves it out, the executor still checking it.
// It is the one rule of both exports: the LLM loop's strict schemas (StrictSchema) and the input schemas MCP
// clients convert to strict mode themselves (ModelInputSchema).
func strictRefuses(keyword string, value any) bool {
	if keyword == "format" {
		f, _ := value.(string)
		return !strictFormats[f]
	}
	return !strictKeywords[keyword] && !shapingKeywords[keyword]
}

// ModelInputSchema is a tool's input schema as GEM exports it to clients that hand it to a model — MCP's
// tools/list and GET /brain/tools?format=mcp — so that the strict converters of those clients (the OpenAI
// Agents SDK's) convert it cleanly wherever the registry allows:
//
//   - the keywords strict mode refuses are left out (strictRefuses, the LLM loop's own rule), at every
//     level; the executor still validates every call against the registry's whole schema;
//   - an object root with no properties (a tool that takes no input) is closed, additionalProperties false:
//     an open object cannot be strict.
//
// Everything else is the registry's: optional properties stay optional (the client's converter makes them
// nullable), and a value the registry leaves free-form stays free-form (that tool stays non-strict). Input
// that is not a JSON object is returned as it is.
func ModelInputSchema(input json.RawMessage) json.RawMessage {
	var root map[string]any
	if json.Unmarshal(input, &root) != nil || root == nil {
		return input
	}
	out := withoutRefused(root).(map[string]any)
	open := false
	for _, k := range []string{"additionalProperties", "patternProperties", "anyOf", "oneOf", "allOf", "$ref"} {
		_, has := out[k]
		open = open || has
	}
	props, _ := out["properties"].(map[string]any)
	if typ, typed := out["type"]; !open && len(props) == 0 && (!typed || typ == "object") {
		out["type"], out["properties"], out["additionalProperties"] = "object", map[string]any{}, false
	}
	data, err := json.Marshal(out)
	if err != nil {
		return input
	}
	return data
}

// withoutRefused copies a schema node without the keywords strict mode refuses, recursing into the schemas
// it holds.
func withoutRefused(node any) any {
	m, ok := node.(map[string]any)
	if !ok {
		return node // true or false
	}
	out := map[string]any{}
	for k, v := range m {
		if strictRefuses(k, v) {
			continue
		}
		switch k {
		case "properties", "$defs", "definitions", "patternProperties":
			if named, ok := v.(map[string]any); ok {
				schemas := make(map[string]any, len(named))
				for name, s := range named {
					schemas[name] = withoutRefused(s)
				}
				v = schemas
			}
		case "anyOf", "oneOf", "allOf", "prefixItems", "items", "additionalProperties":
			if list, ok := v.([]any); ok { // a list of schemas (items as a tuple, in older dialects)
				schemas := make([]any, len(list))
				for i, s := range list {
					schemas[i] = withoutRefused(s)
				}
				v = schemas
			} else {
				v = withoutRefused(v)
			}
		}
		out[k] = v
	}
	return out
}

// wrappedInput is the one property of a strict schema whose tool's whole input is sent as JSON text.
const wrappedInput = "input"

// StrictSchema adapts an input schema to OpenAI's strict mode: every object lists all its properties in
// required and has additionalProperties false, optional properties become nullable, oneOf becomes anyOf, a
// one-branch or object-only allOf is merged, and keywords strict mode refuses (not, if/then/else, lengths...)
// are dropped, the executor still checking them. What strict mode cannot describe at all — a free-form
// object, a map, an array of anything, a schema strict mode would refuse — is sent as JSON encoded in a
// string (InputFromArguments decodes it), and a schema whose root cannot be strict is sent whole that way, in
// property "input". It reports false only for input that is not a JSON schema.
func StrictSchema(input json.RawMessage) (map[string]any, bool) {
	form := strictFormOf(input)
	return form.params, form.strict
}

// EncodedProperties lists the input values a strict schema takes as JSON encoded in a string, as paths
// ("context_ref", "patch.contact", "items[]" for each item of items; "input" when the whole input is).
func EncodedProperties(input json.RawMessage) []string {
	form := strictFormOf(input)
	var out []string
	if form.wrapped {
		out = append(out, wrappedInput)
	}
	for _, e := range form.encoded {
		out = append(out, e.path.String())
	}
	return out
}

// valuePath is where a value sits in an input: property names, and "[]" for every item of an array.
type valuePath []string

func (p valuePath) String() string {
	var b strings.Builder
	for _, s := range p {
		if s != "[]" && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (p valuePath) child(name string) valuePath { return append(slices.Clip(p), name) }

// encodedValue is a value strict mode sends as JSON text, and the JSON types its schema allows ("object",
// "array"...; none for any).
type encodedValue struct {
	path  valuePath
	types []string
}

// strictForm is an input schema as strict mode takes it, and what InputFromArguments needs to read the
// arguments back.
type strictForm struct {
	params  map[string]any
	strict  bool
	wrapped bool
	// rootTypes are the JSON types a wrapped input may have.
	rootTypes []string
	encoded   []encodedValue
	// schema is the registry's schema, which null dropping follows.
	schema map[string]any
}

// note is what the tool's exported description says about values sent as JSON text.
func (f *strictForm) note() string {
	if f.wrapped {
		return fmt.Sprintf(" Property %s takes the whole input as JSON encoded in a string.", wrappedInput)
	}
	if len(f.encoded) == 0 {
		return ""
	}
	names := make([]string, len(f.encoded))
	items := false
	for i, e := range f.encoded {
		names[i] = e.path.String()
		items = items || slices.Contains(e.path, "[]")
	}
	s := fmt.Sprintf(" Property %s takes JSON encoded as a string.", names[0])
	if len(names) > 1 {
		s = fmt.Sprintf(" Properties %s take JSON encoded as a string.", strings.Join(names, ", "))
	}
	if items {
		s = strings.TrimSuffix(s, ".") + " ([] is each item of a list)."
	}
	return s
}

func strictFormOf(input json.RawMessage) *strictForm {
	var schema map[string]any
	if err := json.Unmarshal(input, &schema); err != nil || schema == nil {
		return &strictForm{params: map[string]any{"type": "object", "properties": map[string]any{}}}
	}
	b := &strictBuilder{root: schema, defs: map[string]any{}, defOK: map[string]bool{}}
	form := &strictForm{strict: true, schema: schema}
	out, ok := b.convert(schema, nil, true)
	m, isMap := out.(map[string]any)
	if !ok || !isMap || !hasType(m, "object") || m["properties"] == nil {
		// The root cannot be strict: the whole input travels as JSON text.
		b.encoded = nil
		form.wrapped, form.rootTypes = true, jsonTypes(schema)
		m = map[string]any{"type": "object", "additionalProperties": false, "required": []any{wrappedInput},
			"properties": map[string]any{wrappedInput: encodedSchema(schema)}}
	} else if len(b.defs) > 0 {
		defs := map[string]any{}
		for name, d := range b.defs {
			if b.defOK[name] {
				defs[name] = d
			}
		}
		m["$defs"] = defs
	}
	delete(m, "$schema")
	form.params, form.encoded = m, b.encoded
	return form
}

// strictBuilder converts a schema to strict mode, collecting the values it had to send as JSON text.
type strictBuilder struct {
	root    map[string]any
	defs    map[string]any
	defOK   map[string]bool
	encoded []encodedValue
}

// Keywords that only narrow what a schema accepts: dropping them offers the LLM a wider schema, and the
// executor's validation still applies them.
var narrowingKeywords = map[string]bool{"not": true, "if": true, "then": true, "else": true, "dependentRequired": true,
	"dependentSchemas": true, "unevaluatedProperties": true, "unevaluatedItems": true, "minProperties": true,
	"maxProperties": true, "propertyNames": true, "contains": true, "minContains": true, "maxContains": true, "uniqueItems": true}

// convert turns one schema node into strict mode. encodable says whether a part strict mode cannot take may
// be sent as JSON text (not inside anyOf or $defs, where the same value has several schemas). It reports
// false when the node itself cannot be strict; the caller then encodes it or fails in turn.
func (b *strictBuilder) convert(node any, path valuePath, encodable bool) (out any, ok bool) {
	m, isMap := node.(map[string]any)
	if !isMap {
		return nil, false // true (anything) or false (nothing) where a schema object is wanted
	}
	mark := len(b.encoded)
	defer func() {
		if !ok {
			b.encoded = b.encoded[:mark] // the caller encodes this whole node instead
		}
	}()
	if all, has := m["allOf"]; has {
		merged, ok := mergeAllOf(m, all, b.root)
		if !ok {
			return nil, false
		}
		m = merged
	}
	if _, has := m["patternProperties"]; has {
		return nil, false // a map keyed by pattern
	}
	if _, has := m["prefixItems"]; has {
		return nil, false // a tuple
	}
	res := map[string]any{}
	for k, v := range m {
		switch {
		case k == "oneOf":
			res["anyOf"] = v
		case k == "definitions" || k == "$defs" || k == "$schema":
			// the root's definitions are converted when referenced
		case !strictRefuses(k, v):
			res[k] = v
		}
	}
	if ref, has := res["$ref"].(string); has {
		name, ok := b.def(ref)
		if !ok {
			return nil, false
		}
		res["$ref"] = "#/$defs/" + name
	}
	if alts, has := res["anyOf"].([]any); has {
		na := make([]any, len(alts))
		for i, s := range alts {
			ss, ok := b.convert(s, path, false)
			if !ok {
				return nil, false
			}
			na[i] = ss
		}
		res["anyOf"] = na
	} else if _, has := res["anyOf"]; has {
		return nil, false
	}
	if items, has := res["items"]; has || hasType(res, "array") {
		itemPath := path.child("[]")
		si, ok := b.convert(items, itemPath, encodable)
		if !ok {
			if !encodable || !hasType(res, "array") {
				return nil, false
			}
			si = b.encode(items, itemPath)
		}
		res["items"] = si
	}
	props, hasProps := res["properties"].(map[string]any)
	if hasType(res, "object") || hasProps {
		if ap, set := res["additionalProperties"]; set && ap != false && ap != true {
			return nil, false // a map: its keys are data
		}
		if !hasProps && res["additionalProperties"] != false {
			return nil, false // {"type": "object"} accepts any object
		}
		required := toStrings(res["required"])
		np := map[string]any{}
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names) // so the values sent as JSON text are listed in a stable order
		for _, name := range names {
			p := props[name]
			sp, ok := b.convert(p, path.child(name), encodable)
			if !ok {
				if !encodable {
					return nil, false
				}
				sp = b.encode(p, path.child(name))
			}
			if !slices.Contains(required, name) {
				sp = nullable(sp)
			}
			np[name] = sp
		}
		res["properties"] = np
		res["required"] = names
		res["additionalProperties"] = false
	}
	_, hasType := res["type"]
	_, hasRef := res["$ref"]
	_, hasAny := res["anyOf"]
	_, hasEnum := res["enum"]
	_, hasConst := res["const"]
	if !hasType && !hasRef && !hasAny && !hasEnum && !hasConst {
		return nil, false // {} accepts any value
	}
	return res, true
}

// encode records that the value at path is sent as JSON text and returns the string schema offered for it.
func (b *strictBuilder) encode(node any, path valuePath) map[string]any {
	b.encoded = append(b.encoded, encodedValue{path: path, types: jsonTypes(node)})
	return encodedSchema(node)
}

// def converts a local reference's definition once and returns its name under $defs.
func (b *strictBuilder) def(ref string) (string, bool) {
	var defs map[string]any
	var name string
	switch {
	case strings.HasPrefix(ref, "#/$defs/"):
		name = ref[len("#/$defs/"):]
		defs, _ = b.root["$defs"].(map[string]any)
	case strings.HasPrefix(ref, "#/definitions/"):
		name = ref[len("#/definitions/"):]
		defs, _ = b.root["definitions"].(map[string]any)
	default:
		return "", false // the root, or a path into it
	}
	if ok, seen := b.defOK[name]; seen {
		return name, ok
	}
	d, found := defs[name]
	if !found {
		return "", false
	}
	b.defOK[name] = true // a recursive definition refers to itself while it is converted
	out, ok := b.convert(d, nil, false)
	b.defOK[name] = ok
	if ok {
		b.defs[name] = out
	}
	return name, ok
}

// mergeAllOf folds allOf into its schema when every branch is a plain object schema (properties, required,
// additionalProperties false) or only narrows; it reports false when the branches need real intersection.
func mergeAllOf(m map[string]any, all any, root map[string]any) (map[string]any, bool) {
	branches, ok := all.([]any)
	if !ok {
		return nil, false
	}
	out := map[string]any{}
	for k, v := range m {
		if k != "allOf" {
			out[k] = v
		}
	}
	props := map[string]any{}
	if p, ok := out["properties"].(map[string]any); ok {
		for k, v := range p {
			props[k] = v
		}
	}
	required := toStrings(out["required"])
	for _, br := range branches {
		bm, ok := br.(map[string]any)
		if !ok {
			return nil, false
		}
		if ref, ok := bm["$ref"].(string); ok && len(bm) == 1 {
			if bm = resolveRef(map[string]any{"$ref": ref}, root); bm["$ref"] != nil {
				return nil, false
			}
		}
		for k, v := range bm {
			switch {
			case narrowingKeywords[k] || k == "description" || k == "title" || k == "$comment":
			case k == "type":
				if v != "object" || (out["type"] != nil && out["type"] != "object") {
					return nil, false
				}
				out["type"] = "object"
			case k == "required":
				for _, r := range toStrings(v) {
					if !slices.Contains(required, r) {
						required = append(required, r)
					}
				}
			case k == "properties":
				pm, ok := v.(map[string]any)
				if !ok {
					return nil, false
				}
				for name, p := range pm {
					if prev, dup := props[name]; dup && !reflect.DeepEqual(prev, p) {
						return nil, false
					}
					props[name] = p
				}
			case k == "additionalProperties" && v == false:
				out["additionalProperties"] = false
			default:
				return nil, false
			}
		}
	}
	if len(props) > 0 {
		out["properties"] = props
		if out["type"] == nil {
			out["type"] = "object"
		}
	}
	if len(required) > 0 {
		out["required"] = toAny(required)
	}
	return out, true
}

// encodedSchema is the string schema offered for a value sent as JSON text; it keeps the value's
// description, which says what the JSON holds.
func encodedSchema(node any) map[string]any {
	kind := "a JSON value"
	if types := jsonTypes(node); len(types) == 1 {
		switch types[0] {
		case "object":
			kind = "a JSON object"
		case "array":
			kind = "a JSON array"
		}
	}
	desc := ""
	if m, ok := node.(map[string]any); ok {
		desc, _ = m["description"].(string)
	}
	desc = strings.TrimSpace(desc)
	if desc != "" && !strings.HasSuffix(desc, ".") {
		desc += "."
	}
	return map[string]any{"type": "string", "description": strings.TrimSpace(desc + " Give " + kind + ", encoded as a string.")}
}

// jsonTypes are the JSON types a schema allows by its type keyword ("integer" counts as "number"); none
// when it does not say.
func jsonTypes(node any) []string {
	m, _ := node.(map[string]any)
	var types []string
	add := func(t any) {
		s, _ := t.(string)
		if s == "integer" {
			s = "number"
		}
		if s != "" && !slices.Contains(types, s) {
			types = append(types, s)
		}
	}
	switch t := m["type"].(type) {
	case string:
		add(t)
	case []any:
		for _, v := range t {
			add(v)
		}
	}
	return types
}

// jsonTypeOf is the JSON type of a decoded value.
func jsonTypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
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
			problems = append(problems, fmt.Sprintf("%s: a schema must be an object", path))
			return
		}
		for k := range m {
			if !strictKeywords[k] {
				problems = append(problems, fmt.Sprintf("%s: keyword %q is not allowed in strict mode", path, k))
			}
		}
		_, hasTyp := m["type"]
		_, hasRef := m["$ref"]
		_, hasAny := m["anyOf"]
		_, hasEnum := m["enum"]
		_, hasConst := m["const"]
		if !hasTyp && !hasRef && !hasAny && !hasEnum && !hasConst {
			problems = append(problems, fmt.Sprintf("%s: a schema must say its type", path))
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
		if ref, ok := m["$ref"].(string); ok && ref != "#" && !strings.HasPrefix(ref, "#/$defs/") {
			problems = append(problems, fmt.Sprintf("%s: $ref %q must point into $defs", path, ref))
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

// InputFromArguments turns an LLM's arguments into the tool's input: values strict mode sent as JSON text
// are decoded (a value sent as itself is kept, for models without strict mode), and null values of
// properties the registry's schema does not let be null (strict mode's way of leaving them out) are
// removed, so the executor validates what the registry says. JSON text that does not decode to what the
// schema allows is a *registry.ValidationError naming the property.
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
	form := strictFormOf(tool.InputSchema)
	var violations []registry.Violation
	if form.wrapped {
		switch whole := obj[wrappedInput].(type) {
		case string:
			v, violation := decodeEncoded(whole, form.rootTypes, "/"+wrappedInput)
			if violation != nil {
				violation.Message = "the whole input " + violation.Message
				return nil, &registry.ValidationError{Tool: tool.Name, Schema: "input", Violations: []registry.Violation{*violation}}
			}
			args = v
		case nil:
			// No input property: the arguments are the input itself (a model without strict mode).
		default:
			args = whole
		}
	} else {
		for _, e := range form.encoded {
			violations = append(violations, decodeAt(obj, e.path, e.types, "")...)
		}
	}
	if len(violations) > 0 {
		sort.Slice(violations, func(i, j int) bool { return violations[i].Path < violations[j].Path })
		return nil, &registry.ValidationError{Tool: tool.Name, Schema: "input", Violations: violations}
	}
	dropNulls(args, form.schema, form.schema)
	out, _ := json.Marshal(args)
	return out, nil
}

// decodeAt decodes the JSON text at path inside value, in place; pointer is value's JSON pointer.
func decodeAt(value any, path valuePath, types []string, pointer string) []registry.Violation {
	if len(path) == 0 {
		return nil
	}
	step, rest := path[0], path[1:]
	switch v := value.(type) {
	case map[string]any:
		if step == "[]" {
			return nil
		}
		child, has := v[step]
		if !has {
			return nil
		}
		p := pointer + "/" + escapePointer(step)
		if len(rest) > 0 {
			return decodeAt(child, rest, types, p)
		}
		text, isText := child.(string)
		if !isText {
			return nil // null (left out) or the value itself
		}
		decoded, violation := decodeEncoded(text, types, p)
		if violation != nil {
			return []registry.Violation{*violation}
		}
		v[step] = decoded
	case []any:
		if step != "[]" {
			return nil
		}
		var out []registry.Violation
		for i, item := range v {
			p := fmt.Sprintf("%s/%d", pointer, i)
			if len(rest) > 0 {
				out = append(out, decodeAt(item, rest, types, p)...)
				continue
			}
			text, isText := item.(string)
			if !isText {
				continue
			}
			decoded, violation := decodeEncoded(text, types, p)
			if violation != nil {
				out = append(out, *violation)
				continue
			}
			v[i] = decoded
		}
		return out
	}
	return nil
}

// decodeEncoded reads JSON text sent for a value whose schema allows types (any when empty).
func decodeEncoded(text string, types []string, pointer string) (any, *registry.Violation) {
	want := "a JSON value"
	if len(types) > 0 {
		want = "JSON of type " + strings.Join(types, " or ")
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, &registry.Violation{Path: pointer, Keyword: "json_string",
			Message: fmt.Sprintf("must be %s encoded as a string, and the text is not JSON (%v)", want, err)}
	}
	if got := jsonTypeOf(v); len(types) > 0 && !slices.Contains(types, got) {
		return nil, &registry.Violation{Path: pointer, Keyword: "json_string",
			Message: fmt.Sprintf("must be %s encoded as a string, and the text holds a JSON %s", want, got)}
	}
	return v, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func dropNulls(value any, schema, root map[string]any) {
	schema = resolveRef(schema, root)
	switch v := value.(type) {
	case map[string]any:
		props, ok := schema["properties"].(map[string]any)
		if !ok {
			return // a free-form object: its nulls are data
		}
		for k, pv := range v {
			ps, _ := props[k].(map[string]any)
			if pv == nil && !allowsNull(resolveRef(ps, root), root) {
				delete(v, k)
				continue
			}
			dropNulls(pv, ps, root)
		}
	case []any:
		items, ok := schema["items"].(map[string]any)
		if !ok {
			return
		}
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
