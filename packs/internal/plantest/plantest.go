// Package plantest is what the packs' plan tests share: the registry the packs' entries make, and the
// checks every pack's rules and sentences get (every tool has a rule and a sentence or says why not; the
// rules' examples plan valid inputs; messages plan exact inputs; a refusal asks for a field).
package plantest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// Now is when the packs' rule tests plan unless they say otherwise: Wednesday 18 November 2026, 09:00 UTC.
var Now = time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC)

// Registry is the registry the packs' entries make (packs.Registry).
func Registry(t testing.TB) *registry.Registry {
	t.Helper()
	raw, err := packs.Registry()
	require.NoError(t, err)
	reg, err := registry.Parse(raw)
	require.NoError(t, err)
	return reg
}

// Planner plans with rules over the packs' registry, reading dates in loc; every rule's tool must be in it.
func Planner(t testing.TB, rules []planner.Rule, loc *time.Location) (*planner.RulesPlanner, *registry.Registry) {
	t.Helper()
	reg := Registry(t)
	p, err := planner.NewRulesPlanner(reg, rules, loc, "")
	require.NoError(t, err)
	require.Len(t, p.EnabledRules(), len(rules), "every rule's tool is in the registry")
	return p, reg
}

// ExamplesPlanValidInputs: every example a rule shows plans one call to its tool (at now), with an input the
// tool's registry entry accepts once runContext gives the ids a message leaves to the run's context.
func ExamplesPlanValidInputs(t *testing.T, rules []planner.Rule, loc *time.Location, now time.Time, runContext map[string]any) {
	t.Helper()
	p, reg := Planner(t, rules, loc)
	for _, r := range rules {
		require.NotEmpty(t, r.Examples, r.Name)
		for _, ex := range r.Examples {
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: ex, Now: now})
			require.NoError(t, err, "%s: %q", r.Name, ex)
			require.Len(t, plan.Calls, 1, "%s: %q", r.Name, ex)
			require.Equal(t, r.Tool, plan.Calls[0].Tool, "%s: %q", r.Name, ex)
			require.Empty(t, brain.PrepareCalls(reg, plan.Calls, runContext), "%s: %q: %s", r.Name, ex, plan.Calls[0].Input)
		}
	}
}

// Case is a message and the one call it plans: the tool and its input, as JSON. (An alias of a struct type,
// so a table of cases may leave out the field names.)
type Case = struct{ Message, Tool, Input string }

// PlansAs checks that each case's message plans (at now) one call, to its tool with exactly its input.
func PlansAs(t *testing.T, p *planner.RulesPlanner, now time.Time, cases []Case) {
	t.Helper()
	for _, c := range cases {
		plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: c.Message, Now: now})
		require.NoError(t, err, c.Message)
		require.Len(t, plan.Calls, 1, "%s: %+v", c.Message, plan)
		require.Equal(t, c.Tool, plan.Calls[0].Tool, c.Message)
		require.JSONEq(t, c.Input, string(plan.Calls[0].Input), c.Message)
	}
}

// Refused plans message (at now), which the planner must refuse as invalid: the field it asks for, or ""
// when it refuses without a question, and the refusal's message.
func Refused(t *testing.T, p *planner.RulesPlanner, now time.Time, message string) (field, said string) {
	t.Helper()
	_, err := p.Plan(context.Background(), brain.PlanRequest{Message: message, Now: now})
	var be *brain.Error
	require.True(t, errors.As(err, &be), "%s: %v", message, err)
	require.Equal(t, brain.EINVALID, be.Code, message)
	details, _ := be.Details.(map[string]any)
	missing, _ := details["missing"].([]map[string]string)
	if len(missing) == 0 {
		return "", be.Message
	}
	require.Len(t, missing, 1, "%s: %v", message, be.Details)
	return missing[0]["field"], be.Message
}

// EveryToolIsPlannedAndSaid: each of tools has a rule and a sentence, or the reason it has none in
// withoutRule or withoutSentence (and not both); rules and sentences name only tools of tools.
func EveryToolIsPlannedAndSaid(t *testing.T, tools []string, rules []planner.Rule, sentences run.Sentences, withoutRule, withoutSentence map[string]string) {
	t.Helper()
	ruled := map[string]bool{}
	for _, r := range rules {
		require.Contains(t, tools, r.Tool, "rule %s names a tool it does not plan for", r.Name)
		ruled[r.Tool] = true
	}
	for tool := range sentences {
		require.Contains(t, tools, tool, "a sentence for a tool it does not speak for")
	}
	for _, reasons := range []map[string]string{withoutRule, withoutSentence} {
		for tool := range reasons {
			require.Contains(t, tools, tool, "a reason for a tool it does not speak for")
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
