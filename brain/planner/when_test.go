package planner_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/stretchr/testify/require"
)

// TestRulesRefuseImpossibleTimes: a day or a time of day that cannot be (99pm, 25:61, 30 February, the year
// 0) is asked about like a missing suburb, naming the field it was for; it never rolls over into another
// day or stays in a title.
func TestRulesRefuseImpossibleTimes(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	for _, tt := range []struct{ message, field, said string }{
		{"remind me to call Ann tomorrow at 99pm", "remind_at", "99pm"},
		{"remind me to call Ann at 25:61", "remind_at", "25:61"},
		{"remind me to call Ann tomorrow at 7:75am", "remind_at", "7:75am"},
		{"remind me to call Ann tomorrow at 0am", "remind_at", "0am"},
		{"remind me to call Ann tomorrow at 123pm", "remind_at", "123pm"},
		{"remind me to pay the council on 2026-02-30", "remind_at", "2026-02-30"},
		{"create a task to renew the licence on 0000-01-01", "due_at", "0000-01-01"},
		{"create a task to pay the council 2026-02-30", "due_at", "2026-02-30"},
		{"create a task to order tiles by 2026-13-01", "due_at", "2026-13-01"},
		{"create a task to renew the lease on 9999-12-31", "due_at", "9999-12-31"},
		{"follow up with Ann about the quote on 2026-04-31", "due_at", "2026-04-31"},
		{"book a meeting with the supplier on friday at 24:00", "start_at", "24:00"},
		{"add an appointment: dentist on 2026-02-29 at 9am", "start_at", "2026-02-29"},
		{"move event " + id + " to friday at 13pm", "patch", "13pm"},
		{"schedule an inspection on friday at 10:60am", "preferred_window", "10:60am"},
		{"schedule the job for 2026-06-31", "start_date", "2026-06-31"},
		{"defer task " + id + " to 2026-09-31", "due_at", "2026-09-31"},
		{"set task " + id + " due date to 2026-11-31", "patch", "2026-11-31"},
		{"I commit to no work on Sundays, review on 2026-02-30", "review_at", "2026-02-30"},
		{"find a free slot on 2026-02-30", "from", "2026-02-30"},
		{"show the cash flow from 2026-02-30 to 2026-03-31", "from", "2026-02-30"},
		{"profit and loss march 0000", "from", "0000"},
		{"show the audit log since 2026-02-30", "since", "2026-02-30"},
		{"show the audit log since 100000 days ago", "since", "100000 days ago"},
		{"sync highlevel contacts since 2026-02-30", "since", "2026-02-30"},
	} {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
			require.Error(t, err, "planned %+v", plan)
			require.Equal(t, brain.EINVALID, brain.ErrorCode(err), "%v", err)
			missing, _ := brain.AsError(err).Details.(map[string]any)["missing"].([]map[string]string)
			require.Len(t, missing, 1, "%v", err)
			require.Equal(t, tt.field, missing[0]["field"])
			require.Contains(t, missing[0]["question"], tt.said, "the question names what was said")
			require.Contains(t, missing[0]["question"], "?", "a question")
		})
	}
}

// TestRulesAcceptEdgeTimes: the edges of what can be are still understood.
func TestRulesAcceptEdgeTimes(t *testing.T) {
	t.Parallel()
	p, _ := gemPlanner(t)
	for _, tt := range []struct{ message, field, want string }{
		{"remind me to call Ann tomorrow at 12am", "remind_at", "2026-11-19T00:00:00+11:00"},
		{"remind me to call Ann tomorrow at 12pm", "remind_at", "2026-11-19T12:00:00+11:00"},
		{"remind me to call Ann tomorrow at 11:59pm", "remind_at", "2026-11-19T23:59:00+11:00"},
		{"remind me to call Ann at 23:59", "remind_at", "2026-11-18T23:59:00+11:00"},
		{"remind me to call Ann at 0:00", "remind_at", "2026-11-19T00:00:00+11:00"},
		{"create a task to file the return by 2028-02-29", "due_at", "2028-02-29T17:00:00+11:00"},
		{"create a task to order tiles by 2026-2-3", "due_at", "2026-02-03T17:00:00+11:00"},
	} {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			plan, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
			require.NoError(t, err)
			require.Len(t, plan.Calls, 1)
			var in map[string]any
			require.NoError(t, json.Unmarshal(plan.Calls[0].Input, &in))
			require.Equal(t, tt.want, in[tt.field], "%s", plan.Calls[0].Input)
			require.NotContains(t, in["title"], "2026-2-3")
		})
	}
}

// TestDeferToADate: a date's dashes are not the reason's separator ("to 2026-09-30" was "to 2026", reason "09-30").
func TestDeferToADate(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"defer task " + id + " to 2026-12-01", "os.defer_task", map[string]any{"task_id": id, "due_at": "2026-12-01T17:00:00+11:00"}},
		{"defer task " + id + " to 2026-12-01 - waiting on parts", "os.defer_task", map[string]any{"task_id": id, "due_at": "2026-12-01T17:00:00+11:00", "reason": "waiting on parts"}},
		{"defer task " + id + " to friday: waiting on parts", "os.defer_task", map[string]any{"task_id": id, "due_at": "2026-11-20T17:00:00+11:00", "reason": "waiting on parts"}},
	})
}
