package executor_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// roundTrips counts the statements an executor's connections send to PostgreSQL: a query or exec, a batch
// (pipelined: one round trip however many statements it holds) and a prepare each wait for the server once.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// benchInsertSQL inserts n os.create_note calls in one statement, as a turn's parallel tool calls arrive.
const benchInsertSQL = `INSERT INTO core_tool_calls (tool_name, input)
	SELECT 'os.create_note', jsonb_build_object('domain', 'business', 'title', 'bench ' || g, 'content', 'a note')
	FROM generate_series(1, $1::int) g RETURNING id`

// BenchmarkBatch measures calls end to end through the engine: n os.create_note calls inserted together,
// fetched by River, run in a committer's batch and receipted, until their receipts are seen. calls=1 is a
// lone call, calls=16 a turn's parallel calls. roundtrips/call counts what the executor's own connections
// (River's, the calls', the registration pool's) send; allocs/op counts the whole process (the inserts and
// the wait for receipts too).
func BenchmarkBatch(b *testing.B) {
	pool, url := sqltest.NewDB(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	reg, err := registry.Load(testRegistryPath(b))
	require.NoError(b, err)

	trips := &roundTrips{}
	pcfg, err := pgxpool.ParseConfig(url)
	require.NoError(b, err)
	pcfg.MaxConns = 4
	pcfg.ConnConfig.Tracer = trips // the pools the executor opens copy it
	epool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(b, err)
	defer epool.Close()

	dir := b.TempDir()
	handlers := testHandlers(filepath.Join(dir, "outside.log"), businesspack.Config{FileStore: dir})
	e, err := executor.New(executor.Config{DatabaseURL: url, ID: "bench-" + uuid.NewString()[:8]}, reg, handlers, epool,
		zerolog.Nop())
	require.NoError(b, err)
	require.NoError(b, e.Start(ctx))
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(stopCtx)
	}()
	waiter := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(b, waiter.Start(ctx))
	defer waiter.Stop()

	round := func(tb testing.TB, n int) {
		rows, err := pool.Query(ctx, benchInsertSQL, n)
		require.NoError(tb, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(tb, err)
		res, err := waiter.Wait(ctx, ids)
		require.NoError(tb, err)
		for _, r := range res.Receipts {
			if r.Status != registry.StatusSucceeded {
				tb.Fatalf("call %s ended %s: %+v", r.CallID, r.Status, r.Error)
			}
		}
	}
	for range 20 { // every connection prepares its statements once
		round(b, 16)
	}
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start := trips.n.Load()
			for b.Loop() {
				round(b, n)
			}
			b.ReportMetric(float64(trips.n.Load()-start)/float64(b.N*n), "roundtrips/call")
		})
	}
}
