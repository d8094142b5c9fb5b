package businesshandlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Drafts of messages (comms.compose_sms and comms.compose_email) come from the templates below, filled from
// the records a context_ref reaches: a lead, a quote, a job, an invoice or an entity, and from them the
// lead's latest quote, the quote's job, the job's invoice and the lead's next inspection visit. No LLM is
// involved: the same records give the same draft. docs/business-pack.md lists the purposes.

// composeTemplate is the text of one purpose. Its templates are text/template over composeView; the SMS
// text and the email's paragraphs go between the tone's greeting and closing.
type composeTemplate struct {
	// needs is the record the purpose cannot do without ("" for none).
	needs string
	// check refuses records in a state the message does not fit (an invoice that is paid).
	check func(v *composeView) error
	sms   string
	// subject and email are the email's subject and body paragraphs.
	subject, email string
}

// composeTemplates are the purposes compose_sms and compose_email know.
var composeTemplates = map[string]composeTemplate{
	"generic": {
		sms:     `we're getting in touch about {{.About}}. Let us know if you have any questions.`,
		subject: `About {{.About}}`,
		email:   "We're getting in touch about {{.About}}.\n\nIf you have any questions, just reply to this email.",
	},
	"lead_follow_up": {
		needs:   "lead",
		sms:     `thanks for contacting {{.We}} about your roof{{with .Suburb}} in {{.}}{{end}}. When would suit you for a free inspection? Just reply to this message.`,
		subject: `Your roof{{with .Suburb}} in {{.}}{{end}}: booking a free inspection`,
		email:   "Thanks for contacting {{.We}} about your roof{{with .Suburb}} in {{.}}{{end}}.\n\nWe'd like to come out for a free inspection. Which days and times suit you? Just reply to this email.",
	},
	"inspection_confirmation": {
		needs:   "visit",
		sms:     `your roof inspection{{with .Address}} at {{.}}{{end}} is booked for {{.Visit}}. Reply to this message if you need to change it.`,
		subject: `Roof inspection booked: {{.VisitShort}}`,
		email:   "This confirms your roof inspection{{with .Address}} at {{.}}{{end}}, booked for {{.Visit}}.\n\nIf that time no longer suits you, reply to this email and we'll find another.",
	},
	"quote_follow_up": {
		needs:   "quote",
		sms:     `just following up on quote {{.Quote}} for {{.QuoteTotal}} (incl. GST){{with .QuoteSent}}, sent on {{.}}{{end}}. It's valid until {{.QuoteValidUntil}}. Happy to answer any questions.`,
		subject: `Your quote {{.Quote}}{{with .Business}} from {{.}}{{end}}`,
		email:   "We're following up on quote {{.Quote}} for {{.QuoteTotal}} (including GST){{with .QuoteSent}}, which we sent on {{.}}{{end}}.\n\nThe quote is valid until {{.QuoteValidUntil}}. If you have any questions or would like to go ahead, just reply to this email.",
	},
	"job_scheduled": {
		needs: "job",
		check: func(v *composeView) error {
			if v.JobDates == "" {
				return executor.Conflict("job %s has no dates yet: assign them with job.assign_dates first", v.Job)
			}
			return nil
		},
		sms:     `your job {{.Job}}{{with .Address}} at {{.}}{{end}} is scheduled for {{.JobDates}}. We'll be in touch if the weather changes the plan.`,
		subject: `Your job {{.Job}} is scheduled`,
		email:   "Your job {{.Job}}{{with .Address}} at {{.}}{{end}} is scheduled for {{.JobDates}}.\n\nWe'll let you know if the weather changes the plan.",
	},
	"invoice_reminder": {
		needs: "invoice",
		check: func(v *composeView) error {
			if v.InvoiceBalanceCents <= 0 {
				return executor.Conflict("invoice %s is paid: there is nothing to remind about", v.Invoice)
			}
			return nil
		},
		sms:     `a reminder that invoice {{.Invoice}} has {{.InvoiceBalance}} outstanding, {{if .InvoiceOverdue}}which was due on{{else}}due by{{end}} {{.InvoiceDue}}.{{with .Link}} You can pay here: {{.}}{{end}}`,
		subject: `Reminder: invoice {{.Invoice}}, {{.InvoiceBalance}} {{if .InvoiceOverdue}}overdue{{else}}due {{.InvoiceDue}}{{end}}`,
		email:   "This is a reminder that invoice {{.Invoice}} for {{.InvoiceTotal}} has {{.InvoiceBalance}} outstanding, {{if .InvoiceOverdue}}which was due on{{else}}due by{{end}} {{.InvoiceDue}}.{{with .Link}}\n\nYou can pay here: {{.}}{{end}}\n\nIf you've already paid, thank you, and please ignore this reminder.",
	},
	"payment_received": {
		needs: "invoice",
		check: func(v *composeView) error {
			if v.InvoicePaidCents <= 0 {
				return executor.Conflict("invoice %s has no payment recorded", v.Invoice)
			}
			return nil
		},
		sms:     `thank you: we've received your payment for invoice {{.Invoice}}.{{if gt .InvoiceBalanceCents 0}} {{.InvoiceBalance}} remains outstanding.{{end}}`,
		subject: `Payment received for invoice {{.Invoice}}`,
		email:   "Thank you: we've received your payment for invoice {{.Invoice}}.{{if gt .InvoiceBalanceCents 0}}\n\n{{.InvoiceBalance}} remains outstanding.{{else}}\n\nThe invoice is now paid in full.{{end}}",
	},
	"review_request": {
		needs: "job",
		check: func(v *composeView) error {
			if !v.JobCompleted {
				return executor.Conflict("job %s is not completed: ask for a review once the work is done", v.Job)
			}
			return nil
		},
		sms:     `thanks for choosing {{.We}} for your roof{{with .Suburb}} in {{.}}{{end}}. If you're happy with the work, would you leave us a review?{{with .Link}} {{.}}{{end}}`,
		subject: `How did we do?`,
		email:   "Thanks for choosing {{.We}} for your roof{{with .Suburb}} in {{.}}{{end}}.\n\nIf you're happy with the work, a short review would help us a lot{{with .Link}}: {{.}}{{else}}.{{end}}",
	},
}

