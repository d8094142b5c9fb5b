package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/business/handlers/twiliotest"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// pricedInspection records, with GEM's inputs, an inspection the pricing profiles have something to price:
// measured ridge and gutters, a steep pitch, tiles, a leak. It is left a draft.
func (b *testBundle) pricedInspection(t *testing.T, ctx context.Context, lead string) string {
	t.Helper()
	r, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "site_address": "12 Station St, Marrickville NSW 2204"})
	inspection := r.str(t, "inspection_id")
	for _, m := range []J{
		{"label": "Roof area", "value": 152.5, "unit": "m2"},
		{"label": "Pitch", "value": 32.5, "unit": "deg"},
		{"label": "Ridge line", "value": 18.3, "unit": "m"},
		{"label": "Gutters", "value": 42000, "unit": "mm"},
	} {
		m["inspection_id"] = inspection
		b.ok(t, ctx, "inspection.add_measurement", m)
	}
	for _, d := range []J{
		{"category": "ridge", "severity": "low", "notes": "Loose pointing"},
		{"category": "tile", "severity": "medium", "notes": "Cracked tiles near valley"},
		{"category": "ridge", "severity": "high", "notes": "Cracked ridge capping"},
		{"category": "gutter", "severity": "medium", "notes": "Rusted outlet"},
		{"category": "tile", "severity": "medium", "notes": "Slipped tile over garage"},
		{"category": "leak", "severity": "high", "notes": "Water stain in hallway"},
	} {
		d["inspection_id"] = inspection
		b.ok(t, ctx, "inspection.add_defect", d)
	}
	return inspection
}

type wantLine struct {
	description string
	quantity    string
	unit        string
	price, want int64
}

func requireLines(t *testing.T, r res, path string, want []wantLine) {
	t.Helper()
	got := r.list(t, path)
	require.Len(t, got, len(want))
	for i, w := range want {
		l := res(got[i].(map[string]any))
		require.Equal(t, w.description, l.str(t, "description"), "line %d", i+1)
		requireDecimal(t, w.quantity, l.get(t, "quantity"), w.description)
		require.Equal(t, w.unit, l.str(t, "unit"), w.description)
		require.Equal(t, w.price, l.int(t, "unit_price_cents"), w.description)
		require.Equal(t, w.want, l.int(t, "line_total_cents"), w.description)
		require.Equal(t, int64(i+1), l.int(t, "position"))
	}
}

