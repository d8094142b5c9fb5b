package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/pipe"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

// attempt is one attempt at one call.
type attempt struct {
	e       *Executor
	p       *pending
	ctx     context.Context // the River job's context: cancelled on hard shutdown
	job     *rivertype.JobRow
	args    registry.CallArgs
	log     zerolog.Logger
	started time.Time

	// missing: the job names a call that does not exist.
	missing bool
	callRow

	tool    *registry.Tool
	handler gemcall.Handler
	// key is the tool's own idempotency key (registry.Tool.IdempotencyKeyFor), claimed in
	// core_idempotency_keys; a key the client sent (explicitKey) was also claimed as its request's key when the
	// call was inserted (core_request_keys), for a tool of any mode.
	key string
	// value is the decoded, valid input (limits may be counted by one of its properties).
	value any
	// deviceLimitKey is the concurrency limit a device call's attempts count under ("": none).
	deviceLimitKey string
	// heldSlot: the call took a slot of its tool's concurrency limit in this transaction.
	heldSlot bool
	// stored replaces the call's stored input: it held a secret in clear (an SQL insert), now sealed (or
	// removed, without a key).
	stored []byte

	// span is the attempt's gem.call span and traceCtx its context (tracing on only); receiptSpan lasts
	// from its receipt's draft, draft, to the commit.
	span        trace.Span
	traceCtx    context.Context
	receiptSpan trace.Span
	draft       *receiptDraft
}

// receiptDraft is a receipt before it is written.
type receiptDraft struct {
	status  registry.ReceiptStatus
	result  json.RawMessage
	outside []registry.OutsideEffect
	files   []registry.FileWritten
	err     *registry.CallError
	hit     bool
	hitOf   *uuid.UUID
	// dbWrites is effects.db_writes, read from the write-capture triggers after a handler that succeeded
	// (nil: it wrote nothing, or its writes are collected when the receipts are written; see batchTx).
	dbWrites json.RawMessage
	// durationMS is measured when the call ends, not when its receipt is written.
	durationMS float64
	// device ran the call and devicesTried were handed it, in order (device tools only).
	device       string
	devicesTried []string
}

func failed(code registry.ErrorCode, message string, details any) *receiptDraft {
	ce := &registry.CallError{Code: code, Message: message}
	if details != nil {
		ce.Details, _ = json.Marshal(details)
	}
	return failedWith(ce)
}

// failedWith is the receipt of a call that ended with ce.
func failedWith(ce *registry.CallError) *receiptDraft {
	status := registry.StatusFailed
	if ce.Code == registry.CodeNotConfigured {
		status = registry.StatusNotConfigured
	}
	return &receiptDraft{status: status, err: ce}
}

