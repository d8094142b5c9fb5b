package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// J is a call's input.
type J = map[string]any

// res is a call's result, decoded with exact numbers.
type res map[string]any

// get walks a dotted path through objects and lists ("receipts.0.call_id").
func (r res) get(t *testing.T, path string) any {
	t.Helper()
	var v any = map[string]any(r)
	for _, k := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			v, ok = c[k]
			require.True(t, ok, "%s: no %q", path, k)
		case []any:
			i, err := strconv.Atoi(k)
			require.NoError(t, err, "%s: %q is not a list index", path, k)
			require.Less(t, i, len(c), "%s: the list has %d items", path, len(c))
			v = c[i]
		default:
			t.Fatalf("%s: %q is not inside an object or list", path, k)
		}
	}
	return v
}

func (r res) str(t *testing.T, path string) string {
	t.Helper()
	s, ok := r.get(t, path).(string)
	require.True(t, ok, "%s is not a string: %v", path, r.get(t, path))
	return s
}

func (r res) int(t *testing.T, path string) int64 {
	t.Helper()
	n, ok := r.get(t, path).(json.Number)
	require.True(t, ok, "%s is not a number: %v", path, r.get(t, path))
	i, err := n.Int64()
	require.NoError(t, err, path)
	return i
}

func (r res) list(t *testing.T, path string) []any {
	t.Helper()
	l, ok := r.get(t, path).([]any)
	require.True(t, ok, "%s is not a list: %v", path, r.get(t, path))
	return l
}

// run makes a call with plain SQL and waits for its receipt. input is a JSON string or a J.
func (b *testBundle) run(t *testing.T, ctx context.Context, tool string, input any) *registry.Receipt {
	t.Helper()
	s, ok := input.(string)
	if !ok {
		raw, err := json.Marshal(input)
		require.NoError(t, err)
		s = string(raw)
	}
	return b.waitOne(t, ctx, b.call(t, ctx, tool, s))
}

// ok runs a call that must succeed and returns its result.
func (b *testBundle) ok(t *testing.T, ctx context.Context, tool string, input any) (res, *registry.Receipt) {
	t.Helper()
	r := b.run(t, ctx, tool, input)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %+v", tool, r.Error)
	return decodeResult(t, r), r
}

func decodeResult(t *testing.T, r *registry.Receipt) res {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Result))
	dec.UseNumber()
	var out res
	require.NoError(t, dec.Decode(&out))
	return out
}

// refused runs a call that must fail with code, having written nothing.
func (b *testBundle) refused(t *testing.T, ctx context.Context, code registry.ErrorCode, tool string, input any) *registry.Receipt {
	t.Helper()
	r := b.run(t, ctx, tool, input)
	require.Equal(t, registry.StatusFailed, r.Status, "%s succeeded: %s", tool, r.Result)
	require.Equal(t, code, r.Error.Code, "%s: %s", tool, r.Error.Message)
	require.Empty(t, r.Effects.DBWrites, tool)
	return r
}

// writes sums a receipt's effects.db_writes as "table op" → rows.
func writes(r *registry.Receipt) map[string]int {
	w := map[string]int{}
	for _, d := range r.Effects.DBWrites {
		w[d.Table+" "+d.Op] += d.Count
	}
	return w
}

// wroteIDs returns the ids a receipt lists for one table and operation.
func wroteIDs(r *registry.Receipt, table, op string) []string {
	for _, d := range r.Effects.DBWrites {
		if d.Table == table && d.Op == op {
			return d.IDs
		}
	}
	return nil
}

// requireDecimal checks an exact decimal number in a result.
func requireDecimal(t *testing.T, want string, got any, msg string) {
	t.Helper()
	n, ok := got.(json.Number)
	require.True(t, ok, "%s: %v is not a number", msg, got)
	var a, b float64
	_, err := fmt.Sscan(want, &a)
	require.NoError(t, err)
	_, err = fmt.Sscan(n.String(), &b)
	require.NoError(t, err)
	require.Equal(t, a, b, "%s: %s", msg, n)
}

// str returns a single text value from SQL.
func (b *testBundle) str(t *testing.T, ctx context.Context, sql string, args ...any) string {
	t.Helper()
	var s string
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&s))
	return s
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

var phoneSeq atomic.Int64

// newPhone returns a mobile number no other lead of the test run has.
func newPhone() string {
	return fmt.Sprintf("0412 %06d", phoneSeq.Add(1))
}

// newLead creates a lead with a phone number of its own and returns its id.
func (b *testBundle) newLead(t *testing.T, ctx context.Context) string {
	t.Helper()
	r, _ := b.ok(t, ctx, "leads.create", J{"name": "Fixture Lead", "phone": newPhone(), "email": "lead@example.com"})
	return r.str(t, "lead.lead_id")
}

