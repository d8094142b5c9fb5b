// Package integrations holds the handlers of GEM's integrations.* tools: HighLevel (LeadConnector API v2)
// with a sync queue that retries with backoff, Google Drive search, Google Photos shared links, Google
// Analytics 4 and ads (Google Ads, Meta) summaries, and health checks of the SMS and email providers.
//
// Every provider is configured by environment variables (ConfigFromEnv, read by the executor's Main,
// docs/integrations.md). A tool whose provider is not configured answers not_configured, naming the
// variables to set; configured, it calls the provider's real API. integrations.google_photos.import_links
// needs nothing but the database.
package integrations

import (
	"context"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/business"
)

// Register adds the integrations pack's handlers with its configuration: the executor's Main reads it from
// the environment once (ConfigFromEnv) and reports its Problems at start; tests build one.
func Register(h executor.Handlers, cfg Config) {
	cfg = cfg.WithDefaults()
	p := &pack{cfg: cfg, google: &googleTokens{cfg: cfg.Google, client: cfg.HTTPClient}}
	p.highLevel = &highLevelClient{cfg: cfg.HighLevel, client: cfg.HTTPClient}

	outside := func(run func(ctx context.Context, c *executor.Call) (any, error), env []string) executor.Handler {
		return executor.Handler{Run: run, Isolated: true, RequiredEnv: env}
	}
	// Either way of giving Google credentials will do; executor registry check names the one in use (or,
	// with neither, the refresh token's).
	google := []string{EnvGoogleOAuthClientID, EnvGoogleOAuthClientSecret, EnvGoogleOAuthRefreshToken}
	if cfg.Google.AccessToken != "" && !p.google.refreshes() {
		google = []string{EnvGoogleAccessToken}
	}
	h.Add("integrations.google_drive.search", outside(executor.Typed(p.driveSearch), google))
	h.Func("integrations.google_photos.import_links", executor.Typed(importPhotoLinks))
	h.Add("integrations.analytics.pull_summary", outside(executor.Typed(p.analyticsSummary), append([]string{EnvGA4PropertyID}, google...)))
	h.Add("integrations.ads.pull_summary", outside(executor.Typed(p.adsSummary), nil))
	h.Add("integrations.sms_provider.health", outside(executor.Typed(p.smsHealth), []string{business.EnvTwilioAccountSID, business.EnvTwilioAuthToken}))
	h.Add("integrations.email_provider.health", outside(executor.Typed(p.emailHealth), []string{business.EnvSMTPURL}))

	hl := highLevelRequiredEnv
	h.Add("integrations.highlevel.health_check", outside(executor.Typed(p.highLevelHealth), hl))
	h.Add("integrations.highlevel.sync_contacts", outside(executor.Typed(p.syncContacts), hl))
	h.Add("integrations.highlevel.sync_inspection", outside(executor.Typed(p.syncInspection), hl))
	h.Add("integrations.highlevel.sync_quote", outside(executor.Typed(p.syncQuote), hl))
	h.Add("integrations.highlevel.update_lead_stage", outside(executor.Typed(p.updateLeadStage), append(hl, EnvHighLevelPipelineID, EnvHighLevelStageIDs)))
	h.Add("integrations.highlevel.process_sync_queue", outside(executor.Typed(p.processSyncQueue), hl))
}

// pack holds what the handlers share.
type pack struct {
	cfg       Config
	google    *googleTokens
	highLevel *highLevelClient
}