// loadSQL locks the rows of a batch's calls for the whole transaction and reads them, in id order so two
// transactions that lock the same calls (a call taken up again) cannot deadlock. The lock is FOR NO KEY
// UPDATE: it excludes every other executor as FOR UPDATE would, but lets other connections insert rows that
// reference the call (a device call's attempts, written outside the call's transaction while it waits). tool_enabled applies the
// agent rule (gem_agent_may_call, 00009) and reads the timeout the agent's assignments may shorten
// (gem_agent_call_timeout, 00026), in the same statement, both only for calls made for an agent. (It is planned for
// each batch: a plan kept from when core_tool_calls was small would scan the whole table.)
//
// A call has its receipt when its status is no longer queued: the receipt's trigger sets it in the
// receipt's transaction. The locked row is the one to ask: when the statement waited for another
// transaction's lock on it, PostgreSQL reads the row again as that transaction committed it, but a subquery
// (such as a look for the receipt) would still see the table as it was before the wait.
//
// The caller's grants come with the call (core_callers, 00022_callers.sql), and so do those of the caller who
// approved the stored plan it belongs to (approved_by, 00040_caller_scope.sql): a call runs with no more than
// both hold. (The statement stays under 1,024 bytes, track_activity_query_size's default, so that
// pg_stat_activity shows it whole.)
//
// An input larger than $2 bytes (the largest any tool accepts) is not read: its size is, and the call is
// refused input_too_large. Its text is made once (OFFSET 0 keeps the subquery from being inlined twice).
const loadSQL = `SELECT c.id, c.tool_name, CASE WHEN i.bytes <= $2 THEN i.input END, i.bytes, coalesce(c.idempotency_key, ''),
		coalesce(c.agent, ''), coalesce(c.user_id, ''), c.run_id, c.outside_token, c.outside_attempt,
		c.status <> 'queued',
		c.agent IS NULL OR gem_agent_may_call(c.agent, coalesce(c.user_id, ''), c.tool_name),
		CASE WHEN c.agent IS NOT NULL THEN gem_agent_call_timeout(c.agent, coalesce(c.user_id, ''), c.tool_name) END,
		coalesce(c.requested_by, ''), g.name IS NOT NULL, g.revoked_at IS NOT NULL, coalesce(g.permissions, '{}'), g.agents,
		c.approved_by, ap.name IS NOT NULL, ap.revoked_at IS NOT NULL, ap.permissions, ap.agents,
		c.limited_since, c.rate_reserved_at, c.created_at
	FROM core_tool_calls c
	CROSS JOIN LATERAL (SELECT t.input, octet_length(t.input) AS bytes FROM (SELECT c.input::text AS input OFFSET 0) t) i
	LEFT JOIN core_callers g ON g.name = c.requested_by
	LEFT JOIN core_callers ap ON ap.name = c.approved_by
	WHERE c.id = ANY($1::uuid[]) ORDER BY c.id FOR NO KEY UPDATE OF c`

// callRow is a call as loadSQL reads it.
type callRow struct {
	toolName    string
	input       []byte // nil when inputBytes is over the executor's cutoff
	inputBytes  int64
	explicitKey string
	agent       string
	userID      string
	toolEnabled bool
	// agentTimeoutMS is the shortest timeout the agent's assignments give the tool (nil: none).
	agentTimeoutMS *int32
	runID          *uuid.UUID
	outsideToken   *uuid.UUID
	outsideAttempt *int
	hasReceipt     bool

	// caller is requested_by, with what core_callers says of it; approver is approved_by ("" when the call
	// belongs to no approved plan).
	caller   string
	callerOf grantee
	approver string
	approved grantee

	// limitedSince is when the call first found its tool's concurrency or rate limit full (nil: never).
	limitedSince *time.Time
	// rateReservedAt is the start the call's rate limit reserved for it (nil: none).
	rateReservedAt *time.Time
	// createdAt is when the call was inserted (the database's clock).
	createdAt time.Time
}

// scanCall reads one row of loadSQL.
func scanCall(rows pgx.Rows) (uuid.UUID, callRow, error) {
	var (
		id       uuid.UUID
		c        callRow
		input    *string
		approver *string
	)
	err := rows.Scan(&id, &c.toolName, &input, &c.inputBytes, &c.explicitKey, &c.agent, &c.userID, &c.runID, &c.outsideToken,
		&c.outsideAttempt, &c.hasReceipt, &c.toolEnabled, &c.agentTimeoutMS,
		&c.caller, &c.callerOf.known, &c.callerOf.revoked, &c.callerOf.grants, &c.callerOf.agents,
		&approver, &c.approved.known, &c.approved.revoked, &c.approved.grants, &c.approved.agents,
		&c.limitedSince, &c.rateReservedAt, &c.createdAt)
	if err != nil {
		return id, c, fmt.Errorf("error loading call: %w", err)
	}
	if input != nil {
		c.input = []byte(*input)
	}
	if approver != nil {
		c.approver = *approver
	}
	return id, c, nil
}

