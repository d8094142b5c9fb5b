package businessplan

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/internal/plantest"
	"github.com/stretchr/testify/require"
)

const officeID = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"

// officeContext carries the ids a run's context may give the office's tools (what a call is about).
var officeContext = map[string]any{"lead_id": officeID, "entity_id": officeID, "event_id": officeID}

// TestOfficeRulesLeaveUnknownsOut: what a message does not say is left out of the input (the run's context
// or the tool's default supplies it), never sent as an empty value; times are whole seconds, as before.
func TestOfficeRulesLeaveUnknownsOut(t *testing.T) {
	p, _ := plantest.Planner(t, officeRules, time.UTC)
	// A clock with a fraction of a second: "when am I free" searches from now.
	now := time.Date(2026, 11, 18, 9, 0, 0, 123456789, time.UTC)
	for msg, want := range map[string]string{
		"log call: no answer":                          `{"outcome": "no_answer"}`,
		"cancel the meeting":                           `{}`,
		"attach the job to the event":                  `{}`,
		"move the event to friday at 3pm":              `{"patch": {"start_at": "2026-11-20T15:00:00Z"}}`,
		"search contacts for Nguyen":                   `{"query": "Nguyen"}`,
		"write an email about the invoice":             `{"purpose": "the invoice"}`,
		"when am I free":                               `{"from": "2026-11-18T09:00:00Z", "to": "2026-11-26T00:00:00Z"}`,
		"add an appointment: dentist on friday at 9am": `{"title": "Appointment dentist", "start_at": "2026-11-20T09:00:00Z", "end_at": "2026-11-20T10:00:00Z"}`,
		"what do you remember about me?":               `{}`,
		"I commit to walking daily":                    `{"title": "Walking daily"}`,
		"should I stay?":                               `{"decision": "Should I stay?"}`,
	} {
		plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: msg, Now: now})
		require.NoError(t, err, msg)
		require.Len(t, plan.Calls, 1, msg)
		require.JSONEq(t, want, string(plan.Calls[0].Input), msg)
		require.NotContains(t, string(plan.Calls[0].Input), `""`, "%s: an empty value", msg)
	}
}

// TestOfficeSentences: what the answer says of each office call that has a sentence, from the input the
// rule planned and the result the executor's handler returns; a result that is not the tool's gets the
// generic sentence.
func TestOfficeSentences(t *testing.T) {
	sydney, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	when := func(t time.Time) string { return t.In(sydney).Format("Mon 2 Jan 15:04") }
	event := `{"event_id": "` + officeID + `", "title": "Meeting with the supplier", "start_at": "2026-11-20T03:00:00Z",
		"end_at": "2026-11-20T05:00:00Z", "location": "the depot", "status": "scheduled", "cancel_reason": null,
		"cancelled_at": null, "lead_id": null, "job_id": null, "context_ref": null,
		"created_at": "2026-11-18T00:00:00Z", "updated_at": "2026-11-18T00:00:00Z"}`
	for _, tt := range []struct{ tool, in, out, want string }{
		{businesspack.CheckIn, `{"energy": "high", "stress": "low", "focus": "locked_in"}`,
			`{"checkin_id": "` + officeID + `", "energy": "high", "stress": "low", "focus": "locked_in", "notes": null,
			  "recorded_at": "2026-11-18T00:00:00Z", "previous": null}`,
			"Checked in: energy high, stress low, focus locked in."},
		{businesspack.CheckIn, `{"energy": "medium", "stress": "high", "focus": "ok", "notes": "bad sleep"}`, `{"checkin_id": "` + officeID + `"}`,
			"Checked in: energy medium, stress high, focus ok."},
		{businesspack.CreateEvent, `{"title": "Meeting with the supplier", "start_at": "2026-11-20T14:00:00+11:00", "end_at": "2026-11-20T16:00:00+11:00", "location": "the depot"}`,
			`{"event_id": "` + officeID + `", "event": ` + event + `, "overlaps": []}`,
			"Booked “Meeting with the supplier” for Fri 20 Nov 14:00."},
		{businesspack.FindSlots, `{"from": "2026-11-19T00:00:00+11:00", "to": "2026-11-20T00:00:00+11:00", "duration_minutes": 120}`,
			`{"slots": [{"start_at": "2026-11-18T21:00:00Z", "end_at": "2026-11-18T23:00:00Z", "date": "2026-11-19", "weekday": "Thursday"},
			            {"start_at": "2026-11-19T03:00:00Z", "end_at": "2026-11-19T05:00:00Z", "date": "2026-11-19", "weekday": "Thursday"}],
			  "count": 2, "truncated": false, "duration_minutes": 120, "time_zone": "Australia/Sydney", "business_hours": "Mon-Fri 08:00-17:00"}`,
			"2 free slots:\n1. Thu 19 Nov 08:00 to Thu 19 Nov 10:00\n2. Thu 19 Nov 14:00 to Thu 19 Nov 16:00"},
		{businesspack.FindSlots, `{"from": "2026-11-19T00:00:00+11:00", "to": "2026-11-20T00:00:00+11:00"}`,
			`{"slots": [], "count": 0, "truncated": false, "duration_minutes": 60, "time_zone": "Australia/Sydney", "business_hours": "Mon-Fri 08:00-17:00"}`,
			"No free slots found."},
	} {
		said, ok := officeSentences[tt.tool].Say(json.RawMessage(tt.in), json.RawMessage(tt.out), when)
		require.True(t, ok, tt.tool)
		require.Equal(t, tt.want, said, tt.tool)
	}
	for _, out := range []string{`null`, `[]`, `"ok"`, `{"slots": "none"}`} {
		_, ok := officeSentences[businesspack.FindSlots].Say(json.RawMessage(`{}`), json.RawMessage(out), when)
		require.False(t, ok, "%s is not calendar.find_slots's result", out)
	}
}
