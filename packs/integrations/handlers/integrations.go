// Package integrationshandlers runs the integrations pack's tools (integrations.*): HighLevel (LeadConnector
// API v2) with a sync queue that retries with backoff, Google Drive search, Google Photos shared links,
// Google Analytics 4 and ads (Google Ads, Meta) summaries, and health checks of the SMS and email providers.
//
// Every provider is configured by environment variables (integrationspack.ConfigFromEnv, read by the
// executor's Main, docs/integrations.md). A tool whose provider is not configured answers not_configured,
// naming the variables to set; configured, it calls the provider's real API.
// integrations.google_photos.import_links needs nothing but the database.
package integrationshandlers

import (
	"context"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// Register adds the integrations pack's handlers with its configuration and the business pack's settings
// it reads: the SMS and email providers its health checks probe, and the region contacts' phone numbers
// are read in. The executor's Main reads both from the environment once (integrationspack.ConfigFromEnv,
// businesspack.ConfigFromEnv) and reports their Problems at start; tests build them.
func Register(h executor.Handlers, cfg integrationspack.Config, biz businesspack.Config) {
	cfg, biz = cfg.WithDefaults(), biz.WithDefaults()
	p := &pack{cfg: cfg, google: &googleTokens{cfg: cfg.Google, client: cfg.HTTPClient}, sms: biz.SMS, email: biz.Email}
	p.highLevel = &highLevelClient{cfg: cfg.HighLevel, client: cfg.HTTPClient}
	p.phoneRegion, p.phoneRegionProblem = biz.ResolvePhoneRegion()

	outside := func(run func(ctx context.Context, c *executor.Call) (any, error), env []string) executor.Handler {
		return executor.Handler{Run: run, Isolated: true, RequiredEnv: env}
	}
	// Either way of giving Google credentials will do; executor registry check names the one in use (or,
	// with neither, the refresh token's).
	google := []string{integrationspack.EnvGoogleOAuthClientID, integrationspack.EnvGoogleOAuthClientSecret, integrationspack.EnvGoogleOAuthRefreshToken}
	if cfg.Google.AccessToken != "" && !p.google.refreshes() {
		google = []string{integrationspack.EnvGoogleAccessToken}
	}
	h.Add(integrationspack.DriveSearch, outside(executor.Typed(p.driveSearch), google))
	h.Func(integrationspack.PhotosImportLinks, executor.Typed(importPhotoLinks))
	h.Add(integrationspack.AnalyticsPullSummary, outside(executor.Typed(p.analyticsSummary), append([]string{integrationspack.EnvGA4PropertyID}, google...)))
	h.Add(integrationspack.AdsPullSummary, outside(executor.Typed(p.adsSummary), nil))
	h.Add(integrationspack.SMSProviderHealth, outside(executor.Typed(p.smsHealth), []string{businesspack.EnvTwilioAccountSID, businesspack.EnvTwilioAuthToken}))
	h.Add(integrationspack.EmailProviderHealth, outside(executor.Typed(p.emailHealth), []string{businesspack.EnvSMTPURL}))

	hl := highLevelRequiredEnv
	h.Add(integrationspack.HighLevelHealthCheck, outside(executor.Typed(p.highLevelHealth), hl))
	h.Add(integrationspack.HighLevelSyncContacts, outside(executor.Typed(p.syncContacts), hl))
	h.Add(integrationspack.HighLevelSyncInspection, outside(executor.Typed(p.syncInspection), hl))
	h.Add(integrationspack.HighLevelSyncQuote, outside(executor.Typed(p.syncQuote), hl))
	h.Add(integrationspack.HighLevelUpdateStage, outside(executor.Typed(p.updateLeadStage), append(hl, integrationspack.EnvHighLevelPipelineID, integrationspack.EnvHighLevelStageIDs)))
	h.Add(integrationspack.HighLevelProcessQueue, outside(executor.Typed(p.processSyncQueue), hl))
}

// pack holds what the handlers share.
type pack struct {
	cfg       integrationspack.Config
	google    *googleTokens
	highLevel *highLevelClient
	// sms and email are the business pack's providers, which the health checks probe.
	sms   businesspack.TwilioConfig
	email businesspack.SMTPConfig
	// phoneRegion is the region a contact's phone number without a country code is read in, to find its
	// lead (the business pack's GEM_PHONE_REGION); phoneRegionProblem is why it cannot be used, if so (the
	// contact sync then answers not_configured with it).
	phoneRegion        string
	phoneRegionProblem error
}
