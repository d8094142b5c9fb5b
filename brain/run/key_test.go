package run_test

import (
	"context"
	"github.com/gemhq/gem/brain/internal/testenv"
	"sync"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// keyed is a run request with a key, fingerprinted as a door does it.
func keyed(message, key string) *brain.RunParams {
	req := &brain.RunParams{Message: message, Mode: brain.ModeEnqueueAndWait, IdempotencyKey: key}
	req.Fingerprint = brain.RequestFingerprint("test", req)
	return req
}

// TestRunRequestKey: a run request with a key is made once. Twenty requests with one key at the same
// instant all answer the same run, which made one task; a retry later answers it again (repeated), with its
// receipts; the same key with another request is refused (EKEYREUSED, naming the run) and makes nothing.
func TestRunRequestKey(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)
	ctx := context.Background()
	key := "run-key-" + uuid.NewString()
	title := "retry-safe " + uuid.NewString()[:8]
	message := "create a task to " + title

	const n = 20
	var wg sync.WaitGroup
	runs := make([]*brain.RunResponse, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			runs[i], errs[i] = b.runs.Run(ctx, keyed(message, key), requester, "")
		}()
	}
	close(start)
	wg.Wait()
	require.NoError(t, errs[0])
	first := runs[0].RunID
	repeated := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, first, runs[i].RunID, "every request with the key answers one run")
		require.True(t, runs[i].OK, "%+v", runs[i].Errors)
		if runs[i].Repeated {
			repeated++
		}
	}
	require.Equal(t, n-1, repeated, "one request made the run; the others repeated it")
	require.Equal(t, 1, testenv.CountCalls(t, b.pool, first))
	var tasks int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM os_tasks WHERE title = $1`, title).Scan(&tasks))
	require.Equal(t, 1, tasks, "one task, however many retries")

	// Later: the same run, its receipts as reading the run gives them.
	again := b.run(t, keyed(message, key))
	require.Equal(t, first, again.RunID)
	require.True(t, again.Repeated)
	require.Len(t, again.Receipts, 1)

	_, err := b.runs.Run(ctx, keyed("create a task to something else", key), requester, "")
	e := brain.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, brain.EKEYREUSED, e.Code)
	require.Equal(t, first.String(), detailsOf(t, e)["run_id"])
	require.Equal(t, 1, testenv.CountCalls(t, b.pool, first))
}

// TestPlanIsAllOrNothing: a message understood only in part enqueues nothing and says which part.
func TestPlanIsAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)
	title := "all-or-nothing " + uuid.NewString()[:8]
	resp := b.run(t, &brain.RunParams{Message: "create a task to " + title + "; frobnicate the wibble", Mode: brain.ModeEnqueueAndWait})
	require.False(t, resp.OK)
	require.Equal(t, brain.RunFailed, resp.Status)
	require.Empty(t, resp.Enqueued)
	require.Len(t, resp.Errors, 1)
	require.Equal(t, brain.ENOPLAN, resp.Errors[0].Code)
	require.Contains(t, resp.Errors[0].Message, `"frobnicate the wibble"`)
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
	var calls int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM core_tool_calls WHERE input->>'title' LIKE $1`, "%"+title+"%").Scan(&calls))
	require.Zero(t, calls)
}
