package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A run's events (migration 00047, docs/durable-runs.md#async-and-live) are written in the transactions of
// the journal writes they describe: the run's start by its insert's trigger, with the calls it is recorded
// with; its end (the receipts it answered from, answer, run_ended) by its update's; calls added later with
// their insert (RunCallsAdded), receipts when they are settled, LLM steps with their brain_turns row.

// RunEventChannel is notified with a run's id when events are added to it, at commit, while a stream watches
// the run (RunWatch): a wake-up, after which the events are read. A run's end notifies RunEndedChannel alone
// (00056), watched or not: a reader waits on both.
const RunEventChannel = "gem_run_event"

// RunWatch records that a stream (who: unique to it) watches a run's events, so that adding them notifies
// RunEventChannel (migration 00058: a run nobody watches notifies nobody). It waits for a journal write in
// progress on the run, so an event is either read by the stream's first read after it, or notified.
func RunWatch(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, who string) error {
	if _, err := db.Exec(ctx, `SELECT gem_run_watch($1, $2)`, runID, who); err != nil {
		return coded(fmt.Errorf("error watching a run's events: %w", err))
	}
	return nil
}

// RunUnwatch removes a stream's watch of a run.
func RunUnwatch(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, who string) error {
	if _, err := db.Exec(ctx, `DELETE FROM brain_run_watches WHERE run_id = $1 AND watcher = $2`, runID, who); err != nil {
		return coded(fmt.Errorf("error ending a watch of a run's events: %w", err))
	}
	return nil
}

// Kinds of run events.
const (
	EventRunStarted           = "run_started"
	EventRunResumed           = "run_resumed"
	EventLLMStarted           = "llm_started"
	EventLLMEnded             = "llm_ended"
	EventText                 = "text"
	EventCallEnqueued         = "call_enqueued"
	EventCallAwaitingApproval = "call_awaiting_approval"
	EventReceipt              = "receipt"
	EventAnswer               = "answer"
	EventError                = "error"
	EventRunEnded             = "run_ended"
)

