// Package agentskillspack is the agent skills pack: memory, lore, sentiment, web and image tools. Its tools'
// registry entries are files of tools/ (packs embeds them); this is their order in the registry.
package agentskillspack

// The pack's tools.
const (
	MemoryStore      = "memory.store"
	MemoryRecall     = "memory.recall"
	LoreIngest       = "lore.ingest"
	LoreQuery        = "lore.query"
	SentimentAnalyze = "sentiment.analyze"
	WebSearch        = "web.search"
	ImageGenerate    = "image.generate"
)

// Tools are the pack's tools, in the registry's order (the order of tools/list, of the LLM's tools and of the
// help).
var Tools = []string{
	MemoryStore,
	MemoryRecall,
	LoreIngest,
	LoreQuery,
	SentimentAnalyze,
	WebSearch,
	ImageGenerate,
}
