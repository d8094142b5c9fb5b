package planner_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/packs/plans"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// The rules are tested against GEM's contracts: GEM's registry (with the repository's own tools added), so
// every planned input is one GEM itself would accept, whatever state the repository's registry is in.

const id = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"

// now is Wednesday 18 November 2026, 09:00 in Sydney.
var now = time.Date(2026, 11, 18, 9, 0, 0, 0, time.FixedZone("AEDT", 11*3600))

// fullContext carries every id a client might, so inputs that take their ids from the context validate.
var fullContext = map[string]any{"lead_id": id, "inspection_id": id, "quote_id": id, "job_id": id, "invoice_id": id,
	"entity_id": id, "event_id": id, "asset_id": id, "task_id": id, "call_id": id}

// gemRegistry is parsed once: every test plans against the same contracts.
var gemRegistry = sync.OnceValues(testenv.GEMContractRegistry)

func gemPlanner(t *testing.T) (*planner.RulesPlanner, *registry.Registry) {
	t.Helper()
	reg, err := gemRegistry()
	require.NoError(t, err)
	loc, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	p, err := planner.NewRulesPlanner(reg, plans.Rules, loc, "")
	require.NoError(t, err)
	return p, reg
}

type planCase struct {
	message string
	tool    string
	input   map[string]any
}

// checkPlans plans each message: one call to the tool with exactly the input, valid against the tool's
// contract once the run's context is merged in.
func checkPlans(t *testing.T, cases []planCase) {
	t.Helper()
	p, reg := gemPlanner(t)
	for _, tt := range cases {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			// A case whose tool is gone (renamed, dropped) fails: it would otherwise test nothing.
			_, ok := reg.Tool(tt.tool)
			require.True(t, ok, "%s is not in the registry", tt.tool)
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
			require.NoError(t, err)
			require.Empty(t, plan.Answer, "a request, not a question")
			require.Len(t, plan.Calls, 1, "%+v", plan)
			require.Equal(t, tt.tool, plan.Calls[0].Tool)
			var in map[string]any
			require.NoError(t, json.Unmarshal(plan.Calls[0].Input, &in))
			require.Equal(t, tt.input, in)
			calls := []brain.PlannedCall{plan.Calls[0]}
			errs := brain.PrepareCalls(reg, calls, fullContext)
			require.Empty(t, errs, "%s", calls[0].Input)
		})
	}
}

