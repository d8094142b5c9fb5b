package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/devicerelay"
	"github.com/gemhq/gem/executor/internal/pipe"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// A call for a device (docs/devices.md) runs here like any other call — loaded and locked, validated, its
// idempotency key claimed, its receipt written with its job's completion — but between its two transactions
// the device relay (executor/internal/devicerelay) hands it to a device and waits for the answer the hub
// stores on its attempt. What the call carries from one transaction to the next is its steps'.

// runDevice works a device job in two transactions with the wait for the device between them, so a call
// with a device holds no connection and no lock while the device works:
//
//  1. It routes the call and, when no device can take it yet, waits for one before any transaction is opened
//     (snoozing the job past devicerelay.WaitChunk).
//  2. The hand-off transaction loads and locks the call, checks it, claims its idempotency key and hands it to
//     a device (an attempt row, whose insert tells the hubs when it commits). A call that ends here (bad
//     input, an idempotency hit, an unknown device) gets its receipt in this transaction instead.
//  3. Outside any transaction, it waits for the answer the hub stores on the attempt, handing the call to
//     another device if its device goes away before it runs.
//  4. The receipt transaction writes the receipt from the answer with the job's completion, as for any call;
//     a call that failed gives its key back there.
//
// Both transactions go through the committers, batched with other calls: under load, many hand-offs and
// receipts share a commit (and the lock PostgreSQL holds while a transaction that notified commits).
//
// A run cut short anywhere is taken up again by River: the hand-off finds the call's attempts (and its own
// key) and the wait goes on from what they say, so a device is never asked twice for a call that must not
// run twice.
func (e *Executor) runDevice(p *pending) error {
	wake, stop := e.devices.WatchAnswers(p.args.CallID)
	defer stop() // watched before the hand-off: no answer can come before its wait
	started := time.Now()
	var h *handOff // the last hand-off's, kept for the call's next transaction
	for {
		dc, err := e.devices.Route(p.ctx, p.args.CallID)
		if err != nil {
			return awayOr(err)
		}
		if dc != nil && dc.Early == nil && len(dc.Alive) == 0 && !dc.HandedOut {
			alive, err := e.devices.AwaitDevice(p.ctx, dc, time.Now().Add(devicerelay.WaitChunk))
			switch {
			case err != nil:
				return awayOr(err)
			case len(alive) == 0 && time.Now().Before(dc.Deadline):
				return river.JobSnooze(0) // still waiting: go on in the job's next run
			case len(alive) == 0:
				dc.Early = dc.Unavailable()
			}
			dc.Alive = alive
		}
		if dc == nil || dc.Early != nil {
			p.step = receiptStep{call: dc, h: h}
			return e.commitQueued(p)
		}

		h = &handOff{started: started, tool: dc.Tool.Name}
		p.step = handOffStep{call: dc, h: h}
		err = e.commitQueued(p)
		var busy *keyBusyError
		switch {
		case errors.As(err, &busy):
			// Another call holds the key and is still with its device: its receipt decides this one.
			if err := e.awaitReceipt(p, dc, busy.holder); err != nil {
				return awayOr(err)
			}
			continue
		case !errors.Is(err, errHandedOff):
			return err // a receipt written at the hand-off, or a failure River retries
		}

		a := e.newAttempt(p) // for the wait's log lines
		ctx, cancel := context.WithTimeout(p.ctx, dc.WaitBound())
		ans := e.devices.Wait(ctx, wake, p.args.CallID, dc, h.attempts, a.log)
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		switch he, _ := asError(ans.Err); {
		case p.ctx.Err() != nil:
			return p.ctx.Err() // shut down: the job's next run waits on
		case timedOut:
			ans.Err = &gemcall.Error{Code: registry.CodeTimeout, Message: fmt.Sprintf("no answer from a device within the tool's %s timeout (and the call's wait for a device)", dc.Tool.Timeout())}
		case he != nil && errRetryable(he):
			// Never a receipt: the call may be with its device. The next run waits on from its attempts; a
			// call that keeps failing is discarded by River, and the safety net ends it outcome_unknown and
			// abandons its attempt (00036).
			a.log.Warn().Err(ans.Err).Msg("transient failure waiting for a device; the call will be retried")
			return awayOr(ans.Err)
		}
		h.answer = ans
		p.step = receiptStep{call: dc, h: h}
		return e.commitQueued(p)
	}
}

// errHandedOff is what the hand-off transaction delivers for a call it gave to a device.
var errHandedOff = errors.New("handed to a device")

// handOff is a device call's state between its two transactions.
type handOff struct {
	started time.Time
	tool    string
	// key is the idempotency key the hand-off claimed (committed with it), keyHash its hash.
	key     string
	keyHash [32]byte
	// attempts are the call's attempts as the hand-off read or made them.
	attempts []devicerelay.Attempt
	// answer is how the wait ended, for the receipt transaction.
	answer *devicerelay.Answer
}

// handOffStep checks a device call, claims its idempotency key and hands it to a device (handOff); once
// committed, runDevice waits for the device's answer, then writes its receipt.
type handOffStep struct {
	call *devicerelay.Call
	h    *handOff
}

func (s handOffStep) run(ctx context.Context, t *batchTx, a *attempt) outcome {
	return t.handOff(ctx, a, s.call, s.h)
}
func (handOffStep) committed(_ *Executor, p *pending) { p.result <- errHandedOff }
func (handOffStep) String() string                    { return "hand_off" }

