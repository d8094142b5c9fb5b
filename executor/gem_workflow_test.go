package executor_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestGEMWorkflow walks GEM's whole business workflow as GEM's own end-to-end test does: every step a plain
// SQL insert of a GEM-contract input and one receipt, from the lead to the paid invoice. Every result is
// also checked against GEM's output schema (wait does it for every receipt).
func TestGEMWorkflow(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	files := t.TempDir()
	b.business.FileStore = files
	b.startExecutor(t, nil)
	steps := 0
	step := func(tool string, input J) (res, *registry.Receipt) {
		t.Helper()
		steps++
		return b.ok(t, ctx, tool, input)
	}

	r, _ := step("leads.create", J{"name": "Maria Rossi", "phone": newPhone(), "email": "maria@example.com",
		"suburb": "Marrickville", "source": "gmb", "notes": "Leaking ridge after the storm"})
	lead := r.str(t, "lead_id")

	r, _ = step("inspection.create", J{"lead_id": lead, "site_address": "12 Station St, Marrickville NSW 2204", "notes": "Two-storey, tiled"})
	inspection := r.str(t, "inspection_id")

	photo := "s3://gem-media/marrickville/ridge-north.jpg"
	r, _ = step("media.register_asset", J{"file_ref": photo, "asset_type": "photo", "suburb": "Marrickville",
		"taken_at": time.Now().UTC().Format(time.RFC3339), "notes": "north ridge, cracked capping"})
	require.NotEmpty(t, r.str(t, "asset_id"))

	r, _ = step("inspection.add_photo_ref", J{"inspection_id": inspection, "file_ref": photo, "label": "North ridge", "tags": []string{"ridge", "defect"}})
	photoRef := r.str(t, "photo_ref_id")

	step("inspection.add_measurement", J{"inspection_id": inspection, "label": "Roof area", "value": 152.5, "unit": "m2"})
	step("inspection.add_measurement", J{"inspection_id": inspection, "label": "Pitch", "value": 22.5, "unit": "deg"})

	step("inspection.add_defect", J{"inspection_id": inspection, "category": "ridge", "severity": "high",
		"notes": "Cracked ridge capping along 8 m", "photo_refs": []string{photoRef}})
	step("inspection.add_defect", J{"inspection_id": inspection, "category": "gutter", "severity": "medium", "notes": "Rusted outlet"})

	step("inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "flashings", "status": "fail", "notes": "lifting at the chimney"})
	step("inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "gutters_clear", "status": "pass"})

	r, _ = step("inspection.lock", J{"inspection_id": inspection})
	require.Equal(t, true, r.get(t, "locked"))
	b.refused(t, ctx, registry.CodeConflict, "inspection.add_defect", J{"inspection_id": inspection, "category": "tile"})

	r, _ = step("inspection.generate_scope_summary", J{"inspection_id": inspection, "format": "sections"})
	scope := r.str(t, "scope_text")
	for _, want := range []string{"12 Station St", "Cracked ridge capping", "Rusted outlet", "152.5", "flashings"} {
		require.Contains(t, scope, want)
	}

	r, _ = step("quote.create_from_inspection", J{"inspection_id": inspection, "pricing_profile": "standard"})
	quote := r.str(t, "quote_id")

	step("quote.update_line_items", J{"quote_id": quote, "line_items": []J{
		{"description": "Replace and repoint ridge capping", "quantity": 8, "unit": "m", "unit_price_cents": 15000},
		{"description": "Replace rusted gutter outlet", "quantity": 1, "unit": "each", "unit_price_cents": 35050},
	}})
	// 8 × $150.00 + $350.50 = $1,550.50; GST 10% = $155.05; total $1,705.55.
	r, _ = step("quote.calculate_totals", J{"quote_id": quote})
	require.Equal(t, int64(155050), r.int(t, "totals.subtotal_cents"))
	require.Equal(t, int64(15505), r.int(t, "totals.gst_cents"))
	require.Equal(t, int64(170555), r.int(t, "totals.total_cents"))

	r, rc := step("quote.generate_pdf", J{"quote_id": quote, "template": "standard"})
	text := storedPDFText(t, files, r.str(t, "file_ref"))
	for _, want := range []string{"Maria Rossi", "Replace and repoint ridge capping", "Replace rusted gutter outlet", "1,705.55"} {
		require.Contains(t, text, want)
	}
	require.Len(t, rc.Effects.FilesWritten, 1)
	require.Equal(t, r.str(t, "file_ref"), rc.Effects.FilesWritten[0].Ref)

	step("quote.mark_accepted", J{"quote_id": quote, "accepted_at": time.Now().UTC().Format(time.RFC3339), "notes": "Accepted by phone"})

	r, _ = step("job.create_from_accepted_quote", J{"quote_id": quote, "notes": "Bring the long ladder"})
	job := r.str(t, "job_id")
	start := time.Now().AddDate(0, 0, 7)
	step("job.assign_dates", J{"job_id": job, "start_date": start.Format(time.DateOnly), "end_date": start.AddDate(0, 0, 2).Format(time.DateOnly)})
	r, _ = step("job.add_progress_update", J{"job_id": job, "summary": "Ridge stripped and rebedded", "photo_refs": []string{photo}})
	require.NotEmpty(t, r.str(t, "update_id"))
	step("job.add_before_after_refs", J{"job_id": job, "before_refs": []string{photo}, "after_refs": []string{"s3://gem-media/marrickville/ridge-after.jpg"}})
	step("job.complete", J{"job_id": job, "completed_at": time.Now().UTC().Format(time.RFC3339), "notes": "All done, site clean"})

	r, _ = step("job.generate_warranty_certificate", J{"job_id": job, "warranty_term": "10 years workmanship", "template": "standard"})
	text = storedPDFText(t, files, r.str(t, "file_ref"))
	for _, want := range []string{"Maria Rossi", "10 years workmanship", "12 Station St"} {
		require.Contains(t, text, want)
	}

	r, _ = step("invoice.create_from_job", J{"job_id": job, "due_days": 14})
	invoice := r.str(t, "invoice_id")
	step("invoice.add_payment", J{"invoice_id": invoice, "amount_cents": 70555, "method": "card", "reference": "deposit"})
	require.Equal(t, "partially_paid", b.str(t, ctx, `SELECT status FROM invoices WHERE id = $1`, invoice))
	step("invoice.add_payment", J{"invoice_id": invoice, "amount_cents": 100000, "method": "bank_transfer",
		"paid_at": time.Now().UTC().Format(time.RFC3339), "reference": "EFT 4471"})
	require.Equal(t, "paid", b.str(t, ctx, `SELECT status FROM invoices WHERE id = $1`, invoice))
	require.Equal(t, 170555, b.count(t, ctx, `SELECT total_cents FROM invoices WHERE id = $1`, invoice))

	// One receipt per step, all succeeded, and nothing else was called.
	require.Equal(t, 26, steps)
	require.Equal(t, steps+1, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts`), "the steps and the refused edit")
	require.Equal(t, steps, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE status = 'succeeded'`))
	t.Logf("GEM workflow: %d steps, one receipt each", steps)
}

// storedPDFText reads a PDF of the file store with pdftotext (an independent reader).
func storedPDFText(t *testing.T, dir, ref string) string {
	t.Helper()
	path, err := filestore.New(dir).Path(ref)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "pdf.txt")
	b, err := exec.CommandContext(context.Background(), "pdftotext", "-layout", "-enc", "UTF-8", path, out).CombinedOutput()
	require.NoError(t, err, "pdftotext: %s", b)
	text, err := os.ReadFile(out)
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(text)), " ")
}
