package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/pipe"
	"github.com/gemhq/gem/registry"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
)

// Concurrency and rate limits (docs/governance.md#limits). A call over its tool's limit is snoozed (River
// puts its job back without using an attempt) and tried again; past its tool's max_wait_ms, counted from
// when it first found the limit full (core_tool_calls.limited_since), it fails rate_limited.

// limitTurn is what a call's limits say when it is about to run.
type limitTurn struct {
	// snooze > 0: the limit is full; the job is tried again after it.
	snooze time.Duration
	// reserved is the start the call's rate limit reserved for it, when it snoozes until then.
	reserved *time.Time
	// denied: the call waited past its bound.
	denied *receiptDraft
	// reason names the limit that is full, for the logs.
	reason string
}

// A concurrency limit's slots are counted in two places: calls run by executors hold transaction advisory
// locks (the two-integer form: the limit's hash and the slot's number) until their transaction ends, and
// calls with a device hold an open attempt (core_device_attempts.limit_key). Slot -1 of the limit orders
// the two: a device hand-off decides under it exclusively, and an executor's call holds it shared while
// it runs, so neither counts while the other is deciding (a tool run both ways lets devices in only
// between executors' calls).
//
// concurrencySlotSQL takes the first free slot for an executor's call, after the devices' open attempts;
// no row when every slot is taken (or a hand-off is deciding). A transaction that holds a slot already gets
// it again, which is right: its calls run one after another.
const concurrencySlotSQL = `SELECT s FROM (SELECT pg_try_advisory_xact_lock_shared($1::int, -1) AS free) d,
	generate_series(0, $2::int - 1 - (SELECT count(*) FROM core_device_attempts
		WHERE limit_key = $3 AND state IN ('queued', 'sent'))::int) s
	WHERE d.free AND pg_try_advisory_xact_lock($1::int, s) LIMIT 1`

// deviceSlotsSQL counts the device calls of a limit that are with a device (not counting this call's own),
// under slot -1 exclusively: no executor's call of the limit is running, and hand-offs take turns.
const deviceSlotsSQL = `SELECT pg_try_advisory_xact_lock($1::int, -1), (SELECT count(*) FROM core_device_attempts
	WHERE limit_key = $2 AND state IN ('queued', 'sent') AND call_id <> $3)`

// rateTakeSQL reserves a start under a rate limit, and rateReleaseSQL gives one back, each on a
// connection of its own so the limit's row is locked for a moment only (see gem_rate_take).
const (
	rateTakeSQL    = `SELECT at, wait_ms FROM gem_rate_take($1, $2, $3, $4)`
	rateReleaseSQL = `SELECT gem_rate_release($1, $2)`
	rateMoveSQL    = `SELECT gem_rate_move($1, $2, $3, $4)`
)

// rateGuard is how much longer than its per_ms a rate's windows are kept (gem_rate_take): a call may
// start that much after its reserved start and still not crowd the starts reserved after it.
func rateGuard(rl *registry.RateLimit) time.Duration {
	return min(time.Duration(rl.PerMS)*time.Millisecond/20, 25*time.Millisecond)
}

// rateEarly is how early a call may start before the start reserved for it: River runs a snoozed job no
// earlier than it was told, so this only absorbs the clocks of PostgreSQL and the executor.
const rateEarly = time.Millisecond

// limitKey is the key a limit of the call's tool counts it by: the tool, "/", then the key's value.
func (a *attempt) limitKey(key string) string {
	input, _ := a.value.(map[string]any)
	return a.tool.Name + "/" + registry.LimitKey(key, a.caller, a.agent, input)
}

// lockKey hashes a limit key to the advisory lock's first integer.
func lockKey(limitKey string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte("concurrency\x00" + limitKey))
	return int32(h.Sum32())
}

