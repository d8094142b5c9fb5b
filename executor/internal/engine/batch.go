package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/gemhq/gem/executor/internal/devicerelay"
	"github.com/gemhq/gem/executor/internal/limits"
	"github.com/gemhq/gem/executor/internal/pipe"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
	// step is what the call's next transaction does (runStep unless its plan has two transactions; a
	// device call's steps carry what it needs from one to the next).
	step step
	// since is when River handed the job over, the start of its first span (tracing on only).
	since time.Time
}

// committer commits batches of calls: it takes every call waiting (up to BatchMax), runs each in a
// savepoint of one transaction, and commits their receipts and job completions together. One call's
// failure rolls back only its own savepoint. A lone call is committed at once: batching never waits on a
// timer.
func (e *Executor) committer() {
	defer e.committersDone.Done()
	var carry []*pending
	for {
		if len(carry) > 0 {
			carry = e.takeWaiting(carry)
		} else {
			select {
			case p := <-e.queue:
				carry = e.gather(append(carry, p))
			case <-e.stopCommitters:
				return
			}
		}
		carry = e.runBatch(carry)
	}
}

// gather adds to an idle committer's first call the calls arriving with it. A fetch hands River's jobs
// over together, each on a goroutine of its own, and the first to reach the queue wakes the committer;
// taking only what was queued at that instant committed it alone, and the rest of the fetch (a turn's
// parallel tool calls) waited behind that commit, in a second and third batch. Yielding lets those
// goroutines, already runnable, reach the queue; gathering stops at the first yield that brings nothing,
// so a lone call loses microseconds, not a timer's wait. The other idle committers, waiting on the queue,
// are handed a call each before this one takes more, so calls that arrive together spread over the free
// committers first (with one committer gathering at a time, a short call waited behind a long one while
// the other committer sat idle: TestSIGTERMDrains).
func (e *Executor) gather(carry []*pending) []*pending {
	for len(carry) < e.cfg.BatchMax {
		n := len(carry)
		runtime.Gosched()
		if carry = e.takeWaiting(carry); len(carry) == n {
			break
		}
	}
	return carry
}

// takeWaiting adds the calls queued now, up to BatchMax, without waiting for any.
func (e *Executor) takeWaiting(carry []*pending) []*pending {
	for len(carry) < e.cfg.BatchMax {
		select {
		case p := <-e.queue:
			carry = append(carry, p)
		default:
			return carry
		}
	}
	return carry
}

