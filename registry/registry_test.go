package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// repoRegistry is the repository's own registry file.
const repoRegistry = "../tools.registry.json"

func TestLoadRepositoryRegistry(t *testing.T) {
	t.Parallel()

	r, err := Load(repoRegistry)
	require.NoError(t, err)
	require.Equal(t, "1", r.Version)
	require.GreaterOrEqual(t, r.Len(), 10)

	for i := 1; i < r.Len(); i++ {
		require.Less(t, r.Tools()[i-1].Name, r.Tools()[i].Name, "tools are sorted by name")
	}
	for _, name := range []string{"os.health_check", "os.create_note", "os.search_notes", "os.create_task", "os.update_task",
		"os.complete_task", "os.list_tasks", "leads.create", "leads.update_stage", "leads.list_by_stage"} {
		tool, ok := r.Tool(name)
		require.True(t, ok, name)
		require.NotEmpty(t, tool.Description, name)
	}
	lc, _ := r.Tool("leads.create")
	require.Equal(t, ModeKeyed, lc.Idempotency.Mode)
	require.Equal(t, "phone", lc.Idempotency.KeyField)
	require.Equal(t, "leads", lc.Domain())
	require.Equal(t, "create", lc.Method())
	require.False(t, lc.HasOutsideEffects())
	require.True(t, lc.HasInputProperty("phone"))
	require.False(t, lc.HasInputProperty("lead_id"))
}

func TestFind(t *testing.T) {
	t.Parallel()

	// Tests run in registry/, so the repository's registry is found in the parent folder.
	path, err := Find(DefaultPath)
	require.NoError(t, err)
	abs, _ := filepath.Abs(repoRegistry)
	require.Equal(t, abs, path)

	_, err = Find("no-such-registry.json")
	require.ErrorContains(t, err, "not found")
}

// tool returns a valid tool definition as a map that a test can break.
func tool(name string) map[string]any {
	return map[string]any{
		"name":        name,
		"description": "A test tool.",
		"input_schema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"phone": map[string]any{"type": "string"}, "note": map[string]any{"type": "string"}},
			"required":   []string{"phone"},
		},
		"output_schema":  map[string]any{"type": "object"},
		"permissions":    []string{"write:leads"},
		"idempotency":    map[string]any{"mode": "keyed", "key_field": "phone"},
		"timeout_ms":     5000,
		"receipt_fields": []string{"result.id", "effects.db_writes"},
	}
}

