package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestBatchPanicRetriesItsCalls: a panic in the batch's own code (here, a call handed over without its job,
// which no caller does) fails the batch as an error does: it is logged with its stack, every call of the
// batch is answered with the error (River retries it) and none is left waiting, and the committer goes on
// (the panic ended the executor).
func TestBatchPanicRetriesItsCalls(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	reg, err := registry.Load("../../../tools.registry.json")
	require.NoError(t, err)
	var logs sqltest.SyncBuffer
	e, err := New(testConfig(dbURL, "batch-panic"), "test", reg, gemcall.Handlers{}, pool, zerolog.New(&logs))
	require.NoError(t, err)
	t.Cleanup(e.closePools) // never started, so never stopped

	broken := &pending{ctx: context.Background(), result: make(chan error, 1)}
	other := &pending{ctx: context.Background(), result: make(chan error, 1)}
	rest := e.runBatch([]*pending{broken, other})
	require.Empty(t, rest, "nothing is carried to a next batch")
	for _, p := range []*pending{broken, other} {
		select {
		case err := <-p.result:
			_, panicked := errors.AsType[*gemlog.PanicError](err)
			require.True(t, panicked, "%v", err)
		default:
			t.Fatal("a call of the batch was left waiting")
		}
	}
	require.Contains(t, logs.String(), "a batch of calls panicked")
	require.Contains(t, logs.String(), "batch.go", "the stack")
}

// testConfig is a valid config with executor.Config's defaults, which executor.New would have applied.
func testConfig(dbURL, id string) Config {
	return Config{
		DatabaseURL: dbURL, ID: id, MaxWorkers: 200, FetchCooldown: time.Millisecond, FetchPollInterval: 500 * time.Millisecond,
		Committers: 2, BatchMax: 128, BatchMaxDuration: 50 * time.Millisecond, RescueAfter: time.Minute,
		RescueInterval: time.Second, DrainTimeout: 30 * time.Second, AbandonGrace: 2 * time.Second,
		DeviceWait: 30 * time.Second, DBConnectWait: time.Minute, MaxInputBytes: 4 << 20, MaxResultBytes: 4 << 20,
		MaxConns: 18, Retention: 400 * 24 * time.Hour, CompletedJobRetention: 10 * time.Minute,
	}
}
