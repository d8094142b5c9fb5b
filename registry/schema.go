package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schema is a compiled JSON Schema.
type schema struct {
	compiled *jsonschema.Schema
}

// schemaCompiler compiles registry schemas. Formats are asserted, and nothing outside the registry is ever
// loaded: a "$ref" to a file or URL is a compile error, never a read.
type schemaCompiler struct {
	c *jsonschema.Compiler
}

func newSchemaCompiler() *schemaCompiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("$ref to %s: registry schemas may only refer to themselves", url)
	}
	return &schemaCompiler{c: c}
}

// compile compiles one schema document; key names it uniquely (for example "tools/3/input").
func (sc *schemaCompiler) compile(key string, raw json.RawMessage) (s *schema, err error) {
	// The library panics on a few malformed inputs; a registry must get an error, never a crash.
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("the schema could not be compiled: %v", p)
		}
	}()
	url := "gem://registry/" + key + ".json"
	if err := sc.c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, errors.New(schemaErrorText(err))
	}
	compiled, err := sc.c.Compile(url)
	if err != nil {
		return nil, errors.New(schemaErrorText(err))
	}
	return &schema{compiled: compiled}, nil
}

// schemaErrorText makes a compile error readable: the library prefixes messages with internal URLs.
func schemaErrorText(err error) string {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) {
		var ve *jsonschema.ValidationError
		if errors.As(se.Err, &ve) {
			vs := violationsOf(ve)
			parts := make([]string, len(vs))
			for i, v := range vs {
				parts[i] = fmt.Sprintf("at %s: %s", orRoot(v.Path), v.Message)
			}
			return "not a valid JSON Schema: " + strings.Join(parts, "; ")
		}
		return stripURLs(se.Err.Error())
	}
	return stripURLs(err.Error())
}

var internalURLRe = regexp.MustCompile(`gem://registry/[^\s#'"]*\.json#?`)

func stripURLs(s string) string {
	s = strings.TrimPrefix(s, "jsonschema: ")
	return internalURLRe.ReplaceAllString(s, "")
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// Violation is one way a document fails its schema.
type Violation struct {
	// Path is the JSON pointer (RFC 6901) of the offending value in the input; for a missing required
	// property it points at the property that should be there.
	Path string `json:"path"`
	// Keyword is the schema keyword that failed ("required", "type", "format", "maxLength", ...).
	Keyword string `json:"keyword"`
	// Message says what is wrong, for a person or an LLM.
	Message string `json:"message"`
	// SchemaPath is the JSON pointer of the failing keyword inside the tool's schema.
	SchemaPath string `json:"schema_path"`
}

// ValidationError lists every violation of a document against a tool's schema.
type ValidationError struct {
	// Tool is the tool whose schema was violated.
	Tool string `json:"tool"`
	// Schema is "input" or "output".
	Schema string `json:"schema"`
	// Violations lists every violation, ordered by path.
	Violations []Violation `json:"violations"`
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = fmt.Sprintf("%s: %s", orRoot(v.Path), v.Message)
	}
	return fmt.Sprintf("%s %s does not match its schema (%d %s): %s", e.Tool, e.Schema, len(parts),
		plural(len(parts), "violation", "violations"), strings.Join(parts, "; "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ValidateInput checks a call's input (JSON bytes) against the tool's input schema. It returns a
// *ValidationError listing every violation, or nil. Defaults in the schema are never applied to the input.
func (t *Tool) ValidateInput(input []byte) error {
	return t.validate(t.input, "input", input)
}

// ValidateOutput checks a handler's result (JSON bytes) against the tool's output schema.
func (t *Tool) ValidateOutput(output []byte) error {
	return t.validate(t.output, "output", output)
}

// ValidateInputValue is ValidateInput for a value already decoded by DecodeJSON.
func (t *Tool) ValidateInputValue(v any) error {
	return t.validateValue(t.input, "input", v)
}

func (t *Tool) validate(s *schema, which string, doc []byte) error {
	v, err := DecodeJSON(doc)
	if err != nil {
		return &ValidationError{Tool: t.Name, Schema: which, Violations: []Violation{{
			Path: "", Keyword: "json", Message: "is not valid JSON: " + err.Error(),
		}}}
	}
	return t.validateValue(s, which, v)
}

func (t *Tool) validateValue(s *schema, which string, v any) error {
	if s == nil {
		return fmt.Errorf("tool %s has no compiled %s schema", t.Name, which)
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Tool: t.Name, Schema: which, Violations: []Violation{{Keyword: "json", Message: err.Error()}}}
	}
	return &ValidationError{Tool: t.Name, Schema: which, Violations: violationsOf(ve)}
}

// DecodeJSON decodes one JSON document the way the validator expects it: numbers stay exact (json.Number),
// and trailing data is an error.
func DecodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

var missingPropsRe = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)

// violationsOf flattens the library's error tree to its leaves, one violation each, and splits a
// "required" failure into one violation per missing property.
func violationsOf(ve *jsonschema.ValidationError) []Violation {
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		keyword := lastPointerToken(e.KeywordLocation)
		schemaPath := schemaPointer(e.AbsoluteKeywordLocation, e.KeywordLocation)
		if keyword == "required" {
			if props := missingPropsRe.FindAllStringSubmatch(e.Message, -1); len(props) > 0 && strings.HasPrefix(e.Message, "missing propert") {
				for _, p := range props {
					out = append(out, Violation{
						Path:       e.InstanceLocation + "/" + escapePointerToken(p[1]),
						Keyword:    keyword,
						Message:    fmt.Sprintf("is required (missing property %q)", p[1]),
						SchemaPath: schemaPath,
					})
				}
				return
			}
		}
		out = append(out, Violation{
			Path:       e.InstanceLocation,
			Keyword:    keyword,
			Message:    stripURLs(e.Message),
			SchemaPath: schemaPath,
		})
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Keyword < out[j].Keyword
	})
	return out
}

// schemaPointer returns the keyword's location within the tool's own schema document: the fragment of the
// absolute location (which resolves "$ref"), or the evaluation path when there is none.
func schemaPointer(absolute, evaluation string) string {
	if _, frag, ok := strings.Cut(absolute, "#"); ok {
		return frag
	}
	return evaluation
}

func lastPointerToken(p string) string {
	i := strings.LastIndexByte(p, '/')
	return unescapePointerToken(p[i+1:])
}

func escapePointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func unescapePointerToken(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// Schema is a compiled JSON Schema outside the registry (for example an HTTP request body), validated with
// the same rules and the same violation format as tool schemas.
type Schema struct {
	name string
	s    *schema
}

// CompileSchema compiles a JSON Schema document; name labels its violations.
func CompileSchema(name string, doc []byte) (*Schema, error) {
	key := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
	s, err := newSchemaCompiler().compile("schemas/"+key, doc)
	if err != nil {
		return nil, fmt.Errorf("error compiling schema %s: %w", name, err)
	}
	return &Schema{name: name, s: s}, nil
}

// MustCompileSchema is CompileSchema for schemas fixed in code; it panics on error.
func MustCompileSchema(name string, doc []byte) *Schema {
	s, err := CompileSchema(name, doc)
	if err != nil {
		panic(err)
	}
	return s
}

// Validate checks a JSON document, returning a *ValidationError listing every violation, or nil.
func (s *Schema) Validate(doc []byte) error {
	t := &Tool{Name: s.name}
	return t.validate(s.s, "document", doc)
}