// precheck returns the receipt of a call that must not run: unknown tool, invalid input, no handler, or an
// earlier attempt whose outside effects are unknown. It returns nil for a call that may run.
func (a *attempt) precheck() *receiptDraft {
	dc, h := deviceOf(a.p.step)
	if dc != nil && dc.Early != nil {
		return failedWith(dc.Early)
	}
	tool, ok := a.e.reg.Tool(a.toolName)
	if dc != nil {
		tool, ok = dc.Tool, true
	}
	if !ok {
		details := map[string]any{"tool": a.toolName}
		if similar := a.e.reg.SimilarNames(a.toolName); len(similar) > 0 {
			details["did_you_mean"] = similar
		}
		return failed(registry.CodeUnknownTool, fmt.Sprintf("no tool named %q in the registry", a.toolName), details)
	}
	a.tool = tool
	if d := a.openSecrets(); d != nil {
		return d
	}

	if denied := a.permitted(); denied != nil {
		return denied
	}
	if limit := tool.MaxInput(a.e.cfg.MaxInputBytes); a.inputBytes > limit || a.input == nil {
		return failed(registry.CodeInputTooLarge, fmt.Sprintf("the input is %d bytes, more than the %d bytes %s accepts; it was not read",
			a.inputBytes, limit, tool.Name), map[string]any{"bytes": a.inputBytes, "max_bytes": limit})
	}
	if !a.toolEnabled {
		return failed(registry.CodeToolNotEnabled, fmt.Sprintf("agent %q has no enabled skill with tool %s for user %q", a.agent, tool.Name, a.userID),
			map[string]any{"agent": a.agent, "user_id": a.userID, "tool": tool.Name})
	}

	input, invalid := validInput(tool, a.input)
	if invalid != nil && invalid.err != nil && tool.HasSecrets() {
		invalid = redactedInvalid(tool, invalid)
	}
	if invalid != nil {
		return invalid
	}
	a.value = input
	var err error
	a.key, err = tool.IdempotencyKeyFor(input, a.explicitKey)
	if err != nil {
		return failed(registry.CodeInvalidCall, "no idempotency key: "+err.Error(), map[string]any{"key_field": tool.Idempotency.KeyField})
	}

	if dc != nil {
		// The device's answer was awaited between the call's two transactions (see runDevice): the
		// "handler" gives it.
		a.handler = gemcall.Handler{Run: answered(a.args.CallID, h), Isolated: true}
		return nil
	}
	handler, ok := a.e.handlers[tool.Name]
	if !ok {
		return failed(registry.CodeNotConfigured, fmt.Sprintf("tool %s has no handler in this executor", tool.Name), registry.NotConfiguredDetails{
			Reason:      fmt.Sprintf("tool %s is in the registry but this executor has no handler for it", tool.Name),
			RequiredEnv: []string{},
			NextSteps: []string{
				"Implement the handler and register it in the executor (docs/adding-a-tool.md).",
				"Run `executor registry check` to list the tools without handlers.",
			},
		})
	}
	a.handler = handler
	if handler.Key != nil && a.explicitKey == "" && a.key != "" {
		if a.key, err = handler.Key(a.key); err != nil {
			if he, ok := asError(err); ok {
				return failed(he.Code, he.Message, he.Details)
			}
			return failed(registry.CodeValidation, err.Error(), map[string]any{"key_field": tool.Idempotency.KeyField})
		}
	}

	if a.outsideToken != nil && *a.outsideToken != a.p.outsideToken && tool.RunsAtMostOnce() {
		started := 0
		if a.outsideAttempt != nil {
			started = *a.outsideAttempt
		}
		return failed(registry.CodeOutcomeUnknown, fmt.Sprintf(
			"an earlier run (attempt %d) started this call, which has effects outside the database (%v), and never finished; it is not run again so it cannot happen twice",
			started, tool.Permissions), map[string]any{"started_attempt": started, "permissions": tool.Permissions})
	}
	return nil
}

