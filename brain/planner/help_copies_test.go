package planner_test

import (
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/packs/plans"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestHelpHandsOutCopies: what Help and EnabledRules return is the caller's own: changing it changes
// nothing the next request sees (the modes were the package's own slice, the examples the rules').
func TestHelpHandsOutCopies(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	p, err := planner.NewRulesPlanner(reg, plans.Rules, time.UTC, "")
	require.NoError(t, err)
	// What a rule says (a rule also holds functions, which compare unequal to themselves).
	said := func(rules []planner.Rule) [][]string {
		var out [][]string
		for _, r := range rules {
			out = append(out, append(append([]string{r.Name, r.Tool, r.Help}, r.Examples...), r.Patterns...))
		}
		return out
	}
	before, rulesBefore := p.Help().Text(), said(p.EnabledRules())

	h := p.Help()
	h.Modes[0].Does = "changed"
	for _, d := range h.Domains {
		for _, r := range d.Rules {
			if len(r.Examples) > 0 {
				r.Examples[0] = "changed"
			}
		}
	}
	rules := p.EnabledRules()
	rules[0].Examples[0], rules[0].Patterns[0] = "changed", "changed"
	rules[1] = planner.Rule{}

	require.Equal(t, before, p.Help().Text())
	require.Equal(t, rulesBefore, said(p.EnabledRules()))
}