// composeTones are the tones a draft may take: the greeting and closing around the text.
var composeTones = []string{"friendly", "formal", "brief"}

// composePurposes lists the known purposes, sorted.
func composePurposes() []string { return slices.Sorted(maps.Keys(composeTemplates)) }

// composeView is what the templates read: text ready to print (names, numbers, dollars, dates in the
// business's time zone), empty when unknown.
type composeView struct {
	First, Name string
	// Business is the business's name ("" when unknown), We the business as the text names it ("us" then).
	Business, We    string
	Phone, Email    *string
	Suburb, Address string
	// About is what the message is about, in words ("quote Q-0012", "your roof in Newtown").
	About string

	Quote, QuoteTotal, QuoteValidUntil, QuoteSent string

	Job, JobDates string
	JobCompleted  bool

	Invoice, InvoiceTotal, InvoiceBalance, InvoiceDue string
	InvoiceBalanceCents, InvoicePaidCents             int64
	InvoiceOverdue                                    bool

	// Visit is the inspection visit in words, VisitShort its date.
	Visit, VisitShort string

	Link string
	// has lists the records found: lead, entity, quote, job, invoice, visit.
	has map[string]bool
}

// composeInput is comms.compose_sms's and comms.compose_email's input as the handlers read it: a link
// given empty replaces the records' own (left out keeps it), and the reference is echoed in the draft.
type composeInput struct {
	businesspack.ComposeInput
	ContextRef contextRef `json:"context_ref"`
	Link       *string    `json:"link"`
}

type composedSMS struct {
	Message    string     `json:"message"`
	Purpose    string     `json:"purpose"`
	Tone       string     `json:"tone"`
	TemplateID string     `json:"template_id"`
	To         *string    `json:"to"`
	ContextRef contextRef `json:"context_ref"`
	Characters int        `json:"characters"`
	Segments   int        `json:"segments"`
}

// composeSMS drafts an SMS for a purpose from the records the context_ref reaches. It sends nothing.
func (p *pack) composeSMS(ctx context.Context, c *executor.Call, in composeInput) (*composedSMS, error) {
	t, v, err := p.composePrepare(ctx, c, &in)
	if err != nil {
		return nil, err
	}
	text, err := fillTemplate(t.sms, v)
	if err != nil {
		return nil, err
	}
	var msg string
	switch in.Tone {
	case "formal":
		msg = "Dear " + v.Name + ", " + text + " Kind regards" + composePrefixed(", ", v.Business) + "."
	case "brief":
		msg = composeUpperFirst(text) + composePrefixed(" - ", v.Business)
	default:
		msg = "Hi " + v.First + ", " + text + " Thanks" + composePrefixed(", ", v.Business) + "!"
	}
	return &composedSMS{Message: msg, Purpose: in.Purpose, Tone: in.Tone, TemplateID: in.Purpose + ".sms", To: v.Phone,
		ContextRef: in.ContextRef, Characters: utf8.RuneCountInString(msg), Segments: smsSegments(msg)}, nil
}