// openSecrets gives the handler the clear values of the call's secret inputs. A clear secret found in
// storage (a call inserted with plain SQL) is sealed there, or removed without a key, in the call's
// transaction, whatever becomes of the call.
func (a *attempt) openSecrets() *receiptDraft {
	tool := a.tool
	if !tool.HasSecrets() || a.input == nil {
		return nil
	}
	clear, hadClear, err := a.e.secrets.Open(tool, a.input)
	if err != nil {
		return failed(registry.CodeNotConfigured, err.Error(), registry.NotConfiguredDetails{
			Reason: err.Error(), RequiredEnv: []string{"GEM_SECRET_KEY"},
			NextSteps: []string{"Give every executor and the brain the GEM_SECRET_KEY that sealed it (and GEM_SECRET_KEY_PREVIOUS for keys being rotated out)."},
		})
	}
	if hadClear {
		if a.e.secrets == nil {
			a.stored = registry.Redact(tool, a.input)
			return failed(registry.CodeNotConfigured, registry.ErrNoSecretKey.Error()+"; its secret input was removed from storage and it was not run",
				registry.NoSecretKeyDetails())
		}
		if a.stored, err = a.e.secrets.Seal(tool, a.input); err != nil {
			return failed(registry.CodeInvalidCall, "its secret input could not be sealed: "+err.Error(), nil)
		}
	}
	a.input = clear
	return nil
}

// redactedInvalid is a validation receipt whose messages quote no secret value.
func redactedInvalid(tool *registry.Tool, d *receiptDraft) *receiptDraft {
	var details struct {
		Violations []registry.Violation `json:"violations"`
	}
	if json.Unmarshal(d.err.Details, &details) != nil || len(details.Violations) == 0 {
		return failed(registry.CodeValidation, tool.Name+" input does not match its schema", nil)
	}
	registry.RedactViolations(tool, details.Violations)
	ve := &registry.ValidationError{Tool: tool.Name, Schema: "input", Violations: details.Violations}
	return failed(registry.CodeValidation, ve.Error(), map[string]any{"violations": details.Violations})
}

// grantee is what core_callers says of a caller: whether it is known and revoked, its grants and (when not
// nil) the only agents it may act as.
type grantee struct {
	known, revoked bool
	grants         registry.Grants
	agents         []string
}

// permitted returns the permission_denied receipt of a call its caller may not make, or that the caller who
// approved its plan may not: an unknown or revoked caller, an agent the caller may not act as (a caller
// limited to some agents acts as none of them when the call names no agent), or a permission of the tool's
// the caller lacks.
func (a *attempt) permitted() *receiptDraft {
	if denied := a.permittedTo(a.caller, "caller", a.callerOf); denied != nil || a.approver == "" {
		return denied
	}
	return a.permittedTo(a.approver, "approver", a.approved)
}

func (a *attempt) permittedTo(name, role string, g grantee) *receiptDraft {
	details := map[string]any{role: name}
	if role != "caller" {
		details["caller"] = a.caller
	}
	switch {
	case !g.known:
		return failed(registry.CodePermissionDenied, fmt.Sprintf("%s %q is not known (docs/governance.md says how to make one)", role, name), details)
	case g.revoked:
		return failed(registry.CodePermissionDenied, fmt.Sprintf("%s %q is revoked", role, name), details)
	case g.agents != nil && a.agent == "":
		details["agents"] = g.agents
		return failed(registry.CodePermissionDenied, fmt.Sprintf("%s %q may act only as agents %v, and the call names none", role, name, g.agents), details)
	case g.agents != nil && !slices.Contains(g.agents, a.agent):
		details["agent"], details["agents"] = a.agent, g.agents
		return failed(registry.CodePermissionDenied, fmt.Sprintf("%s %q may not act as agent %q", role, name, a.agent), details)
	}
	if missing := g.grants.Missing(a.tool.Permissions); missing != nil {
		details["tool"], details["missing"], details["permissions"] = a.tool.Name, missing, a.tool.Permissions
		return failed(registry.CodePermissionDenied, fmt.Sprintf("%s %q lacks permission %s, which %s needs",
			role, name, strings.Join(missing, ", "), a.tool.Name), details)
	}
	return nil
}

