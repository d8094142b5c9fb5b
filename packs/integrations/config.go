package integrationspack

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry/settings"
)

// Environment variables read by ConfigFromEnv. docs/integrations.md explains each one.
const (
	EnvHighLevelToken      = "GEM_HIGHLEVEL_TOKEN"
	EnvHighLevelLocationID = "GEM_HIGHLEVEL_LOCATION_ID"
	EnvHighLevelBaseURL    = "GEM_HIGHLEVEL_BASE_URL"
	EnvHighLevelAPIVersion = "GEM_HIGHLEVEL_API_VERSION"
	// The HighLevel pipeline: the executor moves opportunities through its stages
	// (integrations.highlevel.update_lead_stage); the brain's webhook maps HighLevel's stage moves back to
	// GEM's leads. Both read them here (ConfigFromEnv, HighLevelPipelineFromEnv).
	EnvHighLevelPipelineID       = "GEM_HIGHLEVEL_PIPELINE_ID"
	EnvHighLevelStageIDs         = "GEM_HIGHLEVEL_STAGE_IDS"
	EnvHighLevelTaskDueDays      = "GEM_HIGHLEVEL_TASK_DUE_DAYS"
	EnvHighLevelRetryMaxAttempts = "GEM_HIGHLEVEL_RETRY_MAX_ATTEMPTS"
	EnvHighLevelRetryBaseDelay   = "GEM_HIGHLEVEL_RETRY_BASE_DELAY"
	EnvHighLevelRetryMaxDelay    = "GEM_HIGHLEVEL_RETRY_MAX_DELAY"

	EnvGoogleAccessToken       = "GEM_GOOGLE_ACCESS_TOKEN"
	EnvGoogleOAuthClientID     = "GEM_GOOGLE_OAUTH_CLIENT_ID"
	EnvGoogleOAuthClientSecret = "GEM_GOOGLE_OAUTH_CLIENT_SECRET"
	EnvGoogleOAuthRefreshToken = "GEM_GOOGLE_OAUTH_REFRESH_TOKEN"
	EnvGoogleOAuthTokenURL     = "GEM_GOOGLE_OAUTH_TOKEN_URL"
	EnvGoogleDriveBaseURL      = "GEM_GOOGLE_DRIVE_BASE_URL"

	EnvGA4PropertyID        = "GEM_GA4_PROPERTY_ID"
	EnvGA4BaseURL           = "GEM_GA4_BASE_URL"
	EnvGA4ConversionsMetric = "GEM_GA4_CONVERSIONS_METRIC"

	EnvGoogleAdsDeveloperToken = "GEM_GOOGLE_ADS_DEVELOPER_TOKEN"
	EnvGoogleAdsCustomerID     = "GEM_GOOGLE_ADS_CUSTOMER_ID"
	EnvGoogleAdsLoginCustomer  = "GEM_GOOGLE_ADS_LOGIN_CUSTOMER_ID"
	EnvGoogleAdsBaseURL        = "GEM_GOOGLE_ADS_BASE_URL"
	EnvGoogleAdsAPIVersion     = "GEM_GOOGLE_ADS_API_VERSION"

	EnvMetaAccessToken       = "GEM_META_ACCESS_TOKEN"
	EnvMetaAdAccountID       = "GEM_META_AD_ACCOUNT_ID"
	EnvMetaGraphBaseURL      = "GEM_META_GRAPH_BASE_URL"
	EnvMetaAPIVersion        = "GEM_META_API_VERSION"
	EnvMetaConversionActions = "GEM_META_CONVERSION_ACTIONS"
)

