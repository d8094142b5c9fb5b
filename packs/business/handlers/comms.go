package businesshandlers

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/phone"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerComms(h executor.Handlers, p *pack) {
	h.Func(businesspack.ComposeSMS, executor.Typed(p.composeSMS))
	h.Func(businesspack.ComposeEmail, executor.Typed(p.composeEmail))
	h.Func(businesspack.LogCallOutcome, executor.Typed(logCallOutcome))
	h.Func(businesspack.CreateFollowupTask, executor.Typed(createFollowupTaskFromMessage))
	h.Add(businesspack.SendSMS, executor.Handler{Run: executor.Typed(p.sendSMS), Isolated: true, RequiredEnv: businesspack.SMSRequiredEnv})
	h.Add(businesspack.SendEmail, executor.Handler{Run: executor.Typed(p.sendEmail), Isolated: true, RequiredEnv: businesspack.EmailRequiredEnv})
}

// contextRef is GEM's reference to the record something is about: {"type": "lead", "id": "<uuid>"}, the os
// pack's ospack.Ref. A "personal" reference names no record: its id is the caller's own. This pack's tools
// read it with resolveRef (a fixed list of types, and the records the one named belongs to); the os tools
// check any type a pack declares (oshandlers.Pack.Records).
type contextRef = ospack.Ref

// refRecord is a context_ref checked against the database, with the records it belongs to.
type refRecord struct {
	contextRef
	// RecordID is the record's id; zero for a personal reference.
	RecordID uuid.UUID
	// LeadID, QuoteID, JobID, InvoiceID and EntityID are the records the referenced one is, or belongs to.
	LeadID, QuoteID, JobID, InvoiceID, EntityID *uuid.UUID
}

// refTypes are the context_ref types that name a record, and how to find it and what it belongs to. Each
// query takes the id and returns lead, quote, job, invoice and entity ids (null where there is none),
// locking the record (FOR KEY SHARE) so rows that refer to it can be written for the rest of the call.
var refTypes = map[string]string{
	"lead":  `SELECT id, NULL::uuid, NULL::uuid, NULL::uuid, NULL::uuid FROM leads WHERE id = $1 FOR KEY SHARE`,
	"quote": `SELECT lead_id, id, NULL::uuid, NULL::uuid, customer_id FROM quotes WHERE id = $1 FOR KEY SHARE`,
	"job": `SELECT q.lead_id, q.id, j.id, NULL::uuid, q.customer_id FROM jobs j JOIN quotes q ON q.id = j.quote_id
		WHERE j.id = $1 FOR KEY SHARE OF j`,
	"invoice": `SELECT q.lead_id, q.id, j.id, i.id, q.customer_id FROM invoices i JOIN jobs j ON j.id = i.job_id
		JOIN quotes q ON q.id = j.quote_id WHERE i.id = $1 FOR KEY SHARE OF i`,
	"entity":     `SELECT lead_id, NULL::uuid, NULL::uuid, NULL::uuid, id FROM entities WHERE id = $1 FOR KEY SHARE`,
	"inspection": `SELECT lead_id, NULL::uuid, NULL::uuid, NULL::uuid, NULL::uuid FROM inspections WHERE id = $1 FOR KEY SHARE`,
	// A message logged in comms_log (an SMS or email sent): a follow-up of a message.
	"message": `SELECT lead_id, NULL::uuid, job_id, invoice_id, entity_id FROM comms_log WHERE id = $1 FOR KEY SHARE`,
}

// resolve checks that the reference is of one of the types allowed and names a record that exists
// (not_found otherwise), and finds what the record belongs to.
func resolveRef(ctx context.Context, c *executor.Call, r contextRef, allowed ...string) (refRecord, error) {
	rec := refRecord{contextRef: r}
	if !slices.Contains(allowed, r.Type) {
		return rec, executor.Invalid("context_ref.type %q is not one of %s", r.Type, strings.Join(allowed, ", "))
	}
	if strings.TrimSpace(r.ID) == "" {
		return rec, executor.Invalid("context_ref.id is empty: name the %s", r.Type)
	}
	if r.Type == "personal" {
		if len(r.ID) > 200 {
			return rec, executor.Invalid("context_ref.id is longer than 200 characters")
		}
		return rec, nil
	}
	id, err := uuid.Parse(r.ID)
	if err != nil {
		return rec, executor.NotFound("%s %q does not exist (ids are UUIDs)", r.Type, r.ID)
	}
	rec.RecordID = id
	err = c.DB.QueryRow(ctx, refTypes[r.Type], id).Scan(&rec.LeadID, &rec.QuoteID, &rec.JobID, &rec.InvoiceID, &rec.EntityID)
	if err != nil {
		return rec, executor.NotFoundIfNoRows(err, r.Type, id)
	}
	if r.Type == "entity" {
		rec.EntityID = &id
	}
	return rec, nil
}

