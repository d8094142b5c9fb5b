package businessplan

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/packs"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// officeTools are the business pack's tools the office's rules and sentences are for: every tool of the
// comms, calendar, entity and personal domains, and the identity tools they plan.
func officeTools() []string {
	var tools []string
	for _, tool := range businesspack.Tools {
		domain, _, _ := strings.Cut(tool, ".")
		if slices.Contains([]string{"comms", "calendar", "entity", "personal"}, domain) {
			tools = append(tools, tool)
		}
	}
	return append(tools, businesspack.ListMemories, businesspack.GetSelfModel)
}

// officeWithoutRule are the office's tools the rules planner does not plan, and why.
var officeWithoutRule = map[string]string{
	businesspack.UpdateEntity:           "not yet: a contact's patch (name, kind, notes, contact details) goes through the LLM planner and the studio",
	businesspack.LinkEntityConversation: "an agent's bookkeeping: it ties a brain conversation to a contact, which a message does not name",
	businesspack.AddAddressSiteDetails:  "not yet: a site's details (access, roof, storeys, hazards) go through the LLM planner and the studio",
	businesspack.CloseCommitment:        "not yet: closing a commitment takes its outcome and a note, through the LLM planner and the studio",
}

// officeWithoutSentence are the office's tools whose answer is the generic one (the tool and its receipt's
// summary), and why.
var officeWithoutSentence = map[string]string{
	businesspack.ComposeSMS:             "not yet: the summary holds the draft's text",
	businesspack.ComposeEmail:           "not yet: the summary holds the draft's subject",
	businesspack.SendSMS:                "not yet: the summary counts the messages sent and names the log entry",
	businesspack.SendEmail:              "not yet: the summary counts the messages sent and names the log entry",
	businesspack.LogCallOutcome:         "not yet: the summary names the interaction recorded",
	businesspack.CreateFollowupTask:     "not yet: the summary names the task created",
	businesspack.UpdateEvent:            "not yet: the summary names the event",
	businesspack.CancelEvent:            "not yet: the summary says it is cancelled",
	businesspack.AttachJobToEvent:       "not yet: the summary says it is attached",
	businesspack.CreateEntity:           "not yet: the summary names the entity created",
	businesspack.UpdateEntity:           "not yet: the summary names the entity",
	businesspack.SearchEntities:         "not yet: the summary counts the results",
	businesspack.GetEntity:              "the entity is data to read: the summary holds it",
	businesspack.LinkEntityConversation: "an agent's bookkeeping: the summary says whether it linked",
	businesspack.AddInteraction:         "not yet: the summary names the interaction recorded",
	businesspack.AddAddressSiteDetails:  "not yet: the summary says whether it saved",
	businesspack.CreateCommitment:       "not yet: the summary names the commitment",
	businesspack.ReviewCommitments:      "not yet: the summary counts the commitments",
	businesspack.CloseCommitment:        "not yet: the summary names the commitment",
	businesspack.DecisionSupport:        "the analysis is data to read: the summary holds it",
	businesspack.BoundarySet:            "not yet: the summary names the memory kept",
	businesspack.ListMemories:           "not yet: the summary counts the memories",
	businesspack.GetSelfModel:           "the self-model is data to read: the summary holds its persona and boundaries",
}

// TestOfficeToolsArePlannedAndSaid: each office tool has a rule and a sentence, or says why not; the
// office's rules and sentences name only office tools.
func TestOfficeToolsArePlannedAndSaid(t *testing.T) {
	tools := officeTools()
	ruled := map[string]bool{}
	for _, r := range officeRules {
		require.Contains(t, tools, r.Tool, "rule %s names a tool that is not the office's", r.Name)
		ruled[r.Tool] = true
	}
	for tool := range officeSentences {
		require.Contains(t, tools, tool, "a sentence for a tool that is not the office's")
	}
	for _, tool := range tools {
		why, excused := officeWithoutRule[tool]
		require.True(t, ruled[tool] != excused, "%s: a rule, or a reason for none (and not both): %q", tool, why)
		why, excused = officeWithoutSentence[tool]
		_, said := officeSentences[tool]
		require.True(t, said != excused, "%s: a sentence, or a reason for none (and not both): %q", tool, why)
	}
	for _, excused := range []map[string]string{officeWithoutRule, officeWithoutSentence} {
		for tool := range excused {
			require.Contains(t, tools, tool, "a reason for a tool that is not the office's")
		}
	}
}

const officeID = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"

// officeContext carries the ids a run's context may give the office's tools (what a call is about).
var officeContext = map[string]any{"lead_id": officeID, "entity_id": officeID, "event_id": officeID}

// officePlanner plans with the office's rules alone, against the packs' registry, in UTC.
func officePlanner(t *testing.T) (*planner.RulesPlanner, *registry.Registry) {
	t.Helper()
	raw, err := packs.Registry()
	require.NoError(t, err)
	reg, err := registry.Parse(raw)
	require.NoError(t, err)
	p, err := planner.NewRulesPlanner(reg, officeRules, time.UTC, "")
	require.NoError(t, err)
	require.Len(t, p.EnabledRules(), len(officeRules), "every rule's tool is in the registry")
	return p, reg
}

// TestOfficeRuleExamplesPlanValidInputs: every example an office rule shows plans one call to its tool,
// with an input the tool's registry entry accepts once the run's context is merged in — the typed inputs
// marshal to the contract.
func TestOfficeRuleExamplesPlanValidInputs(t *testing.T) {
	p, reg := officePlanner(t)
	now := time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC)
	for _, r := range officeRules {
		require.NotEmpty(t, r.Examples, r.Name)
		for _, ex := range r.Examples {
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: ex, Now: now})
			require.NoError(t, err, "%s: %q", r.Name, ex)
			require.Len(t, plan.Calls, 1, "%s: %q", r.Name, ex)
			require.Equal(t, r.Tool, plan.Calls[0].Tool, "%s: %q", r.Name, ex)
			calls := []brain.PlannedCall{plan.Calls[0]}
			require.Empty(t, brain.PrepareCalls(reg, calls, officeContext), "%s: %q: %s", r.Name, ex, calls[0].Input)
		}
	}
}

// TestOfficeRulesLeaveUnknownsOut: what a message does not say is left out of the input (the run's context
// or the tool's default supplies it), never sent as an empty value; times are whole seconds, as before.
func TestOfficeRulesLeaveUnknownsOut(t *testing.T) {
	p, _ := officePlanner(t)
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
