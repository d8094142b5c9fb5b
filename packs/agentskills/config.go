package agentskillspack

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/packs/internal/llmsettings"
	"github.com/gemhq/gem/registry/settings"
)

// Environment variables read by ConfigFromEnv. docs/agent-skills-pack.md explains each one.
const (
	EnvWebSearchProvider = "GEM_WEB_SEARCH_PROVIDER"
	EnvWebSearchURL      = "GEM_WEB_SEARCH_URL"
	EnvWebSearchAPIKey   = "GEM_WEB_SEARCH_API_KEY"
	EnvImageURL          = "GEM_IMAGE_URL"
	EnvImageAPIKey       = "GEM_IMAGE_API_KEY"
	EnvImageModel        = "GEM_IMAGE_MODEL"
)

// Web search providers.
const (
	// WebSearchTavily is the Tavily search API: POST {url} with a JSON body, Authorization: Bearer {key}.
	WebSearchTavily = "tavily"
	// WebSearchBrave is the Brave Search API: GET {url}?q=...&count=..., X-Subscription-Token: {key}.
	WebSearchBrave = "brave"
)

// Defaults.
const (
	// DefaultWebSearchProvider is the web search provider when GEM_WEB_SEARCH_PROVIDER is unset.
	DefaultWebSearchProvider = WebSearchTavily
	// DefaultTavilyURL is Tavily's search endpoint.
	DefaultTavilyURL = "https://api.tavily.com/search"
	// DefaultBraveURL is Brave Search's web search endpoint.
	DefaultBraveURL = "https://api.search.brave.com/res/v1/web/search"
	// DefaultImageURL is the base URL of the OpenAI Images API (image.generate posts to {base}/images/generations).
	DefaultImageURL = "https://api.openai.com/v1"
)

// Config says which outside providers the pack's tools use. Memory and lore need nothing but the database.
// A tool whose provider lacks a required field answers not_configured.
type Config struct {
	// LLM is the language model sentiment.analyze uses (GEM_LLM_*, read and checked as the brain does).
	LLM llmconfig.Config
	// LLMError is what was wrong with GEM_LLM_* when read from the environment; the LLM tools then answer
	// not_configured with it.
	LLMError error
	// WebSearch is the provider web.search uses.
	WebSearch WebSearchConfig
	// Image is the provider image.generate uses.
	Image ImageConfig
	// HTTPClient makes the requests to every provider. Each request is bounded by its call's deadline (the
	// tool's timeout_ms). Defaults to http.DefaultClient.
	HTTPClient *http.Client
}

// WebSearchConfig is the web search provider.
type WebSearchConfig struct {
	// Provider is the wire format: "tavily" or "brave". From GEM_WEB_SEARCH_PROVIDER. Defaults to "tavily".
	Provider string
	// URL is the search endpoint. From GEM_WEB_SEARCH_URL. Defaults to https://api.tavily.com/search for
	// tavily and https://api.search.brave.com/res/v1/web/search for brave.
	URL string
	// APIKey is the API key. From GEM_WEB_SEARCH_API_KEY. Required; there is no default.
	APIKey string
}

// ImageConfig is the image generation provider, which speaks the OpenAI Images API.
type ImageConfig struct {
	// URL is the API's base URL; images are requested with POST {URL}/images/generations. From GEM_IMAGE_URL.
	// Defaults to https://api.openai.com/v1.
	URL string
	// APIKey is the API key. From GEM_IMAGE_API_KEY. Required; there is no default.
	APIKey string
	// Model is the image model ("gpt-image-1", "dall-e-3", ...). From GEM_IMAGE_MODEL. Required; there is no
	// default, so nobody pays for a model they did not choose.
	Model string
}

// ConfigFromEnv reads the configuration from environment variables through getenv (the executor's Main
// passes os.Getenv). Values are trimmed; defaults are not filled in (see WithDefaults). A value that cannot
// be used does not stop the executor: Problems lists it, and the tools that need it answer not_configured.
func ConfigFromEnv(getenv func(string) string) Config {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	llm, llmErr := llmsettings.FromEnv(getenv)
	return Config{
		LLM:      llm,
		LLMError: llmErr,
		WebSearch: WebSearchConfig{
			Provider: strings.ToLower(get(EnvWebSearchProvider)),
			URL:      get(EnvWebSearchURL),
			APIKey:   get(EnvWebSearchAPIKey),
		},
		Image: ImageConfig{
			URL:    get(EnvImageURL),
			APIKey: get(EnvImageAPIKey),
			Model:  get(EnvImageModel),
		},
	}
}

