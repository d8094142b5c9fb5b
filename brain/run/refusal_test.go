package run_test

import (
	"github.com/gemhq/gem/brain/internal/testenv"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestRunRefusesImpossibleTimes: a run with a day or time that cannot be is refused (invalid) with a
// question about it, as for a missing suburb, and enqueues nothing ("tomorrow at 99pm" was a reminder four
// days later, "0000-01-01" a due date in 1 BC, "2026-02-30" part of a title).
func TestRunRefusesImpossibleTimes(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)
	for _, tt := range []struct{ message, field, said string }{
		{"remind me to call Ann tomorrow at 99pm", "remind_at", "99pm"},
		{"remind me to call Ann at 25:61", "remind_at", "25:61"},
		{"create a task to renew the licence on 0000-01-01", "due_at", "0000-01-01"},
		{"create a task to pay the council 2026-02-30", "due_at", "2026-02-30"},
	} {
		t.Run(tt.message, func(t *testing.T) {
			t.Parallel()
			resp := b.run(t, &brain.RunParams{Message: tt.message, Mode: brain.ModeEnqueueAndWait})
			require.Len(t, resp.Errors, 1, "%+v", resp)
			require.Equal(t, brain.EINVALID, resp.Errors[0].Code)
			missing := detailsOf(t, resp.Errors[0])["missing"].([]any)
			question := missing[0].(map[string]any)
			require.Equal(t, tt.field, question["field"])
			require.Contains(t, question["question"], tt.said)
			require.Contains(t, resp.Errors[0].Message, tt.said)
			require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
		})
	}
}

// TestNegativeLineItemIsRefused: "-12 x sheets" is refused (invalid) with a reason and nothing runs; it used
// to lose its sign and add 12 sheets.
func TestNegativeLineItemIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)
	resp := b.run(t, &brain.RunParams{Message: "add line item: -12 x colorbond sheets at $85.50", Mode: brain.ModeEnqueueAndWait,
		Context: map[string]any{"quote_id": uuid.NewString()}})
	require.NotEmpty(t, resp.Errors, "%+v", resp)
	require.Equal(t, brain.EINVALID, resp.Errors[0].Code, "%+v", resp.Errors)
	require.Contains(t, resp.AssistantMessage, "cannot be negative")
	require.NotNil(t, resp.Enqueued, "an empty list, as GEM's clients read it")
	require.Empty(t, resp.Enqueued)
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
}
