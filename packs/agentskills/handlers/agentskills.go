// Package agentskillshandlers runs the agent skills pack's tools: the handlers that give LLM-driven agents (NPCs,
// assistants) a memory, a body of knowledge and a few senses.
//
//	memory.store, memory.recall   memories per agent and user, recalled by recency or text match
//	lore.ingest, lore.query       knowledge documents, chunked and searched (full-text + trigram)
//	sentiment.analyze             sentiment of a text, through the configured LLM (OpenAI or Anthropic)
//	web.search                    a web search provider (Tavily or Brave wire format)
//	image.generate                an image provider (OpenAI Images API wire format)
//
// Memory and lore live in PostgreSQL (the pack's migration, packs/agentskills/migrations/00001_agentskills.sql).
// The other tools talk to outside services configured by the pack's Config (agentskillspack, read by the
// executor's Main); a tool whose provider is not configured answers not_configured, naming the variables to
// set.
// docs/agent-skills-pack.md describes every tool.
package agentskillshandlers

import (
	"github.com/gemhq/gem/llmconfig"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/llmtext"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
)

// Register adds the pack's handlers with its provider configuration (defaults are filled in): the executor's
// Main reads it from the environment once (agentskillspack.ConfigFromEnv) and reports its Problems at
// start; tests build one.
func Register(h executor.Handlers, cfg agentskillspack.Config) {
	p := &pack{cfg: cfg.WithDefaults()}
	if p.llmNotConfigured("") == nil {
		p.llm = llmtext.New(p.cfg.LLM, p.cfg.HTTPClient)
	}
	h.Func(agentskillspack.MemoryStore, executor.Typed(p.storeMemory))
	h.Func(agentskillspack.MemoryRecall, executor.Typed(p.recallMemories))
	h.Func(agentskillspack.LoreIngest, executor.Typed(p.ingestLore))
	h.Func(agentskillspack.LoreQuery, executor.Typed(p.queryLore))
	h.Add(agentskillspack.SentimentAnalyze, executor.Handler{
		Run: executor.Typed(p.analyzeSentiment), Isolated: true, RequiredEnv: []string{llmconfig.EnvAPIKey, llmconfig.EnvModel},
	})
	h.Add(agentskillspack.WebSearch, executor.Handler{
		Run: executor.Typed(p.searchWeb), Isolated: true, RequiredEnv: []string{agentskillspack.EnvWebSearchAPIKey},
	})
	h.Add(agentskillspack.ImageGenerate, executor.Handler{
		Run: executor.Typed(p.generateImage), Isolated: true, RequiredEnv: []string{agentskillspack.EnvImageAPIKey, agentskillspack.EnvImageModel},
	})
}

// pack holds the configuration the handlers share.
type pack struct {
	cfg agentskillspack.Config
	// llm is the configured language model, or nil.
	llm llmtext.Model
}

// llmNotConfigured returns the not_configured error for a missing or invalid LLM configuration (llmconfig's
// rules, shared with the brain), or nil.
func (p *pack) llmNotConfigured(tool string) error {
	return llmtext.NotConfigured(p.cfg.LLM, p.cfg.LLMError, tool)
}
