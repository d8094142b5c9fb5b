package executor_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor/filestore"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/business/handlers/twiliotest"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// jobFixture is an accepted quote made with plain SQL (so these tests do not depend on the inspection and
// quote tools), and the job, invoice and amounts the job and invoice tools add to it.
type jobFixture struct {
	lead, customer, phone, quote, job, invoice string
	totalCents                                 int64
}

// The fixture quote's lines: 152.5 m2 at $45.50 is $6,938.75, 18.3 m at $29.99 is $548.82 (54,881.7 rounds
// up); subtotal $7,487.57, GST $748.76 (74,875.7 rounds up), total $8,236.33.
const (
	fixtureSubtotalCents = 748_757
	fixtureGSTCents      = 74_876
	fixtureTotalCents    = 823_633
)

// acceptedQuote inserts a lead, its customer and site, a locked inspection and an accepted quote with two
// lines, as a person would in psql.
func (b *testBundle) acceptedQuote(t *testing.T, ctx context.Context) jobFixture {
	t.Helper()
	f := jobFixture{phone: newPhone(), totalCents: fixtureTotalCents}
	f.lead = b.str(t, ctx, `INSERT INTO leads (name, phone, email, address, suburb) VALUES ('Maria Rossi', $1, 'maria@example.com',
		'1 Lead St', 'Petersham') RETURNING id`, f.phone)
	f.customer = b.str(t, ctx, `INSERT INTO entities (kind, name, phone, email, lead_id) VALUES ('client', 'Maria Rossi', $1,
		'maria.rossi@example.com', $2) RETURNING id`, f.phone, f.lead)
	site := b.str(t, ctx, `INSERT INTO entities (kind, name, address, suburb, postcode, parent_id) VALUES ('site', 'Rossi house',
		'12 Station St', 'Marrickville NSW', '2204', $1) RETURNING id`, f.customer)
	inspection := b.str(t, ctx, `INSERT INTO inspections (lead_id, site_id, status, submitted_at, locked_at) VALUES ($1, $2, 'locked', now(), now())
		RETURNING id`, f.lead, site)
	f.quote = b.str(t, ctx, `INSERT INTO quotes (lead_id, inspection_id, customer_id, subtotal_cents, gst_cents, total_cents, valid_until)
		VALUES ($1, $2, $3, $4, $5, $6, current_date + 30) RETURNING id`, f.lead, inspection, f.customer,
		fixtureSubtotalCents, fixtureGSTCents, fixtureTotalCents)
	b.str(t, ctx, `INSERT INTO quote_line_items (quote_id, position, description, quantity, unit, unit_price_cents, line_total_cents)
		VALUES ($1, 1, 'Colorbond roof sheeting, supply and install', 152.5, 'm2', 4550, 693875),
		       ($1, 2, 'Ridge capping, replace and rebed', 18.3, 'm', 2999, 54882) RETURNING quote_id`, f.quote)
	_, err := b.pool.Exec(ctx, `UPDATE quotes SET status = 'accepted', sent_at = now(), accepted_at = now() WHERE id = $1`, f.quote)
	require.NoError(t, err)
	return f
}

// jobTo takes a new accepted quote through the job and invoice tools up to step: job, scheduled, completed
// or invoice.
func (b *testBundle) jobTo(t *testing.T, ctx context.Context, step string) jobFixture {
	t.Helper()
	f := b.acceptedQuote(t, ctx)
	for _, s := range []string{"job", "scheduled", "completed", "invoice"} {
		switch s {
		case "job":
			r, _ := b.ok(t, ctx, "job.create_from_accepted_quote", J{"quote_id": f.quote})
			f.job = r.str(t, "job_id")
		case "scheduled":
			b.ok(t, ctx, "job.assign_dates", J{"job_id": f.job, "start_date": time.Now().AddDate(0, 0, -3).Format(time.DateOnly)})
		case "completed":
			b.ok(t, ctx, "job.complete", J{"job_id": f.job})
		case "invoice":
			r, _ := b.ok(t, ctx, "invoice.create_from_job", J{"job_id": f.job})
			f.invoice = r.str(t, "invoice_id")
		}
		if s == step {
			return f
		}
	}
	t.Fatalf("no job step %q", step)
	return f
}