// Defaults of Config.
const (
	// HighLevelBaseURLDefault is LeadConnector's API v2.
	HighLevelBaseURLDefault = "https://services.leadconnectorhq.com"
	// HighLevelAPIVersionDefault is the Version header LeadConnector's v2 endpoints ask for.
	HighLevelAPIVersionDefault = "2021-07-28"
	// HighLevelTaskDueDaysDefault is how many days after a quote is synced its follow-up task is due.
	HighLevelTaskDueDaysDefault = 2
	// HighLevelRetryMaxAttemptsDefault is how many times a queued HighLevel operation is tried in all.
	HighLevelRetryMaxAttemptsDefault = 8
	// HighLevelRetryBaseDelayDefault is the wait before the first retry; it doubles with every attempt.
	HighLevelRetryBaseDelayDefault = 30 * time.Second
	// HighLevelRetryMaxDelayDefault caps the wait between two attempts.
	HighLevelRetryMaxDelayDefault = time.Hour

	// GoogleOAuthTokenURLDefault is Google's OAuth 2.0 token endpoint.
	GoogleOAuthTokenURLDefault = "https://oauth2.googleapis.com/token"
	// GoogleDriveBaseURLDefault is where Drive API v3 lives ({base}/drive/v3/files).
	GoogleDriveBaseURLDefault = "https://www.googleapis.com"
	// GA4BaseURLDefault is the Google Analytics Data API.
	GA4BaseURLDefault = "https://analyticsdata.googleapis.com"
	// GA4ConversionsMetricDefault is the GA4 metric reported as conversions (GA4 calls conversions key events).
	GA4ConversionsMetricDefault = "keyEvents"
	// GoogleAdsBaseURLDefault is the Google Ads API's REST endpoint.
	GoogleAdsBaseURLDefault = "https://googleads.googleapis.com"
	// GoogleAdsAPIVersionDefault is the Google Ads API version called.
	GoogleAdsAPIVersionDefault = "v24"

	// MetaGraphBaseURLDefault is Meta's Graph API.
	MetaGraphBaseURLDefault = "https://graph.facebook.com"
	// MetaAPIVersionDefault is the Graph API version called.
	MetaAPIVersionDefault = "v23.0"
	// MetaConversionActionsDefault are the insights action types counted as conversions.
	MetaConversionActionsDefault = "lead"
)

// HighLevelPipeline is the HighLevel pipeline GEM follows.
type HighLevelPipeline struct {
	// ID is the pipeline whose stage moves become GEM stage moves. No default (any pipeline).
	ID string
	// StageByID maps HighLevel pipeline stage ids to GEM stages. No default (stage moves are ignored).
	StageByID map[string]string
}

// GEMStages are the lead stages a HighLevel pipeline stage can be mapped to (GEM_HIGHLEVEL_STAGE_IDS): the
// business pack's.
var GEMStages = businesspack.LeadStages

// HighLevelPipelineFromEnv reads the pipeline through getenv as the executor reads it (ConfigFromEnv), and
// nothing else: GEM_HIGHLEVEL_PIPELINE_ID and GEM_HIGHLEVEL_STAGE_IDS, the brain's only settings of this
// pack. A value the executor refuses maps no stage here either; the executor reports it at start.
func HighLevelPipelineFromEnv(getenv func(string) string) HighLevelPipeline {
	p := HighLevelPipeline{ID: strings.TrimSpace(getenv(EnvHighLevelPipelineID)), StageByID: map[string]string{}}
	stages, err := ParseStageIDs(strings.TrimSpace(getenv(EnvHighLevelStageIDs)))
	if err != nil {
		return p
	}
	for stage, id := range stages {
		p.StageByID[id] = stage
	}
	return p
}

// ParseStageIDs reads GEM_HIGHLEVEL_STAGE_IDS: comma-separated stage=id pairs, such as
// "new=5f1c...,quoted=9a2b...,won=77de...". Stages are those of GEMStages.
func ParseStageIDs(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		stage, id, ok := strings.Cut(pair, "=")
		stage, id = strings.TrimSpace(stage), strings.TrimSpace(id)
		if !ok || id == "" {
			return nil, fmt.Errorf("%s: %q is not stage=pipeline_stage_id", EnvHighLevelStageIDs, pair)
		}
		if !slices.Contains(GEMStages, stage) {
			return nil, fmt.Errorf("%s: %q is not a GEM stage (%s)", EnvHighLevelStageIDs, stage, strings.Join(GEMStages, ", "))
		}
		m[stage] = id
	}
	return m, nil
}

