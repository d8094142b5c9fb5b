package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
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

// runBatch runs calls in one transaction until BatchMaxDuration is spent, delivers each call's result,
// and returns the calls it did not reach.
func (e *Executor) runBatch(items []*pending) (rest []*pending) {
	ctx := e.dbCtx
	tx, err := e.callPool.Begin(ctx)
	if err != nil {
		err = fmt.Errorf("error beginning transaction: %w", err)
		for _, p := range items {
			p.result <- err
		}
		return nil
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	start := time.Now()
	results := make([]error, 0, len(items))
	var completed []int64
	for i, p := range items {
		if i > 0 && time.Since(start) > e.cfg.BatchMaxDuration {
			rest = items[i:]
			items = items[:i]
			break
		}
		if err := p.ctx.Err(); err != nil {
			// The job was cancelled while it waited (shutdown): River retries it.
			results = append(results, err)
			continue
		}
		a := e.newAttempt(p)
		out := a.run(ctx, tx, phaseRun)
		if out.txBroken {
			// Nothing in this transaction can be kept: every call so far is retried.
			e.log.Warn().Err(out.err).Int("batch_size", i+1).Msg("batch transaction broken; its calls will be retried")
			for _, q := range items[:i+1] {
				q.result <- out.err
			}
			return items[i+1:]
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

	// A COMMIT that fails ambiguously (connection lost) may still have committed: the retry then finds the
	// receipt and only completes the job, and River's own update of a completed job changes nothing.
	commitErr := e.completeJobs(ctx, tx, completed)
	if commitErr == nil {
		if err := tx.Commit(ctx); err != nil {
			commitErr = fmt.Errorf("error committing calls: %w", err)
		}
	}
	if commitErr != nil {
		e.log.Warn().Err(commitErr).Int("batch_size", len(items)).Msg("batch did not commit; its calls will be retried")
		for i := range results {
			if results[i] == nil {
				results[i] = commitErr
			}
		}
	}
	for i, p := range items {
		p.result <- results[i]
	}
	return rest
}

// completeJobs marks the jobs completed inside tx, so a job's completion commits with its receipt.
func (e *Executor) completeJobs(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	now := time.Now().UTC()
	params := &riverdriver.JobSetStateIfRunningManyParams{
		ID:              ids,
		Attempt:         make([]*int, len(ids)),
		ErrData:         make([][]byte, len(ids)),
		FinalizedAt:     make([]*time.Time, len(ids)),
		MetadataDoMerge: make([]bool, len(ids)),
		MetadataUpdates: make([][]byte, len(ids)),
		ScheduledAt:     make([]*time.Time, len(ids)),
		State:           make([]rivertype.JobState, len(ids)),
	}
	for i := range ids {
		params.FinalizedAt[i] = &now
		params.State[i] = rivertype.JobStateCompleted
	}
	if _, err := e.driver.UnwrapExecutor(tx).JobSetStateIfRunningMany(ctx, params); err != nil {
		return fmt.Errorf("error completing jobs: %w", err)
	}
	return nil
}

// runOutside runs a call with effects outside the database in two transactions: the first checks it and
// commits the outside-effects marker, the second runs the handler. If the executor dies during the handler,
// the next attempt finds the marker and ends the call with outcome_unknown instead of running it twice.
func (e *Executor) runOutside(p *pending) error {
	ctx := e.dbCtx
	tx, err := e.callPool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("error beginning transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	p.outsideToken = uuid.New()
	out := e.newAttempt(p).run(ctx, tx, phasePrepare)
	switch out.kind {
	case outcomePrepared:
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("error committing the outside-effects marker: %w", err)
		}
		p.result = make(chan error, 1)
		e.runBatch([]*pending{p})
		return <-p.result
	case outcomeDone:
		if err := e.completeJobs(ctx, tx, []int64{p.job.ID}); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("error committing call: %w", err)
		}
		return nil
	case outcomeMissing:
		return river.JobCancel(out.err)
	default:
		return out.err
	}
}