// takeLimits takes the call's turn under its tool's limits, in the transaction that runs its handler
// (conn), or says how long to wait. A call without limits returns at once. device says the call is handed to
// a device: its slot is its attempt (counted, not locked).
//
// The rate comes first: a call reserves its start (first come, first served) and sleeps until then, so
// waiting calls are spread over time instead of all trying the concurrency limit at once. At its start it
// takes a concurrency slot; when none is free it tries again shortly, keeping its start while that is still
// within the rate's guard, or gives it back.
func (a *attempt) takeLimits(ctx context.Context, conn pipe.Conn, device bool) (limitTurn, error) {
	l := a.tool.Limits
	if !a.tool.HasCallLimits() {
		return limitTurn{}, nil
	}
	var start *time.Time // the rate's start this run uses
	if rl := l.Rate; rl != nil {
		turn, at, err := a.rateTurn(ctx, conn, rl)
		if err != nil || turn.snooze > 0 || turn.denied != nil {
			return turn, err
		}
		start = at
	}
	cl := l.Concurrency
	if cl == nil {
		return limitTurn{}, nil
	}
	full, err := a.concurrencyFull(ctx, conn, cl, device)
	if err != nil || !full {
		return limitTurn{}, err
	}
	reason := fmt.Sprintf("concurrency %d", cl.Max)
	if start != nil {
		if late := time.Since(*start); late+slotRetry < rateGuard(l.Rate) {
			turn := a.waitTurn(reason, slotRetry)
			if turn.denied == nil {
				turn.reserved = start // keep it: a slot may free in time
				return turn, nil
			}
		}
		// Its start would pass unused: give it back, and reserve again later.
		if err := a.releaseRate(ctx, *start); err != nil {
			return limitTurn{}, err
		}
	}
	return a.waitTurn(reason, 0), nil
}

// slotRetry is how soon a call whose rate start has come tries a concurrency slot again.
const slotRetry = 5 * time.Millisecond

// rateTurn reserves the call's start under its tool's rate limit, or uses the one reserved for it. It
// returns the turn (a snooze until the start, or rate_limited) or, when the start has come, the start.
func (a *attempt) rateTurn(ctx context.Context, conn pipe.Conn, rl *registry.RateLimit) (limitTurn, *time.Time, error) {
	reason := fmt.Sprintf("rate %d per %d ms", rl.Max, rl.PerMS)
	if r := a.rateReservedAt; r != nil {
		wait := time.Until(*r)
		switch {
		case wait > rateEarly:
			turn := a.waitTurn(reason, wait) // woken early
			if turn.denied != nil {
				return turn, nil, a.releaseRate(ctx, *r)
			}
			turn.reserved = r
			return turn, nil, nil
		case -wait <= rateGuard(rl):
			return limitTurn{}, r, a.useReservation(ctx, conn)
		}
		// Later than its start by more than the windows' guard: it starts now if that crowds no window,
		// else it gives its start back and reserves another.
		var moved *time.Time
		if err := a.e.pool.QueryRow(ctx, rateMoveSQL, a.limitKey(rl.Key), rl.Max, rl.PerMS, *r).Scan(&moved); err != nil {
			return limitTurn{}, nil, gemcall.Retryable(fmt.Errorf("error moving a start under %s's rate limit: %w", a.tool.Name, err))
		}
		if moved != nil {
			return limitTurn{}, moved, a.useReservation(ctx, conn)
		}
		if err := a.releaseRate(ctx, *r); err != nil {
			return limitTurn{}, nil, err
		}
	}
	var (
		at     *time.Time
		waitMS float64
	)
	horizon := a.tool.LimitWait() - a.waited()
	if err := a.e.pool.QueryRow(ctx, rateTakeSQL, a.limitKey(rl.Key), rl.Max, rl.PerMS, max(horizon.Milliseconds(), 0)).Scan(&at, &waitMS); err != nil {
		return limitTurn{}, nil, gemcall.Retryable(fmt.Errorf("error reserving a start under %s's rate limit: %w", a.tool.Name, err))
	}
	wait := time.Duration(math.Ceil(waitMS*1e3)) * time.Microsecond
	switch {
	case at == nil:
		// Its turn would come after its bound.
		return a.deny(reason, a.waited()+wait), nil, nil
	case wait <= rateEarly:
		return limitTurn{}, at, nil
	}
	turn := a.waitTurn(reason, wait)
	turn.reserved = at
	return turn, nil, nil
}

