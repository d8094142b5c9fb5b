package businesshandlers

// Messages about jobs and invoices: invoice.send, invoice.send_reminder_sms and _email, job.request_review.
// They go out through comms' deliverSMS and deliverEmail (Twilio's API, SMTP) and are logged in comms_log
// against their job or invoice. The executor runs each call at most once (send:* permissions): a message
// never goes out twice for one call.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
)

// messageSent is one message that went out.
type messageSent struct {
	Channel     string    `json:"channel"`
	To          string    `json:"to"`
	MessageID   uuid.UUID `json:"message_id"`
	ProviderRef string    `json:"provider_ref"`
}

// customerMessage is a message to a customer on one or both channels, addressed to the phone and email
// on record.
type customerMessage struct {
	channel  string // sms, email or both
	about    contextRef
	phone    *string
	email    *string
	smsBody  string
	subject  string
	mailBody string
}

// customerMessageResult says what went out.
type customerMessageResult struct {
	Sent     bool                          `json:"sent"`
	Messages []messageSent                 `json:"messages"`
	NotSent  []businesspack.MessageNotSent `json:"not_sent"`
}

// sendToCustomer sends the message. Every provider the channel needs must be configured (else
// not_configured, and nothing is sent). A channel without a usable address on record is skipped when both
// were asked for, and refused when it was the only one. If the SMS went out and the email then fails, the
// call still succeeds, so the SMS stays on record, and the email's failure is in not_sent.
func (p *pack) sendToCustomer(ctx context.Context, c *executor.Call, m customerMessage) (*customerMessageResult, error) {
	wantSMS, wantEmail := m.channel != "email", m.channel != "sms"
	if wantSMS {
		if err := p.smsReady(); err != nil {
			return nil, err
		}
	}
	if wantEmail {
		if err := p.emailReady(); err != nil {
			return nil, err
		}
	}
	out := &customerMessageResult{Messages: []messageSent{}, NotSent: []businesspack.MessageNotSent{}}
	var messages []outgoing
	// A channel without a usable address is given up; with both asked for, the other may still go.
	if wantSMS {
		switch {
		case m.phone == nil:
			out.NotSent = append(out.NotSent, businesspack.MessageNotSent{Channel: "sms", Reason: "the customer has no phone number on record"})
		case !p.canText(*m.phone):
			out.NotSent = append(out.NotSent, businesspack.MessageNotSent{Channel: "sms", Reason: fmt.Sprintf("the customer's phone %q cannot receive SMS", *m.phone)})
		default:
			messages = append(messages, outgoing{sms: &smsDelivery{To: *m.phone, Body: m.smsBody, Ref: m.about}})
		}
	}
	if wantEmail {
		switch {
		case m.email == nil:
			out.NotSent = append(out.NotSent, businesspack.MessageNotSent{Channel: "email", Reason: "the customer has no email address on record"})
		case !canEmail(*m.email):
			out.NotSent = append(out.NotSent, businesspack.MessageNotSent{Channel: "email", Reason: fmt.Sprintf("the customer's email %q is not an email address", *m.email)})
		default:
			messages = append(messages, outgoing{email: &emailDelivery{To: *m.email, Subject: m.subject, Body: m.mailBody, Ref: m.about}})
		}
	}
	if len(messages) == 0 {
		reasons := make([]string, len(out.NotSent))
		for i, n := range out.NotSent {
			reasons[i] = n.Reason
		}
		return nil, executor.Invalid("nothing can be sent: %s", strings.Join(reasons, "; "))
	}
	sent, failed, err := p.deliverInTurn(ctx, c, messages)
	if err != nil {
		return nil, err
	}
	for _, d := range sent {
		out.Messages = append(out.Messages, messageSent{Channel: d.Channel, To: d.To, MessageID: d.ID, ProviderRef: d.ProviderRef})
	}
	out.NotSent = append(out.NotSent, failed...)
	out.Sent = true
	return out, nil
}

// outgoing is one message to a customer: an SMS or an email.
type outgoing struct {
	sms   *smsDelivery
	email *emailDelivery
}

// delivered is one outgoing message that went out, as comms_log and the provider know it.
type delivered struct {
	Channel     string
	To          string
	ID          uuid.UUID
	Provider    string
	ProviderRef string
}