// resolveRefIfSet resolves a context_ref that may be left out or empty ({}, which optional references
// allow): nil then.
func resolveRefIfSet(ctx context.Context, c *executor.Call, r *contextRef, allowed ...string) (*refRecord, error) {
	if r == nil || *r == (contextRef{}) {
		return nil, nil
	}
	rec, err := resolveRef(ctx, c, *r, allowed...)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// columns are the reference as values of the context_type and context_id columns (nil for none).
func (r *refRecord) columns() (typ, id *string) {
	if r == nil {
		return nil, nil
	}
	return &r.Type, &r.ID
}

// Sending, shared by every tool that reaches a customer (comms.send_*, quote.send_to_client, invoice.send*,
// job.request_review). A handler that sends must run isolated (its permissions say send:*), and may send both
// an SMS and an email: check smsReady and emailReady, and the recipients with smsRecipient and
// emailRecipient, before sending either, so nothing goes out when the call is bound to fail.

// smsReady is nil when SMS can be sent, and a not_configured error naming what to set otherwise.
func (p *pack) smsReady() error {
	cfg := p.cfg.SMS
	if missing := cfg.Missing(); len(missing) > 0 {
		return executor.NotConfigured("no SMS provider is configured: GEM sends SMS through Twilio", businesspack.SMSRequiredEnv,
			fmt.Sprintf("Set %s (the Account SID, AC...) and %s (its auth token) from the Twilio console.", businesspack.EnvTwilioAccountSID, businesspack.EnvTwilioAuthToken),
			fmt.Sprintf("Set %s to the sender: a Twilio number in E.164 (+61...), an alphanumeric sender id, or a Messaging Service SID (MG...).", businesspack.EnvSMSFrom),
			fmt.Sprintf("Optionally set %s (default %s), the region of numbers without a country code, and restart the executor.", phone.EnvRegion, phone.RegionDefault))
	}
	if err := cfg.Validate(); err != nil {
		return executor.NotConfigured(err.Error(), businesspack.SMSRequiredEnv, "Fix the variable named and restart the executor.")
	}
	return nil
}

// emailReady is nil when email can be sent, and a not_configured error naming what to set otherwise.
func (p *pack) emailReady() error {
	_, err := p.smtpServer()
	return err
}

func (p *pack) smtpServer() (*smtpServer, error) {
	cfg := p.cfg.Email
	if missing := cfg.Missing(); len(missing) > 0 {
		return nil, executor.NotConfigured("no email provider is configured: GEM sends email through an SMTP server", businesspack.EmailRequiredEnv,
			fmt.Sprintf("Set %s to your provider's SMTP server, like smtp://user:password@smtp.example.com:587 (STARTTLS) or smtps://user:password@smtp.example.com:465.", businesspack.EnvSMTPURL),
			fmt.Sprintf("Set %s to the sender, like \"Acme Roofing <office@acme.example>\", and restart the executor.", businesspack.EnvEmailFrom))
	}
	srv, err := parseSMTP(cfg)
	if err != nil {
		return nil, executor.NotConfigured(err.Error(), businesspack.EmailRequiredEnv, "Fix the variable named and restart the executor.")
	}
	return srv, nil
}

// smsRecipient is a phone number as people type it in the E.164 form Twilio needs (validation_error when it
// cannot be one): the form leads are keyed by.
func (p *pack) smsRecipient(typed string) (string, error) {
	n, err := p.readPhone("", typed)
	return n.E164, err
}

// emailRecipient parses an email address ("Ann <ann@example.com>" or a bare address).
func emailRecipient(address string) (*mail.Address, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(address))
	if err != nil {
		return nil, executor.Invalid("%q is not an email address", address)
	}
	return a, nil
}

// smsDelivery is one SMS for deliverSMS.
type smsDelivery struct {
	// To is the phone number as typed; one without a country code is read in the business's region.
	To string
	// Body is the text.
	Body string
	// Ref is what the message is about; it is resolved (not_found before anything is sent) and logged.
	Ref contextRef
	// TemplateID is the template the text came from, if any, for the log.
	TemplateID *string
}

// deliveredSMS is an SMS Twilio accepted and comms_log recorded.
type deliveredSMS struct {
	// SMSID is the comms_log row.
	SMSID uuid.UUID
	// To is the number in E.164.
	To string
	// SID is Twilio's message sid (SM...).
	SID string
	// Status is Twilio's status (queued, sent, ...).
	Status string
	// Segments is how many SMS segments Twilio bills.
	Segments int
	// Ref is the resolved reference.
	Ref refRecord
	// SentAt is when it was logged.
	SentAt time.Time
}

