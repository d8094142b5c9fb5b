package executor_test

// Hostile-client tests: GEM's tools called with plain SQL inserts as an attacker would (bad bytes, huge
// values, odd numbers and dates, races, non-Latin-1 documents). Some reproduced a problem a hostile review
// found (fixed since); the others pin behaviour that held then.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestHostileBadBytesHOLD (HOLDS): text PostgreSQL cannot store never reaches the queue (the insert itself
// is refused), and absurd JSON — 10,000 levels deep, numbers past int64 or float64, -0 — ends with one
// failed receipt whose code is validation_error, never a crash.
func TestHostileBadBytesHOLD(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	for _, in := range []string{
		`{"domain":"business","title":"a\u0000b","content":"x"}`,
		`{"domain":"business","title":"a\ud800b","content":"x"}`,
	} {
		_, err := b.pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_note', $1::text::jsonb)`, in)
		require.Error(t, err, in)
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_note', convert_from('\x7b2261223a2261ff227d'::bytea, 'UTF8')::jsonb)`)
	require.Error(t, err, "invalid UTF-8")

	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	deepObj := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	b.refused(t, ctx, registry.CodeValidation, "os.create_note", `{"domain":"business","title":"t","content":"c","x":`+deep+`}`)
	b.refused(t, ctx, registry.CodeValidation, "identity.update_self_model", `{"patch":`+deepObj+`}`)

	f := b.jobTo(t, ctx, "invoice")
	for _, n := range []string{"1e400", "-0", "9223372036854775808", "1.5", "-1", "0.0001"} {
		b.refused(t, ctx, registry.CodeValidation, "invoice.add_payment", fmt.Sprintf(`{"invoice_id":%q,"amount_cents":%s}`, f.invoice, n))
	}
	r := b.run(t, ctx, "invoice.add_payment", fmt.Sprintf(`{"invoice_id":%q,"amount_cents":9223372036854775807}`, f.invoice))
	require.Equal(t, registry.CodeConflict, r.Error.Code, "overpayment: %s", r.Error.Message)

	quote := b.draftQuote(t, ctx, b.newLead(t, ctx))
	for _, q := range []string{"1e400", "-0", "9223372036854775808", "0.0005", "100000.001", "1e-400"} {
		b.refused(t, ctx, registry.CodeValidation, "quote.update_line_items",
			fmt.Sprintf(`{"quote_id":%q,"line_items":[{"description":"d","unit_price_cents":100,"quantity":%s}]}`, quote, q))
	}
	for _, p := range []string{"1e400", "9223372036854775808", "1000000001", "1000000000.5"} {
		b.refused(t, ctx, registry.CodeValidation, "quote.update_line_items",
			fmt.Sprintf(`{"quote_id":%q,"line_items":[{"description":"d","unit_price_cents":%s,"quantity":1}]}`, quote, p))
	}
	for _, d := range []string{"2026-02-30T00:00:00Z", "9999-12-31T23:59:60Z", "2026-11-01T00:00:00+99:00"} {
		b.refused(t, ctx, registry.CodeValidation, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 1, "paid_at": d})
	}
	b.refused(t, ctx, registry.CodeValidation, "calendar.find_slots", J{"from": "2026-12-01T00:00:00Z", "to": "2036-12-01T00:00:00Z"})
	b.refused(t, ctx, registry.CodeValidation, "calendar.find_slots", J{"from": "0000-01-01T00:00:00Z", "to": "9999-12-31T23:59:59Z"})

	items := make([]J, 10000)
	for i := range items {
		items[i] = J{"channel": "gmb", "title": "t", "body": "b", "scheduled_at": "2027-01-01T00:00:00Z"}
	}
	b.refused(t, ctx, registry.CodeValidation, "marketing.schedule_content", J{"items": items})
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	b.refused(t, ctx, registry.CodeNotFound, "media.propose_rename_map", J{"asset_ids": ids})

	// LIKE metacharacters are searched for literally: '%' alone does not match every receipt.
	b.ok(t, ctx, "os.create_note", J{"domain": "business", "title": "plain", "content": "no percent sign"})
	r2, _ := b.ok(t, ctx, "os.audit_log_search", J{"query": "%%%%", "limit": 5})
	require.EqualValues(t, 0, r2.int(t, "count"))
	r2, _ = b.ok(t, ctx, "os.audit_log_search", J{"query": `\%`, "limit": 5})
	require.EqualValues(t, 0, r2.int(t, "count"))
}