type composedEmail struct {
	Subject    string     `json:"subject"`
	Body       string     `json:"body"`
	Purpose    string     `json:"purpose"`
	Tone       string     `json:"tone"`
	TemplateID string     `json:"template_id"`
	To         *string    `json:"to"`
	ContextRef contextRef `json:"context_ref"`
}

// composeEmail drafts an email (subject and plain-text body) for a purpose from the records the context_ref
// reaches. It sends nothing.
func (p *pack) composeEmail(ctx context.Context, c *executor.Call, in composeInput) (*composedEmail, error) {
	t, v, err := p.composePrepare(ctx, c, &in)
	if err != nil {
		return nil, err
	}
	subject, err := fillTemplate(t.subject, v)
	if err != nil {
		return nil, err
	}
	text, err := fillTemplate(t.email, v)
	if err != nil {
		return nil, err
	}
	var body string
	switch in.Tone {
	case "formal":
		body = "Dear " + v.Name + ",\n\n" + text + "\n\nKind regards" + composePrefixed(",\n", v.Business)
	case "brief":
		body = "Hi " + v.First + ",\n\n" + text + composePrefixed("\n\n", v.Business)
	default:
		body = "Hi " + v.First + ",\n\n" + text + "\n\nThanks" + composePrefixed(",\n", v.Business)
	}
	return &composedEmail{Subject: subject, Body: body + "\n", Purpose: in.Purpose, Tone: in.Tone, TemplateID: in.Purpose + ".email",
		To: v.Email, ContextRef: in.ContextRef}, nil
}

// composePrepare checks the purpose and tone, and gathers the records of the context_ref.
func (p *pack) composePrepare(ctx context.Context, c *executor.Call, in *composeInput) (composeTemplate, *composeView, error) {
	in.Purpose = strings.TrimSpace(in.Purpose)
	t, ok := composeTemplates[in.Purpose]
	if !ok {
		return t, nil, executor.Invalid("purpose %q is not one of %s", in.Purpose, strings.Join(composePurposes(), ", "))
	}
	in.Tone = strings.ToLower(strings.TrimSpace(in.Tone))
	if in.Tone == "" {
		in.Tone = "friendly"
	}
	if !slices.Contains(composeTones, in.Tone) {
		return t, nil, executor.Invalid("tone %q is not one of %s", in.Tone, strings.Join(composeTones, ", "))
	}
	if _, err := p.today(); err != nil { // the time zone the dates are written in
		return t, nil, err
	}
	ref, err := resolveRef(ctx, c, in.ContextRef, "lead", "quote", "job", "invoice", "entity")
	if err != nil {
		return t, nil, err
	}
	v, err := p.gatherCompose(ctx, c, ref)
	if err != nil {
		return t, nil, err
	}
	if in.Link != nil {
		v.Link = strings.TrimSpace(*in.Link)
	}
	if t.needs != "" && !v.has[t.needs] {
		what := map[string]string{"visit": "scheduled inspection visit"}[t.needs]
		if what == "" {
			what = t.needs
		}
		return t, nil, executor.NotFound("%s %s has no %s for a %s message", ref.Type, ref.ID, what, in.Purpose)
	}
	if t.check != nil {
		if err := t.check(v); err != nil {
			return t, nil, err
		}
	}
	return t, v, nil
}

