// Package limits holds what a tool's concurrency and rate limits are made of, below the engine that takes a
// call's turn under them (docs/governance.md#limits): the SQL of slots, rate starts and snoozes, the
// advisory lock's key, and the waker that tells River when snoozed jobs are due.
package limits

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/riverqueue/river/rivertype"
)

// A concurrency limit's slots are counted in two places: calls run by executors hold transaction advisory
// locks (the two-integer form: the limit's hash and the slot's number) until their transaction ends, and
// calls with a device hold an open attempt (core_device_attempts.limit_key). Slot -1 of the limit orders
// the two: a device hand-off decides under it exclusively, and an executor's call holds it shared while
// it runs, so neither counts while the other is deciding (a tool run both ways lets devices in only
// between executors' calls).
//
// ConcurrencySlotSQL takes the first free slot for an executor's call, after the devices' open attempts;
// no row when every slot is taken (or a hand-off is deciding). A transaction that holds a slot already gets
// it again, which is right: its calls run one after another.
const ConcurrencySlotSQL = `SELECT s FROM (SELECT pg_try_advisory_xact_lock_shared($1::int, -1) AS free) d,
	generate_series(0, $2::int - 1 - (SELECT count(*) FROM core_device_attempts
		WHERE limit_key = $3 AND state IN ('queued', 'sent'))::int) s
	WHERE d.free AND pg_try_advisory_xact_lock($1::int, s) LIMIT 1`

// DeviceSlotsSQL counts the device calls of a limit that are with a device (not counting this call's own),
// under slot -1 exclusively: no executor's call of the limit is running, and hand-offs take turns.
const DeviceSlotsSQL = `SELECT pg_try_advisory_xact_lock($1::int, -1), (SELECT count(*) FROM core_device_attempts
	WHERE limit_key = $2 AND state IN ('queued', 'sent') AND call_id <> $3)`

// RateTakeSQL reserves a start under a rate limit, and RateReleaseSQL gives one back, each on a
// connection of its own so the limit's row is locked for a moment only (see gem_rate_take).
const (
	RateTakeSQL    = `SELECT at, wait_ms FROM gem_rate_take($1, $2, $3, $4)`
	RateReleaseSQL = `SELECT gem_rate_release($1, $2)`
	RateMoveSQL    = `SELECT gem_rate_move($1, $2, $3, $4)`
)

// RateGuard is how much longer than its per_ms a rate's windows are kept (gem_rate_take): a call may
// start that much after its reserved start and still not crowd the starts reserved after it.
func RateGuard(rl *registry.RateLimit) time.Duration {
	return min(time.Duration(rl.PerMS)*time.Millisecond/20, 25*time.Millisecond)
}

// RateEarly is how early a call may start before the start reserved for it: River runs a snoozed job no
// earlier than it was told, so this only absorbs the clocks of PostgreSQL and the executor.
const RateEarly = time.Millisecond

// LockKey hashes a limit key to the advisory lock's first integer.
func LockKey(limitKey string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte("concurrency\x00" + limitKey))
	return int32(h.Sum32())
}

// MarkLimitedSQL records, outside the call's savepoint, that the call found its limit full and the start its
// rate reserved for it (or none); for a call
// with outside effects it also clears the marker its first transaction set: the handler did not start.
const MarkLimitedSQL = `UPDATE core_tool_calls SET limited_since = coalesce(limited_since, now()), rate_reserved_at = $3,
	outside_token = CASE WHEN $2 THEN NULL ELSE outside_token END,
	outside_attempt = CASE WHEN $2 THEN NULL ELSE outside_attempt END,
	outside_started_at = CASE WHEN $2 THEN NULL ELSE outside_started_at END
	WHERE id = $1`

