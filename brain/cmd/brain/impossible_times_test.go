package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusesImpossibleTimes: POST /brain/run with a day or time that cannot be answers 400 with a
// question about it, as for a missing suburb, and enqueues nothing ("tomorrow at 99pm" was a reminder four
// days later, "0000-01-01" a due date in 1 BC, "2026-02-30" part of a title).
func TestRunRefusesImpossibleTimes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tt := range []struct{ message, field, said string }{
		{"remind me to call Ann tomorrow at 99pm", "remind_at", "99pm"},
		{"remind me to call Ann at 25:61", "remind_at", "25:61"},
		{"create a task to renew the licence on 0000-01-01", "due_at", "0000-01-01"},
		{"create a task to pay the council 2026-02-30", "due_at", "2026-02-30"},
	} {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			resp, status := a.run(map[string]any{"message": tt.message, "mode": "enqueue_and_wait"})
			require.Equal(t, http.StatusBadRequest, status, "%+v", resp)
			require.Len(t, resp.Errors, 1)
			missing := resp.Errors[0].Details.(map[string]any)["missing"].([]any)
			question := missing[0].(map[string]any)
			require.Equal(t, tt.field, question["field"])
			require.Contains(t, question["question"], tt.said)
			require.Contains(t, resp.Errors[0].Message, tt.said)
			require.Equal(t, 0, countCalls(t, shared.pool, resp.RunID))
		})
	}
}
