package business

import (
	"context"
	"fmt"
	"net/mail"
	"strconv"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerComms(h executor.Handlers, p *pack) {
	h.Func("comms.log_call_outcome", executor.Typed(logCallOutcome))
	h.Func("comms.create_followup_task", executor.Typed(createFollowupTask))
	h.Add("comms.send_sms", executor.Handler{Run: executor.Typed(p.sendSMS), Isolated: true, RequiredEnv: smsRequiredEnv})
	h.Add("comms.send_email", executor.Handler{Run: executor.Typed(p.sendEmail), Isolated: true, RequiredEnv: emailRequiredEnv})
}

type comm struct {
	CommID          uuid.UUID  `json:"comm_id"`
	Channel         string     `json:"channel"`
	Direction       string     `json:"direction"`
	LeadID          *uuid.UUID `json:"lead_id"`
	EntityID        *uuid.UUID `json:"entity_id"`
	Counterpart     *string    `json:"counterpart"`
	Subject         *string    `json:"subject"`
	Body            *string    `json:"body"`
	CallOutcome     *string    `json:"call_outcome"`
	DurationSeconds *int       `json:"duration_seconds"`
	Provider        *string    `json:"provider"`
	ProviderRef     *string    `json:"provider_ref"`
	OccurredAt      time.Time  `json:"occurred_at"`
}

const commColumns = `id, channel, direction, lead_id, entity_id, counterpart, subject, body, call_outcome, duration_seconds,
	provider, provider_ref, occurred_at`

func scanComm(row pgx.Row) (comm, error) {
	var m comm
	err := row.Scan(&m.CommID, &m.Channel, &m.Direction, &m.LeadID, &m.EntityID, &m.Counterpart, &m.Subject, &m.Body,
		&m.CallOutcome, &m.DurationSeconds, &m.Provider, &m.ProviderRef, &m.OccurredAt)
	return m, err
}

// party is who a communication is with: a lead, an entity, or neither.
type party struct {
	LeadID   *uuid.UUID `json:"lead_id"`
	EntityID *uuid.UUID `json:"entity_id"`
}

// contact returns the party's phone and email, locking the rows (FOR KEY SHARE) so the log row that
// refers to them can always be written, even after a message has gone out.
func (pt party) contact(ctx context.Context, c *executor.Call) (phone, email *string, err error) {
	if pt.LeadID != nil {
		err = c.DB.QueryRow(ctx, `SELECT phone, email FROM leads WHERE id = $1 FOR KEY SHARE`, *pt.LeadID).Scan(&phone, &email)
		if err != nil {
			return nil, nil, notFoundIfNoRows(err, "lead", *pt.LeadID)
		}
	}
	if pt.EntityID != nil {
		var ePhone, eEmail *string
		err = c.DB.QueryRow(ctx, `SELECT phone, email FROM entities WHERE id = $1 FOR KEY SHARE`, *pt.EntityID).Scan(&ePhone, &eEmail)
		if err != nil {
			return nil, nil, notFoundIfNoRows(err, "entity", *pt.EntityID)
		}
		// The entity's details win: it is the more specific party (a site contact rather than the lead).
		if ePhone != nil {
			phone = ePhone
		}
		if eEmail != nil {
			email = eEmail
		}
	}
	return phone, email, nil
}

// callConnected are the call outcomes in which the lead was reached.
var callConnected = map[string]bool{"answered": true, "callback_requested": true, "not_interested": true}

type logCallOutcomeInput struct {
	party
	Phone           *string    `json:"phone"`
	Direction       string     `json:"direction"`
	Outcome         string     `json:"outcome"`
	Notes           *string    `json:"notes"`
	DurationSeconds *int       `json:"duration_seconds"`
	CalledAt        *time.Time `json:"called_at"`
}

// logCallOutcome records a phone call and how it went. A call that reached a new lead moves it to
// contacted.
func logCallOutcome(ctx context.Context, c *executor.Call, in logCallOutcomeInput) (any, error) {
	if in.Direction == "" {
		in.Direction = "outbound"
	}
	phone, _, err := in.contact(ctx, c)
	if err != nil {
		return nil, err
	}
	if in.Phone != nil {
		phone = in.Phone
	}
	m, err := scanComm(c.DB.QueryRow(ctx, `INSERT INTO comms_log (channel, direction, lead_id, entity_id, counterpart, body,
			call_outcome, duration_seconds, occurred_at)
		VALUES ('call', $1, $2, $3, $4, $5, $6, $7, coalesce($8, now())) RETURNING `+commColumns,
		in.Direction, in.LeadID, in.EntityID, phone, in.Notes, in.Outcome, in.DurationSeconds, in.CalledAt))
	if err != nil {
		return nil, err
	}
	var stage *string
	if in.LeadID != nil {
		// Advancing to "new" never moves a lead: it only reads its stage.
		target := "new"
		if callConnected[in.Outcome] {
			target = "contacted"
		}
		_, after, err := advanceLead(ctx, c.DB, *in.LeadID, target)
		if err != nil {
			return nil, err
		}
		stage = &after
	}
	return map[string]any{"comm": m, "lead_stage": stage}, nil
}

type createFollowupTaskInput struct {
	LeadID      uuid.UUID `json:"lead_id"`
	DueAt       time.Time `json:"due_at"`
	Title       *string   `json:"title"`
	Description *string   `json:"description"`
	Priority    string    `json:"priority"`
}

// createFollowupTask creates a task (os_tasks) to get back to a lead, due when given.
func createFollowupTask(ctx context.Context, c *executor.Call, in createFollowupTaskInput) (any, error) {
	if in.Priority == "" {
		in.Priority = "normal"
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads WHERE id = $1 FOR KEY SHARE`, in.LeadID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "lead", in.LeadID)
	}
	title := "Follow up with " + l.Name + " (" + l.Phone + ")"
	if in.Title != nil {
		title = *in.Title
	}
	t, err := scanTask(c.DB.QueryRow(ctx, `INSERT INTO os_tasks (title, description, priority, due_at, lead_id)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+taskColumns, title, in.Description, in.Priority, in.DueAt, in.LeadID))
	if err != nil {
		return nil, err
	}
	return map[string]any{"task": t, "lead_stage": l.Stage}, nil
}

