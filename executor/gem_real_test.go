package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	businesshandlers "github.com/gemhq/gem/packs/business/handlers"
	"github.com/gemhq/gem/packs/business/handlers/twiliotest"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationshandlers "github.com/gemhq/gem/packs/integrations/handlers"
	"github.com/gemhq/gem/packs/integrations/handlers/integrationstest"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realOutcome says whether a receipt shows a tool doing its work: it succeeded, or it refused with a
// domain code (a state that refuses the change, input the tool cannot use). not_found is real only when
// proven (see exerciseGEMTools); not_configured, a handler error or a broken contract is not real work.
func realOutcome(r *registry.Receipt) bool {
	if r.Status == registry.StatusSucceeded {
		return true
	}
	switch r.Error.Code {
	case registry.CodeConflict, registry.CodeValidation:
		return true
	}
	return false
}

// toolOutcome is how one GEM tool answered: first with ids of records that do not exist, then (when that was
// not_found) with ids of records earlier calls made.
type toolOutcome struct {
	tool  string
	first *registry.Receipt
	// existing answered the input naming records that exist; nil when the first answer was not not_found, or
	// when no earlier call made the records the tool names.
	existing *registry.Receipt
}

// real: the tool did its work. A not_found counts only when the ids it was given were made up (and the
// refusal names one of them), and the same tool, given records that exist, then did its work: a handler
// that answers not_found to everything is not real.
func (o toolOutcome) real() bool {
	if o.first.Status == registry.StatusSucceeded || o.first.Error.Code != registry.CodeNotFound {
		return realOutcome(o.first)
	}
	return o.existing != nil && realOutcome(o.existing)
}

// last is the tool's last answer.
func (o toolOutcome) last() *registry.Receipt {
	if o.existing != nil {
		return o.existing
	}
	return o.first
}

// code is the first answer's status or error code, and for a not_found what the call with existing records
// answered ("not_found→succeeded").
func (o toolOutcome) code() string {
	code := receiptCode(o.first)
	if code == string(registry.CodeNotFound) {
		if o.existing == nil {
			return code + "→no records"
		}
		return code + "→" + receiptCode(o.existing)
	}
	return code
}

func receiptCode(r *registry.Receipt) string {
	if r.Status == registry.StatusSucceeded {
		return "succeeded"
	}
	return string(r.Error.Code)
}

// exerciseGEMTools calls every GEM tool once with an input valid for GEM's schema whose ids name records
// that do not exist (adjust may change it). Then, pass after pass, each tool that answered not_found is
// called again with the ids of records that succeeded calls handed back (a lead_id from leads.create, a
// quote_id from quote.create_from_inspection, a call_id, ...), until a pass makes no tool succeed that had
// not.
func exerciseGEMTools(t *testing.T, ctx context.Context, b *testBundle, adjust func(map[string]any)) []toolOutcome {
	t.Helper()
	gem, err := gemRegistry()
	require.NoError(t, err)
	made := map[string]string{} // records calls made: field name (lead_id) → id
	input := func(tool *registry.Tool) map[string]any {
		var s realSchema
		require.NoError(t, json.Unmarshal(tool.InputSchema, &s))
		in := realisticInput(tool.Name, "", &s).(map[string]any)
		if adjust != nil {
			adjust(in)
		}
		return in
	}
	call := func(tool *registry.Tool, in map[string]any) *registry.Receipt {
		raw, err := json.Marshal(in)
		require.NoError(t, err)
		require.NoError(t, tool.ValidateInput(raw), "%s: the generated input is not valid for GEM: %s", tool.Name, raw)
		r := b.run(t, ctx, tool.Name, string(raw))
		if r.Status == registry.StatusSucceeded {
			var out any
			require.NoError(t, json.Unmarshal(r.Result, &out))
			collectIDs(made, out)
			made["call_id"] = r.CallID.String()
		}
		return r
	}

	var outcomes []toolOutcome
	for _, tool := range gem.Tools() {
		in := input(tool)
		r := call(tool, in)
		if r.Status != registry.StatusSucceeded && r.Error.Code == registry.CodeNotFound {
			raw, err := json.Marshal(in)
			require.NoError(t, err)
			require.Truef(t, namesMadeUpID(r, in), "%s: not_found names none of the ids of the input %s: %s %s", tool.Name, raw, r.Error.Message, r.Error.Details)
		}
		outcomes = append(outcomes, toolOutcome{tool: tool.Name, first: r})
	}
	for progress := true; progress; {
		progress = false
		for i := range outcomes {
			o := &outcomes[i]
			if receiptCode(o.first) != string(registry.CodeNotFound) || o.existing != nil && o.existing.Status == registry.StatusSucceeded {
				continue
			}
			tool, _ := gem.Tool(o.tool)
			in := input(tool)
			if _, replaced := withMadeIDs(made, "", in); !replaced {
				continue
			}
			// a tool that refused (a quote not yet accepted) runs again after a pass that made records
			if r := call(tool, in); o.existing == nil || realOutcome(r) || !realOutcome(o.existing) {
				o.existing = r
			}
			progress = progress || o.existing.Status == registry.StatusSucceeded
		}
	}
	return outcomes
}

