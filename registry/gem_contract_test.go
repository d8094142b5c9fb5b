package registry_test

// GEM's contract: the original GEM's registry is what GEM's users call. The repository keeps it as facts (the
// gemcontract package's extract, made by make gem-contract), so these tests read nothing outside it.
// Every GEM tool must be in ours under its name, accept exactly the inputs GEM's accepts and refuse the
// ones it refuses, and carry the same idempotency, permissions, timeout and receipt fields. Inputs are
// generated from GEM's schemas: required-only and full, each enum value, each format, the bounds, and an
// unknown extra property (GEM's schemas allow those); and the invalid ones: each required property missing,
// each property of the wrong type, out of its enum, format or bounds.

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemcontract"
	"github.com/stretchr/testify/require"
)

// ourRegistryPath is the repository's registry.
var ourRegistryPath = filepath.Join("..", registry.DefaultPath)

// The two registries, loaded once for every test (a registry is read-only). GEM's is the extract, each tool
// described in our words (the extract has none of GEM's).
var (
	loadGEM = sync.OnceValues(func() (*registry.Registry, error) {
		ours, err := os.ReadFile(ourRegistryPath)
		if err != nil {
			return nil, err
		}
		return gemcontract.Registry(ours)
	})
	loadOurs = sync.OnceValues(func() (*registry.Registry, error) { return registry.Load(ourRegistryPath) })
)

func loadGEMRegistries(t *testing.T) (gem, ours *registry.Registry) {
	t.Helper()
	gem, err := loadGEM()
	require.NoError(t, err, "GEM's contract (registry/gemcontract)")
	require.Equal(t, 105, gem.Len())
	ours, err = loadOurs()
	require.NoError(t, err)
	return gem, ours
}

func TestGEMToolsHaveGEMContracts(t *testing.T) {
	gem, ours := loadGEMRegistries(t)
	for _, g := range gem.Tools() {
		o, ok := ours.Tool(g.Name)
		if !assert(t, ok, "%s: not in our registry", g.Name) {
			continue
		}
		assert(t, g.Idempotency == o.Idempotency, "%s: idempotency %+v, GEM's is %+v", g.Name, o.Idempotency, g.Idempotency)
		assert(t, g.TimeoutMS == o.TimeoutMS, "%s: timeout_ms %d, GEM's is %d", g.Name, o.TimeoutMS, g.TimeoutMS)
		assert(t, slices.Equal(sorted(g.Permissions), sorted(o.Permissions)), "%s: permissions %v, GEM's are %v", g.Name, o.Permissions, g.Permissions)
		assert(t, slices.Equal(g.ReceiptFields, o.ReceiptFields), "%s: receipt_fields %v, GEM's are %v", g.Name, o.ReceiptFields, g.ReceiptFields)
	}
}

func TestGEMInputsAcceptedAndRefusedAlike(t *testing.T) {
	gem, ours := loadGEMRegistries(t)
	var accepted, refused int
	for _, g := range gem.Tools() {
		o, ok := ours.Tool(g.Name)
		if !ok {
			continue // reported by TestGEMToolsHaveGEMContracts
		}
		var s jsonSchema
		require.NoError(t, json.Unmarshal(g.InputSchema, &s), g.Name)
		for _, in := range validInputs(s) {
			raw, _ := json.Marshal(in.value)
			// The generator is checked against GEM's own schema first, so a wrong generator cannot pass.
			require.NoError(t, g.ValidateInput(raw), "%s (%s): the generated input is not valid for GEM: %s", g.Name, in.what, raw)
			if assert(t, o.ValidateInput(raw) == nil, "%s (%s): GEM accepts %s, ours refuses: %v", g.Name, in.what, raw, o.ValidateInput(raw)) {
				accepted++
			}
		}
		for _, in := range invalidInputs(s) {
			raw, _ := json.Marshal(in.value)
			require.Error(t, g.ValidateInput(raw), "%s (%s): the generated input is valid for GEM: %s", g.Name, in.what, raw)
			if assert(t, o.ValidateInput(raw) != nil, "%s (%s): GEM refuses %s, ours accepts it", g.Name, in.what, raw) {
				refused++
			}
		}
	}
	t.Logf("%d generated GEM-valid inputs accepted, %d GEM-invalid inputs refused", accepted, refused)
	require.Greater(t, accepted, 400)
	require.Greater(t, refused, 400)
}

