package evals

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestArgCheck: a check compares as JSON (a whole number written in YAML equals the float JSON reads), a
// pattern matches a string or another value's JSON, a dotted path reaches into an object, an absent argument
// fails every check, and a check written wrong fails its load.
func TestArgCheck(t *testing.T) {
	t.Parallel()
	input := map[string]any{"amount_cents": 125000.0, "channel": "email", "title": "Order the skip bin", "patch": map[string]any{"priority": "high"}, "done": true}
	for _, tt := range []struct {
		prop    string
		written map[string]any
		fails   string
	}{
		{"amount_cents", map[string]any{"exact": 125000}, ""},
		{"amount_cents", map[string]any{"exact": 12500}, "amount_cents is 125000, not exact 12500"},
		{"channel", map[string]any{"one_of": []any{"sms", "email"}}, ""},
		{"channel", map[string]any{"one_of": []any{"sms", "both"}}, `channel is "email", not one_of ["sms","both"]`},
		{"title", map[string]any{"pattern": "(?i)skip bin"}, ""},
		{"amount_cents", map[string]any{"pattern": "^125"}, ""},
		{"patch.priority", map[string]any{"exact": "high"}, ""},
		{"done", map[string]any{"present": true}, ""},
		{"due_at", map[string]any{"present": true}, "due_at is absent, not present true"},
	} {
		c, err := loadCheck(tt.prop, tt.written, time.Time{})
		require.NoError(t, err)
		err = c.CheckInput(input, time.UTC)
		if tt.fails == "" {
			require.NoError(t, err, "%s %v", tt.prop, tt.written)
		} else {
			require.EqualError(t, err, tt.fails)
		}
	}
	for says, written := range map[string]map[string]any{
		"not 2 of them":                  {"exact": 1, "present": true},
		"date checks need a suite's now": {"date": "tomorrow"},
		`unknown check "soon"`:           {"soon": true},
		"one_of takes a list":            {"one_of": "email"},
		"pattern: error parsing":         {"pattern": "(unclosed"},
		"present takes true":             {"present": false},
	} {
		_, err := loadCheck("x", written, time.Time{})
		require.ErrorContains(t, err, says)
	}
}

// TestMatchCalls: expected calls pair with calls made of their tool whose checks hold, as many as can pair; one
// that no call matches says what came closest.
func TestMatchCalls(t *testing.T) {
	t.Parallel()
	id, err := loadCheck("task_id", map[string]any{"exact": "b"}, time.Time{})
	require.NoError(t, err)
	want := []ChatCall{{Tool: "os.list_tasks"}, {Tool: "os.complete_task", Args: []ArgCheck{id}, Group: 1}, {Tool: "os.create_note", Group: 2}}
	made := []madeCall{
		{tool: "os.list_tasks", args: map[string]any{}},
		{tool: "os.complete_task", args: map[string]any{"task_id": "a"}},
		{tool: "os.complete_task", args: map[string]any{"task_id": "b"}},
	}
	at, why := matchCalls(want, made)
	require.Equal(t, []int{0, 2, -1}, at)
	require.Equal(t, []string{"os.create_note was not called"}, why)
	at, why = matchCalls(want[1:2], made[1:2])
	require.Equal(t, []int{-1}, at)
	require.Equal(t, []string{`os.complete_task: task_id is "a", not exact "b"`}, why)

	// The expected call that checks nothing must not take the call the other one needed: taking calls first
	// come, first served paired only one of these.
	anyTask := ChatCall{Tool: "os.complete_task"}
	bTask := ChatCall{Tool: "os.complete_task", Args: []ArgCheck{id}}
	bThenA := []madeCall{made[2], made[1]}
	at, why = matchCalls([]ChatCall{anyTask, bTask}, bThenA)
	require.Equal(t, []int{1, 0}, at)
	require.Empty(t, why)
	// In order when it can be: two calls that fit either expected call pair in the order they came.
	at, _ = matchCalls([]ChatCall{{Tool: "os.complete_task"}, {Tool: "os.complete_task", Group: 1}}, made[1:])
	require.Equal(t, []int{0, 1}, at)
	// An expected call of a tool called too few times says so.
	_, why = matchCalls([]ChatCall{anyTask, {Tool: "os.complete_task", Group: 1}, {Tool: "os.complete_task", Group: 2}}, made[1:])
	require.Equal(t, []string{"os.complete_task was called fewer times than expected"}, why)
}
