package executor_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/business/handlers/twiliotest"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// salesChain is a lead with a sent quote, the quote's scheduled job and the job's part-paid, overdue
// invoice, inserted with plain SQL so that the comms and calendar tests do not depend on the quote, job and
// invoice tools.
type salesChain struct {
	lead, quote, job, invoice string
	quoteNo, jobNo, invoiceNo int64
}

func (b *testBundle) salesChainSQL(t *testing.T, ctx context.Context) salesChain {
	t.Helper()
	var s salesChain
	s.lead = b.str(t, ctx, `INSERT INTO leads (name, phone, email, suburb, address)
		VALUES ('Maria Rossi', $1, 'maria@example.com', 'Marrickville', '12 Station St') RETURNING id::text`, newPhone())
	inspection := b.str(t, ctx, `INSERT INTO inspections (lead_id) VALUES ($1) RETURNING id::text`, s.lead)
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO quotes (lead_id, inspection_id, status, subtotal_cents, gst_cents, total_cents,
			valid_until, sent_at, sent_via)
		VALUES ($1, $2, 'sent', 936245, 93625, 1029870, '2026-12-18', '2026-11-20T02:00:00Z', 'email') RETURNING id::text, number`,
		s.lead, inspection).Scan(&s.quote, &s.quoteNo))
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO jobs (quote_id, status, start_date, end_date)
		VALUES ($1, 'scheduled', '2026-12-07', '2026-12-09') RETURNING id::text, number`, s.quote).Scan(&s.job, &s.jobNo))
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO invoices (job_id, subtotal_cents, gst_cents, total_cents, amount_paid_cents,
			issued_on, due_on)
		VALUES ($1, 936245, 93625, 1029870, 300000, '2026-10-27', '2026-11-10') RETURNING id::text, number`, s.job).Scan(&s.invoice, &s.invoiceNo))
	return s
}

func ref(typ, id string) J { return J{"type": typ, "id": id} }

func TestGEMCommsSendNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil) // b.business is empty: no providers

	lead := b.newLead(t, ctx)
	tests := []struct {
		tool  string
		input J
		env   []string
	}{
		{"comms.send_sms", J{"to": "0412 345 678", "message": "Your quote is ready", "context_ref": ref("lead", lead)},
			[]string{"GEM_SMS_TWILIO_ACCOUNT_SID", "GEM_SMS_TWILIO_AUTH_TOKEN", "GEM_SMS_FROM"}},
		{"comms.send_email", J{"to": "maria@example.com", "subject": "Your quote", "body": "Attached.", "context_ref": ref("lead", lead)},
			[]string{"GEM_SMTP_URL", "GEM_EMAIL_FROM"}},
	}
	for _, tt := range tests {
		r := b.run(t, ctx, tt.tool, tt.input)
		require.Equal(t, registry.StatusNotConfigured, r.Status, tt.tool)
		require.Equal(t, registry.CodeNotConfigured, r.Error.Code, tt.tool)
		var d registry.NotConfiguredDetails
		require.NoError(t, json.Unmarshal(r.Error.Details, &d))
		require.Equal(t, tt.env, d.RequiredEnv, tt.tool)
		require.NotEmpty(t, d.Reason)
		steps := strings.Join(d.NextSteps, " ")
		for _, env := range tt.env {
			require.Contains(t, steps, env, "%s: the next steps name every variable to set", tt.tool)
		}
		require.Empty(t, r.Effects.Outside, tt.tool)
		require.Empty(t, r.Effects.DBWrites, tt.tool)
	}
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestGEMCommsSendSMSThroughTwilio(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	b.business = businesspack.Config{SMS: businesspack.TwilioConfig{
		AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: twiliotest.From, BaseURL: twilio.URL,
	}}
	b.startExecutor(t, nil)

	chain := b.salesChainSQL(t, ctx)
	id := b.call(t, ctx, "comms.send_sms", `{"to": "0412 345 678", "message": "Hi Maria, your roof quote is on its way. – Acme Roofing",
		"context_ref": {"type": "quote", "id": "`+chain.quote+`"}, "template_id": "quote_follow_up.sms"}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	res := decodeResult(t, r)
	sid := res.str(t, "provider_ref")
	require.True(t, strings.HasPrefix(sid, "SM"), sid)
	require.Equal(t, "+61412345678", res.str(t, "to"), "a local number, in E.164")
	require.Equal(t, "queued", res.str(t, "provider_status"))
	require.Equal(t, int64(1), res.int(t, "segments"))
	require.Equal(t, chain.lead, res.str(t, "lead_id"), "the quote's lead")
	require.Equal(t, []registry.OutsideEffect{{Kind: "sms", Target: "+61412345678", Reference: sid}}, r.Effects.Outside)
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(r))
	require.Equal(t, []string{res.str(t, "sms_id")}, wroteIDs(r, "comms_log", "insert"))

	var ctxType, ctxID, template, leadID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT context_type, context_id, template_id, lead_id::text FROM comms_log WHERE id = $1`,
		res.str(t, "sms_id")).Scan(&ctxType, &ctxID, &template, &leadID))
	require.Equal(t, []string{"quote", chain.quote, "quote_follow_up.sms", chain.lead}, []string{ctxType, ctxID, template, leadID})

	got := twilio.Messages()
	require.Len(t, got, 1)
	require.Equal(t, "+61412345678", got[0].Get("To"))
	require.Equal(t, twiliotest.From, got[0].Get("From"))
	require.Equal(t, "Hi Maria, your roof quote is on its way. – Acme Roofing", got[0].Get("Body"))

	// A send never runs twice: the executor committed a marker before the handler ran.
	var marked bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT outside_token IS NOT NULL FROM core_tool_calls WHERE id = $1`, id).Scan(&marked))
	require.True(t, marked)

	// An invoice reference logs the invoice and its job; a personal one names no record.
	r2, _ := b.ok(t, ctx, "comms.send_sms", J{"to": "+61 412 345 679", "message": "Invoice reminder", "context_ref": ref("invoice", chain.invoice)})
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM comms_log WHERE id = $1 AND invoice_id = $2 AND job_id = $3`,
		r2.str(t, "sms_id"), chain.invoice, chain.job))
	r2, _ = b.ok(t, ctx, "comms.send_sms", J{"to": "0412 345 680", "message": "Running late", "context_ref": ref("personal", "school pickup")})
	require.Nil(t, r2.get(t, "lead_id"))

	// Refusals before anything is sent: a record that does not exist, an empty message.
	missing := uuid.NewString()
	rr := b.refused(t, ctx, registry.CodeNotFound, "comms.send_sms", J{"to": "0412 345 678", "message": "x", "context_ref": ref("lead", missing)})
	require.Contains(t, rr.Error.Message, missing)
	b.refused(t, ctx, registry.CodeNotFound, "comms.send_sms", J{"to": "0412 345 678", "message": "x", "context_ref": ref("job", "J-12")})
	b.refused(t, ctx, registry.CodeValidation, "comms.send_sms", J{"to": "0412 345 678", "message": "  ", "context_ref": ref("lead", chain.lead)})
	b.refused(t, ctx, registry.CodeValidation, "comms.send_sms", J{"to": "12", "message": "x", "context_ref": ref("lead", chain.lead)})
	require.Len(t, twilio.Messages(), 3)

	// A number Twilio refuses: validation_error with Twilio's code, nothing logged.
	refused := b.refused(t, ctx, registry.CodeValidation, "comms.send_sms", J{"to": "+61 400 000 000", "message": "hello", "context_ref": ref("lead", chain.lead)})
	require.Contains(t, refused.Error.Message, "not a valid phone number")
	require.Equal(t, float64(21211), decodeDetails(t, refused)["code"])
	require.Empty(t, refused.Effects.Outside)
	require.Len(t, twilio.Messages(), 3)
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestGEMCommsSendSMSBadCredentials(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	b.business = businesspack.Config{SMS: businesspack.TwilioConfig{
		AccountSID: twilio.AccountSID, AuthToken: "wrong", From: twiliotest.From, BaseURL: twilio.URL,
	}}
	b.startExecutor(t, nil)

	r := b.run(t, ctx, "comms.send_sms", J{"to": "0412 345 678", "message": "hello", "context_ref": ref("personal", "x")})
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.Reason, "HTTP 401, code 20003")
	require.Contains(t, strings.Join(d.NextSteps, " "), "GEM_SMS_TWILIO_AUTH_TOKEN")
	require.Empty(t, twilio.Messages())
}

func TestGEMCommsSendEmailThroughSMTP(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	smtp := newFakeSMTP(t, "gem", "s3cret p@ss")
	b.business = businesspack.Config{Email: businesspack.SMTPConfig{
		URL:  "smtp://gem:s3cret%20p%40ss@" + smtp.addr, // the password, percent-encoded
		From: "Acme Roofing <office@acme-roofing.example>",
	}}
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	id := b.call(t, ctx, "comms.send_email", `{"to": "maria@example.com", "subject": "Your roof quote – Q-0001",
		"body": "Grazie Maria,\nyour quote is $10,298.70 inc. GST.\n.\nAcme Roofing", "reply_to": "sam@acme-roofing.example",
		"context_ref": {"type": "lead", "id": "`+lead+`"}}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	res := decodeResult(t, r)
	messageID := res.str(t, "provider_ref")
	require.Regexp(t, `^<[0-9a-f-]{36}@acme-roofing\.example>$`, messageID)
	require.Equal(t, "<"+res.str(t, "email_id")+"@acme-roofing.example>", messageID)
	require.Equal(t, "maria@example.com", res.str(t, "to"))
	require.Equal(t, lead, res.str(t, "lead_id"))
	require.Equal(t, []registry.OutsideEffect{{Kind: "email", Target: "maria@example.com", Reference: messageID}}, r.Effects.Outside)
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(r))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM comms_log WHERE id = $1 AND context_type = 'lead' AND context_id = $2
		AND lead_id = $2::uuid AND subject = 'Your roof quote – Q-0001'`, res.str(t, "email_id"), lead))

	mails := smtp.received()
	require.Len(t, mails, 1)
	require.Equal(t, "gem", mails[0].login)
	require.Equal(t, "office@acme-roofing.example", mails[0].from)
	require.Equal(t, []string{"maria@example.com"}, mails[0].to)
	msg, err := mail.ReadMessage(strings.NewReader(mails[0].data))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Your roof quote – Q-0001", subject)
	require.Equal(t, messageID, msg.Header.Get("Message-ID"))
	require.Equal(t, `"Acme Roofing" <office@acme-roofing.example>`, msg.Header.Get("From"))
	require.Equal(t, "<sam@acme-roofing.example>", msg.Header.Get("Reply-To"))
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	require.NoError(t, err)
	// ReadDotBytes hands lines over with LF ends; the last line was ended for the DATA terminator.
	require.Equal(t, "Grazie Maria,\nyour quote is $10,298.70 inc. GST.\n.\nAcme Roofing\n", string(body),
		"the lone dot survives SMTP's dot-stuffing")

	// Refusals: a recipient the server refuses, a reference without a type, a reference to nothing.
	refused := b.refused(t, ctx, registry.CodeValidation, "comms.send_email", J{"to": "nobody@invalid.example", "subject": "x", "body": "y",
		"context_ref": ref("lead", lead)})
	require.Contains(t, refused.Error.Message, "550")
	require.Empty(t, refused.Effects.Outside)
	b.refused(t, ctx, registry.CodeValidation, "comms.send_email", J{"to": "maria@example.com", "subject": "x", "body": "y", "context_ref": J{}})
	b.refused(t, ctx, registry.CodeValidation, "comms.send_email", J{"to": "not an address", "subject": "x", "body": "y", "context_ref": ref("lead", lead)})
	b.refused(t, ctx, registry.CodeNotFound, "comms.send_email", J{"to": "maria@example.com", "subject": "x", "body": "y", "context_ref": ref("invoice", uuid.NewString())})
	require.Len(t, smtp.received(), 1)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestGEMCommsSendEmailBadLogin(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	smtp := newFakeSMTP(t, "gem", "right")
	b.business = businesspack.Config{Email: businesspack.SMTPConfig{URL: "smtp://gem:wrong@" + smtp.addr, From: "office@acme-roofing.example"}}
	b.startExecutor(t, nil)

	r := b.run(t, ctx, "comms.send_email", J{"to": "maria@example.com", "subject": "x", "body": "y", "context_ref": ref("personal", "p1")})
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.Reason, "535")
	require.Equal(t, []string{"GEM_SMTP_URL", "GEM_EMAIL_FROM"}, d.RequiredEnv)
	require.Empty(t, smtp.received())
}

// TestGEMCommsCompose drafts every purpose from records and checks that the drafts carry their data: names,
// numbers, dollars and dates in the business's time zone.
func TestGEMCommsCompose(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.business = businesspack.Config{Email: businesspack.SMTPConfig{From: "Acme Roofing <office@acme.example>"}}
	b.startExecutor(t, nil)

	chain := b.salesChainSQL(t, ctx)
	q := "Q-" + pad4(chain.quoteNo)
	sms := func(purpose string, ctxRef J, more ...J) res {
		in := J{"purpose": purpose, "context_ref": ctxRef}
		for _, m := range more {
			for k, v := range m {
				in[k] = v
			}
		}
		r, rc := b.ok(t, ctx, "comms.compose_sms", in)
		require.Empty(t, rc.Effects.DBWrites, "a draft writes nothing")
		require.Empty(t, rc.Effects.Outside, "a draft sends nothing")
		return r
	}

	r := sms("quote_follow_up", ref("quote", chain.quote))
	require.Equal(t, "Hi Maria, just following up on quote "+q+" for $10,298.70 (incl. GST), sent on Friday 20 November 2026. "+
		"It's valid until Friday 18 December 2026. Happy to answer any questions. Thanks, Acme Roofing!", r.str(t, "message"))
	require.Equal(t, "quote_follow_up.sms", r.str(t, "template_id"))
	require.Equal(t, "friendly", r.str(t, "tone"))
	require.NotEmpty(t, r.str(t, "to"))
	require.Equal(t, int64(len(r.str(t, "message"))), r.int(t, "characters"))
	require.Equal(t, int64(2), r.int(t, "segments"), "more than 160 GSM characters: two segments of at most 153")

	// From the lead: its latest quote; formal and brief tones.
	r = sms("quote_follow_up", ref("lead", chain.lead), J{"tone": "formal"})
	require.True(t, strings.HasPrefix(r.str(t, "message"), "Dear Maria Rossi, just following up on quote "+q), r.str(t, "message"))
	require.True(t, strings.HasSuffix(r.str(t, "message"), "Kind regards, Acme Roofing."), r.str(t, "message"))
	r = sms("quote_follow_up", ref("lead", chain.lead), J{"tone": "Brief"})
	require.True(t, strings.HasPrefix(r.str(t, "message"), "Just following up on quote "+q), r.str(t, "message"))

	r = sms("invoice_reminder", ref("invoice", chain.invoice), J{"link": "https://pay.example.com/i/1"})
	require.Contains(t, r.str(t, "message"), "invoice INV-"+pad4(chain.invoiceNo)+" has $7,298.70 outstanding, which was due on Tuesday 10 November 2026.")
	require.Contains(t, r.str(t, "message"), "You can pay here: https://pay.example.com/i/1")
	r = sms("payment_received", ref("job", chain.job))
	require.Contains(t, r.str(t, "message"), "$7,298.70 remains outstanding")
	r = sms("job_scheduled", ref("job", chain.job))
	require.Contains(t, r.str(t, "message"), "your job J-"+pad4(chain.jobNo)+" at 12 Station St, Marrickville is scheduled for Monday 7 December 2026 to Wednesday 9 December 2026")
	r = sms("lead_follow_up", ref("lead", chain.lead))
	require.Contains(t, r.str(t, "message"), "thanks for contacting Acme Roofing about your roof in Marrickville")
	r = sms("generic", ref("invoice", chain.invoice))
	require.Contains(t, r.str(t, "message"), "about invoice INV-")

	// A review needs a completed job; an inspection confirmation a booked visit.
	b.refused(t, ctx, registry.CodeConflict, "comms.compose_sms", J{"purpose": "review_request", "context_ref": ref("job", chain.job)})
	_, err := b.pool.Exec(ctx, `UPDATE jobs SET status = 'completed', completed_at = now() WHERE id = $1`, chain.job)
	require.NoError(t, err)
	r = sms("review_request", ref("job", chain.job), J{"link": "https://g.page/r/acme/review"})
	require.Contains(t, r.str(t, "message"), "would you leave us a review? https://g.page/r/acme/review")
	b.refused(t, ctx, registry.CodeNotFound, "comms.compose_sms", J{"purpose": "inspection_confirmation", "context_ref": ref("lead", chain.lead)})
	b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": chain.lead, "preferred_window": J{"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"}})
	r = sms("inspection_confirmation", ref("lead", chain.lead))
	require.Contains(t, r.str(t, "message"), "your roof inspection at 12 Station St, Marrickville is booked for Wednesday 2 December 2026, 9:00 am to 10:00 am.",
		"Sydney time (UTC+11)")

	// An invoice paid in full is no reason for a reminder.
	_, err = b.pool.Exec(ctx, `UPDATE invoices SET amount_paid_cents = total_cents, paid_at = now() WHERE id = $1`, chain.invoice)
	require.NoError(t, err)
	b.refused(t, ctx, registry.CodeConflict, "comms.compose_sms", J{"purpose": "invoice_reminder", "context_ref": ref("invoice", chain.invoice)})

	// Emails: a subject and a body from the same records.
	e, rc := b.ok(t, ctx, "comms.compose_email", J{"purpose": "quote_follow_up", "context_ref": ref("quote", chain.quote)})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "Your quote "+q+" from Acme Roofing", e.str(t, "subject"))
	require.True(t, strings.HasPrefix(e.str(t, "body"), "Hi Maria,\n\nWe're following up on quote "+q+" for $10,298.70 (including GST), which we sent on Friday 20 November 2026."), e.str(t, "body"))
	require.True(t, strings.HasSuffix(e.str(t, "body"), "\n\nThanks,\nAcme Roofing\n"), e.str(t, "body"))
	require.Equal(t, "maria@example.com", e.str(t, "to"))
	require.Equal(t, "quote_follow_up.email", e.str(t, "template_id"))
	e, _ = b.ok(t, ctx, "comms.compose_email", J{"purpose": "inspection_confirmation", "context_ref": ref("lead", chain.lead), "tone": "formal"})
	require.Equal(t, "Roof inspection booked: Wednesday 2 December 2026", e.str(t, "subject"))
	require.True(t, strings.HasPrefix(e.str(t, "body"), "Dear Maria Rossi,\n\n"))

	// An entity: its own name and details.
	ent, _ := b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Tom Nguyen", "contact": J{"phone": "0400 111 222", "suburb": "Newtown"}})
	r = sms("generic", ref("entity", ent.str(t, "entity_id")))
	require.Equal(t, "Hi Tom, we're getting in touch about your roof in Newtown. Let us know if you have any questions. Thanks, Acme Roofing!", r.str(t, "message"))
	require.Equal(t, "0400 111 222", r.str(t, "to"))

	// Refusals: an unknown purpose lists the known ones; an unknown tone; a record that does not exist; a
	// purpose whose record the reference does not reach.
	rr := b.refused(t, ctx, registry.CodeValidation, "comms.compose_sms", J{"purpose": "birthday", "context_ref": ref("lead", chain.lead)})
	require.Contains(t, rr.Error.Message, "generic, inspection_confirmation, invoice_reminder, job_scheduled, lead_follow_up, payment_received, quote_follow_up, review_request")
	b.refused(t, ctx, registry.CodeValidation, "comms.compose_email", J{"purpose": "generic", "context_ref": ref("lead", chain.lead), "tone": "sarcastic"})
	missing := uuid.NewString()
	rr = b.refused(t, ctx, registry.CodeNotFound, "comms.compose_email", J{"purpose": "quote_follow_up", "context_ref": ref("quote", missing)})
	require.Contains(t, rr.Error.Message, missing)
	b.refused(t, ctx, registry.CodeNotFound, "comms.compose_sms", J{"purpose": "invoice_reminder", "context_ref": ref("entity", ent.str(t, "entity_id"))})
	b.refused(t, ctx, registry.CodeValidation, "comms.compose_sms", J{"purpose": "generic", "context_ref": ref("personal", "x")})
}

func pad4(n int64) string { return fmt.Sprintf("%04d", n) }

func TestGEMCommsCallsAndFollowups(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	ent, _ := b.ok(t, ctx, "entity.create", J{"entity_type": "lead", "name": "Fixture Lead", "lead_id": lead})
	entityID := ent.str(t, "entity_id")

	r, rc := b.ok(t, ctx, "comms.log_call_outcome", J{"entity_id": entityID, "outcome": "no_answer", "context_ref": ref("lead", lead)})
	require.Equal(t, "new", r.str(t, "lead_stage"), "not reached: still new")
	require.Equal(t, "Call not answered", r.str(t, "summary"))
	require.Equal(t, map[string]int{"entity_interactions insert": 1}, writes(rc))
	require.Equal(t, []string{r.str(t, "interaction_id")}, wroteIDs(rc, "entity_interactions", "insert"))

	r, rc = b.ok(t, ctx, "comms.log_call_outcome", J{"entity_id": entityID, "outcome": "answered", "notes": "Wants a quote for the gutters too",
		"context_ref": ref("lead", lead)})
	require.Equal(t, "contacted", r.str(t, "lead_stage"))
	require.Equal(t, "Call answered: Wants a quote for the gutters too", r.str(t, "summary"))
	require.Equal(t, map[string]int{"entity_interactions insert": 1, "leads update": 1}, writes(rc))

	r, _ = b.ok(t, ctx, "comms.log_call_outcome", J{"entity_id": entityID, "outcome": "left_message"})
	require.Nil(t, r.get(t, "lead_stage"))
	require.Nil(t, r.get(t, "context_ref"))

	got, _ := b.ok(t, ctx, "entity.get", J{"entity_id": entityID})
	calls := got.list(t, "entity.interactions")
	require.Len(t, calls, 3)
	require.Equal(t, "left_message", got.str(t, "entity.interactions.0.call_outcome"), "newest first")
	require.Equal(t, "call", got.str(t, "entity.interactions.0.interaction_type"))
	require.Equal(t, "Wants a quote for the gutters too", got.str(t, "entity.interactions.1.details.notes"))

	missing := uuid.NewString()
	rr := b.refused(t, ctx, registry.CodeNotFound, "comms.log_call_outcome", J{"entity_id": missing, "outcome": "answered"})
	require.Contains(t, rr.Error.Message, missing)
	b.refused(t, ctx, registry.CodeNotFound, "comms.log_call_outcome", J{"entity_id": entityID, "outcome": "busy", "context_ref": ref("lead", missing)})
	b.refused(t, ctx, registry.CodeValidation, "comms.log_call_outcome", J{"entity_id": entityID, "outcome": "busy", "context_ref": ref("meeting", "x")})

	// Follow-ups: from a logged message (its lead), from a lead, from something personal.
	msgID := b.str(t, ctx, `INSERT INTO comms_log (channel, lead_id, counterpart, body, provider, provider_ref)
		VALUES ('sms', $1, '+61412000001', 'Can you come Tuesday?', 'twilio', 'SMx') RETURNING id::text`, lead)
	due := time.Now().Add(26 * time.Hour).UTC().Truncate(time.Second)
	r, rc = b.ok(t, ctx, "comms.create_followup_task_from_message", J{"title": "Reply about Tuesday", "context_ref": ref("message", msgID),
		"due_at": rfc3339(due)})
	require.Equal(t, lead, r.str(t, "lead_id"))
	require.Equal(t, "open", r.str(t, "status"))
	require.Equal(t, []string{r.str(t, "task_id")}, wroteIDs(rc, "os_tasks", "insert"))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE id = $1 AND lead_id = $2 AND due_at = $3 AND title = 'Reply about Tuesday'
		AND domain = 'business' AND context_type = 'message' AND context_id = $4`, r.str(t, "task_id"), lead, due, msgID))
	r, _ = b.ok(t, ctx, "comms.create_followup_task_from_message", J{"title": "Call back", "context_ref": ref("lead", lead)})
	require.Equal(t, lead, r.str(t, "lead_id"))
	require.Nil(t, r.get(t, "due_at"))
	r, _ = b.ok(t, ctx, "comms.create_followup_task_from_message", J{"title": "Book the dentist", "context_ref": ref("personal", "health")})
	require.Nil(t, r.get(t, "lead_id"))
	require.Equal(t, "personal", b.str(t, ctx, `SELECT domain FROM os_tasks WHERE id = $1`, r.str(t, "task_id")))

	b.refused(t, ctx, registry.CodeNotFound, "comms.create_followup_task_from_message", J{"title": "x", "context_ref": ref("message", missing)})
	b.refused(t, ctx, registry.CodeValidation, "comms.create_followup_task_from_message", J{"title": "  ", "context_ref": ref("lead", lead)})
	b.refused(t, ctx, registry.CodeValidation, "comms.create_followup_task_from_message", J{"title": "x", "context_ref": J{"id": lead}})

	// The old tool is gone: GEM's name does its job.
	_, ok := b.reg.Tool("comms.create_followup_task")
	require.False(t, ok)
}