// collectIDs keeps the ids a result hands back by field name: {"lead_id": "…"} and {"lead": {"id": "…"}}
// give lead_id; a media asset's file_ref is its asset_ref (references name assets by it).
func collectIDs(made map[string]string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, f := range v {
			if s, ok := f.(string); ok && strings.HasSuffix(k, "_id") && uuid.Validate(s) == nil {
				made[k] = s
			}
			if obj, ok := f.(map[string]any); ok {
				if s, ok := obj["id"].(string); ok && uuid.Validate(s) == nil {
					made[k+"_id"] = s
				}
				if s, ok := obj["file_ref"].(string); ok && k == "asset" {
					made["asset_ref"] = s
				}
			}
			collectIDs(made, f)
		}
	case []any:
		for _, f := range v {
			collectIDs(made, f)
		}
	}
}

// withMadeIDs puts the ids of records calls made in place of the made-up ones in the value of field key: a
// lead_id, each of asset_ids, a reference {"type": "lead", "id": …}, each of before_refs (an asset's file_ref). It
// says whether it replaced any.
func withMadeIDs(made map[string]string, key string, v any) (any, bool) {
	replaced := false
	switch v := v.(type) {
	case map[string]any:
		for k, f := range v {
			var r bool
			v[k], r = withMadeIDs(made, k, f)
			replaced = replaced || r
		}
		if typ, ok := v["type"].(string); ok {
			if id, ok := made[typ+"_id"]; ok && v["id"] != nil {
				v["id"], replaced = id, true
			}
		}
	case []any:
		for i, f := range v {
			var r bool
			v[i], r = withMadeIDs(made, strings.TrimSuffix(key, "s"), f)
			replaced = replaced || r
		}
	case string:
		if strings.HasSuffix(key, "_ref") {
			key = "asset_ref"
		}
		if id, ok := made[key]; ok {
			return id, true
		}
	}
	return v, replaced
}

// namesRecord says whether a field's name says it names a record: lead_id, asset_ref, assets_refs.
func namesRecord(field string) bool {
	return field == "id" || strings.HasSuffix(field, "_id") || strings.HasSuffix(field, "_ref") || strings.HasSuffix(field, "_refs")
}

// namesMadeUpID says whether a not_found refusal names a record of the input: one of its ids or references
// in the message, or the field holding one in details.field.
func namesMadeUpID(r *registry.Receipt, in any) bool {
	var details struct {
		Field string `json:"field"`
	}
	_ = json.Unmarshal(r.Error.Details, &details)
	found := false
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, f := range v {
				walk(k, f)
			}
		case []any:
			for _, f := range v {
				walk(key, f)
			}
		case string:
			if (uuid.Validate(v) == nil || namesRecord(key)) && v != "" && (strings.Contains(r.Error.Message, v) || details.Field == key) {
				found = true
			}
		}
	}
	walk("", in)
	return found
}

// logOutcomes lists the tools by how they answered.
func logOutcomes(t *testing.T, outcomes []toolOutcome) {
	byCode := map[string][]string{}
	for _, o := range outcomes {
		byCode[o.code()] = append(byCode[o.code()], o.tool)
	}
	for _, code := range slices.Sorted(maps.Keys(byCode)) {
		t.Logf("%-28s %3d  %s", code, len(byCode[code]), strings.Join(byCode[code], " "))
	}
}

// TestGEMToolsRunForReal calls every GEM tool, with nothing configured (no SMS, email, LLM or integration
// credentials), with an input valid for GEM's schema, and counts the tools that do real work.
func TestGEMToolsRunForReal(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.business.FileStore = t.TempDir()
	b.startExecutor(t, nil)

	outcomes := exerciseGEMTools(t, ctx, b, nil)
	logOutcomes(t, outcomes)
	real := 0
	for _, o := range outcomes {
		if o.real() {
			real++
			continue
		}
		last := o.last()
		require.Equal(t, registry.CodeNotConfigured, last.Error.Code, "%s (%s): %s", o.tool, o.code(), last.Error.Message)
		d := decodeDetails(t, last)
		require.NotEmpty(t, d["required_env"], "%s: not_configured names the variables it needs", o.tool)
	}
	t.Logf("GEM tools that run for real with nothing configured: %d of %d", real, len(outcomes))
	require.GreaterOrEqual(t, real, 80)
}