// TestRulesGEMPhrasings: every phrasing GEM's own rules planner understood is understood here, with inputs
// in GEM's contract.
func TestRulesGEMPhrasings(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"status", "os.health_check", map[string]any{}},
		{"system status", "os.health_check", map[string]any{}},
		{"health check", "os.health_check", map[string]any{}},
		{"check system status", "os.health_check", map[string]any{}},
		{"check status", "os.health_check", map[string]any{}},
		{"how's the system", "os.health_check", map[string]any{}},
		{"how is the system", "os.health_check", map[string]any{}},
		{"create note: gutter colours for the Baker job", "os.create_note", map[string]any{"domain": "business", "title": "Gutter colours for the Baker job", "content": "gutter colours for the Baker job"}},
		{"new note - call the council about the permit", "os.create_note", map[string]any{"domain": "business", "title": "Call the council about the permit", "content": "call the council about the permit"}},
		{"note: personal - renew the rego", "os.create_note", map[string]any{"domain": "personal", "title": "Personal - renew the rego", "content": "personal - renew the rego"}},
		{"add note home wifi password is on the fridge", "os.create_note", map[string]any{"domain": "personal", "title": "Home wifi password is on the fridge", "content": "home wifi password is on the fridge"}},
		{"create task: call the client", "os.create_task", map[string]any{"title": "call the client", "domain": "business", "priority": "normal"}},
		{"add task order more ridge caps", "os.create_task", map[string]any{"title": "order more ridge caps", "domain": "business", "priority": "normal"}},
		{"task: chase the Smith invoice asap", "os.create_task", map[string]any{"title": "chase the Smith invoice", "domain": "business", "priority": "high"}},
		{"todo book the car service, low priority", "os.create_task", map[string]any{"title": "book the car service", "domain": "business", "priority": "low"}},
		{"todo: fix the home gate when you can", "os.create_task", map[string]any{"title": "fix the home gate", "domain": "personal", "priority": "low"}},
		{"remind me to call the supplier", "os.create_task", map[string]any{"title": "call the supplier", "domain": "business", "priority": "normal"}},
		{"complete task " + id, "os.complete_task", map[string]any{"task_id": id}},
		{"mark task " + id + " as done", "os.complete_task", map[string]any{"task_id": id}},
		{"mark task " + id + " finished", "os.complete_task", map[string]any{"task_id": id}},
		{"finish task " + id, "os.complete_task", map[string]any{"task_id": id}},
		{"list tasks", "os.list_tasks", map[string]any{"status": "open"}},
		// GEM's list_tasks has no priority filter: an urgent word is not sent to it.
		{"list urgent tasks", "os.list_tasks", map[string]any{"status": "open"}},
		{"show my tasks", "os.list_tasks", map[string]any{"status": "open"}},
		{"what's my tasks", "os.list_tasks", map[string]any{"status": "open"}},
		{"what are my tasks", "os.list_tasks", map[string]any{"status": "open"}},
		{"tasks", "os.list_tasks", map[string]any{"status": "open"}},
		{"new lead: John Smith 0400123456 in Sydney", "leads.create", map[string]any{"name": "John Smith", "phone": "0400123456", "suburb": "Sydney"}},
		{"create lead Mary Jones 0400 123 456 in Parramatta", "leads.create", map[string]any{"name": "Mary Jones", "phone": "0400 123 456", "suburb": "Parramatta"}},
		{"add lead - Sam Lee 02 9555 1234 suburb: Glebe", "leads.create", map[string]any{"name": "Sam Lee", "phone": "02 9555 1234", "suburb": "Glebe"}},
		{"lead from Priya Nair 0433222111 in Ashfield", "leads.create", map[string]any{"name": "Priya Nair", "phone": "0433222111", "suburb": "Ashfield"}},
		{"calculate totals for " + id, "quote.calculate_totals", map[string]any{"quote_id": id}},
		{"calculate quote totals " + id, "quote.calculate_totals", map[string]any{"quote_id": id}},
		{"calculate total " + id, "quote.calculate_totals", map[string]any{"quote_id": id}},
		{"update quote " + id + " totals", "quote.calculate_totals", map[string]any{"quote_id": id}},
		{"recalculate quote " + id + " totals", "quote.calculate_totals", map[string]any{"quote_id": id}},
		{"search notes for asbestos", "os.search_notes", map[string]any{"query": "asbestos"}},
		{"find notes about gutters", "os.search_notes", map[string]any{"query": "gutters"}},
		{"find note containing skylight", "os.search_notes", map[string]any{"query": "skylight"}},
		{"notes about the Baker job", "os.search_notes", map[string]any{"query": "the Baker job"}},
		{"notes for Penrith", "os.search_notes", map[string]any{"query": "Penrith"}},
		{"list leads", "leads.list_by_stage", map[string]any{}},
		{"show my leads", "leads.list_by_stage", map[string]any{}},
		{"leads", "leads.list_by_stage", map[string]any{}},
		{"list leads in contacted stage", "leads.list_by_stage", map[string]any{"stage": "contacted"}},
		{"show leads quoted", "leads.list_by_stage", map[string]any{"stage": "quoted"}},
		{"list lead new", "leads.list_by_stage", map[string]any{"stage": "new"}},
		{"highlevel status", "integrations.highlevel.health_check", map[string]any{}},
		{"check highlevel health", "integrations.highlevel.health_check", map[string]any{}},
		{"highlevel health check", "integrations.highlevel.health_check", map[string]any{}},
		{"ghl status", "integrations.highlevel.health_check", map[string]any{}},
		{"leadconnector health check", "integrations.highlevel.health_check", map[string]any{}},
		{"check ghl status", "integrations.highlevel.health_check", map[string]any{}},
		{"is highlevel connected", "integrations.highlevel.health_check", map[string]any{}},
		{"sync highlevel contacts", "integrations.highlevel.sync_contacts", map[string]any{}},
		{"highlevel contact sync", "integrations.highlevel.sync_contacts", map[string]any{}},
		{"sync ghl contacts", "integrations.highlevel.sync_contacts", map[string]any{}},
		{"leadconnector contact sync", "integrations.highlevel.sync_contacts", map[string]any{}},
		{"pull contacts from highlevel", "integrations.highlevel.sync_contacts", map[string]any{}},
		{"import ghl contacts", "integrations.highlevel.sync_contacts", map[string]any{}},
		{"sync highlevel contacts since 2026-01-01", "integrations.highlevel.sync_contacts", map[string]any{"since": "2026-01-01T00:00:00+11:00"}},
		{"sync ghl contacts since 2026-01-01T08:30:00Z", "integrations.highlevel.sync_contacts", map[string]any{"since": "2026-01-01T08:30:00Z"}},
		{"highlevel contacts since 2026-03-01", "integrations.highlevel.sync_contacts", map[string]any{"since": "2026-03-01T00:00:00+11:00"}},
		{"sync highlevel contacts dry run", "integrations.highlevel.sync_contacts", map[string]any{"dry_run": true}},
		{"dry run highlevel contact sync", "integrations.highlevel.sync_contacts", map[string]any{"dry_run": true}},
		{"test highlevel contact sync", "integrations.highlevel.sync_contacts", map[string]any{"dry_run": true}},
		{"preview highlevel contact sync", "integrations.highlevel.sync_contacts", map[string]any{"dry_run": true}},
		{"sync highlevel contacts since 2026-01-01 dry run", "integrations.highlevel.sync_contacts", map[string]any{"since": "2026-01-01T00:00:00+11:00", "dry_run": true}},
		{"sync highlevel contacts dry run since 2026-01-01", "integrations.highlevel.sync_contacts", map[string]any{"since": "2026-01-01T00:00:00+11:00", "dry_run": true}},
	})
}

