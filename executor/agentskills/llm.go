package agentskills

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gemhq/gem/llmconfig"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/gemhq/gem/executor"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// anthropicMaxTokens bounds an Anthropic answer (the Messages API requires a bound); the pack's prompts ask
// for short JSON answers.
// GEM_LLM_MAX_TOKENS, when set, bounds it instead.
const anthropicMaxTokens = 1024

// llmAnswer is a model's text answer.
type llmAnswer struct {
	Text string
	// Truncated: the model stopped at its token limit.
	Truncated bool
	// Refusal is the model's refusal message, if it refused (OpenAI reports refusals apart from content).
	Refusal string
}

// llm asks a model for a JSON answer to a system and a user message.
type llm interface {
	completeJSON(ctx context.Context, system, user string) (llmAnswer, error)
}

// llmNotConfigured returns the not_configured error for a missing or invalid LLM configuration (llmconfig's
// rules, shared with the brain), or nil.
func (c Config) llmNotConfigured(tool string) error {
	required := []string{llmconfig.EnvAPIKey, llmconfig.EnvModel}
	steps := []string{
		fmt.Sprintf("Set %s to %q (the default) or %q.", llmconfig.EnvProvider, llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic),
		fmt.Sprintf("Set %s to the provider's API key and %s to a model name (for example gpt-4o-mini or claude-haiku-4-5); a local server such as Ollama needs only %s and the model.", llmconfig.EnvAPIKey, llmconfig.EnvModel, llmconfig.EnvBaseURL),
		fmt.Sprintf("For an OpenAI-compatible server, set %s to its base URL (default %s; %s for anthropic).", llmconfig.EnvBaseURL, llmconfig.OpenAIBaseURLDefault, llmconfig.AnthropicBaseURLDefault),
		"Restart the executor: it reads the configuration once, at start.",
	}
	llm := c.LLM
	switch {
	case c.LLMError != nil:
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, but its configuration cannot be read: %v", tool, c.LLMError),
			append([]string{llmconfig.EnvProvider, llmconfig.EnvMaxTokens, llmconfig.EnvTimeout}, required...),
			append(steps, fmt.Sprintf("%s must be a positive number and %s a duration such as 30s.", llmconfig.EnvMaxTokens, llmconfig.EnvTimeout))...)
	case slices.Contains(llm.Missing(), llmconfig.EnvProvider):
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, but %s is %q, which is neither %q nor %q",
			tool, llmconfig.EnvProvider, llm.Provider, llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic), append([]string{llmconfig.EnvProvider}, required...), steps...)
	case !llm.Configured():
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, and no LLM is configured: %s not set", tool, strings.Join(llm.Missing(), " and ")), required, steps...)
	}
	return nil
}

// newLLM builds the configured provider's client; cfg must be configured (notConfigured returned nil).
func (p *pack) newLLM() llm {
	c := p.cfg.LLM
	if c.Provider == llmconfig.ProviderAnthropic {
		maxTokens := int64(anthropicMaxTokens)
		if c.MaxTokens > 0 {
			maxTokens = int64(c.MaxTokens)
		}
		return &anthropicLLM{model: c.Model, maxTokens: maxTokens, client: anthropic.NewClient(
			anthropicoption.WithoutEnvironmentDefaults(),
			anthropicoption.WithBaseURL(c.BaseURL),
			anthropicoption.WithAPIKey(c.APIKey),
			anthropicoption.WithHTTPClient(p.cfg.HTTPClient),
			anthropicoption.WithRequestTimeout(c.Timeout),
		)}
	}
	key := c.APIKey
	if key == "" {
		key = "none" // a local server ignores it; the SDK wants one
	}
	return &openAILLM{model: c.Model, client: openai.NewClient(
		openaioption.WithBaseURL(c.BaseURL),
		openaioption.WithAPIKey(key),
		openaioption.WithHTTPClient(p.cfg.HTTPClient),
		openaioption.WithRequestTimeout(c.Timeout),
	)}
}

// openAILLM speaks the OpenAI chat completions API (POST {base}/chat/completions) in JSON mode.
type openAILLM struct {
	model  string
	client openai.Client
}

func (l *openAILLM) completeJSON(ctx context.Context, system, user string) (llmAnswer, error) {
	res, err := l.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: l.model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system),
			openai.UserMessage(user),
		},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
	})
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return llmAnswer{}, &providerHTTPError{Provider: llmconfig.ProviderOpenAI, Status: apiErr.StatusCode, Body: apiErr.RawJSON()}
		}
		return llmAnswer{}, err
	}
	if len(res.Choices) == 0 {
		return llmAnswer{}, nil
	}
	choice := res.Choices[0]
	return llmAnswer{Text: choice.Message.Content, Truncated: choice.FinishReason == "length", Refusal: choice.Message.Refusal}, nil
}

// anthropicLLM speaks the Anthropic Messages API (POST {base}/v1/messages).
type anthropicLLM struct {
	model     string
	maxTokens int64
	client    anthropic.Client
}

func (l *anthropicLLM) completeJSON(ctx context.Context, system, user string) (llmAnswer, error) {
	res, err := l.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(l.model),
		MaxTokens: l.maxTokens,
		System:    []anthropic.TextBlockParam{{Text: system}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
	})
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			return llmAnswer{}, &providerHTTPError{Provider: llmconfig.ProviderAnthropic, Status: apiErr.StatusCode, Body: apiErr.RawJSON()}
		}
		return llmAnswer{}, err
	}
	var text strings.Builder
	for _, block := range res.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	return llmAnswer{Text: text.String(), Truncated: res.StopReason == anthropic.StopReasonMaxTokens}, nil
}