// gatherCompose reads the records a reference reaches into a view.
func (p *pack) gatherCompose(ctx context.Context, c *executor.Call, ref refRecord) (*composeView, error) {
	v := &composeView{has: map[string]bool{}, Business: p.businessName(), We: "us"}
	if v.Business != "" {
		v.We = v.Business
	}
	var suburb, address *string

	if ref.LeadID != nil {
		err := c.DB.QueryRow(ctx, `SELECT name, phone, email, suburb, address FROM leads WHERE id = $1`, *ref.LeadID).
			Scan(&v.Name, &v.Phone, &v.Email, &suburb, &address)
		if err != nil {
			return nil, err
		}
		v.has["lead"] = true
	}
	// The entity (a quote's customer, or the one named) is the more specific party: its details win.
	if ref.EntityID != nil {
		var name string
		var phone, email, eSuburb, eAddress *string
		err := c.DB.QueryRow(ctx, `SELECT name, phone, email, suburb, address FROM entities WHERE id = $1`, *ref.EntityID).
			Scan(&name, &phone, &email, &eSuburb, &eAddress)
		if err != nil {
			return nil, err
		}
		v.has["entity"] = true
		v.Name = name
		v.Phone, v.Email = composeNonEmpty(phone, v.Phone), composeNonEmpty(email, v.Email)
		suburb, address = composeNonEmpty(eSuburb, suburb), composeNonEmpty(eAddress, address)
	}
	v.Suburb, v.Address = executor.ValueOr(suburb, ""), executor.ValueOr(address, "")
	if v.Address != "" && v.Suburb != "" && !strings.Contains(strings.ToLower(v.Address), strings.ToLower(v.Suburb)) {
		v.Address += ", " + v.Suburb
	}

	// The quote: the one named, or the one a job or invoice came from, or the lead's latest (sent ones first).
	quoteID := ref.QuoteID
	if quoteID == nil && ref.Type == "lead" {
		var err error
		if quoteID, err = optionalID(ctx, c.DB, `SELECT id FROM quotes WHERE lead_id = $1
			ORDER BY status = 'draft', coalesce(sent_at, created_at) DESC LIMIT 1`, ref.RecordID); err != nil {
			return nil, err
		}
	}
	if quoteID != nil {
		var number, total int64
		var validUntil businesspack.Date
		var sentAt *time.Time
		err := c.DB.QueryRow(ctx, `SELECT number, total_cents, valid_until, sent_at FROM quotes WHERE id = $1`, *quoteID).
			Scan(&number, &total, &validUntil, &sentAt)
		if err != nil {
			return nil, err
		}
		v.has["quote"] = true
		v.Quote, v.QuoteTotal, v.QuoteValidUntil = quoteLabel(number), formatAUD(total), composeDate(validUntil.Time())
		if sentAt != nil {
			v.QuoteSent = composeDate(sentAt.In(p.loc))
		}
	}

	// The job: the one named, or the quote's.
	jobID := ref.JobID
	if jobID == nil && quoteID != nil {
		var err error
		if jobID, err = optionalID(ctx, c.DB, `SELECT id FROM jobs WHERE quote_id = $1`, *quoteID); err != nil {
			return nil, err
		}
	}
	if jobID != nil {
		var number int64
		var status string
		var start, end *businesspack.Date
		err := c.DB.QueryRow(ctx, `SELECT number, status, start_date, end_date FROM jobs WHERE id = $1`, *jobID).
			Scan(&number, &status, &start, &end)
		if err != nil {
			return nil, err
		}
		v.has["job"] = true
		v.Job, v.JobCompleted = jobLabel(number), status == "completed"
		if start != nil {
			v.JobDates = composeDate(start.Time())
			if end != nil && !end.Equal(*start) {
				v.JobDates += " to " + composeDate(end.Time())
			}
		}
	}

	// The invoice: the one named, or the job's.
	invoiceID := ref.InvoiceID
	if invoiceID == nil && jobID != nil {
		var err error
		if invoiceID, err = optionalID(ctx, c.DB, `SELECT id FROM invoices WHERE job_id = $1`, *jobID); err != nil {
			return nil, err
		}
	}
	if invoiceID != nil {
		var number, total, paid, balance int64
		var due businesspack.Date
		err := c.DB.QueryRow(ctx, `SELECT number, total_cents, amount_paid_cents, balance_cents, due_on FROM invoices WHERE id = $1`,
			*invoiceID).Scan(&number, &total, &paid, &balance, &due)
		if err != nil {
			return nil, err
		}
		v.has["invoice"] = true
		v.Invoice, v.InvoiceTotal, v.InvoiceBalance = invoiceLabel(number), formatAUD(total), formatAUD(balance)
		v.InvoiceBalanceCents, v.InvoicePaidCents, v.InvoiceDue = balance, paid, composeDate(due.Time())
		v.InvoiceOverdue = due.Before(businesspack.DateOf(time.Now().In(p.loc)))
	}

	// The lead's inspection visit: the next one booked, else the latest.
	if ref.LeadID != nil {
		var start time.Time
		var end *time.Time
		var part *string
		err := c.DB.QueryRow(ctx, `SELECT scheduled_for, window_end, part_of_day FROM inspection_appointments
			WHERE lead_id = $1 AND status = 'scheduled'
			ORDER BY scheduled_for < date_trunc('day', now()), abs(extract(epoch FROM scheduled_for - now())) LIMIT 1`, *ref.LeadID).
			Scan(&start, &end, &part)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		if err == nil {
			v.has["visit"] = true
			v.Visit, v.VisitShort = p.visitWords(start, end, part)
		}
	}

	if v.Name == "" {
		v.Name = "there"
	}
	v.First = firstName(v.Name)
	switch {
	case ref.Type == "invoice":
		v.About = "invoice " + v.Invoice
	case ref.Type == "job":
		v.About = "job " + v.Job
	case ref.Type == "quote":
		v.About = "quote " + v.Quote
	case v.Suburb != "":
		v.About = "your roof in " + v.Suburb
	default:
		v.About = "your roof"
	}
	return v, nil
}