func TestRulesOS(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"are you up?", "os.health_check", map[string]any{}},
		{"create a task to call John", "os.create_task", map[string]any{"title": "call John", "domain": "business", "priority": "normal"}},
		{"Create an urgent task to fix the Smith leak", "os.create_task", map[string]any{"title": "fix the Smith leak", "domain": "business", "priority": "high"}},
		{"create a task to send the quote, low priority", "os.create_task", map[string]any{"title": "send the quote", "domain": "business", "priority": "low"}},
		{"create a task to book scaffolding, it's important", "os.create_task", map[string]any{"title": "book scaffolding", "domain": "business", "priority": "high"}},
		{"create a task to call John tomorrow", "os.create_task", map[string]any{"title": "call John", "domain": "business", "priority": "normal", "due_at": "2026-11-19T17:00:00+11:00"}},
		{"todo: measure the Baker roof by friday", "os.create_task", map[string]any{"title": "measure the Baker roof", "domain": "business", "priority": "normal", "due_at": "2026-11-20T17:00:00+11:00"}},
		{"create a personal task to book the dentist", "os.create_task", map[string]any{"title": "book the dentist", "domain": "personal", "priority": "normal"}},
		{"create task: pick up the kids' bikes, personal", "os.create_task", map[string]any{"title": "pick up the kids' bikes", "domain": "personal", "priority": "normal"}},
		{"create a task to pay the supplier on 2026-12-01", "os.create_task", map[string]any{"title": "pay the supplier", "domain": "business", "priority": "normal", "due_at": "2026-12-01T17:00:00+11:00"}},
		{"remind me to call Ann tomorrow at 3pm", "os.create_reminder", map[string]any{"title": "call Ann", "remind_at": "2026-11-19T15:00:00+11:00", "domain": "business"}},
		{"remind me to pay the supplier on 2026-12-01", "os.create_reminder", map[string]any{"title": "pay the supplier", "remind_at": "2026-12-01T09:00:00+11:00", "domain": "business"}},
		{"remind me to ring mum at 6pm", "os.create_reminder", map[string]any{"title": "ring mum", "remind_at": "2026-11-18T18:00:00+11:00", "domain": "personal"}},
		{"complete task 5B0F1C39-8C8F-4A35-9D0E-6B1F1B7F3A10: done on site", "os.complete_task", map[string]any{"task_id": id, "note": "done on site"}},
		{"show done tasks", "os.list_tasks", map[string]any{"status": "done"}},
		{"list all tasks", "os.list_tasks", map[string]any{"status": "all"}},
		{"list my personal tasks", "os.list_tasks", map[string]any{"status": "open", "domain": "personal"}},
		{"todo list", "os.list_tasks", map[string]any{"status": "open"}},
		{"defer task " + id + " to friday: waiting on parts", "os.defer_task", map[string]any{"task_id": id, "due_at": "2026-11-20T17:00:00+11:00", "reason": "waiting on parts"}},
		{"set task " + id + " priority to urgent", "os.update_task", map[string]any{"task_id": id, "patch": map[string]any{"priority": "high"}}},
		{"rename task " + id + " to call the Smiths", "os.update_task", map[string]any{"task_id": id, "patch": map[string]any{"title": "call the Smiths"}}},
		{"set task " + id + " due date to monday", "os.update_task", map[string]any{"task_id": id, "patch": map[string]any{"due_at": "2026-11-23T17:00:00+11:00"}}},
		{"note that the Smiths' gutters need replacing", "os.create_note", map[string]any{"domain": "business", "title": "The Smiths' gutters need replacing", "content": "the Smiths' gutters need replacing"}},
		{"remember that my wife's birthday is on the 3rd", "os.create_note", map[string]any{"domain": "personal", "title": "My wife's birthday is on the 3rd", "content": "my wife's birthday is on the 3rd"}},
		{"add a personal note: renew gym membership", "os.create_note", map[string]any{"domain": "personal", "title": "Renew gym membership", "content": "renew gym membership"}},
		{"search business notes for asbestos", "os.search_notes", map[string]any{"query": "asbestos", "domain": "business"}},
		{"what happened today?", "os.audit_log_search", map[string]any{"since": "2026-11-18T00:00:00+11:00"}},
		{"search the audit log for leads.create", "os.audit_log_search", map[string]any{"query": "leads.create"}},
		{"audit call " + id, "os.audit_log_search", map[string]any{"call_id": id}},
		{"how is the business going?", "os.get_state_snapshot", map[string]any{"domain": "business"}},
		{"show the personal snapshot", "os.get_state_snapshot", map[string]any{"domain": "personal"}},
		{"refresh the business snapshot", "os.refresh_state_snapshot", map[string]any{"domain": "business"}},
		{"undo call " + id, "os.rollback_last_action", map[string]any{"call_id": id}},
		// The time said before what to do, or after "about".
		{"remind me on thursday to send the Baker invoice", "os.create_reminder", map[string]any{"title": "send the Baker invoice", "remind_at": "2026-11-19T09:00:00+11:00", "domain": "business"}},
		{"remind me tomorrow at 3pm to call Ann", "os.create_reminder", map[string]any{"title": "call Ann", "remind_at": "2026-11-19T15:00:00+11:00", "domain": "business"}},
		{"remind me about the Smith quote on friday", "os.create_reminder", map[string]any{"title": "the Smith quote", "remind_at": "2026-11-20T09:00:00+11:00", "domain": "business"}},
		{"whats on my list", "os.list_tasks", map[string]any{"status": "open"}},
		{"what's on my plate?", "os.list_tasks", map[string]any{"status": "open"}},
		{"what is on my to-do list", "os.list_tasks", map[string]any{"status": "open"}},
		{"push task " + id + " back to monday, still waiting on the sheets", "os.defer_task", map[string]any{"task_id": id, "due_at": "2026-11-23T17:00:00+11:00", "reason": "still waiting on the sheets"}},
		{"move task " + id + " out to friday", "os.defer_task", map[string]any{"task_id": id, "due_at": "2026-11-20T17:00:00+11:00"}},
		{"bump the task to tomorrow: rain", "os.defer_task", map[string]any{"due_at": "2026-11-19T17:00:00+11:00", "reason": "rain"}},
		{"what did I write about the Smith gutters", "os.search_notes", map[string]any{"query": "the Smith gutters"}},
		{"did I note anything about asbestos?", "os.search_notes", map[string]any{"query": "asbestos"}},
		{"have I jotted down something on the Baker job", "os.search_notes", map[string]any{"query": "the Baker job"}},
		{"how's the business travelling", "os.get_state_snapshot", map[string]any{"domain": "business"}},
		{"how are things looking?", "os.get_state_snapshot", map[string]any{"domain": "both"}},
	})
}

