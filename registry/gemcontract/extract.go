package gemcontract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// ShingleWords is the length of the word runs compared: five words in a row shared with GEM's texts is
// taken as GEM's wording (shorter runs are common phrases: "the id of the").
const ShingleWords = 5

// Shingles returns the hex SHA-256 of every run of ShingleWords words in text, normalised: lower case, and
// anything but letters and digits separating words. A text of fewer words is one run, the whole text.
func Shingles(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return nil
	}
	var out []string
	for i := 0; i == 0 || i+ShingleWords <= len(words); i++ {
		sum := sha256.Sum256([]byte(strings.Join(words[i:min(i+ShingleWords, len(words))], " ")))
		out = append(out, hex.EncodeToString(sum[:]))
	}
	return out
}

// toolFacts are the fields of a GEM registry entry the extract keeps; the description is dropped, and any
// other field stops the extract (someone decides whether it is a fact or prose).
var toolFacts = []string{"name", "input_schema", "output_schema", "permissions", "idempotency", "timeout_ms", "receipt_fields"}

// annotations are the schema keywords whose values are prose: dropped from the schemas, hashed into the
// shingles.
var annotations = []string{"description", "title", "$comment", "examples"}

// Schema keywords whose value is a map of names to schemas, a schema, or a list of schemas: the walk goes
// into them. Every other keyword's value is a fact (type, enum, default, bounds …) and is kept as it is.
var (
	namedSchemas = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	subSchemas   = []string{"items", "additionalProperties", "additionalItems", "unevaluatedItems", "unevaluatedProperties",
		"contains", "propertyNames", "not", "if", "then", "else"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// Extract makes the two files of the extract from GEM's registry document: the contract (a Contract, indented
// JSON with sorted keys) and the shingles of GEM's prose (sorted, one hash a line, after a comment). The same
// source always gives the same bytes.
func Extract(source []byte) (contract, shingles []byte, err error) {
	var doc struct {
		Version string                       `json:"version"`
		Tools   []map[string]json.RawMessage `json:"tools"`
	}
	dec := json.NewDecoder(bytes.NewReader(source))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("GEM's registry is not a registry document: %w", err)
	}
	sum := sha256.Sum256(source)
	sourceSHA256 := hex.EncodeToString(sum[:])
	var tools []any
	prose := map[string]bool{}
	addProse := func(text string) {
		for _, s := range Shingles(text) {
			prose[s] = true
		}
	}
	addAnnotation := func(a Annotation) { addProse(a.Text) }
	for i, entry := range doc.Tools {
		tool := map[string]any{}
		for field, raw := range entry {
			var v any
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				return nil, nil, fmt.Errorf("tools[%d].%s: %w", i, field, err)
			}
			switch {
			case field == "description":
				text, ok := v.(string)
				if !ok {
					return nil, nil, fmt.Errorf("tools[%d].description is not a string", i)
				}
				addProse(text)
			case field == "input_schema" || field == "output_schema":
				tool[field] = stripSchema(v, "", addAnnotation)
			case slices.Contains(toolFacts, field):
				tool[field] = v
			default:
				return nil, nil, fmt.Errorf("tools[%d] has a field the extract does not know, %q: add it to toolFacts if it is a fact", i, field)
			}
		}
		if _, ok := tool["name"].(string); !ok {
			return nil, nil, fmt.Errorf("tools[%d] has no name", i)
		}
		tools = append(tools, tool)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	// Maps encode with sorted keys, at every level.
	if err := enc.Encode(map[string]any{"version": doc.Version, "source_sha256": sourceSHA256, "tools": tools}); err != nil {
		return nil, nil, err
	}
	contract = buf.Bytes()

	hashes := slices.Sorted(maps.Keys(prose))
	var sb strings.Builder
	fmt.Fprintf(&sb, "# SHA-256 of every normalised %d-word run of the description and title texts of GEM's registry\n", ShingleWords)
	fmt.Fprintf(&sb, "# (source SHA-256 %s); made by make gem-contract, do not edit. See gemcontract.Shingles.\n", sourceSHA256)
	for _, h := range hashes {
		sb.WriteString(h + "\n")
	}
	return contract, []byte(sb.String()), nil
}

// Annotation is one prose text of a schema: where it is (a path like "patch.contact" for properties, "[]"
// for list items, "/anyOf[0]" for other subschemas), its keyword and its text.
type Annotation struct{ Path, Keyword, Text string }

// Annotations lists a JSON Schema's prose: every description, title, $comment and example text, in nested
// schemas too; the rest of the schema is facts.
func Annotations(schema json.RawMessage) ([]Annotation, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	var out []Annotation
	stripSchema(v, "", func(a Annotation) { out = append(out, a) })
	slices.SortFunc(out, func(a, b Annotation) int {
		return strings.Compare(a.Path+"\x00"+a.Keyword+"\x00"+a.Text, b.Path+"\x00"+b.Keyword+"\x00"+b.Text)
	})
	return out, nil
}

// stripSchema returns a copy of a JSON Schema value without annotations, handing each annotation to prose.
// A property named like an annotation ("title", "description") is a property and stays.
func stripSchema(v any, path string, prose func(Annotation)) any {
	schema, ok := v.(map[string]any)
	if !ok {
		return v // true or false
	}
	out := make(map[string]any, len(schema))
	for key, val := range schema {
		switch {
		case slices.Contains(annotations, key):
			texts, _ := val.([]any) // examples
			for _, t := range append(texts, val) {
				if text, ok := t.(string); ok {
					prose(Annotation{Path: path, Keyword: key, Text: text})
				}
			}
		case slices.Contains(namedSchemas, key):
			named, ok := val.(map[string]any)
			if !ok {
				out[key] = val
				continue
			}
			kept := make(map[string]any, len(named))
			for name, sub := range named {
				subPath := path + "/" + key + "/" + name
				if key == "properties" {
					subPath = strings.TrimPrefix(path+"."+name, ".")
				}
				kept[name] = stripSchema(sub, subPath, prose)
			}
			out[key] = kept
		case slices.Contains(schemaLists, key) && isList(val):
			list := val.([]any)
			kept := make([]any, len(list))
			for i, sub := range list {
				kept[i] = stripSchema(sub, fmt.Sprintf("%s/%s[%d]", path, key, i), prose)
			}
			out[key] = kept
		case slices.Contains(subSchemas, key):
			subPath := path + "/" + key
			if key == "items" {
				subPath = path + "[]"
			}
			out[key] = stripSchema(val, subPath, prose)
		default:
			out[key] = val
		}
	}
	return out
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

// Repeats reports whether text shares a run of words with the texts whose Shingles are hashes.
func Repeats(text string, hashes map[string]bool) bool {
	return slices.ContainsFunc(Shingles(text), func(h string) bool { return hashes[h] })
}