// Config configures the integrations pack. The zero value works: every outside provider is unconfigured
// (its tools answer not_configured) and integrations.google_photos.import_links, which needs only the
// database, works. The SMS and email health checks and the contact sync's phone region read the business
// pack's settings, which the executor's Main hands to the pack's Register beside this Config.
type Config struct {
	// HighLevel configures the integrations.highlevel.* tools (LeadConnector API v2).
	HighLevel HighLevelConfig
	// Google configures the credentials of integrations.google_drive.search, analytics.pull_summary and
	// ads.pull_summary's google_ads channel.
	Google GoogleConfig
	// GA4 configures integrations.analytics.pull_summary (Google Analytics 4 Data API).
	GA4 GA4Config
	// GoogleAds configures integrations.ads.pull_summary with channel google_ads.
	GoogleAds GoogleAdsConfig
	// Meta configures integrations.ads.pull_summary with channel meta (Marketing API insights).
	Meta MetaConfig
	// HTTPClient makes every request; each call's deadline bounds it. Defaults to a client of its own.
	HTTPClient *http.Client
	// envProblems are the variables ConfigFromEnv could not read, by name (Problems lists them). A number
	// or a delay that cannot be read is left at its default, stages that cannot be read are left unmapped,
	// and a base URL that is not http(s) is kept as it is.
	envProblems map[string]string
}

// Problems lists the settings ConfigFromEnv could not read, each error naming its variable, in the
// variables' order.
func (c Config) Problems() []error {
	names := slices.Sorted(maps.Keys(c.envProblems))
	problems := make([]error, 0, len(names))
	for _, name := range names {
		problems = append(problems, errors.New(c.envProblems[name]))
	}
	return problems
}

// HighLevelConfig configures LeadConnector API v2. Token and LocationID are required.
type HighLevelConfig struct {
	// Token is a Private Integration token or an OAuth access token of the sub-account (location), sent as
	// Authorization: Bearer. Scopes used: locations.readonly, contacts.readonly, contacts.write,
	// opportunities.readonly, opportunities.write. No default.
	Token string
	// LocationID is the sub-account synced. No default.
	LocationID string
	// BaseURL is the API's address; tests point it at a fake. Defaults to HighLevelBaseURLDefault.
	BaseURL string
	// APIVersion is the Version header. Defaults to HighLevelAPIVersionDefault.
	APIVersion string
	// PipelineID is the pipeline whose opportunities follow GEM's lead stages. Without it stages are not
	// moved (update_lead_stage answers not_configured). No default.
	PipelineID string
	// StageIDs maps GEM stages (GEMStages) to the pipeline's stage ids. No default.
	StageIDs map[string]string
	// TaskDueDays is when a quote's follow-up task is due, in days. Defaults to HighLevelTaskDueDaysDefault.
	TaskDueDays int
	// RetryMaxAttempts is how many times a queued operation is tried in all. Defaults to
	// HighLevelRetryMaxAttemptsDefault.
	RetryMaxAttempts int
	// RetryBaseDelay is the wait before the first retry. Defaults to HighLevelRetryBaseDelayDefault.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the wait between attempts. Defaults to HighLevelRetryMaxDelayDefault.
	RetryMaxDelay time.Duration
}

// GoogleConfig is how GEM gets a Google OAuth access token: a fixed AccessToken, or a refresh token that
// is exchanged for access tokens (ClientID, ClientSecret, RefreshToken). The refresh token wins when both
// are set.
type GoogleConfig struct {
	// AccessToken is an OAuth 2.0 access token with the scopes of the tools used (drive.readonly,
	// analytics.readonly, adwords). It expires (usually after an hour). No default.
	AccessToken string
	// ClientID, ClientSecret and RefreshToken are an OAuth client and a refresh token granted to it. No
	// default.
	ClientID, ClientSecret, RefreshToken string
	// TokenURL is the token endpoint. Defaults to GoogleOAuthTokenURLDefault.
	TokenURL string
	// DriveBaseURL is the Drive API's address. Defaults to GoogleDriveBaseURLDefault.
	DriveBaseURL string
}

