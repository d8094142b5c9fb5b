package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// chain holds the ids of one lead's way through the business.
type chain struct {
	lead, inspection, quote, job, invoice string
	totalCents                            int64
}

// buildTo takes a new lead through the workflow up to step: lead, inspection (a draft with a measurement),
// submitted, quote (a draft with a line, totals calculated), sent, accepted, job, scheduled, completed or
// invoice.
func (b *testBundle) buildTo(t *testing.T, ctx context.Context, step string) chain {
	t.Helper()
	steps := []string{"lead", "inspection", "submitted", "quote", "sent", "accepted", "job", "scheduled", "completed", "invoice"}
	var c chain
	for _, s := range steps {
		switch s {
		case "lead":
			c.lead = b.newLead(t, ctx)
		case "inspection":
			r, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": c.lead})
			c.inspection = r.str(t, "inspection_id")
			b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": c.inspection, "kind": "roof_area", "value": 100, "unit": "m2"})
		case "submitted":
			b.ok(t, ctx, "inspection.submit", J{"inspection_id": c.inspection})
		case "quote":
			r, _ := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": c.inspection})
			c.quote = r.str(t, "quote.quote_id")
			b.ok(t, ctx, "quote.add_line_item", J{"quote_id": c.quote, "description": "Roof restoration", "quantity": 100, "unit": "m2", "unit_price_cents": 5000})
			r, _ = b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": c.quote})
			c.totalCents = r.int(t, "total_cents")
		case "sent":
			b.ok(t, ctx, "quote.mark_sent", J{"quote_id": c.quote})
		case "accepted":
			b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": c.quote})
		case "job":
			r, _ := b.ok(t, ctx, "job.create_from_accepted_quote", J{"quote_id": c.quote})
			c.job = r.str(t, "job.job_id")
		case "scheduled":
			b.ok(t, ctx, "job.assign_dates", J{"job_id": c.job, "start_date": time.Now().AddDate(0, 0, 7).Format(time.DateOnly)})
		case "completed":
			b.ok(t, ctx, "job.complete", J{"job_id": c.job})
		case "invoice":
			r, _ := b.ok(t, ctx, "invoice.create_from_job", J{"job_id": c.job})
			c.invoice = r.str(t, "invoice.invoice_id")
		}
		if s == step {
			return c
		}
	}
	t.Fatalf("no workflow step %q", step)
	return c
}