// realSchema is the part of JSON Schema GEM's input schemas use.
type realSchema struct {
	Type       string                 `json:"type"`
	Properties map[string]*realSchema `json:"properties"`
	Required   []string               `json:"required"`
	Items      *realSchema            `json:"items"`
	Enum       []any                  `json:"enum"`
	Format     string                 `json:"format"`
	MaxLength  *int                   `json:"maxLength"`
	Minimum    *float64               `json:"minimum"`
	Maximum    *float64               `json:"maximum"`
}

// realisticInput fills every property of a GEM input schema with a value a person might send: ids of
// records that do not exist (so tools that need one answer not_found), phone numbers, addresses, dates in
// the coming days.
func realisticInput(tool, name string, s *realSchema) any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch s.Type {
	case "object":
		obj := map[string]any{}
		for _, p := range slices.Sorted(maps.Keys(s.Properties)) {
			obj[p] = realisticInput(tool, p, s.Properties[p])
		}
		if name == "context_ref" && len(s.Properties) == 0 {
			obj = map[string]any{"type": "lead", "id": uuid.NewString()}
		}
		return obj
	case "array":
		if s.Items == nil {
			return []any{}
		}
		return []any{realisticInput(tool, strings.TrimSuffix(name, "s"), s.Items)}
	case "integer":
		v := 5.0
		if s.Minimum != nil {
			v = max(v, *s.Minimum)
		}
		if s.Maximum != nil {
			v = min(v, *s.Maximum)
		}
		return int(v)
	case "number":
		if s.Maximum != nil && *s.Maximum <= 1 {
			return 0.8
		}
		return 12.5
	case "boolean":
		return name == "dry_run" || name == "dry_run_only"
	}
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Hour)
	switch s.Format {
	case "date-time":
		switch name {
		case "to", "end_at":
			return tomorrow.Add(48 * time.Hour).Format(time.RFC3339)
		case "due_at", "remind_at", "review_at", "start_at", "from":
			return tomorrow.Format(time.RFC3339) // times to come
		}
		return tomorrow.Add(-72 * time.Hour).Format(time.RFC3339) // times that have passed: when something happened
	case "date":
		if name == "to" || name == "end_date" {
			return tomorrow.AddDate(0, 0, 30).Format(time.DateOnly)
		}
		return tomorrow.AddDate(0, 0, -30).Format(time.DateOnly)
	case "uuid":
		return uuid.NewString()
	case "uri":
		return "https://example.com/q/42"
	}
	v := ""
	switch {
	case name == "highlevel_contact_id":
		v = "hl-contact-1"
	case name == "location_id":
		v = "hl-location-1"
	case name == "id" || strings.HasSuffix(name, "_id") || name == "asset_id" || name == "asset_ref":
		v = uuid.NewString()
	case name == "to" || name == "phone":
		if strings.Contains(tool, "email") {
			v = "sam@example.com"
		} else {
			v = "+61412345678"
		}
	case name == "email":
		v = "sam@example.com"
	case name == "pricing_profile":
		v = "standard"
	case name == "link":
		v = "https://photos.app.goo.gl/AbCdEf123"
	case strings.HasSuffix(name, "_ref") || strings.HasSuffix(name, "refs"):
		v = "s3://gem-media/site/photo-1.jpg"
	case name == "type":
		v = "lead"
	case name == "cursor" || name == "template_id":
		v = ""
	default:
		v = fmt.Sprintf("Sample %s", strings.ReplaceAll(name, "_", " "))
	}
	if s.MaxLength != nil && len(v) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	return v
}