func registryDoc(tools ...map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"version": "1", "tools": tools})
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseRejectsBrokenRegistries(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		doc       []byte
		wantTool  string
		wantField string
		wantMsg   string
	}{
		{"duplicate name", registryDoc(tool("crm.add"), tool("crm.add")), "crm.add", "name", "duplicate"},
		{"name without domain", registryDoc(tool("create_note")), "create_note", "name", "domain.method"},
		{"name with empty segment", registryDoc(tool("os..note")), "os..note", "name", "domain.method"},
		{"name with space", registryDoc(tool("os.create note")), "os.create note", "name", "domain.method"},
		{"name starting with digit", registryDoc(tool("os.1note")), "os.1note", "name", "domain.method"},
		{"name too long", registryDoc(tool("os." + strings.Repeat("a", 130))), "os." + strings.Repeat("a", 130), "name", "longer than"},
		// Model APIs take at most 64 characters, and each dot is exported as "__".
		{"portable name too long", registryDoc(tool("integrations.highlevel." + strings.Repeat("a", 40))), "integrations.highlevel." + strings.Repeat("a", 40),
			"name", `longer than model APIs accept: exported as "integrations__highlevel__aaaa`},
		{"segment ending with _", registryDoc(tool("crm_.add")), "crm_.add", "name", `which reads back as "crm._add"`},
		// Two tools that would be exported under one name: neither reads back as itself, so both are refused.
		{"two tools, one exported name (the first)", registryDoc(tool("crm.add__lead"), tool("crm__add.lead")), "crm.add__lead", "name",
			`exported as "crm__add__lead", which reads back as "crm.add.lead"`},
		{"two tools, one exported name (the second)", registryDoc(tool("crm.add__lead"), tool("crm__add.lead")), "crm__add.lead", "name",
			`exported as "crm__add__lead", which reads back as "crm.add.lead"`},
		{"GEM's own domain", registryDoc(tool("gem.get_receipt")), "gem.get_receipt", "name", `domain "gem", which is GEM's own`},
		{"missing name", registryDoc(func() map[string]any { m := tool("x.y"); delete(m, "name"); return m }()), "tools[0]", "name", "required"},
		{"missing description", registryDoc(func() map[string]any { m := tool("crm.add"); delete(m, "description"); return m }()), "crm.add", "description", "required"},
		{"unknown mode", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["idempotency"] = map[string]any{"mode": "exactly-once"}
			return m
		}()), "crm.add", "idempotency.mode", `"exactly-once" is not a known mode`},
		{"missing idempotency", registryDoc(func() map[string]any { m := tool("crm.add"); delete(m, "idempotency"); return m }()), "crm.add", "idempotency", "required"},
		{"keyed without key_field", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["idempotency"] = map[string]any{"mode": "keyed"}
			return m
		}()), "crm.add", "idempotency.key_field", "required when mode is"},
		{"key_field not a property", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["idempotency"] = map[string]any{"mode": "keyed", "key_field": "email"}
			return m
		}()), "crm.add", "idempotency.key_field", `"email" is not a required property`},
		{"key_field not required", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["idempotency"] = map[string]any{"mode": "keyed", "key_field": "note"}
			return m
		}()), "crm.add", "idempotency.key_field", `"note" is not a required property`},
		{"key_field on another mode", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["idempotency"] = map[string]any{"mode": "none", "key_field": "phone"}
			return m
		}()), "crm.add", "idempotency.key_field", `applies only to mode "keyed"`},
		{"concurrency of zero", registryDoc(withLimits(map[string]any{"concurrency": map[string]any{"max": 0}})), "crm.add", "limits.concurrency.max", "outside the allowed 1.."},
		{"rate window too short", registryDoc(withLimits(map[string]any{"rate": map[string]any{"max": 5, "per_ms": 1}})), "crm.add", "limits.rate.per_ms", "outside the allowed"},
		{"limit key unknown", registryDoc(withLimits(map[string]any{"rate": map[string]any{"max": 5, "per_ms": 1000, "key": "tenant"}})), "crm.add", "limits.rate.key", `"caller", "agent" or "input.<property>"`},
		{"limit key not an input property", registryDoc(withLimits(map[string]any{"concurrency": map[string]any{"max": 1, "key": "input.email"}})), "crm.add", "limits.concurrency.key", `"email", which the input schema does not declare`},
		{"limit unknown field", registryDoc(withLimits(map[string]any{"concurrency": map[string]any{"max": 1, "per_ms": 10}})), "crm.add", "limits", "unknown field"},
		{"negative wait", registryDoc(withLimits(map[string]any{"concurrency": map[string]any{"max": 1}, "max_wait_ms": -1})), "crm.add", "limits.max_wait_ms", "outside the allowed"},
		{"timeout too small", registryDoc(func() map[string]any { m := tool("crm.add"); m["timeout_ms"] = 0; return m }()), "crm.add", "timeout_ms", "outside the allowed"},
		{"timeout too large", registryDoc(func() map[string]any { m := tool("crm.add"); m["timeout_ms"] = 3_600_000; return m }()), "crm.add", "timeout_ms", "outside the allowed"},
		{"timeout not whole", registryDoc(func() map[string]any { m := tool("crm.add"); m["timeout_ms"] = 1.5; return m }()), "crm.add", "timeout_ms", "whole number"},
		{"timeout a string", registryDoc(func() map[string]any { m := tool("crm.add"); m["timeout_ms"] = "5s"; return m }()), "crm.add", "timeout_ms", "number of milliseconds"},
		{"missing timeout", registryDoc(func() map[string]any { m := tool("crm.add"); delete(m, "timeout_ms"); return m }()), "crm.add", "timeout_ms", "required"},
		{"receipt field outside result and effects", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["receipt_fields"] = []string{"result.id", "input.phone"}
			return m
		}()), "crm.add", "receipt_fields[1]", "must point into"},
		{"receipt field with no path", registryDoc(func() map[string]any { m := tool("crm.add"); m["receipt_fields"] = []string{"result."}; return m }()), "crm.add", "receipt_fields[0]", "must point into"},
		{"permissions not strings", registryDoc(func() map[string]any { m := tool("crm.add"); m["permissions"] = []any{1}; return m }()), "crm.add", "permissions", "array of strings"},
		{"input schema does not compile", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"phone": map[string]any{"type": "strnig"}}, "required": []string{"phone"}}
			return m
		}()), "crm.add", "input_schema", "does not compile"},
		{"output schema bad pattern", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["output_schema"] = map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string", "pattern": "(["}}}
			return m
		}()), "crm.add", "output_schema", "does not compile"},
		{"input schema not an object schema", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["input_schema"] = map[string]any{"type": "string"}
			return m
		}()), "crm.add", "input_schema.type", `must be "object"`},
		{"input schema missing", registryDoc(func() map[string]any { m := tool("crm.add"); delete(m, "input_schema"); return m }()), "crm.add", "input_schema", "required"},
		{"output schema not an object", registryDoc(func() map[string]any { m := tool("crm.add"); m["output_schema"] = "object"; return m }()), "crm.add", "output_schema", "JSON Schema object"},
		{"external $ref", registryDoc(func() map[string]any {
			m := tool("crm.add")
			m["output_schema"] = map[string]any{"$ref": "file:///etc/passwd"}
			return m
		}()), "crm.add", "output_schema", "may only refer to themselves"},
		{"tool not an object", []byte(`{"version":"1","tools":[42]}`), "tools[0]", "(tool)", "not a JSON object"},
		{"missing version", []byte(`{"tools":[]}`), "", "version", "required"},
		{"missing tools", []byte(`{"version":"1"}`), "", "tools", "required"},
		{"not JSON", []byte(`{"version": "1", "tools": [}`), "", "(document)", "line 1, column"},
		{"trailing data", []byte(`{"version":"1","tools":[]} {}`), "", "(document)", "after the registry object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := Parse(tt.doc)
			require.Error(t, err)
			ce, ok := AsCheckError(err)
			require.True(t, ok, "error is a *CheckError: %v", err)
			var found bool
			for _, p := range ce.Problems {
				if p.Tool == tt.wantTool && p.Field == tt.wantField && strings.Contains(p.Message, tt.wantMsg) {
					found = true
				}
			}
			require.True(t, found, "want a problem for tool %q field %q containing %q; got:\n%v", tt.wantTool, tt.wantField, tt.wantMsg, err)
			// The message a person sees names the tool and the field.
			require.Contains(t, err.Error(), tt.wantField)
			if tt.wantTool != "" {
				require.Contains(t, err.Error(), tt.wantTool)
			}
		})
	}
}