type sendSMSInput struct {
	party
	To   *string `json:"to"`
	Body string  `json:"body"`
}

// sendSMS texts a number (or a lead's or entity's phone) through Twilio and logs it. Without Twilio's
// settings it answers not_configured. The executor runs it at most once per call (permission send:sms).
func (p *pack) sendSMS(ctx context.Context, c *executor.Call, in sendSMSInput) (any, error) {
	cfg := p.cfg.SMS
	if missing := cfg.missing(); len(missing) > 0 {
		return nil, executor.NotConfigured("no SMS provider is configured: comms.send_sms sends through Twilio", smsRequiredEnv,
			fmt.Sprintf("Set %s (the Account SID, AC...) and %s (its auth token) from the Twilio console.", EnvTwilioAccountSID, EnvTwilioAuthToken),
			fmt.Sprintf("Set %s to the sender: a Twilio number in E.164 (+61...), an alphanumeric sender id, or a Messaging Service SID (MG...).", EnvSMSFrom),
			fmt.Sprintf("Optionally set %s (default %s) for local numbers, and restart the executor.", EnvSMSCountryCode, CountryCodeDefault))
	}
	if err := cfg.validate(); err != nil {
		return nil, executor.NotConfigured(err.Error(), smsRequiredEnv, "Fix the variable named and restart the executor.")
	}
	phone, _, err := in.contact(ctx, c)
	if err != nil {
		return nil, err
	}
	if in.To != nil {
		phone = in.To
	}
	if phone == nil {
		return nil, executor.Invalid("no phone number to text: the lead or entity has none; pass to")
	}
	to, err := e164(*phone, cfg.CountryCode)
	if err != nil {
		return nil, err
	}

	msg, err := sendTwilioSMS(ctx, cfg, to, in.Body)
	if err != nil {
		return nil, err
	}
	c.RecordOutside(registry.OutsideEffect{Kind: "sms", Target: to, Reference: msg.SID})

	m, err := scanComm(c.DB.QueryRow(ctx, `INSERT INTO comms_log (channel, lead_id, entity_id, counterpart, body, provider, provider_ref)
		VALUES ('sms', $1, $2, $3, $4, 'twilio', $5) RETURNING `+commColumns, in.LeadID, in.EntityID, to, in.Body, msg.SID))
	if err != nil {
		return nil, fmt.Errorf("error logging SMS %s, which was sent: %w", msg.SID, err)
	}
	segments, _ := strconv.Atoi(msg.NumSegments)
	return map[string]any{"comm": m, "provider_status": msg.Status, "segments": segments}, nil
}

