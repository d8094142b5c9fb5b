package businesspack

import (
	"time"

	ospack "github.com/gemhq/gem/packs/os"
)

// The comms tools: drafts, texts and emails about a record, calls logged, follow-ups.
const (
	ComposeSMS         = "comms.compose_sms"
	ComposeEmail       = "comms.compose_email"
	SendSMS            = "comms.send_sms"
	SendEmail          = "comms.send_email"
	LogCallOutcome     = "comms.log_call_outcome"
	CreateFollowupTask = "comms.create_followup_task_from_message"
)

// How a call went (comms.log_call_outcome's outcome).
const (
	CallAnswered    = "answered"
	CallNoAnswer    = "no_answer"
	CallLeftMessage = "left_message"
	CallBusy        = "busy"
	CallOther       = "other"
)

// Ref names the record a message, call, event or interaction is about: {"type": "lead", "id": "…"}, the os
// pack's context_ref (every pack keeps its records' references in this form). A rule leaves it out when the
// message does not name one: the run's context supplies it.
type Ref = ospack.Ref

// ComposeInput is comms.compose_sms's and comms.compose_email's input: a draft, not sent.
type ComposeInput struct {
	Purpose    string `json:"purpose"`
	ContextRef *Ref   `json:"context_ref,omitempty"`
	// Tone is friendly (the tool's default), formal or brief.
	Tone string `json:"tone,omitempty"`
	Link string `json:"link,omitempty"`
}

// SendSMSInput is comms.send_sms's input.
type SendSMSInput struct {
	To         string `json:"to"`
	Message    string `json:"message"`
	ContextRef *Ref   `json:"context_ref,omitempty"`
	TemplateID string `json:"template_id,omitempty"`
}

// SendEmailInput is comms.send_email's input.
type SendEmailInput struct {
	To         string `json:"to"`
	Subject    string `json:"subject"`
	Body       string `json:"body"`
	ContextRef *Ref   `json:"context_ref,omitempty"`
	TemplateID string `json:"template_id,omitempty"`
	ReplyTo    string `json:"reply_to,omitempty"`
}

// LogCallOutcomeInput is comms.log_call_outcome's input.
type LogCallOutcomeInput struct {
	EntityID   string     `json:"entity_id,omitempty"`
	Outcome    string     `json:"outcome"`
	Notes      string     `json:"notes,omitempty"`
	ContextRef *Ref       `json:"context_ref,omitempty"`
	OccurredAt *time.Time `json:"occurred_at,omitempty"`
}

// CreateFollowupTaskInput is comms.create_followup_task_from_message's input.
type CreateFollowupTaskInput struct {
	Title      string     `json:"title"`
	ContextRef *Ref       `json:"context_ref,omitempty"`
	DueAt      *time.Time `json:"due_at,omitempty"`
}

// CommsTools are the comms tools, in the registry's order.
var CommsTools = []string{ComposeSMS, ComposeEmail, SendSMS, SendEmail, LogCallOutcome, CreateFollowupTask}