// TestGEMQuotePricingProfiles prices one inspection with each profile, to the cent.
func TestGEMQuotePricingProfiles(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	inspection := b.pricedInspection(t, ctx, lead)

	// A draft is not priced: lock it first.
	r := b.refused(t, ctx, registry.CodeConflict, "quote.create_from_inspection", J{"inspection_id": inspection})
	require.Contains(t, r.Error.Message, "inspection.lock")
	b.ok(t, ctx, "inspection.submit", J{"inspection_id": inspection})

	r = b.refused(t, ctx, registry.CodeValidation, "quote.create_from_inspection", J{"inspection_id": inspection, "pricing_profile": "mates-rates"})
	require.Contains(t, r.Error.Message, "insurance, premium, standard")
	require.Equal(t, "submitted", b.str(t, ctx, `SELECT status FROM inspections WHERE id = $1`, inspection), "refused before anything changed")

	// standard: per metre where the length was measured (at the worst severity), else per defect by severity.
	res, rc := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": inspection, "notes": "Includes disposal"})
	quote := res.str(t, "quote_id")
	require.Equal(t, quote, res.str(t, "quote.quote_id"))
	require.Equal(t, true, res.get(t, "inspection_locked_now"))
	require.Equal(t, "standard", res.str(t, "quote.pricing_profile"))
	require.Equal(t, "draft", res.str(t, "quote.status"))
	require.Equal(t, "Includes disposal", res.str(t, "quote.notes"))
	requireLines(t, res, "line_items", []wantLine{
		{"Replace cracked or broken roof tiles (medium severity): Cracked tiles near valley; Slipped tile over garage", "2", "each", 23_125, 46_250},
		{"Rebed and repoint ridge capping (high severity): Cracked ridge capping; Loose pointing", "18.3", "m", 7_680, 140_544},
		{"Replace damaged guttering (medium severity): Rusted outlet", "42", "m", 7_750, 325_500},
		{"Trace and repair roof leak (high severity): Water stain in hallway", "1", "each", 67_200, 67_200},
		{"Site setup, safety equipment and edge protection", "1", "each", 35_000, 35_000},
		{"Steep roof access and safety (pitch 32.5 degrees)", "1", "each", 28_000, 28_000},
	})
	// 642,494 subtotal; GST 64,249.4 → 64,249; total 706,743.
	require.Equal(t, int64(642_494), res.int(t, "quote.subtotal_cents"))
	require.Equal(t, int64(64_249), res.int(t, "quote.gst_cents"))
	require.Equal(t, int64(706_743), res.int(t, "quote.total_cents"))
	require.Equal(t, false, res.get(t, "quote.totals_stale"))
	require.Equal(t, map[string]int{"inspections update": 1, "quotes insert": 1, "quote_line_items insert": 6}, writes(rc))
	require.Equal(t, quote, rc.Summary["result.quote_id"])
	require.Equal(t, "locked", b.str(t, ctx, `SELECT status FROM inspections WHERE id = $1`, inspection))

	// premium: dearer, warranted, and a roof treatment over the measured area.
	res, rc = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": inspection, "pricing_profile": "premium", "valid_days": 14})
	require.Equal(t, false, res.get(t, "inspection_locked_now"))
	requireLines(t, res, "line_items", []wantLine{
		{"Replace cracked or broken roof tiles with matched new tiles (10-year workmanship warranty) (medium severity): Cracked tiles near valley; Slipped tile over garage", "2", "each", 30_000, 60_000},
		{"Rebed and repoint ridge capping with flexible pointing (10-year workmanship warranty) (high severity): Cracked ridge capping; Loose pointing", "18.3", "m", 10_400, 190_320},
		{"Replace guttering with Colorbond quad (10-year workmanship warranty) (medium severity): Rusted outlet", "42", "m", 10_625, 446_250},
		{"Trace and repair roof leak, with a water test (10-year workmanship warranty) (high severity): Water stain in hallway", "1", "each", 88_000, 88_000},
		{"Site setup, safety equipment and edge protection", "1", "each", 45_000, 45_000},
		{"Steep roof access and safety (pitch 32.5 degrees)", "1", "each", 35_000, 35_000},
		{"Clean, prime and seal the roof surface", "152.5", "m2", 2_200, 335_500},
	})
	require.Equal(t, int64(1_200_070), res.int(t, "quote.subtotal_cents"))
	require.Equal(t, int64(120_007), res.int(t, "quote.gst_cents"))
	require.Equal(t, int64(1_320_077), res.int(t, "quote.total_cents"))
	require.Equal(t, map[string]int{"quotes insert": 1, "quote_line_items insert": 7}, writes(rc), "the inspection was locked already")
	created, err := time.Parse(time.RFC3339Nano, res.str(t, "quote.created_at"))
	require.NoError(t, err)
	validUntil, err := time.Parse(time.DateOnly, res.str(t, "quote.valid_until"))
	require.NoError(t, err)
	require.InDelta(t, 14, validUntil.Sub(created.Truncate(24*time.Hour)).Hours()/24, 1)

	// insurance: a report with photos and scope.
	res, _ = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": inspection, "pricing_profile": "insurance"})
	require.Equal(t, "Insurance report with photos and scope of works", res.str(t, "line_items.6.description"))
	require.Equal(t, int64(747_162), res.int(t, "quote.subtotal_cents"))
	require.Equal(t, int64(74_716), res.int(t, "quote.gst_cents"))
	require.Equal(t, int64(821_878), res.int(t, "quote.total_cents"))

	// An inspection with nothing to price gives an empty draft to fill in.
	other := b.sqlLead(t, ctx, "Ann Lee", "")
	r2, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": other})
	empty := r2.str(t, "inspection_id")
	b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": empty, "item_key": "gutters", "status": "pass"})
	b.ok(t, ctx, "inspection.lock", J{"inspection_id": empty})
	res, _ = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": empty})
	require.Empty(t, res.list(t, "line_items"))
	require.Equal(t, int64(0), res.int(t, "quote.total_cents"))

	// The lead's client entity is the quote's customer; another kind of entity is refused.
	client := b.str(t, ctx, `INSERT INTO entities (kind, name, lead_id) VALUES ('client', 'Lee Holdings', $1) RETURNING id::text`, other)
	res, _ = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": empty})
	require.Equal(t, client, res.str(t, "quote.customer_id"))
	site := b.str(t, ctx, `INSERT INTO entities (kind, name) VALUES ('site', 'Lee house') RETURNING id::text`)
	b.refused(t, ctx, registry.CodeValidation, "quote.create_from_inspection", J{"inspection_id": empty, "customer_id": site})
}

// draftQuote makes a locked inspection and an empty draft quote from it.
func (b *testBundle) draftQuote(t *testing.T, ctx context.Context, lead string) string {
	t.Helper()
	r, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "site_address": "12 Station St, Marrickville NSW 2204"})
	inspection := r.str(t, "inspection_id")
	b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "ridge", "status": "fail"})
	b.ok(t, ctx, "inspection.lock", J{"inspection_id": inspection})
	r, _ = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": inspection})
	return r.str(t, "quote_id")
}