// TestGEMOutputSchemasKeepGEMs checks statically that our output schema of a GEM tool requires what GEM's
// requires, with the same types and no wider enums; handler results are also checked against GEM's output
// schema wherever the executor's tests wait on a receipt.
func TestGEMOutputSchemasKeepGEMs(t *testing.T) {
	gem, ours := loadGEMRegistries(t)
	for _, g := range gem.Tools() {
		o, ok := ours.Tool(g.Name)
		if !ok {
			continue
		}
		var gs, os jsonSchema
		require.NoError(t, json.Unmarshal(g.OutputSchema, &gs))
		require.NoError(t, json.Unmarshal(o.OutputSchema, &os))
		for _, p := range narrowerProblems("result", &gs, &os) {
			t.Errorf("%s: output schema: %s", g.Name, p)
		}
	}
}

// narrowerProblems lists where ours accepts a value of a shape GEM's output schema refuses.
func narrowerProblems(path string, gem, ours *jsonSchema) []string {
	var probs []string
	if gt := gem.types(); len(gt) > 0 {
		ot := ours.types()
		if len(ot) == 0 {
			probs = append(probs, fmt.Sprintf("%s: GEM's says type %v, ours allows any type", path, gt))
		}
		for _, t := range ot {
			if !slices.Contains(gt, t) && !(t == "integer" && slices.Contains(gt, "number")) {
				probs = append(probs, fmt.Sprintf("%s: ours allows type %s, GEM's only %v", path, t, gt))
			}
		}
	}
	if len(gem.Enum) > 0 {
		if len(ours.Enum) == 0 {
			probs = append(probs, fmt.Sprintf("%s: GEM's enum %v, ours has none", path, gem.Enum))
		}
		for _, v := range ours.Enum {
			if !slices.ContainsFunc(gem.Enum, func(g any) bool { return fmt.Sprint(g) == fmt.Sprint(v) }) {
				probs = append(probs, fmt.Sprintf("%s: ours allows %v, outside GEM's enum %v", path, v, gem.Enum))
			}
		}
	}
	if gem.Format != "" && ours.Format != gem.Format {
		probs = append(probs, fmt.Sprintf("%s: GEM's has format %s, ours %q", path, gem.Format, ours.Format))
	}
	for _, r := range gem.Required {
		if !slices.Contains(ours.Required, r) {
			probs = append(probs, fmt.Sprintf("%s: GEM's requires %q, ours does not", path, r))
		}
	}
	for name, gp := range gem.Properties {
		op, ok := ours.Properties[name]
		if !ok {
			// Ours never gives the property if it refuses properties it does not name; otherwise it could give
			// one of a shape GEM's refuses.
			if string(ours.AdditionalProperties) != "false" {
				probs = append(probs, fmt.Sprintf("%s: GEM's has property %q, ours does not describe it but allows it", path, name))
			}
			continue
		}
		probs = append(probs, narrowerProblems(path+"."+name, gp, op)...)
	}
	if gem.Items != nil && ours.Items != nil {
		probs = append(probs, narrowerProblems(path+"[]", gem.Items, ours.Items)...)
	}
	return probs
}

// TestGEMDescriptionsInOurWords checks that every tool and every property of a GEM tool has a description,
// and that no description or title of ours repeats GEM's wording: shares a run of five words with one of GEM's
// texts (tool descriptions and schema annotations), compared by the hashes the extract keeps of those runs.
func TestGEMDescriptionsInOurWords(t *testing.T) {
	gem, ours := loadGEMRegistries(t)
	problems, checked := wordingProblems(t, ours, gem, gemcontract.ProseShingles())
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d texts of ours checked against %d hashed 5-word runs of GEM's", checked, len(gemcontract.ProseShingles()))
	require.Greater(t, checked, 1000, "every tool's and property's text")
}

// TestGEMWordingCheckCanFail: the check above finds a tool description and a property description that share
// five words in a row with a text whose runs are the hashes, and a missing description of a GEM tool's
// property; four shared words are not a find. The hashes are made here from a made-up text.
func TestGEMWordingCheckCanFail(t *testing.T) {
	theirs := map[string]bool{}
	for _, h := range gemcontract.Shingles("Stack the blue crates by the loading dock before noon.") {
		theirs[h] = true
	}
	gem := mustParse(t, `{"version": "1", "tools": [`+wordingTool("crates.stack", "Another text entirely.", "What to stack")+`]}`)
	ours := mustParse(t, `{"version": "1", "tools": [`+
		wordingTool("crates.stack", "Puts crates in a pile; stack the blue crates by the loading dock.", "")+`,`+
		wordingTool("crates.count", "Counts what sits by the loading dock.", "Crates, blue crates by the loading dock, and boxes")+`,`+
		wordingTool("crates.move", "Moves the blue crates by hand.", "Which of the crates")+`]}`)
	problems, checked := wordingProblems(t, ours, gem, theirs)
	require.Equal(t, 5, checked)
	require.ElementsMatch(t, []string{
		"crates.stack: its description repeats GEM's wording",
		"crates.stack: input.what has no description",
		"crates.count: input.what's description repeats GEM's wording",
	}, problems)
}