// TestWorkflowRoofJob takes one roofing lead from first call to paid invoice, through the executor, with
// every call inserted as plain SQL, and checks each receipt, the rows and what each call wrote.
func TestWorkflowRoofJob(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	// The lead.
	r, rc := b.ok(t, ctx, "leads.create", J{"name": "Maria Rossi", "phone": "0413 222 333", "email": "maria@example.com",
		"suburb": "Marrickville", "address": "12 Station St, Marrickville NSW 2204", "source": "website"})
	lead := r.str(t, "lead.lead_id")
	require.Equal(t, map[string]int{"leads insert": 1}, writes(rc))
	require.Equal(t, []string{lead}, wroteIDs(rc, "leads", "insert"))

	// Inspection booked: the lead moves to inspection_scheduled; the visit takes the lead's address.
	visit := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	r, rc = b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": lead, "scheduled_for": visit.Format(time.RFC3339)})
	appointment := r.str(t, "appointment.appointment_id")
	require.Equal(t, "new", r.str(t, "previous_stage"))
	require.Equal(t, "inspection_scheduled", r.str(t, "lead_stage"))
	require.Equal(t, "12 Station St, Marrickville NSW 2204", r.str(t, "appointment.address"))
	require.Equal(t, map[string]int{"inspection_appointments insert": 1, "leads update": 1}, writes(rc))
	require.Equal(t, appointment, rc.Summary["result.appointment.appointment_id"])

	// The inspection, for the booked visit.
	r, rc = b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "appointment_id": appointment, "inspector": "Sam"})
	inspection := r.str(t, "inspection_id")
	require.Equal(t, "draft", r.str(t, "status"))
	require.Equal(t, map[string]int{"inspection_appointments update": 1, "inspections insert": 1}, writes(rc))

	measurements := []struct {
		kind, unit, label     string
		value                 any
		metric, metricUnit    string
		wantValue, wantMetric string
	}{
		{"roof_area", "m2", "main roof", 152.5, "152.5", "m2", "152.5", "152.5"},
		{"roof_area", "ft2", "verandah", 100, "9.29", "m2", "100", "9.29"},
		{"roof_pitch", "deg", "", 22.5, "22.5", "deg", "22.5", "22.5"},
		{"gutter_length", "mm", "", 42000, "42", "m", "42000", "42"},
	}
	for _, m := range measurements {
		input := J{"inspection_id": inspection, "kind": m.kind, "value": m.value, "unit": m.unit}
		if m.label != "" {
			input["label"] = m.label
		}
		r, rc = b.ok(t, ctx, "inspection.add_measurement", input)
		require.Equal(t, m.metricUnit, r.str(t, "measurement.metric_unit"), m.kind)
		requireDecimal(t, m.wantValue, r.get(t, "measurement.value"), m.kind)
		requireDecimal(t, m.wantMetric, r.get(t, "measurement.metric_value"), m.kind)
		require.Equal(t, map[string]int{"inspection_measurements insert": 1}, writes(rc))
	}
	_, rc = b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item": "Flashings", "result": "attention", "notes": "lifting at chimney"})
	require.Equal(t, map[string]int{"inspection_checklist_items insert": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "title": "Cracked ridge capping", "severity": "high", "location": "north ridge"})
	require.Equal(t, "high", r.str(t, "defect.severity"))
	require.Equal(t, map[string]int{"inspection_defects insert": 1}, writes(rc))
	b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "title": "Rusted gutter outlet", "severity": "medium"})
	_, rc = b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": inspection, "ref": "s3://gem-media/insp/ridge.jpg", "caption": "ridge"})
	require.Equal(t, map[string]int{"inspection_photos insert": 1}, writes(rc))

	// Submitted: the lead is inspected.
	r, rc = b.ok(t, ctx, "inspection.submit", J{"inspection_id": inspection, "summary": "Ridge and gutters need replacing"})
	require.Equal(t, "submitted", r.str(t, "inspection.status"))
	require.Equal(t, "inspected", r.str(t, "lead_stage"))
	require.Equal(t, int64(4), r.int(t, "counts.measurements"))
	require.Equal(t, int64(2), r.int(t, "counts.defects"))
	require.Equal(t, map[string]int{"inspections update": 1, "leads update": 1}, writes(rc))

	// The quote, priced from the inspection, which is locked by it.
	r, rc = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": inspection, "valid_days": 30})
	quote := r.str(t, "quote.quote_id")
	require.Equal(t, "draft", r.str(t, "quote.status"))
	require.Equal(t, true, r.get(t, "inspection_locked_now"))
	require.Equal(t, map[string]int{"inspections update": 1, "quotes insert": 1}, writes(rc))
	require.Equal(t, "locked", b.str(t, ctx, `SELECT status FROM inspections WHERE id = $1`, inspection))

	lines := []struct {
		description string
		quantity    any
		unit        string
		price       int64
		want        int64
	}{
		{"Colorbond roof sheeting, supply and install", 152.5, "m2", 4550, 693_875},
		{"Ridge capping, replace and rebed", 18.3, "m", 2999, 54_882}, // 54,881.7 rounds up
		{"Quad gutter, 150mm", 42, "m", 3333, 139_986},
		{"Roof sealant", 2.5, "tube", 1001, 2_503}, // 2,502.5: half rounds up
		{"Skip bin and disposal", 1, "each", 40_000, 40_000},
	}
	var lineIDs []string
	for _, l := range lines {
		r, rc = b.ok(t, ctx, "quote.add_line_item", J{"quote_id": quote, "description": l.description, "quantity": l.quantity, "unit": l.unit, "unit_price_cents": l.price})
		require.Equal(t, l.want, r.int(t, "line_item.line_total_cents"), l.description)
		require.Equal(t, true, r.get(t, "totals_stale"))
		lineIDs = append(lineIDs, r.str(t, "line_item.line_item_id"))
	}
	require.Equal(t, map[string]int{"quote_line_items insert": 1}, writes(rc), "totals were already stale: the quote is not written again")

	r, rc = b.ok(t, ctx, "quote.update_line_item", J{"line_item_id": lineIDs[4], "unit_price_cents": 44_999})
	require.Equal(t, []any{"unit_price_cents"}, r.list(t, "updated_fields"))
	require.Equal(t, int64(44_999), r.int(t, "line_item.line_total_cents"))
	require.Equal(t, map[string]int{"quote_line_items update": 1}, writes(rc))

	// Totals: 936,245 cents subtotal; GST 93,624.5 rounds half up to 93,625; total 1,029,870.
	r, rc = b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": quote})
	require.Equal(t, int64(936_245), r.int(t, "subtotal_cents"))
	require.Equal(t, int64(10), r.int(t, "gst_rate_percent"))
	require.Equal(t, int64(93_625), r.int(t, "gst_cents"))
	require.Equal(t, int64(1_029_870), r.int(t, "total_cents"))
	require.Len(t, r.list(t, "line_items"), 5)
	require.Equal(t, map[string]int{"quotes update": 1}, writes(rc))
	require.Equal(t, float64(1_029_870), rc.Summary["result.total_cents"])
	_, rc = b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": quote})
	require.Empty(t, rc.Effects.DBWrites, "totals already current: nothing written")

	// Sent, then accepted: the lead is quoted, then won.
	r, rc = b.ok(t, ctx, "quote.mark_sent", J{"quote_id": quote, "sent_via": "email"})
	require.Equal(t, "sent", r.str(t, "quote.status"))
	require.Equal(t, "quoted", r.str(t, "lead_stage"))
	require.Equal(t, map[string]int{"quotes update": 1, "leads update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": quote})
	require.Equal(t, "accepted", r.str(t, "quote.status"))
	require.Equal(t, "sent", r.str(t, "previous_status"))
	require.Equal(t, "won", r.str(t, "lead_stage"))
	require.Equal(t, map[string]int{"quotes update": 1, "leads update": 1}, writes(rc))

	// The job: dates, a site note, done.
	r, rc = b.ok(t, ctx, "job.create_from_accepted_quote", J{"quote_id": quote})
	job := r.str(t, "job.job_id")
	require.Equal(t, true, r.get(t, "created"))
	require.Equal(t, "unscheduled", r.str(t, "job.status"))
	require.Equal(t, lead, r.str(t, "job.lead_id"))
	require.Equal(t, map[string]int{"jobs insert": 1}, writes(rc))
	require.Equal(t, quote, rc.IdempotencyKey, "one job per quote: keyed by quote_id")

	start := time.Now().AddDate(0, 0, 7).Format(time.DateOnly)
	end := time.Now().AddDate(0, 0, 9).Format(time.DateOnly)
	r, rc = b.ok(t, ctx, "job.assign_dates", J{"job_id": job, "start_date": start, "end_date": end})
	require.Equal(t, "scheduled", r.str(t, "job.status"))
	require.Equal(t, start, r.str(t, "job.start_date"))
	require.Equal(t, end, r.str(t, "job.end_date"))
	require.Equal(t, map[string]int{"jobs update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "job.add_site_notes", J{"job_id": job, "note": "Side gate code 4821; dog in yard", "author": "Sam"})
	require.Equal(t, int64(1), r.int(t, "note_count"))
	require.Equal(t, map[string]int{"job_site_notes insert": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "job.complete", J{"job_id": job, "completion_notes": "All done, site clean"})
	require.Equal(t, "completed", r.str(t, "job.status"))
	require.Equal(t, map[string]int{"jobs update": 1}, writes(rc))

	// The invoice, for the accepted quote's totals.
	r, rc = b.ok(t, ctx, "invoice.create_from_job", J{"job_id": job})
	invoice := r.str(t, "invoice.invoice_id")
	require.Equal(t, int64(936_245), r.int(t, "invoice.subtotal_cents"))
	require.Equal(t, int64(93_625), r.int(t, "invoice.gst_cents"))
	require.Equal(t, int64(1_029_870), r.int(t, "invoice.total_cents"))
	require.Equal(t, int64(1_029_870), r.int(t, "invoice.balance_cents"))
	require.Equal(t, "unpaid", r.str(t, "invoice.status"))
	issued, err := time.Parse(time.DateOnly, r.str(t, "invoice.issued_on"))
	require.NoError(t, err)
	require.Equal(t, issued.AddDate(0, 0, 14).Format(time.DateOnly), r.str(t, "invoice.due_on"))
	require.Equal(t, map[string]int{"invoices insert": 1}, writes(rc))
	require.Equal(t, []string{invoice}, wroteIDs(rc, "invoices", "insert"))

	// A deposit, then the rest.
	r, rc = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": invoice, "amount_cents": 500_000, "reference": "DEP-ROSSI"})
	require.Equal(t, "partially_paid", r.str(t, "invoice.status"))
	require.Equal(t, "unpaid", r.str(t, "previous_status"))
	require.Equal(t, int64(529_870), r.int(t, "invoice.balance_cents"))
	require.Equal(t, map[string]int{"invoice_payments insert": 1, "invoices update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": invoice, "amount_cents": 529_870, "method": "card", "reference": "FINAL-ROSSI"})
	require.Equal(t, "paid", r.str(t, "invoice.status"))
	require.Equal(t, int64(0), r.int(t, "invoice.balance_cents"))
	require.Equal(t, int64(1_029_870), r.int(t, "invoice.amount_paid_cents"))
	require.NotNil(t, r.get(t, "invoice.paid_at"))
	require.Equal(t, map[string]int{"invoice_payments insert": 1, "invoices update": 1}, writes(rc))
	require.Equal(t, "paid", rc.Summary["result.invoice.status"])

	// The rows agree, and each records the call that created it.
	require.Equal(t, "won", b.str(t, ctx, `SELECT stage FROM leads WHERE id = $1`, lead))
	require.Equal(t, "completed", b.str(t, ctx, `SELECT status FROM inspection_appointments WHERE id = $1`, appointment))
	require.Equal(t, "accepted", b.str(t, ctx, `SELECT status FROM quotes WHERE id = $1`, quote))
	require.Equal(t, "paid", b.str(t, ctx, `SELECT status FROM invoices WHERE id = $1`, invoice))
	require.Equal(t, 1_029_870, b.count(t, ctx, `SELECT sum(amount_cents) FROM invoice_payments WHERE invoice_id = $1`, invoice))
	require.Equal(t, 936_245, b.count(t, ctx, `SELECT sum(line_total_cents) FROM quote_line_items WHERE quote_id = $1`, quote))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM invoices i JOIN core_tool_receipts r ON r.call_id = i.created_by_call
		WHERE i.id = $1 AND r.tool_name <> 'invoice.create_from_job'`, invoice))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE status <> 'succeeded'`))
}