// TestGEMQuoteLineItems replaces, adds and changes lines, and refuses items that cannot be lines.
func TestGEMQuoteLineItems(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	quote := b.draftQuote(t, ctx, lead)
	other := b.draftQuote(t, ctx, lead)

	items := []J{
		{"description": "Replace and repoint ridge capping", "quantity": 8, "unit": "m", "unit_price_cents": 15000},
		{"description": "Replace rusted gutter outlet", "unit_price_cents": 35050},
	}
	r, rc := b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": items})
	require.Equal(t, quote, r.str(t, "quote_id"))
	require.Equal(t, true, r.get(t, "changed"))
	require.Equal(t, true, r.get(t, "totals_stale"))
	requireLines(t, r, "line_items", []wantLine{
		{"Replace and repoint ridge capping", "8", "m", 15_000, 120_000},
		{"Replace rusted gutter outlet", "1", "each", 35_050, 35_050}, // quantity 1 and unit each by default
	})
	require.Equal(t, map[string]int{"quote_line_items insert": 2, "quotes update": 1}, writes(rc))
	ridge := r.str(t, "line_items.0.line_item_id")
	outlet := r.str(t, "line_items.1.line_item_id")

	// The same list again is the same lines: nothing written.
	r, rc = b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": items})
	require.Equal(t, false, r.get(t, "changed"))
	require.Equal(t, ridge, r.str(t, "line_items.0.line_item_id"))
	require.Empty(t, rc.Effects.DBWrites)

	// Reordered and patched, a line named by id keeps its id; one left out is removed; a new one is added.
	r, rc = b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": []J{
		{"description": "Skip bin", "quantity": 1, "unit_price_cents": 40000},
		{"line_item_id": ridge, "description": "Replace and repoint ridge capping", "quantity": 9.5, "unit": "m", "unit_price_cents": 15000},
	}})
	require.Equal(t, ridge, r.str(t, "line_items.1.line_item_id"))
	requireDecimal(t, "9.5", r.get(t, "line_items.1.quantity"), "patched")
	require.Equal(t, int64(142_500), r.int(t, "line_items.1.line_total_cents"))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM quote_line_items WHERE id = $1`, outlet))
	require.Equal(t, 2, writes(rc)["quote_line_items delete"])

	bad := []struct {
		item  any
		field string
	}{
		{J{"quantity": 1, "unit_price_cents": 100}, "line_items[1].description"},
		{J{"description": "x"}, "line_items[1].unit_price_cents"},
		{J{"description": "x", "unit_price_cents": 12.5}, "line_items[1].unit_price_cents"},
		{J{"description": "x", "unit_price_cents": "1200"}, "line_items[1].unit_price_cents"},
		{J{"description": "x", "unit_price_cents": -1}, "line_items[1].unit_price_cents"},
		{J{"description": "x", "unit_price_cents": 1, "quantity": "two"}, "line_items[1].quantity"},
		{J{"description": "x", "unit_price_cents": 1, "quantity": 0}, "line_items[1].quantity"},
		{J{"description": "x", "unit_price_cents": 1, "quantity": 1.0001}, "line_items[1].quantity"},
		{J{"description": "x", "unit_price_cents": 1, "quantity": 100001}, "line_items[1].quantity"},
		{J{"description": "   ", "unit_price_cents": 1}, "line_items[1].description"},
		{J{"description": strings.Repeat("x", 501), "unit_price_cents": 1}, "line_items[1].description"},
		{J{"description": "x", "unit_price_cents": 1, "unit": "linear metres of gutter"}, "line_items[1].unit"},
		{J{"description": "x", "price": 100}, "line_items[1].price"},
		{J{"description": "x", "unit_price_cents": 1, "line_item_id": ridge}, "line_items[1].line_item_id"}, // twice
	}
	for _, tt := range bad {
		r := b.refused(t, ctx, registry.CodeValidation, "quote.update_line_items", J{"quote_id": quote, "line_items": []any{
			J{"line_item_id": ridge, "description": "Ridge", "unit_price_cents": 1}, tt.item}})
		requireNamesField(t, r, tt.field)
	}
	// A line item id that is not a UUID names no line: not_found, as any id of GEM's (TestGEMIdsThatAreNotUUIDs).
	refused := b.refused(t, ctx, registry.CodeNotFound, "quote.update_line_items", J{"quote_id": quote, "line_items": []any{
		J{"line_item_id": ridge, "description": "Ridge", "unit_price_cents": 1}, J{"description": "x", "unit_price_cents": 1, "line_item_id": "line-1"}}})
	requireNamesField(t, refused, "line_items[1].line_item_id")
	r2 := b.refused(t, ctx, registry.CodeValidation, "quote.update_line_items", J{"quote_id": quote, "line_items": []any{"a line"}})
	require.Contains(t, r2.Error.Message, "/line_items/0", "the schema refuses an item that is not an object")
	otherLine, _ := b.ok(t, ctx, "quote.add_line_item", J{"quote_id": other, "description": "Other", "unit_price_cents": 1})
	b.refused(t, ctx, registry.CodeNotFound, "quote.update_line_items", J{"quote_id": quote, "line_items": []J{
		{"line_item_id": otherLine.str(t, "line_item.line_item_id"), "description": "x", "unit_price_cents": 1}}})
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM quote_line_items WHERE quote_id = $1`, quote), "nothing changed")

	// add_line_item and update_line_item take the same fields.
	r, rc = b.ok(t, ctx, "quote.add_line_item", J{"quote_id": quote, "description": "Roof sealant", "quantity": 2.5, "unit": "tube", "unit_price_cents": 1001})
	require.Equal(t, int64(2_503), r.int(t, "line_item.line_total_cents"), "2,502.5 rounds half up")
	require.Equal(t, int64(3), r.int(t, "line_item.position"))
	require.Equal(t, map[string]int{"quote_line_items insert": 1}, writes(rc), "totals were stale already")
	sealant := r.str(t, "line_item.line_item_id")
	r, rc = b.ok(t, ctx, "quote.update_line_item", J{"line_item_id": sealant, "quantity": 3, "unit": "tube"})
	require.Equal(t, []any{"quantity"}, r.list(t, "updated_fields"))
	require.Equal(t, int64(3_003), r.int(t, "line_item.line_total_cents"))
	require.Equal(t, map[string]int{"quote_line_items update": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "quote.update_line_item", J{"line_item_id": sealant, "quantity": 3.000})
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeValidation, "quote.update_line_item", J{"line_item_id": sealant, "description": "  "})

	// An empty list removes every line.
	r, rc = b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": []J{}})
	require.Empty(t, r.list(t, "line_items"))
	require.Equal(t, map[string]int{"quote_line_items delete": 3}, writes(rc))

	// Once the quote left draft its lines are frozen.
	r, _ = b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": items})
	ridge = r.str(t, "line_items.0.line_item_id")
	b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": quote})
	for _, call := range []struct {
		tool  string
		input J
	}{
		{"quote.update_line_items", J{"quote_id": quote, "line_items": []J{}}},
		{"quote.add_line_item", J{"quote_id": quote, "description": "x", "unit_price_cents": 1}},
		{"quote.update_line_item", J{"line_item_id": ridge, "unit_price_cents": 1}},
	} {
		r := b.refused(t, ctx, registry.CodeConflict, call.tool, call.input)
		require.Contains(t, r.Error.Message, "accepted", call.tool)
	}
}

