package gemsql_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestReceiptWaiterLogsALostListener(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	var logs sqltest.SyncBuffer
	w := gemsql.NewReceiptWaiter(b.pool, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, w.Start(ctx))
	defer w.Stop()

	tag, err := b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE '%receipt-listener'`)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected(), "one listener was killed")

	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "receipt listener reconnected")
	}, 10*time.Second, 20*time.Millisecond, "logs: %s", logs.String())
	out := logs.String()
	require.Contains(t, out, `level=WARN msg="receipt listener lost its connection"`)
	require.Contains(t, out, "error=")
	require.Contains(t, out, `level=INFO msg="receipt listener reconnected"`)
}

// TestSubscriptionRereadsAfterAReconnect: a subscription does not read before waiting, so a receipt whose
// notification was lost with the listener's connection must be read when the listener reconnects.
func TestSubscriptionRereadsAfterAReconnect(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	w := startWaiter(t, ctx, b)

	id := uuid.Must(uuid.NewV7())
	sub := w.Subscribe([]uuid.UUID{id})
	defer sub.Close()
	_, err := gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ID: id, ToolName: "a.b"})
	require.NoError(t, err)

	// Kill the listener's connection, then write the receipt while it is (likely) down.
	_, err = b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE '%receipt-listener'`)
	require.NoError(t, err)
	insertReceipt(t, ctx, b.pool, id, "succeeded")

	waitCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := sub.Wait(waitCtx)
	require.NoError(t, err)
	require.Contains(t, res.Receipts, id)
	require.Empty(t, res.Pending)
}

// Start may be called on every use: the waiter listens on one connection from the first call on, and a
// stopped waiter does not start again.
func TestReceiptWaiterStartsOnce(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	listeners := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE '%receipt-listener'`).Scan(&n))
		return n
	}

	w := gemsql.NewReceiptWaiter(b.pool, nil)
	require.Equal(t, 0, listeners(), "no connection before the first Start")
	for range 3 {
		require.NoError(t, w.Start(ctx))
	}
	require.Equal(t, 1, listeners())

	// Receipts of calls no one waits on go by; the one waited on is heard.
	var ids []uuid.UUID
	for range 5 {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.b"}))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	sub := w.Subscribe(ids[4:])
	defer sub.Close()
	for _, id := range ids {
		insertReceipt(t, ctx, b.pool, id, "succeeded")
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := sub.Wait(waitCtx)
	require.NoError(t, err)
	require.Len(t, res.Receipts, 1)
	require.Equal(t, registry.StatusSucceeded, res.Receipts[ids[4]].Status)

	w.Stop()
	require.Error(t, w.Start(ctx))
	require.Eventually(t, func() bool { return listeners() == 0 }, 5*time.Second, 20*time.Millisecond)
}