// SnoozeJobSQL gives a waiting call a new job, due when the call may go on, in the call's transaction;
// its present job is completed there too (with the receipts' jobs). This is River's snooze made in our
// transaction: River's own snooze is written by its completer a moment after the job returns, and would
// land on the job's next run had it been fetched meanwhile. The new job keeps the attempt count (the wait
// uses none) and counts the snooze in its metadata. It is available at once with its scheduled_at in the
// future, which River's fetch waits for; a snooze past River's scheduler interval would otherwise wait for
// the scheduler to make it available, up to that interval late.
const SnoozeJobSQL = `WITH old AS (SELECT * FROM river_job WHERE id = $1 AND state = 'running'),
	next AS (INSERT INTO river_job (args, kind, max_attempts, queue, priority, tags, state, scheduled_at, attempt,
			attempted_by, errors, metadata)
		SELECT args, kind, max_attempts, queue, priority, tags,
			'available',
			clock_timestamp() + $2::float8 * interval '1 millisecond', greatest(attempt - 1, 0), attempted_by, errors,
			(metadata - 'gem_rate_at') || jsonb_strip_nulls(jsonb_build_object('snoozes', coalesce((metadata ->> 'snoozes')::int, 0) + 1,
				'snoozed_from', id, 'gem_rate_at', $4::timestamptz))
		FROM old RETURNING id)
	UPDATE core_tool_calls c SET job_id = next.id FROM next WHERE c.id = $3`

// WakeWaiterSQL wakes the call of a tool that has waited longest for a concurrency slot (not one sleeping
// until its rate's start): held by a call that had a slot, it commits when the slot is given back.
const WakeWaiterSQL = `WITH w AS (SELECT job_id FROM core_tool_calls
		WHERE tool_name = $1 AND status = 'queued' AND limited_since IS NOT NULL AND rate_reserved_at IS NULL
		ORDER BY limited_since LIMIT 1)
	UPDATE river_job j SET scheduled_at = clock_timestamp() FROM w
	WHERE j.id = w.job_id AND j.state = 'available' AND j.scheduled_at > clock_timestamp()
	RETURNING pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}')`

// RateLead is how much earlier than its reserved start a call's job is due: fetching a due job takes tens
// of milliseconds on a busy machine, so the job is fetched ahead and Work sleeps the rest (AwaitRateStart),
// and the handler starts on time.
const RateLead = 100 * time.Millisecond

// rateAtKey is the metadata key of a rate-limited job's reserved start.
var rateAtKey = []byte(`"gem_rate_at"`)

// AwaitRateStart sleeps until the start a job's call has reserved under its rate (the job's metadata
// gem_rate_at), when that is near; a later or absent one is the load's to judge.
func AwaitRateStart(ctx context.Context, job *rivertype.JobRow) {
	var meta struct {
		RateAt *time.Time `json:"gem_rate_at"`
	}
	// Most jobs carry metadata (a trace context, River's own keys) but no rate start: look before decoding.
	if !bytes.Contains(job.Metadata, rateAtKey) || json.Unmarshal(job.Metadata, &meta) != nil || meta.RateAt == nil {
		return
	}
	wait := time.Until(*meta.RateAt)
	if wait <= 0 || wait > RateLead+wakerSlack {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ForgetRatesSQL deletes rate windows whose last start has left them: the next call starts a new one.
const ForgetRatesSQL = `DELETE FROM core_limit_rates WHERE expires_at < now() - interval '1 minute'`

// Waker tells the executors' River clients that snoozed jobs are due, so a job snoozed for 20 ms does not
// wait for the next poll (FetchPollInterval). One timer serves every snooze: it fires at the earliest due,
// notifies once for every snooze due by then, and is set again for the next.
type Waker struct {
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

func (w *Waker) At(due time.Time) {
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
func (w *Waker) arm() {
	if len(w.dues) == 0 {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(time.Until(w.dues[0]), w.fire)
	} else {
		w.timer.Reset(time.Until(w.dues[0]))
	}
}

func (w *Waker) fire() {
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

func (w *Waker) Stop() {
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

// NewWaker is a waker that calls notify (which tells River's clients that jobs are available).
func NewWaker(notify func()) *Waker { return &Waker{notify: notify} }
