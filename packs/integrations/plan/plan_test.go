package integrationsplan_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/packs"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationsplan "github.com/gemhq/gem/packs/integrations/plan"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// withoutSentence are the pack's tools whose answer is the generic one ("<tool> succeeded" with the receipt's
// summary), and why. Every tool of the pack has a rule.
var withoutSentence = map[string]string{
	integrationspack.DriveSearch:             "not yet: the summary lists the files found (result.files)",
	integrationspack.PhotosImportLinks:       "not yet: the summary gives the sources recorded (result.source_ids)",
	integrationspack.AnalyticsPullSummary:    "not yet: the summary carries the numbers (result.summary)",
	integrationspack.AdsPullSummary:          "not yet: the summary carries the numbers (result.summary)",
	integrationspack.SMSProviderHealth:       "the summary says the provider's status (result.status)",
	integrationspack.EmailProviderHealth:     "the summary says the provider's status (result.status)",
	integrationspack.HighLevelHealthCheck:    "the summary says the status, the location and the checks",
	integrationspack.HighLevelSyncContacts:   "not yet: the summary gives the status, the counts and the next cursor",
	integrationspack.HighLevelSyncInspection: "not yet: the summary gives the status, the note and whether the stage moved",
	integrationspack.HighLevelSyncQuote:      "not yet: the summary gives the status, the note and whether a task was made",
	integrationspack.HighLevelUpdateStage:    "not yet: the summary gives the status and the new stage",
	integrationspack.HighLevelProcessQueue:   "not yet: the summary counts what was processed and what succeeded",
}

// TestEveryToolIsPlannedAndSaid: each of the pack's tools has a rule and a sentence, or says why not; the
// pack's rules and sentences name only its own tools.
func TestEveryToolIsPlannedAndSaid(t *testing.T) {
	ruled := map[string]bool{}
	for _, r := range integrationsplan.Rules {
		require.Contains(t, integrationspack.Tools, r.Tool, "rule %s names a tool of another pack", r.Name)
		ruled[r.Tool] = true
	}
	for tool := range integrationsplan.Sentences {
		require.Contains(t, integrationspack.Tools, tool, "a sentence for a tool of another pack")
	}
	for _, tool := range integrationspack.Tools {
		require.True(t, ruled[tool], "%s has no rule", tool)
		why, excused := withoutSentence[tool]
		_, said := integrationsplan.Sentences[tool]
		require.True(t, said != excused, "%s: a sentence, or a reason for none (and not both): %q", tool, why)
	}
}

func packRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	raw, err := packs.Registry()
	require.NoError(t, err)
	reg, err := registry.Parse(raw)
	require.NoError(t, err)
	return reg
}

// sydney is the zone the rules read dates in here: a day's midnight has an offset.
var sydney = time.FixedZone("AEDT", 11*3600)

// now is Wednesday 18 November 2026, 09:00 in Sydney.
var now = time.Date(2026, 11, 18, 9, 0, 0, 0, sydney)

func rulesPlanner(t *testing.T) (*planner.RulesPlanner, *registry.Registry) {
	t.Helper()
	reg := packRegistry(t)
	p, err := planner.NewRulesPlanner(reg, integrationsplan.Rules, sydney, "")
	require.NoError(t, err)
	require.Len(t, p.EnabledRules(), len(integrationsplan.Rules), "every rule's tool is in the registry")
	return p, reg
}

// TestRuleExamplesPlanValidInputs: every example a rule shows plans one call to its tool, with an input the
// tool's registry entry accepts once the run's context gives the ids it leaves out — the typed inputs
// marshal to the contract.
func TestRuleExamplesPlanValidInputs(t *testing.T) {
	p, reg := rulesPlanner(t)
	const ctxID = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"
	for _, r := range integrationsplan.Rules {
		require.NotEmpty(t, r.Examples, r.Name)
		for _, ex := range r.Examples {
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: ex, Now: now})
			require.NoError(t, err, "%s: %q", r.Name, ex)
			require.Len(t, plan.Calls, 1, "%s: %q", r.Name, ex)
			require.Equal(t, r.Tool, plan.Calls[0].Tool, "%s: %q", r.Name, ex)
			require.Empty(t, brain.PrepareCalls(reg, plan.Calls, map[string]any{"quote_id": ctxID, "inspection_id": ctxID}),
				"%s: %q: %s", r.Name, ex, plan.Calls[0].Input)
		}
	}
}