func TestGEMJobLifecycle(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	files := t.TempDir()
	b.business.FileStore = files
	b.startExecutor(t, nil)
	f := b.acceptedQuote(t, ctx)

	// Made from the accepted quote, with its note.
	r, rc := b.ok(t, ctx, "job.create_from_accepted_quote", J{"quote_id": f.quote, "notes": "Bring the long ladder"})
	job := r.str(t, "job_id")
	require.Equal(t, "unscheduled", r.str(t, "status"))
	require.Equal(t, f.lead, r.str(t, "lead_id"))
	require.Equal(t, f.customer, r.str(t, "customer_id"))
	require.Equal(t, "Bring the long ladder", r.str(t, "notes"))
	require.Equal(t, map[string]int{"jobs insert": 1}, writes(rc))
	require.Equal(t, []string{job}, wroteIDs(rc, "jobs", "insert"))
	require.Equal(t, job, rc.Summary["result.job_id"])

	// A second job for the quote: a conflict naming the first, never a second job.
	again := b.refused(t, ctx, registry.CodeConflict, "job.create_from_accepted_quote", J{"quote_id": f.quote})
	require.Contains(t, again.Error.Message, job)
	require.Equal(t, job, decodeDetails(t, again)["job_id"])
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM jobs WHERE quote_id = $1`, f.quote))

	// Dates: end defaults to start; the same again writes nothing; an end before the start is refused.
	start := time.Now().AddDate(0, 0, -2).Format(time.DateOnly)
	end := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	r, rc = b.ok(t, ctx, "job.assign_dates", J{"job_id": job, "start_date": start})
	require.Equal(t, start, r.str(t, "end_date"))
	require.Equal(t, true, r.get(t, "changed"))
	r, rc = b.ok(t, ctx, "job.assign_dates", J{"job_id": job, "start_date": start, "end_date": end, "notes": "Dry week forecast"})
	require.Equal(t, "scheduled", r.str(t, "status"))
	require.Equal(t, end, r.str(t, "end_date"))
	require.Equal(t, "Dry week forecast", r.str(t, "schedule_notes"))
	require.Equal(t, map[string]int{"jobs update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "job.assign_dates", J{"job_id": job, "start_date": start, "end_date": end})
	require.Equal(t, false, r.get(t, "changed"))
	require.Equal(t, "Dry week forecast", r.str(t, "schedule_notes"), "notes left out keep the note")
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeValidation, "job.assign_dates", J{"job_id": job, "start_date": end, "end_date": start})

	// Site notes.
	r, rc = b.ok(t, ctx, "job.add_site_notes", J{"job_id": job, "notes": "Side gate code 4821; dog in yard", "author": "Sam"})
	require.Equal(t, int64(1), r.int(t, "note_count"))
	require.Equal(t, "Sam", r.str(t, "author"))
	require.Equal(t, map[string]int{"job_site_notes insert": 1}, writes(rc))
	r, _ = b.ok(t, ctx, "job.add_site_notes", J{"job_id": job, "notes": "Power off at the meter box before starting"})
	require.Equal(t, int64(2), r.int(t, "note_count"))
	require.Nil(t, r.get(t, "author"))
	b.refused(t, ctx, registry.CodeValidation, "job.add_site_notes", J{"job_id": job, "notes": "  "})

	// Progress: details kept as given, photos once each; a file-store photo must be in the store.
	stored, err := filestore.New(files).Put("ridge.jpg", ".jpg", "image/jpeg", []byte("not really a jpeg"))
	require.NoError(t, err)
	r, rc = b.ok(t, ctx, "job.add_progress_update", J{"job_id": job, "summary": "Ridge stripped and rebedded",
		"details": J{"hours": 6, "materials": []string{"mortar", "bedding"}}, "photo_refs": []string{stored.Ref, "s3://gem/ridge-2.jpg", stored.Ref}})
	require.NotEmpty(t, r.str(t, "update_id"))
	require.Equal(t, []any{stored.Ref, "s3://gem/ridge-2.jpg"}, r.list(t, "photo_refs"))
	require.Equal(t, "6", r.get(t, "details.hours").(interface{ String() string }).String())
	require.Equal(t, "scheduled", r.str(t, "job_status"))
	require.Equal(t, int64(1), r.int(t, "update_count"))
	require.Equal(t, map[string]int{"job_progress_updates insert": 1}, writes(rc))
	r, _ = b.ok(t, ctx, "job.add_progress_update", J{"job_id": job, "summary": "Sheets on"})
	require.Equal(t, map[string]any{}, map[string]any(r.get(t, "details").(map[string]any)))
	require.Empty(t, r.list(t, "photo_refs"))
	missing := b.refused(t, ctx, registry.CodeNotFound, "job.add_progress_update", J{"job_id": job, "summary": "x",
		"photo_refs": []string{"gemfs://" + strings.Repeat("ab", 32) + ".jpg"}})
	require.Contains(t, missing.Error.Message, "not in GEM's file store")
	b.refused(t, ctx, registry.CodeValidation, "job.add_progress_update", J{"job_id": job, "summary": strings.Repeat("x", 401)})

	// Before and after photos: each reference once per stage.
	r, rc = b.ok(t, ctx, "job.add_before_after_refs", J{"job_id": job, "before_refs": []string{"s3://gem/before-1.jpg", "s3://gem/before-2.jpg"},
		"after_refs": []string{"s3://gem/after-1.jpg"}})
	require.Equal(t, int64(2), r.int(t, "added_before"))
	require.Equal(t, int64(1), r.int(t, "added_after"))
	require.Equal(t, map[string]int{"job_media_refs insert": 3}, writes(rc))
	r, rc = b.ok(t, ctx, "job.add_before_after_refs", J{"job_id": job, "before_refs": []string{"s3://gem/before-2.jpg"},
		"after_refs": []string{"s3://gem/after-1.jpg", "s3://gem/after-2.jpg"}})
	require.Equal(t, int64(0), r.int(t, "added_before"))
	require.Equal(t, int64(1), r.int(t, "added_after"))
	require.Equal(t, []any{"s3://gem/before-1.jpg", "s3://gem/before-2.jpg"}, r.list(t, "before_refs"))
	require.Equal(t, []any{"s3://gem/after-1.jpg", "s3://gem/after-2.jpg"}, r.list(t, "after_refs"))
	require.Equal(t, map[string]int{"job_media_refs insert": 1}, writes(rc))
	b.refused(t, ctx, registry.CodeValidation, "job.add_before_after_refs", J{"job_id": job, "before_refs": []string{}, "after_refs": []string{}})

	// Completion: not in the future; again changes nothing; again with another time is a conflict.
	b.refused(t, ctx, registry.CodeValidation, "job.complete", J{"job_id": job, "completed_at": rfc3339(time.Now().Add(time.Hour))})
	done := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	r, rc = b.ok(t, ctx, "job.complete", J{"job_id": job, "completed_at": rfc3339(done), "notes": "All done, site clean"})
	require.Equal(t, "completed", r.str(t, "status"))
	require.Equal(t, rfc3339(done), r.str(t, "completed_at"))
	require.Equal(t, "All done, site clean", r.str(t, "completion_notes"))
	require.Equal(t, true, r.get(t, "changed"))
	require.Equal(t, map[string]int{"jobs update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "job.complete", J{"job_id": job})
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "job.complete", J{"job_id": job, "completed_at": rfc3339(done.Add(-time.Hour))})
	r2 := b.refused(t, ctx, registry.CodeConflict, "job.assign_dates", J{"job_id": job, "start_date": "2031-01-01"})
	require.Contains(t, r2.Error.Message, "completed")

	// Notes, progress and photos are welcome after completion too.
	b.ok(t, ctx, "job.add_site_notes", J{"job_id": job, "notes": "Customer asked about gutter guards"})
	r, _ = b.ok(t, ctx, "job.add_progress_update", J{"job_id": job, "summary": "Final clean-up photos"})
	require.Equal(t, "completed", r.str(t, "job_status"))
}

// TestGEMJobCompletedWithoutDates completes a job that was never scheduled, as GEM's callers do: it is
// dated on the day of its completion, in the business's time zone (Australia/Sydney by default).
func TestGEMJobCompletedWithoutDates(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	f := b.acceptedQuote(t, ctx)
	r, _ := b.ok(t, ctx, "job.create_from_accepted_quote", J{"quote_id": f.quote})
	job := r.str(t, "job_id")

	// 20:30 UTC on 2 March is 07:30 on 3 March in Sydney.
	r, rc := b.ok(t, ctx, "job.complete", J{"job_id": job, "completed_at": "2026-03-02T20:30:00Z", "notes": "done in a day"})
	require.Equal(t, "completed", r.str(t, "status"))
	require.Equal(t, map[string]int{"jobs update": 1}, writes(rc))
	require.Equal(t, "2026-03-03 2026-03-03", b.str(t, ctx, `SELECT start_date || ' ' || end_date FROM jobs WHERE id = $1`, job))
	b.refused(t, ctx, registry.CodeConflict, "job.assign_dates", J{"job_id": job, "start_date": "2026-03-04"})
}

func TestGEMJobRefusals(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.business.FileStore = t.TempDir()
	b.startExecutor(t, nil)

	// Only an accepted quote makes a job.
	for _, status := range []string{"draft", "sent", "declined"} {
		f := b.acceptedQuote(t, ctx)
		_, err := b.pool.Exec(ctx, `UPDATE quotes SET status = $2, sent_at = CASE WHEN $2 = 'draft' THEN NULL ELSE sent_at END,
			accepted_at = NULL, declined_at = CASE WHEN $2 = 'declined' THEN now() END WHERE id = $1`, f.quote, status)
		require.NoError(t, err, status)
		r := b.refused(t, ctx, registry.CodeConflict, "job.create_from_accepted_quote", J{"quote_id": f.quote})
		require.Contains(t, r.Error.Message, status)
	}

	// A record that does not exist: not_found, naming it.
	missing := uuid.NewString()
	for _, tt := range []struct {
		tool  string
		input J
	}{
		{"job.create_from_accepted_quote", J{"quote_id": missing}},
		{"job.assign_dates", J{"job_id": missing, "start_date": "2030-01-01"}},
		{"job.create_job_card", J{"job_id": missing, "format": "pdf"}},
		{"job.add_site_notes", J{"job_id": missing, "notes": "x"}},
		{"job.add_progress_update", J{"job_id": missing, "summary": "x"}},
		{"job.add_before_after_refs", J{"job_id": missing, "before_refs": []string{"a.jpg"}, "after_refs": []string{}}},
		{"job.complete", J{"job_id": missing}},
		{"job.generate_warranty_certificate", J{"job_id": missing, "warranty_term": "10 years"}},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
			require.Contains(t, r.Error.Message, missing)
		})
	}
	// GEM's ids are any string; one that is not a UUID can name no record here.
	b.refused(t, ctx, registry.CodeNotFound, "job.complete", J{"job_id": "job-42"})

	// Warranty and review before completion: conflicts.
	f := b.jobTo(t, ctx, "scheduled")
	r := b.refused(t, ctx, registry.CodeConflict, "job.generate_warranty_certificate", J{"job_id": f.job, "warranty_term": "10 years"})
	require.Contains(t, r.Error.Message, "scheduled")
	require.Empty(t, r.Effects.FilesWritten)
	b.refused(t, ctx, registry.CodeValidation, "job.generate_warranty_certificate", J{"job_id": f.job, "warranty_term": " "})
}

func TestGEMJobCardAndWarranty(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	files := t.TempDir()
	b.business.FileStore = files
	b.business.Business = businesspack.Letterhead{Name: "Acme Roofing", ABN: "12 345 678 901", Phone: "02 9000 1234"}
	b.startExecutor(t, nil)
	f := b.jobTo(t, ctx, "scheduled")
	b.ok(t, ctx, "job.add_site_notes", J{"job_id": f.job, "notes": "Side gate code 4821", "author": "Sam"})
	number := b.count(t, ctx, `SELECT number FROM jobs WHERE id = $1`, f.job)
	label := fmt.Sprintf("J-%04d", number)
	start := time.Now().AddDate(0, 0, -3)

	// The text card (the default format): a file in the store with everything the crew needs.
	r, rc := b.ok(t, ctx, "job.create_job_card", J{"job_id": f.job})
	ref := r.str(t, "job_card_ref")
	require.True(t, strings.HasPrefix(ref, "gemfs://") && strings.HasSuffix(ref, ".txt"), ref)
	require.Equal(t, "text", r.str(t, "format"))
	require.Equal(t, "text/plain; charset=utf-8", r.str(t, "content_type"))
	require.Len(t, rc.Effects.FilesWritten, 1)
	require.Equal(t, ref, rc.Effects.FilesWritten[0].Ref)
	require.Empty(t, rc.Effects.DBWrites)
	path, err := filestore.New(files).Path(ref)
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	card := string(raw)
	for _, want := range []string{"JOB CARD " + label, "Maria Rossi", f.phone, "maria.rossi@example.com", "12 Station St, Marrickville NSW, 2204",
		start.Format("Mon 2 Jan 2006"), "Colorbond roof sheeting, supply and install (152.5 m2)", "Ridge capping, replace and rebed (18.3 m)",
		"Sam: Side gate code 4821", "scheduled"} {
		require.Contains(t, card, want)
	}
	require.NotContains(t, card, "$", "the crew's card shows no prices")

	// The same card again is the same file.
	r2, _ := b.ok(t, ctx, "job.create_job_card", J{"job_id": f.job, "format": "text"})
	require.Equal(t, ref, r2.str(t, "job_card_ref"))

	// The PDF card, read back by an independent reader.
	r, rc = b.ok(t, ctx, "job.create_job_card", J{"job_id": f.job, "format": "pdf"})
	require.True(t, strings.HasSuffix(r.str(t, "job_card_ref"), ".pdf"))
	require.Equal(t, "application/pdf", r.str(t, "content_type"))
	require.Equal(t, "job-card-"+label+".pdf", rc.Effects.FilesWritten[0].Name)
	text := storedPDFText(t, files, r.str(t, "job_card_ref"))
	for _, want := range []string{"Job card " + label, "Maria Rossi", "12 Station St", "Colorbond roof sheeting, supply and install",
		"Ridge capping, replace and rebed", "152.5", "Side gate code 4821", start.Format("2 Jan 2006")} {
		require.Contains(t, text, want)
	}

	// The warranty certificate, once the job is completed.
	completed := time.Now().Add(-2 * time.Hour)
	b.ok(t, ctx, "job.complete", J{"job_id": f.job, "completed_at": rfc3339(completed)})
	r, rc = b.ok(t, ctx, "job.generate_warranty_certificate", J{"job_id": f.job, "warranty_term": "10 years workmanship", "template": "standard"})
	cert := r.str(t, "file_ref")
	require.True(t, strings.HasSuffix(cert, ".pdf"), cert)
	require.Equal(t, []registry.FileWritten{{Ref: cert, Name: "warranty-" + label + ".pdf", ContentType: "application/pdf",
		Bytes: r.int(t, "bytes"), SHA256: r.str(t, "sha256")}}, rc.Effects.FilesWritten)
	syd, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	completedOn := completed.In(syd)
	require.Equal(t, completedOn.Format(time.DateOnly), r.str(t, "completed_on"))
	require.Equal(t, completedOn.AddDate(10, 0, 0).Format(time.DateOnly), r.str(t, "expires_on"))
	text = storedPDFText(t, files, cert)
	for _, want := range []string{"Acme Roofing", "12 345 678 901", "02 9000 1234", "Warranty certificate", "WC-" + label, "Maria Rossi", "12 Station St", label, "10 years workmanship",
		completedOn.Format("2 Jan 2006"), completedOn.AddDate(10, 0, 0).Format("2 Jan 2006"), "Colorbond roof sheeting", "Australian Consumer Law"} {
		require.Contains(t, text, want)
	}

	// A term that is not a period has no end date.
	r, _ = b.ok(t, ctx, "job.generate_warranty_certificate", J{"job_id": f.job, "warranty_term": "Lifetime on the sheeting"})
	require.Nil(t, r.get(t, "expires_on"))
	require.Contains(t, storedPDFText(t, files, r.str(t, "file_ref")), "Lifetime on the sheeting")
}

func TestGEMJobRequestReviewNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil) // no providers
	f := b.jobTo(t, ctx, "completed")
	for channel, env := range map[string][]string{
		"sms":   {"GEM_SMS_TWILIO_ACCOUNT_SID", "GEM_SMS_TWILIO_AUTH_TOKEN", "GEM_SMS_FROM"},
		"email": {"GEM_SMTP_URL", "GEM_EMAIL_FROM"},
		"both":  {"GEM_SMS_TWILIO_ACCOUNT_SID", "GEM_SMS_TWILIO_AUTH_TOKEN", "GEM_SMS_FROM"},
	} {
		r := b.run(t, ctx, "job.request_review", J{"job_id": f.job, "channel": channel})
		require.Equal(t, registry.StatusNotConfigured, r.Status, channel)
		details := decodeDetails(t, r)
		for _, v := range env {
			require.Contains(t, details["required_env"], v, channel)
		}
		require.Empty(t, r.Effects.DBWrites)
	}
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestGEMJobRequestReview(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	smtp := newFakeSMTP(t, "gem", "pw")
	b.business = businesspack.Config{
		SMS:   businesspack.TwilioConfig{AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: twiliotest.From, BaseURL: twilio.URL},
		Email: businesspack.SMTPConfig{URL: "smtp://gem:pw@" + smtp.addr, From: "Acme Roofing <office@acme-roofing.example>"},
	}
	b.startExecutor(t, nil)

	// Not completed yet: nothing is sent.
	open := b.jobTo(t, ctx, "scheduled")
	r := b.refused(t, ctx, registry.CodeConflict, "job.request_review", J{"job_id": open.job, "channel": "sms"})
	require.Contains(t, r.Error.Message, "completed")
	require.Empty(t, twilio.Messages())

	f := b.jobTo(t, ctx, "completed")
	res, rc := b.ok(t, ctx, "job.request_review", J{"job_id": f.job, "channel": "both", "review_url": "https://g.page/r/acme-roofing/review"})
	require.Equal(t, true, res.get(t, "sent"))
	require.Len(t, res.list(t, "messages"), 2)
	require.Empty(t, res.list(t, "not_sent"))
	require.Equal(t, "sms", res.str(t, "messages.0.channel"))
	require.Equal(t, "email", res.str(t, "messages.1.channel"))
	require.Equal(t, "maria.rossi@example.com", res.str(t, "messages.1.to"), "the quote's customer, not the lead")
	require.Len(t, rc.Effects.Outside, 2)
	require.Equal(t, map[string]int{"comms_log insert": 2, "jobs update": 1}, writes(rc))

	got := twilio.Messages()
	require.Len(t, got, 1)
	require.Equal(t, res.str(t, "messages.0.to"), got[0].Get("To"))
	require.Contains(t, got[0].Get("Body"), "Hi Maria")
	require.Contains(t, got[0].Get("Body"), "https://g.page/r/acme-roofing/review")
	mails := smtp.received()
	require.Len(t, mails, 1)
	require.Equal(t, []string{"maria.rossi@example.com"}, mails[0].to)
	require.Contains(t, mails[0].data, "How did we do?")

	// Both messages are logged against the job.
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM comms_log WHERE job_id = $1 AND context_type = 'job' AND context_id = $2`, f.job, f.job))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM jobs WHERE id = $1 AND review_requested_at IS NOT NULL`, f.job))

	// A message of the caller's own, by SMS only.
	res, _ = b.ok(t, ctx, "job.request_review", J{"job_id": f.job, "channel": "sms", "message_override": "Thanks Maria! Mind leaving us a review?"})
	require.Len(t, res.list(t, "messages"), 1)
	require.Equal(t, "Thanks Maria! Mind leaving us a review?", twilio.Messages()[1].Get("Body"))

	// Without an email on record, both sends the SMS and says why the email was not sent; email alone fails.
	_, err := b.pool.Exec(ctx, `UPDATE entities SET email = NULL WHERE id = $1`, f.customer)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE leads SET email = NULL WHERE id = $1`, f.lead)
	require.NoError(t, err)
	res, _ = b.ok(t, ctx, "job.request_review", J{"job_id": f.job, "channel": "both"})
	require.Len(t, res.list(t, "messages"), 1)
	require.Equal(t, "email", res.str(t, "not_sent.0.channel"))
	require.Contains(t, res.str(t, "not_sent.0.reason"), "no email address")
	r = b.refused(t, ctx, registry.CodeValidation, "job.request_review", J{"job_id": f.job, "channel": "email"})
	require.Contains(t, r.Error.Message, "no email address")
	require.Len(t, smtp.received(), 1)
}