type sendEmailInput struct {
	party
	To      *string `json:"to"`
	Subject string  `json:"subject"`
	Body    string  `json:"body"`
	ReplyTo *string `json:"reply_to"`
}

// sendEmail emails an address (or a lead's or entity's email) through the SMTP server and logs it.
// Without the server's settings it answers not_configured. The executor runs it at most once per call
// (permission send:email).
func (p *pack) sendEmail(ctx context.Context, c *executor.Call, in sendEmailInput) (any, error) {
	cfg := p.cfg.Email
	if missing := cfg.missing(); len(missing) > 0 {
		return nil, executor.NotConfigured("no email provider is configured: comms.send_email sends through an SMTP server", emailRequiredEnv,
			fmt.Sprintf("Set %s to your provider's SMTP server, like smtp://user:password@smtp.example.com:587 (STARTTLS) or smtps://user:password@smtp.example.com:465.", EnvSMTPURL),
			fmt.Sprintf("Set %s to the sender, like \"Acme Roofing <office@acme.example>\", and restart the executor.", EnvEmailFrom))
	}
	srv, err := cfg.parse()
	if err != nil {
		return nil, executor.NotConfigured(err.Error(), emailRequiredEnv, "Fix the variable named and restart the executor.")
	}
	_, address, err := in.contact(ctx, c)
	if err != nil {
		return nil, err
	}
	if in.To != nil {
		address = in.To
	}
	if address == nil {
		return nil, executor.Invalid("no email address to write to: the lead or entity has none; pass to")
	}
	out := outgoingEmail{subject: in.Subject, body: in.Body}
	if out.to, err = mail.ParseAddress(*address); err != nil {
		return nil, executor.Invalid("%q is not an email address", *address)
	}
	if in.ReplyTo != nil {
		if out.replyTo, err = mail.ParseAddress(*in.ReplyTo); err != nil {
			return nil, executor.Invalid("reply_to %q is not an email address", *in.ReplyTo)
		}
	}
	id := uuid.New()
	out.messageID = id.String() + "@" + messageIDDomain(srv.from)

	if err := sendSMTP(ctx, srv, out); err != nil {
		return nil, err
	}
	c.RecordOutside(registry.OutsideEffect{Kind: "email", Target: out.to.Address, Reference: "<" + out.messageID + ">"})

	m, err := scanComm(c.DB.QueryRow(ctx, `INSERT INTO comms_log (id, channel, lead_id, entity_id, counterpart, subject, body, provider, provider_ref)
		VALUES ($1, 'email', $2, $3, $4, $5, $6, 'smtp', $7) RETURNING `+commColumns,
		id, in.LeadID, in.EntityID, out.to.Address, in.Subject, in.Body, "<"+out.messageID+">"))
	if err != nil {
		return nil, fmt.Errorf("error logging email %s, which was sent: %w", out.messageID, err)
	}
	return map[string]any{"comm": m}, nil
}