func mustParse(t *testing.T, doc string) *registry.Registry {
	t.Helper()
	reg, err := registry.Parse([]byte(doc))
	require.NoError(t, err, doc)
	return reg
}

// wordingTool is a registry entry with one input property, described as given ("" for none).
func wordingTool(name, description, propertyDescription string) string {
	prop := map[string]any{"type": "string"}
	if propertyDescription != "" {
		prop["description"] = propertyDescription
	}
	entry, _ := json.Marshal(map[string]any{"name": name, "description": description,
		"input_schema":  map[string]any{"type": "object", "properties": map[string]any{"what": prop}},
		"output_schema": map[string]any{"type": "object"}, "permissions": []string{"read:db"},
		"idempotency": map[string]any{"mode": "safe-retry"}, "timeout_ms": 1000, "receipt_fields": []string{}})
	return string(entry)
}

// wordingProblems lists the texts of ours that repeat the wording whose 5-word runs are gemProse, and the
// missing descriptions of GEM tools' properties; checked counts the texts compared.
func wordingProblems(t *testing.T, ours, gem *registry.Registry, gemProse map[string]bool) (problems []string, checked int) {
	t.Helper()
	for _, o := range ours.Tools() {
		checked++
		if strings.TrimSpace(o.Description) == "" || strings.Contains(o.Description, "TODO") {
			problems = append(problems, o.Name+": no description of its own")
		}
		if gemcontract.Repeats(o.Description, gemProse) {
			problems = append(problems, o.Name+": its description repeats GEM's wording")
		}
		_, isGEM := gem.Tool(o.Name)
		for _, which := range []string{"input", "output"} {
			raw := map[string]json.RawMessage{"input": o.InputSchema, "output": o.OutputSchema}[which]
			prose, err := gemcontract.Annotations(raw)
			require.NoError(t, err, o.Name)
			for _, a := range prose {
				checked++
				if gemcontract.Repeats(a.Text, gemProse) {
					problems = append(problems, fmt.Sprintf("%s: %s's %s repeats GEM's wording", o.Name, strings.TrimSuffix(which+"."+a.Path, "."), a.Keyword))
				}
			}
			if !isGEM {
				continue
			}
			var s jsonSchema
			require.NoError(t, json.Unmarshal(raw, &s))
			s.walk(which, func(path string, p *jsonSchema) {
				if path == which || strings.HasSuffix(path, "[]") {
					return // the schema itself, or a list's item: the tool's or the list's description says it
				}
				if strings.TrimSpace(p.Description) == "" {
					problems = append(problems, fmt.Sprintf("%s: %s has no description", o.Name, path))
				}
			})
		}
	}
	return problems, checked
}

func assert(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// jsonSchema is the part of JSON Schema GEM's registry uses.
type jsonSchema struct {
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Required             []string               `json:"required"`
	Items                *jsonSchema            `json:"items"`
	Enum                 []any                  `json:"enum"`
	Format               string                 `json:"format"`
	MinLength            *int                   `json:"minLength"`
	MaxLength            *int                   `json:"maxLength"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	MinItems             *int                   `json:"minItems"`
	Pattern              string                 `json:"pattern"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
}

func (s *jsonSchema) types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	return nil
}

// walk visits the schema and every property and item schema inside it, with a path like input.context_ref.id.
func (s *jsonSchema) walk(path string, visit func(string, *jsonSchema)) {
	visit(path, s)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		s.Properties[name].walk(path+"."+name, visit)
	}
	if s.Items != nil && (len(s.Items.Properties) > 0) {
		s.Items.walk(path+"[]", visit)
	}
}

type genInput struct {
	what  string
	value any
}

