package agentskills

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/gemhq/gem/executor"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// anthropicMaxTokens bounds an Anthropic answer (the Messages API requires a bound); the pack's prompts ask
// for short JSON answers.
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

// notConfigured returns the not_configured error for a missing or invalid LLM configuration, or nil.
func (c LLMConfig) notConfigured(tool string) error {
	required := []string{EnvLLMAPIKey, EnvLLMModel}
	steps := []string{
		fmt.Sprintf("Set %s to %q (the default) or %q.", EnvLLMProvider, ProviderOpenAI, ProviderAnthropic),
		fmt.Sprintf("Set %s to the provider's API key and %s to a model name (for example gpt-4o-mini or claude-haiku-4-5); a local server such as Ollama needs only %s and the model.", EnvLLMAPIKey, EnvLLMModel, EnvLLMBaseURL),
		fmt.Sprintf("For an OpenAI-compatible server, set %s to its base URL (default %s; %s for anthropic).", EnvLLMBaseURL, DefaultOpenAIBaseURL, DefaultAnthropicBaseURL),
		"Restart the executor: it reads the configuration once, at start.",
	}
	if c.Provider != ProviderOpenAI && c.Provider != ProviderAnthropic {
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, but %s is %q, which is neither %q nor %q",
			tool, EnvLLMProvider, c.Provider, ProviderOpenAI, ProviderAnthropic), append([]string{EnvLLMProvider}, required...), steps...)
	}
	var missing []string
	// A local OpenAI-compatible server (Ollama, vLLM) needs no key: a base URL of one's own will do, as in
	// the brain.
	if c.APIKey == "" && (c.BaseURL == "" || c.BaseURL == DefaultOpenAIBaseURL || c.BaseURL == DefaultAnthropicBaseURL) {
		missing = append(missing, EnvLLMAPIKey)
	}
	if c.Model == "" {
		missing = append(missing, EnvLLMModel)
	}
	if len(missing) > 0 {
		return executor.NotConfigured(fmt.Sprintf("%s needs an LLM, and no LLM is configured: %s not set", tool, strings.Join(missing, " and ")), required, steps...)
	}
	return nil
}

// newLLM builds the configured provider's client; cfg must be configured (notConfigured returned nil).
func (p *pack) newLLM() llm {
	c := p.cfg.LLM
	if c.Provider == ProviderAnthropic {
		return &anthropicLLM{model: c.Model, client: anthropic.NewClient(
			anthropicoption.WithoutEnvironmentDefaults(),
			anthropicoption.WithBaseURL(c.BaseURL),
			anthropicoption.WithAPIKey(c.APIKey),
			anthropicoption.WithHTTPClient(p.cfg.HTTPClient),
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
			return llmAnswer{}, &providerHTTPError{Provider: ProviderOpenAI, Status: apiErr.StatusCode, Body: apiErr.RawJSON()}
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
	model  string
	client anthropic.Client
}

func (l *anthropicLLM) completeJSON(ctx context.Context, system, user string) (llmAnswer, error) {
	res, err := l.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(l.model),
		MaxTokens: anthropicMaxTokens,
		System:    []anthropic.TextBlockParam{{Text: system}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
	})
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			return llmAnswer{}, &providerHTTPError{Provider: ProviderAnthropic, Status: apiErr.StatusCode, Body: apiErr.RawJSON()}
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
