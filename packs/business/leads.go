package businesspack

import (
	"slices"
	"time"
)

// The leads tools: enquiries, from the first call to won or lost.
const (
	CreateLead         = "leads.create"
	UpdateLeadStage    = "leads.update_stage"
	AddLeadSource      = "leads.add_source"
	AddLeadPhotosLink  = "leads.add_photos_link"
	ScheduleInspection = "leads.schedule_inspection"
	ListLeadsByStage   = "leads.list_by_stage"
	MarkLeadLost       = "leads.mark_lost"
)

// LeadsTools are the leads tools, in the registry's order.
var LeadsTools = []string{CreateLead, UpdateLeadStage, AddLeadSource, AddLeadPhotosLink, ScheduleInspection, ListLeadsByStage, MarkLeadLost}

// Lead sources: where an enquiry came from (leads.create's enum).
const (
	SourceGMB       = "gmb"
	SourceGoogleAds = "google_ads"
	SourceMeta      = "meta"
	SourceReferral  = "referral"
	SourceRepeat    = "repeat"
	SourceOther     = "other"
)

// Lead stages: a lead's place in the pipeline.
const (
	StageNew                 = "new"
	StageContacted           = "contacted"
	StageInspectionScheduled = "inspection_scheduled"
	// StageInspected is where inspection.lock and inspection.submit move a lead; nobody sets it by hand.
	StageInspected = "inspected"
	StageQuoted    = "quoted"
	StageWon       = "won"
	StageLost      = "lost"
)

// LeadStages are a lead's stages in the pipeline's order, then lost (off it): the registry's enum of a lead's
// stage, and the one list the rules, the sentences and the handlers read (TestLeadStagesAreTheRegistrys).
var LeadStages = []string{StageNew, StageContacted, StageInspectionScheduled, StageInspected, StageQuoted, StageWon, StageLost}

// SettableLeadStages are the stages leads.update_stage moves a lead to (its enum): all but StageInspected.
var SettableLeadStages = slices.DeleteFunc(slices.Clone(LeadStages), func(s string) bool { return s == StageInspected })

// The inputs and results below are as the tools' registry entries declare them (tools/*.json): the planner's
// rules build the inputs, the answer's sentences read both. A field the entry leaves optional is omitted when
// empty; an id the message does not name is left out, for the run's context to supply.

// LeadsCreateInput is leads.create's input.
type LeadsCreateInput struct {
	Name    string `json:"name"`
	Phone   string `json:"phone"`
	Email   string `json:"email,omitempty"`
	Suburb  string `json:"suburb"`
	Source  string `json:"source,omitempty"`
	Notes   string `json:"notes,omitempty"`
	Address string `json:"address,omitempty"`
}

// LeadsCreateOutput is leads.create's result.
type LeadsCreateOutput struct {
	LeadID string `json:"lead_id"`
	// Created is false when the phone number was already a lead's (that lead is returned); nil in a result
	// that does not say.
	Created *bool `json:"created"`
	Lead    Lead  `json:"lead"`
}

// LeadsUpdateStageInput is leads.update_stage's input.
type LeadsUpdateStageInput struct {
	LeadID string `json:"lead_id,omitempty"`
	Stage  string `json:"stage"`
	Notes  string `json:"notes,omitempty"`
}

// LeadsAddSourceInput is leads.add_source's input.
type LeadsAddSourceInput struct {
	LeadID   string            `json:"lead_id,omitempty"`
	Source   string            `json:"source"`
	Campaign map[string]string `json:"campaign,omitempty"`
}

// LeadsAddPhotosLinkInput is leads.add_photos_link's input.
type LeadsAddPhotosLinkInput struct {
	LeadID string   `json:"lead_id,omitempty"`
	Links  []string `json:"links"`
	Label  string   `json:"label,omitempty"`
}

// PreferredWindow is when an inspection should be: a start (and end), or a working day and part of it.
type PreferredWindow struct {
	Start     *time.Time `json:"start,omitempty"`
	End       *time.Time `json:"end,omitempty"`
	Date      Date       `json:"date,omitzero"`
	PartOfDay string     `json:"part_of_day,omitempty"`
}

// LeadsScheduleInspectionInput is leads.schedule_inspection's input.
type LeadsScheduleInspectionInput struct {
	LeadID          string          `json:"lead_id,omitempty"`
	PreferredWindow PreferredWindow `json:"preferred_window"`
	Notes           string          `json:"notes,omitempty"`
	Address         string          `json:"address,omitempty"`
}

// LeadsScheduleInspectionOutput is leads.schedule_inspection's result.
type LeadsScheduleInspectionOutput struct {
	InspectionID  string           `json:"inspection_id"`
	AppointmentID string           `json:"appointment_id"`
	LeadID        string           `json:"lead_id"`
	Created       bool             `json:"created"`
	Window        InspectionWindow `json:"window"`
	Address       *string          `json:"address"`
	EventID       *string          `json:"event_id"`
	Overlaps      []EventOverlap   `json:"overlaps"`
	PreviousStage string           `json:"previous_stage"`
	LeadStage     string           `json:"lead_stage"`
}

// InspectionWindow is a booked inspection visit's window: timed when the lead gave a time range short
// enough to be the visit itself (then it has a calendar event), else a part of a working day to confirm.
type InspectionWindow struct {
	StartAt time.Time `json:"start_at"`
	EndAt   time.Time `json:"end_at"`
	// Date is the visit's day in the business's time zone.
	Date      Date    `json:"date"`
	PartOfDay *string `json:"part_of_day"`
	Timed     bool    `json:"timed"`
	EventID   *string `json:"event_id"`
}

// LeadsListByStageInput is leads.list_by_stage's input.
type LeadsListByStageInput struct {
	Stage  string `json:"stage,omitempty"`
	Suburb string `json:"suburb,omitempty"`
	Source string `json:"source,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// Lead is a lead as the leads tools return it.
type Lead struct {
	LeadID string `json:"lead_id"`
	Name   string `json:"name"`
	// Phone is the number as it was typed.
	Phone       string    `json:"phone"`
	Email       *string   `json:"email"`
	Suburb      *string   `json:"suburb"`
	Address     *string   `json:"address"`
	Source      string    `json:"source"`
	Stage       string    `json:"stage"`
	StageReason *string   `json:"stage_reason"`
	Notes       *string   `json:"notes"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Status is where an older result kept the stage (the handlers no longer write it).
	Status string `json:"status,omitempty"`
}

// LeadsListByStageOutput is leads.list_by_stage's result.
type LeadsListByStageOutput struct {
	Leads []Lead `json:"leads"`
	Count int    `json:"count"`
}

// LeadsMarkLostInput is leads.mark_lost's input.
type LeadsMarkLostInput struct {
	LeadID     string `json:"lead_id,omitempty"`
	Reason     string `json:"reason"`
	Notes      string `json:"notes,omitempty"`
	ReasonCode string `json:"reason_code,omitempty"`
}
