package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/devicehub"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/llmconfig"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/phone"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
)

// Config configures the brain. Zero values mean the defaults.
type Config struct {
	// DatabaseURL is the PostgreSQL URL. Required (DATABASE_URL).
	DatabaseURL string
	// SessionURL is where connections that keep a session go (the receipt and device listeners) when
	// DatabaseURL is a pooler in transaction mode. Defaults to DatabaseURL (GEM_DATABASE_SESSION_URL).
	SessionURL string

	// RegistryPath is the registry file. Defaults to tools.registry.json, looked up in the working folder
	// and its parents (GEM_REGISTRY).
	RegistryPath string

	// Addr is the HTTP listen address; ":0" picks a free port. Defaults to 127.0.0.1:8088 (GEM_BRAIN_ADDR).
	Addr string

	// Tokens are the accepted bearer tokens (GEM_BRAIN_TOKENS, comma-separated, each "name:token" or just
	// "token"; or GEM_BRAIN_TOKEN_FILE, one per line). Required unless AuthDisabled.
	Tokens []api.Token

	// AuthDisabled serves without authentication (GEM_BRAIN_AUTH=off). Defaults to false.
	AuthDisabled bool

	// MaxBody is the largest request body in bytes. Defaults to 1 MiB (GEM_BRAIN_MAX_BODY).
	MaxBody int64

	// Secrets seals the secret inputs of the calls the brain makes, and opens them for devices: the key of
	// GEM_SECRET_KEY (with GEM_SECRET_KEY_PREVIOUS, keys being rotated out), the executors' too. Nil
	// without one: a call with a secret input is then refused.
	Secrets *registry.Secrets

	// Timezone interprets dates in messages ("tomorrow", "friday at 10am"). Defaults to the business's
	// time zone, the one the executor's tools read dates in: GEM_BRAIN_TIMEZONE, else
	// GEM_BUSINESS_TIMEZONE, else Australia/Sydney (IANA names).
	Timezone *time.Location

	// PhoneRegion is the region phone numbers in messages are read in when they have no country code, the
	// executor's too: the rules planner asks about a number that is not one there, and the HighLevel webhook
	// finds leads by it. Defaults to AU (GEM_PHONE_REGION; the deprecated GEM_SMS_DEFAULT_COUNTRY_CODE's
	// region when only that is set).
	PhoneRegion string

	// Planner plans POST /brain/run: "rules" (deterministic, no LLM) or "llm" (one LLM turn with every
	// registry tool). Defaults to rules (GEM_BRAIN_PLANNER).
	Planner string

	// LLM configures the LLM for agents and the llm planner (GEM_LLM_*). Without one the rules planner
	// still works and chat answers llm_not_configured.
	LLM llmconfig.Config

	// DBConnectWait is how long start-up keeps trying to reach a database that is down or starting.
	// Defaults to 1m (GEM_DB_CONNECT_WAIT).
	DBConnectWait time.Duration

	// Chat tunes the agent loop (GEM_BRAIN_TOOL_SEARCH_THRESHOLD, GEM_BRAIN_CHAT_WAIT_TIMEOUT,
	// GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN, GEM_BRAIN_RUN_LEASE, GEM_BRAIN_DB_AWAY_WAIT, GEM_BRAIN_CHAT_TEXT_INTERVAL).
	Chat chat.Config

	// ToolSearchMinCoverage is the share of a request the best tool a search finds must hold, or no tool fits
	// it (search_tools, GET /brain/tools?q= and the LLM planner say so). Nil means the default,
	// postgres.ToolSearchMinCoverageDefault; 0 offers whatever matches (GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE).
	ToolSearchMinCoverage *float64

	// DefaultAgent is the agent POST /operator/chat talks to. Defaults to office-assistant
	// (GEM_BRAIN_DEFAULT_AGENT).
	DefaultAgent string

	// HighLevel configures the inbound HighLevel webhook: the keys its deliveries are signed with
	// (GEM_HIGHLEVEL_WEBHOOK_PUBLIC_KEYS; defaults to HighLevel's published key; a key that cannot be read
	// makes the webhook answer 503, not the brain fail to start), and the pipeline whose stage moves it
	// follows (GEM_HIGHLEVEL_PIPELINE_ID, GEM_HIGHLEVEL_STAGE_IDS), which the integrations pack's planning
	// reads.
	HighLevel HighLevelConfig

	// Studio configures the web console at /studio (GEM_STUDIO_SESSION_TTL: how long a login lasts, defaults
	// to 8h; GEM_STUDIO_INSECURE_COOKIE: leave Secure off the session cookie, defaults to false).
	Studio api.StudioConfig

	// Admission limits the requests that plan, enqueue calls and wait for receipts (docs/brain.md#overload):
	// GEM_BRAIN_MAX_IN_FLIGHT run at once (defaults to 64, or three quarters of a database pool larger than
	// 85 connections; off: no limit), GEM_BRAIN_MAX_QUEUE more wait in line (defaults to 4 × in flight; 0:
	// none) for at most GEM_BRAIN_QUEUE_WAIT (defaults to 2s); others get 503 overloaded with Retry-After.
	Admission api.AdmissionConfig

	// Conns bound slow clients on the brain's listener, /mcp included (docs/brain.md#slow-clients):
	// GEM_BRAIN_HEADER_TIMEOUT (10s) to send a request's headers, GEM_BRAIN_BODY_TIMEOUT (30s) its body,
	// GEM_BRAIN_IDLE_TIMEOUT (2m) between requests on a kept-alive connection, and
	// GEM_BRAIN_MAX_CONNS_PER_CLIENT (256; off: none) connections open at once from one address.
	Conns api.ConnLimits

	// MCP configures the MCP server at /mcp and `brain mcp` (GEM_MCP_CALL_WAIT: how long tools/call waits for
	// a receipt before answering pending, 25s; GEM_MCP_TASK_WAIT: how long before answering a client that
	// declared tasks with a task, 1s; GEM_BRAIN_URL: the brain's URL in a held task's approval link).
	MCP mcpserver.Config

	// Devices configures the hub devices connect to at /devices/connect (GEM_DEVICE_HEARTBEAT: how often
	// devices heartbeat, 5s; GEM_DEVICE_MISSED_HEARTBEATS: how many they may miss before they are dead, 3).
	Devices devicehub.Config

	// Telemetry configures /metrics and traces (docs/observability.md): GEM_BRAIN_METRICS=off counts and
	// serves no metrics (defaults to on), GEM_METRICS_TOKEN is a bearer token that opens /metrics alone
	// (defaults to none: a caller's token opens it), and the OTEL_* variables export traces by OTLP/HTTP
	// (defaults to none).
	Telemetry telemetry.Config
}