func TestRulesLeads(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"new lead Ann Lee 0412 345 678 in Newtown from a referral", "leads.create", map[string]any{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown", "source": "referral"}},
		{"add lead: Jane Doe, 0400 111 222, Marrickville, facebook", "leads.create", map[string]any{"name": "Jane Doe", "phone": "0400 111 222", "suburb": "Marrickville", "source": "meta"}},
		{"new lead Bob Smith +61 2 9555 1234 bob@example.com in Surry Hills, found us on google", "leads.create",
			map[string]any{"name": "Bob Smith", "phone": "+61 2 9555 1234", "email": "bob@example.com", "suburb": "Surry Hills", "source": "gmb"}},
		{"record a lead named Mei Chen 0411222333 in Penrith via google ads", "leads.create", map[string]any{"name": "Mei Chen", "phone": "0411222333", "suburb": "Penrith", "source": "google_ads"}},
		{"new lead Tom Ford 0400 999 888 in glebe, repeat customer", "leads.create", map[string]any{"name": "Tom Ford", "phone": "0400 999 888", "suburb": "Glebe", "source": "repeat"}},
		{"new lead Kim Wu 0400 555 444 in Ryde, from our website", "leads.create", map[string]any{"name": "Kim Wu", "phone": "0400 555 444", "suburb": "Ryde", "source": "other", "notes": "Source: website"}},
		{"list new leads", "leads.list_by_stage", map[string]any{"stage": "new"}},
		{"show leads in inspection scheduled", "leads.list_by_stage", map[string]any{"stage": "inspection_scheduled"}},
		{"leads in Newtown", "leads.list_by_stage", map[string]any{"suburb": "Newtown"}},
		{"list leads from referrals", "leads.list_by_stage", map[string]any{"source": "referral"}},
		{"move lead " + id + " to quoted", "leads.update_stage", map[string]any{"lead_id": id, "stage": "quoted"}},
		{"move the lead to contacted", "leads.update_stage", map[string]any{"stage": "contacted"}},
		{"mark lead " + id + " lost: went with a competitor", "leads.mark_lost", map[string]any{"lead_id": id, "reason": "went with a competitor", "reason_code": "competitor"}},
		// The reason's words give its code: the cheaper competitor is lost on price.
		{"lead " + id + " is lost, they went with someone cheaper", "leads.mark_lost", map[string]any{"lead_id": id, "reason": "they went with someone cheaper", "reason_code": "price"}},
		{"mark the lead lost: never heard back", "leads.mark_lost", map[string]any{"reason": "never heard back", "reason_code": "no_response"}},
		{"mark the lead lost: not ready until next year", "leads.mark_lost", map[string]any{"reason": "not ready until next year", "reason_code": "timing"}},
		{"the lead is lost: out of our area", "leads.mark_lost", map[string]any{"reason": "out of our area", "reason_code": "not_a_fit"}},
		{"mark the lead lost: they moved house", "leads.mark_lost", map[string]any{"reason": "they moved house"}},
		{"the lead came from google ads", "leads.add_source", map[string]any{"source": "google_ads"}},
		{"add photos https://photos.app.goo.gl/a1 https://photos.app.goo.gl/b2 to the lead", "leads.add_photos_link",
			map[string]any{"links": []any{"https://photos.app.goo.gl/a1", "https://photos.app.goo.gl/b2"}}},
		{"schedule an inspection for lead " + id + " on friday at 10am", "leads.schedule_inspection",
			map[string]any{"lead_id": id, "preferred_window": map[string]any{"start": "2026-11-20T10:00:00+11:00", "end": "2026-11-20T11:00:00+11:00"}}},
		{"book an inspection at 2:30pm", "leads.schedule_inspection",
			map[string]any{"preferred_window": map[string]any{"start": "2026-11-18T14:30:00+11:00", "end": "2026-11-18T15:30:00+11:00"}}},
		{"schedule an inspection tomorrow", "leads.schedule_inspection",
			map[string]any{"preferred_window": map[string]any{"start": "2026-11-19T08:00:00+11:00", "end": "2026-11-19T17:00:00+11:00"}}},
	})
}

func TestRulesInspection(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"start an inspection for lead " + id, "inspection.create", map[string]any{"lead_id": id}},
		{"start an inspection at 12 Smith St, Newtown", "inspection.create", map[string]any{"site_address": "12 Smith St, Newtown"}},
		{"add measurement to inspection " + id + ": roof area 180 m2", "inspection.add_measurement", map[string]any{"inspection_id": id, "label": "roof area", "value": 180.0, "unit": "m2"}},
		{"add measurement: gutter length 42.5 metres", "inspection.add_measurement", map[string]any{"label": "gutter length", "value": 42.5, "unit": "m"}},
		{"add measurement: pitch 22 degrees", "inspection.add_measurement", map[string]any{"label": "roof pitch", "value": 22.0, "unit": "deg"}},
		{"record measurement: eave width 450 mm at the back", "inspection.add_measurement", map[string]any{"label": "eave width", "value": 450.0, "unit": "mm", "notes": "at the back"}},
		{"add a critical defect: rusted valley iron", "inspection.add_defect", map[string]any{"category": "valley", "severity": "high", "notes": "rusted valley iron"}},
		{"add a high defect to inspection " + id + ": cracked ridge capping", "inspection.add_defect", map[string]any{"inspection_id": id, "category": "ridge", "severity": "high", "notes": "cracked ridge capping"}},
		{"log defect: broken tiles over the garage", "inspection.add_defect", map[string]any{"category": "tile", "notes": "broken tiles over the garage"}},
		{"add a minor defect: leaking skylight", "inspection.add_defect", map[string]any{"category": "leak", "severity": "low", "notes": "leaking skylight"}},
		{"add defect: moss on the north side", "inspection.add_defect", map[string]any{"category": "other", "notes": "moss on the north side"}},
		// The severity said after the defect.
		{"log a defect: cracked tiles on the north face, high severity", "inspection.add_defect", map[string]any{"category": "tile", "severity": "high", "notes": "cracked tiles on the north face"}},
		{"add defect: rusted valley iron, severity: minor", "inspection.add_defect", map[string]any{"category": "valley", "severity": "low", "notes": "rusted valley iron"}},
		{"checklist: gutters pass", "inspection.add_checklist_item", map[string]any{"item_key": "gutters", "status": "pass"}},
		{"checklist item flashings fail: lifting at the chimney", "inspection.add_checklist_item", map[string]any{"item_key": "flashings", "status": "fail", "notes": "lifting at the chimney"}},
		{"checklist: solar panels n/a", "inspection.add_checklist_item", map[string]any{"item_key": "solar_panels", "status": "na"}},
		{"add photo gemfs://3f2a9c.jpg to the inspection labelled north face", "inspection.add_photo_ref", map[string]any{"file_ref": "gemfs://3f2a9c.jpg", "label": "north face"}},
		{"generate the scope summary", "inspection.generate_scope_summary", map[string]any{}},
		{"write the scope of works for the inspection as sections", "inspection.generate_scope_summary", map[string]any{"format": "sections"}},
		{"submit the inspection", "inspection.submit", map[string]any{}},
		{"lock inspection " + id, "inspection.lock", map[string]any{"inspection_id": id}},
	})
}

