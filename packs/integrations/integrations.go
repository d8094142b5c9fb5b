// Package integrationspack is the integrations pack: HighLevel, Google Drive and Photos, analytics and
// ads, the SMS and email providers. Its tools' registry entries are files of tools/ (packs embeds
// them); this is their order in the registry.
package integrationspack

// The pack's tools.
const (
	DriveSearch             = "integrations.google_drive.search"
	PhotosImportLinks       = "integrations.google_photos.import_links"
	AnalyticsPullSummary    = "integrations.analytics.pull_summary"
	AdsPullSummary          = "integrations.ads.pull_summary"
	SMSProviderHealth       = "integrations.sms_provider.health"
	EmailProviderHealth     = "integrations.email_provider.health"
	HighLevelHealthCheck    = "integrations.highlevel.health_check"
	HighLevelSyncContacts   = "integrations.highlevel.sync_contacts"
	HighLevelSyncInspection = "integrations.highlevel.sync_inspection"
	HighLevelSyncQuote      = "integrations.highlevel.sync_quote"
	HighLevelUpdateStage    = "integrations.highlevel.update_lead_stage"
	HighLevelProcessQueue   = "integrations.highlevel.process_sync_queue"
)

// Tools are the pack's tools, in the registry's order (the order of tools/list, of the LLM's tools and of the
// help).
var Tools = []string{
	DriveSearch,
	PhotosImportLinks,
	AnalyticsPullSummary,
	AdsPullSummary,
	SMSProviderHealth,
	EmailProviderHealth,
	HighLevelHealthCheck,
	HighLevelSyncContacts,
	HighLevelSyncInspection,
	HighLevelSyncQuote,
	HighLevelUpdateStage,
	HighLevelProcessQueue,
}
