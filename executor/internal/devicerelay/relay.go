// Package devicerelay is the executor's side of the device relay (docs/devices.md): routing a call for a
// device, the hand-off's attempts in core_device_attempts, and the waits for a device and for its answer.
// The engine runs a device call's transactions and gives the relay what it reads of the call.
//
// The attempts are what a later run of the call (after an executor dies) reads to know what happened, so a
// device is never asked twice for a call that must not run twice.
package devicerelay

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
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// WaitChunk bounds one wait for a device in a job's run; a longer wait snoozes the job and goes on in the
// next run, so the job never looks stuck to River.
const WaitChunk = 10 * time.Second

// answerGrace is how long past the tool's timeout the relay waits for a device's answer (the device times
// the run out itself and answers timeout).
const answerGrace = 5 * time.Second

// poll is how often a waiting relay reads the state without a notification (one may have been lost).
const poll = time.Second

// Call is a call for a device, as routed before its transaction.
type Call struct {
	// Tool is the contract the call is checked against: the registry's, or the one its devices registered.
	Tool *registry.Tool
	// named is the device the call must run on; "" lets any device serving the tool run it.
	named string
	// Candidates are the devices that serve the tool (named: just that one).
	Candidates []string
	// Alive are the candidates that were alive when the call was routed, freshest heartbeat first.
	Alive []string
	// Deadline is when waiting for a device ends: the call's creation plus its wait bound, wait.
	Deadline time.Time
	wait     time.Duration
	// Early is the error of a call that ends without reaching a device (unknown device, none in time).
	Early *registry.CallError
	// HandedOut: an earlier run handed the call to a device. Its attempts, not the devices alive now, say
	// how it ends: a call a device may have run never ends device_unavailable.
	HandedOut bool
}

// mayRepeat reports whether a call that a device may have started (its socket dropped mid-call) may be
// handed out again: only tools whose mode says a second run is harmless.
func (c *Call) mayRepeat() bool {
	return c.Tool.Idempotency.Mode != registry.ModeNone && !c.Tool.RunsAtMostOnce()
}

// Relay is the executor's part of the relay: the listener that wakes waiting calls, and the contracts
// devices registered, compiled once.
type Relay struct {
	pool *pgxpool.Pool
	reg  *registry.Registry
	// deviceWait is how long a call waits for a device when it does not say (Config.DeviceWait).
	deviceWait time.Duration
	listener   *gemsql.Listener

	mu        sync.Mutex
	contracts map[[32]byte]*registry.Tool
}

// New makes the relay of an executor whose own statements go through pool.
func New(pool *pgxpool.Pool, reg *registry.Registry, deviceWait time.Duration, log zerolog.Logger) *Relay {
	return &Relay{
		pool:       pool,
		reg:        reg,
		deviceWait: deviceWait,
		listener:   gemsql.NewListener(pool, "device listener", []string{gemsql.DeviceResultChannel, gemsql.DeviceChangedChannel}, gemlog.Slog(log)),
		contracts:  map[[32]byte]*registry.Tool{},
	}
}

// Start starts listening for devices and their answers.
func (r *Relay) Start(ctx context.Context) error { return r.listener.Start(ctx) }

// Stop stops listening.
func (r *Relay) Stop() { r.listener.Stop() }

// WatchAnswers returns a channel woken when the call's attempts change, and the function that stops it.
func (r *Relay) WatchAnswers(callID uuid.UUID) (<-chan struct{}, func()) {
	return r.listener.Watch(gemsql.DeviceResultChannel, callID.String())
}