// TestGEMQuoteTotalsRounding sums lines in integer cents: each line rounded half up to a cent, GST 10% of
// the subtotal rounded half up once.
func TestGEMQuoteTotalsRounding(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	tests := []struct {
		name                 string
		lines                []J
		subtotal, gst, total int64
	}{
		{"GST half a cent rounds up", []J{{"description": "a", "unit_price_cents": 25}}, 25, 3, 28},
		{"GST under half a cent rounds down", []J{{"description": "a", "unit_price_cents": 24}}, 24, 2, 26},
		{"GST 1.5 cents rounds up", []J{{"description": "a", "unit_price_cents": 15}}, 15, 2, 17},
		{"GST on the subtotal, not per line", []J{
			{"description": "a", "unit_price_cents": 5}, {"description": "b", "unit_price_cents": 5}, {"description": "c", "unit_price_cents": 5},
		}, 15, 2, 17}, // per line it would be 1+1+1 = 3
		{"line half a cent rounds up", []J{{"description": "a", "quantity": 2.5, "unit_price_cents": 1001}}, 2_503, 250, 2_753},
		{"line fraction rounds to nearest", []J{{"description": "a", "quantity": 18.3, "unit_price_cents": 2999}}, 54_882, 5_488, 60_370},
		{"thousandth of a unit", []J{{"description": "a", "quantity": 0.005, "unit_price_cents": 100}}, 1, 0, 1},
		{"a large job", []J{
			{"description": "Colorbond roof sheeting", "quantity": 152.5, "unit": "m2", "unit_price_cents": 4550},
			{"description": "Ridge capping", "quantity": 18.3, "unit": "m", "unit_price_cents": 2999},
			{"description": "Quad gutter", "quantity": 42, "unit": "m", "unit_price_cents": 3333},
			{"description": "Roof sealant", "quantity": 2.5, "unit": "tube", "unit_price_cents": 1001},
			{"description": "Skip bin", "unit_price_cents": 44_999},
		}, 936_245, 93_625, 1_029_870}, // GST 93,624.5 rounds up
		{"no lines", []J{}, 0, 0, 0},
	}
	for _, tt := range tests {
		quote := b.draftQuote(t, ctx, lead)
		b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": tt.lines})
		r, rc := b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": quote})
		require.Equal(t, tt.subtotal, r.int(t, "totals.subtotal_cents"), tt.name)
		require.Equal(t, tt.gst, r.int(t, "totals.gst_cents"), tt.name)
		require.Equal(t, tt.total, r.int(t, "totals.total_cents"), tt.name)
		require.Equal(t, int64(10), r.int(t, "totals.gst_rate_percent"))
		require.Equal(t, "AUD", r.str(t, "totals.currency"))
		require.Equal(t, int64(len(tt.lines)), r.int(t, "totals.line_count"))
		require.Len(t, r.list(t, "totals.line_items"), len(tt.lines))
		if len(tt.lines) > 0 {
			require.Equal(t, map[string]int{"quotes update": 1}, writes(rc), tt.name)
		} else {
			require.Empty(t, rc.Effects.DBWrites, "an empty quote's totals were right from the start")
		}
		require.Equal(t, tt.total, sqlValue[int64](t, ctx, b, `SELECT total_cents FROM quotes WHERE id = $1`, quote), tt.name)
		require.Equal(t, false, sqlValue[bool](t, ctx, b, `SELECT totals_stale FROM quotes WHERE id = $1`, quote), tt.name)
		r, rc = b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": quote})
		require.Equal(t, false, r.get(t, "changed"))
		require.Empty(t, rc.Effects.DBWrites, "totals already current: nothing written")
	}
}