// commitQueued hands p to the committers and returns the result of its next transaction: how an
// ordinary call runs, and each transaction of a device call.
func (e *Executor) commitQueued(p *pending) error {
	select {
	case e.queue <- p:
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	return <-p.result
}

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
// and returns the calls it did not reach.
func (e *Executor) runBatch(items []*pending) (rest []*pending) {
	// ran are the calls the transaction reached, with their results; the others go back in rest.
	var ran []*pending
	var results []error
	var prepared []bool
	var snoozes []time.Duration
	var tx *batchTx
	var retried []*attempt
	err := e.withConn(func(ctx context.Context, conn *pgxpool.Conn) error {
		// A panic of the batch's own code (a handler's is recovered where it runs) fails the batch as an
		// error does: nothing is committed, every call it reached is retried, and the executor goes on.
		return gemlog.Guarded(&e.log, "a batch of calls", func() error {
			t := &batchTx{e: e, pipe: pipe.New(conn.Conn())}
			tx = t
			defer func() { snoozes = t.snoozes }()
			attempts, dups, err := t.begin(ctx, items)
			rest = dups
			for _, a := range attempts {
				ran = append(ran, a.p)
			}
			if err != nil {
				return err
			}
			start := time.Now()
			for i, a := range attempts {
				if i > 0 && time.Since(start) > e.cfg.BatchMaxDuration {
					rest, ran = append(rest, ran[i:]...), ran[:i]
					break
				}
				var out outcome
				if err := a.p.ctx.Err(); err != nil {
					// The job was cancelled while it waited (shutdown): River retries it.
					out = outcome{kind: outcomeRetry, err: err}
				} else {
					out = t.run(ctx, a, a.p.step)
				}
				if out.txBroken {
					rest, ran = append(rest, ran[i+1:]...), ran[:i+1]
					return out.err
				}
				if out.kind == outcomeRetry {
					retried = append(retried, a)
				}
				if out.kind == outcomeMissing {
					a.log.Error().Msg("job names a call that does not exist; cancelling it")
					out.err = river.JobCancel(out.err)
				}
				results, prepared = append(results, out.err), append(prepared, out.kind == outcomePrepared)
			}
			return t.commit(ctx)
		})
	})
	if _, panicked := errors.AsType[*gemlog.PanicError](err); panicked {
		ran, rest = items, nil // every call is answered (retried): none may wait on a batch that ended
	}
	if e.metrics != nil || e.tracer != nil {
		e.observeBatch(batchEnd{tx: tx, ran: ran, retried: retried, err: err})
	}
	if err != nil {
		if tx == nil {
			// No connection (the database away): the transaction never began, and every call of the batch
			// is retried. They were dropped here, and their runs waited for a result for ever.
			ran = items
		}
		// Nothing in the transaction was kept: every call it reached is retried.
		e.log.Warn().Err(err).Int("batch_size", len(ran)).Msg("batch did not commit; its calls will be retried")
		err = awayOr(err)
		for _, p := range ran {
			p.result <- err
		}
		return rest
	}
	for _, d := range snoozes {
		// Woken only now: a wake before the commit would find the new job not there yet.
		e.waker.At(time.Now().Add(d))
	}
	for i, p := range ran {
		if prepared[i] {
			p.step.committed(e, p)
		} else {
			p.result <- results[i]
		}
	}
	return rest
}

// runOutside runs a call with effects outside the database in two transactions: the first checks it and
// commits the outside-effects marker, the second runs the handler. If the executor dies during the handler,
// the next attempt finds the marker and ends the call with outcome_unknown instead of running it twice.
func (e *Executor) runOutside(p *pending) error {
	p.outsideToken = uuid.New()
	p.step = outsideStep{}
	e.runBatch([]*pending{p})
	return <-p.result
}

// outcomeKind says what became of one call inside a transaction.
type outcomeKind int

const (
	// outcomeDone: the call has its receipt (written now or earlier); complete its job in this transaction.
	outcomeDone outcomeKind = iota
	// outcomeRetry: a transient failure; nothing of the call is kept and River retries its job.
	outcomeRetry
	// outcomeMissing: the job names a call that does not exist; the job is cancelled.
	outcomeMissing
	// outcomePrepared: the outside-effects marker is set (or a device call handed off); commit it, then run
	// the call.
	outcomePrepared
	// outcomeSnooze: the call's limit is full; it waits (a new job, due later, takes it up) and its present
	// job completes.
	outcomeSnooze
)

type outcome struct {
	kind outcomeKind
	err  error
	// txBroken means the transaction can no longer be used: every call in it must be retried.
	txBroken bool
}

// step is what one call does in one batch transaction once it is loaded and checked, and what follows
// when that transaction commits. A call's pending carries its next step: a call with outside effects or a
// device has two transactions, every other call one.
type step interface {
	run(ctx context.Context, t *batchTx, a *attempt) outcome
	// committed goes on with a call whose step ended in outcomePrepared, once its transaction committed.
	committed(e *Executor, p *pending)
	// String names the step in spans (gem.phase).
	String() string
}

// runStep runs the call's handler and writes its receipt (runCall): every plan's last step.
type runStep struct{}

func (runStep) run(ctx context.Context, t *batchTx, a *attempt) outcome { return t.runCall(ctx, a) }

func (runStep) committed(e *Executor, p *pending) { retryWithoutReceipt(e, p) }

// retryWithoutReceipt is what follows the commit of a step that writes the receipt (runCall) if it ever ended
// prepared instead, which runCall never does: the call has no receipt yet, so it is retried rather than its
// job completed without one.
func retryWithoutReceipt(e *Executor, p *pending) {
	e.log.Error().Str("call_id", p.args.CallID.String()).Msg("internal: a receipt step ended prepared; the call is retried")
	p.result <- errNoReceipt
}

// errNoReceipt retries a call whose receipt step ended without its receipt.
var errNoReceipt = errors.New("internal: the call's receipt step ended without a receipt; retrying")

func (runStep) String() string { return "run" }

// outsideStep checks the call and commits the outside-effects marker before the handler may start
// (markOutside); the handler then runs in a transaction of its own.
type outsideStep struct{}

func (outsideStep) run(ctx context.Context, t *batchTx, a *attempt) outcome {
	return t.markOutside(ctx, a)
}
func (outsideStep) committed(e *Executor, p *pending) {
	p.step = runStep{}
	e.runBatch([]*pending{p})
}
func (outsideStep) String() string { return "prepare" }

const savepoint = "gem_call"

// batchTx is one transaction in which calls run one after another, each in a savepoint of its own.
//
// Its statements travel together (see pipe.Pipe): BEGIN with the load of every call, each call's savepoint with
// its handler's first statement, and at the end one INSERT of every receipt with the jobs' completion and
// the COMMIT. A call's database writes are collected after its savepoint is released, with the next call's
// first statement; the last call's are collected by the receipts' INSERT itself.
type batchTx struct {
	e    *Executor
	pipe *pipe.Pipe
	// receipts are written when the transaction commits, in the order the calls ended.
	receipts []receiptRow
	// keyed are the succeeded calls that hold an idempotency key: a later call of the same transaction with
	// the same key is answered from them (their receipts are not in the table yet).
	keyed map[uuid.UUID]*receiptDraft
	// uncollected is the last call that succeeded and whose writes are still to be read.
	uncollected *receiptDraft
	completed   []int64
	// handedOff: a device call was handed off here (see handOff).
	handedOff bool
	// snoozes are when the new jobs of calls that wait for their limits are due, from the commit.
	snoozes []time.Duration
	// attempts are the calls the transaction loaded (metrics and spans end with it).
	attempts []*attempt
}

type receiptRow struct {
	a *attempt
	d *receiptDraft
}

// begin opens the transaction and loads and locks the calls of items. A call that appears twice (two jobs
// for one call) runs once here; its other jobs are returned in dups for a later transaction, where they
// find its receipt.
func (t *batchTx) begin(ctx context.Context, items []*pending) (attempts []*attempt, dups []*pending, err error) {
	byID := make(map[uuid.UUID]*attempt, len(items))
	ids := make([][16]byte, 0, len(items)) // [16]byte: pgx encodes it as uuid directly
	for _, p := range items {
		if _, dup := byID[p.args.CallID]; dup {
			dups = append(dups, p)
			continue
		}
		a := t.e.newAttempt(p)
		a.missing = true
		byID[p.args.CallID] = a
		ids = append(ids, p.args.CallID)
		attempts = append(attempts, a)
	}
	t.attempts = attempts
	t.pipe.Hold("BEGIN")
	t.pipe.Hold(genericPlansSQL)
	rows, err := t.pipe.Query(ctx, loadSQL, ids, t.e.inputCutoff)
	if err != nil {
		return attempts, dups, fmt.Errorf("error loading calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		id, row, err := scanCall(rows)
		if err != nil {
			return attempts, dups, err
		}
		if a := byID[id]; a != nil {
			a.callRow, a.missing = row, false
		}
	}
	if err := rows.Err(); err != nil {
		return attempts, dups, fmt.Errorf("error loading calls: %w", err)
	}
	// Handlers plan their statements as the server's settings say; it travels with the first one.
	t.pipe.Hold(defaultPlansSQL)
	return attempts, dups, nil
}

// genericPlansSQL and defaultPlansSQL bracket the executor's own statements on the partitioned calls and
// receipts: the load, and the receipts' INSERT with its foreign-key checks on the calls (the receipts'
// trigger keeps the custom plans migration 00034 gives it). Left to the server, PostgreSQL plans the load
// anew on every execution (a custom plan, pruned at planning), and each receipt's key check for every row:
// measured with pgbench, the load's transaction took 0.51–0.53 ms that way and 0.36–0.39 ms with a generic
// plan, which prunes at run time, with 6 and with 18 partitions alike. Handlers' statements keep the
// server's setting.
const (
	genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`
	defaultPlansSQL = `SET LOCAL plan_cache_mode TO DEFAULT`
)

// run takes one loaded call as far as this transaction goes: what every call shares (an earlier receipt,
// the checks), then its step.
func (t *batchTx) run(ctx context.Context, a *attempt, s step) outcome {
	if a.missing {
		return outcome{kind: outcomeMissing, err: fmt.Errorf("call %s does not exist", a.args.CallID)}
	}
	a.startSpan(s)
	if a.hasReceipt {
		// An earlier attempt committed the receipt; only the job is left to complete.
		a.log.Info().Msg("call already has a receipt; completing its job")
		t.completed = append(t.completed, a.job.ID)
		return outcome{kind: outcomeDone}
	}
	_, validate := a.child(SpanValidate)
	d := a.precheck()
	validate.End()
	if a.stored != nil {
		t.pipe.Hold(`UPDATE core_tool_calls SET input = $2 WHERE id = $1`, [16]byte(a.args.CallID), string(a.stored))
	}
	if d != nil {
		t.finish(a, d)
		return outcome{kind: outcomeDone}
	}
	return s.run(ctx, t, a)
}

// markOutside sets the outside-effects marker of a call that runs at most once; its handler runs once the
// marker is committed (see runOutside).
func (t *batchTx) markOutside(_ context.Context, a *attempt) outcome {
	t.pipe.Hold(`UPDATE core_tool_calls SET outside_token = $2, outside_attempt = $3, outside_started_at = now() WHERE id = $1`,
		[16]byte(a.args.CallID), [16]byte(a.p.outsideToken), a.job.Attempt)
	return outcome{kind: outcomePrepared}
}

// runCall runs the call's handler in its savepoint, after its idempotency key and its limits (a full
// limit snoozes it), and takes it to its receipt or a retry.
func (t *batchTx) runCall(ctx context.Context, a *attempt) outcome {
	t.enter(a)
	d, transient := a.execute(ctx, t.pipe, t.keyHolder)
	var tb pipe.TxBrokenError
	if errors.As(transient, &tb) {
		return outcome{kind: outcomeRetry, err: transient, txBroken: true}
	}
	var sz *snoozeError
	if errors.As(transient, &sz) {
		// Nothing of the call is kept (its key, its slot); only that it waits, and for an outside call that
		// its handler did not start.
		if err := t.undo(ctx); err != nil {
			return outcome{kind: outcomeRetry, err: err, txBroken: true}
		}
		return t.snooze(a, sz.turn, a.p.outsideToken != uuid.Nil)
	}
	if transient == nil && d.status == registry.StatusSucceeded {
		t.pipe.Hold("RELEASE SAVEPOINT " + savepoint)
		if !d.hit {
			t.uncollected = d
		}
		t.finish(a, d)
		return outcome{kind: outcomeDone}
	}
	// The call failed: nothing it did is kept.
	if err := t.undo(ctx); err != nil {
		return outcome{kind: outcomeRetry, err: err, txBroken: true}
	}
	if transient != nil {
		if a.job.Attempt < a.job.MaxAttempts {
			a.log.Warn().Err(transient).Msg("transient failure; the call will be retried")
			return outcome{kind: outcomeRetry, err: transient}
		}
		var details any // what the handler said of its failure (RetryableWith)
		if he, ok := asError(transient); ok {
			details = he.Details
		}
		d = failed(registry.CodeRetriesExhausted, fmt.Sprintf("attempt %d of %d failed with a transient error: %v",
			a.job.Attempt, a.job.MaxAttempts, transient), details)
	}
	t.finish(a, d)
	return outcome{kind: outcomeDone}
}

const (
	// enterSQL and collectAndEnterSQL start a call's savepoint: they set the call whose writes the capture
	// triggers count and, when the previous call succeeded, first collect its writes.
	enterSQL           = `SELECT set_config('gem.call_id', $1, true)`
	collectAndEnterSQL = `SELECT gem_collect_writes(), set_config('gem.call_id', $1, true)`

	rollbackToSavepoint = "ROLLBACK TO SAVEPOINT " + savepoint

	// completeJobsSQL marks jobs completed in the receipts' transaction: what River's JobCompleteTx does to a
	// running job, written here so it shares a round trip with the receipts and the COMMIT. A job that is no
	// longer running (taken up by a rescuer) is left alone: its next run finds the receipt and only completes
	// it. jobsReceiptedSQL goes first: it tells the safety-net trigger that these jobs have their receipts.
	completeJobsSQL  = `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = ANY($1::bigint[]) AND state = 'running'`
	jobsReceiptedSQL = `SELECT set_config('gem.jobs_receipted', 'on', true)`
)

// snooze records that the call's limit is full and gives it a new job, due after turn.snooze; its present
// job completes with the transaction.
func (t *batchTx) snooze(a *attempt, turn limitTurn, outside bool) outcome {
	t.pipe.Hold(limits.MarkLimitedSQL, [16]byte(a.args.CallID), outside, turn.reserved)
	due := turn.snooze
	if turn.reserved != nil {
		due = max(due-limits.RateLead, 0) // fetched ahead; Work sleeps the rest
	}
	t.pipe.Hold(limits.SnoozeJobSQL, a.job.ID, float64(due.Microseconds())/1000, [16]byte(a.args.CallID), turn.reserved)
	t.completed = append(t.completed, a.job.ID)
	t.snoozes = append(t.snoozes, due)
	a.log.Debug().Str("limit", turn.reason).Dur("snooze", turn.snooze).Bool("start_reserved", turn.reserved != nil).Msg("limit full; the call waits")
	return outcome{kind: outcomeSnooze}
}

// enter holds the statements that start a call's savepoint; they go out with its first statement.
func (t *batchTx) enter(a *attempt) {
	if u := t.uncollected; u != nil {
		t.uncollected = nil
		t.pipe.HoldRow(func(row pgx.Row) error {
			var ignored string
			return row.Scan(&u.dbWrites, &ignored)
		}, collectAndEnterSQL, a.args.CallID.String())
	} else {
		t.pipe.Hold(enterSQL, a.args.CallID.String())
	}
	t.pipe.Hold("SAVEPOINT " + savepoint)
}

// undo rolls the current call's savepoint back.
func (t *batchTx) undo(ctx context.Context) error {
	if t.pipe.Conn().PgConn().TxStatus() == 'E' {
		// A failed statement aborted the transaction, which then refuses to prepare statements (as a held
		// batch would): the rollback goes now, alone, by the simple protocol.
		if t.pipe.Holding() {
			return t.pipe.Break(errors.New("statements held in an aborted transaction"))
		}
		if _, err := t.pipe.Conn().Exec(ctx, rollbackToSavepoint); err != nil {
			return t.pipe.Break(fmt.Errorf("error rolling back call: %w", err))
		}
	} else {
		t.pipe.Hold(rollbackToSavepoint)
	}
	t.pipe.Hold("RELEASE SAVEPOINT " + savepoint)
	return nil
}

// keyHolder returns the receipt a call of this transaction will have, if it succeeded holding a key.
func (t *batchTx) keyHolder(callID uuid.UUID) *receiptDraft { return t.keyed[callID] }

// finish records how a call ended: its receipt is written, and its job completed, when the transaction
// commits.
func (t *batchTx) finish(a *attempt, d *receiptDraft) {
	d.durationMS = msSince(a.started)
	a.startReceiptSpan(d)
	_, h := deviceOf(a.p.step)
	if h != nil && h.answer != nil {
		d.device, d.devicesTried = h.answer.RanOn, h.answer.Tried
	}
	t.receipts = append(t.receipts, receiptRow{a: a, d: d})
	t.completed = append(t.completed, a.job.ID)
	if a.givesSlotBack() {
		t.pipe.Hold(limits.WakeWaiterSQL, a.tool.Name)
	}
	if a.e.devices.IsDeviceCall(a.args) {
		// A receipt leaves no attempt of its call open (see devicerelay.AbandonOpenSQL).
		t.pipe.Hold(devicerelay.AbandonOpenSQL, [16]byte(a.args.CallID))
	}
	if h != nil && h.key != "" && d.status != registry.StatusSucceeded {
		// The hand-off committed the key; a call that failed gives it back, as a rolled-back one would.
		t.pipe.Hold(devicerelay.ReleaseKeySQL, h.tool, h.keyHash[:], [16]byte(a.args.CallID))
	}
	if a.key != "" && d.status == registry.StatusSucceeded && !d.hit {
		if t.keyed == nil {
			t.keyed = map[uuid.UUID]*receiptDraft{}
		}
		t.keyed[a.args.CallID] = d
	}
	ev := a.log.Info()
	if d.status != registry.StatusSucceeded {
		ev = a.log.Warn().Str("error_code", string(d.err.Code)).Str("error", d.err.Message)
	}
	ev.Str("status", string(d.status)).Bool("idempotency_hit", d.hit).Msg("call finished")
}

// commit writes the receipts, completes the jobs and commits, in one round trip. A COMMIT that fails
// ambiguously (connection lost) may still have committed: the retry then finds the receipts and only
// completes the jobs, and River's own update of a completed job changes nothing.
func (t *batchTx) commit(ctx context.Context) error {
	if t.pipe.HoldsRows() {
		// A call's writes are collected by a statement still held (the calls after it sent nothing): read
		// them before the receipts are encoded.
		if err := t.pipe.Flush(ctx); err != nil {
			return fmt.Errorf("error collecting writes: %w", err)
		}
	}
	if len(t.receipts) > 0 {
		t.pipe.Hold(genericPlansSQL)
		t.holdReceipts()
	}
	if len(t.completed) > 0 {
		// Every job completed here has its receipt: the safety-net trigger need not look (00008).
		t.pipe.Hold(jobsReceiptedSQL)
		t.pipe.Hold(completeJobsSQL, t.completed)
	}
	if t.handedOff && len(t.receipts) == 0 {
		// Only hand-offs to devices: their commit need not wait for the disk (see handOff).
		t.pipe.Hold("SET LOCAL synchronous_commit = off")
	}
	t.pipe.Hold("COMMIT")
	if err := t.pipe.Flush(ctx); err != nil {
		return fmt.Errorf("error committing calls: %w", err)
	}
	return nil
}

// receiptsInsertSQL writes a transaction's receipts in one statement, from one JSON array (a parameter
// whose contents the planner cannot see, so the statement is planned once per connection instead of for
// each transaction's row count). Each row's summary holds the values of its tool's receipt_fields, looked up
// in its result and effects; a row marked collect gets effects.db_writes from the write-capture triggers
// here (the last call that succeeded). The INSERT's trigger sets the calls' status and notifies
// gem_receipt, in this order.
const receiptsInsertSQL = `WITH w AS MATERIALIZED (SELECT gem_collect_writes() AS writes)
	INSERT INTO core_tool_receipts (call_id, tool_name, status, result, effects, error, error_code, summary,
		idempotency_key, idempotency_hit, idempotency_of, attempt, worker, duration_ms, started_at, finished_at,
		device, devices_tried, limit_wait_ms)
	SELECT i.call_id, i.tool_name, i.status, i.result, e.effects, i.error, i.error ->> 'code',
		(SELECT jsonb_object_agg(f, v) FROM (
			SELECT f, jsonb_build_object('result', i.result, 'effects', e.effects) #> string_to_array(f, '.') AS v
			FROM jsonb_array_elements_text(i.fields) AS f) s WHERE v IS NOT NULL),
		i.idempotency_key, i.idempotency_hit, i.idempotency_of, i.attempt, $2, i.duration_ms, i.started_at,
		i.started_at + make_interval(secs => i.duration_ms / 1000.0), i.device, i.devices_tried, i.limit_wait_ms
	FROM jsonb_to_recordset($1::jsonb) AS i(call_id uuid, tool_name text, status text, result jsonb, effects jsonb,
		error jsonb, fields jsonb, idempotency_key text, idempotency_hit boolean, idempotency_of uuid, attempt integer,
		duration_ms float8, started_at timestamptz, collect boolean, device text, devices_tried text[], limit_wait_ms float8)
	CROSS JOIN LATERAL (SELECT CASE WHEN i.collect THEN jsonb_set(i.effects, '{db_writes}', (SELECT writes FROM w))
		ELSE i.effects END AS effects) e
	ON CONFLICT (call_id) DO NOTHING`

// receiptJSON is one element of receiptsInsertSQL's array.
type receiptJSON struct {
	CallID         uuid.UUID           `json:"call_id"`
	ToolName       string              `json:"tool_name"`
	Status         string              `json:"status"`
	Result         json.RawMessage     `json:"result,omitempty"`
	Effects        effectsJSON         `json:"effects"`
	Error          *registry.CallError `json:"error,omitempty"`
	Fields         []string            `json:"fields"`
	IdempotencyKey string              `json:"idempotency_key,omitempty"`
	IdempotencyHit bool                `json:"idempotency_hit"`
	IdempotencyOf  *uuid.UUID          `json:"idempotency_of,omitempty"`
	Attempt        int                 `json:"attempt"`
	DurationMS     float64             `json:"duration_ms"`
	StartedAt      time.Time           `json:"started_at"`
	Collect        bool                `json:"collect"`
	Device         string              `json:"device,omitempty"`
	DevicesTried   []string            `json:"devices_tried,omitempty"`
	LimitWaitMS    *float64            `json:"limit_wait_ms,omitempty"`
}

// effectsJSON is registry.Effects with db_writes as read from the database.
type effectsJSON struct {
	DBWrites     json.RawMessage          `json:"db_writes"`
	Outside      []registry.OutsideEffect `json:"outside,omitempty"`
	FilesWritten []registry.FileWritten   `json:"files_written,omitempty"`
}

var emptyWrites = json.RawMessage(`[]`)

// holdReceipts holds the INSERTs of the transaction's receipts: one, unless they are too large for one
// parameter (see receiptsChunkBytes).
func (t *batchTx) holdReceipts() {
	docs, err := encodeReceipts(t.receipts, t.uncollected, receiptsChunkBytes)
	if err != nil {
		t.pipe.Break(err)
		return
	}
	for _, doc := range docs {
		t.pipe.Hold(receiptsInsertSQL, doc, t.e.cfg.ID)
	}
}

// receiptsChunkBytes bounds the JSON of one receipts INSERT. A parameter cannot exceed 1 GB, and a batch of
// large results (128 calls of several MB each) could; a chunk starts a new INSERT instead. Receipts keep
// their order, and the last succeeded call's writes are collected by the INSERT that holds it.
const receiptsChunkBytes = 32 << 20

// encodeReceipts encodes receipts as receiptsInsertSQL's JSON arrays of at most chunkBytes each (a single
// larger receipt is an array of its own); the row of uncollected gets its writes in its INSERT.
func encodeReceipts(receipts []receiptRow, uncollected *receiptDraft, chunkBytes int) ([]string, error) {
	var (
		docs []string
		doc  = []byte{'['}
	)
	for _, r := range receipts {
		a, d := r.a, r.d
		row := receiptJSON{
			CallID: a.args.CallID, ToolName: a.toolName, Status: string(d.status), Result: d.result, Error: d.err,
			Effects:        effectsJSON{DBWrites: d.dbWrites, Outside: d.outside, FilesWritten: d.files},
			Fields:         []string{},
			IdempotencyKey: a.shownKey(), IdempotencyHit: d.hit, IdempotencyOf: d.hitOf,
			Attempt: a.job.Attempt, DurationMS: d.durationMS, StartedAt: a.started, Collect: d == uncollected,
			Device: d.device, DevicesTried: d.devicesTried, LimitWaitMS: a.limitWaitMS(),
		}
		if len(row.Effects.DBWrites) == 0 {
			row.Effects.DBWrites = emptyWrites
		}
		if a.tool != nil {
			row.Fields = a.tool.ReceiptFields
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, fmt.Errorf("error encoding the receipt of call %s: %w", a.args.CallID, err)
		}
		// A result or an error message may hold what jsonb refuses: repaired (gemsql.TextRepaired, GEM's rule
		// for text it did not get from a client), here, where every receipt passes.
		b = gemsql.TextRepaired(b)
		// Joining this receipt adds a comma, the receipt and (at the end) the closing bracket.
		if len(doc) > 1 && len(doc)+1+len(b)+1 > chunkBytes {
			docs = append(docs, string(append(doc, ']')))
			doc = []byte{'['}
		}
		if len(doc) > 1 {
			doc = append(doc, ',')
		}
		doc = append(doc, b...)
	}
	if len(doc) > 1 {
		docs = append(docs, string(append(doc, ']')))
	}
	return docs, nil
}