// fakeSMTP is an SMTP server that speaks enough of RFC 5321 for a real client: EHLO (offering AUTH PLAIN
// and 8BITMIME, not STARTTLS), AUTH PLAIN, MAIL, RCPT, DATA, RSET, NOOP, QUIT. It requires the login it was
// made with and refuses the recipient nobody@invalid.example.
type fakeSMTP struct {
	addr       string
	user, pass string

	mu    sync.Mutex
	mails []fakeMail
}

type fakeMail struct {
	login string
	from  string
	to    []string
	data  string
}

func newFakeSMTP(t *testing.T, user, pass string) *fakeSMTP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	f := &fakeSMTP{addr: ln.Addr().String(), user: user, pass: pass}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(conn)
		}
	}()
	return f
}

func (f *fakeSMTP) serve(conn net.Conn) {
	defer conn.Close()
	tp := textproto.NewConn(conn)
	reply := func(lines ...string) {
		for _, l := range lines {
			_ = tp.PrintfLine("%s", l)
		}
	}
	reply("220 fake.example ESMTP ready")
	var m fakeMail
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			reply("250-fake.example greets "+arg, "250-8BITMIME", "250-AUTH PLAIN", "250 SIZE 10240000")
		case "HELO", "NOOP":
			reply("250 2.0.0 Ok")
		case "AUTH":
			mech, initial, _ := strings.Cut(arg, " ")
			raw, err := base64.StdEncoding.DecodeString(initial)
			parts := strings.Split(string(raw), "\x00")
			if strings.ToUpper(mech) != "PLAIN" || err != nil || len(parts) != 3 || parts[1] != f.user || parts[2] != f.pass {
				reply("535 5.7.8 Error: authentication failed")
				continue
			}
			m.login = parts[1]
			reply("235 2.7.0 Authentication successful")
		case "MAIL":
			if m.login == "" {
				reply("530 5.7.0 Authentication required")
				continue
			}
			m.from = between(arg, "<", ">")
			reply("250 2.1.0 Ok")
		case "RCPT":
			to := between(arg, "<", ">")
			if to == "nobody@invalid.example" {
				reply("550 5.1.1 <" + to + ">: Recipient address rejected: User unknown")
				continue
			}
			m.to = append(m.to, to)
			reply("250 2.1.5 Ok")
		case "DATA":
			reply("354 End data with <CR><LF>.<CR><LF>")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			m.data = string(data)
			f.mu.Lock()
			f.mails = append(f.mails, m)
			f.mu.Unlock()
			m = fakeMail{login: m.login}
			reply("250 2.0.0 Ok: queued as 4Xq1Bk")
		case "RSET":
			m = fakeMail{login: m.login}
			reply("250 2.0.0 Ok")
		case "QUIT":
			reply("221 2.0.0 Bye")
			return
		default:
			reply("502 5.5.2 Error: command not recognized")
		}
	}
}

func (f *fakeSMTP) received() []fakeMail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeMail(nil), f.mails...)
}

func between(s, open, close string) string {
	_, rest, _ := strings.Cut(s, open)
	v, _, _ := strings.Cut(rest, close)
	return v
}