// TestGEMQuotePDF makes a quote's PDF and reads it back with pdftotext.
func TestGEMQuotePDF(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	files := t.TempDir()
	b.business = businesspack.Config{FileStore: files, Business: businesspack.Letterhead{
		Name: "Acme Roofing", ABN: "12 345 678 901", Phone: "02 9000 1234", Email: "office@acme-roofing.example",
	}}
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	r, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "site_address": "12 Station St, Marrickville NSW 2204"})
	inspection := r.str(t, "inspection_id")
	b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "category": "ridge", "severity": "high", "notes": "Cracked ridge capping along 8 m"})
	b.ok(t, ctx, "inspection.lock", J{"inspection_id": inspection})
	r, _ = b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": inspection, "notes": "Price includes removal of old capping."})
	quote := r.str(t, "quote_id")
	number := r.int(t, "quote.number")
	b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": []J{
		{"description": "Replace and repoint ridge capping", "quantity": 8, "unit": "m", "unit_price_cents": 15000},
		{"description": "Replace rusted gutter outlet", "quantity": 1, "unit": "each", "unit_price_cents": 35050},
	}})

	// A draft with stale totals shows what its lines come to: $1,550.50 + $155.05 = $1,705.55.
	r, rc := b.ok(t, ctx, "quote.generate_pdf", J{"quote_id": quote, "template": "standard"})
	ref := r.str(t, "file_ref")
	require.True(t, strings.HasPrefix(ref, "gemfs://"), ref)
	require.Equal(t, int64(170_555), r.int(t, "total_cents"))
	require.Equal(t, "application/pdf", r.str(t, "content_type"))
	require.Equal(t, "standard", r.str(t, "template"))
	require.Len(t, rc.Effects.FilesWritten, 1)
	require.Equal(t, ref, rc.Effects.FilesWritten[0].Ref)
	require.Equal(t, r.str(t, "sha256"), rc.Effects.FilesWritten[0].SHA256)
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, ref, rc.Summary["result.file_ref"])

	text := storedPDFText(t, files, ref)
	label := quoteLabel(number)
	for _, want := range []string{
		"Acme Roofing", "ABN 12 345 678 901", "02 9000 1234", "Quote " + label,
		"Customer Maria Rossi", "Site 12 Station St, Marrickville NSW 2204",
		"Ridge (high severity): Cracked ridge capping along 8 m",
		"Replace and repoint ridge capping 8 m $150.00 $1,200.00",
		"Replace rusted gutter outlet 1 each $350.50 $350.50",
		"Subtotal (excl. GST) $1,550.50", "GST (10%) $155.05", "Total (incl. GST) $1,705.55",
		"Price includes removal of old capping.", "call 02 9000 1234",
	} {
		require.Contains(t, text, want)
	}

	// The same quote is the same file.
	r, _ = b.ok(t, ctx, "quote.generate_pdf", J{"quote_id": quote})
	require.Equal(t, ref, r.str(t, "file_ref"))

	b.refused(t, ctx, registry.CodeNotFound, "quote.generate_pdf", J{"quote_id": missingID})
}

// quoteLabel is how paperwork names quote number n.
func quoteLabel(n int64) string { return fmt.Sprintf("Q-%04d", n) }

