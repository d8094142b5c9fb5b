package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// nameRe is the tool name rule: two or more dot-separated segments, each starting with a letter.
// "os.create_note" and "integrations.highlevel.sync_contacts" are valid.
var nameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)+$`)

// nameFormProblem says what nameRe asks.
const nameFormProblem = `is not of the form domain.method (segments of letters, digits, "_" or "-", each starting with a letter, joined by dots)`

// checker collects problems so a broken registry is reported whole, not one problem per run.
type checker struct {
	problems []Problem
}

func (c *checker) add(tool, field, msg string) {
	c.problems = append(c.problems, Problem{Tool: tool, Field: field, Message: msg})
}

// checkTool decodes and checks tools[i]. It reports ok=false when the tool could not be used at all.
func (c *checker) checkTool(i int, raw json.RawMessage, comp *schemaCompiler, servers map[string]*MCPServer) (*Tool, bool) {
	label := fmt.Sprintf("tools[%d]", i)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		c.add(label, "(tool)", "is not a JSON object")
		return nil, false
	}
	before := len(c.problems)
	t := &Tool{}

	// The name comes first: every later problem is reported under it.
	if !decodeField(fields, "name", &t.Name) || t.Name == "" {
		c.add(label, "name", "is required (a string)")
	} else {
		label = t.Name
		if !nameRe.MatchString(t.Name) {
			c.add(label, "name", nameFormProblem)
		} else if problem := checkPortableName(t.Name); problem != "" {
			c.add(label, "name", problem)
		}
	}

	if !decodeField(fields, "description", &t.Description) || strings.TrimSpace(t.Description) == "" {
		c.add(label, "description", "is required (a non-empty string)")
	}

	c.checkIdempotency(label, fields, t)
	c.checkTimeout(label, fields, t)
	c.checkPermissions(label, fields, t)
	c.checkReceiptFields(label, fields, t)
	c.checkLimits(label, fields, t)
	c.checkApproval(label, fields, t)

	if raw, ok := fields["outside_effects"]; ok && string(raw) != "null" {
		var v bool
		if json.Unmarshal(raw, &v) != nil {
			c.add(label, "outside_effects", "must be true or false")
		} else {
			t.OutsideEffects = &v
		}
	}

	if raw, ok := fields["device_agnostic"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &t.DeviceAgnostic) != nil {
			c.add(label, "device_agnostic", "must be true or false")
		}
	}

	t.InputSchema = c.checkSchema(label, "input_schema", fields, true)
	t.OutputSchema = c.checkSchema(label, "output_schema", fields, false)
	if t.InputSchema != nil {
		var err error
		if t.input, err = comp.compile(fmt.Sprintf("tools/%d/input", i), t.InputSchema); err != nil {
			c.add(label, "input_schema", "does not compile: "+err.Error())
		} else {
			t.inputProps = topLevelProperties(t.InputSchema)
			c.checkKeyField(label, t)
			c.checkLimitKeyProperty(label, t)
			c.checkSecrets(label, t)
		}
	}
	c.checkImplementation(label, fields["implementation"], t, servers)
	if t.OutputSchema != nil {
		var err error
		if t.output, err = comp.compile(fmt.Sprintf("tools/%d/output", i), t.OutputSchema); err != nil {
			c.add(label, "output_schema", "does not compile: "+err.Error())
		}
	}
	return t, len(c.problems) == before
}

// decodeField decodes fields[name] into v and reports whether it was present and of the right type.
func decodeField(fields map[string]json.RawMessage, name string, v any) bool {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

func (c *checker) checkIdempotency(label string, fields map[string]json.RawMessage, t *Tool) {
	raw, ok := fields["idempotency"]
	if !ok || string(raw) == "null" {
		c.add(label, "idempotency", `is required ({"mode": "none" | "safe-retry" | "keyed"})`)
		return
	}
	var idem struct {
		Mode     *string `json:"mode"`
		KeyField *string `json:"key_field"`
	}
	if err := json.Unmarshal(raw, &idem); err != nil {
		c.add(label, "idempotency", `must be an object {"mode": ..., "key_field": ...}`)
		return
	}
	if idem.Mode == nil {
		c.add(label, "idempotency.mode", `is required ("none", "safe-retry" or "keyed")`)
	} else {
		t.Idempotency.Mode = Mode(*idem.Mode)
		switch t.Idempotency.Mode {
		case ModeNone, ModeSafeRetry, ModeKeyed:
		default:
			c.add(label, "idempotency.mode", fmt.Sprintf(`%q is not a known mode ("none", "safe-retry" or "keyed")`, *idem.Mode))
		}
	}
	if idem.KeyField != nil {
		t.Idempotency.KeyField = *idem.KeyField
	}
	switch {
	case t.Idempotency.Mode == ModeKeyed && t.Idempotency.KeyField == "":
		c.add(label, "idempotency.key_field", `is required when mode is "keyed"`)
	case t.Idempotency.Mode != ModeKeyed && t.Idempotency.KeyField != "" && idem.Mode != nil:
		c.add(label, "idempotency.key_field", fmt.Sprintf(`applies only to mode "keyed", not %q`, t.Idempotency.Mode))
	}
}

// checkKeyField checks that a keyed tool's key_field is a required top-level input property.
func (c *checker) checkKeyField(label string, t *Tool) {
	kf := t.Idempotency.KeyField
	if t.Idempotency.Mode != ModeKeyed || kf == "" {
		return
	}
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.InputSchema, &s)
	if !t.HasInputProperty(kf) || !slices.Contains(s.Required, kf) {
		c.add(label, "idempotency.key_field", fmt.Sprintf("%q is not a required property of input_schema", kf))
	}
}

func (c *checker) checkTimeout(label string, fields map[string]json.RawMessage, t *Tool) {
	raw, ok := fields["timeout_ms"]
	if !ok || string(raw) == "null" {
		c.add(label, "timeout_ms", "is required (milliseconds)")
		return
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&n) != nil {
		c.add(label, "timeout_ms", "must be a number of milliseconds")
		return
	}
	ms, err := n.Int64()
	if err != nil {
		c.add(label, "timeout_ms", fmt.Sprintf("must be a whole number of milliseconds, not %s", n))
		return
	}
	t.TimeoutMS = ms
	if t.Timeout() < TimeoutMin || t.Timeout() > TimeoutMax {
		c.add(label, "timeout_ms", fmt.Sprintf("is %d, outside the allowed %d..%d", ms, TimeoutMin.Milliseconds(), TimeoutMax.Milliseconds()))
	}
}

func (c *checker) checkPermissions(label string, fields map[string]json.RawMessage, t *Tool) {
	raw, ok := fields["permissions"]
	if !ok || string(raw) == "null" {
		t.Permissions = []string{}
		return
	}
	if json.Unmarshal(raw, &t.Permissions) != nil {
		c.add(label, "permissions", "must be an array of strings")
		return
	}
	seen := make(map[string]bool, len(t.Permissions))
	for i, p := range t.Permissions {
		switch {
		case strings.TrimSpace(p) == "" || strings.ContainsAny(p, " \t\n"):
			c.add(label, fmt.Sprintf("permissions[%d]", i), fmt.Sprintf("%q must be a non-empty string without spaces", p))
		case seen[p]:
			c.add(label, fmt.Sprintf("permissions[%d]", i), fmt.Sprintf("%q is listed twice", p))
		}
		seen[p] = true
	}
}

func (c *checker) checkReceiptFields(label string, fields map[string]json.RawMessage, t *Tool) {
	raw, ok := fields["receipt_fields"]
	if !ok || string(raw) == "null" {
		t.ReceiptFields = []string{}
		return
	}
	if json.Unmarshal(raw, &t.ReceiptFields) != nil {
		c.add(label, "receipt_fields", "must be an array of strings")
		return
	}
	for i, f := range t.ReceiptFields {
		root, rest, _ := strings.Cut(f, ".")
		if (root != "result" && root != "effects") || rest == "" || strings.Contains(rest, "..") || strings.HasSuffix(rest, ".") {
			c.add(label, fmt.Sprintf("receipt_fields[%d]", i), fmt.Sprintf(`%q must point into the receipt's result or effects ("result.<field>" or "effects.<field>")`, f))
		}
	}
}

// checkSchema checks that a schema field is present and a JSON object; an input schema must describe an
// object, because a call's input is one.
func (c *checker) checkSchema(label, field string, fields map[string]json.RawMessage, isInput bool) json.RawMessage {
	raw, ok := fields[field]
	if !ok || string(raw) == "null" {
		c.add(label, field, "is required (a JSON Schema object)")
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		c.add(label, field, "must be a JSON Schema object")
		return nil
	}
	if isInput {
		if typ, ok := obj["type"]; ok {
			var s string
			var list []string
			switch {
			case json.Unmarshal(typ, &s) == nil && s == "object":
			case json.Unmarshal(typ, &list) == nil && slices.Contains(list, "object"):
			default:
				c.add(label, field+".type", fmt.Sprintf(`must be "object" (a call's input is a JSON object), not %s`, typ))
				return nil
			}
		}
	}
	return raw
}

// topLevelProperties returns the sorted names under a schema's top-level "properties".
func topLevelProperties(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
