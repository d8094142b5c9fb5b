// Package agentskillspack is the agent skills pack: memory, lore, sentiment, web and image tools. Its tools'
// registry entries are files of tools/ (packs embeds them); this is their order in the registry.
package agentskillspack

// Tools are the pack's tools, in the registry's order (the order of tools/list, of the LLM's tools and of the
// help).
var Tools = []string{
	"memory.store",
	"memory.recall",
	"lore.ingest",
	"lore.query",
	"sentiment.analyze",
	"web.search",
	"image.generate",
}
