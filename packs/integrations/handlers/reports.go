package integrationshandlers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// dateRangeInput is a report's period: from and to, both included (YYYY-MM-DD).
type dateRangeInput struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// check refuses a period that ends before it starts.
func (r dateRangeInput) check() error {
	from, err1 := time.Parse(time.DateOnly, r.From)
	to, err2 := time.Parse(time.DateOnly, r.To)
	if err1 != nil || err2 != nil {
		return executor.Invalid("from and to must be dates like 2024-07-01")
	}
	if to.Before(from) {
		return executor.Invalid("to (%s) is before from (%s)", r.To, r.From)
	}
	return nil
}

// number reads a JSON number that providers send as a number or as a string ("12", "3.5").
type number float64

func (n *number) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	*n = number(f)
	return nil
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// --- integrations.analytics.pull_summary (GA4) ---

type analyticsDay struct {
	Date        string  `json:"date"`
	Sessions    int64   `json:"sessions"`
	Users       int64   `json:"users"`
	Conversions float64 `json:"conversions"`
}

type analyticsTotals struct {
	Sessions    int64   `json:"sessions"`
	Users       int64   `json:"users"`
	Conversions float64 `json:"conversions"`
}

type analyticsSummary struct {
	Source            string          `json:"source"`
	PropertyID        string          `json:"property_id"`
	From              string          `json:"from"`
	To                string          `json:"to"`
	ConversionsMetric string          `json:"conversions_metric"`
	Totals            analyticsTotals `json:"totals"`
	ByDate            []analyticsDay  `json:"by_date"`
}

type analyticsOutput struct {
	Summary analyticsSummary `json:"summary"`
}

var ga4RequiredEnv = append([]string{integrationspack.EnvGA4PropertyID}, googleCredentialEnv...)