// TestGEMToolsAllRealWithFakes calls every GEM tool with every provider configured against a local fake
// that speaks the provider's wire format (Twilio, SMTP, an OpenAI-format model, HighLevel, Google, Meta):
// then every one of the 105 runs for real.
func TestGEMToolsAllRealWithFakes(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	smtp := newFakeSMTP(t, "gem", "secret")
	llm := newFakeLLM(t, func(r llmRequest) string {
		out, _ := json.Marshal(sampleOf(r.Schema))
		return string(out)
	})
	biz := businesspack.Config{
		SMS:       businesspack.TwilioConfig{AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: twiliotest.From, BaseURL: twilio.URL},
		Email:     businesspack.SMTPConfig{URL: "smtp://gem:secret@" + smtp.addr, From: "office@acme-roofing.example"},
		FileStore: t.TempDir(),
		LLM:       llm.config(),
	}
	integ := integrationspack.Config{}
	hl := integrationstest.NewHighLevel()
	t.Cleanup(hl.Close)
	integ.HighLevel = hl.Config()
	google := integrationstest.NewGoogle()
	t.Cleanup(google.Close)
	google.Config(&integ)
	meta := integrationstest.NewMeta()
	t.Cleanup(meta.Close)
	integ.Meta = meta.Config()
	account := integrationstest.NewTwilio()
	t.Cleanup(account.Close)
	integBiz := businesspack.Config{Email: biz.Email, SMS: account.Config()} // the providers the health checks probe

	h := executor.Handlers{}
	businesshandlers.RegisterWithOS(h, ospack.Config{TimeZone: biz.TimeZone}, biz)
	integrationshandlers.Register(h, integ, integBiz)
	b.startExecutorWith(t, executor.Config{}, b.reg, h, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))

	real := 0
	outcomes := exerciseGEMTools(t, ctx, b, func(input map[string]any) {
		if _, ok := input["location_id"]; ok {
			input["location_id"] = integ.HighLevel.LocationID // the location the token may reach
		}
	})
	logOutcomes(t, outcomes)
	for _, o := range outcomes {
		if assert.True(t, o.real(), "%s (%s): %s %+v", o.tool, o.code(), o.last().Status, o.last().Error) {
			real++
		}
	}
	t.Logf("GEM tools that run for real with every provider configured against its fake: %d of %d", real, len(outcomes))
	require.Equal(t, len(outcomes), real)
}

// sampleOf answers a structured-output request as a model would: a value of the JSON Schema it was given.
func sampleOf(schema map[string]any) any {
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := schema["type"].(string)
	if ts, ok := schema["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				out[name] = sampleOf(ps)
			}
		}
		return out
	case "array":
		n := 1
		if m, ok := schema["minItems"].(float64); ok {
			n = max(n, int(m))
		}
		items, _ := schema["items"].(map[string]any)
		list := make([]any, n)
		for i := range list {
			list[i] = sampleOf(items)
		}
		return list
	case "integer":
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "null":
		return nil
	}
	text := "A tidy ridge line in Newtown." // within the shortest limit a prompt states in words (a Meta ad's description, 30)
	if m, ok := schema["maxLength"].(float64); ok && len(text) > int(m) {
		text = text[:int(m)]
	}
	return text
}

// TestGEMIdsThatAreNotUUIDs: GEM's schemas take ids as any string; one that is not a UUID names no record
// GEM can hold, so the call ends not_found naming the field, not with a decoder's message.
func TestGEMIdsThatAreNotUUIDs(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	for tool, input := range map[string]J{
		"leads.schedule_inspection": {"lead_id": "lead-42", "preferred_window": J{"date": "2026-12-01", "part_of_day": "morning"}},
		"quote.calculate_totals":    {"quote_id": "Q-0042"},
		"job.complete":              {"job_id": "", "notes": "done"},
	} {
		r := b.refused(t, ctx, registry.CodeNotFound, tool, input)
		field := strings.TrimSuffix(strings.SplitN(tool, ".", 2)[0], "s") + "_id"
		require.Contains(t, r.Error.Message, field+" ", tool)
		require.Contains(t, r.Error.Message, "UUID", tool)
		require.Equal(t, field, decodeDetails(t, r)["field"], tool)
	}

	// Every handler that reads an id from text says so in the same words, naming the field, wherever the id
	// is: a field of its own, inside a patch, a selector, a reference or a list's item.
	entity, _ := b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Rossi Family Trust"})
	for _, tt := range []struct {
		tool  string
		input J
		field string
	}{
		{"os.update_task", J{"task_id": "task-1", "patch": J{"title": "x"}}, "task_id"},
		{"os.rollback_last_action", J{"call_id": "the last one"}, "call_id"},
		{"os.create_task", J{"title": "x", "domain": "business", "context_ref": J{"type": "job", "id": "job-42"}}, "context_ref.id"},
		{"personal.close_commitment", J{"commitment_id": "c-1", "outcome": "kept"}, "commitment_id"},
		{"identity.expire_memory", J{"selector": J{"memory_id": "m-1"}}, "selector.memory_id"},
		{"entity.update", J{"entity_id": entity.str(t, "entity_id"), "patch": J{"lead_id": "lead-42"}}, "patch.lead_id"},
		{"quote.update_line_items", J{"quote_id": uuid.NewString(), "line_items": []J{{"line_item_id": "line-1", "description": "x", "unit_price_cents": 1}}},
			"line_items[0].line_item_id"},
		{"quote.calculate_totals", J{"quote_id": "Q-0042"}, "quote_id"},
	} {
		r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
		require.Equal(t, tt.field, decodeDetails(t, r)["field"], tt.tool)
		require.Contains(t, r.Error.Message, tt.field+` "`, tt.tool)
		require.Contains(t, r.Error.Message, "names no record: GEM's ids are UUIDs", tt.tool)
	}
}
