package integrationshandlers_test

import (
	"net/http"
	"testing"

	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/packs/integrations/handlers/integrationstest"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

type driveResult struct {
	Files []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		MimeType  string `json:"mime_type"`
		SizeBytes *int64 `json:"size_bytes"`
	} `json:"files"`
	DriveQuery string `json:"drive_query"`
}

func googleFake(t *testing.T) (*integrationstest.Google, integrationspack.Config) {
	g := integrationstest.NewGoogle()
	t.Cleanup(g.Close)
	var cfg integrationspack.Config
	g.Config(&cfg)
	return g, cfg
}

// TestGoogleDriveSearch: files.list with a q built from the words and the type, quotes escaped; a refusal
// is a validation_error with Google's message, rate limiting is retried, a bad refresh token is
// not_configured.
func TestGoogleDriveSearch(t *testing.T) {
	t.Parallel()
	g, cfg := googleFake(t)
	g.Files = []integrationstest.DriveFile{
		{ID: "f1", Name: "O'Brien roof quote.pdf", MimeType: "application/pdf", Size: 52311},
		{ID: "f2", Name: "O'Brien site photos", MimeType: "application/vnd.google-apps.folder"},
		{ID: "f3", Name: "Supplier price list", MimeType: "application/vnd.google-apps.spreadsheet", Content: "colorbond O'Brien discount"},
		{ID: "f4", Name: "O'Brien old quote.pdf", MimeType: "application/pdf", Trashed: true},
		{ID: "f5", Name: `back\slash notes`, MimeType: "text/plain"},
	}
	ctx, b := setup(t, cfg)

	r := b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "O'Brien", "limit": 10})
	out := ok[driveResult](t, r)
	var names []string
	for _, f := range out.Files {
		names = append(names, f.Name)
	}
	require.ElementsMatch(t, []string{"O'Brien roof quote.pdf", "O'Brien site photos", "Supplier price list"}, names, "trashed files are left out; content matches")
	require.Equal(t, `trashed = false and (name contains 'O\'Brien' or fullText contains 'O\'Brien')`, out.DriveQuery)

	out = ok[driveResult](t, b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "O'Brien", "file_type": "pdf"}))
	require.Len(t, out.Files, 1)
	require.Equal(t, "f1", out.Files[0].ID)
	require.Equal(t, int64(52311), *out.Files[0].SizeBytes)

	out = ok[driveResult](t, b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": `back\slash`, "file_type": "text/plain"}))
	require.Len(t, out.Files, 1, "a backslash is escaped too")
	require.Equal(t, `trashed = false and (name contains 'back\\slash' or fullText contains 'back\\slash') and mimeType = 'text/plain'`, out.DriveQuery)

	refused(t, b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "x", "file_type": "spreadsheet-ish"}), registry.CodeValidation)

	g.Fail("/drive/v3/files", 1, http.StatusBadRequest, "Invalid Value")
	msg := refused(t, b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "roof"}), registry.CodeValidation)
	require.Contains(t, msg, "Invalid Value")

	// Rate limited once: the executor retries the call, which then succeeds.
	g.Fail("/drive/v3/files", 1, http.StatusTooManyRequests, "Rate Limit Exceeded")
	r = b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "price"})
	require.Len(t, ok[driveResult](t, r).Files, 1)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, 1, g.TokensMinted(), "the access token is minted once and reused")

	// A refresh token Google refuses: not_configured.
	bad := cfg
	bad.Google.RefreshToken = "1//revoked"
	ctx, b = setup(t, bad)
	notConfigured(t, b.run(t, ctx, "integrations.google_drive.search", map[string]any{"query": "roof"}), integrationspack.EnvGoogleOAuthRefreshToken)
}

type analyticsResult struct {
	Summary struct {
		PropertyID string `json:"property_id"`
		Totals     struct {
			Sessions    int     `json:"sessions"`
			Users       int     `json:"users"`
			Conversions float64 `json:"conversions"`
		} `json:"totals"`
		ByDate []struct {
			Date        string  `json:"date"`
			Sessions    int     `json:"sessions"`
			Users       int     `json:"users"`
			Conversions float64 `json:"conversions"`
		} `json:"by_date"`
	} `json:"summary"`
}

// TestAnalyticsPullSummary: runReport by date, with GA4's own totals (users counted once).
func TestAnalyticsPullSummary(t *testing.T) {
	t.Parallel()
	g, cfg := googleFake(t)
	g.Analytics = []integrationstest.AnalyticsDay{
		{Date: "2024-06-30", Sessions: 99, Users: 99, KeyEvents: 9},
		{Date: "2024-07-01", Sessions: 40, Users: 30, KeyEvents: 2},
		{Date: "2024-07-02", Sessions: 60, Users: 50, KeyEvents: 3},
	}
	ctx, b := setup(t, cfg)
	input := map[string]any{"from": "2024-07-01", "to": "2024-07-31"}
	out := ok[analyticsResult](t, b.run(t, ctx, "integrations.analytics.pull_summary", input))
	require.Equal(t, g.PropertyID, out.Summary.PropertyID)
	require.Len(t, out.Summary.ByDate, 2)
	require.Equal(t, "2024-07-01", out.Summary.ByDate[0].Date)
	require.Equal(t, 40, out.Summary.ByDate[0].Sessions)
	require.Equal(t, 50, out.Summary.ByDate[1].Users)
	require.Equal(t, 100, out.Summary.Totals.Sessions)
	require.Equal(t, 72, out.Summary.Totals.Users, "users come from GA4's total, not the sum of days")
	require.Equal(t, 5.0, out.Summary.Totals.Conversions)

	refused(t, b.run(t, ctx, "integrations.analytics.pull_summary", map[string]any{"from": "2024-07-31", "to": "2024-07-01"}), registry.CodeValidation)

	g.Fail("/v1beta/properties/", 1, http.StatusBadRequest, "Field conversions is not a valid metric.")
	msg := refused(t, b.run(t, ctx, "integrations.analytics.pull_summary", input), registry.CodeValidation)
	require.Contains(t, msg, "INVALID_ARGUMENT")

	g.Fail("/v1beta/properties/", 1, http.StatusTooManyRequests, "Exhausted property tokens per hour.")
	r := b.run(t, ctx, "integrations.analytics.pull_summary", input)
	require.Equal(t, 100, ok[analyticsResult](t, r).Summary.Totals.Sessions)
	require.Equal(t, 2, r.Attempt)

	// A property the credentials cannot read.
	other := cfg
	other.GA4.PropertyID = "999"
	ctx, b = setup(t, other)
	notConfigured(t, b.run(t, ctx, "integrations.analytics.pull_summary", input), integrationspack.EnvGA4PropertyID)
}