func TestRulesQuote(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"create a quote from inspection " + id, "quote.create_from_inspection", map[string]any{"inspection_id": id}},
		{"add line item: 12 x colorbond sheets at $85.50", "quote.add_line_item", map[string]any{"description": "colorbond sheets", "quantity": 12.0, "unit_price_cents": 8550.0}},
		{"add line item: labour, 16 hours at $95", "quote.add_line_item", map[string]any{"description": "labour", "quantity": 16.0, "unit": "hours", "unit_price_cents": 9500.0}},
		{"add item skip bin $450", "quote.add_line_item", map[string]any{"description": "skip bin", "quantity": 1.0, "unit_price_cents": 45000.0}},
		{"set the line items to: 12 x colorbond sheets at $85.50 and labour, 16 hours at $95", "quote.update_line_items", map[string]any{"line_items": []any{
			map[string]any{"description": "colorbond sheets", "quantity": 12.0, "unit_price_cents": 8550.0},
			map[string]any{"description": "labour", "quantity": 16.0, "unit": "hours", "unit_price_cents": 9500.0}}}},
		{"calculate totals for the quote", "quote.calculate_totals", map[string]any{}},
		{"generate the quote pdf", "quote.generate_pdf", map[string]any{}},
		{"send the quote to the client by email", "quote.send_to_client", map[string]any{"channel": "email"}},
		{"text the quote " + id, "quote.send_to_client", map[string]any{"quote_id": id, "channel": "sms"}},
		{"send the quote by email and sms", "quote.send_to_client", map[string]any{"channel": "both"}},
		{"mark quote " + id + " as sent", "quote.mark_sent", map[string]any{"quote_id": id}},
		{"the customer accepted the quote", "quote.mark_accepted", map[string]any{}},
		{"quote " + id + " was declined: too expensive", "quote.mark_declined", map[string]any{"quote_id": id, "reason": "too expensive"}},
		{"the client turned down the quote because they are selling", "quote.mark_declined", map[string]any{"reason": "they are selling"}},
	})
}

func TestRulesJob(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"create a job from quote " + id, "job.create_from_accepted_quote", map[string]any{"quote_id": id}},
		{"schedule the job for monday", "job.assign_dates", map[string]any{"start_date": "2026-11-23"}},
		{"schedule job " + id + " from 2026-12-01 to 2026-12-03", "job.assign_dates", map[string]any{"job_id": id, "start_date": "2026-12-01", "end_date": "2026-12-03"}},
		{"site notes: access through the side gate", "job.add_site_notes", map[string]any{"notes": "access through the side gate"}},
		{"progress update: old roof stripped", "job.add_progress_update", map[string]any{"summary": "old roof stripped"}},
		{"create the job card as a pdf", "job.create_job_card", map[string]any{"format": "pdf"}},
		{"generate a 10 year warranty certificate for the job", "job.generate_warranty_certificate", map[string]any{"warranty_term": "10 years"}},
		{"issue the warranty for job " + id + ", 7-year", "job.generate_warranty_certificate", map[string]any{"job_id": id, "warranty_term": "7 years"}},
		{"request a review by sms", "job.request_review", map[string]any{"channel": "sms"}},
		{"complete job " + id, "job.complete", map[string]any{"job_id": id}},
		{"mark job " + id + " as done", "job.complete", map[string]any{"job_id": id}},
		{"please mark the job completed.", "job.complete", map[string]any{}},
		// Said as news.
		{"job " + id + " is finished", "job.complete", map[string]any{"job_id": id}},
		{"the job is done!", "job.complete", map[string]any{}},
		{"we've wrapped up job " + id, "job.complete", map[string]any{"job_id": id}},
		// The client named first.
		{"ask the client on job " + id + " for a google review by text", "job.request_review", map[string]any{"job_id": id, "channel": "sms"}},
		{"ask the customer to leave us a review by email", "job.request_review", map[string]any{"channel": "email"}},
	})
}

func TestRulesInvoiceAndFinance(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"invoice the job", "invoice.create_from_job", map[string]any{}},
		{"invoice the job, due in 14 days", "invoice.create_from_job", map[string]any{"due_days": 14.0}},
		{"send the invoice by email", "invoice.send", map[string]any{"channel": "email"}},
		{"record a payment of $1,500.50 on invoice " + id + " by card", "invoice.add_payment", map[string]any{"invoice_id": id, "amount_cents": 150050.0, "method": "card"}},
		{"received payment of $200 by cheque", "invoice.add_payment", map[string]any{"amount_cents": 20000.0, "method": "other"}},
		{"record a payment of $80 on the invoice by bank transfer, ref INV-77", "invoice.add_payment", map[string]any{"amount_cents": 8000.0, "method": "bank_transfer", "reference": "INV-77"}},
		{"mark the invoice overdue", "invoice.mark_overdue", map[string]any{}},
		{"send a payment reminder sms to 0412 345 678: your invoice is now due", "invoice.send_reminder_sms", map[string]any{"to": "0412 345 678", "message": "your invoice is now due"}},
		{"send a payment reminder email to ann@example.com: your invoice is now due", "invoice.send_reminder_email",
			map[string]any{"to": "ann@example.com", "subject": "Payment reminder", "body": "your invoice is now due"}},
		{"which invoices are overdue?", "invoice.list_overdue", map[string]any{}},
		{"who still owes me money", "invoice.list_overdue", map[string]any{}},
		{"who hasn't paid yet?", "invoice.list_overdue", map[string]any{}},
		{"how's cash flow looking this month", "finance.generate_cashflow_snapshot", map[string]any{"from": "2026-11-01", "to": "2026-11-30"}},
		{"cash flow this month", "finance.generate_cashflow_snapshot", map[string]any{"from": "2026-11-01", "to": "2026-11-30"}},
		{"show the cash flow from 2026-07-01 to 2026-09-30", "finance.generate_cashflow_snapshot", map[string]any{"from": "2026-07-01", "to": "2026-09-30"}},
		{"cashflow", "finance.generate_cashflow_snapshot", map[string]any{}},
		{"profit and loss last month", "finance.generate_pnl_snapshot", map[string]any{"from": "2026-10-01", "to": "2026-10-31"}},
		{"p&l this financial year", "finance.generate_pnl_snapshot", map[string]any{"from": "2026-07-01", "to": "2027-06-30"}},
		{"what's the pnl for the last 90 days?", "finance.generate_pnl_snapshot", map[string]any{"from": "2026-08-20", "to": "2026-11-18"}},
		{"p and l year to date", "finance.generate_pnl_snapshot", map[string]any{"from": "2026-01-01", "to": "2026-11-18"}},
	})
}