// withLimits is crm.add with limits.
func withLimits(limits map[string]any) map[string]any {
	m := tool("crm.add")
	m["limits"] = limits
	return m
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()

	a := tool("crm.a")
	a["timeout_ms"] = -1
	a["receipt_fields"] = []string{"x"}
	b := tool("nodot")
	_, err := Parse(registryDoc(a, b, tool("crm.ok")))
	ce, ok := AsCheckError(err)
	require.True(t, ok)
	require.Len(t, ce.Problems, 3, "%v", err)
	require.Contains(t, err.Error(), "3 problems")
}

func TestLoadErrorNamesFile(t *testing.T) {
	t.Parallel()

	path := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(path, registryDoc(tool("bad")), 0o600))
	_, err := Load(path)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "tool bad: field name")

	_, err = Load(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorContains(t, err, "error reading registry")
}

func TestParseAcceptsValidVariants(t *testing.T) {
	t.Parallel()

	nested := tool("integrations.highlevel.sync_contacts")
	nested["idempotency"] = map[string]any{"mode": "safe-retry"}
	nested["extra_field_of_another_tool"] = map[string]any{"ui": "hidden"} // unknown fields are kept out of the way
	noOptional := tool("crm.minimal")
	delete(noOptional, "permissions")
	delete(noOptional, "receipt_fields")
	noOptional["idempotency"] = map[string]any{"mode": "none"}
	withDefs := tool("crm.with_defs")
	withDefs["input_schema"] = map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"$defs":   map[string]any{"phone": map[string]any{"type": "string", "minLength": 6}},
		"properties": map[string]any{
			"phone": map[string]any{"$ref": "#/$defs/phone"},
		},
		"required": []string{"phone"},
	}
	draft7 := tool("crm.draft7")
	draft7["input_schema"] = map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"type":        "object",
		"definitions": map[string]any{"p": map[string]any{"type": "string"}},
		"properties":  map[string]any{"phone": map[string]any{"$ref": "#/definitions/p"}},
		"required":    []string{"phone"},
	}
	outside := tool("comms.send_sms")
	outside["permissions"] = []string{"send:sms"}
	outside["idempotency"] = map[string]any{"mode": "none"}
	override := tool("files.archive")
	override["permissions"] = []string{"write:files"}
	override["outside_effects"] = false
	limited := tool("comms.limited")
	limited["limits"] = map[string]any{"concurrency": map[string]any{"max": 2, "key": "input.phone"},
		"rate": map[string]any{"max": 50, "per_ms": 1000, "key": "caller"}, "max_wait_ms": 5000}

	r, err := Parse(registryDoc(nested, noOptional, withDefs, draft7, outside, override, limited))
	require.NoError(t, err)
	require.Equal(t, 7, r.Len())

	tl, _ := r.Tool("comms.limited")
	require.True(t, tl.HasCallLimits())
	require.Equal(t, 5*time.Second, tl.LimitWait())
	require.Equal(t, "+1555", LimitKey(tl.Limits.Concurrency.Key, "ann", "", map[string]any{"phone": "+1555"}))
	require.Equal(t, "ann", LimitKey(tl.Limits.Rate.Key, "ann", "", nil))
	require.Equal(t, "42", LimitKey("input.n", "", "", map[string]any{"n": 42.0}))
	tl, _ = r.Tool("crm.minimal")
	require.False(t, tl.HasCallLimits())
	require.Equal(t, LimitWaitDefault, tl.LimitWait())

	tl, _ = r.Tool("integrations.highlevel.sync_contacts")
	require.Equal(t, "integrations.highlevel", tl.Domain())
	require.Equal(t, "sync_contacts", tl.Method())
	tl, _ = r.Tool("crm.minimal")
	require.Empty(t, tl.Permissions)
	require.Empty(t, tl.ReceiptFields)
	tl, _ = r.Tool("crm.with_defs")
	require.ErrorContains(t, tl.ValidateInput([]byte(`{"phone":"123"}`)), "/phone")
	require.NoError(t, tl.ValidateInput([]byte(`{"phone":"1234567"}`)))
	tl, _ = r.Tool("crm.draft7")
	require.NoError(t, tl.ValidateInput([]byte(`{"phone":"1"}`)))
	tl, _ = r.Tool("comms.send_sms")
	require.True(t, tl.HasOutsideEffects())
	tl, _ = r.Tool("files.archive")
	require.False(t, tl.HasOutsideEffects(), "outside_effects overrides the permissions")

	domains, byDomain := r.Domains()
	require.Equal(t, []string{"comms", "crm", "files", "integrations.highlevel"}, domains)
	require.Len(t, byDomain["crm"], 3)
}

