package gemsql_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	gemsql "github.com/gemhq/gem/sql"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the waiter's goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestReceiptWaiterLogsALostListener(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	var logs syncBuffer
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
