package run_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/packs/plans"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// TestRecordedIsTheServicesContract: a run's response may come before its answer is committed; once
// Recorded returns the answer is in brain_runs, Close waits for every answer still being recorded, and
// after Close answers are recorded before their responses.
// Nothing runs the call (no executor), so the wait ends without a receipt and the answer says so.
func TestRecordedIsTheServicesContract(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := sqltest.NewDB(t)
	reg, err := testenv.GEMRegistry()
	require.NoError(t, err)
	waiter := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, waiter.Start(ctx))
	t.Cleanup(waiter.Stop)
	rules, err := planner.NewRulesPlanner(reg, plans.Rules, time.UTC, "")
	require.NoError(t, err)
	s := run.NewService(reg, rules, pool, waiter)
	s.UseSentences(plans.Sentences)

	read := func(id any) (status string, answer *string) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT status, assistant_message FROM brain_runs WHERE id = $1`, id).Scan(&status, &answer))
		return status, answer
	}
	ask := func(message string) *brain.RunResponse {
		resp, err := s.Run(ctx, &brain.RunParams{Message: message, Mode: brain.ModeEnqueueAndWait,
			Limits: &brain.Limits{WaitTimeoutMS: 1000}}, "tester", "")
		require.NoError(t, err)
		require.Contains(t, resp.AssistantMessage, "still running; I stopped waiting")
		return resp
	}

	first := ask("create a task to call Ann")
	s.Recorded(ctx, first.RunID)
	status, answer := read(first.RunID)
	require.Equal(t, string(brain.RunWaiting), status)
	require.NotNil(t, answer, "Recorded returned before the answer was committed")
	require.Equal(t, first.AssistantMessage, *answer)

	second := ask("create a task to call Bob")
	s.Close()
	_, answer = read(second.RunID)
	require.NotNil(t, answer, "Close returned before every answer was committed")
	require.Equal(t, second.AssistantMessage, *answer)

	// After Close a run still going (an async one outliving its request) records its answer before it
	// answers: nothing joins the wait Close ended, and nothing is written behind the brain's back.
	third := ask("create a task to call Cy")
	_, answer = read(third.RunID)
	require.NotNil(t, answer, "an answer made after Close was not recorded before its response")
	require.Equal(t, third.AssistantMessage, *answer)
}
