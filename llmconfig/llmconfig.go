// Package llmconfig is the one configuration of the language model GEM uses: the brain's agents and LLM
// planner, and the executor's LLM-backed tools, read the same GEM_LLM_* variables with the same defaults and
// agree on when an LLM is configured. It holds no client: each process builds its own from the Config.
package llmconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by FromEnv.
const (
	EnvProvider  = "GEM_LLM_PROVIDER"
	EnvBaseURL   = "GEM_LLM_BASE_URL"
	EnvAPIKey    = "GEM_LLM_API_KEY"
	EnvModel     = "GEM_LLM_MODEL"
	EnvMaxTokens = "GEM_LLM_MAX_TOKENS"
	EnvTimeout   = "GEM_LLM_TIMEOUT"
	// EnvStepTimeout bounds one LLM step of the brain: every attempt and the waits between them.
	EnvStepTimeout = "GEM_LLM_STEP_TIMEOUT"
	// EnvRetryAfterMax is the longest Retry-After of a provider the brain waits for before trying again.
	EnvRetryAfterMax = "GEM_LLM_RETRY_AFTER_MAX"
)

// Providers.
const (
	// ProviderOpenAI is the OpenAI chat completions API, or any server compatible with it (OpenRouter,
	// Google's OpenAI-compatible endpoint, AI gateways, Ollama, vLLM).
	ProviderOpenAI = "openai"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic = "anthropic"
)

// Defaults.
const (
	// ProviderDefault is the provider when GEM_LLM_PROVIDER is unset.
	ProviderDefault = ProviderOpenAI
	// OpenAIBaseURLDefault is the OpenAI API's base URL.
	OpenAIBaseURLDefault = "https://api.openai.com/v1"
	// AnthropicBaseURLDefault is the Anthropic API's base URL.
	AnthropicBaseURLDefault = "https://api.anthropic.com"
	// TimeoutDefault bounds one LLM request when GEM_LLM_TIMEOUT is unset.
	TimeoutDefault = 60 * time.Second
	// StepAttempts is how many requests one LLM step may make (the first and two retries); a step's
	// deadline defaults to that many GEM_LLM_TIMEOUTs.
	StepAttempts = 3
	// RetryAfterMaxDefault is the longest Retry-After waited for when GEM_LLM_RETRY_AFTER_MAX is unset.
	RetryAfterMaxDefault = 10 * time.Second
)

// Config is the language model configuration. Zero values mean the defaults (see WithDefaults).
type Config struct {
	// Provider is "openai" or "anthropic" (GEM_LLM_PROVIDER). Defaults to openai.
	Provider string
	// BaseURL is the API's base URL (GEM_LLM_BASE_URL). Defaults to the provider's: https://api.openai.com/v1
	// or https://api.anthropic.com.
	BaseURL string
	// APIKey is the API key (GEM_LLM_API_KEY). Required, unless BaseURL names a server of one's own (such
	// as Ollama) that needs none.
	APIKey string
	// Model is the default model (GEM_LLM_MODEL). Required; there is no default, so nobody pays for a model
	// they did not choose.
	Model string
	// MaxTokens bounds each answer (GEM_LLM_MAX_TOKENS). Defaults to 0: the caller's own bound (the
	// provider's default for openai; anthropic, which requires one, gets the caller's).
	MaxTokens int
	// Timeout bounds one request (GEM_LLM_TIMEOUT). Defaults to 60s. A tool call is also bounded by its
	// timeout_ms.
	Timeout time.Duration
	// StepTimeout bounds one LLM step of the brain (GEM_LLM_STEP_TIMEOUT): all its attempts, retries and the
	// waits between them included. Defaults to StepAttempts × Timeout. The executor's tools make one
	// request per call and do not read it.
	StepTimeout time.Duration
	// RetryAfterMax is the longest Retry-After (or retry-after-ms) of a provider the brain waits for before
	// trying again (GEM_LLM_RETRY_AFTER_MAX); a longer one, or one past the step's deadline, ends the step
	// at once with 503 and the provider's Retry-After. Defaults to 10s.
	RetryAfterMax time.Duration
}

// FromEnv reads the configuration through getenv (os.Getenv in production): values trimmed, the provider
// lower-cased, defaults not filled in. It returns an error naming each variable it cannot read; the Config
// holds what it could.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c := Config{Provider: strings.ToLower(get(EnvProvider)), BaseURL: get(EnvBaseURL), APIKey: get(EnvAPIKey), Model: get(EnvModel)}
	var errs []error
	if c.Provider != "" && c.Provider != ProviderOpenAI && c.Provider != ProviderAnthropic {
		errs = append(errs, fmt.Errorf("%s: %q is not %s or %s", EnvProvider, c.Provider, ProviderOpenAI, ProviderAnthropic))
	}
	if s := get(EnvMaxTokens); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive number", EnvMaxTokens, s))
		}
		c.MaxTokens = max(n, 0)
	}
	if s := get(EnvTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration (like 30s)", EnvTimeout, s))
		}
		c.Timeout = max(d, 0)
	}
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{EnvStepTimeout, &c.StepTimeout}, {EnvRetryAfterMax, &c.RetryAfterMax}} {
		if s := get(v.name); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration (like 30s)", v.name, s))
			}
			*v.to = max(d, 0)
		}
	}
	return c, errors.Join(errs...)
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Provider == "" {
		c.Provider = ProviderDefault
	}
	if c.BaseURL == "" {
		switch c.Provider {
		case ProviderOpenAI:
			c.BaseURL = OpenAIBaseURLDefault
		case ProviderAnthropic:
			c.BaseURL = AnthropicBaseURLDefault
		}
	}
	if c.Timeout == 0 {
		c.Timeout = TimeoutDefault
	}
	if c.StepTimeout == 0 {
		c.StepTimeout = StepAttempts * c.Timeout
	}
	if c.RetryAfterMax == 0 {
		c.RetryAfterMax = RetryAfterMaxDefault
	}
	return c
}

// Missing lists the variables to set before the LLM can be used, none when it is configured: a known
// provider, a model, and a key, unless the base URL names a server of one's own (a local server such as
// Ollama needs no key; the providers' own APIs always do).
func (c Config) Missing() []string {
	c = c.WithDefaults()
	var missing []string
	if c.Provider != ProviderOpenAI && c.Provider != ProviderAnthropic {
		missing = append(missing, EnvProvider)
	}
	if c.APIKey == "" && (c.BaseURL == OpenAIBaseURLDefault || c.BaseURL == AnthropicBaseURLDefault) {
		missing = append(missing, EnvAPIKey)
	}
	if c.Model == "" {
		missing = append(missing, EnvModel)
	}
	return missing
}

// Configured reports whether the LLM can be used (Missing lists nothing).
func (c Config) Configured() bool { return len(c.Missing()) == 0 }

// Problems splits what FromEnv reported into one error per variable (it joins them), for a tool pack's
// Problems: none when err is nil.
func Problems(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}
