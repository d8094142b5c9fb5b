package llm

import (
	"sort"
	"strings"

	"github.com/gemhq/gem/registry"
)

// ToolSearchThresholdDefault is the number of tools above which a model is offered the best-ranked tools
// (or a tool search) rather than every tool.
const ToolSearchThresholdDefault = 40

// RankTools scores tools against a query and returns the best limit of them, best first: each query word
// found in a tool's name counts 3, in its description 1; tools that score nothing are left out.
func RankTools(tools []*registry.Tool, query string, limit int) []*registry.Tool {
	words := strings.Fields(strings.ToLower(strings.NewReplacer(".", " ", "_", " ", ",", " ").Replace(query)))
	type scored struct {
		t     *registry.Tool
		score int
	}
	var list []scored
	for _, t := range tools {
		name := strings.ToLower(strings.NewReplacer(".", " ", "_", " ").Replace(t.Name))
		desc := strings.ToLower(t.Description)
		score := 0
		for _, w := range words {
			w = strings.TrimSuffix(w, "s")
			if len(w) < 2 {
				continue
			}
			if strings.Contains(name, w) {
				score += 3
			}
			if strings.Contains(desc, w) {
				score++
			}
		}
		if score > 0 {
			list = append(list, scored{t, score})
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].score != list[j].score {
			return list[i].score > list[j].score
		}
		return list[i].t.Name < list[j].t.Name
	})
	var out []*registry.Tool
	for i := 0; i < len(list) && i < limit; i++ {
		out = append(out, list[i].t)
	}
	return out
}
