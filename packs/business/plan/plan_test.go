package businessplan_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	businesspack "github.com/gemhq/gem/packs/business"
	businessplan "github.com/gemhq/gem/packs/business/plan"
	"github.com/gemhq/gem/packs/internal/plantest"
	"github.com/gemhq/gem/packs/plans"
	"github.com/stretchr/testify/require"
)

// domainTools are the pack's domains whose rules and sentences live here, each with its tools as the
// contract lists them. A domain joins when its rules and sentences move from brain/planner and brain/run.
var domainTools = map[string][]string{
	"leads":      businesspack.LeadsTools,
	"inspection": businesspack.InspectionTools,
	"quote":      businesspack.QuoteTools,
	"job":        businesspack.JobTools,
	"invoice":    businesspack.InvoiceTools,
	"finance":    businesspack.FinanceTools,
	"identity":   businesspack.IdentityTools,
	"comms":      businesspack.CommsTools,
	"calendar":   businesspack.CalendarTools,
	"entity":     businesspack.EntityTools,
	"personal":   businesspack.PersonalTools,
	"media":      businesspack.MediaTools,
	"marketing":  businesspack.MarketingTools,
}

// withoutRule are the tools of those domains the rules planner does not plan, and why.
var withoutRule = map[string]string{
	businesspack.ScheduleContent:        "not yet: a schedule is a list of items, which an agent or the studio builds",
	businesspack.UpdateSelfModel:        "the self model (persona, values, goals) is edited whole, in the studio or by an agent, not by one message",
	businesspack.ExpireMemory:           "a memory is named by its id, which people do not type; an agent expires it",
	businesspack.ScorePattern:           "an agent's bookkeeping: it scores a pattern it noticed, which a message does not name",
	businesspack.SetBoundaries:          "not yet: boundaries replace the whole list; \"remember boundary: …\" adds one (identity.add_memory)",
	businesspack.GetInspection:          "not yet: an inspection is read through the LLM planner, the studio or an agent",
	businesspack.ReopenInspection:       "not yet: reopening an inspection is rare; the LLM planner or an agent does it",
	businesspack.UpdateLineItem:         "not yet: a line is named by its id, which people do not type; \"set the line items to …\" replaces them",
	businesspack.AddBeforeAfterRefs:     "not yet: photos come from the studio or an agent, not a typed message",
	businesspack.AddExpense:             "not yet: an expense needs its amount, day and category; the LLM planner or an agent records it",
	businesspack.UpdateEntity:           "not yet: a contact's patch (name, kind, notes, contact details) goes through the LLM planner and the studio",
	businesspack.LinkEntityConversation: "an agent's bookkeeping: it ties a brain conversation to a contact, which a message does not name",
	businesspack.AddAddressSiteDetails:  "not yet: a site's details (access, roof, storeys, hazards) go through the LLM planner and the studio",
	businesspack.CloseCommitment:        "not yet: closing a commitment takes its outcome and a note, through the LLM planner and the studio",
}

