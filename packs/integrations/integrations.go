// Package integrationspack is the integrations pack: HighLevel, Google Drive and Photos, analytics and
// ads, the SMS and email providers. Its tools' registry entries are files of tools/ (packs embeds
// them); this is their order in the registry.
package integrationspack

// Tools are the pack's tools, in the registry's order (the order of tools/list, of the LLM's tools and of the
// help).
var Tools = []string{
	"integrations.google_drive.search",
	"integrations.google_photos.import_links",
	"integrations.analytics.pull_summary",
	"integrations.ads.pull_summary",
	"integrations.sms_provider.health",
	"integrations.email_provider.health",
	"integrations.highlevel.health_check",
	"integrations.highlevel.sync_contacts",
	"integrations.highlevel.sync_inspection",
	"integrations.highlevel.sync_quote",
	"integrations.highlevel.update_lead_stage",
	"integrations.highlevel.process_sync_queue",
}