// IsDeviceCall reports whether a job's call goes to a device: it names one, its tool is not in the registry
// (a device's own tool, or no tool at all: routing tells), or its tool is device_agnostic.
func (r *Relay) IsDeviceCall(args registry.CallArgs) bool {
	if args.Device != "" {
		return true
	}
	t, ok := r.reg.Tool(args.ToolName)
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

// Route decides where a device job's call goes. It returns nil for a call the batch path handles as it is
// (missing, already receipted, or an unknown tool no device serves).
func (r *Relay) Route(ctx context.Context, callID uuid.UUID) (*Call, error) {
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
	err := r.pool.QueryRow(ctx, routeSQL, [16]byte(callID)).Scan(&toolName, &named, &waitMS, &created, &hasReceipt,
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
	wait := r.deviceWait
	if waitMS != nil {
		wait = time.Duration(*waitMS) * time.Millisecond
	}
	dc := &Call{named: named, Deadline: created.Add(wait), wait: wait, HandedOut: handedOut}
	dc.Tool, err = r.choose(dc, toolName, namedOK, devices, contracts, agnosticFlags)
	if err != nil || dc.Early != nil {
		return dc, err
	}
	if dc.Tool == nil {
		return nil, nil // no device serves it: the registry's answer (unknown_tool, with suggestions)
	}
	for _, d := range alive {
		if slices.Contains(dc.Candidates, d) {
			dc.Alive = append(dc.Alive, d)
		}
	}
	return dc, nil
}

// callError is a call's error as a receipt holds it.
func callError(code registry.ErrorCode, message string, details any) *registry.CallError {
	ce := &registry.CallError{Code: code, Message: message}
	if details != nil {
		ce.Details, _ = json.Marshal(details)
	}
	return ce
}

// choose sets the call's candidates (or its early error) and returns the contract it runs under; nil
// when no device serves a tool the registry lacks.
func (r *Relay) choose(dc *Call, toolName string, namedOK bool, devices, contracts []string, agnosticFlags []bool) (*registry.Tool, error) {
	regTool, inRegistry := r.reg.Tool(toolName)
	if dc.named != "" {
		i := slices.Index(devices, dc.named)
		switch {
		case !namedOK:
			dc.Early = callError(registry.CodeUnknownDevice, fmt.Sprintf("no device named %q", dc.named), map[string]any{"device": dc.named})
			return nil, nil
		case i < 0:
			details := map[string]any{"device": dc.named, "tool": toolName}
			if len(devices) > 0 {
				details["devices_serving_tool"] = devices
			}
			dc.Early = callError(registry.CodeUnknownDevice, fmt.Sprintf("device %q does not serve tool %s (as it last registered)", dc.named, toolName), details)
			return nil, nil
		}
		dc.Candidates = []string{dc.named}
		if inRegistry {
			return regTool, nil
		}
		return r.contract(contracts[i])
	}

	switch {
	case inRegistry && regTool.DeviceAgnostic:
		dc.Candidates = devices
		return regTool, nil
	case len(devices) == 0:
		return nil, nil
	case !slices.Contains(agnosticFlags, false):
		dc.Candidates = devices
		return r.contract(contracts[0])
	case len(devices) == 1:
		// The only device that serves the tool is the one the call means.
		dc.named, dc.Candidates = devices[0], devices
		return r.contract(contracts[0])
	default:
		dc.Early = callError(registry.CodeInvalidCall, fmt.Sprintf(
			"tool %s runs on devices %s and is not device_agnostic: name the device on the call", toolName, strings.Join(devices, ", ")),
			map[string]any{"tool": toolName, "devices_serving_tool": devices})
		return nil, nil
	}
}

// contract compiles a contract a device registered (cached by its bytes).
func (r *Relay) contract(raw string) (*registry.Tool, error) {
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

func (r *Relay) alive(ctx context.Context, candidates []string) ([]string, error) {
	rows, err := r.pool.Query(ctx, aliveSQL, candidates)
	if err != nil {
		return nil, fmt.Errorf("error reading which devices are connected: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error reading which devices are connected: %w", err)
	}
	return names, nil
}

// AwaitDevice waits until one of the call's candidates is alive, its deadline passes (none alive), or until
// (none alive, with time left before the deadline).
func (r *Relay) AwaitDevice(ctx context.Context, dc *Call, until time.Time) (alive []string, err error) {
	return r.awaitDevice(ctx, dc.Candidates, dc.Deadline, until)
}

func (r *Relay) awaitDevice(ctx context.Context, candidates []string, deadline, until time.Time) (alive []string, err error) {
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
		t := time.NewTimer(min(left, poll))
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

// WaitBound bounds a wait for the call's answer from now: the tool's timeout (the device times its run
// out itself), the rest of the call's wait for a device, and a grace for the answer to arrive.
func (c *Call) WaitBound() time.Duration {
	return c.Tool.Timeout() + max(time.Until(c.Deadline), 0) + answerGrace
}

// Unavailable is the error of a call whose device did not come in time.
func (c *Call) Unavailable() *registry.CallError {
	waited := time.Since(c.Deadline) + c.wait
	if c.named != "" {
		return callError(registry.CodeDeviceUnavailable, fmt.Sprintf("device %q was not connected within the call's wait (%s)", c.named, waited.Round(time.Millisecond)),
			map[string]any{"device": c.named, "waited_ms": waited.Milliseconds()})
	}
	return callError(registry.CodeDeviceUnavailable, fmt.Sprintf("no device serving %s was connected within the call's wait (%s)", c.Tool.Name, waited.Round(time.Millisecond)),
		map[string]any{"devices_serving_tool": c.Candidates, "waited_ms": waited.Milliseconds()})
}

// Answer is how a device call's wait ended: a result or an error, the device that ran it (if one did)
// and every device it was handed to, in order.
type Answer struct {
	Result json.RawMessage
	// Err is the call's error, or a transient failure, or the wait's context's.
	Err   error
	RanOn string
	Tried []string
}

// AbandonOpenSQL ends a device call's attempt still queued or sent when its receipt is written: nobody waits
// for it any more, so no hub hands it out and the hub holding its device tells the device to cancel. The
// relay leaves none open on its way to a receipt; this holds when it could not (a wait that timed out and
// could not abandon its attempt, the database away). The safety net does the same for its receipts (00036).
const AbandonOpenSQL = `UPDATE core_device_attempts SET state = 'abandoned', finished_at = now()
	WHERE call_id = $1 AND state IN ('queued', 'sent')
	RETURNING pg_notify('` + gemsql.DeviceDispatchChannel + `', device)`

// ReleaseKeySQL gives back the key a device call's hand-off claimed, when the call fails.
const ReleaseKeySQL = `DELETE FROM core_idempotency_keys WHERE tool_name = $1 AND key_hash = $2 AND call_id = $3`

// HandedOutSQL reports whether the call was handed to a device already.
const HandedOutSQL = `SELECT EXISTS (SELECT 1 FROM core_device_attempts WHERE call_id = $1)`

// Attempt is a row of core_device_attempts.
type Attempt struct {
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

// Querier runs a statement: the hand-off's transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// HandOff reads the call's attempts in its hand-off transaction and, when it has none, hands it to device
// ("": none alive; the call has attempts already, and the wait reads them). Its attempts count under
// limitKey's concurrency limit ("": none).
func HandOff(ctx context.Context, tx Querier, callID uuid.UUID, device string, dc *Call, limitKey string) ([]Attempt, error) {
	var key *string
	if limitKey != "" {
		key = &limitKey
	}
	return scanAttempts(tx.Query(ctx, firstAttemptSQL, [16]byte(callID), device, dc.Tool.TimeoutMS, key))
}

func scanAttempts(rows pgx.Rows, err error) ([]Attempt, error) {
	if err != nil {
		return nil, gemcall.Retryable(fmt.Errorf("error reading the call's device attempts: %w", err))
	}
	atts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Attempt, error) {
		var d Attempt
		err := row.Scan(&d.id, &d.device, &d.state, &d.result, &d.err)
		return d, err
	})
	if err != nil {
		return nil, gemcall.Retryable(fmt.Errorf("error reading the call's device attempts: %w", err))
	}
	return atts, nil
}

// Wait waits for a device's answer to a call handed off, from its attempts as the hand-off saw them (a run
// after a crash picks up where the last one was), handing it to another device when the last attempt never
// ran or may be repeated. wake is woken when the call's attempts change (WatchAnswers); log has the call's
// fields.
func (r *Relay) Wait(ctx context.Context, wake <-chan struct{}, callID uuid.UUID, dc *Call, first []Attempt, log zerolog.Logger) *Answer {
	id16 := [16]byte(callID)
	ans := &Answer{}
	for pass := 0; ; pass++ {
		atts := first
		if pass > 0 {
			var err error
			if atts, err = scanAttempts(r.pool.Query(ctx, attemptsSQL, id16)); err != nil {
				ans.Err = err
				return ans
			}
		}
		ans.Tried = ans.Tried[:0]
		for _, at := range atts {
			if !slices.Contains(ans.Tried, at.device) {
				ans.Tried = append(ans.Tried, at.device)
			}
		}
		var last *Attempt
		if len(atts) > 0 {
			last = &atts[len(atts)-1]
		}

		switch {
		case last != nil && last.state == gemsql.AttemptSucceeded:
			ans.RanOn, ans.Result = last.device, json.RawMessage(last.result)
			return ans
		case last != nil && last.state == gemsql.AttemptFailed:
			ans.RanOn, ans.Err = last.device, deviceError(last.device, last.err)
			return ans
		case last != nil && last.state == gemsql.AttemptAbandoned:
			ans.Err = &gemcall.Error{Code: registry.CodeTimeout, Message: fmt.Sprintf("an earlier run of this call gave up waiting for device %q", last.device)}
			return ans
		case last != nil && last.state == gemsql.AttemptLost && !dc.mayRepeat():
			ans.RanOn, ans.Err = last.device, &gemcall.Error{Code: registry.CodeOutcomeUnknown, Message: fmt.Sprintf(
				"device %q went away while running this call, which may not run twice (mode %s, permissions %v): it is not run again",
				last.device, dc.Tool.Idempotency.Mode, dc.Tool.Permissions),
				Details: map[string]any{"device": last.device, "permissions": dc.Tool.Permissions}}
			return ans
		case last != nil && (last.state == gemsql.AttemptQueued || last.state == gemsql.AttemptSent):
			if err := r.awaitAnswer(ctx, last, wake, log); err != nil {
				ans.Err = err
				return ans
			}
			continue
		}

		// No attempt yet, or the last one never ran (unsent) or may be repeated (lost): hand it out.
		dev, err := r.pickDevice(ctx, dc, atts)
		if err != nil {
			ans.Err = err
			return ans
		}
		if dev == "" {
			u := dc.Unavailable()
			ans.Err = &gemcall.Error{Code: u.Code, Message: u.Message, Details: map[string]any{"devices_serving_tool": dc.Candidates, "devices_tried": ans.Tried}}
			return ans
		}
		var id int64
		err = r.pool.QueryRow(ctx, AttemptInsertSQL, id16, dev, dc.Tool.TimeoutMS).Scan(&id)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "core_device_attempts_one_open" {
			continue // another run of this call handed it out first: wait on its attempt
		}
		if errors.Is(err, pgx.ErrNoRows) {
			// Another run of the call wrote its receipt: this one ends, and the job's next run completes it.
			ans.Err = gemcall.Retryable(errors.New("the call has its receipt (another run of it ended it); not handing it out again"))
			return ans
		}
		if err != nil {
			ans.Err = gemcall.Retryable(fmt.Errorf("error handing the call to device %s: %w", dev, err))
			return ans
		}
		log.Debug().Str("device", dev).Int64("device_attempt", id).Msg("call handed to a device")
	}
}

// pickDevice chooses the device for the next attempt: the named one, or the freshest alive candidate,
// preferring devices not tried yet. It waits for one until the call's deadline; "" means none came.
func (r *Relay) pickDevice(ctx context.Context, dc *Call, atts []Attempt) (string, error) {
	alive, err := r.awaitDevice(ctx, dc.Candidates, dc.Deadline, dc.Deadline)
	if err != nil || len(alive) == 0 {
		return "", err
	}
	for _, d := range alive {
		if !slices.ContainsFunc(atts, func(at Attempt) bool { return at.device == d && at.state != gemsql.AttemptUnsent }) {
			return d, nil
		}
	}
	return alive[0], nil
}

// awaitAnswer waits until the attempt's state may have changed: a notification, or a poll that finds its
// device no longer alive (then the devices that stopped heartbeating are expired, which ends the attempt).
// When the call's wait ends first, the attempt is abandoned, so a late answer is dropped and the device
// told to cancel; a shutdown leaves it for the job's next run.
func (r *Relay) awaitAnswer(ctx context.Context, at *Attempt, wake <-chan struct{}, log zerolog.Logger) error {
	t := time.NewTimer(poll)
	defer t.Stop()
	select {
	case <-wake:
		return nil
	case <-t.C:
		alive, err := r.alive(ctx, []string{at.device})
		if err != nil {
			return gemcall.Retryable(err)
		}
		if len(alive) == 0 {
			// An attempt still queued was never handed over: free it for another device now. One already
			// sent waits for the device to come back and answer, or for its heartbeat deadline.
			_, err := r.pool.Exec(ctx, `UPDATE core_device_attempts SET state = 'unsent', finished_at = now() WHERE id = $1 AND state = 'queued'`, at.id)
			if err == nil {
				_, err = r.pool.Exec(ctx, `SELECT gem_devices_expire()`)
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
		_, err := r.pool.Exec(actx, `WITH a AS (
				UPDATE core_device_attempts SET state = 'abandoned', finished_at = now()
				WHERE id = $1 AND state IN ('queued', 'sent') RETURNING device)
			SELECT pg_notify('`+gemsql.DeviceDispatchChannel+`', a.device) FROM a`, at.id)
		if err != nil {
			log.Warn().Err(err).Int64("device_attempt", at.id).Msg("could not abandon a device attempt")
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