func TestRulesCommsAndCalendar(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"log a call with " + id + ": no answer", "comms.log_call_outcome", map[string]any{"entity_id": id, "outcome": "no_answer"}},
		{"log call: left a message, will try Monday", "comms.log_call_outcome", map[string]any{"outcome": "left_message", "notes": "will try Monday"}},
		{"text 0412 345 678: running 10 minutes late", "comms.send_sms", map[string]any{"to": "0412 345 678", "message": "running 10 minutes late"}},
		{"email ann@example.com about Your roof quote: the quote is attached", "comms.send_email",
			map[string]any{"to": "ann@example.com", "subject": "Your roof quote", "body": "the quote is attached"}},
		{"draft a friendly sms to confirm the inspection time", "comms.compose_sms", map[string]any{"purpose": "confirm the inspection time", "tone": "friendly"}},
		{"write an email to follow up on the quote", "comms.compose_email", map[string]any{"purpose": "follow up on the quote"}},
		{"follow up with Ann about the quote on friday", "comms.create_followup_task_from_message",
			map[string]any{"title": "Follow up with Ann about the quote", "due_at": "2026-11-20T17:00:00+11:00"}},
		{"create a follow-up task to call back tomorrow", "comms.create_followup_task_from_message",
			map[string]any{"title": "Call back", "due_at": "2026-11-19T17:00:00+11:00"}},
		{"find a free slot of 2 hours tomorrow", "calendar.find_slots",
			map[string]any{"from": "2026-11-19T00:00:00+11:00", "to": "2026-11-20T00:00:00+11:00", "duration_minutes": 120.0}},
		{"when am I free next week?", "calendar.find_slots", map[string]any{"from": "2026-11-23T00:00:00+11:00", "to": "2026-11-30T00:00:00+11:00"}},
		{"book a meeting with the supplier on friday at 2pm for 2 hours at the depot", "calendar.create_event",
			map[string]any{"title": "Meeting with the supplier", "start_at": "2026-11-20T14:00:00+11:00", "end_at": "2026-11-20T16:00:00+11:00", "location": "the depot"}},
		{"add an appointment: dentist tomorrow at 9am", "calendar.create_event",
			map[string]any{"title": "Appointment dentist", "start_at": "2026-11-19T09:00:00+11:00", "end_at": "2026-11-19T10:00:00+11:00"}},
		// The kind of meeting said before it.
		{"book a site meeting with the builder on wednesday at 7am at 22 Ocean St Bondi", "calendar.create_event",
			map[string]any{"title": "Site meeting with the builder", "start_at": "2026-11-25T07:00:00+11:00", "end_at": "2026-11-25T08:00:00+11:00", "location": "22 Ocean St Bondi"}},
		{"schedule a phone call with Ann tomorrow at 2pm", "calendar.create_event",
			map[string]any{"title": "Phone call with Ann", "start_at": "2026-11-19T14:00:00+11:00", "end_at": "2026-11-19T15:00:00+11:00"}},
		{"put the Baker site visit in the calendar on monday at 7am", "calendar.create_event",
			map[string]any{"title": "The Baker site visit", "start_at": "2026-11-23T07:00:00+11:00", "end_at": "2026-11-23T08:00:00+11:00"}},
		{"move event " + id + " to friday at 3pm", "calendar.update_event", map[string]any{"event_id": id, "patch": map[string]any{"start_at": "2026-11-20T15:00:00+11:00"}}},
		{"cancel event " + id + ": client is away", "calendar.cancel_event", map[string]any{"event_id": id, "reason": "client is away"}},
		{"attach the job to event " + id, "calendar.attach_job_to_event", map[string]any{"event_id": id}},
		{"link job " + id + " to the event", "calendar.attach_job_to_event", map[string]any{"context_ref": map[string]any{"type": "job", "id": id}}},
	})
}

func TestRulesContactsPersonalIdentity(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"add a supplier named Roof Supplies Co 02 9555 1234 sales@roofsupplies.example", "entity.create",
			map[string]any{"entity_type": "supplier", "name": "Roof Supplies Co", "contact": map[string]any{"phone": "02 9555 1234", "email": "sales@roofsupplies.example"}}},
		{"new customer: Dana Fox", "entity.create", map[string]any{"entity_type": "client", "name": "Dana Fox"}},
		{"find supplier roof supplies", "entity.search", map[string]any{"query": "roof supplies", "entity_type": "supplier"}},
		{"search contacts for Nguyen", "entity.search", map[string]any{"query": "Nguyen"}},
		{"show contact " + id, "entity.get", map[string]any{"entity_id": id}},
		{"log a site visit with " + id + ": measured the back section", "entity.add_interaction",
			map[string]any{"entity_id": id, "interaction_type": "site_visit", "summary": "measured the back section"}},
		{"check in: energy high, stress low, focus locked in", "personal.check_in", map[string]any{"energy": "high", "stress": "low", "focus": "locked_in"}},
		{"check-in low energy, high stress, focus scattered, notes: bad sleep", "personal.check_in",
			map[string]any{"energy": "low", "stress": "high", "focus": "scattered", "notes": "bad sleep"}},
		{"I commit to no work on Sundays, review next week", "personal.create_commitment", map[string]any{"title": "No work on Sundays", "review_at": "2026-11-25T17:00:00+11:00"}},
		{"review my commitments", "personal.review_commitments", map[string]any{"status": "active"}},
		{"help me decide: hire an apprentice or a second roofer", "personal.decision_support",
			map[string]any{"decision": "Hire an apprentice or a second roofer", "options": []any{"hire an apprentice", "a second roofer"}}},
		{"should I buy a new ute or lease one?", "personal.decision_support",
			map[string]any{"decision": "Should I buy a new ute or lease one?", "options": []any{"buy a new ute", "lease one"}}},
		{"set a boundary on work calls: none after 6pm", "personal.boundary_set", map[string]any{"key": "work-calls", "value": map[string]any{"rule": "none after 6pm"}}},
		{"remember that I prefer inspections in the morning", "identity.add_memory",
			map[string]any{"memory_type": "preference", "key": "i-prefer-inspections-in-the-morning", "value": map[string]any{"text": "I prefer inspections in the morning"}, "source": "user"}},
		{"remember fact: the ute is due for a service in March", "identity.add_memory",
			map[string]any{"memory_type": "fact", "key": "the-ute-is-due-for-a-service-in-march", "value": map[string]any{"text": "the ute is due for a service in March"}, "source": "user"}},
		{"what do you remember about me?", "identity.list_memories", map[string]any{}},
		{"show your self model", "identity.get_self_model", map[string]any{}},
	})
}