func TestPermissionHasOutsideEffects(t *testing.T) {
	t.Parallel()

	for p, want := range map[string]bool{
		"send:sms": true, "send:email": true, "write:files": true, "write:integrations": true, "pay:stripe": true,
		"write:notes": false, "read:web": false, "read:system": false, "sender:x": false, "write:filesystem": false,
	} {
		require.Equal(t, want, PermissionHasOutsideEffects(p), p)
	}
}

// validationTool has formats, unions, free-form objects and defaults.
func validationTool(t *testing.T) *Tool {
	t.Helper()
	m := tool("test.validate")
	m["idempotency"] = map[string]any{"mode": "none"}
	m["input_schema"] = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"when":     map[string]any{"type": "string", "format": "date-time"},
			"day":      map[string]any{"type": "string", "format": "date"},
			"id":       map[string]any{"type": "string", "format": "uuid"},
			"site":     map[string]any{"type": "string", "format": "uri"},
			"email":    map[string]any{"type": "string", "format": "email"},
			"nickname": map[string]any{"type": []string{"string", "null"}, "maxLength": 5},
			"meta":     map[string]any{"type": "object"},
			"count":    map[string]any{"type": "integer", "minimum": 1, "default": 10},
			"a/b":      map[string]any{"type": "string"},
		},
		"required":             []string{"id", "email"},
		"additionalProperties": false,
	}
	r, err := Parse(registryDoc(m))
	require.NoError(t, err)
	tl, _ := r.Tool("test.validate")
	return tl
}