// TestHostileHugePhone: leads.create with a 10 MB phone number (all digits) fails with
// handler_error and PostgreSQL's raw "index row requires 114488 bytes, maximum size is 8191 (SQLSTATE
// 54000)"; a 3,000-digit phone is stored as a lead. Expected: validation_error naming /phone (a phone
// number has a sane maximum length), as a 10 MB name already is ("name is longer than 200 characters").
// Since inputs are bounded (GEM_MAX_INPUT_BYTES, 4 MiB), the 10 MB input is refused input_too_large without
// being read; a 1 MB phone still reaches validation.
func TestHostileHugePhone(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	b.refused(t, ctx, registry.CodeInputTooLarge, "leads.create", J{"name": "Big", "phone": strings.Repeat("1", 10_000_000), "suburb": "X"})
	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "Big", "phone": strings.Repeat("1", 1_000_000), "suburb": "X"})
	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "Long", "phone": strings.Repeat("1", 3000), "suburb": "X"})
}

// TestHostileDecisionSupportHOLDS: the most options and constraints one call may weigh (50 each) are
// answered, and one option more is refused at once.
func TestHostileDecisionSupportHOLDS(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	opts := make([]string, 51)
	cons := J{}
	for i := range opts {
		opts[i] = fmt.Sprintf("opt %d", i)
		cons[fmt.Sprintf("c%d", i)] = i
	}
	delete(cons, "c50")
	b.ok(t, ctx, "personal.decision_support", J{"decision": "which", "options": opts[:50], "constraints": cons})
	b.refused(t, ctx, registry.CodeValidation, "personal.decision_support", J{"decision": "which", "options": opts, "constraints": cons})
}

// TestHostileDecisionSupportUnbounded: 10,000 options and 1,000 constraints made 10 million checks; the
// call ended `timeout` after 45 s while the abandoned goroutine kept building its result (the executor grew
// from 60 MB to 1.8 GB). Now bounded: a validation_error at once. Before: expected a bound on options × constraints
// (validation_error at once, as marketing.schedule_content's 50 items), or a handler that stops when
// cancelled.
func TestHostileDecisionSupportUnbounded(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	opts := make([]string, 10000)
	for i := range opts {
		opts[i] = fmt.Sprintf("opt %d", i)
	}
	cons := J{}
	for i := range 1000 {
		cons[fmt.Sprintf("c%d", i)] = i
	}
	start := time.Now()
	r := b.run(t, ctx, "personal.decision_support", J{"decision": "which", "options": opts, "constraints": cons})
	require.NotEqual(t, registry.CodeTimeout, errCode(r), "the handler ran past its timeout")
	require.Equal(t, registry.CodeValidation, errCode(r), "options × constraints are bounded")
	require.Less(t, time.Since(start), 10*time.Second)
}