func TestBusinessLeadCreatedTwiceSamePhone(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	first := b.call(t, ctx, "leads.create", `{"name": "Tom Nguyen", "phone": "0400 111 222", "source": "referral"}`)
	r1 := b.waitOne(t, ctx, first)
	require.Equal(t, registry.StatusSucceeded, r1.Status, "%+v", r1.Error)
	require.False(t, r1.IdempotencyHit)
	require.Equal(t, map[string]int{"leads insert": 1}, writes(r1))

	second := b.call(t, ctx, "leads.create", `{"name": "Tom N.", "phone": "0400 111 222", "source": "phone"}`)
	r2 := b.waitOne(t, ctx, second)
	require.Equal(t, registry.StatusSucceeded, r2.Status)
	require.True(t, r2.IdempotencyHit)
	require.Equal(t, &first, r2.IdempotencyOf)
	require.Equal(t, "0400 111 222", r2.IdempotencyKey)
	require.JSONEq(t, string(r1.Result), string(r2.Result), "the second call answers with the first call's result")
	require.Empty(t, r2.Effects.DBWrites, "the handler did not run again")

	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads`))
	require.Equal(t, "Tom Nguyen", b.str(t, ctx, `SELECT name FROM leads`))
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE tool_name = 'leads.create'`))
}

func TestBusinessNotFound(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	missing := uuid.NewString()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		tool  string
		input J
	}{
		{"os.complete_reminder", J{"reminder_id": missing}},
		{"os.dismiss_reminder", J{"reminder_id": missing}},
		{"os.create_reminder", J{"title": "x", "remind_at": future, "lead_id": missing}},
		{"os.defer_task", J{"task_id": missing, "until": future}},
		{"leads.add_source", J{"lead_id": missing, "source": "google"}},
		{"leads.add_photos_link", J{"lead_id": missing, "url": "https://photos.example.com/a"}},
		{"leads.schedule_inspection", J{"lead_id": missing, "scheduled_for": future}},
		{"leads.mark_lost", J{"lead_id": missing, "reason": "went elsewhere"}},
		{"entity.create", J{"kind": "site", "name": "12 Station St", "parent_id": missing}},
		{"entity.update", J{"entity_id": missing, "name": "x"}},
		{"entity.get", J{"entity_id": missing}},
		{"inspection.create", J{"lead_id": missing}},
		{"inspection.get", J{"inspection_id": missing}},
		{"inspection.add_checklist_item", J{"inspection_id": missing, "item": "Gutters", "result": "ok"}},
		{"inspection.add_measurement", J{"inspection_id": missing, "kind": "roof_area", "value": 1, "unit": "m2"}},
		{"inspection.add_photo_ref", J{"inspection_id": missing, "ref": "x.jpg"}},
		{"inspection.add_defect", J{"inspection_id": missing, "title": "x", "severity": "low"}},
		{"inspection.submit", J{"inspection_id": missing}},
		{"inspection.reopen", J{"inspection_id": missing}},
		{"inspection.lock", J{"inspection_id": missing}},
		{"quote.create_from_inspection", J{"inspection_id": missing}},
		{"quote.add_line_item", J{"quote_id": missing, "description": "x", "quantity": 1, "unit_price_cents": 1}},
		{"quote.update_line_item", J{"line_item_id": missing, "unit_price_cents": 1}},
		{"quote.calculate_totals", J{"quote_id": missing}},
		{"quote.mark_sent", J{"quote_id": missing}},
		{"quote.mark_accepted", J{"quote_id": missing}},
		{"quote.mark_declined", J{"quote_id": missing}},
		{"job.create_from_accepted_quote", J{"quote_id": missing}},
		{"job.assign_dates", J{"job_id": missing, "start_date": "2030-01-01"}},
		{"job.add_site_notes", J{"job_id": missing, "note": "x"}},
		{"job.complete", J{"job_id": missing}},
		{"invoice.create_from_job", J{"job_id": missing}},
		{"invoice.add_payment", J{"invoice_id": missing, "amount_cents": 1}},
		{"invoice.mark_overdue", J{"invoice_id": missing}},
		{"comms.log_call_outcome", J{"lead_id": missing, "outcome": "answered"}},
		{"comms.create_followup_task", J{"lead_id": missing, "due_at": future}},
		{"media.tag_asset", J{"asset_id": missing, "add": []string{"roof"}}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
			require.Contains(t, r.Error.Message, missing)
		})
	}
}
