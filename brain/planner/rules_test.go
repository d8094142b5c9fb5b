package planner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

func rulesPlanner(t *testing.T) (*planner.RulesPlanner, *registry.Registry) {
	t.Helper()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	loc, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	p, err := planner.NewRulesPlanner(reg, nil, loc)
	require.NoError(t, err)
	return p, reg
}

func TestRulesPlanner(t *testing.T) {
	t.Parallel()
	p, reg := rulesPlanner(t)
	// Wednesday 18 November 2026, 09:00 in Sydney.
	now := time.Date(2026, 11, 18, 9, 0, 0, 0, time.FixedZone("AEDT", 11*3600))
	const id = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"

	tests := []struct {
		message string
		tool    string
		input   map[string]any
	}{
		{"health check", "os.health_check", map[string]any{}},
		{"are you up?", "os.health_check", map[string]any{}},
		{"create a task to call John", "os.create_task", map[string]any{"title": "call John", "priority": "normal"}},
		{"Create an urgent task to fix the Smith leak", "os.create_task", map[string]any{"title": "fix the Smith leak", "priority": "urgent"}},
		{"add a task to order tiles asap", "os.create_task", map[string]any{"title": "order tiles", "priority": "urgent"}},
		{"create a task to send the quote, low priority", "os.create_task", map[string]any{"title": "send the quote", "priority": "low"}},
		{"create a task to book scaffolding, it's important", "os.create_task", map[string]any{"title": "book scaffolding", "priority": "high"}},
		{"create a task to call John tomorrow", "os.create_task", map[string]any{"title": "call John", "priority": "normal", "due_at": "2026-11-19T17:00:00+11:00"}},
		{"todo: measure the Baker roof by friday", "os.create_task", map[string]any{"title": "measure the Baker roof", "priority": "normal", "due_at": "2026-11-20T17:00:00+11:00"}},
		{"remind me to pay the supplier on 2026-12-01", "os.create_reminder", map[string]any{"title": "pay the supplier", "remind_at": "2026-12-01T09:00:00+11:00"}},
		{"create a task to pay the supplier on 2026-12-01", "os.create_task", map[string]any{"title": "pay the supplier", "priority": "normal", "due_at": "2026-12-01T17:00:00+11:00"}},
		{"complete task 5B0F1C39-8C8F-4A35-9D0E-6B1F1B7F3A10", "os.complete_task", map[string]any{"task_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}},
		{"mark task 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 as done", "os.complete_task", map[string]any{"task_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}},
		{"list my tasks", "os.list_tasks", map[string]any{}},
		{"show urgent tasks", "os.list_tasks", map[string]any{"priority": "urgent"}},
		{"what are my done tasks?", "os.list_tasks", map[string]any{"status": "done"}},
		{"list all tasks", "os.list_tasks", map[string]any{"status": "any"}},
		{"note that the Smiths' gutters need replacing", "os.create_note", map[string]any{"title": "The Smiths' gutters need replacing", "body": "the Smiths' gutters need replacing", "kind": "business"}},
		{"remember that my wife's birthday is on the 3rd", "os.create_note", map[string]any{"title": "My wife's birthday is on the 3rd", "body": "my wife's birthday is on the 3rd", "kind": "personal"}},
		{"add a personal note: renew gym membership", "os.create_note", map[string]any{"title": "Renew gym membership", "body": "renew gym membership", "kind": "personal"}},
		{"find notes about gutters", "os.search_notes", map[string]any{"query": "gutters"}},
		{"search business notes for asbestos", "os.search_notes", map[string]any{"query": "asbestos", "kind": "business"}},
		{"new lead Ann Lee 0412 345 678 in Newtown from a referral", "leads.create",
			map[string]any{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown", "source": "referral"}},
		{"add lead: Jane Doe, 0400 111 222, Marrickville, facebook", "leads.create",
			map[string]any{"name": "Jane Doe", "phone": "0400 111 222", "suburb": "Marrickville", "source": "facebook"}},
		{"new lead Bob Smith +61 2 9555 1234 bob@example.com found us on google", "leads.create",
			map[string]any{"name": "Bob Smith", "phone": "+61 2 9555 1234", "email": "bob@example.com", "source": "google"}},
		{"record a lead named Mei Chen 0411222333", "leads.create", map[string]any{"name": "Mei Chen", "phone": "0411222333", "source": "other"}},
		{"list new leads", "leads.list_by_stage", map[string]any{"stage": "new"}},
		{"show leads in inspection scheduled", "leads.list_by_stage", map[string]any{"stage": "inspection_scheduled"}},
		{"leads", "leads.list_by_stage", map[string]any{}},
		{"move lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to quoted", "leads.update_stage", map[string]any{"lead_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "stage": "quoted"}},
		{"remind me to call Ann tomorrow at 3pm", "os.create_reminder", map[string]any{"title": "call Ann", "remind_at": "2026-11-19T15:00:00+11:00"}},
		{"remind me to call Ann", "os.create_task", map[string]any{"title": "call Ann", "priority": "normal"}},
		{"schedule an inspection for lead " + id + " on friday at 10am", "leads.schedule_inspection", map[string]any{"lead_id": id, "scheduled_for": "2026-11-20T10:00:00+11:00"}},
		{"book an inspection at 2:30pm", "leads.schedule_inspection", map[string]any{"scheduled_for": "2026-11-18T14:30:00+11:00"}},
		{"start an inspection for lead " + id, "inspection.create", map[string]any{"lead_id": id}},
		{"add measurement to inspection " + id + ": roof area 180 m2", "inspection.add_measurement", map[string]any{"inspection_id": id, "kind": "roof_area", "value": 180.0, "unit": "m2"}},
		{"add measurement: gutter length 42.5 metres", "inspection.add_measurement", map[string]any{"kind": "gutter_length", "value": 42.5, "unit": "m"}},
		{"add a critical defect: rusted valley iron", "inspection.add_defect", map[string]any{"title": "rusted valley iron", "severity": "critical"}},
		{"submit the inspection", "inspection.submit", map[string]any{}},
		{"lock inspection " + id, "inspection.lock", map[string]any{"inspection_id": id}},
		{"create a quote from inspection " + id, "quote.create_from_inspection", map[string]any{"inspection_id": id}},
		{"add line item: 12 x colorbond sheets at $85.50", "quote.add_line_item", map[string]any{"description": "colorbond sheets", "quantity": 12.0, "unit_price_cents": 8550.0}},
		{"add line item: labour, 16 hours at $95", "quote.add_line_item", map[string]any{"description": "labour", "quantity": 16.0, "unit": "hours", "unit_price_cents": 9500.0}},
		{"add item skip bin $450", "quote.add_line_item", map[string]any{"description": "skip bin", "quantity": 1.0, "unit_price_cents": 45000.0}},
		{"calculate totals for the quote", "quote.calculate_totals", map[string]any{}},
		{"mark quote " + id + " as sent", "quote.mark_sent", map[string]any{"quote_id": id}},
		{"the customer accepted the quote", "quote.mark_accepted", map[string]any{}},
		{"quote " + id + " was declined", "quote.mark_declined", map[string]any{"quote_id": id}},
		{"create a job from quote " + id, "job.create_from_accepted_quote", map[string]any{"quote_id": id}},
		{"schedule the job for monday", "job.assign_dates", map[string]any{"start_date": "2026-11-23"}},
		{"complete job " + id, "job.complete", map[string]any{"job_id": id}},
		{"invoice the job", "invoice.create_from_job", map[string]any{}},
		{"record a payment of $1,500.50 on invoice " + id + " by card", "invoice.add_payment", map[string]any{"invoice_id": id, "amount_cents": 150050.0, "method": "card"}},
		{"which invoices are overdue?", "invoice.list_overdue", map[string]any{}},
		{"mark lead " + id + " lost: went with a competitor", "leads.mark_lost", map[string]any{"lead_id": id, "reason": "went with a competitor", "reason_code": "competitor"}},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
			require.NoError(t, err)
			require.Len(t, plan.Calls, 1, "%+v", plan)
			require.Equal(t, tt.tool, plan.Calls[0].Tool)
			var in map[string]any
			require.NoError(t, json.Unmarshal(plan.Calls[0].Input, &in))
			require.Equal(t, tt.input, in)
			// The planned input is valid, apart from ids the run's context would supply.
			tool, _ := reg.Tool(tt.tool)
			if err := tool.ValidateInput(plan.Calls[0].Input); err != nil {
				var ve *registry.ValidationError
				require.ErrorAs(t, err, &ve)
				for _, v := range ve.Violations {
					require.Equal(t, "required", v.Keyword, "%s", err)
					require.True(t, strings.HasSuffix(v.Path, "_id"), "%s", err)
				}
			}
		})
	}
}

func TestRulesPlannerRefusals(t *testing.T) {
	t.Parallel()
	p, _ := rulesPlanner(t)
	ctx := context.Background()

	plan, err := p.Plan(ctx, brain.PlanRequest{Message: "write me a poem"})
	require.NoError(t, err)
	require.Empty(t, plan.Calls)
	require.Contains(t, plan.Help, "create a task")
	require.Equal(t, []string{"write me a poem"}, plan.Unmatched)

	_, err = p.Plan(ctx, brain.PlanRequest{Message: "new lead Bob from Glebe"})
	require.Equal(t, brain.EINVALID, brain.ErrorCode(err))
	require.ErrorContains(t, err, "phone number")

	_, err = p.Plan(ctx, brain.PlanRequest{Message: "move lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to heaven"})
	require.ErrorContains(t, err, "use one of new, contacted")

	// Parts of a message are planned separately; what is not understood is reported.
	plan, err = p.Plan(ctx, brain.PlanRequest{Message: "Create a task to call Ann. Dance a jig; list leads"})
	require.NoError(t, err)
	require.Len(t, plan.Calls, 2)
	require.Equal(t, []string{"Dance a jig"}, plan.Unmatched)
}

func TestRulesForMissingToolsAreOff(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	rules := append([]planner.Rule{{
		Name: "schedule_rocket", Tool: "space.launch", Help: "launch a rocket", Patterns: []string{`^launch`},
		Build: func(*planner.Match) (map[string]any, error) { return map[string]any{}, nil },
	}}, planner.Rules...)
	p, err := planner.NewRulesPlanner(reg, rules, time.UTC)
	require.NoError(t, err)
	plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: "launch now"})
	require.NoError(t, err)
	require.Empty(t, plan.Calls)
	require.NotContains(t, plan.Help, "rocket")
}