func errCode(r *registry.Receipt) registry.ErrorCode {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// TestHostileEventSpanningMillennia: calendar.create_event accepts an event from 0000-01-01 to
// 9999-12-31 (stored as 1 BC to 9999); from then on calendar.find_slots finds no free slot in any range,
// for every user. Expected: validation_error for an event this long (find_slots itself refuses ranges over
// 92 days), or at least years outside a sane range.
func TestHostileEventSpanningMillennia(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	// A working week with nothing booked has free slots.
	week := J{"from": "2027-03-01T00:00:00Z", "to": "2027-03-05T00:00:00Z", "duration_minutes": 60, "max_slots": 5}
	r, _ := b.ok(t, ctx, "calendar.find_slots", week)
	require.Positive(t, r.int(t, "count"))
	rc := b.run(t, ctx, "calendar.create_event", J{"title": "forever", "start_at": "0000-01-01T00:00:00Z", "end_at": "9999-12-31T23:59:59Z"})
	r, _ = b.ok(t, ctx, "calendar.find_slots", week)
	require.Positive(t, r.int(t, "count"), "one event (%s) blocks every slot of every range", rc.Status)
}

// parallelRuns makes n calls at once with plain SQL and waits for every receipt.
func (b *testBundle) parallelRuns(t *testing.T, n int, input func(i int) (string, J)) []*registry.Receipt {
	t.Helper()
	ctx := t.Context()
	out := make([]*registry.Receipt, n)
	ids := make([]uuid.UUID, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tool, in := input(i)
			raw := mustJSON(t, in)
			var id uuid.UUID
			if err := b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`, tool, raw).Scan(&id); err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	rs := b.wait(t, ctx, ids...)
	for i, id := range ids {
		out[i] = rs[id]
		require.NotNil(t, out[i])
	}
	for _, id := range ids {
		require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE call_id = $1`, id), "exactly one receipt")
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// TestHostileRacesHOLD (HOLDS): concurrent identical calls leave the database consistent — one lead per
// phone, payments never past the total, one set of quote lines, a rollback done once, no defect after the
// lock.
func TestHostileRacesHOLD(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	phone := newPhone()
	b.parallelRuns(t, 50, func(int) (string, J) {
		return "leads.create", J{"name": "Race Lead", "phone": phone, "suburb": "Newtown"}
	})
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads WHERE phone = $1`, phone))

	f := b.jobTo(t, ctx, "invoice") // total 823,633 cents
	rs := b.parallelRuns(t, 20, func(i int) (string, J) {
		return "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 50_000, "reference": fmt.Sprintf("race-%d", i)}
	})
	paid := b.count(t, ctx, `SELECT coalesce(sum(amount_cents), 0)::int FROM invoice_payments WHERE invoice_id = $1`, f.invoice)
	require.LessOrEqual(t, paid, int(f.totalCents))
	succeeded := 0
	for _, r := range rs {
		if r.Status == registry.StatusSucceeded {
			succeeded++
		}
	}
	require.Equal(t, succeeded*50_000, paid)
	require.Equal(t, int(f.totalCents)-paid, b.count(t, ctx, `SELECT balance_cents::int FROM invoices WHERE id = $1`, f.invoice))

	quote := b.draftQuote(t, ctx, b.newLead(t, ctx))
	b.parallelRuns(t, 20, func(i int) (string, J) {
		lines := []J{}
		for j := 0; j <= i%5; j++ {
			lines = append(lines, J{"description": fmt.Sprintf("set%d line%d", i, j), "unit_price_cents": 1000 * (i + 1), "quantity": 1})
		}
		return "quote.update_line_items", J{"quote_id": quote, "line_items": lines}
	})
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(DISTINCT split_part(description, ' ', 1)) FROM quote_line_items WHERE quote_id = $1`, quote))
	require.Equal(t, b.count(t, ctx, `SELECT count(*) FROM quote_line_items WHERE quote_id = $1`, quote),
		b.count(t, ctx, `SELECT max(position) FROM quote_line_items WHERE quote_id = $1`, quote))

	note := b.run(t, ctx, "os.create_note", J{"domain": "business", "title": "rollback target", "content": "x"})
	rs = b.parallelRuns(t, 10, func(int) (string, J) { return "os.rollback_last_action", J{"call_id": note.CallID.String()} })
	done := 0
	for _, r := range rs {
		if r.Status == registry.StatusSucceeded {
			done++
		} else {
			require.Equal(t, registry.CodeConflict, r.Error.Code)
		}
	}
	require.Equal(t, 1, done)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_rollbacks WHERE call_id = $1`, note.CallID))

	lead := b.newLead(t, ctx)
	ri, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": lead})
	insp := ri.str(t, "inspection_id")
	lockRace(t, b, insp)
	b.refused(t, ctx, registry.CodeConflict, "inspection.add_defect", J{"inspection_id": insp, "category": "tile"})
}

// lockRace locks an inspection while 20 defects are added to it, all at once. One defect is recorded first:
// an inspection with nothing recorded may not be locked, and the lock must not lose the race that way.
func lockRace(t *testing.T, b *testBundle, insp string) {
	t.Helper()
	b.ok(t, context.Background(), "inspection.add_defect", J{"inspection_id": insp, "category": "tile", "notes": "first"})
	b.parallelRuns(t, 21, func(i int) (string, J) {
		if i == 10 {
			return "inspection.lock", J{"inspection_id": insp}
		}
		return "inspection.add_defect", J{"inspection_id": insp, "category": "tile", "notes": fmt.Sprintf("d%d", i)}
	})
}

// TestHostileLockedAtBeforeItsDefects: inspection.lock and add_defect are serialized (the
// row is locked FOR UPDATE, and a defect after the lock is refused), but locked_at is the lock
// transaction's start (now()) while defects are stamped with clock_timestamp(): after 20 add_defect racing
// one lock, most accepted defects (14 of 16 in one run, none in the lock's transaction) have created_at
// later than the inspection's locked_at, so an audit of "changes after the lock" finds changes that were
// not. Expected: no accepted defect stamped after locked_at.
func TestHostileLockedAtBeforeItsDefects(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	ri, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": b.newLead(t, ctx)})
	insp := ri.str(t, "inspection_id")
	lockRace(t, b, insp)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM inspection_defects d JOIN inspections i ON i.id = d.inspection_id
		WHERE i.id = $1 AND d.created_at > i.locked_at`, insp), "of %d defects",
		b.count(t, ctx, `SELECT count(*) FROM inspection_defects WHERE inspection_id = $1`, insp))
}

