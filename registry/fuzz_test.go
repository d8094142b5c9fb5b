package registry

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary documents to the loader: it must never panic, and must either return a usable
// registry or a *CheckError with at least one problem that names a field.
func FuzzParse(f *testing.F) {
	// Seeds stay small: the fuzzer minimises every new input, which is slow for large ones.
	if r, err := Load(repoRegistry); err == nil {
		tl, _ := r.Tool("leads.create")
		data, _ := json.Marshal(map[string]any{"version": "1", "tools": []*Tool{tl}})
		f.Add(data)
	}
	f.Add([]byte(`{"version":"1","tools":[]}`))
	f.Add(registryDoc(tool("crm.add"), tool("crm.add")))
	f.Add([]byte(`{"version":"1","tools":[{"name":"a.b","input_schema":{"$ref":"#/$defs/x"},"output_schema":{"type":"object"}}]}`))
	f.Add([]byte(`{"version":"1","tools":[{"name":"a.b","description":"d","input_schema":{"type":"object","properties":{"x":{"pattern":"(["}}},"output_schema":{},"idempotency":{"mode":"none"},"timeout_ms":100}]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			ce, ok := AsCheckError(err)
			if !ok || len(ce.Problems) == 0 {
				t.Fatalf("error is not a *CheckError with problems: %v", err)
			}
			for _, p := range ce.Problems {
				if p.Field == "" || p.Message == "" {
					t.Fatalf("problem without field or message: %+v", p)
				}
			}
			return
		}
		for _, tl := range r.Tools() {
			if tl.input == nil || tl.output == nil {
				t.Fatalf("tool %s loaded without compiled schemas", tl.Name)
			}
			_ = tl.ValidateInput([]byte(`{}`))
		}
	})
}

// FuzzValidateInput feeds arbitrary inputs to every tool of the repository's registry: validation must never
// panic, and a failure must be a *ValidationError with at least one violation.
func FuzzValidateInput(f *testing.F) {
	r, err := Load(repoRegistry)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), []byte(`{}`))
	f.Add(uint8(1), []byte(`{"title":"x","kind":"personal","tags":["a"]}`))
	f.Add(uint8(7), []byte(`{"name":"Ann","phone":"0412 345 678","email":"ann@example.com","source":"referral"}`))
	f.Add(uint8(3), []byte(`{"title":"\u0000","due_at":"2026-02-30T25:00:00Z","lead_id":"nope"}`))
	f.Add(uint8(4), []byte(`[1,2,{"a":1e400}]`))

	f.Fuzz(func(t *testing.T, which uint8, input []byte) {
		tl := r.Tools()[int(which)%r.Len()]
		err := tl.ValidateInput(input)
		if err == nil {
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Violations) == 0 {
			t.Fatalf("%s: error is not a *ValidationError with violations: %v", tl.Name, err)
		}
		if ve.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}