func TestValidateInput(t *testing.T) {
	t.Parallel()
	tl := validationTool(t)

	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		in := `{"id":"5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10","email":"a@example.com","when":"2026-11-22T10:00:00Z",
			"day":"2026-11-22","site":"https://example.com/x","nickname":null,"meta":{"deep":{"any":[1,"two",{"three":3}]}}}`
		require.NoError(t, tl.ValidateInput([]byte(in)))
		require.NoError(t, tl.ValidateInput([]byte(`{"id":"5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10","email":"a@example.com","nickname":"bob"}`)))
	})

	t.Run("every violation with pointer, keyword and message", func(t *testing.T) {
		t.Parallel()
		in := `{"when":"yesterday","day":"2026-13-45","site":"not a uri","nickname":"too long a name","count":0,"extra":1,"a/b":7}`
		err := tl.ValidateInput([]byte(in))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "test.validate", ve.Tool)
		require.Equal(t, "input", ve.Schema)
		got := map[string]string{}
		for _, v := range ve.Violations {
			require.NotEmpty(t, v.Message)
			require.NotEmpty(t, v.SchemaPath)
			got[v.Path] = v.Keyword
		}
		require.Equal(t, map[string]string{
			"/id":       "required",
			"/email":    "required",
			"/when":     "format",
			"/day":      "format",
			"/site":     "format",
			"/nickname": "maxLength",
			"/count":    "minimum",
			"":          "additionalProperties",
			"/a~1b":     "type",
		}, got, "%v", err)
		require.Contains(t, err.Error(), `missing property "id"`)
	})

	t.Run("formats are asserted", func(t *testing.T) {
		t.Parallel()
		for field, bad := range map[string]string{"id": "not-a-uuid", "email": "nobody"} {
			in := map[string]any{"id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "email": "a@example.com"}
			in[field] = bad
			b, _ := json.Marshal(in)
			err := tl.ValidateInput(b)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve, field)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, "/"+field, ve.Violations[0].Path)
			require.Equal(t, "format", ve.Violations[0].Keyword)
			require.Equal(t, "/properties/"+field+"/format", ve.Violations[0].SchemaPath)
		}
	})

	t.Run("defaults are never injected", func(t *testing.T) {
		t.Parallel()
		v, err := DecodeJSON([]byte(`{"id":"5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10","email":"a@example.com"}`))
		require.NoError(t, err)
		require.NoError(t, tl.ValidateInputValue(v))
		require.NotContains(t, v.(map[string]any), "count")
	})

	t.Run("not JSON, not an object, trailing data", func(t *testing.T) {
		t.Parallel()
		for _, in := range []string{`{"id":`, `[]`, `"x"`, `{} {}`, ``} {
			err := tl.ValidateInput([]byte(in))
			var ve *ValidationError
			require.ErrorAs(t, err, &ve, in)
			require.NotEmpty(t, ve.Violations, in)
		}
	})

	t.Run("big integers stay exact", func(t *testing.T) {
		t.Parallel()
		m := tool("test.big")
		m["idempotency"] = map[string]any{"mode": "none"}
		m["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 9007199254740993}}}
		r, err := Parse(registryDoc(m))
		require.NoError(t, err)
		big, _ := r.Tool("test.big")
		require.NoError(t, big.ValidateInput([]byte(`{"n":9007199254740993}`)))
		require.Error(t, big.ValidateInput([]byte(`{"n":9007199254740994}`)))
	})
}

