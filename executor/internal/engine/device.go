package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/pipe"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
)

// The device relay (docs/devices.md): a call for a device runs here like any other call — loaded and locked,
// validated, its idempotency key claimed, its receipt written with its job's completion — but its "handler"
// hands the call to a device through core_device_attempts and waits for the answer the hub stores there.
// The attempts are what a later run of the call (after this executor dies) reads to know what happened, so
// a device is never asked twice for a call that must not run twice.

// deviceWaitChunk bounds one wait for a device in a job's run; a longer wait snoozes the job and goes on in
// the next run, so the job never looks stuck to River.
const deviceWaitChunk = 10 * time.Second

// deviceAnswerGrace is how long past the tool's timeout the relay waits for a device's answer (the device
// times the run out itself and answers timeout).
const deviceAnswerGrace = 5 * time.Second

// devicePoll is how often a waiting relay reads the state without a notification (one may have been lost).
const devicePoll = time.Second

// deviceCall is a call for a device, as routed before its transaction.
type deviceCall struct {
	// tool is the contract the call is checked against: the registry's, or the one its devices registered.
	tool *registry.Tool
	// named is the device the call must run on; "" lets any device serving the tool run it.
	named string
	// candidates are the devices that serve the tool (named: just that one).
	candidates []string
	// alive are the candidates that were alive when the call was routed, freshest heartbeat first.
	alive []string
	// deadline is when waiting for a device ends: the call's creation plus its wait bound, wait.
	deadline time.Time
	wait     time.Duration
	// early is the receipt of a call that ends without reaching a device (unknown device, none in time).
	early *receiptDraft
	// handedOut: an earlier run handed the call to a device. Its attempts, not the devices alive now, say
	// how it ends: a call a device may have run never ends device_unavailable.
	handedOut bool
}

// mayRepeat reports whether a call that a device may have started (its socket dropped mid-call) may be
// handed out again: only tools whose mode says a second run is harmless.
func (d *deviceCall) mayRepeat() bool {
	return d.tool.Idempotency.Mode != registry.ModeNone && !d.tool.RunsAtMostOnce()
}

// deviceRelay is the executor's part of the relay: the listener that wakes waiting calls, and the contracts
// devices registered, compiled once.
type deviceRelay struct {
	e        *Executor
	listener *gemsql.Listener

	mu        sync.Mutex
	contracts map[[32]byte]*registry.Tool
}

func newDeviceRelay(e *Executor) *deviceRelay {
	return &deviceRelay{
		e:         e,
		listener:  gemsql.NewListener(e.pool, "device listener", []string{gemsql.DeviceResultChannel, gemsql.DeviceChangedChannel}, gemlog.Slog(e.log)),
		contracts: map[[32]byte]*registry.Tool{},
	}
}

// isDeviceJob reports whether a job's call goes to a device: it names one, its tool is not in the registry
// (a device's own tool, or no tool at all: routing tells), or its tool is device_agnostic.
func (e *Executor) isDeviceJob(args registry.CallArgs) bool {
	if args.Device != "" {
		return true
	}
	t, ok := e.reg.Tool(args.ToolName)
	return !ok || t.DeviceAgnostic
}

// routeSQL reads what routing a call needs in one statement: the call, whether its named device exists,
// the devices whose last registration serves its tool (with their contracts), and those alive now, freshest
// heartbeat first.
const routeSQL = `SELECT c.tool_name, coalesce(c.device, ''), c.device_wait_ms, c.created_at, c.status <> 'queued',
		c.device IS NULL OR EXISTS (SELECT 1 FROM core_devices d WHERE d.name = c.device),
		coalesce(t.devices, '{}'), coalesce(t.contracts, '{}'), coalesce(t.agnostic, '{}'), coalesce(t.alive, '{}'),
		EXISTS (SELECT 1 FROM core_device_attempts a WHERE a.call_id = c.id)
	FROM core_tool_calls c
	LEFT JOIN LATERAL (
		SELECT array_agg(t.device ORDER BY t.device) AS devices, array_agg(t.contract::text ORDER BY t.device) AS contracts,
			array_agg(t.agnostic ORDER BY t.device) AS agnostic,
			array_agg(d.name ORDER BY d.last_heartbeat DESC) FILTER (WHERE gem_device_alive(d)) AS alive
		FROM core_device_tools t JOIN core_devices d ON d.name = t.device
		WHERE t.tool_name = c.tool_name) t ON true
	WHERE c.id = $1`

