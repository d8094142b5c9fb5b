// Package businessplan is the business pack's side in the brain: the rules planner's rules for its tools
// and the sentences the answer says of their calls, typed against the pack's contract (businesspack).
package businessplan

import (
	"maps"
	"slices"

	"github.com/gemhq/gem/brain/run"
)

// Rules are the pack's rules, in the order they are tried: the trades workflow's first (they are the most
// specific: leads, inspections, quotes, jobs, invoices, the money reports), then the office's (messages,
// calendar, contacts, personal, memory), then media and marketing.
var Rules = slices.Concat(tradesRules, officeRules, mediaRules)

// Sentences are what the answer says of the pack's succeeded calls.
var Sentences = func() run.Sentences {
	out := run.Sentences{}
	for _, s := range []run.Sentences{tradesSentences, officeSentences, mediaSentences} {
		maps.Copy(out, s)
	}
	return out
}()