// withoutSentence are the tools of those domains whose answer is the generic one (the tool and its
// receipt's summary, or the files it wrote), and why.
var withoutSentence = map[string]string{
	businesspack.RegisterAsset:               "not yet: the summary gives the new asset's id (result.asset_id)",
	businesspack.TagAsset:                    "not yet: the summary gives the asset's id (result.asset_id)",
	businesspack.GenerateAltText:             "the summary carries the alt text (result.alt_text)",
	businesspack.GenerateCaption:             "the summary carries the caption (result.caption)",
	businesspack.ProposeRenameMap:            "the summary carries the names proposed (result.rename_map)",
	businesspack.ExportWebsitePack:           "the answer names the zip it wrote and where to find it (the files' sentence)",
	businesspack.GenerateMetaAdPack:          "the summary carries the drafted ads (result.ads)",
	businesspack.GenerateGoogleAdsPack:       "the summary carries the drafted pack (result.pack)",
	businesspack.GenerateCaseStudyFromJob:    "the summary carries the draft (result.draft)",
	businesspack.GenerateGMBPost:             "the summary carries the drafted post (result.post)",
	businesspack.LogCampaignResult:           "not yet: the summary gives the logged row's id (result.log_id)",
	businesspack.AddMemory:                   "not yet: the summary names the memory kept",
	businesspack.UpdateSelfModel:             "not yet: the summary names the fields changed",
	businesspack.ExpireMemory:                "not yet: the summary names the memory",
	businesspack.ScorePattern:                "an agent's bookkeeping: the summary holds the score",
	businesspack.SetBoundaries:               "not yet: the summary counts the boundaries",
	businesspack.AddLeadSource:               "not yet: the summary names the lead",
	businesspack.AddLeadPhotosLink:           "not yet: the summary names the lead",
	businesspack.MarkLeadLost:                "not yet: the summary names the lead",
	businesspack.AddPhotoRef:                 "not yet: the summary names the photo's id",
	businesspack.GetInspection:               "the inspection is data for agents; the summary names its status",
	businesspack.SubmitInspection:            "not yet: the summary names the inspection's status",
	businesspack.ReopenInspection:            "not yet: the summary names the inspection's status",
	businesspack.UpdateLineItems:             "not yet: the summary names the quote",
	businesspack.GenerateQuotePDF:            "the answer names the file it wrote",
	businesspack.AddLineItem:                 "not yet: the summary names the line and its total",
	businesspack.UpdateLineItem:              "not yet: the summary names the line and the fields changed",
	businesspack.MarkQuoteSent:               "not yet: the summary names the quote's status",
	businesspack.CreateJobCard:               "the answer names the file it wrote",
	businesspack.AddSiteNotes:                "not yet: the summary names the job",
	businesspack.AddBeforeAfterRefs:          "not yet: the summary names the job",
	businesspack.GenerateWarrantyCertificate: "the answer names the file it wrote",
	businesspack.RequestReview:               "not yet: the summary says what was sent",
	businesspack.SendInvoice:                 "not yet: the summary says what was sent",
	businesspack.MarkInvoiceOverdue:          "not yet: the summary names the invoice",
	businesspack.SendInvoiceReminderSMS:      "not yet: the summary names the message sent",
	businesspack.SendInvoiceReminderEmail:    "not yet: the summary names the message sent",
	businesspack.AddExpense:                  "not yet: the summary names the expense",
	businesspack.ComposeSMS:                  "not yet: the summary holds the draft's text",
	businesspack.ComposeEmail:                "not yet: the summary holds the draft's subject",
	businesspack.SendSMS:                     "not yet: the summary counts the messages sent and names the log entry",
	businesspack.SendEmail:                   "not yet: the summary counts the messages sent and names the log entry",
	businesspack.LogCallOutcome:              "not yet: the summary names the interaction recorded",
	businesspack.CreateFollowupTask:          "not yet: the summary names the task created",
	businesspack.UpdateEvent:                 "not yet: the summary names the event",
	businesspack.CancelEvent:                 "not yet: the summary says it is cancelled",
	businesspack.AttachJobToEvent:            "not yet: the summary says it is attached",
	businesspack.CreateEntity:                "not yet: the summary names the entity created",
	businesspack.UpdateEntity:                "not yet: the summary names the entity",
	businesspack.SearchEntities:              "not yet: the summary counts the results",
	businesspack.GetEntity:                   "the entity is data to read: the summary holds it",
	businesspack.LinkEntityConversation:      "an agent's bookkeeping: the summary says whether it linked",
	businesspack.AddInteraction:              "not yet: the summary names the interaction recorded",
	businesspack.AddAddressSiteDetails:       "not yet: the summary says whether it saved",
	businesspack.CreateCommitment:            "not yet: the summary names the commitment",
	businesspack.ReviewCommitments:           "not yet: the summary counts the commitments",
	businesspack.CloseCommitment:             "not yet: the summary names the commitment",
	businesspack.DecisionSupport:             "the analysis is data to read: the summary holds it",
	businesspack.BoundarySet:                 "not yet: the summary names the memory kept",
	businesspack.ListMemories:                "not yet: the summary counts the memories",
	businesspack.GetSelfModel:                "the self-model is data to read: the summary holds its persona and boundaries",
}

// TestDomainsListTheRegistrysTools: each domain's list is its tools in the pack's registry order, every one
// of them, so the constants name real tools.
func TestDomainsListTheRegistrysTools(t *testing.T) {
	for domain, tools := range domainTools {
		var want []string
		for _, tool := range businesspack.Tools {
			if strings.HasPrefix(tool, domain+".") {
				want = append(want, tool)
			}
		}
		require.Equal(t, want, tools, domain)
	}
}

