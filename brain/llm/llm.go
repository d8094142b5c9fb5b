// Package llm is the brain's one door to language models: the provider-neutral Client, messages and tool
// definitions, the OpenAI and Anthropic adapters, and the ToolSet that exports registry tools as LLM
// functions (strict schemas, name mapping, ranking for tool search).
package llm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
)

// LLM providers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Config configures the LLM the brain uses for agents (and, with GEM_BRAIN_PLANNER=llm, for runs).
type Config struct {
	// Provider is "openai" (any OpenAI-compatible chat completions API: OpenAI, OpenRouter, Google's
	// OpenAI-compatible endpoint, AI gateways, Ollama, vLLM) or "anthropic" (the Messages API). Defaults to
	// openai (GEM_LLM_PROVIDER).
	Provider string
	// BaseURL is the API's base URL. Defaults to the provider's (GEM_LLM_BASE_URL).
	BaseURL string
	// APIKey is the API key (GEM_LLM_API_KEY); local servers such as Ollama need none.
	APIKey string
	// Model is the default model; agents may name their own (GEM_LLM_MODEL). Required to configure an LLM.
	Model string
	// MaxTokens bounds each answer. Defaults to 4096 for anthropic (which requires it) and to the server's
	// default for openai (GEM_LLM_MAX_TOKENS).
	MaxTokens int
	// Timeout bounds one LLM request. Defaults to 60s (GEM_LLM_TIMEOUT).
	Timeout time.Duration
}

// Configured reports whether an LLM is set up: a model, and a key or a base URL of a server needing none.
func (c Config) Configured() bool {
	return c.Model != "" && (c.APIKey != "" || c.BaseURL != "")
}

// ConfigFromEnv reads GEM_LLM_* through getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Provider: strings.ToLower(getenv("GEM_LLM_PROVIDER")),
		BaseURL:  getenv("GEM_LLM_BASE_URL"),
		APIKey:   getenv("GEM_LLM_API_KEY"),
		Model:    getenv("GEM_LLM_MODEL"),
	}
	var errs []error
	if c.Provider == "" {
		c.Provider = ProviderOpenAI
	}
	if c.Provider != ProviderOpenAI && c.Provider != ProviderAnthropic {
		errs = append(errs, fmt.Errorf("GEM_LLM_PROVIDER: %q is not openai or anthropic", c.Provider))
	}
	if s := getenv("GEM_LLM_MAX_TOKENS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("GEM_LLM_MAX_TOKENS: %q is not a positive number", s))
		}
		c.MaxTokens = n
	}
	if s := getenv("GEM_LLM_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("GEM_LLM_TIMEOUT: %q is not a duration", s))
		}
		c.Timeout = d
	}
	return c, errors.Join(errs...)
}

// Client is a chat model with tool calling.
type Client interface {
	// Provider names the provider ("openai", "anthropic").
	Provider() string
	// DefaultModel is the configured model.
	DefaultModel() string
	// Complete asks for the next assistant message.
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// New builds the configured provider's client.
func New(cfg Config) (Client, error) {
	if !cfg.Configured() {
		return nil, errors.New("no LLM is configured: set GEM_LLM_MODEL and GEM_LLM_API_KEY (or GEM_LLM_BASE_URL for a local server)")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	switch cfg.Provider {
	case ProviderAnthropic:
		return newAnthropicLLM(cfg), nil
	case ProviderOpenAI, "":
		return newOpenAILLM(cfg), nil
	}
	return nil, fmt.Errorf("unknown LLM provider %q", cfg.Provider)
}

// Request is one request for the next assistant message.
type Request struct {
	Model       string
	System      string
	Messages    []Message
	Tools       []ToolDef
	Temperature *float64
}

// Message is one message of a conversation, in a provider-neutral form.
type Message struct {
	// Role is "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the text (for a tool message, the tool's result).
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool message that reports a failure.
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is a function call an LLM asked for.
type ToolCall struct {
	ID string `json:"id"`
	// Name is the function name as the LLM knows it (see ToolSet for the mapping to registry names).
	Name string `json:"name"`
	// Arguments is the JSON text the LLM produced, as it produced it (it may be malformed).
	Arguments string `json:"arguments"`
}

// ToolDef is a function offered to the LLM.
type ToolDef struct {
	Name        string
	Description string
	Parameters  map[string]any
	// Strict asks OpenAI for structured outputs (Parameters then follow its strict-mode rules).
	Strict bool
}

// Response is the assistant's next message.
type Response struct {
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"`
	Usage      Usage      `json:"usage"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// providerError turns a provider failure into an EUNAVAILABLE error a client can act on.
func providerError(provider string, status int, err error) error {
	msg := fmt.Sprintf("the LLM (%s) failed: %v", provider, err)
	switch {
	case status == 401 || status == 403:
		msg = fmt.Sprintf("the LLM (%s) refused the API key (HTTP %d); check GEM_LLM_API_KEY", provider, status)
	case status == 429:
		msg = fmt.Sprintf("the LLM (%s) is rate limiting requests (HTTP 429); try again shortly", provider)
	case status == 404:
		msg = fmt.Sprintf("the LLM (%s) does not know the model or endpoint (HTTP 404); check GEM_LLM_MODEL and GEM_LLM_BASE_URL", provider)
	}
	return &brain.Error{Code: brain.EUNAVAILABLE, Message: msg, Details: map[string]any{"provider": provider, "status": status}}
}
