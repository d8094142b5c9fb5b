// Package llmtext asks the configured language model (GEM_LLM_*, see llmconfig) for text: a system and a
// user message in, the model's answer out, optionally as JSON constrained by a JSON Schema. It speaks the
// OpenAI chat completions API (and every server compatible with it) and Anthropic's Messages API through
// their official SDKs. The executor's tools that write text (sentiment.analyze, marketing.generate_*,
// media.generate_alt_text and generate_caption) share it.
package llmtext

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/llmconfig"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// DefaultMaxTokens bounds an answer when neither GEM_LLM_MAX_TOKENS nor the request does. Anthropic's API
// requires a bound; OpenAI's answers are bounded only by GEM_LLM_MAX_TOKENS (the provider's default
// otherwise).
const DefaultMaxTokens = 1024

// Request is one question to the model.
type Request struct {
	// System is the system prompt: the task and the rules of the answer.
	System string
	// User is the user message: the facts to work from.
	User string
	// Schema, when set, asks for one JSON object valid against it: OpenAI's structured outputs (strict,
	// so every object in it must list all its properties as required and forbid others) or Anthropic's
	// output_config.format. Answer.JSON checks the answer against it.
	Schema *Schema
	// JSON asks for a JSON object without a schema (OpenAI's JSON mode; the prompt must say "JSON").
	JSON bool
	// MaxTokens bounds the answer when GEM_LLM_MAX_TOKENS does not. Defaults to DefaultMaxTokens.
	MaxTokens int
}

// Schema is a named JSON Schema for a structured answer.
type Schema struct {
	// Name names the format for the provider: letters, digits, _ and -, at most 64 characters.
	Name string
	// Doc is the JSON Schema document.
	Doc map[string]any
}

// Answer is a model's answer.
type Answer struct {
	// Text is the answer's text (the JSON, when JSON was asked for).
	Text string
	// Truncated: the model stopped at its token limit.
	Truncated bool
	// Refusal is the model's refusal message, if it refused (OpenAI reports refusals apart from content).
	Refusal string
}

// Model is a configured language model.
type Model interface {
	// Complete asks the model one question. A provider's HTTP error status comes back as *HTTPError.
	Complete(ctx context.Context, req Request) (Answer, error)
	// Provider is "openai" or "anthropic".
	Provider() string
	// Name is the model's name (GEM_LLM_MODEL).
	Name() string
}

// NotConfigured returns the not_configured error for a missing or invalid LLM configuration (llmconfig's
// rules, shared with the brain), or nil when the model can be used. cfgErr is what llmconfig.FromEnv
// reported; tool names the tool in the reason.
func NotConfigured(cfg llmconfig.Config, cfgErr error, tool string) error {
	required := []string{llmconfig.EnvAPIKey, llmconfig.EnvModel}
	steps := []string{
		fmt.Sprintf("Set %s to %q (the default) or %q.", llmconfig.EnvProvider, llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic),
		fmt.Sprintf("Set %s to the provider's API key and %s to a model name (for example gpt-4o-mini or claude-haiku-4-5); a local server such as Ollama needs only %s and the model.", llmconfig.EnvAPIKey, llmconfig.EnvModel, llmconfig.EnvBaseURL),
		fmt.Sprintf("For an OpenAI-compatible server, set %s to its base URL (default %s; %s for anthropic).", llmconfig.EnvBaseURL, llmconfig.OpenAIBaseURLDefault, llmconfig.AnthropicBaseURLDefault),
		"Restart the executor: it reads the configuration once, at start.",
	}
	switch {
	case cfgErr != nil:
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, but its configuration cannot be read: %v", tool, cfgErr),
			append([]string{llmconfig.EnvProvider, llmconfig.EnvMaxTokens, llmconfig.EnvTimeout}, required...),
			append(steps, fmt.Sprintf("%s must be a positive number and %s a duration such as 30s.", llmconfig.EnvMaxTokens, llmconfig.EnvTimeout))...)
	case slices.Contains(cfg.Missing(), llmconfig.EnvProvider):
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, but %s is %q, which is neither %q nor %q",
			tool, llmconfig.EnvProvider, cfg.Provider, llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic), append([]string{llmconfig.EnvProvider}, required...), steps...)
	case !cfg.Configured():
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, and no LLM is configured: %s not set", tool, strings.Join(cfg.Missing(), " and ")), required, steps...)
	}
	return nil
}