// TestEveryToolIsPlannedAndSaid: each tool of the domains here has a rule and a sentence, or says why not;
// the pack's rules and sentences name only its own tools.
func TestEveryToolIsPlannedAndSaid(t *testing.T) {
	var tools []string
	for _, domain := range domainTools {
		tools = append(tools, domain...)
	}
	plantest.EveryToolIsPlannedAndSaid(t, tools, businessplan.Rules, businessplan.Sentences, withoutRule, withoutSentence)
}

// contextIDs are the ids a run's context may carry: a rule leaves out an id its message does not name.
var contextIDs = map[string]any{"lead_id": id, "inspection_id": id, "quote_id": id, "job_id": id, "invoice_id": id,
	"entity_id": id, "event_id": id, "asset_id": id}

const id = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"

// TestRuleExamplesPlanValidInputs: every example a rule shows plans one call to its tool, with an input the
// tool's registry entry accepts once the run's context gives the ids it leaves out — the typed inputs
// marshal to the contract.
func TestRuleExamplesPlanValidInputs(t *testing.T) {
	plantest.ExamplesPlanValidInputs(t, businessplan.Rules, time.UTC, plantest.Now, contextIDs)
}

// TestRulesSendWhatTheMessageSays: what a message does not say is left out (an id for the run's context,
// an option for the tool's default), and what it says is sent even when it is zero or empty.
func TestRulesSendWhatTheMessageSays(t *testing.T) {
	p, _ := plantest.Planner(t, businessplan.Rules, time.UTC)
	now := time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC)
	for msg, want := range map[string]string{
		"lock the inspection":                   `{}`,
		"lock inspection " + id:                 `{"inspection_id": "` + id + `"}`,
		"invoice the job":                       `{}`,
		"invoice the job, due in 0 days":        `{"due_days": 0}`,
		"add defect: moss":                      `{"category": "other", "notes": "moss"}`,
		"add defect: .":                         `{"category": "other", "notes": ""}`,
		"add line item: skip bin $0":            `{"description": "skip bin", "quantity": 1, "unit_price_cents": 0}`,
		"record a payment of $80 by card":       `{"amount_cents": 8000, "method": "card"}`,
		"cashflow":                              `{}`,
		"cash flow this month":                  `{"from": "2026-11-01", "to": "2026-11-30"}`,
		"schedule an inspection friday at 10am": `{"preferred_window": {"start": "2026-11-20T10:00:00Z", "end": "2026-11-20T11:00:00Z"}}`,
		"new lead Kim Wu 0400 555 444 in Ryde, from our website": `{"name": "Kim Wu", "phone": "0400 555 444", "suburb": "Ryde", "source": "other", "notes": "Source: website"}`,
		"remember that I prefer mornings":                        `{"memory_type": "preference", "key": "i-prefer-mornings", "value": {"text": "I prefer mornings"}, "source": "user"}`,
	} {
		plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: msg, Now: now})
		require.NoError(t, err, msg)
		require.Len(t, plan.Calls, 1, msg)
		require.JSONEq(t, want, string(plan.Calls[0].Input), msg)
	}
}