// optionalID is the id a query finds, or nil when it finds no row.
func optionalID(ctx context.Context, db executor.DB, sql string, args ...any) (*uuid.UUID, error) {
	var id uuid.UUID
	err := db.QueryRow(ctx, sql, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// visitWords says when an inspection visit is: its time range, or the part of the day on its date.
func (p *pack) visitWords(start time.Time, end *time.Time, part *string) (long, short string) {
	start = start.In(p.loc)
	short = composeDate(start)
	switch {
	case part != nil && *part == "morning":
		return "the morning of " + short, short
	case part != nil && *part == "afternoon":
		return "the afternoon of " + short, short
	case part != nil:
		return short + " (we'll confirm the time)", short
	case end != nil:
		return short + ", " + composeClock(start) + " to " + composeClock(end.In(p.loc)), short
	default:
		return short + " at " + composeClock(start), short
	}
}

// businessName is how messages are signed: GEM_BUSINESS_NAME, else the display name of GEM_EMAIL_FROM
// ("Acme Roofing <office@acme.example>"), else BusinessNameDefault.
func (p *pack) businessName() string {
	if name := strings.TrimSpace(p.cfg.Business.Name); name != "" {
		return name
	}
	if a, err := mail.ParseAddress(p.cfg.Email.From); err == nil && strings.TrimSpace(a.Name) != "" {
		return strings.TrimSpace(a.Name)
	}
	return p.cfg.Business.WithDefaults().Name
}

func fillTemplate(text string, v *composeView) (string, error) {
	t, err := template.New("").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("error in a compose template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return "", fmt.Errorf("error filling a compose template: %w", err)
	}
	return b.String(), nil
}

// composeDate prints a date as people read it: "Tuesday 3 March 2026".
func composeDate(t time.Time) string { return t.Format("Monday 2 January 2006") }

// composeClock prints a time of day: "9:30 am".
func composeClock(t time.Time) string { return t.Format("3:04 pm") }

// prefixed is s after prefix, or "" when s is empty.
func composePrefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func firstName(name string) string {
	if f := strings.Fields(name); len(f) > 0 {
		return f[0]
	}
	return name
}

func composeUpperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func composeNonEmpty(a, b *string) *string {
	if a != nil && *a != "" {
		return a
	}
	return b
}

// smsSegments estimates how many segments an SMS takes: 160 septets in one (153 each when split) in the
// GSM 7-bit alphabet, where the extension characters take two; else 70 UTF-16 units (67 each when split).
func smsSegments(s string) int {
	septets, gsm := 0, true
	for _, r := range s {
		switch {
		case strings.ContainsRune(gsm7Basic, r):
			septets++
		case strings.ContainsRune(gsm7Extension, r):
			septets += 2
		default:
			gsm = false
		}
	}
	n, single, multi := septets, 160, 153
	if !gsm {
		n, single, multi = 0, 70, 67
		for _, r := range s {
			n += utf16.RuneLen(r)
		}
	}
	if n <= single {
		return 1
	}
	return (n + multi - 1) / multi
}

// gsm7Basic and gsm7Extension are the GSM 03.38 alphabet's basic set and the characters of its extension
// table.
const (
	gsm7Basic     = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Extension = "^{}\\[~]|€\f"
)