// deliverInTurn sends the messages in order: the one mechanism of every send to a customer on several
// channels. A failure before anything went out fails the call; after, the call goes on (failing would roll
// back the record of a message the customer has) and the failure is listed in failed.
func (p *pack) deliverInTurn(ctx context.Context, c *executor.Call, messages []outgoing) (sent []delivered, failed []businesspack.MessageNotSent, err error) {
	failed = []businesspack.MessageNotSent{}
	for _, m := range messages {
		d, err := p.deliverOne(ctx, c, m)
		switch {
		case err == nil:
			sent = append(sent, d)
		case len(sent) == 0:
			return nil, nil, err
		default:
			failed = append(failed, businesspack.MessageNotSent{Channel: m.channel(), Reason: errorMessage(err)})
		}
	}
	return sent, failed, nil
}

func (m outgoing) channel() string {
	if m.sms != nil {
		return "sms"
	}
	return "email"
}

func (p *pack) deliverOne(ctx context.Context, c *executor.Call, m outgoing) (delivered, error) {
	if m.sms != nil {
		d, err := p.deliverSMS(ctx, c, *m.sms)
		if err != nil {
			return delivered{}, err
		}
		return delivered{Channel: "sms", To: d.To, ID: d.SMSID, Provider: "twilio", ProviderRef: d.SID}, nil
	}
	d, err := p.deliverEmail(ctx, c, *m.email)
	if err != nil {
		return delivered{}, err
	}
	return delivered{Channel: "email", To: d.To, ID: d.EmailID, Provider: "smtp", ProviderRef: d.MessageID}, nil
}

// canText reports whether a phone number can receive SMS.
func (p *pack) canText(phone string) bool {
	_, err := p.smsRecipient(phone)
	return err == nil
}

// canEmail reports whether an address is an email address.
func canEmail(address string) bool {
	_, err := emailRecipient(address)
	return err == nil
}

// greetingName is the first word of a customer's name, for "Hi Maria".
func greetingName(name string) string {
	if f := strings.Fields(name); len(f) > 0 {
		return f[0]
	}
	return "there"
}

type sendInvoiceInput struct {
	InvoiceID       uuid.UUID `json:"invoice_id"`
	Channel         string    `json:"channel"`
	MessageOverride *string   `json:"message_override"`
}

type sendInvoiceOutput struct {
	customerMessageResult
	InvoiceID uuid.UUID  `json:"invoice_id"`
	SentAt    *time.Time `json:"sent_at"`
}