// TestGEMQuoteSendToClient sends quotes by email and SMS through the fakes of SMTP and Twilio.
func TestGEMQuoteSendToClient(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	smtp := newFakeSMTP(t, "gem", "pw")
	b.business = businesspack.Config{
		FileStore: t.TempDir(),
		SMS:       businesspack.TwilioConfig{AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: twiliotest.From, BaseURL: twilio.URL},
		Email:     businesspack.SMTPConfig{URL: "smtp://gem:pw@" + smtp.addr, From: "Acme Roofing <office@acme-roofing.example>"},
		Business:  businesspack.Letterhead{Name: "Acme Roofing", Phone: "02 9000 1234"},
	}
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	phone := b.str(t, ctx, `SELECT phone FROM leads WHERE id = $1`, lead)
	quote := b.draftQuote(t, ctx, lead)
	number := sqlValue[int64](t, ctx, b, `SELECT number FROM quotes WHERE id = $1`, quote)
	b.refused(t, ctx, registry.CodeConflict, "quote.send_to_client", J{"quote_id": quote, "channel": "email"}) // no lines
	b.ok(t, ctx, "quote.update_line_items", J{"quote_id": quote, "line_items": []J{
		{"description": "Replace and repoint ridge capping", "quantity": 8, "unit": "m", "unit_price_cents": 15000},
		{"description": "Replace rusted gutter outlet", "unit_price_cents": 35050},
	}})

	// Both channels, to the lead's email and phone; the stale totals are brought up to date first.
	id := b.call(t, ctx, "quote.send_to_client", `{"quote_id": "`+quote+`", "channel": "both"}`)
	rc := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, rc.Status, "%+v", rc.Error)
	r := decodeResult(t, rc)
	require.Equal(t, true, r.get(t, "sent"))
	require.Equal(t, "sent", r.str(t, "status"))
	require.Equal(t, "draft", r.str(t, "previous_status"))
	require.Equal(t, "quoted", r.str(t, "lead_stage"))
	require.Len(t, r.list(t, "deliveries"), 2)
	require.Empty(t, r.list(t, "not_delivered"))
	require.Equal(t, "email", r.str(t, "deliveries.0.channel"))
	require.Equal(t, "maria@example.com", r.str(t, "deliveries.0.to"))
	require.Equal(t, "sms", r.str(t, "deliveries.1.channel"))
	sid := r.str(t, "deliveries.1.provider_ref")
	require.True(t, strings.HasPrefix(sid, "SM"), sid)
	require.Len(t, rc.Effects.Outside, 2)
	require.Equal(t, map[string]int{"quotes update": 2, "comms_log insert": 2, "leads update": 1}, writes(rc))
	require.Equal(t, "both", b.str(t, ctx, `SELECT sent_via FROM quotes WHERE id = $1`, quote))
	require.Equal(t, 170_555, b.count(t, ctx, `SELECT total_cents FROM quotes WHERE id = $1 AND NOT totals_stale`, quote))
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM comms_log WHERE context_type = 'quote' AND context_id = $1 AND lead_id = $2`, quote, lead))

	label := quoteLabel(number)
	mails := smtp.received()
	require.Len(t, mails, 1)
	require.Equal(t, []string{"maria@example.com"}, mails[0].to)
	msg, err := mail.ReadMessage(strings.NewReader(mails[0].data))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Your quote "+label+" from Acme Roofing: $1,705.55 incl. GST", subject)
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	require.NoError(t, err)
	for _, want := range []string{"Hi Maria,", "inspect the roof at 12 Station St, Marrickville NSW 2204",
		"- Replace and repoint ridge capping: 8 m x $150.00 = $1,200.00", "- Replace rusted gutter outlet: 1 each x $350.50 = $350.50",
		"Subtotal (excl. GST): $1,550.50", "GST (10%): $155.05", "Total (incl. GST): $1,705.55", "call us on 02 9000 1234"} {
		require.Contains(t, string(body), want)
	}
	sms := twilio.Messages()
	require.Len(t, sms, 1)
	require.Equal(t, "+61"+strings.ReplaceAll(strings.TrimPrefix(phone, "0"), " ", ""), sms[0].Get("To"))
	require.Contains(t, sms[0].Get("Body"), "Hi Maria, your quote "+label+" from Acme Roofing for 12 Station St, Marrickville NSW 2204 is $1,705.55 incl. GST")

	// The call never runs twice: the executor committed a marker before the handler ran.
	var marked bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT outside_token IS NOT NULL FROM core_tool_calls WHERE id = $1`, id).Scan(&marked))
	require.True(t, marked)

	// A new call resends (a sent quote stays sent), to the recipient and words given.
	r, rc = b.ok(t, ctx, "quote.send_to_client", J{"quote_id": quote, "channel": "sms", "phone": "0412 999 888", "message_override": "Maria, the quote is in your inbox."})
	require.Equal(t, "sent", r.str(t, "previous_status"))
	require.Equal(t, "+61412999888", r.str(t, "deliveries.0.to"))
	require.Equal(t, "Maria, the quote is in your inbox.", twilio.Messages()[1].Get("Body"))
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(rc))

	// A number Twilio refuses: validation_error, nothing sent or written.
	refused := b.refused(t, ctx, registry.CodeValidation, "quote.send_to_client", J{"quote_id": quote, "channel": "sms", "phone": "+61 400 000 000"})
	require.Contains(t, refused.Error.Message, "not a valid phone number")
	// The email went out, then Twilio refused the SMS: the call succeeds and says so.
	r, rc = b.ok(t, ctx, "quote.send_to_client", J{"quote_id": quote, "channel": "both", "phone": "+61 400 000 000"})
	require.Len(t, r.list(t, "deliveries"), 1)
	require.Equal(t, "sms", r.str(t, "not_delivered.0.channel"))
	require.Contains(t, r.str(t, "not_delivered.0.reason"), "not a valid phone number")
	require.Len(t, rc.Effects.Outside, 1)
	require.Len(t, smtp.received(), 2)

	// Recipients are checked before anything goes out.
	b.refused(t, ctx, registry.CodeValidation, "quote.send_to_client", J{"quote_id": quote, "channel": "both", "email": "not an address"})
	b.refused(t, ctx, registry.CodeValidation, "quote.send_to_client", J{"quote_id": quote, "channel": "sms", "phone": "12"})
	_, err = b.pool.Exec(ctx, `UPDATE leads SET email = NULL WHERE id = $1`, lead)
	require.NoError(t, err)
	refused = b.refused(t, ctx, registry.CodeValidation, "quote.send_to_client", J{"quote_id": quote, "channel": "email"})
	require.Contains(t, refused.Error.Message, "pass email")
	require.Len(t, smtp.received(), 2)
	require.Len(t, twilio.Messages(), 2)

	// An answered quote is not sent again.
	b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": quote})
	b.refused(t, ctx, registry.CodeConflict, "quote.send_to_client", J{"quote_id": quote, "channel": "sms"})
	b.refused(t, ctx, registry.CodeNotFound, "quote.send_to_client", J{"quote_id": missingID, "channel": "sms"})
}