func TestRulesMediaMarketingIntegrations(t *testing.T) {
	t.Parallel()
	id2 := "0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f"
	checkPlans(t, []planCase{
		{"register photo gemfs://3f2a9c.jpg for job " + id + " in Newtown", "media.register_asset",
			map[string]any{"file_ref": "gemfs://3f2a9c.jpg", "asset_type": "photo", "job_id": id, "suburb": "Newtown"}},
		{"tag asset " + id + " with roof, before, north face", "media.tag_asset", map[string]any{"asset_id": id, "tags": []any{"roof", "before", "north face"}}},
		{"write alt text for asset " + id, "media.generate_alt_text", map[string]any{"asset_id": id}},
		{"write a caption for asset " + id + " for instagram", "media.generate_caption", map[string]any{"asset_id": id, "platform": "meta"}},
		{"propose names for assets " + id + ", " + id2, "media.propose_rename_map", map[string]any{"asset_ids": []any{id, id2}, "dry_run_only": true}},
		{"export a website pack of assets " + id + " and " + id2, "media.export_website_pack", map[string]any{"asset_ids": []any{id, id2}}},
		{"write a gmb post about our roof restorations for Penrith", "marketing.generate_gmb_post", map[string]any{"topic": "our roof restorations", "suburb_or_region": "Penrith"}},
		{"make a facebook ad pack for 10% off gutter guard in the Blue Mountains", "marketing.generate_meta_ad_pack",
			map[string]any{"offer": "10% off gutter guard", "suburb_or_region": "the Blue Mountains"}},
		{"make a google ads pack for roof restoration in Western Sydney", "marketing.generate_google_ads_pack", map[string]any{"service": "roof restoration", "region": "Western Sydney"}},
		{"put together a facebook ad pack for 15% off roof restorations in Campbelltown", "marketing.generate_meta_ad_pack",
			map[string]any{"offer": "15% off roof restorations", "suburb_or_region": "Campbelltown"}},
		{"whip up some google ads for gutter guard in Penrith", "marketing.generate_google_ads_pack", map[string]any{"service": "gutter guard", "region": "Penrith"}},
		{"write a case study for the job as a blog post", "marketing.generate_case_study_from_job", map[string]any{"format": "blog"}},
		{"log campaign results for meta: 12 leads, 3 jobs, $450 spend", "marketing.log_campaign_result",
			map[string]any{"channel": "meta", "metrics": map[string]any{"leads": 12.0, "jobs": 3.0, "spend": 450.0}}},
		{"process the highlevel sync queue", "integrations.highlevel.process_sync_queue", map[string]any{}},
		{"sync the quote to highlevel contact hl-12345", "integrations.highlevel.sync_quote", map[string]any{"highlevel_contact_id": "hl-12345"}},
		{"sync inspection " + id + " to ghl contact hl-9", "integrations.highlevel.sync_inspection", map[string]any{"inspection_id": id, "highlevel_contact_id": "hl-9"}},
		{"move highlevel contact hl-12345 to quoted", "integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "hl-12345", "stage": "quoted"}},
		{"is sms working?", "integrations.sms_provider.health", map[string]any{}},
		{"check the email provider", "integrations.email_provider.health", map[string]any{}},
		{"search drive for Baker job photos", "integrations.google_drive.search", map[string]any{"query": "Baker job photos"}},
		{"find the insurance certificate in google drive", "integrations.google_drive.search", map[string]any{"query": "the insurance certificate"}},
		{"import photos https://photos.app.goo.gl/abc123", "integrations.google_photos.import_links", map[string]any{"links": []any{"https://photos.app.goo.gl/abc123"}}},
		{"pull the analytics summary for last month", "integrations.analytics.pull_summary", map[string]any{"from": "2026-10-01", "to": "2026-10-31"}},
		{"get the analytics", "integrations.analytics.pull_summary", map[string]any{"from": "2026-10-19", "to": "2026-11-18"}},
		{"show the google ads results this month", "integrations.ads.pull_summary", map[string]any{"channel": "google_ads", "from": "2026-11-01", "to": "2026-11-30"}},
	})
}

// TestRulesExamples: every example a rule shows in its help plans a call to that rule's tool, valid
// against the tool's contract.
func TestRulesExamples(t *testing.T) {
	t.Parallel()
	p, reg := gemPlanner(t)
	require.Greater(t, len(p.EnabledRules()), 80)
	for _, r := range p.EnabledRules() {
		require.NotEmpty(t, r.Examples, r.Name)
		for _, ex := range r.Examples {
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: ex, Now: now})
			require.NoError(t, err, "%s: %q", r.Name, ex)
			require.Len(t, plan.Calls, 1, "%s: %q: %+v", r.Name, ex, plan)
			require.Equal(t, r.Tool, plan.Calls[0].Tool, "%s: %q", r.Name, ex)
			require.Empty(t, brain.PrepareCalls(reg, plan.Calls, fullContext), "%s: %q", r.Name, ex)
		}
	}
}

// TestRulesCoverEveryGEMDomain: each of GEM's tool families has rules.
func TestRulesCoverEveryGEMDomain(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	gem, err := testenv.GEMRegistry()
	require.NoError(t, err)
	covered := map[string]int{}
	for _, r := range p.EnabledRules() {
		d, _, _ := strings.Cut(r.Tool, ".")
		covered[d]++
	}
	for _, tool := range gem.Tools() {
		d, _, _ := strings.Cut(tool.Name, ".")
		require.Positive(t, covered[d], "no rule for GEM's %s tools", d)
	}
}

