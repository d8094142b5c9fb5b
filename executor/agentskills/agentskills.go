// Package agentskills is the agent skills pack: the tools that give LLM-driven agents (NPCs, assistants) a
// memory, a body of knowledge and a few senses.
//
//	memory.store, memory.recall   memories per agent and user, recalled by recency or text match
//	lore.ingest, lore.query       knowledge documents, chunked and searched (full-text + trigram)
//	sentiment.analyze             sentiment of a text, through the configured LLM (OpenAI or Anthropic)
//	web.search                    a web search provider (Tavily or Brave wire format)
//	image.generate                an image provider (OpenAI Images API wire format)
//
// Memory and lore live in PostgreSQL (migration 00005_agent_skills.sql). The other tools talk to outside
// services configured by environment variables (Config); a tool whose provider is not configured answers
// not_configured, naming the variables to set. docs/agent-skills-pack.md describes every tool.
package agentskills

import (
	"net/http"
	"strings"

	"github.com/gemhq/gem/llmconfig"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/llmtext"
)

// Environment variables read by ConfigFromEnv.
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
	llm, llmErr := llmconfig.FromEnv(getenv)
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
	problems := llmtext.ConfigProblems(c.LLMError)
	if err := c.WebSearch.providerProblem(); err != nil {
		problems = append(problems, err)
	} else if err := c.WebSearch.urlProblem(); err != nil {
		problems = append(problems, err)
	}
	if _, err := c.Image.baseURL(); err != nil {
		problems = append(problems, err)
	}
	return problems
}

// Register adds the pack's handlers with its provider configuration (defaults are filled in): the executor's
// Main reads it from the environment once (ConfigFromEnv) and reports its Problems at start; tests build one.
func Register(h executor.Handlers, cfg Config) {
	p := &pack{cfg: cfg.WithDefaults()}
	if p.cfg.llmNotConfigured("") == nil {
		p.llm = llmtext.New(p.cfg.LLM, p.cfg.HTTPClient)
	}
	h.Func("memory.store", executor.Typed(p.storeMemory))
	h.Func("memory.recall", executor.Typed(p.recallMemories))
	h.Func("lore.ingest", executor.Typed(p.ingestLore))
	h.Func("lore.query", executor.Typed(p.queryLore))
	h.Add("sentiment.analyze", executor.Handler{
		Run: executor.Typed(p.analyzeSentiment), Isolated: true, RequiredEnv: []string{llmconfig.EnvAPIKey, llmconfig.EnvModel},
	})
	h.Add("web.search", executor.Handler{
		Run: executor.Typed(p.searchWeb), Isolated: true, RequiredEnv: []string{EnvWebSearchAPIKey},
	})
	h.Add("image.generate", executor.Handler{
		Run: executor.Typed(p.generateImage), Isolated: true, RequiredEnv: []string{EnvImageAPIKey, EnvImageModel},
	})
}

// pack holds the configuration the handlers share.
type pack struct {
	cfg Config
	// llm is the configured language model, or nil.
	llm llmtext.Model
}
