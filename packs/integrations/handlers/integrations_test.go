package integrationshandlers_test

import (
	"encoding/json"
	"testing"

	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestNothingConfigured: with no provider configured, every tool that needs one answers not_configured
// naming the variables to set, and import_links, which needs only the database, works.
func TestNothingConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, integrationspack.Config{})
	id := uuid.NewString()
	for _, tt := range []struct {
		tool  string
		input map[string]any
		env   []string
	}{
		{"integrations.google_drive.search", map[string]any{"query": "roof"}, []string{integrationspack.EnvGoogleOAuthRefreshToken, integrationspack.EnvGoogleAccessToken}},
		{"integrations.analytics.pull_summary", map[string]any{"from": "2024-07-01", "to": "2024-07-31"}, []string{integrationspack.EnvGA4PropertyID}},
		{"integrations.ads.pull_summary", map[string]any{"channel": "google_ads", "from": "2024-07-01", "to": "2024-07-31"}, []string{integrationspack.EnvGoogleAdsDeveloperToken, integrationspack.EnvGoogleAdsCustomerID}},
		{"integrations.ads.pull_summary", map[string]any{"channel": "meta", "from": "2024-07-01", "to": "2024-07-31"}, []string{integrationspack.EnvMetaAccessToken, integrationspack.EnvMetaAdAccountID}},
		{"integrations.sms_provider.health", map[string]any{}, []string{businesspack.EnvTwilioAccountSID, businesspack.EnvTwilioAuthToken}},
		{"integrations.email_provider.health", map[string]any{}, []string{businesspack.EnvSMTPURL}},
		{"integrations.highlevel.health_check", map[string]any{}, []string{integrationspack.EnvHighLevelToken, integrationspack.EnvHighLevelLocationID}},
		{"integrations.highlevel.sync_contacts", map[string]any{"limit": 10}, []string{integrationspack.EnvHighLevelToken}},
		{"integrations.highlevel.sync_inspection", map[string]any{"inspection_id": id, "highlevel_contact_id": "c1"}, []string{integrationspack.EnvHighLevelToken}},
		{"integrations.highlevel.sync_quote", map[string]any{"quote_id": id, "highlevel_contact_id": "c1"}, []string{integrationspack.EnvHighLevelToken}},
		{"integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c1", "stage": "quoted"}, []string{integrationspack.EnvHighLevelLocationID}},
		{"integrations.highlevel.process_sync_queue", map[string]any{}, []string{integrationspack.EnvHighLevelToken}},
	} {
		notConfigured(t, b.run(t, ctx, tt.tool, tt.input), tt.env...)
	}

	r := b.run(t, ctx, "integrations.google_photos.import_links", map[string]any{"links": []string{"https://photos.app.goo.gl/AbC123"}})
	out := ok[struct {
		SourceIDs []string `json:"source_ids"`
	}](t, r)
	require.Len(t, out.SourceIDs, 1)
}

// TestUnusableURLsAnswerNotConfigured: a provider's address that is not an http(s) URL (reported by Main at
// start) is never tried: every tool that would call it answers not_configured, naming the variable and the
// value, the credentials being set.
func TestUnusableURLsAnswerNotConfigured(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		integrationspack.EnvHighLevelToken: "pit-1", integrationspack.EnvHighLevelLocationID: "loc-1", integrationspack.EnvHighLevelBaseURL: "leadconnector.example",
		integrationspack.EnvGoogleAccessToken: "ya29.x", integrationspack.EnvGoogleDriveBaseURL: "ftp://drive.example",
		integrationspack.EnvGA4PropertyID: "123", integrationspack.EnvGA4BaseURL: "ftp://ga4.example",
		integrationspack.EnvGoogleAdsDeveloperToken: "dev", integrationspack.EnvGoogleAdsCustomerID: "123-456-7890", integrationspack.EnvGoogleAdsBaseURL: "ads.example",
		integrationspack.EnvMetaAccessToken: "meta", integrationspack.EnvMetaAdAccountID: "act_1", integrationspack.EnvMetaGraphBaseURL: "graph.example",
		businesspack.EnvTwilioAccountSID: "AC1", businesspack.EnvTwilioAuthToken: "tok", businesspack.EnvTwilioBaseURL: "ftp://twilio.example",
	}
	getenv := func(k string) string { return env[k] }
	ctx, b := setupWith(t, integrationspack.ConfigFromEnv(getenv), businesspack.ConfigFromEnv(getenv))
	id := uuid.NewString()
	july := func(channel string) map[string]any {
		return map[string]any{"channel": channel, "from": "2024-07-01", "to": "2024-07-31"}
	}
	for _, tt := range []struct {
		tool  string
		input map[string]any
		env   string
	}{
		{"integrations.highlevel.health_check", map[string]any{}, integrationspack.EnvHighLevelBaseURL},
		{"integrations.highlevel.sync_contacts", map[string]any{"limit": 10}, integrationspack.EnvHighLevelBaseURL},
		{"integrations.highlevel.sync_inspection", map[string]any{"inspection_id": id, "highlevel_contact_id": "c1"}, integrationspack.EnvHighLevelBaseURL},
		{"integrations.highlevel.sync_quote", map[string]any{"quote_id": id, "highlevel_contact_id": "c1"}, integrationspack.EnvHighLevelBaseURL},
		{"integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c1", "stage": "quoted"}, integrationspack.EnvHighLevelBaseURL},
		{"integrations.highlevel.process_sync_queue", map[string]any{}, integrationspack.EnvHighLevelBaseURL},
		{"integrations.google_drive.search", map[string]any{"query": "roof"}, integrationspack.EnvGoogleDriveBaseURL},
		{"integrations.analytics.pull_summary", map[string]any{"from": "2024-07-01", "to": "2024-07-31"}, integrationspack.EnvGA4BaseURL},
		{"integrations.ads.pull_summary", july("google_ads"), integrationspack.EnvGoogleAdsBaseURL},
		{"integrations.ads.pull_summary", july("meta"), integrationspack.EnvMetaGraphBaseURL},
		{"integrations.sms_provider.health", map[string]any{}, businesspack.EnvTwilioBaseURL},
	} {
		requireUnusableURL(t, b.run(t, ctx, tt.tool, tt.input), tt.env, env[tt.env])
	}

	// A refresh token is exchanged at the token endpoint first: that is the address named.
	env = map[string]string{integrationspack.EnvGoogleOAuthClientID: "client", integrationspack.EnvGoogleOAuthClientSecret: "secret",
		integrationspack.EnvGoogleOAuthRefreshToken: "refresh", integrationspack.EnvGoogleOAuthTokenURL: "oauth2.example/token"}
	ctx, b = setup(t, integrationspack.ConfigFromEnv(getenv))
	requireUnusableURL(t, b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "roof"}),
		integrationspack.EnvGoogleOAuthTokenURL, "oauth2.example/token")
}