// route decides where a device job's call goes. It returns nil for a call the batch path handles as it is
// (missing, already receipted, or an unknown tool no device serves).
func (r *deviceRelay) route(ctx context.Context, args registry.CallArgs) (*deviceCall, error) {
	var (
		toolName, named     string
		waitMS              *int32
		created             time.Time
		hasReceipt, namedOK bool
		devices, contracts  []string
		agnosticFlags       []bool
		alive               []string
		handedOut           bool
	)
	err := r.e.pool.QueryRow(ctx, routeSQL, [16]byte(args.CallID)).Scan(&toolName, &named, &waitMS, &created, &hasReceipt,
		&namedOK, &devices, &contracts, &agnosticFlags, &alive, &handedOut)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error routing the call to a device: %w", err)
	}
	if hasReceipt {
		return nil, nil
	}
	wait := r.e.cfg.DeviceWait
	if waitMS != nil {
		wait = time.Duration(*waitMS) * time.Millisecond
	}
	dc := &deviceCall{named: named, deadline: created.Add(wait), wait: wait, handedOut: handedOut}
	dc.tool, err = r.choose(dc, toolName, namedOK, devices, contracts, agnosticFlags)
	if err != nil || dc.early != nil {
		return dc, err
	}
	if dc.tool == nil {
		return nil, nil // no device serves it: the registry's answer (unknown_tool, with suggestions)
	}
	for _, d := range alive {
		if slices.Contains(dc.candidates, d) {
			dc.alive = append(dc.alive, d)
		}
	}
	return dc, nil
}

// choose sets the call's candidates (or its early receipt) and returns the contract it runs under; nil
// when no device serves a tool the registry lacks.
func (r *deviceRelay) choose(dc *deviceCall, toolName string, namedOK bool, devices, contracts []string, agnosticFlags []bool) (*registry.Tool, error) {
	regTool, inRegistry := r.e.reg.Tool(toolName)
	if dc.named != "" {
		i := slices.Index(devices, dc.named)
		switch {
		case !namedOK:
			dc.early = failed(registry.CodeUnknownDevice, fmt.Sprintf("no device named %q", dc.named), map[string]any{"device": dc.named})
			return nil, nil
		case i < 0:
			details := map[string]any{"device": dc.named, "tool": toolName}
			if len(devices) > 0 {
				details["devices_serving_tool"] = devices
			}
			dc.early = failed(registry.CodeUnknownDevice, fmt.Sprintf("device %q does not serve tool %s (as it last registered)", dc.named, toolName), details)
			return nil, nil
		}
		dc.candidates = []string{dc.named}
		if inRegistry {
			return regTool, nil
		}
		return r.contract(contracts[i])
	}

	switch {
	case inRegistry && regTool.DeviceAgnostic:
		dc.candidates = devices
		return regTool, nil
	case len(devices) == 0:
		return nil, nil
	case !slices.Contains(agnosticFlags, false):
		dc.candidates = devices
		return r.contract(contracts[0])
	case len(devices) == 1:
		// The only device that serves the tool is the one the call means.
		dc.named, dc.candidates = devices[0], devices
		return r.contract(contracts[0])
	default:
		dc.early = failed(registry.CodeInvalidCall, fmt.Sprintf(
			"tool %s runs on devices %s and is not device_agnostic: name the device on the call", toolName, strings.Join(devices, ", ")),
			map[string]any{"tool": toolName, "devices_serving_tool": devices})
		return nil, nil
	}
}

// contract compiles a contract a device registered (cached by its bytes).
func (r *deviceRelay) contract(raw string) (*registry.Tool, error) {
	key := sha256.Sum256([]byte(raw))
	r.mu.Lock()
	t, ok := r.contracts[key]
	r.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := registry.ParseDeviceTool(json.RawMessage(raw))
	if err != nil {
		// The hub checked it when the device registered; a contract that no longer compiles is a bug.
		return nil, fmt.Errorf("a registered device contract does not load: %w", err)
	}
	r.mu.Lock()
	r.contracts[key] = t
	r.mu.Unlock()
	return t, nil
}

// aliveSQL lists which of the given devices can be given calls now, freshest heartbeat first.
const aliveSQL = `SELECT d.name FROM core_devices d WHERE d.name = ANY($1) AND gem_device_alive(d) ORDER BY d.last_heartbeat DESC`

func (r *deviceRelay) alive(ctx context.Context, candidates []string) ([]string, error) {
	rows, err := r.e.pool.Query(ctx, aliveSQL, candidates)
	if err != nil {
		return nil, fmt.Errorf("error reading which devices are connected: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error reading which devices are connected: %w", err)
	}
	return names, nil
}