// TestSentences: what the answer says of each of the trades tools' calls, from the input the rule planned
// and the result the executor's handler returns; a result that is not the tool's gets the generic sentence.
func TestSentences(t *testing.T) {
	when := func(t time.Time) string { return t.UTC().Format("Mon 2 Jan 15:04") }
	invoice := func(number, total, balance, status string) string {
		return `{"invoice_id": "v1", "number": ` + number + `, "job_id": "j1", "currency": "AUD", "subtotal_cents": 280060, "gst_cents": 28006,
			"total_cents": ` + total + `, "amount_paid_cents": 0, "balance_cents": ` + balance + `, "status": "` + status + `",
			"issued_on": "2026-11-18", "due_on": "2026-12-02", "notes": null, "sent_at": null, "paid_at": null, "overdue_at": null}`
	}
	for _, tt := range []struct{ tool, in, out, want string }{
		{businesspack.CreateLead, `{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown", "source": "referral"}`,
			`{"lead_id": "l1", "created": true, "lead": {"lead_id": "l1", "name": "Ann Lee"}}`, "Recorded a new lead: Ann Lee, 0412 345 678, Newtown (source: referral)."},
		{businesspack.CreateLead, `{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown"}`,
			`{"lead_id": "l1", "created": false, "lead": {"lead_id": "l1"}}`, "Ann Lee (0412 345 678) is already a lead (l1)."},
		{businesspack.CreateLead, `{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown"}`,
			`{"lead_id": "l1"}`, "Recorded a new lead: Ann Lee, 0412 345 678, Newtown."},
		{businesspack.UpdateLeadStage, `{"lead_id": "l1", "stage": "inspection_scheduled"}`, `{"lead_id": "l1", "stage": "inspection_scheduled"}`,
			"Moved lead l1 to inspection scheduled."},
		{businesspack.ListLeadsByStage, `{}`, `{"leads": [{"lead_id": "l1", "name": "Ann Lee", "phone": "0412 345 678", "email": null, "stage": "new"},
			{"lead_id": "l2", "name": "Bob", "phone": "", "status": "open"}], "count": 2}`, "2 leads:\n1. Ann Lee, 0412 345 678 (new)\n2. Bob (open)"},
		{businesspack.ListLeadsByStage, `{"stage": "won"}`, `{"leads": [], "count": 0}`, "No leads found."},
		{businesspack.ScheduleInspection, `{"preferred_window": {"start": "2026-11-20T10:00:00+11:00", "end": "2026-11-20T11:00:00+11:00"}}`,
			`{"inspection_id": "i1", "appointment_id": "a1", "created": true}`, "Inspection i1 booked for Thu 19 Nov 23:00."},
		{businesspack.ScheduleInspection, `{"preferred_window": {"date": "2026-11-20", "part_of_day": "morning"}}`,
			`{"inspection_id": "i1"}`, "Inspection i1 booked for ."},
		{businesspack.CreateInspection, `{"lead_id": "l1"}`, `{"inspection_id": "i1", "lead_id": "l1", "status": "draft"}`, "Started inspection i1."},
		{businesspack.AddMeasurement, `{"label": "roof area", "value": 180, "unit": "m2"}`, `{"measurement_id": "m1"}`, "Recorded roof area: 180 m2."},
		{businesspack.AddMeasurement, `{"label": "gutter length", "value": 42.5, "unit": "m"}`, `{"measurement_id": "m1"}`, "Recorded gutter length: 42.5 m."},
		{businesspack.AddDefect, `{"category": "ridge", "severity": "high", "notes": "cracked ridge capping"}`, `{"defect_id": "d1"}`,
			"Recorded a high-severity ridge defect: cracked ridge capping."},
		{businesspack.AddDefect, `{"category": "other", "notes": ""}`, `{"defect_id": "d1"}`, "Recorded a other defect."},
		{businesspack.AddChecklistItem, `{"item_key": "solar_panels", "status": "na"}`, `{"item_id": "c1"}`, "Checklist: solar_panels is na."},
		{businesspack.LockInspection, `{"inspection_id": "i1"}`, `{"inspection": {"status": "locked"}}`, "Inspection i1 is locked."},
		{businesspack.GenerateScopeSummary, `{}`, `{"scope_text": "Scope of works: replace the ridge capping.", "format": "sections"}`,
			"Scope of works: replace the ridge capping."},
		{businesspack.CreateQuoteFromInspection, `{"inspection_id": "i1"}`, `{"quote_id": "q1", "quote": {}, "line_items": []}`, "Drafted quote q1."},
		{businesspack.CalculateQuoteTotals, `{}`, `{"quote_id": "q1", "status": "draft", "changed": true, "totals": {"currency": "AUD",
			"subtotal_cents": 280060, "gst_rate_percent": 10, "gst_cents": 28006, "total_cents": 308066, "line_count": 2, "line_items": []}}`,
			"Quote total $3,080.66: $2,800.60 plus $280.06 GST."},
		{businesspack.CalculateQuoteTotals, `{}`, `{"totals": {"subtotal_cents": 1000, "tax_cents": 100, "total_cents": 1100}}`,
			"Quote total $11.00: $10.00 plus $1.00 GST."},
		{businesspack.MarkQuoteAccepted, `{"quote_id": "q1"}`, `{"quote": {"status": "accepted"}}`, "Quote q1 is accepted."},
		{businesspack.MarkQuoteDeclined, `{"quote_id": "q1", "reason": "too expensive."}`, `{"quote": {"status": "declined"}}`, "Quote q1 is declined: too expensive."},
		{businesspack.CreateJobFromAcceptedQuote, `{"quote_id": "q1"}`, `{"job_id": "j1", "number": 7, "status": "scheduled", "end_date": null}`, "Job j1 created."},
		{businesspack.SendQuoteToClient, `{"channel": "both"}`, `{"sent": true, "quote_id": "q1", "status": "sent", "previous_status": "draft",
			"lead_stage": "quoted", "deliveries": [{"channel": "email", "to": "ann@example.com", "comm_id": "c1", "provider": "smtp", "provider_ref": "<m1>"},
			{"channel": "sms", "to": "+61412345678", "comm_id": "c2", "provider": "twilio", "provider_ref": "SM1"}], "not_delivered": []}`,
			"Sent quote q1 to the customer by email to ann@example.com and SMS to +61412345678."},
		{businesspack.SendQuoteToClient, `{"quote_id": "q1", "channel": "both"}`, `{"sent": true, "quote_id": "q1", "deliveries": [{"channel": "email", "to": "ann@example.com"}],
			"not_delivered": [{"channel": "sms", "reason": "Twilio refused the message."}]}`,
			"Sent quote q1 to the customer by email to ann@example.com. The SMS did not go: Twilio refused the message."},
		{businesspack.ScheduleContent, `{"items": [{"title": "Ridge repair in Newtown", "platform": "gmb", "due_date": "2026-11-20"}]}`,
			`{"created_task_ids": ["t1", "t2"], "items": [{"task_id": "t1", "content_item_id": "c1", "title": "Ridge repair in Newtown", "channel": "gmb",
			"publish_at": "2026-11-20T09:00:00Z", "asset_ids": []}, {"task_id": "t2", "title": "Winter gutter check", "channel": "meta", "publish_at": "2026-11-21T10:30:00Z"}]}`,
			"2 items scheduled:\n1. Ridge repair in Newtown on gmb, Fri 20 Nov 09:00\n2. Winter gutter check on meta, Sat 21 Nov 10:30"},
		{businesspack.AssignJobDates, `{"job_id": "j1", "start_date": "2026-12-01"}`, `{"job_id": "j1", "start_date": "2026-12-01", "end_date": "2026-12-03"}`,
			"Job j1 is scheduled from 2026-12-01 to 2026-12-03."},
		{businesspack.AssignJobDates, `{"job_id": "j1", "start_date": "2026-12-01"}`, `{"job_id": "j1", "start_date": "2026-12-01", "end_date": "2026-12-01"}`,
			"Job j1 is scheduled from 2026-12-01."},
		{businesspack.AssignJobDates, `{"job_id": "j1", "start_date": "2026-12-01"}`, `{"job_id": "j1", "end_date": null}`, "Job j1 is scheduled from 2026-12-01."},
		{businesspack.AddProgressUpdate, `{"job_id": "j1", "summary": "old roof stripped."}`, `{"update_id": "u1"}`, "Recorded progress on job j1: old roof stripped."},
		{businesspack.CompleteJob, `{"job_id": "j1"}`, `{"job_id": "j1", "status": "completed"}`, "Job j1 is completed."},
		{businesspack.CreateInvoiceFromJob, `{"job_id": "j1"}`, invoice("1042", "308066", "308066", "unpaid"), "Invoice v1 created for $3,080.66."},
		{businesspack.CreateInvoiceFromJob, `{"job_id": "j1"}`, `{"invoice_id": "v1"}`, "Invoice v1 created."},
		{businesspack.AddPayment, `{"invoice_id": "v1", "amount_cents": 150050}`, `{"payment_id": "p1", "created": true, "invoice": ` + invoice("1042", "308066", "158016", "partially_paid") + `}`,
			"Recorded $1,500.50 on invoice v1; it is partially paid with $1,580.16 left to pay."},
		{businesspack.AddPayment, `{"invoice_id": "v1", "amount_cents": 150050}`, `{"payment_id": "p1", "invoice": null}`, "Recorded $1,500.50 on invoice v1."},
		{businesspack.ListOverdueInvoices, `{}`, `{"invoices": [` + invoice("1042", "308066", "50000", "overdue") + `, {"invoice_id": "v2", "balance_cents": 100, "due_on": "2026-10-01"}],
			"count": 2, "total_count": 2, "total_outstanding_cents": 50100, "as_of": "2026-11-18"}`,
			"2 overdue invoices:\n1. 1042: $500.00 owing, due 2026-12-02\n2. v2: $1.00 owing, due 2026-10-01"},
		{businesspack.ListOverdueInvoices, `{}`, `{"invoices": [], "count": 0}`, "No overdue invoices found."},
		{businesspack.GenerateCashflowSnapshot, `{"from": "2026-11-01", "to": "2026-11-30"}`, `{"summary": {"from": "2026-11-01", "to": "2026-11-30", "currency": "AUD",
			"cash_in": {"total_cents": 150000, "count": 2}, "cash_out": {"total_cents": 20000, "gst_cents": 1818, "count": 1}, "net_cents": 130000}}`,
			"Cash flow 2026-11-01 to 2026-11-30: $1,500.00 in, $200.00 out, $1,300.00 net."},
		{businesspack.GeneratePnLSnapshot, `{}`, `{"summary": {"from": "2026-10-01", "to": "2026-10-31", "currency": "AUD", "revenue_cents": 1000000,
			"gross_profit_cents": 600000, "net_profit_cents": -4550, "gross_margin_basis_points": null}}`,
			"Profit and loss 2026-10-01 to 2026-10-31: $10,000.00 revenue, $6,000.00 gross profit, -$45.50 net profit."},
	} {
		s, ok := businessplan.Sentences[tt.tool]
		require.True(t, ok, "%s has a sentence", tt.tool)
		said, ok := s.Say(json.RawMessage(tt.in), json.RawMessage(tt.out), when)
		require.True(t, ok, tt.tool)
		require.Equal(t, tt.want, said, tt.tool)
	}
	for _, out := range []string{`null`, `[]`, `"ok"`, `{"leads": "none"}`} {
		_, ok := businessplan.Sentences[businesspack.ListLeadsByStage].Say(json.RawMessage(`{}`), json.RawMessage(out), when)
		require.False(t, ok, "%s is not leads.list_by_stage's result", out)
	}

	created := businessplan.Sentences[businesspack.CreateLead]
	in, out := json.RawMessage(`{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown"}`), json.RawMessage(`{"lead_id": "l1", "created": true}`)
	all := func(string) bool { return true }
	require.Equal(t, []string{`book an inspection: "schedule an inspection for lead l1 on friday"`}, created.Next(in, out, all))
	noBooking := func(tool string) bool { return tool != businesspack.ScheduleInspection }
	require.Equal(t, []string{`after contacting them: "move lead l1 to contacted"`}, created.Next(in, out, noBooking))
	require.Empty(t, created.Next(in, out, func(string) bool { return false }), "no suggestion of a tool the registry lacks")
}