// GA4Config configures the Analytics Data API. PropertyID is required.
type GA4Config struct {
	// PropertyID is the numeric GA4 property id. No default.
	PropertyID string
	// BaseURL is the API's address. Defaults to GA4BaseURLDefault.
	BaseURL string
	// ConversionsMetric is the metric reported as conversions. Defaults to GA4ConversionsMetricDefault.
	ConversionsMetric string
}

// GoogleAdsConfig configures the Google Ads API. DeveloperToken and CustomerID are required.
type GoogleAdsConfig struct {
	// DeveloperToken is the developer-token header. No default.
	DeveloperToken string
	// CustomerID is the account reported on, digits only (dashes are removed). No default.
	CustomerID string
	// LoginCustomerID is the manager account the token's user reaches CustomerID through (login-customer-id
	// header). No default (not sent).
	LoginCustomerID string
	// BaseURL is the API's address. Defaults to GoogleAdsBaseURLDefault.
	BaseURL string
	// APIVersion is the path version. Defaults to GoogleAdsAPIVersionDefault.
	APIVersion string
}

// MetaConfig configures Meta's Marketing API. AccessToken and AdAccountID are required.
type MetaConfig struct {
	// AccessToken is a token with ads_read (a system user's long-lived token). No default.
	AccessToken string
	// AdAccountID is the ad account, with or without its act_ prefix. No default.
	AdAccountID string
	// BaseURL is the Graph API's address. Defaults to MetaGraphBaseURLDefault.
	BaseURL string
	// APIVersion is the Graph API version. Defaults to MetaAPIVersionDefault.
	APIVersion string
	// ConversionActions are the action types summed as conversions. Defaults to MetaConversionActionsDefault.
	ConversionActions []string
}

// ConfigFromEnv reads the configuration from environment variables (the executor's Main passes os.Getenv).
// A value that cannot be read does not stop the executor: Problems lists it, and Main reports it at start.
func ConfigFromEnv(getenv func(string) string) Config {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	problems := map[string]string{}
	atoi := func(k string) int {
		s := get(k)
		if s == "" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			problems[k] = fmt.Sprintf("%s=%q is not a positive whole number", k, s)
			return 0
		}
		return n
	}
	duration := func(k string) time.Duration {
		s := get(k)
		if s == "" {
			return 0
		}
		d, err := settings.ParseDuration(k, s)
		if err != nil {
			problems[k] = err.Error()
		}
		return d
	}
	stages, err := ParseStageIDs(get(EnvHighLevelStageIDs))
	if err != nil {
		problems[EnvHighLevelStageIDs] = err.Error()
	}
	cfg := Config{
		HighLevel: HighLevelConfig{
			Token:            get(EnvHighLevelToken),
			LocationID:       get(EnvHighLevelLocationID),
			BaseURL:          get(EnvHighLevelBaseURL),
			APIVersion:       get(EnvHighLevelAPIVersion),
			PipelineID:       get(EnvHighLevelPipelineID),
			StageIDs:         stages,
			TaskDueDays:      atoi(EnvHighLevelTaskDueDays),
			RetryMaxAttempts: atoi(EnvHighLevelRetryMaxAttempts),
			RetryBaseDelay:   duration(EnvHighLevelRetryBaseDelay),
			RetryMaxDelay:    duration(EnvHighLevelRetryMaxDelay),
		},
		Google: GoogleConfig{
			AccessToken:  get(EnvGoogleAccessToken),
			ClientID:     get(EnvGoogleOAuthClientID),
			ClientSecret: get(EnvGoogleOAuthClientSecret),
			RefreshToken: get(EnvGoogleOAuthRefreshToken),
			TokenURL:     get(EnvGoogleOAuthTokenURL),
			DriveBaseURL: get(EnvGoogleDriveBaseURL),
		},
		GA4: GA4Config{
			PropertyID:        get(EnvGA4PropertyID),
			BaseURL:           get(EnvGA4BaseURL),
			ConversionsMetric: get(EnvGA4ConversionsMetric),
		},
		GoogleAds: GoogleAdsConfig{
			DeveloperToken:  get(EnvGoogleAdsDeveloperToken),
			CustomerID:      get(EnvGoogleAdsCustomerID),
			LoginCustomerID: get(EnvGoogleAdsLoginCustomer),
			BaseURL:         get(EnvGoogleAdsBaseURL),
			APIVersion:      get(EnvGoogleAdsAPIVersion),
		},
		Meta: MetaConfig{
			AccessToken:       get(EnvMetaAccessToken),
			AdAccountID:       get(EnvMetaAdAccountID),
			BaseURL:           get(EnvMetaGraphBaseURL),
			APIVersion:        get(EnvMetaAPIVersion),
			ConversionActions: splitList(get(EnvMetaConversionActions)),
		},
	}
	for _, base := range []struct{ env, value string }{
		{EnvHighLevelBaseURL, cfg.HighLevel.BaseURL}, {EnvGoogleOAuthTokenURL, cfg.Google.TokenURL},
		{EnvGoogleDriveBaseURL, cfg.Google.DriveBaseURL}, {EnvGA4BaseURL, cfg.GA4.BaseURL},
		{EnvGoogleAdsBaseURL, cfg.GoogleAds.BaseURL}, {EnvMetaGraphBaseURL, cfg.Meta.BaseURL},
	} {
		if base.value == "" {
			continue
		}
		if err := settings.HTTPURLProblem(base.env, base.value); err != nil {
			problems[base.env] = err.Error()
		}
	}
	if len(problems) > 0 {
		cfg.envProblems = problems
	}
	return cfg
}