// execute claims the idempotency key and runs the handler. It returns the receipt, or a transient error.
// inBatch finds the receipt a call of the same transaction will have, for a key it holds.
func (a *attempt) execute(ctx context.Context, conn pipe.Conn, inBatch func(uuid.UUID) *receiptDraft) (*receiptDraft, error) {
	if _, h := deviceOf(a.p.step); a.key != "" && (h == nil || h.key == "") { // a hand-off claimed it already
		d, err := a.claimKey(ctx, conn, inBatch)
		if err != nil || d != nil {
			return d, err
		}
	}

	if a.tool.HasCallLimits() {
		turn, err := a.takeLimits(ctx, conn, false)
		switch {
		case err != nil:
			return nil, err
		case turn.denied != nil:
			return turn.denied, nil
		case turn.snooze > 0:
			return nil, &snoozeError{turn}
		}
	}

	result, c, err := a.callHandler(conn)
	if err != nil {
		return a.classify(err)
	}
	if limit := a.tool.MaxResult(a.e.cfg.MaxResultBytes); int64(len(result)) > limit {
		return failed(registry.CodeResultTooLarge, fmt.Sprintf("the handler's result is %d bytes, more than the %d bytes %s may return, so its effects were rolled back",
			len(result), limit, a.tool.Name), map[string]any{"bytes": len(result), "max_bytes": limit}), nil
	}
	if verr := a.tool.ValidateOutput(result); verr != nil {
		var ve *registry.ValidationError
		details := map[string]any{"result": json.RawMessage(result)}
		if errors.As(verr, &ve) {
			details["violations"] = ve.Violations
		}
		return failed(registry.CodeOutputContract, "the handler's result does not match the output schema, so its effects were rolled back: "+verr.Error(), details), nil
	}
	files, err := stateOf(c).WriteStaged()
	if err != nil {
		return a.classify(err)
	}
	return &receiptDraft{status: registry.StatusSucceeded, result: result, outside: stateOf(c).Outside, files: files}, nil
}

// snoozeError is what execute returns for a call whose limit is full: nothing of it is kept, and its job
// is snoozed.
type snoozeError struct{ turn limitTurn }

func (s *snoozeError) Error() string {
	return fmt.Sprintf("limit %s is full; waiting %s", s.turn.reason, s.turn.snooze)
}

// claimKey takes the call's idempotency key, or finds the succeeded call that holds it. A concurrent call
// holding the key uncommitted makes the insert wait until that call commits (hit) or rolls back (claimed).
// A holder in the same transaction has no receipt yet: inBatch gives the one it will have.
func (a *attempt) claimKey(ctx context.Context, conn pipe.Conn, inBatch func(uuid.UUID) *receiptDraft) (*receiptDraft, error) {
	hash := sha256.Sum256([]byte(a.key))
	var claimed bool
	err := conn.QueryRow(ctx, `WITH ins AS (
			INSERT INTO core_idempotency_keys (tool_name, key_hash, key, call_id) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM ins)`, a.tool.Name, hash[:], a.key, [16]byte(a.args.CallID)).Scan(&claimed)
	if err != nil {
		return nil, fmt.Errorf("error claiming idempotency key: %w", err)
	}
	if claimed {
		return nil, nil
	}
	// A new statement sees the holder even if it committed while the insert waited.
	var (
		holder     uuid.UUID
		hasReceipt bool
		result     []byte
	)
	err = conn.QueryRow(ctx, `SELECT k.call_id, r.call_id IS NOT NULL, r.result FROM core_idempotency_keys k
		LEFT JOIN core_tool_receipts r ON r.call_id = k.call_id
		WHERE k.tool_name = $1 AND k.key_hash = $2`, a.tool.Name, hash[:]).Scan(&holder, &hasReceipt, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		// The holder vanished between the two statements (deleted by hand): retry.
		return nil, fmt.Errorf("idempotency key holder disappeared")
	}
	if err != nil {
		return nil, fmt.Errorf("error reading idempotency key holder: %w", err)
	}
	if holder == a.args.CallID {
		// This call's own hand-off to a device claimed it (an earlier run of the call, cut short).
		return nil, nil
	}
	if !hasReceipt {
		d := inBatch(holder)
		if d == nil {
			return nil, &keyBusyError{holder: holder}
		}
		result = d.result
	}
	a.log.Info().Str("idempotency_of", holder.String()).Msg("idempotency hit; handler not run")
	return &receiptDraft{status: registry.StatusSucceeded, result: result, hit: true, hitOf: &holder}, nil
}

// shownKey is the key a receipt and a handler see: the client's, else the tool's own.
func (a *attempt) shownKey() string {
	if a.explicitKey != "" {
		return a.explicitKey
	}
	return a.key
}