// RunEvent is one event of a run: Seq counts the run's events from 1.
type RunEvent struct {
	Seq  int64           `json:"seq"`
	At   time.Time       `json:"at"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// RunEventAdd appends an event to a run (data is marshalled to JSON). Given the pool, the event is a
// transaction of its own that does not wait for the disk (LazyCommit): an event alone is a view of the
// journal, and a crash of the server that loses it loses no work.
func RunEventAdd(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, kind string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("error encoding a run event: %w", err)
	}
	if err := LazyCommit(ctx, db, `SELECT gem_run_events_add($1, ARRAY[$2::text], ARRAY[$3::jsonb])`, runID, kind, b); err != nil {
		return coded(fmt.Errorf("error recording a run event: %w", err))
	}
	return nil
}

// RunEventAddFenced appends an event to a run that claim still owns (RunFenced's rule, in one statement: the
// run's row is locked and its owner checked under the lock; a run no longer claim's gets nothing), in a
// transaction of its own that does not wait for the disk, as RunEventAdd's.
func RunEventAddFenced(ctx context.Context, pool *pgxpool.Pool, runID uuid.UUID, claim, kind string, data any) error {
	b := &pgx.Batch{}
	if err := RunEventAddFencedQueue(b, runID, claim, kind, data); err != nil {
		return err
	}
	if err := LazyCommitBatch(ctx, pool, b); err != nil {
		return coded(fmt.Errorf("error recording a run event: %w", err))
	}
	return nil
}

// RunEventAddFencedQueue queues RunEventAddFenced's statement on b, to travel with the statements before it.
func RunEventAddFencedQueue(b *pgx.Batch, runID uuid.UUID, claim, kind string, data any) error {
	d, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("error encoding a run event: %w", err)
	}
	// Planned once for every run (lazyCommit's generic), and only this statement.
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	b.Queue(`WITH r AS MATERIALIZED (SELECT id FROM brain_runs WHERE id = $1 AND owner = $2 FOR NO KEY UPDATE)
		SELECT gem_run_events_add(r.id, ARRAY[$3::text], ARRAY[$4::jsonb]) FROM r`, runID, claim, kind, d)
	b.Queue("SET LOCAL plan_cache_mode TO DEFAULT")
	return nil
}

// RunEventAddQueue queues the statement that appends an event to a run on b: for a batch that writes the run
// under its fence already (RunFencedBatch).
func RunEventAddQueue(b *pgx.Batch, runID uuid.UUID, kind string, data any) error {
	d, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("error encoding a run event: %w", err)
	}
	b.Queue(`SELECT gem_run_events_add($1, ARRAY[$2::text], ARRAY[$3::jsonb])`, runID, kind, d)
	return nil
}

// LazyCommit runs one statement; given the pool, in a transaction of its own whose commit does not wait
// for the WAL to reach the disk (synchronous_commit off, one round trip). For writes that are derived from
// what is durable, or views of it: a crash of the server loses at most the last few hundred milliseconds of
// them, and the next durable commit flushes them with its own. A flush is ~1 ms here, per transaction.
// Given a transaction, the statement runs in it, which commits as it will.
func LazyCommit(ctx context.Context, db gemsql.DBTX, sql string, args ...any) error {
	return lazyCommit(ctx, db, false, sql, args...)
}

// lazyCommit is LazyCommit; generic plans the statement once for every parameter (plan_cache_mode), for a
// statement that reads a partitioned table by a parameter, which the plan cache would plan again at each
// call (0.2–0.4 ms a time for brain_runs here, against 0.01 ms), the partition pruned as it runs instead.
func lazyCommit(ctx context.Context, db gemsql.DBTX, generic bool, sql string, args ...any) error {
	pool, ok := db.(*pgxpool.Pool)
	if !ok {
		_, err := db.Exec(ctx, sql, args...)
		return coded(err)
	}
	b := &pgx.Batch{}
	if generic {
		b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	}
	b.Queue(sql, args...)
	return LazyCommitBatch(ctx, pool, b)
}

// LazyCommitBatch sends the statements queued on b in one round trip, as one transaction whose commit does
// not wait for the disk (LazyCommit's). A failing statement rolls all of them back.
func LazyCommitBatch(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	tx := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+3)}
	tx.BeginTx(pgx.TxOptions{})
	tx.Queue("SET LOCAL synchronous_commit = off")
	tx.QueuedQueries = append(tx.QueuedQueries, b.QueuedQueries...)
	tx.Queue("COMMIT")
	return coded(sendTx(ctx, pool, tx))
}

// execQueued runs the statements queued on b one after another on db, as a write whose queue form serves a
// batch elsewhere runs alone (their callbacks are not run: these are writes).
func execQueued(ctx context.Context, db gemsql.DBTX, b *pgx.Batch) error {
	for _, q := range b.QueuedQueries {
		if _, err := db.Exec(ctx, q.SQL, q.Arguments...); err != nil {
			return err
		}
	}
	return nil
}

// sendTx sends a batch that begins a transaction (pgx.Batch.BeginTx) and commits it, and gives its
// connection back: after a failing statement, once the transaction is rolled back.
func sendTx(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	br := pool.SendBatch(ctx, b)
	err := br.Close()
	if tx := br.Tx(); tx != nil {
		// Rolls back what a failure left open (nothing, once the batch's COMMIT ran) and releases the connection.
		_ = tx.Rollback(context.WithoutCancel(ctx))
	}
	return err
}

// StepTextScrub rewrites the text events of a run's step (of each of its attempts: those after each of its
// llm_started) through scrub, for secrets learned after they were written (the step's own calls name them).
// An attempt's text is scrubbed whole, so a value split across two events is found: its text goes in its
// first event, and the others are left empty.
func StepTextScrub(ctx context.Context, tx pgx.Tx, runID uuid.UUID, iteration int, scrub func(string) string) error {
	rows, err := tx.Query(ctx, `SELECT seq, kind, coalesce(data ->> 'text', '') FROM brain_run_events
		WHERE run_id = $1 AND kind IN ('`+EventText+`', '`+EventLLMStarted+`') AND seq >= (SELECT coalesce(min(seq), 0) FROM brain_run_events
			WHERE run_id = $1 AND kind = '`+EventLLMStarted+`' AND data ->> 'iteration' = $2)
		ORDER BY seq`, runID, strconv.Itoa(iteration))
	if err != nil {
		return coded(fmt.Errorf("error reading a step's text events: %w", err))
	}
	type event struct {
		Seq        int64
		Kind, Text string
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[event])
	if err != nil {
		return coded(err)
	}
	var seqs []int64
	var whole strings.Builder
	rewrite := func() error {
		if len(seqs) == 0 {
			return nil
		}
		defer func() { seqs = seqs[:0]; whole.Reset() }()
		scrubbed := scrub(whole.String())
		if scrubbed == whole.String() {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE brain_run_events SET data = jsonb_build_object('text', CASE WHEN seq = $3 THEN $4 ELSE '' END)
			WHERE run_id = $1 AND seq = ANY ($2)`, runID, seqs, seqs[0], scrubbed)
		return coded(err)
	}
	for _, e := range events {
		if e.Kind == EventLLMStarted {
			if err := rewrite(); err != nil {
				return err
			}
			continue
		}
		seqs = append(seqs, e.Seq)
		whole.WriteString(e.Text)
	}
	return rewrite()
}

