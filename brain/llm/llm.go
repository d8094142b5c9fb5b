// Package llm is the brain's one door to language models: the provider-neutral Client, messages and tool
// definitions, the OpenAI and Anthropic adapters, and the ToolSet that exports registry tools as LLM
// functions (strict schemas, name mapping, ranking for tool search).
package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemhq/gem/llmconfig"

	"github.com/gemhq/gem/brain"
)

// Client is a chat model with tool calling.
type Client interface {
	// Provider names the provider ("openai", "anthropic").
	Provider() string
	// DefaultModel is the configured model.
	DefaultModel() string
	// Complete asks for the next assistant message.
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// New builds the configured provider's client (cfg's defaults filled in).
func New(cfg llmconfig.Config) (Client, error) {
	if missing := cfg.Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("no LLM is configured: set %s (GEM_LLM_BASE_URL names a local server, which needs no key)", strings.Join(missing, " and "))
	}
	cfg = cfg.WithDefaults()
	if cfg.Provider == llmconfig.ProviderAnthropic {
		return newAnthropicLLM(cfg), nil
	}
	return newOpenAILLM(cfg), nil
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