// timeout is the tool's timeout, or the shorter one the call's agent's assignments give it.
func (a *attempt) timeout() time.Duration {
	t := a.tool.Timeout()
	if a.agentTimeoutMS != nil {
		t = min(t, time.Duration(*a.agentTimeoutMS)*time.Millisecond)
	}
	return t
}

// callHandler runs the handler under the call's timeout. A handler that ignores its cancelled context is
// abandoned after AbandonGrace; its transaction is taken back first.
func (a *attempt) callHandler(conn pipe.Conn) (_ json.RawMessage, _ *gemcall.Call, err error) {
	ctx, span := a.child(SpanHandler)
	start := time.Now()
	defer func() {
		a.e.metrics.ObserveHandler(a.tool.Name, time.Since(start))
		telemetry.End(span, err)
	}()
	hctx, cancel := context.WithTimeout(a.log.WithContext(ctx), a.timeout())
	defer cancel()
	g := pipe.NewGuarded(conn)
	c := &gemcall.Call{
		ID: a.args.CallID, Tool: a.tool, Registry: a.e.reg, Input: a.input, Attempt: a.job.Attempt, IdempotencyKey: a.shownKey(),
		Agent: a.agent, UserID: a.userID, RunID: a.runID, DB: g, Log: a.log,
	}
	stateOf(c).Invoke = a.invoke
	type ret struct {
		v   any
		err error
	}
	done := make(chan ret, 1)
	a.e.runners.Go(func() {
		defer func() {
			if p := recover(); p != nil {
				done <- ret{err: panicked(p)}
			}
		}()
		v, err := a.handler.Run(hctx, c)
		done <- ret{v: v, err: err}
	})

	var r ret
	select {
	case r = <-done:
		g.Close()
	case <-hctx.Done():
		select {
		case r = <-done:
			g.Close()
		case <-time.After(a.e.cfg.AbandonGrace):
			if !g.Abandon(a.e.cfg.AbandonGrace) {
				return nil, nil, pipe.TxBrokenError{Err: fmt.Errorf("the handler overran its timeout and kept the connection busy")}
			}
			a.log.Error().Dur("timeout", a.timeout()).Msg("handler ignored its cancelled context and was abandoned")
			return nil, nil, &gemcall.Error{Code: registry.CodeTimeout, Message: fmt.Sprintf(
				"the handler overran its %s timeout and did not stop; it was abandoned and its effects rolled back", a.timeout())}
		}
		if r.err == nil && hctx.Err() == context.DeadlineExceeded {
			r.err = hctx.Err()
		}
	}
	if st := conn.Conn().PgConn().TxStatus(); st != 'T' && st != 'E' {
		return nil, nil, pipe.TxBrokenError{Err: fmt.Errorf("the handler ended the call's transaction (COMMIT or ROLLBACK); handlers must not")}
	}
	if r.err != nil {
		if hctx.Err() == context.DeadlineExceeded && a.ctx.Err() == nil {
			return nil, nil, &gemcall.Error{Code: registry.CodeTimeout, Message: fmt.Sprintf(
				"the handler overran its %s timeout; it was cancelled and its effects rolled back", a.timeout()),
				Details: map[string]any{"error": r.err.Error()}}
		}
		return nil, nil, r.err
	}
	result, err := json.Marshal(r.v)
	if err != nil {
		return nil, nil, &gemcall.Error{Code: registry.CodeOutputContract, Message: "the handler's result cannot be encoded as JSON: " + err.Error()}
	}
	return result, c, nil
}