// receiptStep writes a device call's receipt (runCall, whose "handler" gives the device's answer): after its
// hand-off and the wait, or at once for a call that reaches no device (call's Early, or no call routed: the
// registry's answer). h is the call's last hand-off, if it had one.
type receiptStep struct {
	call *devicerelay.Call
	h    *handOff
}

func (receiptStep) run(ctx context.Context, t *batchTx, a *attempt) outcome { return t.runCall(ctx, a) }

func (receiptStep) committed(e *Executor, p *pending) { retryWithoutReceipt(e, p) }
func (receiptStep) String() string                    { return "run" }

// deviceOf returns what a device call's step carries: its route and its hand-off (nil for any other call,
// and a hand-off nil before the first).
func deviceOf(s step) (*devicerelay.Call, *handOff) {
	switch s := s.(type) {
	case handOffStep:
		return s.call, s.h
	case receiptStep:
		return s.call, s.h
	}
	return nil, nil
}

// keyBusyError: the call's idempotency key is held by another call that has no receipt yet, committed by
// that call's hand-off to a device.
type keyBusyError struct{ holder uuid.UUID }

func (k *keyBusyError) Error() string {
	return fmt.Sprintf("idempotency key holder %s has no receipt yet", k.holder)
}

// handOff is the first transaction of a device call (see runDevice): the call is loaded, locked and
// checked, its key claimed, and, when it has no attempts yet, handed to the freshest device alive. Its
// commit need not wait for the disk: the hub marks the attempt sent, durably, before the device may see
// it, and that commit is later in the log than this one.
func (t *batchTx) handOff(ctx context.Context, a *attempt, dc *devicerelay.Call, h *handOff) outcome {
	if a.key != "" {
		d, err := a.claimKey(ctx, t.pipe, t.keyHolder)
		var busy *keyBusyError
		switch {
		case errors.As(err, &busy):
			return outcome{kind: outcomeRetry, err: err}
		case err != nil:
			return outcome{kind: outcomeRetry, err: err, txBroken: true}
		case d != nil:
			t.finish(a, d) // an idempotency hit: the device is not asked
			return outcome{kind: outcomeDone}
		}
		h.key, h.keyHash = a.key, sha256.Sum256([]byte(a.key))
	}
	if a.tool.HasCallLimits() && len(dc.Alive) > 0 {
		turn, err := t.deviceTurn(ctx, a)
		switch {
		case err != nil:
			var tb pipe.TxBrokenError
			return outcome{kind: outcomeRetry, err: err, txBroken: errors.As(err, &tb)}
		case turn.denied != nil:
			t.finish(a, turn.denied) // gives back the key the hand-off claimed
			return outcome{kind: outcomeDone}
		case turn.snooze > 0:
			if h.key != "" {
				t.pipe.Hold(devicerelay.ReleaseKeySQL, h.tool, h.keyHash[:], [16]byte(a.args.CallID))
				h.key = ""
			}
			return t.snooze(a, turn, false)
		}
	}
	device := "" // none alive: the call has attempts already, and the wait reads them
	if len(dc.Alive) > 0 {
		device = dc.Alive[0]
	}
	atts, err := devicerelay.HandOff(ctx, t.pipe, a.args.CallID, device, dc, a.deviceLimitKey)
	if err != nil {
		return outcome{kind: outcomeRetry, err: err, txBroken: true}
	}
	h.attempts = atts
	t.handedOff = true
	return outcome{kind: outcomePrepared}
}

// deviceTurn takes a device call's turn under its tool's limits, unless it was handed out already (its
// attempts say where; it had its turn then).
func (t *batchTx) deviceTurn(ctx context.Context, a *attempt) (limitTurn, error) {
	var handedOut bool
	err := t.pipe.QueryRow(ctx, devicerelay.HandedOutSQL, [16]byte(a.args.CallID)).Scan(&handedOut)
	if err != nil {
		return limitTurn{}, pipe.TxBrokenError{Err: fmt.Errorf("error reading the call's device attempts: %w", err)}
	}
	if handedOut {
		return limitTurn{}, nil
	}
	return a.takeLimits(ctx, t.pipe, true)
}

// answered is a device call's handler in its receipt transaction: the answer its wait ended with.
func answered(callID uuid.UUID, h *handOff) func(context.Context, *gemcall.Call) (any, error) {
	return func(context.Context, *gemcall.Call) (any, error) {
		if h == nil || h.answer == nil {
			return nil, fmt.Errorf("device call %s reached its receipt without an answer", callID)
		}
		if h.answer.Err != nil {
			return nil, h.answer.Err
		}
		return h.answer.Result, nil
	}
}

// awaitReceipt waits for the receipt of the call holding this call's key, up to the call's bound.
func (e *Executor) awaitReceipt(p *pending, dc *devicerelay.Call, holder uuid.UUID) error {
	ctx, cancel := context.WithTimeout(p.ctx, dc.WaitBound())
	defer cancel()
	if err := e.waiter.Start(ctx); err != nil {
		return gemcall.Retryable(fmt.Errorf("error listening for the receipt of call %s, which holds this call's idempotency key: %w", holder, err))
	}
	if _, err := e.waiter.WaitOne(ctx, holder); err != nil && p.ctx.Err() == nil {
		return gemcall.Retryable(fmt.Errorf("waiting for call %s, which holds this call's idempotency key: %w", holder, err))
	}
	return p.ctx.Err()
}