// WithDefaults returns the config with every unset field that has a default filled in.
func (c Config) WithDefaults() Config {
	c.LLM = c.LLM.WithDefaults()
	if c.WebSearch.Provider == "" {
		c.WebSearch.Provider = DefaultWebSearchProvider
	}
	if c.WebSearch.URL == "" {
		switch c.WebSearch.Provider {
		case WebSearchTavily:
			c.WebSearch.URL = DefaultTavilyURL
		case WebSearchBrave:
			c.WebSearch.URL = DefaultBraveURL
		}
	}
	if c.Image.URL == "" {
		c.Image.URL = DefaultImageURL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	return c
}

// Problems lists the settings that are set but cannot be used, each error naming its variable: the ones the
// tools that need them answer not_configured with.
func (c Config) Problems() []error {
	c = c.WithDefaults()
	problems := llmconfig.Problems(c.LLMError)
	if err := c.WebSearch.ProviderProblem(); err != nil {
		problems = append(problems, err)
	} else if err := c.WebSearch.URLProblem(); err != nil {
		problems = append(problems, err)
	}
	if _, err := c.Image.BaseURL(); err != nil {
		problems = append(problems, err)
	}
	return problems
}

// ProviderProblem says what is wrong with Provider (defaults filled in), or is nil.
func (c WebSearchConfig) ProviderProblem() error {
	if c.Provider != WebSearchTavily && c.Provider != WebSearchBrave {
		return fmt.Errorf("%s is %q, which is neither %q nor %q", EnvWebSearchProvider, c.Provider, WebSearchTavily, WebSearchBrave)
	}
	return nil
}

// URLProblem says why URL (defaults filled in) cannot be the search endpoint, or nil: a request to it
// would fail on every call, so web.search answers not_configured instead.
func (c WebSearchConfig) URLProblem() error {
	return settings.HTTPURLProblem(EnvWebSearchURL, c.URL)
}

// BaseURL reads URL (defaults filled in); its error says why it is not an http(s) URL.
func (c ImageConfig) BaseURL() (*url.URL, error) {
	raw := strings.TrimRight(c.URL, "/")
	if err := settings.HTTPURLProblem(EnvImageURL, raw); err != nil {
		return nil, err
	}
	return url.Parse(raw)
}

// Variables are the variables ConfigFromEnv reads, with their defaults, as docs/agent-skills-pack.md lists
// them. The GEM_LLM_* lines speak for every tool that writes text: the business pack reads them too.
func Variables() []settings.Variable {
	return []settings.Variable{
		{Name: llmconfig.EnvProvider, Default: llmconfig.ProviderDefault, Description: "openai or anthropic (the brain reads the same GEM_LLM_*)"},
		{Name: llmconfig.EnvBaseURL, Default: "the provider's API", Description: "LLM API base URL"},
		{Name: llmconfig.EnvAPIKey, Default: settings.Unset, Description: "LLM API key, for " + SentimentAnalyze + " and the tools that write text"},
		{Name: llmconfig.EnvModel, Default: settings.Unset, Description: "LLM model, for " + SentimentAnalyze + " and the tools that write text"},
		{Name: llmconfig.EnvMaxTokens, Default: "1024 for anthropic", Description: "bound on an LLM answer"},
		{Name: llmconfig.EnvTimeout, Default: "60s", Description: "bound on one LLM request (a call is also bounded by its timeout_ms)"},
		{Name: llmconfig.EnvStepTimeout, Default: "3 × GEM_LLM_TIMEOUT", Description: "the brain's bound on an LLM step; checked here, not used (a call is bounded by its timeout_ms)"},
		{Name: llmconfig.EnvRetryAfterMax, Default: "10s", Description: "the brain's longest wait for a provider's Retry-After; checked here, not used"},
		{Name: EnvWebSearchProvider, Default: DefaultWebSearchProvider, Description: "tavily or brave"},
		{Name: EnvWebSearchURL, Default: "the provider's endpoint", Description: "web search endpoint"},
		{Name: EnvWebSearchAPIKey, Default: settings.Unset, Description: "web search API key"},
		{Name: EnvImageURL, Default: DefaultImageURL, Description: "OpenAI Images API compatible base URL"},
		{Name: EnvImageAPIKey, Default: settings.Unset, Description: "image API key"},
		{Name: EnvImageModel, Default: settings.Unset, Description: "image model"},
	}
}
