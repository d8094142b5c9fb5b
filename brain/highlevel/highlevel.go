// Package highlevel is what the brain's HighLevel webhook and the integrations pack share: the events GEM
// reads, the calls they become, and the planning that decides which (the pack's). It imports nothing of
// the brain, so the pack's planning does not pull in the HTTP service.
package highlevel

import (
	"context"
	"encoding/json"
)

// Event is the part of a webhook event GEM reads. Events are flat objects (type, locationId and
// the record's fields); some deliveries wrap the record in data or appointment.
type Event struct {
	Type        string          `json:"type"`
	WebhookID   string          `json:"webhookId"`
	LocationID  string          `json:"locationId"`
	ID          string          `json:"id"`
	ContactID   string          `json:"contactId"`
	FirstName   string          `json:"firstName"`
	LastName    string          `json:"lastName"`
	Name        string          `json:"name"`
	CompanyName string          `json:"companyName"`
	Email       string          `json:"email"`
	Phone       string          `json:"phone"`
	Address1    string          `json:"address1"`
	City        string          `json:"city"`
	State       string          `json:"state"`
	PostalCode  string          `json:"postalCode"`
	Title       string          `json:"title"`
	Body        string          `json:"body"`
	DueDate     string          `json:"dueDate"`
	PipelineID  string          `json:"pipelineId"`
	StageID     string          `json:"pipelineStageId"`
	Status      string          `json:"status"`
	StartTime   string          `json:"startTime"`
	EndTime     string          `json:"endTime"`
	Address     string          `json:"address"`
	Data        json.RawMessage `json:"data"`
	Appointment *Appointment    `json:"appointment"`
}

// Appointment is an AppointmentCreate's appointment.
type Appointment struct {
	ID        string `json:"id"`
	ContactID string `json:"contactId"`
	Title     string `json:"title"`
	StartTime string `json:"startTime"`
	EndTime   string `json:"endTime"`
	Address   string `json:"address"`
}

// Planner decides what a verified event makes. It is the integrations pack's (handed in by Main as
// Params.Planner): the webhook verifies, records and enqueues, and names no tool.
type Planner interface {
	// Tools are the tools events may become calls of: the webhook's caller is granted their permissions.
	Tools() []string
	// Plan is the call ev makes, or no call and why. records finds the GEM records ev names, in the
	// delivery's transaction; an error of theirs is returned (the delivery is then answered 503).
	Plan(ctx context.Context, ev Event, records Records) (Call, error)
}

// Call is what an event becomes: a call of Tool with Input (marshalled as JSON and checked against
// the tool's schema), or, without a Tool, nothing, because of Reason.
type Call struct {
	Tool   string
	Input  any
	Reason string
}

// Records finds the GEM records a HighLevel event names.
type Records interface {
	// Lead is the GEM lead of a HighLevel contact: the lead tied to it, or the lead with the phone number the
	// event typed (without one, the number the contact's last ContactCreate or ContactUpdate gave), read as
	// the executor reads leads' numbers; "" when there is none.
	Lead(ctx context.Context, contactID, phone string) (string, error)
	// LeadEntity is the lead's first entity, or "" when it has none.
	LeadEntity(ctx context.Context, leadID string) (string, error)
}