// BusinessTimezoneDefault is the executor's business time zone when GEM_BUSINESS_TIMEZONE is unset
// (ospack.TimeZoneDefault; the brain does not import the executor).
const BusinessTimezoneDefault = "Australia/Sydney"

// Planners.
const (
	PlannerRules = "rules"
	PlannerLLM   = "llm"
)

// HighLevelConfig configures the inbound HighLevel webhook: the api verifies and records its deliveries,
// and the integrations pack plans the calls they make.
type HighLevelConfig struct {
	Webhook  api.HighLevelWebhookConfig
	Pipeline integrationspack.HighLevelPipeline
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.RegistryPath == "" {
		c.RegistryPath = "tools.registry.json"
	}
	if c.Timezone == nil {
		// The business pack's default zone: a time the brain writes means what the tools read it as.
		if loc, err := time.LoadLocation(BusinessTimezoneDefault); err == nil {
			c.Timezone = loc
		} else {
			c.Timezone = time.Local
		}
	}
	if c.ToolSearchMinCoverage == nil {
		c.ToolSearchMinCoverage = new(float64)
		*c.ToolSearchMinCoverage = postgres.ToolSearchMinCoverageDefault
	}
	c.Chat.ToolSearchMinCoverage = *c.ToolSearchMinCoverage
	if c.DBConnectWait == 0 {
		c.DBConnectWait = gemsql.ConnectWaitDefault
	}
	if c.PhoneRegion == "" {
		c.PhoneRegion = phone.RegionDefault
	}
	if c.HighLevel.Webhook.PhoneRegion == "" {
		c.HighLevel.Webhook.PhoneRegion = c.PhoneRegion
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DatabaseURL is required (set DATABASE_URL)"))
	}
	if err := c.api().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.MCP.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Devices.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := phone.CheckRegion(c.PhoneRegion); err != nil {
		errs = append(errs, err)
	}
	if c.Planner != "" && c.Planner != PlannerRules && c.Planner != PlannerLLM {
		errs = append(errs, fmt.Errorf("Planner must be rules or llm, not %q", c.Planner))
	}
	return errors.Join(errs...)
}

