package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// pending is a call waiting for a committer.
type pending struct {
	ctx    context.Context
	job    *rivertype.JobRow
	args   registry.CallArgs
	result chan error
	// outsideToken is this run's outside-effects marker, once committed (see runOutside).
	outsideToken uuid.UUID
}

// committer commits batches of calls: it takes every call waiting (up to BatchMax), runs each in a
// savepoint of one transaction, and commits their receipts and job completions together. One call's
// failure rolls back only its own savepoint. A lone call is committed at once: batching never waits.
func (e *Executor) committer() {
	defer e.committersDone.Done()
	var carry []*pending
	for {
		if len(carry) == 0 {
			select {
			case p := <-e.queue:
				carry = append(carry, p)
			case <-e.stopCommitters:
				return
			}
		}
	drain:
		for len(carry) < e.cfg.BatchMax {
			select {
			case p := <-e.queue:
				carry = append(carry, p)
			default:
				break drain
			}
		}
		carry = e.runBatch(carry)
	}
}

// dbConn is the connection a batch runs on: a pooled connection, between BEGIN and COMMIT.
type dbConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Conn() *pgx.Conn
}

// completeJobsSQL marks jobs completed in the receipts' transaction. It is what River's JobCompleteTx does
// to a running job (state completed, finalized_at set); written here so it can share a round trip with
// the COMMIT. A job that is no longer running (taken up by a rescuer) is left alone: its next run finds
// the receipt and only completes it.
const completeJobsSQL = `UPDATE river_job SET state = 'completed', finalized_at = now()
	WHERE id = ANY($1::bigint[]) AND state = 'running'`

// withConn runs fn on a pooled call connection; a transaction fn leaves open is rolled back, and a
// connection in an unknown state is closed rather than reused.
func (e *Executor) withConn(fn func(ctx context.Context, conn *pgxpool.Conn) error) error {
	ctx := e.dbCtx
	conn, err := e.callPool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error acquiring a connection: %w", err)
	}
	defer func() {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
				_ = conn.Conn().Close(rctx)
			}
			cancel()
		}
		conn.Release()
	}()
	return fn(ctx, conn)
}

// runBatch runs calls in one transaction until BatchMaxDuration is spent, delivers each call's result,
// and returns the calls it did not reach. Each call's statements travel with the next call's: BEGIN and
// the first call's load go together, each call's receipt with the next call's load, and the last receipt
// with the job completions and the COMMIT.
func (e *Executor) runBatch(items []*pending) (rest []*pending) {
	results := make([]error, 0, len(items))
	err := e.withConn(func(ctx context.Context, conn *pgxpool.Conn) error {
		next := &pgx.Batch{}
		next.Queue("BEGIN")
		start := time.Now()
		var completed []int64
		for i, p := range items {
			if i > 0 && time.Since(start) > e.cfg.BatchMaxDuration {
				rest, items = items[i:], items[:i]
				break
			}
			if err := p.ctx.Err(); err != nil {
				// The job was cancelled while it waited (shutdown): River retries it.
				results = append(results, err)
				continue
			}
			a := e.newAttempt(p)
			a.queueLoad(next)
			if err := conn.SendBatch(ctx, next).Close(); err != nil {
				rest, items = items[i+1:], items[:i+1]
				return fmt.Errorf("error sending calls: %w", err)
			}
			next = &pgx.Batch{}
			out := a.run(ctx, conn, next, phaseRun)
			if out.txBroken {
				rest, items = items[i+1:], items[:i+1]
				return out.err
			}
			switch out.kind {
			case outcomeDone:
				completed = append(completed, p.job.ID)
				results = append(results, nil)
			case outcomeMissing:
				e.log.Error().Str("call_id", p.args.CallID.String()).Int64("job_id", p.job.ID).Msg("job names a call that does not exist; cancelling it")
				results = append(results, river.JobCancel(out.err))
			default:
				results = append(results, out.err)
			}
		}
		if len(completed) > 0 {
			next.Queue(completeJobsSQL, completed)
		}
		next.Queue("COMMIT")
		// A COMMIT that fails ambiguously (connection lost) may still have committed: the retry then finds
		// the receipt and only completes the job, and River's own update of a completed job changes nothing.
		if err := conn.SendBatch(ctx, next).Close(); err != nil {
			return fmt.Errorf("error committing calls: %w", err)
		}
		return nil
	})
	if err != nil {
		// Nothing in the transaction was kept: every call it reached is retried.
		e.log.Warn().Err(err).Int("batch_size", len(items)).Msg("batch did not commit; its calls will be retried")
		for _, p := range items {
			p.result <- err
		}
		return rest
	}
	for i, p := range items {
		p.result <- results[i]
	}
	return rest
}

// runOutside runs a call with effects outside the database in two transactions: the first checks it and
// commits the outside-effects marker, the second runs the handler. If the executor dies during the handler,
// the next attempt finds the marker and ends the call with outcome_unknown instead of running it twice.
func (e *Executor) runOutside(p *pending) error {
	p.outsideToken = uuid.New()
	var out outcome
	err := e.withConn(func(ctx context.Context, conn *pgxpool.Conn) error {
		next := &pgx.Batch{}
		next.Queue("BEGIN")
		a := e.newAttempt(p)
		a.queueLoad(next)
		if err := conn.SendBatch(ctx, next).Close(); err != nil {
			return fmt.Errorf("error loading call: %w", err)
		}
		next = &pgx.Batch{}
		if out = a.run(ctx, conn, next, phasePrepare); out.txBroken {
			return out.err
		}
		if out.kind == outcomeDone {
			next.Queue(completeJobsSQL, []int64{p.job.ID})
		}
		next.Queue("COMMIT")
		if err := conn.SendBatch(ctx, next).Close(); err != nil {
			return fmt.Errorf("error committing the outside-effects marker: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case out.kind == outcomePrepared:
		e.runBatch([]*pending{p})
		return <-p.result
	case out.kind == outcomeMissing:
		return river.JobCancel(out.err)
	case out.kind == outcomeDone:
		return nil
	}
	return out.err
}
