package businesspack

import "time"

// The inspection tools: a roof inspected, from the visit to the scope of works.
const (
	CreateInspection     = "inspection.create"
	AddChecklistItem     = "inspection.add_checklist_item"
	AddMeasurement       = "inspection.add_measurement"
	AddPhotoRef          = "inspection.add_photo_ref"
	AddDefect            = "inspection.add_defect"
	GenerateScopeSummary = "inspection.generate_scope_summary"
	LockInspection       = "inspection.lock"
	GetInspection        = "inspection.get"
	SubmitInspection     = "inspection.submit"
	ReopenInspection     = "inspection.reopen"
)

// InspectionTools are the inspection tools, in the registry's order.
var InspectionTools = []string{CreateInspection, AddChecklistItem, AddMeasurement, AddPhotoRef, AddDefect, GenerateScopeSummary,
	LockInspection, GetInspection, SubmitInspection, ReopenInspection}

// Checklist statuses (inspection.add_checklist_item's enum).
const (
	ChecklistPass          = "pass"
	ChecklistFail          = "fail"
	ChecklistNotApplicable = "na"
)

// Defect categories: the part of the roof at fault (inspection.add_defect's enum).
const (
	DefectTile     = "tile"
	DefectRidge    = "ridge"
	DefectValley   = "valley"
	DefectFlashing = "flashing"
	DefectGutter   = "gutter"
	DefectLeak     = "leak"
	DefectOther    = "other"
)

// Defect severities (inspection.add_defect's enum).
const (
	SeverityLow    = "low"
	SeverityMedium = "medium"
	SeverityHigh   = "high"
)

// Scope summary formats (inspection.generate_scope_summary's enum).
const (
	ScopeBullet   = "bullet"
	ScopeSections = "sections"
)

// InspectionCreateInput is inspection.create's input.
type InspectionCreateInput struct {
	LeadID        string `json:"lead_id,omitempty"`
	SiteAddress   string `json:"site_address,omitempty"`
	Notes         string `json:"notes,omitempty"`
	AppointmentID string `json:"appointment_id,omitempty"`
	SiteID        string `json:"site_id,omitempty"`
	Inspector     string `json:"inspector,omitempty"`
}

// Inspection is an inspection as the inspection tools return it (inspection.create's result).
type Inspection struct {
	InspectionID  string     `json:"inspection_id"`
	LeadID        string     `json:"lead_id"`
	AppointmentID *string    `json:"appointment_id"`
	SiteID        *string    `json:"site_id"`
	SiteAddress   *string    `json:"site_address"`
	Notes         *string    `json:"notes"`
	Status        string     `json:"status"`
	Inspector     *string    `json:"inspector"`
	Summary       *string    `json:"summary"`
	SubmittedAt   *time.Time `json:"submitted_at"`
	LockedAt      *time.Time `json:"locked_at"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// InspectionCounts are how many of each record an inspection holds.
type InspectionCounts struct {
	ChecklistItems int `json:"checklist_items"`
	Measurements   int `json:"measurements"`
	Photos         int `json:"photos"`
	Defects        int `json:"defects"`
}

// InspectionAddChecklistItemInput is inspection.add_checklist_item's input.
type InspectionAddChecklistItemInput struct {
	InspectionID string `json:"inspection_id,omitempty"`
	ItemKey      string `json:"item_key"`
	Status       string `json:"status,omitempty"`
	Notes        string `json:"notes,omitempty"`
}

// InspectionAddMeasurementInput is inspection.add_measurement's input.
type InspectionAddMeasurementInput struct {
	InspectionID string  `json:"inspection_id,omitempty"`
	Label        string  `json:"label"`
	Value        float64 `json:"value"`
	Unit         string  `json:"unit"`
	Notes        string  `json:"notes,omitempty"`
	Kind         string  `json:"kind,omitempty"`
}

// InspectionAddPhotoRefInput is inspection.add_photo_ref's input.
type InspectionAddPhotoRefInput struct {
	InspectionID string   `json:"inspection_id,omitempty"`
	FileRef      string   `json:"file_ref"`
	Label        string   `json:"label,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	AssetID      string   `json:"asset_id,omitempty"`
}

// InspectionAddDefectInput is inspection.add_defect's input.
type InspectionAddDefectInput struct {
	InspectionID string `json:"inspection_id,omitempty"`
	Category     string `json:"category"`
	Severity     string `json:"severity,omitempty"`
	// Notes, when set, are sent even empty.
	Notes     *string  `json:"notes,omitempty"`
	PhotoRefs []string `json:"photo_refs,omitempty"`
	Location  string   `json:"location,omitempty"`
}

// InspectionGenerateScopeSummaryInput is inspection.generate_scope_summary's input.
type InspectionGenerateScopeSummaryInput struct {
	InspectionID string `json:"inspection_id,omitempty"`
	Format       string `json:"format,omitempty"`
}

// InspectionGenerateScopeSummaryOutput is inspection.generate_scope_summary's result.
type InspectionGenerateScopeSummaryOutput struct {
	ScopeText        string           `json:"scope_text"`
	InspectionID     string           `json:"inspection_id"`
	Format           string           `json:"format"`
	InspectionStatus string           `json:"inspection_status"`
	Counts           InspectionCounts `json:"counts"`
}

// InspectionLockInput is inspection.lock's input.
type InspectionLockInput struct {
	InspectionID string `json:"inspection_id,omitempty"`
}

// InspectionSubmitInput is inspection.submit's input.
type InspectionSubmitInput struct {
	InspectionID string  `json:"inspection_id,omitempty"`
	Summary      *string `json:"summary,omitempty"`
}
