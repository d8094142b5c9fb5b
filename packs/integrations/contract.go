package integrationspack

import "time"

// The tools' inputs, as their registry entries declare them (tools/*.json): the planner's rules build them.
// A field the entry leaves optional is omitted when empty, so a rule that does not know a value leaves it to
// the tool's default or the run's context.

// Ads channels (integrations.ads.pull_summary's enum).
const (
	ChannelGoogleAds = "google_ads"
	ChannelMeta      = "meta"
)

// DriveSearchInput is integrations.google_drive.search's input.
type DriveSearchInput struct {
	Query    string `json:"query"`
	FileType string `json:"file_type,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// PhotosImportLinksInput is integrations.google_photos.import_links's input.
type PhotosImportLinksInput struct {
	Links []string `json:"links"`
	Notes string   `json:"notes,omitempty"`
}

// AnalyticsPullSummaryInput is integrations.analytics.pull_summary's input: a period of days (2006-01-02).
type AnalyticsPullSummaryInput struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// AdsPullSummaryInput is integrations.ads.pull_summary's input.
type AdsPullSummaryInput struct {
	Channel string `json:"channel"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
}

// HighLevelSyncContactsInput is integrations.highlevel.sync_contacts's input.
type HighLevelSyncContactsInput struct {
	LocationID string     `json:"location_id,omitempty"`
	Cursor     string     `json:"cursor,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	Limit      int        `json:"limit,omitempty"`
	DryRun     bool       `json:"dry_run,omitempty"`
}

// HighLevelSyncQuoteInput is integrations.highlevel.sync_quote's input. The quote is the run's context's
// when QuoteID is empty.
type HighLevelSyncQuoteInput struct {
	QuoteID            string   `json:"quote_id,omitempty"`
	LeadID             string   `json:"lead_id,omitempty"`
	HighLevelContactID string   `json:"highlevel_contact_id"`
	QuoteAmount        *float64 `json:"quote_amount,omitempty"`
	QuoteURL           string   `json:"quote_url,omitempty"`
}

// HighLevelSyncInspectionInput is integrations.highlevel.sync_inspection's input. The inspection is the
// run's context's when InspectionID is empty.
type HighLevelSyncInspectionInput struct {
	InspectionID       string `json:"inspection_id,omitempty"`
	LeadID             string `json:"lead_id,omitempty"`
	HighLevelContactID string `json:"highlevel_contact_id"`
}

// HighLevelUpdateStageInput is integrations.highlevel.update_lead_stage's input.
type HighLevelUpdateStageInput struct {
	LeadID             string `json:"lead_id,omitempty"`
	HighLevelContactID string `json:"highlevel_contact_id"`
	Stage              string `json:"stage"`
	Notes              string `json:"notes,omitempty"`
}