// classify turns a handler error into a receipt, or returns it as transient. A database error with a
// SQLSTATE of sqlstateCodes gets its code there; any other error is handler_error.
func (a *attempt) classify(err error) (*receiptDraft, error) {
	var tb pipe.TxBrokenError
	if errors.As(err, &tb) {
		return nil, err
	}
	if he, ok := asError(err); ok {
		if errRetryable(he) {
			return nil, err
		}
		return failed(he.Code, he.Message, he.Details), nil
	}
	if a.ctx.Err() != nil {
		// The executor is stopping: another executor retries the call.
		return nil, fmt.Errorf("call interrupted by shutdown: %w", err)
	}
	if isTransient(err) {
		return nil, err
	}
	if se, ok := sqlstateError(err); ok {
		return failed(se.Code, se.Message, se.Details), nil
	}
	details := map[string]any{"error": err.Error()}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		details["sqlstate"] = pgErr.Code
		if pgErr.ConstraintName != "" {
			details["constraint"] = pgErr.ConstraintName
		}
	}
	return failed(registry.CodeHandlerError, "the handler failed: "+err.Error(), details), nil
}

// isTransient reports whether err is worth retrying: the database is away (gemsql.DatabaseAway), or
// PostgreSQL aborted the statement for a reason that passes (serialization failure, deadlock, lock timeout,
// a statement cancelled), or the transaction or connection broke.
func isTransient(err error) bool {
	if gemsql.DatabaseAway(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "40001", "40P01", "55P03", "57014":
			return true
		}
		return false
	}
	var tb pipe.TxBrokenError
	if errors.As(err, &tb) || pgconn.SafeToRetry(err) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) || errors.Is(err, pgx.ErrTxClosed) || errors.Is(err, context.Canceled)
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}

// validInput decodes and validates a call's input against its tool: the decoded input, or the receipt of
// a call whose input is refused. A detached run (a device's) checks its input the same way.
func validInput(tool *registry.Tool, raw []byte) (any, *receiptDraft) {
	input, err := registry.DecodeJSON(raw)
	if err == nil {
		err = tool.ValidateInputValue(input)
	}
	if err != nil {
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			return nil, failed(registry.CodeValidation, ve.Error(), map[string]any{"violations": ve.Violations})
		}
		return nil, failed(registry.CodeValidation, err.Error(), nil)
	}
	return input, nil
}

// panicked is the error of a handler that panicked with p (called from the deferred recover).
func panicked(p any) *gemcall.Error {
	return &gemcall.Error{Code: registry.CodeHandlerError, Message: fmt.Sprintf("the handler panicked: %v", p),
		Details: map[string]any{"stack": string(debug.Stack())}}
}

// invoke makes a call from inside this one (Call.Invoke) and waits for its receipt.
func (a *attempt) invoke(ctx context.Context, tool string, input json.RawMessage) (json.RawMessage, string, error) {
	// The executor listens for receipts from its first nested call on (most executors never make one).
	if err := a.e.waiter.Start(ctx); err != nil {
		return nil, "", gemcall.Retryable(fmt.Errorf("error listening for the receipt of a call of %s: %w", tool, err))
	}
	id := uuid.Must(uuid.NewV7())
	sub := a.e.waiter.Subscribe([]uuid.UUID{id}) // before the call exists, so the wait need not read first
	defer sub.Close()
	if t, ok := a.e.reg.Tool(tool); ok && t.HasSecrets() {
		sealed, err := a.e.secrets.Seal(t, input)
		if err != nil {
			return nil, "", fmt.Errorf("error making a call of %s: %w", tool, err)
		}
		input = sealed
	}
	_, err := gemsql.CallInsert(ctx, a.e.pool, gemsql.CallInsertParams{ID: id, ToolName: tool, Input: input, RunID: a.runID,
		Agent: a.agent, UserID: a.userID, RequestedBy: a.caller, ApprovedBy: a.approver, ParentID: &a.args.CallID})
	if err != nil {
		return nil, "", fmt.Errorf("error making a call of %s: %w", tool, err)
	}
	res, err := sub.Wait(ctx)
	r, ok := res.Receipts[id]
	if !ok {
		if err == nil {
			err = errors.New("no receipt")
		}
		return nil, id.String(), fmt.Errorf("the call of %s (%s) has no receipt yet: %w", tool, id, err)
	}
	if r.Status != registry.StatusSucceeded {
		if r.Error == nil {
			return nil, id.String(), &registry.CallError{Code: registry.CodeHandlerError, Message: "the call ended " + string(r.Status)}
		}
		return nil, id.String(), r.Error
	}
	return r.Result, id.String(), nil
}
