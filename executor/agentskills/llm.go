package agentskills

import (
	"context"

	"github.com/gemhq/gem/executor/llmtext"
)

// llmAnswer is a model's text answer.
type llmAnswer = llmtext.Answer

// llm asks a model for a JSON answer to a system and a user message.
type llm interface {
	completeJSON(ctx context.Context, system, user string) (llmAnswer, error)
}

// llmNotConfigured returns the not_configured error for a missing or invalid LLM configuration (llmconfig's
// rules, shared with the brain), or nil.
func (c Config) llmNotConfigured(tool string) error {
	return llmtext.NotConfigured(c.LLM, c.LLMError, tool)
}

// newLLM builds the configured provider's client; cfg must be configured (notConfigured returned nil).
func (p *pack) newLLM() llm {
	return jsonModel{llmtext.New(p.cfg.LLM, p.cfg.HTTPClient)}
}

// jsonModel asks in JSON mode (OpenAI's response_format json_object; Anthropic has none and is told by the
// prompt).
type jsonModel struct{ m llmtext.Model }

func (j jsonModel) completeJSON(ctx context.Context, system, user string) (llmAnswer, error) {
	return j.m.Complete(ctx, llmtext.Request{System: system, User: user, JSON: true})
}
