package pipe

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errAbandoned is returned to a handler that keeps using the database after its call was given up.
var errAbandoned = errors.New("this call was abandoned after overrunning its timeout; its transaction is no longer available")

// Guarded is the handler's view of the receipt's transaction. A handler that ignores its context and
// overruns its timeout is abandoned: the executor takes the transaction back (waiting for a statement in
// flight, which the cancelled context stops) and every later use by the handler fails. Without the guard a
// runaway handler could run statements inside another call's part of a shared batch.
type Guarded struct {
	tx Conn
	// sem is held while a statement, an open Rows or an open batch uses the connection.
	sem       chan struct{}
	mu        sync.Mutex
	abandoned bool
	// open is the Rows or batch results the handler has not closed yet.
	open interface{ Close() }
}

func NewGuarded(tx Conn) *Guarded {
	return &Guarded{tx: tx, sem: make(chan struct{}, 1)}
}

func (g *Guarded) acquire(ctx context.Context) error {
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.abandoned {
		<-g.sem
		return errAbandoned
	}
	return nil
}

func (g *Guarded) release() { <-g.sem }

// Abandon takes the transaction away from the handler. It waits up to wait for a statement in flight and
// reports false if the handler still holds the connection (a Rows left open), in which case the connection
// must not be used again.
func (g *Guarded) Abandon(wait time.Duration) bool {
	g.mu.Lock()
	g.abandoned = true
	g.mu.Unlock()
	select {
	case g.sem <- struct{}{}:
		return true
	case <-time.After(wait):
		return false
	}
}

// Close ends the handler's access after it returned, closing a Rows or batch it left open (safe: the
// handler no longer runs).
func (g *Guarded) Close() {
	g.mu.Lock()
	g.abandoned = true
	open := g.open
	g.mu.Unlock()
	if open != nil {
		open.Close()
	}
}

func (g *Guarded) setOpen(c interface{ Close() }) {
	g.mu.Lock()
	g.open = c
	g.mu.Unlock()
}

func (g *Guarded) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := g.acquire(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer g.release()
	return g.tx.Exec(ctx, sql, args...)
}

func (g *Guarded) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := g.acquire(ctx); err != nil {
		return nil, err
	}
	rows, err := g.tx.Query(ctx, sql, args...)
	if err != nil {
		g.release()
		return nil, err
	}
	gr := &finishRows{Rows: rows, finish: func(error) error { g.setOpen(nil); g.release(); return nil }}
	g.setOpen(gr)
	return gr, nil
}

func (g *Guarded) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return rowOf(g.Query(ctx, sql, args...))
}

func (g *Guarded) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := g.acquire(ctx); err != nil {
		return errBatch{err: err}
	}
	gb := &guardedBatch{BatchResults: g.tx.SendBatch(ctx, b)}
	gb.release = sync.OnceFunc(func() { g.setOpen(nil); g.release() })
	g.setOpen(closer(func() { _ = gb.Close() }))
	return gb
}

type closer func()

func (c closer) Close() { c() }

type guardedBatch struct {
	pgx.BatchResults
	release func()
}

func (b *guardedBatch) Close() error {
	err := b.BatchResults.Close()
	b.release()
	return err
}

// errBatch answers every read with err; the embedded interface is never used.
type errBatch struct {
	pgx.BatchResults
	err error
}

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow{err: b.err} }
func (b errBatch) Close() error                     { return b.err }
