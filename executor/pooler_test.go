package executor_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestThroughTransactionPooler runs executors with DATABASE_URL through PgBouncer in transaction mode and
// GEM_DATABASE_SESSION_URL straight to PostgreSQL, as docs/scaling.md says to. Every part that needs a
// session is exercised: receipts are heard by a waiter whose pool goes through the pooler (its LISTEN must
// not), calls are picked up only on River's notifications (the poll is an hour), a killed executor's
// running call is taken up by another (liveness locks), and the killed executor's id can start again.
func TestThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	pooledURL := sqltest.PgBouncer(t, b.url)

	pooled, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: pooledURL, SessionURL: b.url, ApplicationName: "gem-test-pooled"})
	require.NoError(t, err)
	t.Cleanup(pooled.Close)
	waiter := gemsql.NewReceiptWaiter(pooled, nil)
	require.NoError(t, waiter.Start(ctx))
	t.Cleanup(waiter.Stop)

	// Migrations hold a session lock: through the pool, they run on the session URL.
	_, err = gemsql.Migrate(ctx, pooled, nil, packs.Lines()...)
	require.NoError(t, err)

	env := []string{"DATABASE_URL=" + pooledURL, "GEM_DATABASE_SESSION_URL=" + b.url, "GEM_EXECUTOR_FETCH_POLL_INTERVAL=1h"}
	first := "pooled-" + uuid.NewString()[:8]
	h := b.startHelper(t, append(env, "GEM_EXECUTOR_ID="+first)...)

	insert := func(tool, input string) uuid.UUID {
		var id uuid.UUID
		require.NoError(t, pooled.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`, tool, input).Scan(&id))
		return id
	}
	var quick []uuid.UUID
	for range 20 {
		quick = append(quick, insert("test.safe", `{}`))
	}
	for _, id := range quick { // most are read, not heard: the waits for the slow call below need the LISTEN
		waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		r, err := waiter.WaitOne(waitCtx, id)
		cancel()
		require.NoError(t, err, "no receipt heard for %s", id)
		require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	}

	slow := insert("test.slow_db", `{"ms": 2000}`)
	b.waitStatus(t, ctx, slow, registry.CallRunning)
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, h.wait(t, 10*time.Second))

	b.startHelper(t, append(env, "GEM_EXECUTOR_ID=pooled-"+uuid.NewString()[:8])...)
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	r, err := waiter.WaitOne(waitCtx, slow)
	cancel()
	require.NoError(t, err, "the killed executor's call was not taken up")
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Equal(t, 2, r.Attempt)

	// The killed executor's liveness lock went with its connection: its id starts again.
	require.Eventually(t, func() bool {
		var free bool
		err := pooled.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(gem_executor_lock_key($1))`, first).Scan(&free)
		return err == nil && free
	}, 10*time.Second, 50*time.Millisecond, "the killed executor's liveness lock is still held")
	b.startHelper(t, append(env, "GEM_EXECUTOR_ID="+first)...)
	again := insert("test.safe", `{}`)
	waitCtx, cancel = context.WithTimeout(ctx, 20*time.Second)
	r, err = waiter.WaitOne(waitCtx, again)
	cancel()
	require.NoError(t, err)
	require.Equal(t, registry.StatusSucceeded, r.Status)
}
