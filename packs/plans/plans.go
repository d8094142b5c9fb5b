// Package plans gathers the packs' side in the brain: the rules planner's rules, in the order they are
// tried, and the sentences the answer says of succeeded calls. The brain's Main takes them from here; the
// brain's own packages name no pack.
package plans

import (
	"maps"
	"slices"

	"github.com/gemhq/gem/brain/run"
	businessplan "github.com/gemhq/gem/packs/business/plan"
	integrationsplan "github.com/gemhq/gem/packs/integrations/plan"
	osplan "github.com/gemhq/gem/packs/os/plan"
)

// Rules are every pack's rules, in the order they are tried: a clause goes to the first rule that matches
// it. The business pack's come first (the trades workflow's are the most specific, then the office's,
// media's and marketing's), then the integrations', and the os pack's last: notes, tasks and reminders
// catch what the other packs' more specific rules leave ("note …", "remind me to …", "list …").
var Rules = slices.Concat(businessplan.Rules, integrationsplan.Rules, osplan.Rules)

// Sentences are every pack's sentences, by tool.
var Sentences = func() run.Sentences {
	out := run.Sentences{}
	for _, s := range []run.Sentences{businessplan.Sentences, integrationsplan.Sentences, osplan.Sentences} {
		maps.Copy(out, s)
	}
	return out
}()