// requireUnusableURL requires a not_configured receipt naming the variable whose value is no http(s) URL.
func requireUnusableURL(t *testing.T, r *registry.Receipt, name, value string) {
	t.Helper()
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%s: %s %+v", r.ToolName, r.Result, r.Error)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Equal(t, []string{name}, d.RequiredEnv, r.ToolName)
	require.Contains(t, d.Reason, name+`="`+value+`" is not an http(s) URL`, r.ToolName)
	require.NotEmpty(t, d.NextSteps)
}

// TestGooglePhotosImportLinks: share links become media sources, once per link, in the order given;
// anything that is not a Google Photos share link refuses the call.
func TestGooglePhotosImportLinks(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, integrationspack.Config{})
	type source struct {
		SourceID string `json:"source_id"`
		URL      string `json:"url"`
		Created  bool   `json:"created"`
	}
	type result struct {
		SourceIDs []string `json:"source_ids"`
		Sources   []source `json:"sources"`
		Created   int      `json:"created"`
		Existing  int      `json:"existing"`
	}
	album := "https://photos.app.goo.gl/Qx7Rk2mWz9"
	share := "https://photos.google.com/share/AF1QipN?key=abc123"
	r := b.run(t, ctx, "integrations.google_photos.import_links", map[string]any{
		"links": []string{album, "HTTPS://WWW.Photos.Google.com/share/AF1QipN?key=abc123#top", share, album}, "notes": "Smith job, before photos"})
	first := ok[result](t, r)
	require.Equal(t, 2, first.Created)
	require.Equal(t, 0, first.Existing)
	require.Len(t, first.SourceIDs, 2, "a repeated link is one source")
	require.Equal(t, album, first.Sources[0].URL)
	require.Equal(t, share, first.Sources[1].URL, "the host's case, www. and the fragment are dropped; the key stays")
	require.Equal(t, map[string]int{"integration_media_sources insert": 2}, writes(r))
	require.Equal(t, "Smith job, before photos", func() string {
		var n string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT notes FROM integration_media_sources WHERE id = $1`, first.SourceIDs[0]).Scan(&n))
		return n
	}())

	// Again, with one new link: the known ones keep their ids and nothing is rewritten.
	photo := "https://photos.google.com/photo/AF1QipM"
	r = b.run(t, ctx, "integrations.google_photos.import_links", map[string]any{"links": []string{share, photo}})
	second := ok[result](t, r)
	require.Equal(t, first.SourceIDs[1], second.SourceIDs[0])
	require.Equal(t, 1, second.Created)
	require.Equal(t, 1, second.Existing)
	require.False(t, second.Sources[0].Created)
	require.Equal(t, map[string]int{"integration_media_sources insert": 1}, writes(r))

	for _, bad := range [][]string{
		{},
		{"https://drive.google.com/drive/folders/1abc"},
		{album, "not a link"},
		{"https://photos.app.goo.gl/"},
		{"ftp://photos.google.com/share/x"},
	} {
		msg := refused(t, b.run(t, ctx, "integrations.google_photos.import_links", map[string]any{"links": bad}), registry.CodeValidation)
		require.NotEmpty(t, msg)
	}
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM integration_media_sources`), "a refused call records nothing")
}