func TestValidateOutput(t *testing.T) {
	t.Parallel()

	r, err := Load(repoRegistry)
	require.NoError(t, err)
	tl, _ := r.Tool("os.create_note")
	require.NoError(t, tl.ValidateOutput([]byte(`{"note_id":"5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10","domain":"business","title":"x",
		"entity_refs":[{"type":"lead","id":"7c1d2e3f-0a4b-4c5d-8e6f-9a0b1c2d3e4f"}],"tags":["roof"],"created_at":"2026-11-22T10:00:00Z"}`)))
	// A bad id format, a domain outside its enum and a missing created_at.
	err = tl.ValidateOutput([]byte(`{"note_id":"nope","domain":"work","title":"x","entity_refs":[],"tags":[]}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "output", ve.Schema)
	require.Len(t, ve.Violations, 3, "%v", err)
}

func TestIdempotencyKeyFor(t *testing.T) {
	t.Parallel()

	keyed := tool("crm.keyed")
	safe := tool("crm.safe")
	safe["idempotency"] = map[string]any{"mode": "safe-retry"}
	none := tool("crm.none")
	none["idempotency"] = map[string]any{"mode": "none"}
	r, err := Parse(registryDoc(keyed, safe, none))
	require.NoError(t, err)

	in, _ := DecodeJSON([]byte(`{"phone":"0412 345 678"}`))
	num, _ := DecodeJSON([]byte(`{"phone":412345678}`))
	empty, _ := DecodeJSON([]byte(`{"phone":"  "}`))

	k, _ := r.Tool("crm.keyed")
	key, err := k.IdempotencyKeyFor(in, "")
	require.NoError(t, err)
	require.Equal(t, "0412 345 678", key)
	key, _ = k.IdempotencyKeyFor(num, "")
	require.Equal(t, "412345678", key)
	key, _ = k.IdempotencyKeyFor(in, "explicit")
	require.Equal(t, "explicit", key)
	_, err = k.IdempotencyKeyFor(empty, "")
	require.ErrorContains(t, err, "empty")

	s, _ := r.Tool("crm.safe")
	key, _ = s.IdempotencyKeyFor(in, "")
	require.Empty(t, key, "safe-retry uses only an explicit key")
	key, _ = s.IdempotencyKeyFor(in, "abc")
	require.Equal(t, "abc", key)

	n, _ := r.Tool("crm.none")
	key, _ = n.IdempotencyKeyFor(in, "abc")
	require.Empty(t, key, "none never uses a key")
}

func TestSummarize(t *testing.T) {
	t.Parallel()

	m := tool("crm.sum")
	m["receipt_fields"] = []string{"result.lead.id", "result.items.1", "effects.db_writes", "result.missing"}
	r, err := Parse(registryDoc(m))
	require.NoError(t, err)
	tl, _ := r.Tool("crm.sum")
	sum := tl.Summarize(json.RawMessage(`{"lead":{"id":"L1"},"items":["a","b"]}`),
		&Effects{DBWrites: []DBWrite{{Table: "leads", Op: "insert", Count: 1, IDs: []string{"L1"}}}})
	require.Equal(t, "L1", sum["result.lead.id"])
	require.Equal(t, "b", sum["result.items.1"])
	require.NotContains(t, sum, "result.missing")
	writes, _ := json.Marshal(sum["effects.db_writes"])
	require.JSONEq(t, `[{"table":"leads","op":"insert","count":1,"ids":["L1"]}]`, string(writes))
	require.Nil(t, tl.Summarize(nil, &Effects{})["result.lead.id"])
}

// TestLoadLargeRegistry loads a registry of 150 tools in the varied styles real registries use.
func TestLoadLargeRegistry(t *testing.T) {
	t.Parallel()

	var tools []map[string]any
	for i := range 150 {
		m := tool(fmt.Sprintf("domain%02d.method_%03d", i%12, i))
		switch i % 3 {
		case 0:
			m["idempotency"] = map[string]any{"mode": "none"}
		case 1:
			m["idempotency"] = map[string]any{"mode": "safe-retry"}
		}
		tools = append(tools, m)
	}
	r, err := Parse(registryDoc(tools...))
	require.NoError(t, err)
	require.Equal(t, 150, r.Len())
	domains, _ := r.Domains()
	require.Len(t, domains, 12)

	// And the checked-in registry in the varied styles of real ones.
	r, err = Load("testdata/varied.registry.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, r.Len(), 100)
}

func TestCompileSchema(t *testing.T) {
	t.Parallel()

	s := MustCompileSchema("run request", []byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"],"additionalProperties":false}`))
	require.NoError(t, s.Validate([]byte(`{"n":3}`)))
	var ve *ValidationError
	require.ErrorAs(t, s.Validate([]byte(`{"n":9,"x":1}`)), &ve)
	require.Len(t, ve.Violations, 2)
	require.Equal(t, "run request", ve.Tool)
	_, err := CompileSchema("bad", []byte(`{"type":"nope"}`))
	require.Error(t, err)
}