// TestGEMQuoteSendNotConfigured: without providers quote.send_to_client answers not_configured, naming what
// to set, and the quote stays a draft.
func TestGEMQuoteSendNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	smtp := newFakeSMTP(t, "gem", "pw")
	b.business = businesspack.Config{Email: businesspack.SMTPConfig{URL: "smtp://gem:pw@" + smtp.addr, From: "office@acme-roofing.example"}}
	b.startExecutor(t, nil)
	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	quote := b.draftQuote(t, ctx, lead)
	b.ok(t, ctx, "quote.add_line_item", J{"quote_id": quote, "description": "Ridge", "unit_price_cents": 100})

	// Email is configured here, SMS is not: both is refused before the email goes out.
	for _, channel := range []string{"sms", "both"} {
		r := b.run(t, ctx, "quote.send_to_client", J{"quote_id": quote, "channel": channel})
		require.Equal(t, registry.StatusNotConfigured, r.Status, channel)
		var d registry.NotConfiguredDetails
		require.NoError(t, json.Unmarshal(r.Error.Details, &d))
		require.Equal(t, []string{"GEM_SMS_TWILIO_ACCOUNT_SID", "GEM_SMS_TWILIO_AUTH_TOKEN", "GEM_SMS_FROM"}, d.RequiredEnv)
		require.Empty(t, r.Effects.Outside)
		require.Empty(t, r.Effects.DBWrites)
	}
	require.Empty(t, smtp.received())

	unconfigured, b2 := setup(t)
	b2.startExecutor(t, nil)
	lead = b2.sqlLead(t, unconfigured, "Ann Lee", "")
	quote = b2.draftQuote(t, unconfigured, lead)
	b2.ok(t, unconfigured, "quote.add_line_item", J{"quote_id": quote, "description": "Ridge", "unit_price_cents": 100})
	r := b2.run(t, unconfigured, "quote.send_to_client", J{"quote_id": quote, "channel": "email"})
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Equal(t, []string{"GEM_SMTP_URL", "GEM_EMAIL_FROM"}, d.RequiredEnv)
	require.NotEmpty(t, d.NextSteps)
	require.Equal(t, "draft", b2.str(t, unconfigured, `SELECT status FROM quotes WHERE id = $1`, quote))
	require.Equal(t, 0, b2.count(t, unconfigured, `SELECT count(*) FROM comms_log`))
}