func TestBusinessLockedInspectionRefusesEdits(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	c := b.buildTo(t, ctx, "submitted")

	// Submitted: edits are refused until it is reopened.
	b.refused(t, ctx, registry.CodeConflict, "inspection.add_defect", J{"inspection_id": c.inspection, "title": "Loose tile", "severity": "low"})
	r, _ := b.ok(t, ctx, "inspection.reopen", J{"inspection_id": c.inspection})
	require.Equal(t, "draft", r.str(t, "inspection.status"))
	b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": c.inspection, "title": "Loose tile", "severity": "low"})
	b.ok(t, ctx, "inspection.submit", J{"inspection_id": c.inspection})

	r, rc := b.ok(t, ctx, "inspection.lock", J{"inspection_id": c.inspection})
	require.Equal(t, "locked", r.str(t, "inspection.status"))
	require.Equal(t, map[string]int{"inspections update": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "inspection.lock", J{"inspection_id": c.inspection})
	require.Empty(t, rc.Effects.DBWrites, "locking again changes nothing")

	before := b.count(t, ctx, `SELECT count(*) FROM inspection_measurements`)
	edits := []struct {
		tool  string
		input J
	}{
		{"inspection.add_measurement", J{"inspection_id": c.inspection, "kind": "roof_pitch", "value": 30, "unit": "deg"}},
		{"inspection.add_checklist_item", J{"inspection_id": c.inspection, "item": "Gutters", "result": "ok"}},
		{"inspection.add_photo_ref", J{"inspection_id": c.inspection, "ref": "s3://gem-media/x.jpg"}},
		{"inspection.add_defect", J{"inspection_id": c.inspection, "title": "Moss", "severity": "low"}},
		{"inspection.submit", J{"inspection_id": c.inspection}},
		{"inspection.reopen", J{"inspection_id": c.inspection}},
	}
	for _, e := range edits {
		r := b.refused(t, ctx, registry.CodeConflict, e.tool, e.input)
		require.Contains(t, r.Error.Message, "locked", e.tool)
		require.Contains(t, r.Error.Message, c.inspection, e.tool)
	}
	require.Equal(t, before, b.count(t, ctx, `SELECT count(*) FROM inspection_measurements`), "nothing written")
	require.Equal(t, "locked", b.str(t, ctx, `SELECT status FROM inspections WHERE id = $1`, c.inspection))

	// The database refuses too, whoever writes: a person in psql or a handler with a bug.
	_, err := b.pool.Exec(ctx, `INSERT INTO inspection_measurements (inspection_id, kind, value, unit, metric_value, metric_unit)
		VALUES ($1, 'roof_pitch', 30, 'deg', 30, 'deg')`, c.inspection)
	require.ErrorContains(t, err, "is locked")
	require.ErrorContains(t, err, "SQLSTATE 55000")
	_, err = b.pool.Exec(ctx, `UPDATE inspections SET summary = 'changed' WHERE id = $1`, c.inspection)
	require.ErrorContains(t, err, "SQLSTATE 55000")
}

func TestBusinessInvalidTransitions(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	draftInspection := b.buildTo(t, ctx, "inspection")
	empty, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": draftInspection.lead})
	draftQuote := b.buildTo(t, ctx, "quote")
	sent := b.buildTo(t, ctx, "sent")
	accepted := b.buildTo(t, ctx, "accepted")
	declined := b.buildTo(t, ctx, "sent")
	b.ok(t, ctx, "quote.mark_declined", J{"quote_id": declined.quote, "reason": "too dear"})
	unscheduled := b.buildTo(t, ctx, "job")
	completed := b.buildTo(t, ctx, "completed")
	invoiced := b.buildTo(t, ctx, "invoice")
	b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": invoiced.invoice, "amount_cents": invoiced.totalCents})

	stale, _ := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": draftQuote.inspection})
	staleQuote := stale.str(t, "quote.quote_id")
	b.ok(t, ctx, "quote.add_line_item", J{"quote_id": staleQuote, "description": "x", "quantity": 1, "unit_price_cents": 100})
	noLines, _ := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": draftQuote.inspection})

	lostLead := b.newLead(t, ctx)
	b.ok(t, ctx, "leads.mark_lost", J{"lead_id": lostLead, "reason": "no answer", "reason_code": "no_response"})
	task, _ := b.ok(t, ctx, "os.create_task", J{"title": "done already"})
	b.ok(t, ctx, "os.complete_task", J{"task_id": task.str(t, "task_id")})
	reminder, _ := b.ok(t, ctx, "os.create_reminder", J{"title": "x", "remind_at": time.Now().UTC().Format(time.RFC3339)})
	b.ok(t, ctx, "os.dismiss_reminder", J{"reminder_id": reminder.str(t, "reminder_id")})

	tests := []struct {
		name  string
		tool  string
		input J
		want  string
	}{
		{"quote from a draft inspection", "quote.create_from_inspection", J{"inspection_id": draftInspection.inspection}, "draft"},
		{"submit with nothing recorded", "inspection.submit", J{"inspection_id": empty.str(t, "inspection_id")}, "nothing recorded"},
		{"lock a draft", "inspection.lock", J{"inspection_id": draftInspection.inspection}, "draft"},
		{"accept a draft quote", "quote.mark_accepted", J{"quote_id": draftQuote.quote}, "draft"},
		{"decline a draft quote", "quote.mark_declined", J{"quote_id": draftQuote.quote}, "draft"},
		{"send with stale totals", "quote.mark_sent", J{"quote_id": staleQuote}, "stale"},
		{"send without lines", "quote.mark_sent", J{"quote_id": noLines.str(t, "quote.quote_id")}, "no line items"},
		{"send an accepted quote", "quote.mark_sent", J{"quote_id": accepted.quote}, "accepted"},
		{"decline an accepted quote", "quote.mark_declined", J{"quote_id": accepted.quote}, "accepted"},
		{"accept a declined quote", "quote.mark_accepted", J{"quote_id": declined.quote}, "declined"},
		{"add a line to a sent quote", "quote.add_line_item", J{"quote_id": sent.quote, "description": "extra", "quantity": 1, "unit_price_cents": 1}, "sent"},
		{"job from a sent quote", "job.create_from_accepted_quote", J{"quote_id": sent.quote}, "sent"},
		{"job from a declined quote", "job.create_from_accepted_quote", J{"quote_id": declined.quote}, "declined"},
		{"complete an unscheduled job", "job.complete", J{"job_id": unscheduled.job}, "no dates"},
		{"dates for a completed job", "job.assign_dates", J{"job_id": completed.job, "start_date": "2031-01-01"}, "completed"},
		{"invoice an unfinished job", "invoice.create_from_job", J{"job_id": unscheduled.job}, "unscheduled"},
		{"overdue before the due date", "invoice.mark_overdue", J{"invoice_id": b.buildTo(t, ctx, "invoice").invoice}, "not overdue"},
		{"overdue when paid", "invoice.mark_overdue", J{"invoice_id": invoiced.invoice}, "paid"},
		{"pay a paid invoice", "invoice.add_payment", J{"invoice_id": invoiced.invoice, "amount_cents": 1}, "already paid"},
		{"book a lost lead", "leads.schedule_inspection", J{"lead_id": lostLead, "scheduled_for": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, "lost"},
		{"lose a won lead", "leads.mark_lost", J{"lead_id": accepted.lead, "reason": "changed mind"}, "won"},
		{"defer a done task", "os.defer_task", J{"task_id": task.str(t, "task_id"), "until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, "done"},
		{"complete a dismissed reminder", "os.complete_reminder", J{"reminder_id": reminder.str(t, "reminder_id")}, "dismissed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.refused(t, ctx, registry.CodeConflict, tt.tool, tt.input)
			require.Contains(t, r.Error.Message, tt.want)
		})
	}

	// The same move again is not a conflict: it changes nothing.
	r, rc := b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": accepted.quote})
	require.Equal(t, false, r.get(t, "changed"))
	require.Equal(t, "accepted", r.str(t, "previous_status"))
	require.Empty(t, rc.Effects.DBWrites)
	r, rc = b.ok(t, ctx, "quote.mark_declined", J{"quote_id": declined.quote})
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites)
}

func TestBusinessOverpaymentRefused(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	c := b.buildTo(t, ctx, "invoice")
	require.Equal(t, int64(550_000), c.totalCents, "100 m2 at $50.00 plus 10% GST")

	r := b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": c.totalCents + 1})
	require.Contains(t, r.Error.Message, "overpayment")
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM invoice_payments`))

	res, rc := b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": 200_000, "reference": "TX-1"})
	require.Equal(t, "partially_paid", res.str(t, "invoice.status"))
	require.Equal(t, int64(350_000), res.int(t, "invoice.balance_cents"))
	require.Equal(t, map[string]int{"invoice_payments insert": 1, "invoices update": 1}, writes(rc))

	// The same bank reference again is the same payment: not recorded twice.
	res, rc = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": 200_000, "reference": "TX-1"})
	require.Equal(t, false, res.get(t, "created"))
	require.Equal(t, int64(350_000), res.int(t, "invoice.balance_cents"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": 1, "reference": "TX-1"})

	b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": 350_001})
	res, _ = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": 350_000})
	require.Equal(t, "paid", res.str(t, "invoice.status"))
	b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": c.invoice, "amount_cents": 1})

	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM invoice_payments`))
	require.Equal(t, 550_000, b.count(t, ctx, `SELECT amount_paid_cents FROM invoices`))
	// The database refuses overpayment too.
	_, err := b.pool.Exec(ctx, `UPDATE invoices SET amount_paid_cents = total_cents + 1`)
	require.ErrorContains(t, err, "invoices_no_overpayment")
}