// sample is one valid value of a schema; full fills every property of objects, not only the required ones.
func sample(s *jsonSchema, full bool) any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	t := ""
	if ts := s.types(); len(ts) > 0 {
		t = ts[0]
	}
	switch t {
	case "object":
		obj := map[string]any{}
		for name, p := range s.Properties {
			if full || slices.Contains(s.Required, name) {
				obj[name] = sample(p, full)
			}
		}
		if len(s.Properties) == 0 && full {
			obj["note"] = "free-form"
		}
		return obj
	case "array":
		n := 1
		if s.MinItems != nil {
			n = max(n, *s.MinItems)
		}
		items := make([]any, n)
		for i := range items {
			if s.Items != nil {
				items[i] = sample(s.Items, full)
			} else {
				items[i] = fmt.Sprintf("item %d", i)
			}
		}
		return items
	case "integer":
		return int(bounded(s, 3))
	case "number":
		return bounded(s, 0.5)
	case "boolean":
		return true
	case "null":
		return nil
	}
	switch s.Format {
	case "date-time":
		return "2026-11-24T09:30:00+11:00"
	case "date":
		return "2026-11-24"
	case "uuid":
		return "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	case "uri":
		return "https://example.com/quotes/Q-0042"
	case "email":
		return "sam@example.com"
	}
	v := "Sample text"
	if s.MinLength != nil && len(v) < *s.MinLength {
		v += strings.Repeat("x", *s.MinLength-len(v))
	}
	if s.MaxLength != nil && len(v) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	return v
}

func bounded(s *jsonSchema, v float64) float64 {
	if s.Minimum != nil && v < *s.Minimum {
		v = *s.Minimum
	}
	if s.Maximum != nil && v > *s.Maximum {
		v = *s.Maximum
	}
	return v
}

// validInputs generates inputs GEM's schema accepts.
func validInputs(s jsonSchema) []genInput {
	full := sample(&s, true).(map[string]any)
	ins := []genInput{{"required only", sample(&s, false)}, {"every property", full}}
	withExtra := maps.Clone(full)
	withExtra["x_client_field"] = "GEM accepts properties it does not name"
	ins = append(ins, genInput{"an unknown extra property", withExtra})
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		vary := func(what string, v any) {
			in := maps.Clone(full)
			in[name] = v
			ins = append(ins, genInput{name + " " + what, in})
		}
		for _, e := range p.Enum {
			vary(fmt.Sprintf("= %v", e), e)
		}
		if p.MaxLength != nil {
			vary("at maxLength", strings.Repeat("é", *p.MaxLength))
		}
		if p.Minimum != nil {
			vary("at minimum", *p.Minimum)
		}
		if p.Maximum != nil {
			vary("at maximum", *p.Maximum)
		}
		switch p.Format {
		case "date-time":
			vary("in UTC", "2026-02-28T23:59:59Z")
		case "date":
			vary("on a leap day", "2028-02-29")
		}
		if p.Items != nil && len(p.Items.Properties) > 0 {
			vary("with a required-only item", []any{sample(p.Items, false)})
		}
		if len(p.Properties) > 0 {
			vary("required-only", sample(p, false))
		}
	}
	return ins
}

// invalidInputs generates inputs GEM's schema refuses.
func invalidInputs(s jsonSchema) []genInput {
	full := sample(&s, true).(map[string]any)
	var ins []genInput
	for _, r := range s.Required {
		in := maps.Clone(full)
		delete(in, r)
		ins = append(ins, genInput{"without " + r, in})
	}
	ins = append(ins, genInput{"not an object", []any{full}})
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		vary := func(what string, v any) {
			in := maps.Clone(full)
			in[name] = v
			ins = append(ins, genInput{name + " " + what, in})
		}
		if ts := p.types(); len(ts) == 1 {
			switch ts[0] {
			case "string":
				vary("a number", 42)
			case "integer":
				vary("a string", "3")
				vary("a fraction", 2.5)
			case "number", "boolean", "object", "array":
				vary("a string", "not a "+ts[0])
			}
		}
		if len(p.Enum) > 0 {
			vary("outside its enum", "not-one-of-them")
		}
		if p.MaxLength != nil {
			vary("over maxLength", strings.Repeat("é", *p.MaxLength+1))
		}
		if p.Minimum != nil {
			vary("below minimum", *p.Minimum-1)
		}
		if p.Maximum != nil {
			vary("above maximum", *p.Maximum+1)
		}
		switch p.Format {
		case "date-time":
			vary("not a date-time", "24/11/2026 9:30")
		case "date":
			vary("not a date", "2026-02-30")
		case "uuid":
			vary("not a UUID", "lead-42")
		case "uri":
			vary("not a URI", "no scheme here")
		}
		if len(p.Required) > 0 {
			inner := sample(p, true).(map[string]any)
			delete(inner, p.Required[0])
			vary("without its "+p.Required[0], inner)
		}
		if p.Items != nil {
			if ts := p.Items.types(); len(ts) == 1 && ts[0] == "string" {
				vary("with a number item", []any{7})
			}
		}
	}
	return ins
}