// concurrencyFull tries to take a slot of the call's concurrency limit and reports whether every slot is
// taken.
func (a *attempt) concurrencyFull(ctx context.Context, conn pipe.Conn, cl *registry.ConcurrencyLimit, device bool) (bool, error) {
	key := a.limitKey(cl.Key)
	if device {
		var (
			locked bool
			busy   int
		)
		if err := conn.QueryRow(ctx, deviceSlotsSQL, lockKey(key), key, [16]byte(a.args.CallID)).Scan(&locked, &busy); err != nil {
			return false, pipe.TxBrokenError{Err: fmt.Errorf("error counting the calls of %s with a device: %w", a.tool.Name, err)}
		}
		if !locked || busy >= cl.Max {
			return true, nil
		}
		a.deviceLimitKey = key
		return false, nil // its slot is given back when its device answers (see finish)
	}
	var slot int32
	err := conn.QueryRow(ctx, concurrencySlotSQL, lockKey(key), cl.Max, key).Scan(&slot)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return true, nil
	case err != nil:
		return false, pipe.TxBrokenError{Err: fmt.Errorf("error taking a slot of %s's concurrency limit: %w", a.tool.Name, err)}
	}
	a.heldSlot = true
	return false, nil
}

// useReservation clears the call's reservation, in its savepoint: its start is used (unless the call waits
// again, when markLimitedSQL keeps it).
func (a *attempt) useReservation(ctx context.Context, conn pipe.Conn) error {
	if _, err := conn.Exec(ctx, `UPDATE core_tool_calls SET rate_reserved_at = NULL WHERE id = $1`, [16]byte(a.args.CallID)); err != nil {
		return pipe.TxBrokenError{Err: fmt.Errorf("error using the call's rate reservation: %w", err)}
	}
	return nil
}

// releaseRate gives back a start reserved for the call under its tool's rate limit.
func (a *attempt) releaseRate(ctx context.Context, at time.Time) error {
	if _, err := a.e.pool.Exec(ctx, rateReleaseSQL, a.limitKey(a.tool.Limits.Rate.Key), at); err != nil {
		return gemcall.Retryable(fmt.Errorf("error giving back a start under %s's rate limit: %w", a.tool.Name, err))
	}
	return nil
}

// waited is how long the call has waited for its limits.
func (a *attempt) waited() time.Duration {
	if a.limitedSince == nil {
		return 0
	}
	return time.Since(*a.limitedSince)
}

// Snoozes while a concurrency limit is full start at 50 ms and double with each snooze of the call, up to
// 800 ms: a call that ends wakes the longest waiting one at once (wakeWaiterSQL), so these are the fallback.
const (
	limitSnoozeFirst = 50 * time.Millisecond
	limitSnoozeMax   = 800 * time.Millisecond
)

// waitTurn is the turn of a call whose limit is full: a snooze of wait (a rate's, known) or of a backoff (a
// concurrency's, unknown), or rate_limited once its wait would pass its tool's bound.
func (a *attempt) waitTurn(reason string, wait time.Duration) limitTurn {
	if wait == 0 {
		var meta struct {
			Snoozes int `json:"snoozes"`
		}
		_ = json.Unmarshal(a.job.Metadata, &meta) // River's own metadata; no count means none yet
		wait = limitSnoozeMax
		if meta.Snoozes < 4 {
			wait = limitSnoozeFirst << meta.Snoozes
		}
	}
	bound, waited := a.tool.LimitWait(), a.waited()
	if waited >= bound {
		return a.deny(reason, waited)
	}
	return limitTurn{reason: reason, snooze: max(min(wait, bound-waited), time.Millisecond)}
}

