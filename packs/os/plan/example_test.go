package osplan_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/packs/internal/plantest"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/stretchr/testify/require"
)

// The code between the doc markers is shown verbatim in docs/adding-a-tool.md, section 5
// (TestAddingAToolDocBrainSide checks, and plans and says with it).

// doc:begin rule

// deferRule plans "defer task <id> until friday": the id from the message (or the run's context), the
// day at 17:00 in the brain's time zone.
var deferRule = planner.Rule{
	Name: "defer_task", Tool: ospack.DeferTask,
	Help:     "put a task off to a later day",
	Examples: []string{"defer task 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 until friday"},
	Patterns: []string{`^defer\s+task(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:until|to)\s+(?P<when>.+)$`},
	Build: func(m *planner.Match) (any, error) {
		due, _, err := m.When(m.Group("when"), "due_at")
		if err != nil {
			return nil, err
		}
		if due.IsZero() {
			return nil, planner.Missing("due_at", `until when? For example "defer task <id> until friday"`)
		}
		return ospack.DeferTaskInput{TaskID: m.ID(), DueAt: due}, nil
	},
}

// doc:end rule

// doc:begin sentence

// deferSentence is what the answer says of a deferred task, from the call's typed result (the entry's
// output: task_id and deferred_until).
var deferSentence = run.Says(func(in ospack.DeferTaskInput, out ospack.DeferTaskOutput, when run.When) string {
	return fmt.Sprintf("Deferred task %s until %s.", out.TaskID, when(out.DeferredUntil))
}, nil)

// doc:end sentence

// TestAddingAToolDocBrainSide: docs/adding-a-tool.md shows the rule and the sentence above verbatim, and
// they work: the rule plans its example into an input os.defer_task's entry accepts, and the sentence says
// the result.
func TestAddingAToolDocBrainSide(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/adding-a-tool.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	regions := regexp.MustCompile(`(?s)// doc:begin (\w+)\n\n(.*?)\n\n// doc:end (\w+)`).FindAllStringSubmatch(string(src), -1)
	require.Len(t, regions, 2)
	for _, r := range regions {
		require.Equal(t, r[1], r[3], "doc markers cross")
		require.Contains(t, string(doc), "```go\n"+r[2]+"\n```", "docs/adding-a-tool.md shows example_test.go's %s verbatim", r[1])
	}

	p, reg := plantest.Planner(t, []planner.Rule{deferRule}, time.UTC)
	plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: deferRule.Examples[0], Now: plantest.Now})
	require.NoError(t, err)
	require.Len(t, plan.Calls, 1)
	require.JSONEq(t, `{"task_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "due_at": "2026-11-20T17:00:00Z"}`, string(plan.Calls[0].Input))
	tool, _ := reg.Tool(ospack.DeferTask)
	require.NoError(t, tool.ValidateInput(plan.Calls[0].Input))

	out, err := json.Marshal(map[string]any{"task_id": "t1", "deferred_until": "2026-11-20T17:00:00Z"})
	require.NoError(t, err)
	said, ok := deferSentence.Say(plan.Calls[0].Input, out, func(t time.Time) string { return t.Format("Mon 2 Jan 15:04") })
	require.True(t, ok)
	require.Equal(t, "Deferred task t1 until Fri 20 Nov 17:00.", said)
	require.False(t, strings.Contains(said, "{"), "the sentence reads the result's fields")
}