// New builds the configured provider's client. cfg must be configured (NotConfigured returned nil); client
// makes the requests (nil: a client of its own).
func New(cfg llmconfig.Config, client *http.Client) Model {
	cfg = cfg.WithDefaults()
	if client == nil {
		client = &http.Client{}
	}
	if cfg.Provider == llmconfig.ProviderAnthropic {
		return &anthropicModel{model: cfg.Model, maxTokens: cfg.MaxTokens, client: anthropic.NewClient(
			anthropicoption.WithoutEnvironmentDefaults(),
			anthropicoption.WithBaseURL(cfg.BaseURL),
			anthropicoption.WithAPIKey(cfg.APIKey),
			anthropicoption.WithHTTPClient(client),
			anthropicoption.WithRequestTimeout(cfg.Timeout),
		)}
	}
	key := cfg.APIKey
	if key == "" {
		key = "none" // a local server ignores it; the SDK wants one
	}
	return &openAIModel{model: cfg.Model, client: openai.NewClient(
		openaioption.WithBaseURL(cfg.BaseURL),
		openaioption.WithAPIKey(key),
		openaioption.WithHTTPClient(client),
		openaioption.WithRequestTimeout(cfg.Timeout),
	)}
}

// HTTPError is a provider's answer with an HTTP error status.
type HTTPError struct {
	Provider string
	Status   int
	Body     string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s answered HTTP %d %s: %s", e.Provider, e.Status, http.StatusText(e.Status), Truncate(e.Body, 300))
}

// Truncate shortens s to at most n characters, marking the cut with "…".
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

// openAIModel speaks the OpenAI chat completions API (POST {base}/chat/completions).
type openAIModel struct {
	model  string
	client openai.Client
}

func (m *openAIModel) Provider() string { return llmconfig.ProviderOpenAI }
func (m *openAIModel) Name() string     { return m.model }

func (m *openAIModel) Complete(ctx context.Context, req Request) (Answer, error) {
	params := openai.ChatCompletionNewParams{
		Model: m.model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(req.System),
			openai.UserMessage(req.User),
		},
	}
	switch {
	case req.Schema != nil:
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: req.Schema.Name, Schema: req.Schema.Doc, Strict: openai.Bool(true)},
		}}
	case req.JSON:
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	res, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return Answer{}, &HTTPError{Provider: llmconfig.ProviderOpenAI, Status: apiErr.StatusCode, Body: apiErr.RawJSON()}
		}
		return Answer{}, err
	}
	if len(res.Choices) == 0 {
		return Answer{}, nil
	}
	choice := res.Choices[0]
	return Answer{Text: choice.Message.Content, Truncated: choice.FinishReason == "length", Refusal: choice.Message.Refusal}, nil
}

// anthropicModel speaks the Anthropic Messages API (POST {base}/v1/messages).
type anthropicModel struct {
	model string
	// maxTokens is GEM_LLM_MAX_TOKENS, or 0.
	maxTokens int
	client    anthropic.Client
}

func (m *anthropicModel) Provider() string { return llmconfig.ProviderAnthropic }
func (m *anthropicModel) Name() string     { return m.model }

func (m *anthropicModel) Complete(ctx context.Context, req Request) (Answer, error) {
	maxTokens := cmpOr(m.maxTokens, req.MaxTokens, DefaultMaxTokens)
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(m.model),
		MaxTokens: int64(maxTokens),
		System:    []anthropic.TextBlockParam{{Text: req.System}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(req.User))},
	}
	if req.Schema != nil {
		params.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: req.Schema.Doc}}
	}
	res, err := m.client.Messages.New(ctx, params)
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			return Answer{}, &HTTPError{Provider: llmconfig.ProviderAnthropic, Status: apiErr.StatusCode, Body: apiErr.RawJSON()}
		}
		return Answer{}, err
	}
	var text strings.Builder
	for _, block := range res.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	return Answer{Text: text.String(), Truncated: res.StopReason == anthropic.StopReasonMaxTokens}, nil
}

// cmpOr returns the first of its arguments that is positive.
func cmpOr(ns ...int) int {
	for _, n := range ns {
		if n > 0 {
			return n
		}
	}
	return 0
}