// TestRulesAskForWhatIsMissing: a request the rules understand but that lacks something GEM's contract
// requires is refused with a question naming it; nothing is invented.
func TestRulesAskForWhatIsMissing(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	for _, tt := range []struct{ message, field, question string }{
		{"new lead Bob Smith 0412 345 678", "suburb", "which suburb is Bob Smith in?"},
		{"new lead Bob from Glebe", "phone", "phone number"},
		{"schedule an inspection for the lead", "preferred_window", "when should the inspection be?"},
		{"the quote was declined", "reason", "why was the quote declined?"},
		{"mark the lead lost", "reason", "why was the lead lost?"},
		{"record a payment on invoice " + id, "amount_cents", "how much was paid?"},
		{"send the quote", "channel", "by email, SMS or both?"},
		{"generate a warranty certificate", "warranty_term", "for how long"},
		{"email ann@example.com: hello", "subject", "what is the subject?"},
		{"check in: energy high", "stress", "how is your stress"},
		{"undo the last action", "call_id", "which call should I undo?"},
		{"write a gmb post about roof restorations", "suburb_or_region", "for which suburb or region?"},
		// A value the tool does not allow is asked about too, naming the field and the values it allows.
		{"move the lead to negotiating", "stage", `"negotiating" is not a stage; use one of new, contacted`},
		{"set task " + id + " priority to sometime", "priority", `"sometime" is not a priority; use one of low`},
	} {
		t.Run(tt.message, func(t *testing.T) {
			_, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
			require.Equal(t, brain.EINVALID, brain.ErrorCode(err), "%v", err)
			require.ErrorContains(t, err, tt.question)
			missing := brain.AsError(err).Details.(map[string]any)["missing"].([]map[string]string)
			require.Equal(t, tt.field, missing[0]["field"])
		})
	}
}

func TestRulesPlannerRefusals(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	ctx := context.Background()

	plan, err := p.Plan(ctx, brain.PlanRequest{Message: "write me a poem"})
	require.NoError(t, err)
	require.Empty(t, plan.Calls)
	require.Contains(t, plan.Help, "create a task")
	require.Contains(t, plan.Help, `Say "help"`)
	require.Equal(t, []string{"write me a poem"}, plan.Unmatched)

	_, err = p.Plan(ctx, brain.PlanRequest{Message: "move lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to heaven"})
	require.ErrorContains(t, err, "use one of new, contacted")

	// Parts of a message are planned separately; what is not understood is reported.
	plan, err = p.Plan(ctx, brain.PlanRequest{Message: "Create a task to call Ann. Dance a jig; list leads"})
	require.NoError(t, err)
	require.Len(t, plan.Calls, 2)
	require.Equal(t, []string{"Dance a jig"}, plan.Unmatched)

	// A minus sign is never dropped from a line item: "-12 x" is refused, not read as 12.
	for _, msg := range []string{"add line item: -12 x colorbond sheets at $85.50", "add line item: discount at -$50", "add line item: credit at $-50"} {
		_, err = p.Plan(ctx, brain.PlanRequest{Message: msg})
		require.ErrorContains(t, err, "cannot be negative", msg)
	}
	plan, err = p.Plan(ctx, brain.PlanRequest{Message: "add line item: gutter guard - $400"})
	require.NoError(t, err)
	require.JSONEq(t, `{"description": "gutter guard", "quantity": 1, "unit_price_cents": 40000}`, string(plan.Calls[0].Input))

	// "which tasks are overdue" is about tasks, not invoices.
	plan, err = p.Plan(ctx, brain.PlanRequest{Message: "which tasks are overdue"})
	require.NoError(t, err)
	for _, c := range plan.Calls {
		require.NotEqual(t, "invoice.list_overdue", c.Tool)
	}
}

// TestRulesLeaveLookalikesAlone: messages that read like the everyday phrasings the rules take ("what's on
// my list", "who owes me money", "book a site meeting") but ask for nothing GEM does plan no call.
func TestRulesLeaveLookalikesAlone(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	for _, msg := range []string{
		"book me a flight to Brisbane on friday",
		"what's on the radio",
		"who owes the council a letter",
		"how's the weather looking",
		"ask the client for their address",
		"push the car back into the shed",
		"remind me what the Baker quote came to",
		"what did I do with my keys",
		"the job is a big one",
		"how's cash",
		"put together a playlist for the drive",
	} {
		t.Run(msg, func(t *testing.T) {
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: msg, Now: now})
			require.NoError(t, err)
			require.Empty(t, plan.Calls, "%+v", plan.Calls)
		})
	}
}

// TestExplain: questions are answered without planning anything (mode answer's help and explanations).
func TestExplain(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	for _, tt := range []struct {
		message string
		want    []string
	}{
		{"help", []string{"enqueue_and_wait", "create a task", "leads", "integrations"}},
		{"What can you do?", []string{"answer (the default)", "record a new lead"}},
		{"what is leads.create?", []string{"leads.create:", "It needs: name, phone, suburb.", `"new lead Ann Lee 0412 345 678 in Newtown, referral"`}},
		{"explain identity.set_boundaries", []string{"It needs: boundaries.", "POST /calls"}},
		{"help with quotes", []string{"quote: what I understand", "quote.calculate_totals"}},
		{"which tools are there for invoices?", []string{"invoice:", "invoice.add_payment"}},
		{"list tools", []string{"os:", "leads:", "integrations:"}},
		{"how do I record a payment?", []string{"To record a payment", "invoice.add_payment"}},
		{"how do I sync highlevel contacts", []string{"sync highlevel contacts"}},
	} {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
			require.NoError(t, err)
			require.Empty(t, plan.Calls)
			for _, w := range tt.want {
				require.Contains(t, plan.Answer, w)
			}
		})
	}
	// Requests that start like questions are still requests.
	for _, msg := range []string{"what's the pnl for the last 90 days?", "what happened today?", "what are my tasks"} {
		plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: msg, Now: now})
		require.NoError(t, err)
		require.Empty(t, plan.Answer, msg)
		require.Len(t, plan.Calls, 1, msg)
	}
}

func TestRulesForMissingToolsAreOff(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	rules := append([]planner.Rule{{
		Name: "schedule_rocket", Tool: "space.launch", Help: "launch a rocket", Examples: []string{"launch"}, Patterns: []string{`^launch`},
		Build: func(*planner.Match) (any, error) { return map[string]any{}, nil },
	}}, plans.Rules...)
	p, err := planner.NewRulesPlanner(reg, rules, time.UTC, "")
	require.NoError(t, err)
	plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: "launch now"})
	require.NoError(t, err)
	require.Empty(t, plan.Calls)
	require.NotContains(t, plan.Help, "rocket")
}