// deny is the turn of a call that would wait longer than its tool allows: it fails rate_limited.
func (a *attempt) deny(reason string, waited time.Duration) limitTurn {
	bound := a.tool.LimitWait()
	return limitTurn{reason: reason, denied: failed(registry.CodeRateLimited,
		fmt.Sprintf("%s would wait %s for its turn under its limit (%s), more than the %s it may wait", a.tool.Name,
			waited.Round(time.Millisecond), reason, bound),
		map[string]any{"limit": reason, "waited_ms": waited.Milliseconds(), "max_wait_ms": bound.Milliseconds()})}
}

// limitWaitMS is how long the call waited for its limits before it ran (nil: its tool has none).
func (a *attempt) limitWaitMS() *float64 {
	if a.tool == nil || !a.tool.HasCallLimits() {
		return nil
	}
	ms := 0.0
	if a.limitedSince != nil {
		ms = max(float64(a.started.Sub(*a.limitedSince).Microseconds())/1000, 0)
	}
	return &ms
}

// markLimitedSQL records, outside the call's savepoint, that the call found its limit full and the start its
// rate reserved for it (or none); for a call
// with outside effects it also clears the marker its first transaction set: the handler did not start.
const markLimitedSQL = `UPDATE core_tool_calls SET limited_since = coalesce(limited_since, now()), rate_reserved_at = $3,
	outside_token = CASE WHEN $2 THEN NULL ELSE outside_token END,
	outside_attempt = CASE WHEN $2 THEN NULL ELSE outside_attempt END,
	outside_started_at = CASE WHEN $2 THEN NULL ELSE outside_started_at END
	WHERE id = $1`

// snoozeJobSQL gives a waiting call a new job, due when the call may go on, in the call's transaction;
// its present job is completed there too (with the receipts' jobs). This is River's snooze made in our
// transaction: River's own snooze is written by its completer a moment after the job returns, and would
// land on the job's next run had it been fetched meanwhile. The new job keeps the attempt count (the wait
// uses none) and counts the snooze in its metadata. It is available at once with its scheduled_at in the
// future, which River's fetch waits for; a snooze past River's scheduler interval would otherwise wait for
// the scheduler to make it available, up to that interval late.
const snoozeJobSQL = `WITH old AS (SELECT * FROM river_job WHERE id = $1 AND state = 'running'),
	next AS (INSERT INTO river_job (args, kind, max_attempts, queue, priority, tags, state, scheduled_at, attempt,
			attempted_by, errors, metadata)
		SELECT args, kind, max_attempts, queue, priority, tags,
			'available',
			clock_timestamp() + $2::float8 * interval '1 millisecond', greatest(attempt - 1, 0), attempted_by, errors,
			(metadata - 'gem_rate_at') || jsonb_strip_nulls(jsonb_build_object('snoozes', coalesce((metadata ->> 'snoozes')::int, 0) + 1,
				'snoozed_from', id, 'gem_rate_at', $4::timestamptz))
		FROM old RETURNING id)
	UPDATE core_tool_calls c SET job_id = next.id FROM next WHERE c.id = $3`

// wakeWaiterSQL wakes the call of a tool that has waited longest for a concurrency slot (not one sleeping
// until its rate's start): held by a call that had a slot, it commits when the slot is given back.
const wakeWaiterSQL = `WITH w AS (SELECT job_id FROM core_tool_calls
		WHERE tool_name = $1 AND status = 'queued' AND limited_since IS NOT NULL AND rate_reserved_at IS NULL
		ORDER BY limited_since LIMIT 1)
	UPDATE river_job j SET scheduled_at = clock_timestamp() FROM w
	WHERE j.id = w.job_id AND j.state = 'available' AND j.scheduled_at > clock_timestamp()
	RETURNING pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}')`

