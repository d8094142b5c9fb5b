package integrationsplan_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/highlevel"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationsplan "github.com/gemhq/gem/packs/integrations/plan"
	"github.com/gemhq/gem/packs/internal/plantest"
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
	plantest.EveryToolIsPlannedAndSaid(t, integrationspack.Tools, integrationsplan.Rules, integrationsplan.Sentences, nil, withoutSentence)
}

// sydney is the zone the rules read dates in here: a day's midnight has an offset.
var sydney = time.FixedZone("AEDT", 11*3600)

// now is Wednesday 18 November 2026, 09:00 in Sydney.
var now = time.Date(2026, 11, 18, 9, 0, 0, 0, sydney)

// TestRuleExamplesPlanValidInputs: every example a rule shows plans one call to its tool, with an input the
// tool's registry entry accepts once the run's context gives the ids it leaves out — the typed inputs
// marshal to the contract.
func TestRuleExamplesPlanValidInputs(t *testing.T) {
	const ctxID = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"
	plantest.ExamplesPlanValidInputs(t, integrationsplan.Rules, sydney, now, map[string]any{"quote_id": ctxID, "inspection_id": ctxID})
}

// TestRulesPlan: what the rules make of messages, as JSON — times to the second, unknowns left out, the
// words mapped to the tools' enums — and what they ask for or refuse.
func TestRulesPlan(t *testing.T) {
	p, _ := plantest.Planner(t, integrationsplan.Rules, sydney)
	const quote = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"
	plantest.PlansAs(t, p, now, []plantest.Case{
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
	})

	// Asked: the contact a sync goes to, a since that is no time, a stage the tool does not take (with the
	// stages it takes).
	for message, field := range map[string]string{
		"sync the quote to highlevel":                              "highlevel_contact_id",
		"sync highlevel contacts since 2026-02-30":                 "since",
		"sync highlevel contacts since 2026-01-01T25:00:00+11:00":  "since",
		"move highlevel contact hl-1 to somewhere else altogether": "stage",
	} {
		asked, said := plantest.Refused(t, p, now, message)
		require.Equal(t, field, asked, message)
		if field == "stage" {
			require.Contains(t, said, "inspection_scheduled", "%s: the stages it takes", message)
		}
	}
	// Words after a sync that are not a since or a dry run are not this rule's.
	plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: "sync highlevel contacts for the Smiths", Now: now})
	require.NoError(t, err)
	require.Empty(t, plan.Calls)
}

// records are a business's leads as a HighLevel event names them, for the planning's tests: the brain's
// webhook finds them in PostgreSQL (brain/cmd/brain's TestHighLevelWebhook follows events there end to end).
type records struct {
	byContact map[string]string // HighLevel contact → lead
	byPhone   map[string]string // phone number as typed → lead
	entities  map[string]string // lead → entity
	err       error
}

func (r records) Lead(_ context.Context, contactID, phone string) (string, error) {
	if r.err != nil {
		return "", r.err
	}
	if lead := r.byContact[contactID]; lead != "" {
		return lead, nil
	}
	return r.byPhone[phone], nil
}

func (r records) LeadEntity(_ context.Context, lead string) (string, error) {
	return r.entities[lead], r.err
}

