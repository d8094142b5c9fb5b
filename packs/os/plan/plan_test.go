package osplan_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/packs/internal/plantest"
	ospack "github.com/gemhq/gem/packs/os"
	osplan "github.com/gemhq/gem/packs/os/plan"
	"github.com/stretchr/testify/require"
)

// withoutRule are the pack's tools the rules planner does not plan, and why.
var withoutRule = map[string]string{
	ospack.ListReminders:    "not yet: reminders are listed through the LLM planner and the studio",
	ospack.CompleteReminder: "not yet: a reminder is resolved where it is shown (the studio, an agent)",
	ospack.DismissReminder:  "not yet: a reminder is resolved where it is shown (the studio, an agent)",
}

// withoutSentence are the pack's tools whose answer is the generic one (the tool and its receipt's summary),
// and why.
var withoutSentence = map[string]string{
	ospack.GetStateSnapshot:     "the snapshot is data for agents; its summary names the domain and its age",
	ospack.RefreshStateSnapshot: "the snapshot is data for agents; its summary names the domain",
	ospack.UpdateTask:           "not yet: the summary names the fields changed",
	ospack.DeferTask:            "not yet: the summary names the new due time",
	ospack.AuditLogSearch:       "not yet: the summary counts the items",
	ospack.RollbackLastAction:   "not yet: the summary says whether it rolled back and how many rows",
	ospack.ListReminders:        "not yet: the summary counts the reminders",
	ospack.CompleteReminder:     "not yet: the summary names the reminder",
	ospack.DismissReminder:      "not yet: the summary names the reminder",
}

// TestEveryToolIsPlannedAndSaid: each of the pack's tools has a rule and a sentence, or says why not; the
// pack's rules and sentences name only its own tools.
func TestEveryToolIsPlannedAndSaid(t *testing.T) {
	plantest.EveryToolIsPlannedAndSaid(t, ospack.Tools, osplan.Rules, osplan.Sentences, withoutRule, withoutSentence)
}

// TestRuleExamplesPlanValidInputs: every example a rule shows plans one call to its tool, with an input the
// tool's registry entry accepts — the typed inputs marshal to the contract.
func TestRuleExamplesPlanValidInputs(t *testing.T) {
	plantest.ExamplesPlanValidInputs(t, osplan.Rules, time.UTC, plantest.Now, nil)
}

// TestRulesLeaveUnknownsOut: what a message does not say is left out of the input (the tool's default, or
// the run's context, supplies it), never sent as an empty value.
func TestRulesLeaveUnknownsOut(t *testing.T) {
	p, _ := plantest.Planner(t, osplan.Rules, time.UTC)
	for msg, want := range map[string]string{
		"complete the task":              "", // no pattern: an id is needed in the clause
		"defer the task to friday":       `{"due_at": "2026-11-20T17:00:00Z"}`,
		"rename the task to call Ann":    `{"patch": {"title": "call Ann"}}`,
		"list my tasks":                  `{"status": "open"}`,
		"what happened today?":           `{"since": "2026-11-18T00:00:00Z"}`,
		"find notes about gutters":       `{"query": "gutters"}`,
		"create a task to call the shop": `{"title": "call the shop", "domain": "business", "priority": "normal"}`,
	} {
		plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: msg, Now: plantest.Now})
		require.NoError(t, err, msg)
		if want == "" {
			require.Empty(t, plan.Calls, msg)
			continue
		}
		require.Len(t, plan.Calls, 1, msg)
		require.JSONEq(t, want, string(plan.Calls[0].Input), msg)
		require.False(t, strings.Contains(string(plan.Calls[0].Input), `""`), "%s: an empty value: %s", msg, plan.Calls[0].Input)
	}
}

// TestSentences: what the answer says of each of the pack's calls, from the input the rule planned and the
// result the tool returns; a result that is not the tool's gets the generic sentence.
func TestSentences(t *testing.T) {
	when := func(t time.Time) string { return t.UTC().Format("Mon 2 Jan 15:04") }
	for _, tt := range []struct{ tool, in, out, want string }{
		{ospack.HealthCheck, `{}`, `{"status": "ok", "checks": {}}`, "GEM is ok."},
		{ospack.CreateTask, `{"title": "call Ann", "domain": "personal", "priority": "high", "due_at": "2026-11-20T17:00:00Z"}`,
			`{"task_id": "t1"}`, "Created task “call Ann” (high priority, personal, due Fri 20 Nov 17:00)."},
		{ospack.CreateTask, `{"title": "call Ann", "domain": "business"}`, `{"task_id": "t1"}`, "Created task “call Ann”."},
		{ospack.CreateNote, `{"domain": "business", "title": "Gutters", "content": "Gutters need replacing"}`, `{"note_id": "n1"}`,
			"Saved a business note: “Gutters”."},
		{ospack.CompleteTask, `{"task_id": "t1"}`, `{"task_id": "t1", "task": {"title": "call Ann"}}`, "Marked task “call Ann” done."},
		{ospack.CompleteTask, `{"task_id": "t1"}`, `{"task_id": "t1", "task": {}}`, "Marked task t1 done."},
		{ospack.ListTasks, `{}`, `{"tasks": [{"title": "call Ann", "priority": "high", "due_at": "2026-11-20T17:00:00Z"}, {"title": "quote", "due_at": null}], "count": 2}`,
			"2 tasks:\n1. call Ann (high, due Fri 20 Nov 17:00)\n2. quote"},
		{ospack.ListTasks, `{}`, `{"tasks": [], "count": 0}`, "No tasks found."},
		{ospack.SearchNotes, `{"query": "gutters"}`, `{"results": [{"title": "Gutters"}], "count": 1}`, "1 note:\n1. Gutters"},
		{ospack.CreateReminder, `{"title": "call Ann", "remind_at": "2026-11-19T15:00:00Z"}`, `{"reminder_id": "r1"}`,
			"I will remind you to call Ann on Thu 19 Nov 15:00."},
	} {
		said, ok := osplan.Sentences[tt.tool].Say(json.RawMessage(tt.in), json.RawMessage(tt.out), when)
		require.True(t, ok, tt.tool)
		require.Equal(t, tt.want, said, tt.tool)
	}
	for _, out := range []string{`null`, `[]`, `"ok"`, `{"tasks": "none"}`} {
		_, ok := osplan.Sentences[ospack.ListTasks].Say(json.RawMessage(`{}`), json.RawMessage(out), when)
		require.False(t, ok, "%s is not os.list_tasks's result", out)
	}

	has := func(tool string) bool { return tool == ospack.CompleteTask }
	next := osplan.Sentences[ospack.CreateTask].Next(json.RawMessage(`{"title": "x", "domain": "business"}`), json.RawMessage(`{"task_id": "t1"}`), has)
	require.Equal(t, []string{`when it is done: "complete task t1"`}, next)
	require.Empty(t, osplan.Sentences[ospack.CreateTask].Next(json.RawMessage(`{}`), json.RawMessage(`{"task_id": "t1"}`), func(string) bool { return false }),
		"no suggestion of a tool the registry lacks")
}