// givesSlotBack reports whether the call's transaction gives back a concurrency slot: one it took (its lock
// goes with the transaction), or a device call's (its attempt ends with its receipt).
func (a *attempt) givesSlotBack() bool {
	if a.heldSlot {
		return true
	}
	return a.p.handOff != nil && a.tool != nil && a.tool.Limits != nil && a.tool.Limits.Concurrency != nil
}

// rateLead is how much earlier than its reserved start a call's job is due: fetching a due job takes tens
// of milliseconds on a busy machine, so the job is fetched ahead and Work sleeps the rest (awaitRateStart),
// and the handler starts on time.
const rateLead = 100 * time.Millisecond

// awaitRateStart sleeps until the start a job's call has reserved under its rate (the job's metadata
// gem_rate_at), when that is near; a later or absent one is the load's to judge.
// rateAtKey is the metadata key of a rate-limited job's reserved start.
var rateAtKey = []byte(`"gem_rate_at"`)

func awaitRateStart(ctx context.Context, job *rivertype.JobRow) {
	var meta struct {
		RateAt *time.Time `json:"gem_rate_at"`
	}
	// Most jobs carry metadata (a trace context, River's own keys) but no rate start: look before decoding.
	if !bytes.Contains(job.Metadata, rateAtKey) || json.Unmarshal(job.Metadata, &meta) != nil || meta.RateAt == nil {
		return
	}
	wait := time.Until(*meta.RateAt)
	if wait <= 0 || wait > rateLead+wakerSlack {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// wakeRiver tells every executor's River client that jobs are available, as an insert does.
func (e *Executor) wakeRiver() {
	ctx, cancel := context.WithTimeout(e.dbCtx, 5*time.Second)
	defer cancel()
	_, _ = e.pool.Exec(ctx, `SELECT pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}')`)
}

// forgetRatesSQL deletes rate windows whose last start has left them: the next call starts a new one.
const forgetRatesSQL = `DELETE FROM core_limit_rates WHERE expires_at < now() - interval '1 minute'`

// waker tells the executors' River clients that snoozed jobs are due, so a job snoozed for 20 ms does not
// wait for the next poll (FetchPollInterval). One timer serves every snooze: it fires at the earliest due,
// notifies once for every snooze due by then, and is set again for the next.
type waker struct {
	mu     sync.Mutex
	timer  *time.Timer
	dues   []time.Time // sorted
	notify func()
	closed bool
}

// wakerSlack groups snoozes due close together into one notification, a little after they are due.
const wakerSlack = 2 * time.Millisecond

// wakerMaxDues bounds the snoozes remembered; past it the poll finds the others.
const wakerMaxDues = 10_000

func (w *waker) at(due time.Time) {
	if w == nil {
		return
	}
	due = due.Add(wakerSlack)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.dues) >= wakerMaxDues {
		return
	}
	i, _ := slices.BinarySearchFunc(w.dues, due, time.Time.Compare)
	if i < len(w.dues) && w.dues[i].Sub(due) < wakerSlack {
		return // a wake at most that much later is coming already (an earlier one may come before the job)
	}
	w.dues = slices.Insert(w.dues, i, due)
	if i == 0 {
		w.arm()
	}
}

// arm sets the timer for the earliest due (w.mu held).
func (w *waker) arm() {
	if len(w.dues) == 0 {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(time.Until(w.dues[0]), w.fire)
	} else {
		w.timer.Reset(time.Until(w.dues[0]))
	}
}

func (w *waker) fire() {
	w.mu.Lock()
	now := time.Now()
	n := 0
	for n < len(w.dues) && !w.dues[n].After(now.Add(wakerSlack)) {
		n++
	}
	w.dues = w.dues[n:]
	closed := w.closed
	if !closed {
		w.arm()
	}
	w.mu.Unlock()
	if n > 0 && !closed {
		w.notify()
	}
}

func (w *waker) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