// RunCallsAdded records call_enqueued (and call_awaiting_approval for those held for approval) for calls a
// run has just inserted, in the transaction that inserts them.
func RunCallsAdded(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, runCallsAddedSQL, runID, ids); err != nil {
		return coded(fmt.Errorf("error recording a run's calls as events: %w", err))
	}
	return nil
}

const runCallsAddedSQL = `SELECT gem_run_calls_added($1, $2)`

// RunCallsHeldQueue queues, on the batch that inserts a run's calls (ids), the call_awaiting_approval events
// of those held for a person's decision (gem_run_awaiting): the run's insert, or its turn's, has numbered
// their call_enqueued already. Which calls await approval the brain learns from the insert's answer
// (gemsql.Inserted).
func RunCallsHeldQueue(b *pgx.Batch, runID uuid.UUID, ids []uuid.UUID) {
	// Its answer (the calls held) is not read: the insert queued before it answered the same, and that is
	// what the brain reads. The function returns it for a reader of the SQL alone.
	b.Queue(`SELECT gem_run_awaiting($1, $2)`, runID, ids)
}

// RunEventsPage is one read of a run's events: those after a seq, and the run as it was when they were read
// (one statement, so one snapshot: a run read ended has its run_ended among its events, since both commit
// together).
type RunEventsPage struct {
	Events []RunEvent
	// Who may read the run is decided from these (brain.Reader.MayReadRun), at every read: an approver reads
	// a planned run's events only while it is planned.
	Mode        brain.Mode
	Status      string
	RequestedBy string
	ApprovedBy  string
}

// Ended says the run has ended (completed or failed): no event but a late receipt comes after its run_ended.
func (p *RunEventsPage) Ended() bool {
	return p.Status == brain.RunCompleted || p.Status == brain.RunFailed
}

// RunEventsRead returns a run's events after seq, oldest first (at most limit), with the run they belong to;
// ENOTFOUND when there is no such run.
func RunEventsRead(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, after int64, limit int) (*RunEventsPage, error) {
	rows, err := db.Query(ctx, `SELECT r.mode, r.status, coalesce(r.requested_by, ''), coalesce(r.approved_by, ''), e.seq, e.at, e.kind, e.data
		FROM brain_runs r LEFT JOIN LATERAL (
			SELECT seq, at, kind, data FROM brain_run_events WHERE run_id = r.id AND seq > $2 ORDER BY seq LIMIT $3) e ON true
		WHERE r.id = $1`, runID, after, limit)
	if err != nil {
		return nil, coded(fmt.Errorf("error reading a run's events: %w", err))
	}
	defer rows.Close()
	var page *RunEventsPage
	for rows.Next() {
		var (
			p    RunEventsPage
			mode string
			seq  *int64
			at   *time.Time
			kind *string
			data []byte
		)
		if err := rows.Scan(&mode, &p.Status, &p.RequestedBy, &p.ApprovedBy, &seq, &at, &kind, &data); err != nil {
			return nil, coded(fmt.Errorf("error reading a run's events: %w", err))
		}
		if page == nil {
			p.Mode = brain.Mode(mode)
			page = &p
		}
		if seq != nil { // a run without events after `after` is one row of NULLs
			page.Events = append(page.Events, RunEvent{Seq: *seq, At: *at, Kind: *kind, Data: data})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, coded(fmt.Errorf("error reading a run's events: %w", err))
	}
	if page == nil {
		return nil, brain.Errorf(brain.ENOTFOUND, "no run %s", runID)
	}
	return page, nil
}
