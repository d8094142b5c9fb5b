package businesspack

import "time"

// The calendar tools.
const (
	FindSlots        = "calendar.find_slots"
	CreateEvent      = "calendar.create_event"
	UpdateEvent      = "calendar.update_event"
	CancelEvent      = "calendar.cancel_event"
	AttachJobToEvent = "calendar.attach_job_to_event"
)

// Bounds of calendar.find_slots's duration_minutes.
const (
	SlotMinMinutes = 15
	SlotMaxMinutes = 480
)

// FindSlotsInput is calendar.find_slots's input.
type FindSlotsInput struct {
	From            time.Time `json:"from"`
	To              time.Time `json:"to"`
	DurationMinutes int       `json:"duration_minutes,omitempty"`
	MaxSlots        int       `json:"max_slots,omitempty"`
}

// FreeSlot is a free time calendar.find_slots found, in the business's time zone.
type FreeSlot struct {
	StartAt time.Time `json:"start_at"`
	EndAt   time.Time `json:"end_at"`
	// Date is the slot's day (YYYY-MM-DD) and Weekday its name (Monday).
	Date    Date   `json:"date"`
	Weekday string `json:"weekday"`
}

// FindSlotsOutput is calendar.find_slots's result.
type FindSlotsOutput struct {
	Slots []FreeSlot `json:"slots"`
	Count int        `json:"count"`
	// Truncated is true when there were more slots than max_slots.
	Truncated       bool   `json:"truncated"`
	DurationMinutes int    `json:"duration_minutes"`
	TimeZone        string `json:"time_zone"`
	BusinessHours   string `json:"business_hours"`
}

// EventOverlap is a scheduled event that shares time with one being booked (the booking goes ahead; the
// answer says what it overlaps).
type EventOverlap struct {
	EventID string    `json:"event_id"`
	Title   string    `json:"title"`
	StartAt time.Time `json:"start_at"`
	EndAt   time.Time `json:"end_at"`
}

// CreateEventInput is calendar.create_event's input.
type CreateEventInput struct {
	Title   string    `json:"title"`
	StartAt time.Time `json:"start_at"`
	EndAt   time.Time `json:"end_at"`
	// Location is where the message said it is (nil: it said nowhere).
	Location   *string `json:"location,omitempty"`
	ContextRef *Ref    `json:"context_ref,omitempty"`
}

// EventPatch is what calendar.update_event changes: the fields it sets, and no others.
type EventPatch struct {
	Title    *string    `json:"title,omitempty"`
	StartAt  *time.Time `json:"start_at,omitempty"`
	EndAt    *time.Time `json:"end_at,omitempty"`
	Location *string    `json:"location,omitempty"`
}

// UpdateEventInput is calendar.update_event's input.
type UpdateEventInput struct {
	EventID string     `json:"event_id,omitempty"`
	Patch   EventPatch `json:"patch"`
}

// CancelEventInput is calendar.cancel_event's input.
type CancelEventInput struct {
	EventID string `json:"event_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// AttachJobToEventInput is calendar.attach_job_to_event's input: the job (or lead) is its context_ref.
type AttachJobToEventInput struct {
	EventID    string `json:"event_id,omitempty"`
	ContextRef *Ref   `json:"context_ref,omitempty"`
}

// CalendarTools are the calendar tools, in the registry's order.
var CalendarTools = []string{FindSlots, CreateEvent, UpdateEvent, CancelEvent, AttachJobToEvent}