// TestRulesPlan: what the rules make of messages, as JSON — times to the second, unknowns left out, the
// words mapped to the tools' enums — and what they ask for or refuse.
func TestRulesPlan(t *testing.T) {
	p, _ := rulesPlanner(t)
	const quote = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"
	for _, tt := range []struct{ message, tool, input string }{
		{"check ghl", integrationspack.HighLevelHealthCheck, `{}`},
		{"sync highlevel contacts since 2026-11-01T08:30:00.75+11:00 as a dry run", integrationspack.HighLevelSyncContacts,
			`{"since": "2026-11-01T08:30:00+11:00", "dry_run": true}`},
		{"preview ghl contacts since 2026-11-1", integrationspack.HighLevelSyncContacts, `{"since": "2026-11-01T00:00:00+11:00", "dry_run": true}`},
		{"retry the lead connector queue", integrationspack.HighLevelProcessQueue, `{}`},
		{"push quote " + quote + " to ghl contact c-7", integrationspack.HighLevelSyncQuote, `{"quote_id": "` + quote + `", "highlevel_contact_id": "c-7"}`},
		{"send the inspection to highlevel contact c-8", integrationspack.HighLevelSyncInspection, `{"highlevel_contact_id": "c-8"}`},
		{"set the ghl opportunity c-9 to inspection scheduled", integrationspack.HighLevelUpdateStage,
			`{"highlevel_contact_id": "c-9", "stage": "inspection_scheduled"}`},
		{"sms status", integrationspack.SMSProviderHealth, `{}`},
		{"is the e-mail provider configured?", integrationspack.EmailProviderHealth, `{}`},
		{"look through our drive for the Smith quote", integrationspack.DriveSearch, `{"query": "the Smith quote"}`},
		{"import google photos links: https://photos.app.goo.gl/a, https://photos.app.goo.gl/b", integrationspack.PhotosImportLinks,
			`{"links": ["https://photos.app.goo.gl/a", "https://photos.app.goo.gl/b"]}`},
		{"show the website analytics this month", integrationspack.AnalyticsPullSummary, `{"from": "2026-11-01", "to": "2026-11-30"}`},
		{"how did the instagram ads do last month", integrationspack.AdsPullSummary, `{"channel": "meta", "from": "2026-10-01", "to": "2026-10-31"}`},
		{"get the google ads summary", integrationspack.AdsPullSummary, `{"channel": "google_ads", "from": "2026-10-19", "to": "2026-11-18"}`},
	} {
		plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
		require.NoError(t, err, tt.message)
		require.Len(t, plan.Calls, 1, "%s: %+v", tt.message, plan)
		require.Equal(t, tt.tool, plan.Calls[0].Tool, tt.message)
		require.JSONEq(t, tt.input, string(plan.Calls[0].Input), tt.message)
	}

	// Asked: the contact a sync goes to, a since that is no time. Refused: a stage the tool does not take.
	for message, field := range map[string]string{
		"sync the quote to highlevel":                              "highlevel_contact_id",
		"sync highlevel contacts since 2026-02-30":                 "since",
		"sync highlevel contacts since 2026-01-01T25:00:00+11:00":  "since",
		"move highlevel contact hl-1 to somewhere else altogether": "",
	} {
		_, err := p.Plan(context.Background(), brain.PlanRequest{Message: message, Now: now})
		var be *brain.Error
		require.True(t, errors.As(err, &be), "%s: %v", message, err)
		require.Equal(t, brain.EINVALID, be.Code, message)
		details, _ := be.Details.(map[string]any)
		missing, _ := details["missing"].([]map[string]string)
		if field == "" {
			require.Empty(t, missing, message)
			require.Contains(t, be.Message, "inspection_scheduled", "%s: the stages it takes", message)
			continue
		}
		require.Len(t, missing, 1, "%s: %v", message, be.Details)
		require.Equal(t, field, missing[0]["field"], message)
	}
	// Words after a sync that are not a since or a dry run are not this rule's.
	plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: "sync highlevel contacts for the Smiths", Now: now})
	require.NoError(t, err)
	require.Empty(t, plan.Calls)
}