// TestHighLevelPlansEvents: which call each HighLevel event makes, with what input (valid against the tool's
// registry entry), or why it makes none.
func TestHighLevelPlansEvents(t *testing.T) {
	const lead, entity = "0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f", "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"
	known := records{byContact: map[string]string{"c-lead": lead}, byPhone: map[string]string{"0412 345 678": lead},
		entities: map[string]string{lead: entity}}
	noEntity := records{byContact: known.byContact, byPhone: known.byPhone}
	h := integrationsplan.HighLevel{Pipeline: integrationspack.HighLevelPipeline{ID: "pipe1",
		StageByID: map[string]string{"stage-q": "quoted", "stage-i": "inspected"}}}
	reg := plantest.Registry(t)
	for _, tool := range h.Tools() {
		_, ok := reg.Tool(tool)
		require.True(t, ok, "%s is not in the registry", tool)
	}

	for _, tt := range []struct {
		name    string
		event   string
		records records
		tool    string
		input   string // the call's input, or (no tool) the reason
	}{
		{"a new contact is a lead", `{"type": "ContactCreate", "id": "c-new", "firstName": "Kim", "lastName": "Nguyen", "phone": " 0400 000 001 ", "email": "kim@example.com"}`,
			known, "leads.create", `{"name": "Kim Nguyen", "phone": "0400 000 001", "suburb": "not given", "email": "kim@example.com", "source": "other", "notes": "From HighLevel contact c-new"}`},
		{"a contact without a name goes by its company", `{"type": "ContactCreate", "id": "c-co", "companyName": "Acme Roofing", "phone": "0400 000 002", "city": "Newtown"}`,
			known, "leads.create", `{"name": "Acme Roofing", "phone": "0400 000 002", "suburb": "Newtown", "source": "other", "notes": "From HighLevel contact c-co"}`},
		{"a contact without a phone is no lead", `{"type": "ContactCreate", "id": "c-nophone", "firstName": "Kim"}`,
			known, "", "contact c-nophone has no phone number, which a GEM lead needs"},
		{"a contact that is a lead already", `{"type": "ContactCreate", "id": "c-other", "phone": "0412 345 678"}`,
			known, "", "contact c-other is already lead " + lead},
		{"a lead's contact updated patches its entity", `{"type": "ContactUpdate", "id": "c-lead", "name": " Kim Tran ", "email": "kt@example.com", "city": "Enmore", "postalCode": "2042"}`,
			known, "entity.update", `{"entity_id": "` + entity + `", "patch": {"name": "Kim Tran", "contact": {"email": "kt@example.com", "suburb": "Enmore", "postcode": "2042"}}}`},
		{"an update with no contact fields patches the name", `{"type": "ContactUpdate", "id": "c-lead", "email": " "}`,
			known, "entity.update", `{"entity_id": "` + entity + `", "patch": {"name": "HighLevel contact c-lead"}}`},
		{"a lead without an entity", `{"type": "ContactUpdate", "id": "c-lead", "firstName": "Kim"}`,
			noEntity, "", "lead " + lead + " has no entity to update; integrations.highlevel.sync_contacts brings the lead up to date"},
		{"an appointment is an event of the lead", `{"type": "AppointmentCreate", "appointment": {"id": "a1", "contactId": "c-lead", "title": "Roof inspection", "startTime": "2030-03-15T10:00:00.5+11:00", "endTime": "2030-03-15T11:30:00+11:00", "address": " 12 Smith St "}}`,
			known, "calendar.create_event", `{"title": "Roof inspection", "start_at": "2030-03-15T10:00:00+11:00", "end_at": "2030-03-15T11:30:00+11:00", "location": "12 Smith St", "context_ref": {"type": "lead", "id": "` + lead + `"}}`},
		{"a flat appointment that ends before it starts lasts an hour", `{"type": "AppointmentCreate", "id": "a2", "contactId": "c-stranger", "startTime": "2030-03-15 10:00:00", "endTime": "2030-03-15 09:00:00"}`,
			known, "calendar.create_event", `{"title": "HighLevel appointment", "start_at": "2030-03-15T10:00:00Z", "end_at": "2030-03-15T11:00:00Z"}`},
		{"an appointment without a readable start", `{"type": "AppointmentCreate", "id": "a3", "startTime": "soon"}`,
			known, "", `appointment a3 has no start time GEM can read ("soon")`},
		{"a stage move in the pipeline moves the lead", `{"type": "OpportunityStageUpdate", "id": "o1", "contactId": "c-lead", "pipelineId": "pipe1", "pipelineStageId": "stage-q", "name": "Kim roof"}`,
			known, "leads.update_stage", `{"lead_id": "` + lead + `", "stage": "quoted", "notes": "Moved in HighLevel (opportunity Kim roof)"}`},
		{"a stage move in another pipeline", `{"type": "OpportunityStageUpdate", "contactId": "c-lead", "pipelineId": "other", "pipelineStageId": "stage-q"}`,
			known, "", "the opportunity is in pipeline other, not the one GEM follows (GEM_HIGHLEVEL_PIPELINE_ID)"},
		{"a stage mapped to no GEM stage", `{"type": "OpportunityStageUpdate", "contactId": "c-lead", "pipelineId": "pipe1", "pipelineStageId": "stage-x"}`,
			known, "", "pipeline stage stage-x maps to no GEM stage (GEM_HIGHLEVEL_STAGE_IDS)"},
		{"a GEM stage leads do not take", `{"type": "OpportunityStageUpdate", "contactId": "c-lead", "pipelineId": "pipe1", "pipelineStageId": "stage-i"}`,
			known, "", "GEM stage inspected is not one leads.update_stage takes"},
		{"a stage move of a contact that is no lead", `{"type": "OpportunityStageUpdate", "contactId": "c-stranger", "pipelineId": "pipe1", "pipelineStageId": "stage-q"}`,
			known, "", "contact c-stranger is no GEM lead"},
		{"a task of the lead, due to the second", `{"type": "TaskCreate", "id": "t1", "contactId": "c-lead", "title": " Call Kim back ", "body": " About the quote ", "dueDate": "2030-11-26T12:41:02.193Z"}`,
			known, "os.create_task", `{"title": "Call Kim back", "domain": "business", "description": "About the quote", "due_at": "2030-11-26T12:41:02Z", "context_ref": {"type": "lead", "id": "` + lead + `"}}`},
		{"a task of no lead, with no body or due date", `{"type": "TaskCreate", "id": "t2", "title": "Order tiles", "dueDate": "whenever"}`,
			known, "os.create_task", `{"title": "Order tiles", "domain": "business"}`},
		{"a task without a title", `{"type": "TaskCreate", "id": "t3", "title": " "}`, known, "", "task t3 has no title"},
		{"a note of the lead", `{"type": "NoteCreate", "id": "n1", "contactId": "c-lead", "body": "Wants a quote for the whole roof.\nCall after 3pm."}`,
			known, "os.create_note", `{"domain": "business", "title": "HighLevel note: Wants a quote for the whole roof.", "content": "Wants a quote for the whole roof.\nCall after 3pm.", "entity_refs": [{"type": "lead", "id": "` + lead + `"}]}`},
		{"an empty note", `{"type": "NoteCreate", "id": "n2", "body": "\n"}`, known, "", "note n2 is empty"},
		{"an event GEM does not act on", `{"type": "InboundMessage", "body": "hi"}`, known, "", "GEM does not act on InboundMessage events"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ev highlevel.Event
			require.NoError(t, json.Unmarshal([]byte(tt.event), &ev))
			call, err := h.Plan(context.Background(), ev, tt.records)
			require.NoError(t, err)
			require.Equal(t, tt.tool, call.Tool)
			if tt.tool == "" {
				require.Equal(t, tt.input, call.Reason)
				require.Nil(t, call.Input)
				return
			}
			require.Empty(t, call.Reason)
			require.True(t, slices.Contains(h.Tools(), call.Tool), "%s is not one of the planner's Tools", call.Tool)
			raw, err := json.Marshal(call.Input)
			require.NoError(t, err)
			require.JSONEq(t, tt.input, string(raw))
			tool, _ := reg.Tool(call.Tool)
			require.NoError(t, tool.ValidateInput(raw), "%s", raw)
		})
	}

	// A record that cannot be looked up fails the planning (the webhook answers 503 and HighLevel delivers again).
	down := errors.New("the database is away")
	for _, event := range []string{`{"type": "ContactCreate", "id": "c", "phone": "0400 000 003"}`, `{"type": "NoteCreate", "contactId": "c", "body": "x"}`,
		`{"type": "OpportunityStageUpdate", "contactId": "c", "pipelineId": "pipe1", "pipelineStageId": "stage-q"}`} {
		var ev highlevel.Event
		require.NoError(t, json.Unmarshal([]byte(event), &ev))
		_, err := h.Plan(context.Background(), ev, records{err: down})
		require.ErrorIs(t, err, down, event)
	}
}