// sendInvoice sends an invoice to the customer by email (its details and the work, in the text), SMS (a
// short note of the amount and due date) or both, and records when it was first sent.
func (p *pack) sendInvoice(ctx context.Context, c *executor.Call, in sendInvoiceInput) (*sendInvoiceOutput, error) {
	v, err := lockInvoice(ctx, c, in.InvoiceID)
	if err != nil {
		return nil, err
	}
	jobID, err := uuid.Parse(v.JobID)
	if err != nil {
		return nil, err
	}
	f, err := loadJobFacts(ctx, c, jobID)
	if err != nil {
		return nil, err
	}
	// scanInvoice reads an invoice's number and total from columns that are never null.
	number, total := *v.Number, *v.TotalCents
	label := invoiceLabel(number)
	biz := p.cfg.Business.WithDefaults()
	greeting := fmt.Sprintf("Hi %s, here is invoice %s from %s for the work at %s (job %s).", greetingName(f.Customer), label,
		biz.Name, orText(f.Site, "your property"), jobLabel(f.Number))
	smsBody := fmt.Sprintf("Hi %s, invoice %s from %s for job %s: %s incl. GST, due %s. Balance owing %s; please quote %s when you pay. Thank you!",
		greetingName(f.Customer), label, biz.Name, jobLabel(f.Number), formatAUD(total), docDate(v.DueOn), formatAUD(v.BalanceCents), label)
	if v.Status == "paid" {
		smsBody = fmt.Sprintf("Hi %s, invoice %s from %s for job %s (%s incl. GST) is paid in full. Thank you!",
			greetingName(f.Customer), label, biz.Name, jobLabel(f.Number), formatAUD(total))
	}
	if o := trimmedText(in.MessageOverride); o != nil {
		greeting, smsBody = *o, *o
	}

	var b strings.Builder
	b.WriteString(greeting + "\n\n")
	for _, row := range [][2]string{
		{"From", biz.Name}, {"ABN", biz.ABN},
		{"Invoice", label}, {"Issued", docDate(v.IssuedOn)}, {"Due", docDate(v.DueOn)},
		{"Subtotal", formatAUD(v.SubtotalCents)}, {"GST (10%)", formatAUD(v.GSTCents)}, {"Total", formatAUD(total)},
		{"Paid so far", formatAUD(v.AmountPaidCents)}, {"Balance owing", formatAUD(v.BalanceCents)},
	} {
		if row[1] != "" {
			fmt.Fprintf(&b, "  %-15s %s\n", row[0]+":", row[1])
		}
	}
	if len(f.Lines) > 0 {
		b.WriteString("\nWork (prices exclude GST):\n")
		for i, l := range f.Lines {
			fmt.Fprintf(&b, "  %d. %s, %s %s: %s\n", i+1, l.Description, l.Quantity, l.Unit, formatAUD(l.LineTotalCents))
		}
	}
	if v.Notes != nil && !isBlankText(*v.Notes) {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(*v.Notes))
	}
	if v.Status == "paid" {
		b.WriteString("\nThis invoice is paid in full. Thank you!\n")
	} else {
		fmt.Fprintf(&b, "\nPlease quote %s with your payment. Thank you for your business.\n", label)
	}
	b.WriteString("\n" + biz.Name + "\n")
	for _, d := range []string{biz.Phone, biz.Email, biz.Address} {
		if d != "" {
			b.WriteString(d + "\n")
		}
	}

	res, err := p.sendToCustomer(ctx, c, customerMessage{channel: in.Channel, about: contextRef{Type: "invoice", ID: v.InvoiceID},
		phone: f.Phone, email: f.Email, smsBody: smsBody, subject: "Invoice " + label, mailBody: b.String()})
	if err != nil {
		return nil, err
	}
	out := &sendInvoiceOutput{customerMessageResult: *res, InvoiceID: in.InvoiceID}
	err = c.DB.QueryRow(ctx, `UPDATE invoices SET sent_at = coalesce(sent_at, now()), updated_at = now() WHERE id = $1 RETURNING sent_at`,
		v.InvoiceID).Scan(&out.SentAt)
	if err != nil {
		return nil, fmt.Errorf("error recording that invoice %s was sent, which it was: %w", v.InvoiceID, err)
	}
	return out, nil
}

