// Package agentskillspack is the agent skills pack: memory, lore, sentiment, web and image tools. It holds
// its tools' registry entries, one file each in tools/, and their order in the registry.
package agentskillspack

import (
	"embed"
	"io/fs"
)

//go:embed tools/*.json
var entries embed.FS

// Entries are the pack's registry entries: tools/NAME.json for each of Tools.
var Entries, _ = fs.Sub(entries, "tools")

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