// TestListLeadsInEveryStage: "list <stage> leads" lists the leads in that stage, for every stage a lead can
// be in, inspected included (the inspection tools move a lead there, and nobody sets it by hand).
func TestListLeadsInEveryStage(t *testing.T) {
	p, _ := plantest.Planner(t, plans.Rules, time.UTC)
	var cases []plantest.Case
	for _, stage := range businesspack.LeadStages {
		want := `{"stage": "` + stage + `"}`
		spaced := strings.ReplaceAll(stage, "_", " ")
		cases = append(cases, plantest.Case{"list " + spaced + " leads", businesspack.ListLeadsByStage, want},
			plantest.Case{"show leads in " + spaced, businesspack.ListLeadsByStage, want},
			plantest.Case{"list lead " + stage, businesspack.ListLeadsByStage, want})
	}
	plantest.PlansAs(t, p, plantest.Now, cases)

	// A stage said the other way round is not that stage: listing it would show the very leads not asked for.
	for _, msg := range []string{"show me leads not contacted", "leads that were never inspected", "list leads not yet quoted",
		"list leads except lost", "which leads are not won"} {
		field, said := plantest.Refused(t, p, plantest.Now, msg)
		require.Equal(t, "stage", field, msg)
		require.Contains(t, said, "one stage", msg)
	}
}
