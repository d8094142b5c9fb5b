package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestEventsNeedTheirRun: gem_run_events_add adds nothing to a run that does not exist, as the foreign key
// its events had (dropped by 00056: its check cost as much as the event) refused.
func TestEventsNeedTheirRun(t *testing.T) {
	t.Parallel()
	pool, _ := sqltest.NewDB(t)
	id := uuid.Must(uuid.NewV7())
	var last *int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT gem_run_events_add($1, ARRAY['answer'], ARRAY['{"reply": "x"}'::jsonb])`, id).Scan(&last))
	require.Nil(t, last)
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM brain_run_events WHERE run_id = $1`, id).Scan(&n))
	require.Zero(t, n)
}

// TestEventsNotifyOnlyWatchedRuns: adding a run's events notifies gem_run_event only while a stream watches
// the run (migration 00058). Before, every commit with events woke every listening backend of the database —
// the executors' and brains' listeners — whether or not anyone streamed the run.
func TestEventsNotifyOnlyWatchedRuns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, dbURL := sqltest.NewDB(t)
	run := &brain.Run{ID: uuid.Must(uuid.NewV7()), Message: "watched?", Mode: brain.ModeEnqueue, Status: brain.RunEnqueued,
		Decision: brain.Decision{Mode: "enqueue", Planner: "rules"}, PlannedCalls: []brain.PlannedCall{}}
	require.NoError(t, postgres.RunInsert(ctx, pool, run))
	listen, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer listen.Close(context.Background())
	_, err = listen.Exec(ctx, "LISTEN "+postgres.RunEventChannel)
	require.NoError(t, err)
	notified := func() bool {
		t.Helper()
		// A receipt event: one per call, so each addition adds one.
		_, err := pool.Exec(ctx, `SELECT gem_run_events_add($1, ARRAY['receipt'], ARRAY[jsonb_build_object('call_id', gen_random_uuid())])`, run.ID)
		require.NoError(t, err)
		for {
			// Silence for half a second is the answer "not notified": the notification, if any, comes at commit.
			waitCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			n, err := listen.WaitForNotification(waitCtx)
			cancel()
			if err != nil {
				require.ErrorIs(t, err, context.DeadlineExceeded)
				return false
			}
			if n.Payload == run.ID.String() {
				return true
			}
		}
	}
	require.False(t, notified(), "nobody watches the run")
	require.NoError(t, postgres.RunWatch(ctx, pool, run.ID, "stream-1"))
	require.True(t, notified(), "a stream watches the run")
	require.NoError(t, postgres.RunUnwatch(ctx, pool, run.ID, "stream-1"))
	require.False(t, notified(), "the stream ended")
}
