package run_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/stretchr/testify/require"
)

// TestApprovalsInRuns (not parallel: its policy holds every write while it runs): a run whose call awaits
// approval answers at once, saying so, and completes once the call is approved and has run.
func TestApprovalsInRuns(t *testing.T) {
	b := setup(t, shared.dbURL)
	ctx := context.Background()
	var policy int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_approval_policies (permission, agents_only, expires_ms, note)
		VALUES ('write:db', false, 60000, $1) RETURNING id`, t.Name()).Scan(&policy))
	t.Cleanup(func() { _, _ = b.pool.Exec(ctx, `DELETE FROM core_approval_policies WHERE id = $1`, policy) })

	start := time.Now()
	resp := b.run(t, &brain.RunParams{Message: "create a task to ring Ann about approvals", Mode: brain.ModeEnqueueAndWait})
	require.Less(t, time.Since(start), 10*time.Second, "the run does not wait for a decision")
	require.False(t, resp.OK)
	var awaiting *brain.Error
	for _, e := range resp.Errors {
		if e.Code == brain.EAWAITING {
			awaiting = e
		}
		require.NotEqual(t, brain.ETIMEOUT, e.Code, "a call awaiting approval is not a timeout")
	}
	require.NotNil(t, awaiting, "%+v", resp.Errors)
	require.Len(t, resp.Pending, 1)
	id := resp.Pending[0]

	_, err := gemsql.CallDecide(ctx, b.pool, id, true, "ok", requester)
	require.NoError(t, err)
	// The executor runs the approved call; the run is complete once its receipt is written.
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = b.waiter.WaitOne(wait, id)
	require.NoError(t, err)
	run := b.getRun(t, resp.RunID)
	require.True(t, run.OK, "%+v", run.Errors)
	require.Len(t, run.Receipts, 1)
}