// TestGEMQuoteDecisions walks the quote's states: sent, accepted, declined, and the moves refused.
func TestGEMQuoteDecisions(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "")
	withLine := func() string {
		q := b.draftQuote(t, ctx, lead)
		b.ok(t, ctx, "quote.add_line_item", J{"quote_id": q, "description": "Ridge", "quantity": 2, "unit_price_cents": 10_000})
		return q
	}

	// Accepted straight from draft (shown in person): the stale totals become final; the lead is won.
	accepted := withLine()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	r, rc := b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": accepted, "accepted_at": at.Format(time.RFC3339), "notes": "Accepted by phone"})
	require.Equal(t, accepted, r.str(t, "quote_id"))
	require.Equal(t, "accepted", r.str(t, "quote.status"))
	require.Equal(t, "draft", r.str(t, "previous_status"))
	require.Equal(t, true, r.get(t, "changed"))
	require.Equal(t, "won", r.str(t, "lead_stage"))
	require.Equal(t, int64(22_000), r.int(t, "quote.total_cents"))
	require.Equal(t, false, r.get(t, "quote.totals_stale"))
	require.Equal(t, "Accepted by phone", r.str(t, "quote.decision_notes"))
	require.Nil(t, r.get(t, "quote.sent_at"))
	acceptedAt, err := time.Parse(time.RFC3339Nano, r.str(t, "quote.accepted_at"))
	require.NoError(t, err)
	require.True(t, at.Equal(acceptedAt))
	require.Equal(t, map[string]int{"quotes update": 2, "leads update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": accepted})
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites, "accepting again changes nothing")

	// Sent, then declined with a reason; the lead keeps its stage.
	declined := withLine()
	b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": declined})
	r, _ = b.ok(t, ctx, "quote.mark_sent", J{"quote_id": declined, "sent_via": "in_person"})
	require.Equal(t, "sent", r.str(t, "quote.status"))
	r, rc = b.ok(t, ctx, "quote.mark_declined", J{"quote_id": declined, "reason": "Too dear", "notes": "Going with a cheaper quote"})
	require.Equal(t, "declined", r.str(t, "quote.status"))
	require.Equal(t, "sent", r.str(t, "previous_status"))
	require.Equal(t, "Too dear", r.str(t, "quote.decline_reason"))
	require.Equal(t, "Going with a cheaper quote", r.str(t, "quote.decision_notes"))
	require.Equal(t, "won", r.str(t, "lead_stage"), "the lead won another quote")
	require.Equal(t, map[string]int{"quotes update": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "quote.mark_declined", J{"quote_id": declined, "reason": "Too dear"})
	require.Empty(t, rc.Effects.DBWrites)

	stale := withLine()
	empty := b.draftQuote(t, ctx, lead)
	tests := []struct {
		name  string
		tool  string
		input J
		want  string
	}{
		{"accept a declined quote", "quote.mark_accepted", J{"quote_id": declined}, "declined"},
		{"decline an accepted quote", "quote.mark_declined", J{"quote_id": accepted, "reason": "x"}, "accepted"},
		{"send an accepted quote", "quote.mark_sent", J{"quote_id": accepted}, "accepted"},
		{"mark sent with stale totals", "quote.mark_sent", J{"quote_id": stale}, "stale"},
		{"mark sent without lines", "quote.mark_sent", J{"quote_id": empty}, "no line items"},
		{"accept without lines", "quote.mark_accepted", J{"quote_id": empty}, "no line items"},
	}
	for _, tt := range tests {
		r := b.refused(t, ctx, registry.CodeConflict, tt.tool, tt.input)
		require.Contains(t, r.Error.Message, tt.want, tt.name)
	}
	b.refused(t, ctx, registry.CodeValidation, "quote.mark_accepted", J{"quote_id": stale,
		"accepted_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})

	// A draft may be declined too.
	r, _ = b.ok(t, ctx, "quote.mark_declined", J{"quote_id": stale, "reason": "Decided to sell the house"})
	require.Equal(t, "declined", r.str(t, "quote.status"))
	require.Equal(t, false, r.get(t, "quote.totals_stale"))
}

// TestGEMQuoteNotFound: every quote tool answers not_found for a quote (or inspection, line) that does not
// exist.
func TestGEMQuoteNotFound(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	tests := []struct {
		tool  string
		input J
	}{
		{"quote.create_from_inspection", J{"inspection_id": missingID}},
		{"quote.update_line_items", J{"quote_id": missingID, "line_items": []J{}}},
		{"quote.add_line_item", J{"quote_id": missingID, "description": "x", "unit_price_cents": 1}},
		{"quote.update_line_item", J{"line_item_id": missingID, "unit_price_cents": 1}},
		{"quote.calculate_totals", J{"quote_id": missingID}},
		{"quote.generate_pdf", J{"quote_id": missingID}},
		{"quote.mark_sent", J{"quote_id": missingID}},
		{"quote.mark_accepted", J{"quote_id": missingID}},
		{"quote.mark_declined", J{"quote_id": missingID, "reason": "x"}},
	}
	for _, tt := range tests {
		r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
		require.Contains(t, r.Error.Message, missingID, tt.tool)
	}
}