// WithDefaults returns the config with defaults in place of zero values.
func (c Config) WithDefaults() Config {
	hl := &c.HighLevel
	hl.BaseURL = strings.TrimRight(cmp.Or(hl.BaseURL, HighLevelBaseURLDefault), "/")
	hl.APIVersion = cmp.Or(hl.APIVersion, HighLevelAPIVersionDefault)
	if hl.TaskDueDays == 0 {
		hl.TaskDueDays = HighLevelTaskDueDaysDefault
	}
	if hl.RetryMaxAttempts == 0 {
		hl.RetryMaxAttempts = HighLevelRetryMaxAttemptsDefault
	}
	if hl.RetryBaseDelay == 0 {
		hl.RetryBaseDelay = HighLevelRetryBaseDelayDefault
	}
	if hl.RetryMaxDelay == 0 {
		hl.RetryMaxDelay = HighLevelRetryMaxDelayDefault
	}
	c.Google.TokenURL = cmp.Or(c.Google.TokenURL, GoogleOAuthTokenURLDefault)
	c.Google.DriveBaseURL = strings.TrimRight(cmp.Or(c.Google.DriveBaseURL, GoogleDriveBaseURLDefault), "/")
	c.GA4.BaseURL = strings.TrimRight(cmp.Or(c.GA4.BaseURL, GA4BaseURLDefault), "/")
	c.GA4.ConversionsMetric = cmp.Or(c.GA4.ConversionsMetric, GA4ConversionsMetricDefault)
	c.GoogleAds.BaseURL = strings.TrimRight(cmp.Or(c.GoogleAds.BaseURL, GoogleAdsBaseURLDefault), "/")
	c.GoogleAds.APIVersion = cmp.Or(c.GoogleAds.APIVersion, GoogleAdsAPIVersionDefault)
	c.GoogleAds.CustomerID = strings.ReplaceAll(c.GoogleAds.CustomerID, "-", "")
	c.GoogleAds.LoginCustomerID = strings.ReplaceAll(c.GoogleAds.LoginCustomerID, "-", "")
	c.Meta.BaseURL = strings.TrimRight(cmp.Or(c.Meta.BaseURL, MetaGraphBaseURLDefault), "/")
	c.Meta.APIVersion = cmp.Or(c.Meta.APIVersion, MetaAPIVersionDefault)
	if len(c.Meta.ConversionActions) == 0 {
		c.Meta.ConversionActions = splitList(MetaConversionActionsDefault)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Variables are the variables ConfigFromEnv reads, with their defaults, as docs/integrations.md lists them.
// The SMS and email health checks read the business pack's variables, listed there.
func Variables() []settings.Variable {
	return []settings.Variable{
		{Name: EnvHighLevelToken, Default: settings.Unset, Description: "HighLevel Private Integration or OAuth token, for integrations.highlevel.*"},
		{Name: EnvHighLevelLocationID, Default: settings.Unset, Description: "HighLevel location (sub-account) id"},
		{Name: EnvHighLevelBaseURL, Default: HighLevelBaseURLDefault, Description: "LeadConnector API"},
		{Name: EnvHighLevelAPIVersion, Default: HighLevelAPIVersionDefault, Description: "LeadConnector Version header"},
		{Name: EnvHighLevelPipelineID, Default: settings.Unset, Description: "pipeline whose opportunities follow GEM's lead stages"},
		{Name: EnvHighLevelStageIDs, Default: settings.Unset, Description: "stage=pipeline_stage_id pairs, comma-separated"},
		{Name: EnvHighLevelTaskDueDays, Default: strconv.Itoa(HighLevelTaskDueDaysDefault), Description: "days until a quote's follow-up task is due"},
		{Name: EnvHighLevelRetryMaxAttempts, Default: strconv.Itoa(HighLevelRetryMaxAttemptsDefault), Description: "tries of a queued HighLevel operation in all"},
		{Name: EnvHighLevelRetryBaseDelay, Default: settings.FormatDuration(HighLevelRetryBaseDelayDefault), Description: "wait before the first retry (doubles per attempt, with jitter)"},
		{Name: EnvHighLevelRetryMaxDelay, Default: settings.FormatDuration(HighLevelRetryMaxDelayDefault), Description: "longest wait between two attempts"},
		{Name: EnvGoogleOAuthClientID, Default: settings.Unset, Description: "Google OAuth client id (with the secret and a refresh token)"},
		{Name: EnvGoogleOAuthClientSecret, Default: settings.Unset, Description: "Google OAuth client secret"},
		{Name: EnvGoogleOAuthRefreshToken, Default: settings.Unset, Description: "Google OAuth refresh token, exchanged for access tokens"},
		{Name: EnvGoogleAccessToken, Default: settings.Unset, Description: "a Google OAuth access token, instead of the refresh token (expires)"},
		{Name: EnvGoogleOAuthTokenURL, Default: GoogleOAuthTokenURLDefault, Description: "Google's token endpoint"},
		{Name: EnvGoogleDriveBaseURL, Default: GoogleDriveBaseURLDefault, Description: "Drive API"},
		{Name: EnvGA4PropertyID, Default: settings.Unset, Description: "GA4 property id, for integrations.analytics.pull_summary"},
		{Name: EnvGA4BaseURL, Default: GA4BaseURLDefault, Description: "Analytics Data API"},
		{Name: EnvGA4ConversionsMetric, Default: GA4ConversionsMetricDefault, Description: "GA4 metric reported as conversions"},
		{Name: EnvGoogleAdsDeveloperToken, Default: settings.Unset, Description: "Google Ads developer token"},
		{Name: EnvGoogleAdsCustomerID, Default: settings.Unset, Description: "Google Ads account reported on"},
		{Name: EnvGoogleAdsLoginCustomer, Default: settings.Unset, Description: "Google Ads manager account used to reach it"},
		{Name: EnvGoogleAdsBaseURL, Default: GoogleAdsBaseURLDefault, Description: "Google Ads API"},
		{Name: EnvGoogleAdsAPIVersion, Default: GoogleAdsAPIVersionDefault, Description: "Google Ads API version"},
		{Name: EnvMetaAccessToken, Default: settings.Unset, Description: "Meta token with ads_read"},
		{Name: EnvMetaAdAccountID, Default: settings.Unset, Description: "Meta ad account (act_...)"},
		{Name: EnvMetaGraphBaseURL, Default: MetaGraphBaseURLDefault, Description: "Graph API"},
		{Name: EnvMetaAPIVersion, Default: MetaAPIVersionDefault, Description: "Graph API version"},
		{Name: EnvMetaConversionActions, Default: MetaConversionActionsDefault, Description: "insights action types counted as conversions"},
	}
}