func TestBusinessInvoiceOverdue(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	late := b.buildTo(t, ctx, "invoice")
	later := b.buildTo(t, ctx, "invoice")
	current := b.buildTo(t, ctx, "invoice")
	paid := b.buildTo(t, ctx, "invoice")
	b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": paid.invoice, "amount_cents": paid.totalCents})
	// The due dates pass: move the invoices back in time (as a person would in psql).
	_, err := b.pool.Exec(ctx, `UPDATE invoices SET issued_on = issued_on - 40, due_on = due_on - 40 WHERE id = ANY($1::uuid[])`,
		[]string{late.invoice, paid.invoice})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE invoices SET issued_on = issued_on - 20, due_on = due_on - 20 WHERE id = $1`, later.invoice)
	require.NoError(t, err)

	r, _ := b.ok(t, ctx, "invoice.list_overdue", J{})
	require.Equal(t, int64(2), r.int(t, "total_count"))
	require.Equal(t, late.invoice, r.str(t, "invoices.0.invoice_id"), "oldest due first")
	require.Equal(t, int64(26), r.int(t, "invoices.0.days_overdue"))
	require.Equal(t, "unpaid", r.str(t, "invoices.0.status"), "listed before being marked")
	require.Equal(t, late.totalCents+later.totalCents, r.int(t, "total_outstanding_cents"))

	r, rc := b.ok(t, ctx, "invoice.mark_overdue", J{"invoice_id": late.invoice})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, "overdue", r.str(t, "marked.0.status"))
	require.Equal(t, map[string]int{"invoices update": 1}, writes(rc))

	// The sweep marks the rest, not the current or paid ones, nor the one already marked.
	r, rc = b.ok(t, ctx, "invoice.mark_overdue", J{})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, later.invoice, r.str(t, "marked.0.invoice_id"))
	require.Equal(t, []string{later.invoice}, wroteIDs(rc, "invoices", "update"))
	r, rc = b.ok(t, ctx, "invoice.mark_overdue", J{})
	require.Equal(t, int64(0), r.int(t, "count"))
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "unpaid", b.str(t, ctx, `SELECT status FROM invoices WHERE id = $1`, current.invoice))

	// Part-paid, still overdue; fully paid, paid.
	r, _ = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": late.invoice, "amount_cents": 1000})
	require.Equal(t, "overdue", r.str(t, "invoice.status"))
	r, _ = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": late.invoice, "amount_cents": late.totalCents - 1000})
	require.Equal(t, "paid", r.str(t, "invoice.status"))
	r, _ = b.ok(t, ctx, "invoice.list_overdue", J{})
	require.Equal(t, int64(1), r.int(t, "total_count"))
}

func TestBusinessMeasurementUnits(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	c := b.buildTo(t, ctx, "inspection")
	bad := []J{
		{"kind": "roof_area", "value": 10, "unit": "m"},           // an area in metres
		{"kind": "roof_pitch", "value": 30, "unit": "m2"},         // a pitch in m²
		{"kind": "roof_pitch", "value": 95, "unit": "deg"},        // steeper than vertical
		{"kind": "downpipe_count", "value": 2.5, "unit": "count"}, // half a downpipe
		{"kind": "gutter_length", "value": 1.0001, "unit": "m"},   // more than 3 decimals
	}
	for _, in := range bad {
		in["inspection_id"] = c.inspection
		b.refused(t, ctx, registry.CodeValidation, "inspection.add_measurement", in)
	}
	r, _ := b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": c.inspection, "kind": "fascia_length", "value": 10, "unit": "ft", "label": "front"})
	requireDecimal(t, "3.048", r.get(t, "measurement.metric_value"), "10 ft")
	r, _ = b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": c.inspection, "kind": "other", "value": 12, "unit": "count", "label": "skylights"})
	require.Equal(t, "count", r.str(t, "measurement.metric_unit"))

	r, _ = b.ok(t, ctx, "inspection.get", J{"inspection_id": c.inspection})
	require.Len(t, r.list(t, "measurements"), 3, "the fixture's and the two above")
}

func TestBusinessInspectionPhotoFromMediaAsset(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	c := b.buildTo(t, ctx, "inspection")
	a, _ := b.ok(t, ctx, "media.register_asset", J{"file_ref": "s3://gem-media/leads/ann/roof-1.jpg", "inspection_id": c.inspection})
	asset := a.str(t, "asset.asset_id")

	r, _ := b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": c.inspection, "ref": "s3://gem-media/leads/ann/roof-1.jpg", "asset_id": asset})
	require.Equal(t, asset, r.str(t, "photo.asset_id"))
	r, rc := b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": c.inspection, "ref": "s3://gem-media/leads/ann/roof-1.jpg"})
	require.Equal(t, false, r.get(t, "created"))
	require.Empty(t, rc.Effects.DBWrites)
}