// orText is s, or otherwise when s is empty.
func orText(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// lockUnpaidInvoice locks an invoice a payment reminder is about: a paid one needs none.
func lockUnpaidInvoice(ctx context.Context, c *executor.Call, id uuid.UUID) error {
	v, err := lockInvoice(ctx, c, id)
	if err != nil {
		return err
	}
	if v.Status == "paid" {
		return executor.Conflict("invoice %s is paid: there is nothing to remind the customer of", id)
	}
	return nil
}

type invoiceReminderSMSInput struct {
	InvoiceID  uuid.UUID `json:"invoice_id"`
	To         string    `json:"to"`
	Message    string    `json:"message"`
	TemplateID *string   `json:"template_id"`
}

type invoiceReminderSMSOutput struct {
	SMSID          uuid.UUID `json:"sms_id"`
	InvoiceID      uuid.UUID `json:"invoice_id"`
	To             string    `json:"to"`
	ProviderRef    string    `json:"provider_ref"`
	ProviderStatus string    `json:"provider_status"`
	Segments       int       `json:"segments"`
	TemplateID     *string   `json:"template_id"`
	SentAt         time.Time `json:"sent_at"`
}

// sendInvoiceReminderSMS texts a payment reminder about an unpaid invoice and logs it against the invoice.
func (p *pack) sendInvoiceReminderSMS(ctx context.Context, c *executor.Call, in invoiceReminderSMSInput) (*invoiceReminderSMSOutput, error) {
	if err := lockUnpaidInvoice(ctx, c, in.InvoiceID); err != nil {
		return nil, err
	}
	d, err := p.deliverSMS(ctx, c, smsDelivery{To: in.To, Body: in.Message, TemplateID: in.TemplateID,
		Ref: contextRef{Type: "invoice", ID: in.InvoiceID.String()}})
	if err != nil {
		return nil, err
	}
	return &invoiceReminderSMSOutput{SMSID: d.SMSID, InvoiceID: in.InvoiceID, To: d.To, ProviderRef: d.SID, ProviderStatus: d.Status,
		Segments: d.Segments, TemplateID: in.TemplateID, SentAt: d.SentAt}, nil
}

type invoiceReminderEmailInput struct {
	InvoiceID  uuid.UUID `json:"invoice_id"`
	To         string    `json:"to"`
	Subject    string    `json:"subject"`
	Body       string    `json:"body"`
	TemplateID *string   `json:"template_id"`
}

type invoiceReminderEmailOutput struct {
	EmailID    uuid.UUID `json:"email_id"`
	InvoiceID  uuid.UUID `json:"invoice_id"`
	To         string    `json:"to"`
	MessageID  string    `json:"message_id"`
	TemplateID *string   `json:"template_id"`
	SentAt     time.Time `json:"sent_at"`
}

// sendInvoiceReminderEmail emails a payment reminder about an unpaid invoice and logs it against the
// invoice.
func (p *pack) sendInvoiceReminderEmail(ctx context.Context, c *executor.Call, in invoiceReminderEmailInput) (*invoiceReminderEmailOutput, error) {
	if err := lockUnpaidInvoice(ctx, c, in.InvoiceID); err != nil {
		return nil, err
	}
	d, err := p.deliverEmail(ctx, c, emailDelivery{To: in.To, Subject: in.Subject, Body: in.Body, TemplateID: in.TemplateID,
		Ref: contextRef{Type: "invoice", ID: in.InvoiceID.String()}})
	if err != nil {
		return nil, err
	}
	return &invoiceReminderEmailOutput{EmailID: d.EmailID, InvoiceID: in.InvoiceID, To: d.To, MessageID: d.MessageID,
		TemplateID: in.TemplateID, SentAt: d.SentAt}, nil
}

type requestReviewInput struct {
	JobID           uuid.UUID `json:"job_id"`
	Channel         string    `json:"channel"`
	MessageOverride *string   `json:"message_override"`
	ReviewURL       *string   `json:"review_url"`
}

type requestReviewOutput struct {
	customerMessageResult
	JobID             uuid.UUID `json:"job_id"`
	ReviewRequestedAt time.Time `json:"review_requested_at"`
}

// requestReview asks the customer of a completed job for a review, by SMS, email or both, with the
// review link when one is given.
func (p *pack) requestReview(ctx context.Context, c *executor.Call, in requestReviewInput) (*requestReviewOutput, error) {
	f, err := loadJobFacts(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	if f.Status != "completed" {
		return nil, executor.Conflict("job %s is %s: ask for a review once the job is completed", in.JobID, f.Status)
	}
	text := fmt.Sprintf("Hi %s, thank you for choosing %s for the work at %s. If you are happy with the job, a short review "+
		"would help us a lot", greetingName(f.Customer), p.cfg.Business.WithDefaults().Name, orText(f.Site, "your place"))
	if url := trimmedText(in.ReviewURL); url != nil {
		text += ": " + *url + "\nThank you!"
	} else {
		text += ". Thank you!"
	}
	if o := trimmedText(in.MessageOverride); o != nil {
		text = *o
	}
	res, err := p.sendToCustomer(ctx, c, customerMessage{channel: in.Channel, about: contextRef{Type: "job", ID: f.JobID},
		phone: f.Phone, email: f.Email, smsBody: text, subject: "How did we do? Job " + jobLabel(f.Number), mailBody: text + "\n"})
	if err != nil {
		return nil, err
	}
	out := &requestReviewOutput{customerMessageResult: *res, JobID: in.JobID}
	err = c.DB.QueryRow(ctx, `UPDATE jobs SET review_requested_at = now(), updated_at = now() WHERE id = $1 RETURNING review_requested_at`,
		f.JobID).Scan(&out.ReviewRequestedAt)
	if err != nil {
		return nil, fmt.Errorf("error recording the review request for job %s, which was sent: %w", f.JobID, err)
	}
	return out, nil
}