// api is the HTTP API's part of the configuration, with its defaults.
func (c Config) api() api.Config {
	return api.Config{Addr: c.Addr, Tokens: c.Tokens, AuthDisabled: c.AuthDisabled, MaxBody: c.MaxBody, DefaultAgent: c.DefaultAgent,
		ToolSearchMinCoverage: c.Chat.ToolSearchMinCoverage, HighLevel: c.HighLevel.Webhook, Studio: c.Studio, Admission: c.Admission, Conns: c.Conns}.WithDefaults()
}

// ConfigFromEnv reads the configuration from environment variables through getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:  getenv("DATABASE_URL"),
		SessionURL:   getenv("GEM_DATABASE_SESSION_URL"),
		RegistryPath: getenv("GEM_REGISTRY"),
		Addr:         getenv("GEM_BRAIN_ADDR"),
		DefaultAgent: getenv("GEM_BRAIN_DEFAULT_AGENT"),
	}
	var errs []error
	auth, err := envSwitch(getenv, "GEM_BRAIN_AUTH", true)
	errs = append(errs, err)
	c.AuthDisabled = !auth
	c.Tokens = api.ParseTokens(getenv("GEM_BRAIN_TOKENS"), ",")
	if path := getenv("GEM_BRAIN_TOKEN_FILE"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_TOKEN_FILE: %w", err))
		}
		c.Tokens = append(c.Tokens, api.ParseTokens(string(data), "\n")...)
	}
	if s := getenv("GEM_BRAIN_MAX_BODY"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_MAX_BODY: %q is not a number of bytes", s))
		}
		c.MaxBody = n
	}
	// Dates in messages are read in the business's zone unless the brain is given its own.
	for _, name := range []string{"GEM_BRAIN_TIMEZONE", "GEM_BUSINESS_TIMEZONE"} {
		if s := getenv(name); s != "" {
			loc, err := time.LoadLocation(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			c.Timezone = loc
			break
		}
	}
	if s := getenv("GEM_DB_CONNECT_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("GEM_DB_CONNECT_WAIT: %q is not a duration (like 30s)", s))
		}
		c.DBConnectWait = d
	}
	if key := getenv("GEM_SECRET_KEY"); key != "" {
		s, err := registry.NewSecrets(key, strings.Split(getenv("GEM_SECRET_KEY_PREVIOUS"), ",")...)
		if err != nil {
			errs = append(errs, fmt.Errorf("GEM_SECRET_KEY: %w", err))
		}
		c.Secrets = s
	}
	c.PhoneRegion, err = phone.Region(getenv)
	errs = append(errs, err)
	c.HighLevel = HighLevelConfig{Webhook: api.HighLevelWebhookConfigFromEnv(getenv), Pipeline: integrationspack.HighLevelPipelineFromEnv(getenv)}
	if s := getenv("GEM_STUDIO_SESSION_TTL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Minute {
			errs = append(errs, fmt.Errorf("GEM_STUDIO_SESSION_TTL: %q is not a duration of at least 1m (like 8h)", s))
		}
		c.Studio.SessionTTL = d
	}
	c.Studio.InsecureCookie, err = envSwitch(getenv, "GEM_STUDIO_INSECURE_COOKIE", false)
	errs = append(errs, err)
	c.Planner = strings.ToLower(getenv("GEM_BRAIN_PLANNER"))
	llmCfg, err := llmconfig.FromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.LLM = llmCfg
	if s := getenv("GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE: %q is not a number from 0 to 1", s))
		}
		c.ToolSearchMinCoverage = &f
	}
	if s := getenv("GEM_BRAIN_TOOL_SEARCH_THRESHOLD"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_TOOL_SEARCH_THRESHOLD: %q is not a positive number", s))
		}
		c.Chat.ToolSearchThreshold = n
	}
	if s := getenv("GEM_BRAIN_CHAT_WAIT_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_CHAT_WAIT_TIMEOUT: %q is not a duration", s))
		}
		c.Chat.WaitTimeout = d
	}
	if s := getenv("GEM_BRAIN_RUN_LEASE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 300*time.Millisecond {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_RUN_LEASE: %q is not a duration of at least 300ms (like 5s)", s))
		}
		c.Chat.Lease = d
	}
	if s := getenv("GEM_BRAIN_DB_AWAY_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_DB_AWAY_WAIT: %q is not a duration", s))
		}
		c.Chat.AwayWait = d
	}
	if s := getenv("GEM_BRAIN_CHAT_TEXT_INTERVAL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Millisecond {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_CHAT_TEXT_INTERVAL: %q is not a duration of at least 1ms (like 100ms)", s))
		}
		c.Chat.TextInterval = d
	}
	if s := getenv("GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN: %q is not a positive number", s))
		}
		c.Chat.MaxToolCallsPerAnswer = n
	}
	c.Admission, err = admissionFromEnv(getenv)
	errs = append(errs, err)
	c.Conns, err = connLimitsFromEnv(getenv)
	errs = append(errs, err)
	for name, into := range map[string]*time.Duration{"GEM_MCP_CALL_WAIT": &c.MCP.CallWait, "GEM_MCP_TASK_WAIT": &c.MCP.TaskWait} {
		if s := getenv(name); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration (like 25s)", name, s))
			}
			*into = d
		}
	}
	c.MCP.BaseURL = getenv("GEM_BRAIN_URL")
	tel, err := telemetry.ConfigFromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.Telemetry = tel
	metrics, err := envSwitch(getenv, "GEM_BRAIN_METRICS", true)
	errs = append(errs, err)
	c.Telemetry.MetricsOff = !metrics
	if s := getenv("GEM_DEVICE_HEARTBEAT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("GEM_DEVICE_HEARTBEAT: %q is not a duration (like 5s)", s))
		}
		c.Devices.Heartbeat = d
	}
	if s := getenv("GEM_DEVICE_MISSED_HEARTBEATS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("GEM_DEVICE_MISSED_HEARTBEATS: %q is not a positive whole number", s))
		}
		c.Devices.MissedHeartbeats = n
	}
	return c, errors.Join(errs...)
}

