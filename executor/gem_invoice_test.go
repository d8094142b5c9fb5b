package executor_test

import (
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/business/handlers/twiliotest"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGEMInvoiceFromJob(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	// Not completed: a conflict.
	open := b.jobTo(t, ctx, "scheduled")
	r := b.refused(t, ctx, registry.CodeConflict, "invoice.create_from_job", J{"job_id": open.job})
	require.Contains(t, r.Error.Message, "scheduled")

	f := b.jobTo(t, ctx, "completed")
	res, rc := b.ok(t, ctx, "invoice.create_from_job", J{"job_id": f.job, "due_days": 7, "notes": "BSB 062-000, account 1234 5678"})
	invoice := res.str(t, "invoice_id")
	require.Equal(t, int64(fixtureSubtotalCents), res.int(t, "subtotal_cents"))
	require.Equal(t, int64(fixtureGSTCents), res.int(t, "gst_cents"))
	require.Equal(t, int64(fixtureTotalCents), res.int(t, "total_cents"))
	require.Equal(t, int64(fixtureTotalCents), res.int(t, "balance_cents"))
	require.Equal(t, "unpaid", res.str(t, "status"))
	require.Equal(t, "BSB 062-000, account 1234 5678", res.str(t, "notes"))
	require.Equal(t, f.job, res.str(t, "job_id"))
	require.Equal(t, f.quote, res.str(t, "quote_id"))
	issued, err := time.Parse(time.DateOnly, res.str(t, "issued_on"))
	require.NoError(t, err)
	require.Equal(t, issued.AddDate(0, 0, 7).Format(time.DateOnly), res.str(t, "due_on"))
	require.Equal(t, map[string]int{"invoices insert": 1}, writes(rc))
	require.Equal(t, invoice, rc.Summary["result.invoice_id"])

	// A second invoice for the job: a conflict naming the first.
	r = b.refused(t, ctx, registry.CodeConflict, "invoice.create_from_job", J{"job_id": f.job})
	require.Contains(t, r.Error.Message, invoice)
	require.Equal(t, invoice, decodeDetails(t, r)["invoice_id"])
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM invoices WHERE job_id = $1`, f.job))

	// 14 days by default; 0 is due on the day.
	res, _ = b.ok(t, ctx, "invoice.create_from_job", J{"job_id": b.jobTo(t, ctx, "completed").job})
	issued, err = time.Parse(time.DateOnly, res.str(t, "issued_on"))
	require.NoError(t, err)
	require.Equal(t, issued.AddDate(0, 0, 14).Format(time.DateOnly), res.str(t, "due_on"))
	res, _ = b.ok(t, ctx, "invoice.create_from_job", J{"job_id": b.jobTo(t, ctx, "completed").job, "due_days": 0})
	require.Equal(t, res.str(t, "issued_on"), res.str(t, "due_on"))

	missing := uuid.NewString()
	for _, tt := range []struct {
		tool  string
		input J
	}{
		{"invoice.create_from_job", J{"job_id": missing}},
		{"invoice.add_payment", J{"invoice_id": missing, "amount_cents": 1}},
		{"invoice.mark_overdue", J{"invoice_id": missing}},
	} {
		r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
		require.Contains(t, r.Error.Message, missing)
	}
}

func TestGEMInvoicePayments(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	f := b.jobTo(t, ctx, "invoice")
	total := f.totalCents

	r := b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": total + 1})
	require.Contains(t, r.Error.Message, "overpayment")
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM invoice_payments`))
	b.refused(t, ctx, registry.CodeValidation, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 1,
		"paid_at": rfc3339(time.Now().Add(time.Hour))})

	// A deposit paid yesterday evening, Sydney time: received_on is its Sydney date.
	syd, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	paidAt := time.Now().In(syd).AddDate(0, 0, -1)
	paidAt = time.Date(paidAt.Year(), paidAt.Month(), paidAt.Day(), 23, 30, 0, 0, syd)
	res, rc := b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 300_000, "method": "card",
		"reference": "DEP-ROSSI", "paid_at": paidAt.Format(time.RFC3339)})
	payment := res.str(t, "payment_id")
	require.Equal(t, paidAt.Format(time.DateOnly), res.str(t, "received_on"))
	require.Equal(t, paidAt.UTC().Format(time.RFC3339), res.str(t, "paid_at"))
	require.Equal(t, "card", res.str(t, "method"))
	require.Equal(t, true, res.get(t, "created"))
	require.Equal(t, "unpaid", res.str(t, "previous_status"))
	require.Equal(t, "partially_paid", res.str(t, "invoice.status"))
	require.Equal(t, total-300_000, res.int(t, "invoice.balance_cents"))
	require.Equal(t, map[string]int{"invoice_payments insert": 1, "invoices update": 1}, writes(rc))
	require.Equal(t, payment, rc.Summary["result.payment_id"])

	// The same reference again is the same payment: returned, not recorded twice; another amount with it
	// is a conflict.
	res, rc = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 300_000, "reference": "DEP-ROSSI"})
	require.Equal(t, payment, res.str(t, "payment_id"))
	require.Equal(t, false, res.get(t, "created"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 1, "reference": "DEP-ROSSI"})

	// The rest, by bank transfer (the default method): paid, at the payment's time.
	b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": total - 300_000 + 1})
	res, _ = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": total - 300_000})
	require.Equal(t, "bank_transfer", res.str(t, "method"))
	require.Equal(t, "paid", res.str(t, "invoice.status"))
	require.Equal(t, int64(0), res.int(t, "invoice.balance_cents"))
	require.Equal(t, res.str(t, "paid_at"), res.str(t, "invoice.paid_at"))
	r = b.refused(t, ctx, registry.CodeConflict, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": 1})
	require.Contains(t, r.Error.Message, "already paid")

	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM invoice_payments`))
	require.Equal(t, int(total), b.count(t, ctx, `SELECT amount_paid_cents FROM invoices`))
	_, err = b.pool.Exec(ctx, `UPDATE invoices SET amount_paid_cents = total_cents + 1`)
	require.ErrorContains(t, err, "invoices_no_overpayment", "the database refuses overpayment too")
}

func TestGEMInvoiceOverdue(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	late := b.jobTo(t, ctx, "invoice")
	later := b.jobTo(t, ctx, "invoice")
	current := b.jobTo(t, ctx, "invoice")
	paid := b.jobTo(t, ctx, "invoice")
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

	// Marked overdue; again changes nothing.
	res, rc := b.ok(t, ctx, "invoice.mark_overdue", J{"invoice_id": late.invoice})
	require.Equal(t, late.invoice, res.str(t, "invoice_id"))
	require.Equal(t, "overdue", res.str(t, "status"))
	require.Equal(t, true, res.get(t, "changed"))
	require.Equal(t, int64(26), res.int(t, "days_overdue"))
	require.Equal(t, map[string]int{"invoices update": 1}, writes(rc))
	res, rc = b.ok(t, ctx, "invoice.mark_overdue", J{"invoice_id": late.invoice})
	require.Equal(t, false, res.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites)

	// as_of decides: later was due 6 days ago, so it was not overdue 10 days ago, and is now.
	r2 := b.refused(t, ctx, registry.CodeConflict, "invoice.mark_overdue", J{"invoice_id": later.invoice,
		"as_of": rfc3339(time.Now().AddDate(0, 0, -10))})
	require.Contains(t, r2.Error.Message, "not overdue")
	b.refused(t, ctx, registry.CodeValidation, "invoice.mark_overdue", J{"invoice_id": later.invoice,
		"as_of": rfc3339(time.Now().AddDate(0, 0, 30))})
	res, _ = b.ok(t, ctx, "invoice.mark_overdue", J{"invoice_id": later.invoice, "as_of": rfc3339(time.Now())})
	require.Equal(t, "overdue", res.str(t, "status"))

	// Not yet due, or paid: conflicts.
	r2 = b.refused(t, ctx, registry.CodeConflict, "invoice.mark_overdue", J{"invoice_id": current.invoice})
	require.Contains(t, r2.Error.Message, "not overdue")
	r2 = b.refused(t, ctx, registry.CodeConflict, "invoice.mark_overdue", J{"invoice_id": paid.invoice})
	require.Contains(t, r2.Error.Message, "paid")

	// Part-paid, still overdue; fully paid, paid.
	res, _ = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": late.invoice, "amount_cents": 1000})
	require.Equal(t, "overdue", res.str(t, "invoice.status"))
	res, _ = b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": late.invoice, "amount_cents": late.totalCents - 1000})
	require.Equal(t, "paid", res.str(t, "invoice.status"))
	r, _ = b.ok(t, ctx, "invoice.list_overdue", J{})
	require.Equal(t, int64(1), r.int(t, "total_count"))
}

func TestGEMInvoiceSendsNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil) // no providers
	f := b.jobTo(t, ctx, "invoice")
	sms := []string{"GEM_SMS_TWILIO_ACCOUNT_SID", "GEM_SMS_TWILIO_AUTH_TOKEN", "GEM_SMS_FROM"}
	email := []string{"GEM_SMTP_URL", "GEM_EMAIL_FROM"}
	for _, tt := range []struct {
		tool  string
		input J
		env   []string
	}{
		{"invoice.send", J{"invoice_id": f.invoice, "channel": "email"}, email},
		{"invoice.send", J{"invoice_id": f.invoice, "channel": "sms"}, sms},
		{"invoice.send", J{"invoice_id": f.invoice, "channel": "both"}, sms},
		{"invoice.send_reminder_sms", J{"invoice_id": f.invoice, "to": "0412 345 678", "message": "Friendly reminder"}, sms},
		{"invoice.send_reminder_email", J{"invoice_id": f.invoice, "to": "maria@example.com", "subject": "Reminder", "body": "Please pay"}, email},
	} {
		r := b.run(t, ctx, tt.tool, tt.input)
		require.Equal(t, registry.StatusNotConfigured, r.Status, tt.tool)
		require.Equal(t, registry.CodeNotConfigured, r.Error.Code)
		var d registry.NotConfiguredDetails
		require.NoError(t, json.Unmarshal(r.Error.Details, &d))
		require.Equal(t, tt.env, d.RequiredEnv, tt.tool)
		require.NotEmpty(t, d.NextSteps)
		require.Empty(t, r.Effects.Outside)
		require.Empty(t, r.Effects.DBWrites)
	}
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

// mailBody decodes a received email's quoted-printable body.
func mailBody(t *testing.T, m fakeMail) (subject, body string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(m.data))
	require.NoError(t, err)
	raw, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	require.NoError(t, err)
	return msg.Header.Get("Subject"), string(raw)
}

func TestGEMInvoiceSends(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	smtp := newFakeSMTP(t, "gem", "pw")
	b.business = businesspack.Config{
		SMS:      businesspack.TwilioConfig{AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: twiliotest.From, BaseURL: twilio.URL},
		Email:    businesspack.SMTPConfig{URL: "smtp://gem:pw@" + smtp.addr, From: "Acme Roofing <office@acme-roofing.example>"},
		Business: businesspack.Letterhead{Name: "Acme Roofing", ABN: "12 345 678 901", Phone: "02 9000 1234"},
	}
	b.startExecutor(t, nil)
	f := b.jobTo(t, ctx, "invoice")
	number := b.count(t, ctx, `SELECT number FROM invoices WHERE id = $1`, f.invoice)
	label := fmt.Sprintf("INV-%04d", number)

	// The invoice by email: the amounts, dates and work in the text; sent_at recorded.
	res, rc := b.ok(t, ctx, "invoice.send", J{"invoice_id": f.invoice, "channel": "email"})
	require.Equal(t, true, res.get(t, "sent"))
	require.Equal(t, "email", res.str(t, "messages.0.channel"))
	require.Equal(t, "maria.rossi@example.com", res.str(t, "messages.0.to"))
	sentAt := res.str(t, "sent_at")
	require.NotEmpty(t, sentAt)
	require.Equal(t, map[string]int{"comms_log insert": 1, "invoices update": 1}, writes(rc))
	require.Len(t, rc.Effects.Outside, 1)
	mails := smtp.received()
	require.Len(t, mails, 1)
	subject, body := mailBody(t, mails[0])
	require.Equal(t, "Invoice "+label, subject)
	for _, want := range []string{"Hi Maria", "from Acme Roofing", "ABN:            12 345 678 901", "02 9000 1234", label, "$7,487.57", "$748.76", "$8,236.33", "Balance owing:  $8,236.33",
		"Colorbond roof sheeting, supply and install, 152.5 m2: $6,938.75", "12 Station St"} {
		require.Contains(t, body, want)
	}

	// By SMS, with an opening of the caller's own for email: the SMS is the caller's text.
	res, _ = b.ok(t, ctx, "invoice.send", J{"invoice_id": f.invoice, "channel": "both", "message_override": "Maria, your invoice as promised."})
	require.Len(t, res.list(t, "messages"), 2)
	require.Equal(t, sentAt, res.str(t, "sent_at"), "sent_at is the first send")
	require.Equal(t, "Maria, your invoice as promised.", twilio.Messages()[0].Get("Body"))
	_, body = mailBody(t, smtp.received()[1])
	require.True(t, strings.HasPrefix(body, "Maria, your invoice as promised.\n"), body)
	require.Contains(t, body, "$8,236.33", "the details still follow")
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM comms_log WHERE invoice_id = $1 AND context_type = 'invoice'`, f.invoice))

	// Reminders, with the invoice in the log.
	res, rc = b.ok(t, ctx, "invoice.send_reminder_sms", J{"invoice_id": f.invoice, "to": "0412 000 111",
		"message": "Hi Maria, a reminder that " + label + " is due. Thanks!", "template_id": "reminder-1"})
	smsID := res.str(t, "sms_id")
	require.Equal(t, "+61412000111", res.str(t, "to"))
	require.Equal(t, "reminder-1", res.str(t, "template_id"))
	require.True(t, strings.HasPrefix(res.str(t, "provider_ref"), "SM"))
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(rc))
	require.Equal(t, []registry.OutsideEffect{{Kind: "sms", Target: "+61412000111", Reference: res.str(t, "provider_ref")}}, rc.Effects.Outside)
	require.Equal(t, f.invoice, b.str(t, ctx, `SELECT invoice_id::text FROM comms_log WHERE id = $1`, smsID))
	require.Equal(t, "reminder-1", b.str(t, ctx, `SELECT template_id FROM comms_log WHERE id = $1`, smsID))

	res, rc = b.ok(t, ctx, "invoice.send_reminder_email", J{"invoice_id": f.invoice, "to": "accounts@rossi.example",
		"subject": "Reminder: " + label, "body": "Hi Maria,\nJust a reminder.\n"})
	emailID := res.str(t, "email_id")
	require.Regexp(t, `^<[0-9a-f-]{36}@acme-roofing\.example>$`, res.str(t, "message_id"))
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(rc))
	require.Equal(t, f.invoice, b.str(t, ctx, `SELECT invoice_id::text FROM comms_log WHERE id = $1`, emailID))
	require.Equal(t, []string{"accounts@rossi.example"}, smtp.received()[2].to)

	// A number Twilio refuses: validation_error, nothing sent or logged.
	r := b.run(t, ctx, "invoice.send_reminder_sms", J{"invoice_id": f.invoice, "to": "+61 400 000 000", "message": "x"})
	require.Equal(t, registry.CodeValidation, r.Error.Code)
	require.Empty(t, r.Effects.DBWrites)

	// Both, when the email server refuses the customer's address after the SMS went out: the SMS stays on
	// record, and not_sent says why the email did not go.
	_, err := b.pool.Exec(ctx, `UPDATE entities SET email = 'nobody@invalid.example' WHERE id = $1`, f.customer)
	require.NoError(t, err)
	res, rc = b.ok(t, ctx, "invoice.send", J{"invoice_id": f.invoice, "channel": "both"})
	require.Len(t, res.list(t, "messages"), 1)
	require.Equal(t, "sms", res.str(t, "messages.0.channel"))
	require.Equal(t, "email", res.str(t, "not_sent.0.channel"))
	require.Contains(t, res.str(t, "not_sent.0.reason"), "550")
	require.Equal(t, map[string]int{"comms_log insert": 1, "invoices update": 1}, writes(rc))

	// Paid: the invoice can still be sent (as a record), reminders are refused.
	b.ok(t, ctx, "invoice.add_payment", J{"invoice_id": f.invoice, "amount_cents": f.totalCents})
	before := len(twilio.Messages())
	r = b.refused(t, ctx, registry.CodeConflict, "invoice.send_reminder_sms", J{"invoice_id": f.invoice, "to": "0412 000 111", "message": "x"})
	require.Contains(t, r.Error.Message, "paid")
	b.refused(t, ctx, registry.CodeConflict, "invoice.send_reminder_email", J{"invoice_id": f.invoice, "to": "a@b.example", "subject": "x", "body": "y"})
	require.Len(t, twilio.Messages(), before)
	b.ok(t, ctx, "invoice.send", J{"invoice_id": f.invoice, "channel": "sms"})
	require.Contains(t, twilio.Messages()[before].Get("Body"), "paid in full")

	missing := uuid.NewString()
	b.refused(t, ctx, registry.CodeNotFound, "invoice.send", J{"invoice_id": missing, "channel": "sms"})
	b.refused(t, ctx, registry.CodeNotFound, "invoice.send_reminder_sms", J{"invoice_id": missing, "to": "0412 000 111", "message": "x"})
}