// analyticsSummary reports sessions, users and conversions per day and in total from Google Analytics 4:
// properties.runReport with the date dimension. Totals come from GA4's own TOTAL aggregation (users are
// counted once across the period, not summed per day).
func (p *pack) analyticsSummary(ctx context.Context, c *executor.Call, in dateRangeInput) (*analyticsOutput, error) {
	if p.cfg.GA4.PropertyID == "" || !p.google.configured() {
		return nil, executor.NotConfigured("Google Analytics is not configured: a GA4 property id and Google credentials are needed", ga4RequiredEnv,
			"Set "+integrationspack.EnvGA4PropertyID+" to the numeric id of the GA4 property (Admin → Property details).",
			googleCredentialSteps+" The scope needed is https://www.googleapis.com/auth/analytics.readonly.")
	}
	if err := p.google.urlNotConfigured(integrationspack.EnvGA4BaseURL, p.cfg.GA4.BaseURL); err != nil {
		return nil, err
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	token, err := p.google.accessToken(ctx)
	if err != nil {
		return nil, readFailure(err, ga4RequiredEnv, googleCredentialSteps)
	}
	conv := p.cfg.GA4.ConversionsMetric
	type named struct {
		Name string `json:"name"`
	}
	type value struct {
		Value string `json:"value"`
	}
	type row struct {
		DimensionValues []value `json:"dimensionValues"`
		RawMetrics      []value `json:"metricValues"`
	}
	var report struct {
		MetricHeaders []named `json:"metricHeaders"`
		Rows          []row   `json:"rows"`
		Totals        []row   `json:"totals"`
	}
	err = do(ctx, p.cfg.HTTPClient, apiRequest{
		provider: "Google Analytics", method: http.MethodPost,
		url:    p.cfg.GA4.BaseURL + "/v1beta/properties/" + url.PathEscape(strings.TrimPrefix(p.cfg.GA4.PropertyID, "properties/")) + ":runReport",
		header: http.Header{"Authorization": {"Bearer " + token}},
		body: map[string]any{
			"dateRanges":         []map[string]string{{"startDate": in.From, "endDate": in.To}},
			"dimensions":         []named{{"date"}},
			"metrics":            []named{{"sessions"}, {"totalUsers"}, {conv}},
			"orderBys":           []map[string]any{{"dimension": map[string]string{"dimensionName": "date"}}},
			"metricAggregations": []string{"TOTAL"},
			"keepEmptyRows":      true,
		},
		errorMessage: googleErrorMessage,
	}, &report)
	if err != nil {
		return nil, readFailure(err, ga4RequiredEnv, googleCredentialSteps,
			"Check that the Analytics Data API is enabled and the credentials' user can read property "+p.cfg.GA4.PropertyID+".",
			"If the conversions metric is refused, set "+integrationspack.EnvGA4ConversionsMetric+" (keyEvents, or conversions on older properties).")
	}
	col := map[string]int{}
	for i, h := range report.MetricHeaders {
		col[h.Name] = i
	}
	metric := func(r row, name string) float64 {
		i, ok := col[name]
		if !ok || i >= len(r.RawMetrics) {
			return 0
		}
		f, _ := strconv.ParseFloat(r.RawMetrics[i].Value, 64)
		return f
	}
	s := analyticsSummary{Source: "ga4", PropertyID: p.cfg.GA4.PropertyID, From: in.From, To: in.To, ConversionsMetric: conv, ByDate: []analyticsDay{}}
	for _, r := range report.Rows {
		if len(r.DimensionValues) == 0 {
			continue
		}
		d, err := time.Parse("20060102", r.DimensionValues[0].Value)
		if err != nil {
			continue
		}
		day := analyticsDay{Date: d.Format(time.DateOnly), Sessions: int64(metric(r, "sessions")), Users: int64(metric(r, "totalUsers")),
			Conversions: round2(metric(r, conv))}
		s.ByDate = append(s.ByDate, day)
		s.Totals.Sessions += day.Sessions
		s.Totals.Conversions += day.Conversions
		s.Totals.Users += day.Users
	}
	if len(report.Totals) > 0 {
		t := report.Totals[0]
		s.Totals = analyticsTotals{Sessions: int64(metric(t, "sessions")), Users: int64(metric(t, "totalUsers")), Conversions: round2(metric(t, conv))}
	}
	s.Totals.Conversions = round2(s.Totals.Conversions)
	sort.Slice(s.ByDate, func(i, j int) bool { return s.ByDate[i].Date < s.ByDate[j].Date })
	return &analyticsOutput{Summary: s}, nil
}

// --- integrations.ads.pull_summary (Google Ads, Meta) ---

type adsInput struct {
	Channel string `json:"channel"`
	dateRangeInput
}

type adsMetrics struct {
	Spend       float64 `json:"spend"`
	Clicks      int64   `json:"clicks"`
	Impressions int64   `json:"impressions"`
	Conversions float64 `json:"conversions"`
}

type adsDay struct {
	Date string `json:"date"`
	adsMetrics
}

type adsSummary struct {
	Channel   string     `json:"channel"`
	AccountID string     `json:"account_id"`
	Currency  string     `json:"currency,omitempty"`
	From      string     `json:"from"`
	To        string     `json:"to"`
	Totals    adsMetrics `json:"totals"`
	ByDate    []adsDay   `json:"by_date"`
}

type adsOutput struct {
	Summary adsSummary `json:"summary"`
}

func (s *adsSummary) add(date string, m adsMetrics) {
	for i := range s.ByDate {
		if s.ByDate[i].Date == date {
			d := &s.ByDate[i].adsMetrics
			d.Spend, d.Clicks, d.Impressions, d.Conversions = d.Spend+m.Spend, d.Clicks+m.Clicks, d.Impressions+m.Impressions, d.Conversions+m.Conversions
			return
		}
	}
	s.ByDate = append(s.ByDate, adsDay{Date: date, adsMetrics: m})
}

// finish rounds money and conversions, sorts the days and totals them.
func (s *adsSummary) finish() {
	sort.Slice(s.ByDate, func(i, j int) bool { return s.ByDate[i].Date < s.ByDate[j].Date })
	s.Totals = adsMetrics{}
	for i := range s.ByDate {
		d := &s.ByDate[i].adsMetrics
		d.Spend, d.Conversions = round2(d.Spend), round2(d.Conversions)
		s.Totals.Spend += d.Spend
		s.Totals.Clicks += d.Clicks
		s.Totals.Impressions += d.Impressions
		s.Totals.Conversions += d.Conversions
	}
	s.Totals.Spend, s.Totals.Conversions = round2(s.Totals.Spend), round2(s.Totals.Conversions)
}

var (
	googleAdsRequiredEnv = append([]string{integrationspack.EnvGoogleAdsDeveloperToken, integrationspack.EnvGoogleAdsCustomerID}, googleCredentialEnv...)
	metaRequiredEnv      = []string{integrationspack.EnvMetaAccessToken, integrationspack.EnvMetaAdAccountID}
)

// adsSummary reports spend, clicks, impressions and conversions per day and in total for one ads channel.
func (p *pack) adsSummary(ctx context.Context, c *executor.Call, in adsInput) (*adsOutput, error) {
	switch in.Channel {
	case "google_ads":
		if p.cfg.GoogleAds.DeveloperToken == "" || p.cfg.GoogleAds.CustomerID == "" || !p.google.configured() {
			return nil, executor.NotConfigured("Google Ads is not configured: a developer token, a customer id and Google credentials are needed", googleAdsRequiredEnv,
				"Set "+integrationspack.EnvGoogleAdsDeveloperToken+" (API Center of the manager account) and "+integrationspack.EnvGoogleAdsCustomerID+" (the account reported on, 123-456-7890).",
				"Set "+integrationspack.EnvGoogleAdsLoginCustomer+" to the manager account's id when access to the account goes through it.",
				googleCredentialSteps+" The scope needed is https://www.googleapis.com/auth/adwords.")
		}
		if err := p.google.urlNotConfigured(integrationspack.EnvGoogleAdsBaseURL, p.cfg.GoogleAds.BaseURL); err != nil {
			return nil, err
		}
		if err := in.check(); err != nil {
			return nil, err
		}
		return p.googleAdsSummary(ctx, in.dateRangeInput)
	case "meta":
		if p.cfg.Meta.AccessToken == "" || p.cfg.Meta.AdAccountID == "" {
			return nil, executor.NotConfigured("Meta ads are not configured: an access token and an ad account id are needed", metaRequiredEnv,
				"Set "+integrationspack.EnvMetaAccessToken+" to a token with the ads_read permission (a system user's token does not expire).",
				"Set "+integrationspack.EnvMetaAdAccountID+" to the ad account id (act_1234567890 or 1234567890).")
		}
		if err := urlNotConfigured(integrationspack.EnvMetaGraphBaseURL, p.cfg.Meta.BaseURL); err != nil {
			return nil, err
		}
		if err := in.check(); err != nil {
			return nil, err
		}
		return p.metaSummary(ctx, in.dateRangeInput)
	}
	return nil, executor.Invalid("channel %q is not google_ads or meta", in.Channel)
}

// googleAdsSummary runs a GAQL query through GoogleAdsService.SearchStream
// (POST /{version}/customers/{id}/googleAds:searchStream), one row per day.
func (p *pack) googleAdsSummary(ctx context.Context, in dateRangeInput) (*adsOutput, error) {
	cfg := p.cfg.GoogleAds
	token, err := p.google.accessToken(ctx)
	if err != nil {
		return nil, readFailure(err, googleAdsRequiredEnv, googleCredentialSteps)
	}
	header := http.Header{"Authorization": {"Bearer " + token}, "developer-token": {cfg.DeveloperToken}}
	if cfg.LoginCustomerID != "" {
		header.Set("login-customer-id", cfg.LoginCustomerID)
	}
	query := fmt.Sprintf("SELECT segments.date, customer.currency_code, metrics.cost_micros, metrics.clicks, metrics.impressions, metrics.conversions "+
		"FROM customer WHERE segments.date BETWEEN '%s' AND '%s' ORDER BY segments.date", in.From, in.To)
	var batches []struct {
		Results []struct {
			Customer struct {
				CurrencyCode string `json:"currencyCode"`
			} `json:"customer"`
			Segments struct {
				Date string `json:"date"`
			} `json:"segments"`
			Metrics struct {
				CostMicros  number `json:"costMicros"`
				Clicks      number `json:"clicks"`
				Impressions number `json:"impressions"`
				Conversions number `json:"conversions"`
			} `json:"metrics"`
		} `json:"results"`
	}
	err = do(ctx, p.cfg.HTTPClient, apiRequest{
		provider: "Google Ads", method: http.MethodPost,
		url:          cfg.BaseURL + "/" + cfg.APIVersion + "/customers/" + url.PathEscape(cfg.CustomerID) + "/googleAds:searchStream",
		header:       header,
		body:         map[string]string{"query": query},
		errorMessage: googleAdsErrorMessage,
	}, &batches)
	if err != nil {
		return nil, readFailure(err, googleAdsRequiredEnv, googleCredentialSteps,
			"Check that the developer token is approved for the account and "+integrationspack.EnvGoogleAdsLoginCustomer+" names the manager account when one is used.")
	}
	s := adsSummary{Channel: "google_ads", AccountID: cfg.CustomerID, From: in.From, To: in.To, ByDate: []adsDay{}}
	for _, b := range batches {
		for _, r := range b.Results {
			if r.Customer.CurrencyCode != "" {
				s.Currency = r.Customer.CurrencyCode
			}
			s.add(r.Segments.Date, adsMetrics{Spend: float64(r.Metrics.CostMicros) / 1e6, Clicks: int64(r.Metrics.Clicks),
				Impressions: int64(r.Metrics.Impressions), Conversions: float64(r.Metrics.Conversions)})
		}
	}
	s.finish()
	return &adsOutput{Summary: s}, nil
}

// metaRateLimitCodes are Graph API error codes that mean "slow down" (answered with HTTP 400 or 403).
var metaRateLimitCodes = map[int]bool{4: true, 17: true, 32: true, 613: true, 80000: true, 80003: true, 80004: true, 80014: true}

// metaFailure reads Meta's error body ({"error": {"message", "type", "code", "fbtrace_id"}}) and recasts
// rate limits as 429 and expired or invalid tokens (code 190) as 401.
func metaFailure(err error) error {
	pe, ok := asProviderError(err)
	if !ok || pe.Status == 0 {
		return err
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(pe.body, &body) == nil && body.Error.Message != "" {
		pe.Message = fmt.Sprintf("%s (code %d)", body.Error.Message, body.Error.Code)
		switch {
		case metaRateLimitCodes[body.Error.Code]:
			pe.Status = http.StatusTooManyRequests
		case body.Error.Code == 190:
			pe.Status = http.StatusUnauthorized
		}
	}
	return pe
}

// metaSummary reads the ad account's insights (GET /{version}/act_{id}/insights), one row per day,
// following the paging links. Conversions are the actions of the configured types.
func (p *pack) metaSummary(ctx context.Context, in dateRangeInput) (*adsOutput, error) {
	cfg := p.cfg.Meta
	account := strings.TrimPrefix(cfg.AdAccountID, "act_")
	timeRange, _ := json.Marshal(map[string]string{"since": in.From, "until": in.To})
	params := url.Values{
		"level":          {"account"},
		"fields":         {"spend,clicks,impressions,actions,account_currency"},
		"time_range":     {string(timeRange)},
		"time_increment": {"1"},
		"limit":          {"100"},
	}
	next := cfg.BaseURL + "/" + cfg.APIVersion + "/act_" + url.PathEscape(account) + "/insights?" + params.Encode()
	base, _ := url.Parse(cfg.BaseURL)
	conversions := map[string]bool{}
	for _, a := range cfg.ConversionActions {
		conversions[a] = true
	}
	s := adsSummary{Channel: "meta", AccountID: "act_" + account, From: in.From, To: in.To, ByDate: []adsDay{}}
	for page := 0; next != "" && page < 50; page++ {
		var resp struct {
			Data []struct {
				Spend       number `json:"spend"`
				Clicks      number `json:"clicks"`
				Impressions number `json:"impressions"`
				Currency    string `json:"account_currency"`
				DateStart   string `json:"date_start"`
				Actions     []struct {
					ActionType string `json:"action_type"`
					Value      number `json:"value"`
				} `json:"actions"`
			} `json:"data"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		err := do(ctx, p.cfg.HTTPClient, apiRequest{
			provider: "Meta", method: http.MethodGet, url: next,
			header: http.Header{"Authorization": {"Bearer " + cfg.AccessToken}},
		}, &resp)
		if err != nil {
			return nil, readFailure(metaFailure(err), metaRequiredEnv,
				"Check that the token has ads_read and its user or system user is assigned to ad account act_"+account+".")
		}
		for _, d := range resp.Data {
			m := adsMetrics{Spend: float64(d.Spend), Clicks: int64(d.Clicks), Impressions: int64(d.Impressions)}
			for _, a := range d.Actions {
				if conversions[a.ActionType] {
					m.Conversions += float64(a.Value)
				}
			}
			if d.Currency != "" {
				s.Currency = d.Currency
			}
			s.add(d.DateStart, m)
		}
		next = ""
		// Follow only links back to the configured Graph API (the token goes with them).
		if u, err := url.Parse(resp.Paging.Next); err == nil && resp.Paging.Next != "" && base != nil && u.Host == base.Host {
			next = resp.Paging.Next
		}
	}
	s.finish()
	return &adsOutput{Summary: s}, nil
}
