package gemsql_test

import (
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestCallCancel: gem_call_cancel cancels a held or queued call for the caller that made it, with exactly one
// receipt (failed, cancelled) — once, however often it is asked — and its job cancelled; another caller, a
// revoked one, a running call and a finished one are each left as they were.
func TestCallCancel(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant('ann', '{*}'), gem_caller_grant('bob', '{*}'), gem_caller_grant('gone', '{*}')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tools (name, approval_required) VALUES ('test.held', true), ('test.free', false)`)
	require.NoError(t, err)
	call := func(tool, by string) uuid.UUID {
		t.Helper()
		made, err := gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: tool, RequestedBy: by})
		require.NoError(t, err)
		require.Equal(t, tool == "test.held", made[0].Awaiting)
		return made[0].ID
	}
	receipts := func(id uuid.UUID) int {
		return b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE call_id = $1`, id)
	}

	// Held for approval: the approval is decided "cancelled", and the receipt says by whom.
	held := call("test.held", "ann")
	_, err = gemsql.CallCancel(ctx, b.pool, held, "bob")
	require.ErrorIs(t, err, gemsql.ErrMayNotCancel, "only the caller that made it")
	require.Contains(t, err.Error(), "caller bob may not cancel call "+held.String())
	require.Zero(t, receipts(held))
	for range 3 {
		status, err := gemsql.CallCancel(ctx, b.pool, held, "ann")
		require.NoError(t, err)
		require.Equal(t, "failed", status)
	}
	require.Equal(t, 1, receipts(held), "one receipt, however often it is cancelled")
	r, err := gemsql.ReceiptGet(ctx, b.pool, held)
	require.NoError(t, err)
	require.Equal(t, registry.CodeCancelled, r.Error.Code)
	require.Equal(t, "cancelled by ann before it ran", r.Error.Message)
	require.JSONEq(t, `{"cancelled_by": "ann"}`, string(r.Error.Details))
	require.Equal(t, "cancelled", b.stringOf(t, ctx, `SELECT decision FROM core_approvals WHERE call_id = $1`, held))
	_, err = gemsql.CallDecide(ctx, b.pool, held, true, "", "ann")
	require.ErrorIs(t, err, gemsql.ErrAlreadyDecided, "a cancelled call is never approved")
	require.Equal(t, 1, receipts(held))

	// Queued: the job is cancelled in the same transaction, and its trigger adds no second receipt.
	queued := call("test.free", "ann")
	status, err := gemsql.CallCancel(ctx, b.pool, queued, "ann")
	require.NoError(t, err)
	require.Equal(t, "failed", status)
	status, err = gemsql.CallCancel(ctx, b.pool, queued, "ann")
	require.NoError(t, err)
	require.Equal(t, "failed", status, "the status it has")
	require.Equal(t, 1, receipts(queued))
	require.Equal(t, "cancelled", b.stringOf(t, ctx, `SELECT j.state::text FROM river_job j JOIN core_tool_calls c ON c.job_id = j.id WHERE c.id = $1`, queued))
	require.Equal(t, "cancelled", b.stringOf(t, ctx, `SELECT error_code FROM core_tool_calls WHERE id = $1`, queued))

	// Running: left to finish.
	running := call("test.free", "ann")
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
		WHERE id = (SELECT job_id FROM core_tool_calls WHERE id = $1)`, running)
	require.NoError(t, err)
	status, err = gemsql.CallCancel(ctx, b.pool, running, "ann")
	require.NoError(t, err)
	require.Equal(t, "running", status)
	require.Zero(t, receipts(running))

	// A revoked caller cancels nothing of its own; an unknown call is not found.
	revoked := call("test.free", "gone")
	_, err = b.pool.Exec(ctx, `UPDATE core_callers SET revoked_at = now() WHERE name = 'gone'`)
	require.NoError(t, err)
	_, err = gemsql.CallCancel(ctx, b.pool, revoked, "gone")
	require.ErrorIs(t, err, gemsql.ErrMayNotCancel)
	require.Zero(t, receipts(revoked))
	_, err = gemsql.CallCancel(ctx, b.pool, uuid.Must(uuid.NewV7()), "ann")
	require.ErrorIs(t, err, gemsql.ErrNotFound)
}
