package gemsql_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestExecutorList(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	list, err := gemsql.ExecutorList(ctx, b.pool)
	require.NoError(t, err)
	require.Empty(t, list)

	// Register executors the way executor.startLiveness does: a row, and the liveness lock held on a
	// connection of its own. Ids whose lock keys are negative and positive, so both halves of the bigint
	// key are matched in pg_locks.
	var negID, posID string
	for i := 0; negID == "" || posID == ""; i++ {
		id := fmt.Sprintf("executor-test-%d", i)
		var key int64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT gem_executor_lock_key($1)`, id).Scan(&key))
		if key < 0 && negID == "" {
			negID = id
		} else if key > 0 && posID == "" {
			posID = id
		}
	}
	register := func(id string, pid int) {
		_, err := b.pool.Exec(ctx, `INSERT INTO core_executors (id, hostname, pid, version) VALUES ($1, 'host-a', $2, 'v1')`, id, pid)
		require.NoError(t, err)
	}
	lock := func(id string) *pgx.Conn {
		conn, err := pgx.Connect(ctx, b.url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(ctx) })
		var locked bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(gem_executor_lock_key($1))`, id).Scan(&locked))
		require.True(t, locked)
		return conn
	}
	register(negID, 101)
	register(posID, 102)
	register("executor-never-locked", 103)
	negConn := lock(negID)
	posConn := lock(posID)
	// A lock on another key (the migration lock, say) makes nobody alive.
	_, err = posConn.Exec(ctx, `SELECT pg_advisory_lock(42)`)
	require.NoError(t, err)

	alive := func() map[string]bool {
		list, err := gemsql.ExecutorList(ctx, b.pool)
		require.NoError(t, err)
		out := map[string]bool{}
		for _, x := range list {
			out[x.ID] = x.Alive
		}
		return out
	}
	require.Equal(t, map[string]bool{negID: true, posID: true, "executor-never-locked": false}, alive())

	list, err = gemsql.ExecutorList(ctx, b.pool)
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.False(t, list[2].Alive, "live executors come first")
	for _, x := range list {
		require.Equal(t, "host-a", x.Hostname)
		require.Equal(t, "v1", x.Version)
		require.NotZero(t, x.PID)
		require.WithinDuration(t, time.Now(), x.StartedAt, time.Minute)
		require.Nil(t, x.StoppedAt)
		require.Nil(t, x.DeadAt)
	}

	// Releasing the lock (the executor stopped) and losing its connection (the process died) both end it.
	_, err = negConn.Exec(ctx, `SELECT pg_advisory_unlock(gem_executor_lock_key($1))`, negID)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{negID: false, posID: true, "executor-never-locked": false}, alive())
	require.NoError(t, posConn.Close(ctx))
	require.Eventually(t, func() bool { return !alive()[posID] }, 5*time.Second, 20*time.Millisecond)

	// It composes in a transaction.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	list, err = gemsql.ExecutorList(ctx, tx)
	require.NoError(t, err)
	require.Len(t, list, 3)
}