// admissionFromEnv reads the admission limit. 0 never means "no limit": GEM_BRAIN_MAX_IN_FLIGHT is a
// positive number or off (0 is refused, as it would admit nothing), GEM_BRAIN_MAX_QUEUE=0 means no line (a
// request that finds every slot taken is refused at once), and GEM_BRAIN_QUEUE_WAIT must be positive.
func admissionFromEnv(getenv func(string) string) (api.AdmissionConfig, error) {
	var a api.AdmissionConfig
	var errs []error
	if s := strings.TrimSpace(getenv("GEM_BRAIN_MAX_IN_FLIGHT")); strings.EqualFold(s, "off") {
		a.Off = true
	} else if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_MAX_IN_FLIGHT: %q is not a positive whole number (or off for no limit)", s))
		}
		a.MaxInFlight = n
	}
	if s := strings.TrimSpace(getenv("GEM_BRAIN_MAX_QUEUE")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_MAX_QUEUE: %q is not a whole number (0: no queue)", s))
		}
		if n == 0 {
			n = api.NoQueue
		}
		a.MaxQueue = n
	}
	if s := strings.TrimSpace(getenv("GEM_BRAIN_QUEUE_WAIT")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > api.QueueWaitMax {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_QUEUE_WAIT: %q is not a duration between 1ms and %s (like 2s; GEM_BRAIN_MAX_QUEUE=0 for no queue)", s, api.QueueWaitMax))
		}
		a.QueueWait = d
	}
	return a, errors.Join(errs...)
}

// connLimitsFromEnv reads the bounds on slow clients: timeouts are positive durations; the connections
// per client a positive number, or off for none (0 is refused, as it would accept nothing).
func connLimitsFromEnv(getenv func(string) string) (api.ConnLimits, error) {
	var l api.ConnLimits
	var errs []error
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"GEM_BRAIN_HEADER_TIMEOUT", &l.HeaderTimeout}, {"GEM_BRAIN_BODY_TIMEOUT", &l.BodyTimeout}, {"GEM_BRAIN_IDLE_TIMEOUT", &l.IdleTimeout}} {
		if s := strings.TrimSpace(getenv(d.name)); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a positive duration (like 30s)", d.name, s))
			}
			*d.to = v
		}
	}
	if s := strings.TrimSpace(getenv("GEM_BRAIN_MAX_CONNS_PER_CLIENT")); strings.EqualFold(s, "off") {
		l.MaxConnsPerClient = api.NoConnLimit
	} else if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("GEM_BRAIN_MAX_CONNS_PER_CLIENT: %q is not a positive whole number (or off for no limit)", s))
		}
		l.MaxConnsPerClient = n
	}
	return l, errors.Join(errs...)
}

// envSwitch reads an on/off variable (on, true, 1 / off, false, 0, any case); unset is def.
func envSwitch(getenv func(string) string, name string, def bool) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
	case "":
		return def, nil
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	default:
		return def, fmt.Errorf("%s: %q is not on or off", name, getenv(name))
	}
}