// TestHostilePDFs: a quote of 500
// lines makes a 10-page PDF with every line, the same bytes twice. Characters outside Windows-1252 (Chinese,
// emoji, Cyrillic, a combining accent) print as "." (as docs/gem-compatibility.md says) — so a Chinese
// customer's name and unit vanish from the quote without a word in the receipt.
func TestHostilePDFs(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	files := t.TempDir()
	b.business.FileStore = files
	b.startExecutor(t, nil)

	quote := b.draftQuote(t, ctx, b.newLead(t, ctx))
	lines := make([]J, 500)
	for i := range lines {
		lines[i] = J{"description": fmt.Sprintf("Line %03d colorbond sheet", i), "unit_price_cents": 1000 + i, "quantity": 1.5}
	}
	b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": lines})
	b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": quote})
	r1, _ := b.ok(t, ctx, "quote.generate_pdf", J{"quote_id": quote})
	r2, _ := b.ok(t, ctx, "quote.generate_pdf", J{"quote_id": quote})
	require.Equal(t, r1.str(t, "file_ref"), r2.str(t, "file_ref"), "the same bytes twice")
	text := storedPDFText(t, files, r1.str(t, "file_ref"))
	for _, i := range []int{0, 250, 499} {
		require.Contains(t, text, fmt.Sprintf("Line %03d colorbond sheet", i))
	}

	phone := newPhone()
	rl, _ := b.ok(t, ctx, "leads.create", J{"name": "王小明 😀 Zoë", "phone": phone, "suburb": "Sydney"})
	q2 := b.draftQuote(t, ctx, rl.str(t, "lead_id"))
	b.ok(t, ctx, "quote.update_line_items", J{"quote_id": q2, "line_items": []J{
		{"description": "更换瓦片 Replace tiles 🧱", "unit_price_cents": 12345, "quantity": 2, "unit": "平方米"},
		{"description": "Zoë’s “special” — €100", "unit_price_cents": 100, "quantity": 1},
	}})
	b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": q2})
	r3, _ := b.ok(t, ctx, "quote.generate_pdf", J{"quote_id": q2})
	text = storedPDFText(t, files, r3.str(t, "file_ref"))
	require.Contains(t, text, "Zoë’s “special” — €100", "Windows-1252 punctuation survives")
	require.Contains(t, text, "Replace tiles")
	require.Contains(t, text, "... . Zoë", "outside Windows-1252 prints as . (docs/gem-compatibility.md): %s", text)
}

// TestHostileFirstDayOfYearOne: 0001-01-01 is a day the schemas accept (format date) like any other. It was
// read as "no day" (the zero Date) once dates were one type: a money report to that day reported this month
// instead, a report from it was not refused as too long, a campaign's period_start of that day was stored
// and returned as null, a period_end of that day before its period_start was logged, and job.assign_dates
// refused an end_date of that day naming an empty day ("end_date  is before ...").
func TestHostileFirstDayOfYearOne(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	const day = "0001-01-01"

	for _, tool := range []string{"finance.generate_cashflow_snapshot", "finance.generate_pnl_snapshot"} {
		r, _ := b.ok(t, ctx, tool, J{"to": day})
		require.Equal(t, day, r.str(t, "summary.from"), tool)
		require.Equal(t, day, r.str(t, "summary.to"), tool)
		refused := b.refused(t, ctx, registry.CodeValidation, tool, J{"from": day})
		require.Contains(t, refused.Error.Message, "from 0001-01-01 to ", tool)
		require.Contains(t, refused.Error.Message, "is more than 3660 days", tool)
	}

	r, _ := b.ok(t, ctx, "marketing.log_campaign_result", J{"channel": "meta", "metrics": J{"clicks": 1}, "period_start": day})
	require.Equal(t, day, r.str(t, "period_start"))
	require.Equal(t, day, b.str(t, ctx, `SELECT period_start::text FROM marketing_campaign_results WHERE id = $1`, r.str(t, "log_id")))
	refused := b.refused(t, ctx, registry.CodeValidation, "marketing.log_campaign_result",
		J{"channel": "meta", "metrics": J{"clicks": 1}, "period_start": "2026-01-01", "period_end": day})
	require.Equal(t, "period_end 0001-01-01 is before period_start 2026-01-01", refused.Error.Message)

	f := b.jobTo(t, ctx, "job")
	refused = b.refused(t, ctx, registry.CodeValidation, "job.assign_dates", J{"job_id": f.job, "start_date": "2026-01-05", "end_date": day})
	require.Equal(t, "end_date 0001-01-01 is before start_date 2026-01-05", refused.Error.Message)
	r, _ = b.ok(t, ctx, "job.assign_dates", J{"job_id": f.job, "start_date": day})
	require.Equal(t, day, r.str(t, "start_date"))
	require.Equal(t, day, r.str(t, "end_date"))
}
