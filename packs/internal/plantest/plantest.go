// Package plantest checks a pack's brain side the same way for every pack: each of its tools has a rule and
// a sentence or a reason for none, and each rule's examples plan inputs its registry entry accepts.
package plantest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// Now is when the packs' rule tests plan: Wednesday 18 November 2026, 09:00 UTC.
var Now = time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC)

// Registry is the registry the packs' entries make (tools.registry.json).
func Registry(t testing.TB) *registry.Registry {
	t.Helper()
	raw, err := packs.Registry()
	require.NoError(t, err)
	reg, err := registry.Parse(raw)
	require.NoError(t, err)
	return reg
}

// Planner plans with rules alone, against Registry, in UTC; every rule's tool must be in it.
func Planner(t testing.TB, rules []planner.Rule) (*planner.RulesPlanner, *registry.Registry) {
	t.Helper()
	reg := Registry(t)
	p, err := planner.NewRulesPlanner(reg, rules, time.UTC, "")
	require.NoError(t, err)
	require.Len(t, p.EnabledRules(), len(rules), "every rule's tool is in the registry")
	return p, reg
}

// Complete checks a pack's rules and sentences against its tools: each tool has a rule, or a reason in
// withoutRule (not both), and a sentence, or a reason in withoutSentence; rules, sentences and reasons name
// only the pack's tools.
func Complete(t *testing.T, tools []string, rules []planner.Rule, sentences run.Sentences, withoutRule, withoutSentence map[string]string) {
	t.Helper()
	ruled := map[string]bool{}
	for _, r := range rules {
		require.Contains(t, tools, r.Tool, "rule %s names a tool of another pack", r.Name)
		ruled[r.Tool] = true
	}
	for tool := range sentences {
		require.Contains(t, tools, tool, "a sentence for a tool of another pack")
	}
	for _, reasons := range []map[string]string{withoutRule, withoutSentence} {
		for tool := range reasons {
			require.Contains(t, tools, tool, "a reason for a tool of another pack")
		}
	}
	for _, tool := range tools {
		why, excused := withoutRule[tool]
		require.True(t, ruled[tool] != excused, "%s: a rule, or a reason for none (and not both): %q", tool, why)
		why, excused = withoutSentence[tool]
		_, said := sentences[tool]
		require.True(t, said != excused, "%s: a sentence, or a reason for none (and not both): %q", tool, why)
	}
}

// ExamplesPlanValidInputs plans every example of every rule: one call to the rule's tool, whose input the
// tool's registry entry accepts once the run's context (ids) gives what the message left out.
func ExamplesPlanValidInputs(t *testing.T, rules []planner.Rule, ids map[string]any) {
	t.Helper()
	p, reg := Planner(t, rules)
	for _, r := range rules {
		require.NotEmpty(t, r.Examples, r.Name)
		for _, ex := range r.Examples {
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: ex, Now: Now})
			require.NoError(t, err, "%s: %q", r.Name, ex)
			require.Len(t, plan.Calls, 1, "%s: %q", r.Name, ex)
			require.Equal(t, r.Tool, plan.Calls[0].Tool, "%s: %q", r.Name, ex)
			calls := slices.Clone(plan.Calls[:1])
			require.Empty(t, brain.PrepareCalls(reg, calls, ids), "%s: %q: %s", r.Name, ex, calls[0].Input)
		}
	}
}
