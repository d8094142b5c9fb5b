package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/limits"
	"github.com/gemhq/gem/executor/internal/pipe"
	"github.com/gemhq/gem/registry"
	"github.com/jackc/pgx/v5"
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

// limitKey is the key a limit of the call's tool counts it by: the tool, "/", then the key's value.
func (a *attempt) limitKey(key string) string {
	input, _ := a.value.(map[string]any)
	return a.tool.Name + "/" + registry.LimitKey(key, a.caller, a.agent, input)
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
		if late := time.Since(*start); late+slotRetry < limits.RateGuard(l.Rate) {
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
		case wait > limits.RateEarly:
			turn := a.waitTurn(reason, wait) // woken early
			if turn.denied != nil {
				return turn, nil, a.releaseRate(ctx, *r)
			}
			turn.reserved = r
			return turn, nil, nil
		case -wait <= limits.RateGuard(rl):
			return limitTurn{}, r, a.useReservation(ctx, conn)
		}
		// Later than its start by more than the windows' guard: it starts now if that crowds no window,
		// else it gives its start back and reserves another.
		var moved *time.Time
		if err := a.e.pool.QueryRow(ctx, limits.RateMoveSQL, a.limitKey(rl.Key), rl.Max, rl.PerMS, *r).Scan(&moved); err != nil {
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
	if err := a.e.pool.QueryRow(ctx, limits.RateTakeSQL, a.limitKey(rl.Key), rl.Max, rl.PerMS, max(horizon.Milliseconds(), 0)).Scan(&at, &waitMS); err != nil {
		return limitTurn{}, nil, gemcall.Retryable(fmt.Errorf("error reserving a start under %s's rate limit: %w", a.tool.Name, err))
	}
	wait := time.Duration(math.Ceil(waitMS*1e3)) * time.Microsecond
	switch {
	case at == nil:
		// Its turn would come after its bound.
		return a.deny(reason, a.waited()+wait), nil, nil
	case wait <= limits.RateEarly:
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
		if err := conn.QueryRow(ctx, limits.DeviceSlotsSQL, limits.LockKey(key), key, [16]byte(a.args.CallID)).Scan(&locked, &busy); err != nil {
			return false, pipe.TxBrokenError{Err: fmt.Errorf("error counting the calls of %s with a device: %w", a.tool.Name, err)}
		}
		if !locked || busy >= cl.Max {
			return true, nil
		}
		a.deviceLimitKey = key
		return false, nil // its slot is given back when its device answers (see finish)
	}
	var slot int32
	err := conn.QueryRow(ctx, limits.ConcurrencySlotSQL, limits.LockKey(key), cl.Max, key).Scan(&slot)
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
// again, when limits.MarkLimitedSQL keeps it).
func (a *attempt) useReservation(ctx context.Context, conn pipe.Conn) error {
	if _, err := conn.Exec(ctx, `UPDATE core_tool_calls SET rate_reserved_at = NULL WHERE id = $1`, [16]byte(a.args.CallID)); err != nil {
		return pipe.TxBrokenError{Err: fmt.Errorf("error using the call's rate reservation: %w", err)}
	}
	return nil
}

// releaseRate gives back a start reserved for the call under its tool's rate limit.
func (a *attempt) releaseRate(ctx context.Context, at time.Time) error {
	if _, err := a.e.pool.Exec(ctx, limits.RateReleaseSQL, a.limitKey(a.tool.Limits.Rate.Key), at); err != nil {
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
// 800 ms: a call that ends wakes the longest waiting one at once (limits.WakeWaiterSQL), so these are the fallback.
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

// givesSlotBack reports whether the call's transaction gives back a concurrency slot: one it took (its lock
// goes with the transaction), or a device call's (its attempt ends with its receipt).
func (a *attempt) givesSlotBack() bool {
	if a.heldSlot {
		return true
	}
	_, h := deviceOf(a.p.step)
	return h != nil && a.tool != nil && a.tool.Limits != nil && a.tool.Limits.Concurrency != nil
}

// wakeRiver tells every executor's River client that jobs are available, as an insert does.
func (e *Executor) wakeRiver() {
	ctx, cancel := context.WithTimeout(e.dbCtx, 5*time.Second)
	defer cancel()
	_, _ = e.pool.Exec(ctx, `SELECT pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}')`)
}