// awaitDevice waits until one of the candidates is alive, the deadline passes (ok false), or until (ok false,
// with time left before the deadline).
func (r *deviceRelay) awaitDevice(ctx context.Context, candidates []string, deadline, until time.Time) (alive []string, err error) {
	wake, stop := r.listener.Watch(gemsql.DeviceChangedChannel, "")
	defer stop()
	for {
		if alive, err = r.alive(ctx, candidates); err != nil || len(alive) > 0 {
			return alive, err
		}
		end := deadline
		if until.Before(end) {
			end = until
		}
		left := time.Until(end)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, devicePoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// waitBound bounds a wait for the call's answer from now: the tool's timeout (the device times its run
// out itself), the rest of the call's wait for a device, and a grace for the answer to arrive.
func (dc *deviceCall) waitBound() time.Duration {
	return dc.tool.Timeout() + max(time.Until(dc.deadline), 0) + deviceAnswerGrace
}

// unavailable is the receipt of a call whose device did not come in time.
func (dc *deviceCall) unavailable() *receiptDraft {
	waited := time.Since(dc.deadline) + dc.wait
	if dc.named != "" {
		return failed(registry.CodeDeviceUnavailable, fmt.Sprintf("device %q was not connected within the call's wait (%s)", dc.named, waited.Round(time.Millisecond)),
			map[string]any{"device": dc.named, "waited_ms": waited.Milliseconds()})
	}
	return failed(registry.CodeDeviceUnavailable, fmt.Sprintf("no device serving %s was connected within the call's wait (%s)", dc.tool.Name, waited.Round(time.Millisecond)),
		map[string]any{"devices_serving_tool": dc.candidates, "waited_ms": waited.Milliseconds()})
}

// runDevice works a device job in two transactions with the wait for the device between them, so a call
// with a device holds no connection and no lock while the device works:
//
//  1. It routes the call and, when no device can take it yet, waits for one before any transaction is opened
//     (snoozing the job past deviceWaitChunk).
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
	wake, stop := e.devices.listener.Watch(gemsql.DeviceResultChannel, p.args.CallID.String())
	defer stop() // watched before the hand-off: no answer can come before its wait
	started := time.Now()
	for {
		dc, err := e.devices.route(p.ctx, p.args)
		if err != nil {
			return awayOr(err)
		}
		if dc != nil && dc.early == nil && len(dc.alive) == 0 && !dc.handedOut {
			alive, err := e.devices.awaitDevice(p.ctx, dc.candidates, dc.deadline, time.Now().Add(deviceWaitChunk))
			switch {
			case err != nil:
				return awayOr(err)
			case len(alive) == 0 && time.Now().Before(dc.deadline):
				return river.JobSnooze(0) // still waiting: go on in the job's next run
			case len(alive) == 0:
				dc.early = dc.unavailable()
			}
			dc.alive = alive
		}
		p.device, p.step = dc, runStep{}
		if dc == nil || dc.early != nil {
			return e.commitQueued(p)
		}

		p.handOff = &handOff{started: started, tool: dc.tool.Name}
		p.step = handOffStep{}
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
		ctx, cancel := context.WithTimeout(p.ctx, dc.waitBound())
		ans := a.relay(ctx, wake, p.handOff.attempts)
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		switch he, _ := asError(ans.err); {
		case p.ctx.Err() != nil:
			return p.ctx.Err() // shut down: the job's next run waits on
		case timedOut:
			ans.err = &gemcall.Error{Code: registry.CodeTimeout, Message: fmt.Sprintf("no answer from a device within the tool's %s timeout (and the call's wait for a device)", dc.tool.Timeout())}
		case he != nil && errRetryable(he):
			// Never a receipt: the call may be with its device. The next run waits on from its attempts; a
			// call that keeps failing is discarded by River, and the safety net ends it outcome_unknown and
			// abandons its attempt (00036).
			a.log.Warn().Err(ans.err).Msg("transient failure waiting for a device; the call will be retried")
			return awayOr(ans.err)
		}
		p.handOff.answer = ans
		p.step = runStep{}
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
	attempts []deviceAttempt
	// answer is how the wait ended, for the receipt transaction.
	answer *relayAnswer
}

// relayAnswer is how a device call's wait ended: a result or an error, the device that ran it (if one did)
// and every device it was handed to, in order.
type relayAnswer struct {
	result json.RawMessage
	err    error
	ranOn  string
	tried  []string
}

// keyBusyError: the call's idempotency key is held by another call that has no receipt yet, committed by
// that call's hand-off to a device.
type keyBusyError struct{ holder uuid.UUID }

func (k *keyBusyError) Error() string {
	return fmt.Sprintf("idempotency key holder %s has no receipt yet", k.holder)
}

// abandonOpenSQL ends a device call's attempt still queued or sent when its receipt is written: nobody waits
// for it any more, so no hub hands it out and the hub holding its device tells the device to cancel. The
// relay leaves none open on its way to a receipt; this holds when it could not (a wait that timed out and
// could not abandon its attempt, the database away). The safety net does the same for its receipts (00036).
const abandonOpenSQL = `UPDATE core_device_attempts SET state = 'abandoned', finished_at = now()
	WHERE call_id = $1 AND state IN ('queued', 'sent')
	RETURNING pg_notify('` + gemsql.DeviceDispatchChannel + `', device)`

// releaseKeySQL gives back the key a device call's hand-off claimed, when the call fails.
const releaseKeySQL = `DELETE FROM core_idempotency_keys WHERE tool_name = $1 AND key_hash = $2 AND call_id = $3`

// handOff is the first transaction of a device call (see runDevice): the call is loaded, locked and
// checked, its key claimed, and, when it has no attempts yet, handed to the freshest device alive. Its
// commit need not wait for the disk: the hub marks the attempt sent, durably, before the device may see
// it, and that commit is later in the log than this one.
func (t *batchTx) handOff(ctx context.Context, a *attempt) outcome {
	h, dc := a.p.handOff, a.p.device
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
	if a.tool.HasCallLimits() && len(dc.alive) > 0 {
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
				t.pipe.Hold(releaseKeySQL, h.tool, h.keyHash[:], [16]byte(a.args.CallID))
				h.key = ""
			}
			return t.snooze(a, turn, false)
		}
	}
	device := "" // none alive: the call has attempts already, and the wait reads them
	if len(dc.alive) > 0 {
		device = dc.alive[0]
	}
	var limitKey *string
	if a.deviceLimitKey != "" {
		limitKey = &a.deviceLimitKey
	}
	atts, err := scanAttempts(t.pipe.Query(ctx, firstAttemptSQL, [16]byte(a.args.CallID), device, dc.tool.TimeoutMS, limitKey))
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
	err := t.pipe.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM core_device_attempts WHERE call_id = $1)`, [16]byte(a.args.CallID)).Scan(&handedOut)
	if err != nil {
		return limitTurn{}, pipe.TxBrokenError{Err: fmt.Errorf("error reading the call's device attempts: %w", err)}
	}
	if handedOut {
		return limitTurn{}, nil
	}
	return a.takeLimits(ctx, t.pipe, true)
}

// answered is a device call's handler in its receipt transaction: the answer its wait ended with.
func (a *attempt) answered(context.Context, *gemcall.Call) (any, error) {
	h := a.p.handOff
	if h == nil || h.answer == nil {
		return nil, fmt.Errorf("device call %s reached its receipt without an answer", a.args.CallID)
	}
	if h.answer.err != nil {
		return nil, h.answer.err
	}
	return h.answer.result, nil
}

// awaitReceipt waits for the receipt of the call holding this call's key, up to the call's bound.
func (e *Executor) awaitReceipt(p *pending, dc *deviceCall, holder uuid.UUID) error {
	ctx, cancel := context.WithTimeout(p.ctx, dc.waitBound())
	defer cancel()
	if err := e.waiter.Start(ctx); err != nil {
		return gemcall.Retryable(fmt.Errorf("error listening for the receipt of call %s, which holds this call's idempotency key: %w", holder, err))
	}
	if _, err := e.waiter.WaitOne(ctx, holder); err != nil && p.ctx.Err() == nil {
		return gemcall.Retryable(fmt.Errorf("waiting for call %s, which holds this call's idempotency key: %w", holder, err))
	}
	return p.ctx.Err()
}

// deviceAttempt is a row of core_device_attempts.
type deviceAttempt struct {
	id     int64
	device string
	state  string
	result []byte
	err    []byte
}

const attemptsSQL = `SELECT id, device, state, result, error FROM core_device_attempts WHERE call_id = $1 ORDER BY id`

// firstAttemptSQL reads the call's attempts and, when it has none, hands it to a device in the same
// statement (the insert's trigger tells the hubs when the hand-off commits).
const firstAttemptSQL = `WITH prior AS (SELECT id, device, state, result, error FROM core_device_attempts WHERE call_id = $1),
	ins AS (INSERT INTO core_device_attempts (call_id, device, timeout_ms, limit_key)
		SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM prior) AND $2 <> ''
		RETURNING id, device, state, result, error)
	SELECT * FROM prior UNION ALL SELECT * FROM ins ORDER BY id`

// AttemptInsertSQL hands a call to a device (the insert's trigger tells the hubs), unless the call has its
// receipt: another run of it may have ended it (runs overlap when an executor's liveness connection drops),
// and its receipt may say it never ran. The call's row is share-locked, so a receipt being committed is
// waited for and then seen. A failover's attempt counts under the same concurrency limit as the call's first.
const AttemptInsertSQL = `INSERT INTO core_device_attempts (call_id, device, timeout_ms, limit_key)
	SELECT c.id, $2, $3, (SELECT limit_key FROM core_device_attempts WHERE call_id = $1 ORDER BY id LIMIT 1)
	FROM core_tool_calls c WHERE c.id = $1 AND c.status = 'queued' FOR SHARE OF c
	RETURNING id`

func scanAttempts(rows pgx.Rows, err error) ([]deviceAttempt, error) {
	if err != nil {
		return nil, gemcall.Retryable(fmt.Errorf("error reading the call's device attempts: %w", err))
	}
	atts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (deviceAttempt, error) {
		var d deviceAttempt
		err := row.Scan(&d.id, &d.device, &d.state, &d.result, &d.err)
		return d, err
	})
	if err != nil {
		return nil, gemcall.Retryable(fmt.Errorf("error reading the call's device attempts: %w", err))
	}
	return atts, nil
}

// relay waits for a device's answer to a call handed off, from its attempts as the hand-off saw them (a run
// after a crash picks up where the last one was), handing it to another device when the last attempt never
// ran or may be repeated. wake is woken when the call's attempts change. The answer's err is the call's
// error, or a transient failure, or ctx's.
func (a *attempt) relay(ctx context.Context, wake <-chan struct{}, first []deviceAttempt) *relayAnswer {
	dc := a.p.device
	pool := a.e.pool
	callID := [16]byte(a.args.CallID)
	ans := &relayAnswer{}
	for pass := 0; ; pass++ {
		atts := first
		if pass > 0 {
			var err error
			if atts, err = scanAttempts(pool.Query(ctx, attemptsSQL, callID)); err != nil {
				ans.err = err
				return ans
			}
		}
		ans.tried = ans.tried[:0]
		for _, at := range atts {
			if !slices.Contains(ans.tried, at.device) {
				ans.tried = append(ans.tried, at.device)
			}
		}
		var last *deviceAttempt
		if len(atts) > 0 {
			last = &atts[len(atts)-1]
		}

		switch {
		case last != nil && last.state == gemsql.AttemptSucceeded:
			ans.ranOn, ans.result = last.device, json.RawMessage(last.result)
			return ans
		case last != nil && last.state == gemsql.AttemptFailed:
			ans.ranOn, ans.err = last.device, deviceError(last.device, last.err)
			return ans
		case last != nil && last.state == gemsql.AttemptAbandoned:
			ans.err = &gemcall.Error{Code: registry.CodeTimeout, Message: fmt.Sprintf("an earlier run of this call gave up waiting for device %q", last.device)}
			return ans
		case last != nil && last.state == gemsql.AttemptLost && !dc.mayRepeat():
			ans.ranOn, ans.err = last.device, &gemcall.Error{Code: registry.CodeOutcomeUnknown, Message: fmt.Sprintf(
				"device %q went away while running this call, which may not run twice (mode %s, permissions %v): it is not run again",
				last.device, dc.tool.Idempotency.Mode, dc.tool.Permissions),
				Details: map[string]any{"device": last.device, "permissions": dc.tool.Permissions}}
			return ans
		case last != nil && (last.state == gemsql.AttemptQueued || last.state == gemsql.AttemptSent):
			if err := a.awaitAnswer(ctx, last, wake); err != nil {
				ans.err = err
				return ans
			}
			continue
		}

		// No attempt yet, or the last one never ran (unsent) or may be repeated (lost): hand it out.
		dev, err := a.pickDevice(ctx, atts)
		if err != nil {
			ans.err = err
			return ans
		}
		if dev == "" {
			u := dc.unavailable().err
			ans.err = &gemcall.Error{Code: u.Code, Message: u.Message, Details: map[string]any{"devices_serving_tool": dc.candidates, "devices_tried": ans.tried}}
			return ans
		}
		var id int64
		err = pool.QueryRow(ctx, AttemptInsertSQL, callID, dev, dc.tool.TimeoutMS).Scan(&id)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "core_device_attempts_one_open" {
			continue // another run of this call handed it out first: wait on its attempt
		}
		if errors.Is(err, pgx.ErrNoRows) {
			// Another run of the call wrote its receipt: this one ends, and the job's next run completes it.
			ans.err = gemcall.Retryable(errors.New("the call has its receipt (another run of it ended it); not handing it out again"))
			return ans
		}
		if err != nil {
			ans.err = gemcall.Retryable(fmt.Errorf("error handing the call to device %s: %w", dev, err))
			return ans
		}
		a.log.Debug().Str("device", dev).Int64("device_attempt", id).Msg("call handed to a device")
	}
}

// pickDevice chooses the device for the next attempt: the named one, or the freshest alive candidate,
// preferring devices not tried yet. It waits for one until the call's deadline; "" means none came.
func (a *attempt) pickDevice(ctx context.Context, atts []deviceAttempt) (string, error) {
	dc, r := a.p.device, a.e.devices
	alive, err := r.awaitDevice(ctx, dc.candidates, dc.deadline, dc.deadline)
	if err != nil || len(alive) == 0 {
		return "", err
	}
	for _, d := range alive {
		if !slices.ContainsFunc(atts, func(at deviceAttempt) bool { return at.device == d && at.state != gemsql.AttemptUnsent }) {
			return d, nil
		}
	}
	return alive[0], nil
}

// awaitAnswer waits until the attempt's state may have changed: a notification, or a poll that finds its
// device no longer alive (then the devices that stopped heartbeating are expired, which ends the attempt).
// When the call's wait ends first, the attempt is abandoned, so a late answer is dropped and the device
// told to cancel; a shutdown leaves it for the job's next run.
func (a *attempt) awaitAnswer(ctx context.Context, at *deviceAttempt, wake <-chan struct{}) error {
	pool := a.e.pool
	t := time.NewTimer(devicePoll)
	defer t.Stop()
	select {
	case <-wake:
		return nil
	case <-t.C:
		alive, err := a.e.devices.alive(ctx, []string{at.device})
		if err != nil {
			return gemcall.Retryable(err)
		}
		if len(alive) == 0 {
			// An attempt still queued was never handed over: free it for another device now. One already
			// sent waits for the device to come back and answer, or for its heartbeat deadline.
			_, err := pool.Exec(ctx, `UPDATE core_device_attempts SET state = 'unsent', finished_at = now() WHERE id = $1 AND state = 'queued'`, at.id)
			if err == nil {
				_, err = pool.Exec(ctx, `SELECT gem_devices_expire()`)
			}
			if err != nil {
				return gemcall.Retryable(fmt.Errorf("error ending an attempt on a device that went away: %w", err))
			}
		}
		return nil
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err() // a shutdown: the job's next run waits on for the same attempt
		}
		// The call's wait is over. Abandon the attempt with a context of its own, and tell the hub so it
		// cancels the run on the device.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, err := pool.Exec(actx, `WITH a AS (
				UPDATE core_device_attempts SET state = 'abandoned', finished_at = now()
				WHERE id = $1 AND state IN ('queued', 'sent') RETURNING device)
			SELECT pg_notify('`+gemsql.DeviceDispatchChannel+`', a.device) FROM a`, at.id)
		if err != nil {
			a.log.Warn().Err(err).Int64("device_attempt", at.id).Msg("could not abandon a device attempt")
		}
		return ctx.Err()
	}
}

// deviceError is the error a device answered, as the receipt's: its code when it is one of GEM's,
// handler_error otherwise.
func deviceError(device string, raw []byte) error {
	var ce registry.CallError
	if err := json.Unmarshal(raw, &ce); err != nil || ce.Code == "" {
		return &gemcall.Error{Code: registry.CodeHandlerError, Message: fmt.Sprintf("device %q answered an error GEM cannot read", device),
			Details: map[string]any{"device": device, "answer": string(raw)}}
	}
	code := ce.Code
	details := map[string]any{"device": device}
	if len(ce.Details) > 0 {
		details["details"] = ce.Details
	}
	if !slices.Contains(registry.ErrorCodes, code) {
		details["device_code"] = code
		code = registry.CodeHandlerError
	}
	return &gemcall.Error{Code: code, Message: ce.Message, Details: details}
}
