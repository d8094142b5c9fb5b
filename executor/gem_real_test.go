package executor_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/business"
	"github.com/gemhq/gem/executor/business/twiliotest"
	"github.com/gemhq/gem/executor/integrations"
	"github.com/gemhq/gem/executor/integrations/integrationstest"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realOutcome says whether a receipt shows a tool doing its work: it succeeded, or it refused with a
// domain code (a record that does not exist, a state that refuses the change, input the tool cannot use).
// not_configured, a handler error or a broken contract is not real work.
func realOutcome(r *registry.Receipt) bool {
	if r.Status == registry.StatusSucceeded {
		return true
	}
	switch r.Error.Code {
	case registry.CodeNotFound, registry.CodeConflict, registry.CodeValidation:
		return true
	}
	return false
}

// TestGEMToolsRunForReal calls every GEM tool once, with nothing configured (no SMS, email, LLM or
// integration credentials), with an input valid for GEM's schema, and counts the tools that do real work.
func TestGEMToolsRunForReal(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.business.FileStore = t.TempDir()
	b.startExecutor(t, nil)
	gem, err := gemRegistry()
	require.NoError(t, err)

	type outcome struct {
		tool string
		r    *registry.Receipt
	}
	var outcomes []outcome
	for _, tool := range gem.Tools() {
		var s realSchema
		require.NoError(t, json.Unmarshal(tool.InputSchema, &s))
		input := realisticInput(tool.Name, "", &s).(map[string]any)
		raw, err := json.Marshal(input)
		require.NoError(t, err)
		require.NoError(t, tool.ValidateInput(raw), "%s: the generated input is not valid for GEM: %s", tool.Name, raw)
		outcomes = append(outcomes, outcome{tool.Name, b.run(t, ctx, tool.Name, string(raw))})
	}

	byCode := map[string][]string{}
	real := 0
	for _, o := range outcomes {
		code := "succeeded"
		if o.r.Status != registry.StatusSucceeded {
			code = string(o.r.Error.Code)
		}
		byCode[code] = append(byCode[code], o.tool)
		if realOutcome(o.r) {
			real++
		} else {
			require.Equal(t, registry.CodeNotConfigured, o.r.Error.Code, "%s: %s", o.tool, o.r.Error.Message)
			d := decodeDetails(t, o.r)
			require.NotEmpty(t, d["required_env"], "%s: not_configured names the variables it needs", o.tool)
		}
	}
	for _, code := range slices.Sorted(maps.Keys(byCode)) {
		t.Logf("%-18s %3d  %s", code, len(byCode[code]), strings.Join(byCode[code], " "))
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
	biz := business.Config{
		SMS:       business.TwilioConfig{AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: twiliotest.From, BaseURL: twilio.URL},
		Email:     business.SMTPConfig{URL: "smtp://gem:secret@" + smtp.addr, From: "office@acme-roofing.example"},
		FileStore: t.TempDir(),
		LLM:       llm.config(),
	}
	integ := integrations.Config{Email: biz.Email}
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
	integ.SMS = account.Config()

	h := executor.Handlers{}
	business.Register(h, biz)
	integrations.Register(h, integ)
	b.startExecutorWith(t, executor.Config{}, b.reg, h, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))

	gem, err := gemRegistry()
	require.NoError(t, err)
	real := 0
	for _, tool := range gem.Tools() {
		var s realSchema
		require.NoError(t, json.Unmarshal(tool.InputSchema, &s))
		input := realisticInput(tool.Name, "", &s).(map[string]any)
		if _, ok := input["location_id"]; ok {
			input["location_id"] = integ.HighLevel.LocationID // the location the token may reach
		}
		raw, err := json.Marshal(input)
		require.NoError(t, err)
		r := b.run(t, ctx, tool.Name, string(raw))
		if assert.True(t, realOutcome(r), "%s: %s %+v", tool.Name, r.Status, r.Error) {
			real++
		}
	}
	t.Logf("GEM tools that run for real with every provider configured against its fake: %d of %d", real, gem.Len())
	require.Equal(t, gem.Len(), real)
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
	text := "A tidy new ridge line in Newtown."
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
}
