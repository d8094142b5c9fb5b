package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestApprovalsThroughRestarts: calls awaiting approval survive a SIGKILLed executor and a PostgreSQL
// restart; decided afterwards they run or are rejected, and those left undecided expire on time (within a
// second of their bound) — each with exactly one receipt.
func TestApprovalsThroughRestarts(t *testing.T) {
	// In parallel: its PostgreSQL is a private cluster of its own, and it mostly waits on restarts and leases.
	t.Parallel()
	bins := testBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, dbURL, pool, logs := restartableDB(t, ctx, bins, "approvals")
	env := []string{"GEM_DB_CONNECT_WAIT=2m"}
	exec, err := startExecutor(bins, dbURL, "approvals-1", env, logs, pool, true)
	require.NoError(t, err)

	// Notes wait up to a minute for a decision; reminder lists 20 s (long enough to outlive the restarts).
	_, err = pool.Exec(ctx, `INSERT INTO core_approval_policies (permission, expires_ms) VALUES ('write:db', 60000), ('read:reminders', 20000)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `SELECT gem_caller_grant('boss', '{approve}')`)
	require.NoError(t, err)
	var notes, reminders []uuid.UUID
	for i := range 10 {
		var id uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input)
			VALUES ('os.create_note', jsonb_build_object('domain', 'business', 'title', 'held ' || $1::int, 'content', 'x')) RETURNING id`, i).Scan(&id))
		notes = append(notes, id)
	}
	for range 5 {
		var id uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.list_reminders', '{}') RETURNING id`).Scan(&id))
		reminders = append(reminders, id)
	}
	pendingCount := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_pending_approvals`).Scan(&n))
		return n
	}
	require.Equal(t, 15, pendingCount())

	// The executor dies, PostgreSQL restarts, a new executor starts: every call still waits.
	exec.kill()
	require.NoError(t, c.restart())
	pool.Reset() // its connections died with the server
	exec, err = startExecutor(bins, dbURL, "approvals-2", env, logs, pool, true)
	require.NoError(t, err)
	t.Cleanup(exec.kill)
	require.Equal(t, 15, pendingCount())
	require.Equal(t, 0, count(t, pool, `SELECT count(*) FROM core_tool_receipts`))

	// Decided now: five approved, five rejected.
	for i, id := range notes {
		_, err := pool.Exec(ctx, `SELECT gem_call_decide($1, $2, 'after the restart', 'boss')`, id, i < 5)
		require.NoError(t, err)
	}
	waitFor := func(ids []uuid.UUID) map[uuid.UUID]string {
		t.Helper()
		got := map[uuid.UUID]string{}
		require.Eventually(t, func() bool {
			rows, err := pool.Query(ctx, `SELECT call_id, coalesce(error_code, status) FROM core_tool_receipts WHERE call_id = ANY($1)`, ids)
			if err != nil {
				return false
			}
			got = map[uuid.UUID]string{}
			var id uuid.UUID
			var outcome string
			_, err = pgx.ForEachRow(rows, []any{&id, &outcome}, func() error { got[id] = outcome; return nil })
			return err == nil && len(got) == len(ids)
		}, 60*time.Second, 100*time.Millisecond, "receipts: %v", got)
		return got
	}
	got := waitFor(notes)
	for i, id := range notes {
		want := "rejected"
		if i < 5 {
			want = "succeeded"
		}
		require.Equal(t, want, got[id], "note %d", i)
	}

	// Left alone, the reminder lists expire, each within a second of its bound.
	got = waitFor(reminders)
	for _, id := range reminders {
		require.Equal(t, "approval_expired", got[id])
	}
	var late time.Duration
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(r.finished_at - a.expires_at) FROM core_tool_receipts r
		JOIN core_approvals a ON a.call_id = r.call_id WHERE r.call_id = ANY($1)`, reminders).Scan(&late))
	require.Less(t, late, time.Second)
	require.GreaterOrEqual(t, late, time.Duration(0))
	t.Logf("after the restarts, the last of %d expiries came %s after its bound", len(reminders), late)

	// Exactly one receipt per call; the approved notes were written once, the rejected never.
	require.Equal(t, 0, count(t, pool, `SELECT count(*) FROM core_tool_calls c WHERE (SELECT count(*) FROM core_tool_receipts r WHERE r.call_id = c.id) <> 1`))
	require.Equal(t, 5, count(t, pool, `SELECT count(*) FROM os_notes WHERE title LIKE 'held %'`))
}

func count(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
