// Package llm is the brain's one door to language models: the provider-neutral Client, messages and tool
// definitions, the OpenAI and Anthropic adapters, and the ToolSet that exports registry tools as LLM
// functions (strict schemas, name mapping, ranking for tool search).
package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/prometheus/client_golang/prometheus"
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

// New builds the configured provider's client (cfg's defaults filled in): each LLM step is one or more
// attempts (retried here, never inside the SDKs, within one deadline per step, see Retrying), and each
// attempt is counted in reg (Observed; reg nil counts nothing).
func New(cfg llmconfig.Config, reg prometheus.Registerer) (Client, error) {
	if missing := cfg.Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("no LLM is configured: set %s (GEM_LLM_BASE_URL names a local server, which needs no key)", strings.Join(missing, " and "))
	}
	cfg = cfg.WithDefaults()
	var c Client = newOpenAILLM(cfg)
	if cfg.Provider == llmconfig.ProviderAnthropic {
		c = newAnthropicLLM(cfg)
	}
	c, err := Observed(c, reg)
	if err != nil {
		return nil, err
	}
	return Retrying(c, cfg), nil
}

// Request is one request for the next assistant message.
type Request struct {
	Model       string
	System      string
	Messages    []Message
	Tools       []ToolDef
	Temperature *float64
	// OnRetry, when set, is told of each failed attempt of the step that is tried again (the step's last
	// attempt is what Complete returns), so that every attempt can be recorded.
	OnRetry func(Attempt) `json:"-"`
	// OnAttempt, when set, is told as each attempt of the step begins (n counts them from 1): the text
	// OnText heard before belongs to an attempt that failed.
	OnAttempt func(n int) `json:"-"`
	// OnText, when set, is told the answer's text as the provider streams it, piece by piece and in order,
	// on the goroutine that called Complete (repaired as the answer is: scrub.go): the pieces of the attempt
	// that answers make its Content.
	OnText func(text string) `json:"-"`
}

// text tells req's OnText a piece of the answer's text.
func (req *Request) text(s string) {
	if req.OnText != nil && s != "" {
		req.OnText(gemsql.PlainTextRepaired(s))
	}
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