type adsResult struct {
	Summary struct {
		Channel   string `json:"channel"`
		AccountID string `json:"account_id"`
		Currency  string `json:"currency"`
		Totals    struct {
			Spend       float64 `json:"spend"`
			Clicks      int     `json:"clicks"`
			Impressions int     `json:"impressions"`
			Conversions float64 `json:"conversions"`
		} `json:"totals"`
		ByDate []struct {
			Date  string  `json:"date"`
			Spend float64 `json:"spend"`
		} `json:"by_date"`
	} `json:"summary"`
}

var adsDays = []integrationstest.AdsDay{
	{Date: "2024-07-01", Spend: 12.5, Clicks: 10, Impressions: 400, Conversions: 1},
	{Date: "2024-07-02", Spend: 30.25, Clicks: 22, Impressions: 900, Conversions: 2.5},
	{Date: "2024-07-03", Spend: 7.1, Clicks: 4, Impressions: 150, Conversions: 0},
	{Date: "2024-08-01", Spend: 99, Clicks: 99, Impressions: 99, Conversions: 9},
}

// TestAdsPullSummary: Google Ads through searchStream (cost in micros), Meta through insights with
// paging; refusals, rate limits (Meta's code 17 comes as HTTP 400) and bad credentials.
func TestAdsPullSummary(t *testing.T) {
	t.Parallel()
	g, cfg := googleFake(t)
	g.Ads = adsDays
	m := integrationstest.NewMeta()
	t.Cleanup(m.Close)
	m.Days = adsDays
	cfg.Meta = m.Config()
	ctx, b := setup(t, cfg)
	july := func(channel string) map[string]any {
		return map[string]any{"channel": channel, "from": "2024-07-01", "to": "2024-07-31"}
	}

	out := ok[adsResult](t, b.run(t, ctx, "integrations.ads.pull_summary", july("google_ads")))
	require.Equal(t, "google_ads", out.Summary.Channel)
	require.Equal(t, "1234567890", out.Summary.AccountID)
	require.Equal(t, "AUD", out.Summary.Currency)
	require.Equal(t, 49.85, out.Summary.Totals.Spend)
	require.Equal(t, 36, out.Summary.Totals.Clicks)
	require.Equal(t, 1450, out.Summary.Totals.Impressions)
	require.Equal(t, 3.5, out.Summary.Totals.Conversions)
	require.Len(t, out.Summary.ByDate, 3)
	require.Contains(t, g.Queries()[0], "segments.date BETWEEN '2024-07-01' AND '2024-07-31'")

	out = ok[adsResult](t, b.run(t, ctx, "integrations.ads.pull_summary", july("meta")))
	require.Equal(t, m.AdAccountID, out.Summary.AccountID)
	require.Equal(t, 49.85, out.Summary.Totals.Spend)
	require.Equal(t, 3.5, out.Summary.Totals.Conversions, "leads are the conversions")
	require.Len(t, out.Summary.ByDate, 3, "two pages of insights")
	require.Equal(t, 2, m.Requests())

	m.Fail(1, http.StatusBadRequest, 100, "(#100) Invalid parameter")
	msg := refused(t, b.run(t, ctx, "integrations.ads.pull_summary", july("meta")), registry.CodeValidation)
	require.Contains(t, msg, "Invalid parameter")

	m.Fail(1, http.StatusBadRequest, 17, "(#17) User request limit reached")
	r := b.run(t, ctx, "integrations.ads.pull_summary", july("meta"))
	require.Equal(t, 49.85, ok[adsResult](t, r).Summary.Totals.Spend)
	require.Equal(t, 2, r.Attempt, "Meta's rate limit is retried")

	g.Fail("/"+integrationstest.GoogleAdsVersion+"/customers/", 1, http.StatusServiceUnavailable, "The service is currently unavailable.")
	r = b.run(t, ctx, "integrations.ads.pull_summary", july("google_ads"))
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, 49.85, ok[adsResult](t, r).Summary.Totals.Spend)

	refused(t, b.run(t, ctx, "integrations.ads.pull_summary", map[string]any{"channel": "meta", "from": "2024-08-01", "to": "2024-07-01"}), registry.CodeValidation)

	bad := cfg
	bad.GoogleAds.DeveloperToken = "not-approved"
	bad.Meta.AccessToken = "EAAB-expired"
	ctx, b = setup(t, bad)
	notConfigured(t, b.run(t, ctx, "integrations.ads.pull_summary", july("google_ads")), integrationspack.EnvGoogleAdsDeveloperToken)
	notConfigured(t, b.run(t, ctx, "integrations.ads.pull_summary", july("meta")), integrationspack.EnvMetaAccessToken)
}