// deliverSMS sends one SMS through Twilio and logs it in comms_log with what it is about (the lead, quote, job,
// invoice or entity of d.Ref), recording the outside effect on the call. It answers not_configured without
// Twilio's settings, validation_error for a number that cannot receive SMS or an empty text, and not_found
// for a reference to nothing, all before sending.
func (p *pack) deliverSMS(ctx context.Context, c *executor.Call, d smsDelivery) (*deliveredSMS, error) {
	if err := p.smsReady(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(d.Body) == "" {
		return nil, executor.Invalid("the message is empty")
	}
	ref, err := resolveRef(ctx, c, d.Ref, "lead", "quote", "job", "invoice", "entity", "inspection", "personal")
	if err != nil {
		return nil, err
	}
	to, err := p.smsRecipient(d.To)
	if err != nil {
		return nil, err
	}

	msg, err := sendTwilioSMS(ctx, p.cfg.SMS, to, d.Body)
	if err != nil {
		return nil, err
	}
	c.RecordOutside(registry.OutsideEffect{Kind: "sms", Target: to, Reference: msg.SID})

	out := &deliveredSMS{To: to, SID: msg.SID, Status: msg.Status, Ref: ref}
	out.Segments, _ = strconv.Atoi(msg.NumSegments)
	if err := logMessage(ctx, c, nil, "sms", to, nil, d.Body, "twilio", msg.SID, ref, d.TemplateID).Scan(&out.SMSID, &out.SentAt); err != nil {
		return nil, fmt.Errorf("error logging SMS %s, which was sent: %w", msg.SID, err)
	}
	return out, nil
}

// emailDelivery is one email for deliverEmail.
type emailDelivery struct {
	// To is the recipient's address.
	To string
	// Subject and Body are the email's (plain text).
	Subject, Body string
	// ReplyTo is where replies go, when not to the sender.
	ReplyTo *string
	// Ref is what the email is about; it is resolved (not_found before anything is sent) and logged.
	Ref contextRef
	// TemplateID is the template the text came from, if any, for the log.
	TemplateID *string
}

// deliveredEmail is an email the SMTP server accepted and comms_log recorded.
type deliveredEmail struct {
	// EmailID is the comms_log row (and the Message-ID's local part).
	EmailID uuid.UUID
	// To is the recipient's bare address.
	To string
	// MessageID is the Message-ID header, with its angle brackets.
	MessageID string
	// Ref is the resolved reference.
	Ref refRecord
	// SentAt is when it was logged.
	SentAt time.Time
}

// deliverEmail sends one plain-text email through the SMTP server and logs it in comms_log with what it is
// about, recording the outside effect on the call. It answers not_configured without the server's settings,
// validation_error for a bad address or an empty subject or body, and not_found for a reference to nothing,
// all before sending.
func (p *pack) deliverEmail(ctx context.Context, c *executor.Call, d emailDelivery) (*deliveredEmail, error) {
	srv, err := p.smtpServer()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(d.Subject) == "" || strings.TrimSpace(d.Body) == "" {
		return nil, executor.Invalid("an email needs a subject and a body")
	}
	ref, err := resolveRef(ctx, c, d.Ref, "lead", "quote", "job", "invoice", "entity", "inspection", "personal")
	if err != nil {
		return nil, err
	}
	m := outgoingEmail{subject: d.Subject, body: d.Body}
	if m.to, err = emailRecipient(d.To); err != nil {
		return nil, err
	}
	if d.ReplyTo != nil {
		if m.replyTo, err = mail.ParseAddress(*d.ReplyTo); err != nil {
			return nil, executor.Invalid("reply_to %q is not an email address", *d.ReplyTo)
		}
	}
	id := uuid.New()
	m.messageID = id.String() + "@" + messageIDDomain(srv.from)

	if err := sendSMTP(ctx, srv, m); err != nil {
		return nil, err
	}
	out := &deliveredEmail{EmailID: id, To: m.to.Address, MessageID: "<" + m.messageID + ">", Ref: ref}
	c.RecordOutside(registry.OutsideEffect{Kind: "email", Target: out.To, Reference: out.MessageID})

	var logged uuid.UUID
	if err := logMessage(ctx, c, &id, "email", out.To, &d.Subject, d.Body, "smtp", out.MessageID, ref, d.TemplateID).Scan(&logged, &out.SentAt); err != nil {
		return nil, fmt.Errorf("error logging email %s, which was sent: %w", out.MessageID, err)
	}
	return out, nil
}

// logMessage writes a sent message to comms_log (with the id given, or a new one), returning a row of its id
// and time.
func logMessage(ctx context.Context, c *executor.Call, id *uuid.UUID, channel, counterpart string, subject *string, body, provider, providerRef string,
	ref refRecord, templateID *string) pgx.Row {
	return c.DB.QueryRow(ctx, `INSERT INTO comms_log (id, channel, lead_id, entity_id, job_id, invoice_id, counterpart, subject, body,
			provider, provider_ref, context_type, context_id, template_id)
		VALUES (coalesce($1, gen_random_uuid()), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id, occurred_at`,
		id, channel, ref.LeadID, ref.EntityID, ref.JobID, ref.InvoiceID, counterpart, subject, body, provider, providerRef,
		ref.Type, ref.ID, templateID)
}

type sendSMSInput struct {
	To         string     `json:"to"`
	Message    string     `json:"message"`
	ContextRef contextRef `json:"context_ref"`
	TemplateID *string    `json:"template_id"`
}

type sendSMSOutput struct {
	SMSID          uuid.UUID  `json:"sms_id"`
	To             string     `json:"to"`
	Provider       string     `json:"provider"`
	ProviderRef    string     `json:"provider_ref"`
	ProviderStatus string     `json:"provider_status"`
	Segments       int        `json:"segments"`
	ContextRef     contextRef `json:"context_ref"`
	LeadID         *uuid.UUID `json:"lead_id"`
	TemplateID     *string    `json:"template_id"`
	SentAt         time.Time  `json:"sent_at"`
}

// sendSMS texts a number through Twilio and logs it with the record it is about. Without Twilio's settings
// it answers not_configured. The executor runs it at most once per call (permission send:sms).
func (p *pack) sendSMS(ctx context.Context, c *executor.Call, in sendSMSInput) (*sendSMSOutput, error) {
	d, err := p.deliverSMS(ctx, c, smsDelivery{To: in.To, Body: in.Message, Ref: in.ContextRef, TemplateID: in.TemplateID})
	if err != nil {
		return nil, err
	}
	return &sendSMSOutput{SMSID: d.SMSID, To: d.To, Provider: "twilio", ProviderRef: d.SID, ProviderStatus: d.Status,
		Segments: d.Segments, ContextRef: in.ContextRef, LeadID: d.Ref.LeadID, TemplateID: in.TemplateID, SentAt: d.SentAt}, nil
}

type sendEmailInput struct {
	To         string     `json:"to"`
	Subject    string     `json:"subject"`
	Body       string     `json:"body"`
	ContextRef contextRef `json:"context_ref"`
	TemplateID *string    `json:"template_id"`
	ReplyTo    *string    `json:"reply_to"`
}

type sendEmailOutput struct {
	EmailID     uuid.UUID  `json:"email_id"`
	To          string     `json:"to"`
	Provider    string     `json:"provider"`
	ProviderRef string     `json:"provider_ref"`
	ContextRef  contextRef `json:"context_ref"`
	LeadID      *uuid.UUID `json:"lead_id"`
	TemplateID  *string    `json:"template_id"`
	SentAt      time.Time  `json:"sent_at"`
}

// sendEmail emails an address through the SMTP server and logs it with the record it is about. Without the
// server's settings it answers not_configured. The executor runs it at most once per call (permission
// send:email).
func (p *pack) sendEmail(ctx context.Context, c *executor.Call, in sendEmailInput) (*sendEmailOutput, error) {
	d, err := p.deliverEmail(ctx, c, emailDelivery{To: in.To, Subject: in.Subject, Body: in.Body, ReplyTo: in.ReplyTo,
		Ref: in.ContextRef, TemplateID: in.TemplateID})
	if err != nil {
		return nil, err
	}
	return &sendEmailOutput{EmailID: d.EmailID, To: d.To, Provider: "smtp", ProviderRef: d.MessageID, ContextRef: in.ContextRef,
		LeadID: d.Ref.LeadID, TemplateID: in.TemplateID, SentAt: d.SentAt}, nil
}

// callOutcomeSummaries say what each outcome of comms.log_call_outcome means, for the interaction's summary.
var callOutcomeSummaries = map[string]string{
	"answered":     "Call answered",
	"no_answer":    "Call not answered",
	"left_message": "Call: left a message",
	"busy":         "Call: line busy",
	"other":        "Call",
}

type logCallOutcomeOutput struct {
	InteractionID uuid.UUID   `json:"interaction_id"`
	EntityID      uuid.UUID   `json:"entity_id"`
	Outcome       string      `json:"outcome"`
	Summary       string      `json:"summary"`
	ContextRef    *contextRef `json:"context_ref"`
	LeadStage     *string     `json:"lead_stage"`
	OccurredAt    time.Time   `json:"occurred_at"`
}

// logCallOutcome records a phone call with an entity as one of its interactions. An answered call about a
// lead moves a new lead to contacted.
func logCallOutcome(ctx context.Context, c *executor.Call, in businesspack.LogCallOutcomeInput) (*logCallOutcomeOutput, error) {
	entityID, err := executor.RecordID("entity_id", in.EntityID)
	if err != nil {
		return nil, err
	}
	if err := requireEntityExists(ctx, c, entityID); err != nil {
		return nil, err
	}
	ref, err := resolveRefIfSet(ctx, c, in.ContextRef, "lead", "quote", "job", "invoice", "entity", "inspection", "message", "personal")
	if err != nil {
		return nil, err
	}
	if err := notInFuture("occurred_at", in.OccurredAt); err != nil {
		return nil, err
	}
	summary := callOutcomeSummaries[in.Outcome]
	details := map[string]any{"outcome": in.Outcome}
	if strings.TrimSpace(in.Notes) != "" {
		summary = truncateRunes(summary+": "+strings.TrimSpace(in.Notes), 400)
		details["notes"] = in.Notes
	}
	ctxType, ctxID := ref.columns()
	out := &logCallOutcomeOutput{EntityID: entityID, Outcome: in.Outcome, Summary: summary}
	if ref != nil {
		out.ContextRef = &ref.contextRef
	}
	err = c.DB.QueryRow(ctx, `INSERT INTO entity_interactions (entity_id, interaction_type, summary, details, call_outcome,
			context_type, context_id, occurred_at)
		VALUES ($1, 'call', $2, $3, $4, $5, $6, coalesce($7, now())) RETURNING id, occurred_at`,
		entityID, summary, details, in.Outcome, ctxType, ctxID, in.OccurredAt).Scan(&out.InteractionID, &out.OccurredAt)
	if err != nil {
		return nil, err
	}
	if ref != nil && ref.Type == "lead" {
		// Advancing to "new" never moves a lead: it only reads its stage.
		target := "new"
		if in.Outcome == "answered" {
			target = "contacted"
		}
		_, after, err := advanceLead(ctx, c.DB, ref.RecordID.String(), target)
		if err != nil {
			return nil, err
		}
		out.LeadStage = &after
	}
	return out, nil
}

type followupTask struct {
	TaskID      uuid.UUID  `json:"task_id"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	DueAt       *time.Time `json:"due_at"`
	LeadID      *uuid.UUID `json:"lead_id"`
	ContextRef  contextRef `json:"context_ref"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
}

// createFollowupTaskFromMessage creates an open task (os_tasks) to follow up on a message or the record it
// was about, with that reference as the task's context; the task belongs to the record's lead, when it has
// one, and to the personal domain for a personal reference.
func createFollowupTaskFromMessage(ctx context.Context, c *executor.Call, in businesspack.CreateFollowupTaskInput) (*followupTask, error) {
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return nil, executor.Invalid("title is empty")
	}
	if utf8.RuneCountInString(title) > 200 {
		return nil, executor.Invalid("title is longer than 200 characters")
	}
	about := executor.ValueOr(in.ContextRef, contextRef{})
	ref, err := resolveRef(ctx, c, about, "lead", "quote", "job", "invoice", "entity", "inspection", "message", "personal")
	if err != nil {
		return nil, err
	}
	t := &followupTask{Title: title, DueAt: in.DueAt, LeadID: ref.LeadID, ContextRef: about,
		Description: "Follow-up of " + ref.Type + " " + ref.ID}
	domain := "business"
	if ref.Type == "personal" {
		domain = "personal"
	}
	err = c.DB.QueryRow(ctx, `INSERT INTO os_tasks (title, description, due_at, lead_id, domain, context_type, context_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, status, created_at`,
		title, t.Description, in.DueAt, ref.LeadID, domain, ref.Type, ref.ID).Scan(&t.TaskID, &t.Status, &t.CreatedAt)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// notInFuture refuses a time more than five minutes ahead (clock skew): interactions are things that happened.
func notInFuture(field string, t *time.Time) error {
	if t != nil && t.After(time.Now().Add(5*time.Minute)) {
		return executor.Invalid("%s %s is in the future: record what happened; plan what will with calendar.create_event", field, t.Format(time.RFC3339))
	}
	return nil
}

// truncateRunes cuts s to at most n characters, ending with "…" when it cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
