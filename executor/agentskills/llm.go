package agentskills

import "github.com/gemhq/gem/executor/llmtext"

// llmNotConfigured returns the not_configured error for a missing or invalid LLM configuration (llmconfig's
// rules, shared with the brain), or nil.
func (c Config) llmNotConfigured(tool string) error {
	return llmtext.NotConfigured(c.LLM, c.LLMError, tool)
}
