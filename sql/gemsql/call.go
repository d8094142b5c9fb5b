package gemsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Call is a call as the core_calls view shows it: its core_tool_calls row, with the live status (running,
// attempt, worker) of its River job until its receipt gives it a final one.
type Call struct {
	ID             uuid.UUID           `json:"id"`
	ToolName       string              `json:"tool"`
	Input          json.RawMessage     `json:"input"`
	Status         registry.CallStatus `json:"status"`
	IdempotencyKey string              `json:"idempotency_key,omitempty"`
	Attempt        int                 `json:"attempt"`
	MaxAttempts    int                 `json:"max_attempts"`
	Worker         string              `json:"worker,omitempty"`
	JobID          int64               `json:"job_id"`
	RunID          *uuid.UUID          `json:"run_id,omitempty"`
	Agent          string              `json:"agent,omitempty"`
	UserID         string              `json:"user_id,omitempty"`
	RequestedBy    string              `json:"requested_by,omitempty"`
	// ApprovedBy is the caller who approved the stored plan the call belongs to (its author or another): the
	// call runs with no more than it and the author both hold (docs/governance.md#stored-plans).
	ApprovedBy string `json:"approved_by,omitempty"`
	// ParentID is the call this one was made from (a script tool's gem.x.y(...)), if any.
	ParentID *uuid.UUID `json:"parent_id,omitempty"`
	// IdempotencyOf is set on a repeated request (the same caller, tool and idempotency_key within the key's
	// window): the call it repeats. It never runs; its receipt repeats that call's.
	IdempotencyOf *uuid.UUID `json:"idempotency_of,omitempty"`
	// Device is the device the call names; RanOnDevice the device that ran it (docs/devices.md).
	Device       string     `json:"device,omitempty"`
	RanOnDevice  string     `json:"ran_on_device,omitempty"`
	DeviceWaitMS *int       `json:"device_wait_ms,omitempty"`
	ErrorCode    string     `json:"error_code,omitempty"`
	Error        string     `json:"error,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
}

// CallInsertParams are the parameters of one call.
type CallInsertParams struct {
	// ID is the call's id. Defaults to a new time-ordered UUID (v7).
	ID uuid.UUID
	// ToolName is the registry tool to run. Required.
	ToolName string
	// Input is the tool's input, a JSON object. Defaults to {}.
	Input json.RawMessage
	// IdempotencyKey is the client's key for this request, for a tool of any mode: a second call with the same
	// caller, tool and key within the key's window repeats the first's receipt and never runs; one with another
	// input is refused (IdempotencyConflictError). Defaults to none.
	IdempotencyKey string
	// MaxAttempts bounds retries of transient failures. Defaults to the column default (5).
	MaxAttempts int
	// RunID is the brain run that made the call, if any.
	RunID *uuid.UUID
	// Agent is the agent the call is made for, if any; the executor then checks that the agent's skills
	// enable the tool for UserID (gem_agent_tools).
	Agent string
	// UserID is the user an agent call is made for.
	UserID string
	// RequestedBy is the caller (core_callers): a bearer token's name, or "sql:<role>". Defaults to the
	// inserting database role's caller; a role that may not act for GEM always gets its own
	// (docs/governance.md). The executor refuses a call whose caller lacks a permission its tool declares.
	RequestedBy string
	// ApprovedBy is the caller who approved the stored plan the call belongs to, if any: the executor refuses
	// the call unless it, too, holds what the tool needs.
	ApprovedBy string
	// ParentID is the call this one is made from, if any; it runs for the same caller.
	ParentID *uuid.UUID
	// Device is the device the call must run on (docs/devices.md); "" for none.
	Device string
	// DeviceWaitMS bounds how long the call waits for its device; 0 means the executor's GEM_DEVICE_WAIT.
	DeviceWaitMS int
	// TraceParent and TraceState are the W3C trace context the executor continues the call's trace from
	// (docs/observability.md#traces). Defaults to that of the insert's span (ctx's): none when tracing is off.
	TraceParent string
	TraceState  string
}

// Inserted is what an insert made of a call.
type Inserted struct {
	ID uuid.UUID
	// Awaiting: the call awaits a person's decision (docs/governance.md#approvals): it has no receipt to
	// wait for until someone decides.
	Awaiting bool
	// IdempotencyOf is the call this one repeats (the same caller, tool and key within the key's window): it
	// never runs, and its receipt, written as soon as that call has one, repeats it.
	IdempotencyOf *uuid.UUID
}

// InsertedIDs are the ids of the calls of made, in order.
func InsertedIDs(made []Inserted) []uuid.UUID {
	ids := make([]uuid.UUID, len(made))
	for i, m := range made {
		ids[i] = m.ID
	}
	return ids
}

// InsertedAwaiting is the set of the calls of made that await approval.
func InsertedAwaiting(made []Inserted) map[uuid.UUID]bool {
	set := map[uuid.UUID]bool{}
	for _, m := range made {
		if m.Awaiting {
			set[m.ID] = true
		}
	}
	return set
}

// CallInsert makes calls with one statement: it inserts their core_tool_calls rows, whose trigger creates
// the River jobs in the same transaction (pass a transaction to enqueue together with your own state), and
// says what became of each, in order: made, or a repeat of an earlier request (IdempotencyOf); awaiting
// approval or not. A key its caller used with another input is refused, nothing made (EKEYREUSED, its
// cause an *IdempotencyConflictError).
func CallInsert(ctx context.Context, db DBTX, params ...CallInsertParams) (_ []Inserted, err error) {
	if len(params) == 0 {
		return nil, nil
	}
	ctx, end := StartEnqueue(ctx, params)
	defer func() { end(err) }()
	ids, args, err := callInsertArgs(ctx, params)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, callInsertSQL, args...)
	if err != nil {
		return nil, insertError(err)
	}
	made, err := callInsertRead(rows, ids)
	if err != nil {
		return nil, insertError(err)
	}
	return made, nil
}

// CallInsertQueue queues CallInsert's statement on b, so the calls travel in one round trip with other
// statements (a batch without BEGIN runs as one implicit transaction), and returns their ids: what became
// of them is in out once b is sent, and a refusal is b's error. The calls carry ctx's trace context: start
// the span that sends the batch first.
func CallInsertQueue(ctx context.Context, b *pgx.Batch, out *[]Inserted, params ...CallInsertParams) ([]uuid.UUID, error) {
	ids, args, err := callInsertArgs(ctx, params)
	if err != nil {
		return nil, err
	}
	b.Queue(callInsertSQL, args...).Query(func(rows pgx.Rows) error {
		made, err := callInsertRead(rows, ids)
		if err != nil {
			return insertError(err)
		}
		*out = made
		return nil
	})
	return ids, nil
}

// CallsInserted reads back what CallInsert answered of calls made before (a turn taken up again after its
// brain stopped, a write whose answer was lost with its connection), in the order of ids, as the calls are
// now: a call decided since no longer awaits approval. With CallInsert's answer, it is how GEM learns
// whether a call awaits approval: one test of it (insertedColumns), the call's status.
func CallsInserted(ctx context.Context, db DBTX, ids []uuid.UUID) ([]Inserted, error) {
	rows, err := db.Query(ctx, callsInsertedSQL, ids)
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading calls: %w", err))
	}
	made, err := callInsertRead(rows, ids)
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading calls: %w", err))
	}
	return made, nil
}

// CallsInsertedQueue queues CallsInserted's read on b: what became of the calls is in out once b is sent.
func CallsInsertedQueue(b *pgx.Batch, ids []uuid.UUID, out *[]Inserted) {
	b.Queue(callsInsertedSQL, ids).Query(func(rows pgx.Rows) (err error) {
		*out, err = callInsertRead(rows, ids)
		return err
	})
}

// insertedColumns are what CallInsert answers of each call and CallsInserted reads back (Inserted's
// fields): the one place "awaits approval" is decided, from the call's status, which its insert sets
// (gem_approval_needed) and a decision or the approval's expiry changes.
const insertedColumns = `id, status = 'awaiting_approval', idempotency_of`

const callsInsertedSQL = `SELECT ` + insertedColumns + ` FROM core_tool_calls WHERE id = ANY($1)`

// callInsertRead reads what callInsertSQL made of the calls ids (or callsInsertedSQL found), in their order.
func callInsertRead(rows pgx.Rows, ids []uuid.UUID) ([]Inserted, error) {
	made := make(map[uuid.UUID]Inserted, len(ids))
	var in Inserted
	_, err := pgx.ForEachRow(rows, []any{&in.ID, &in.Awaiting, &in.IdempotencyOf}, func() error {
		made[in.ID] = in
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Inserted, len(ids))
	for i, id := range ids {
		out[i] = made[id]
		out[i].ID = id // a call CallsInserted does not find (gone with its month's history) awaits nothing
	}
	return out, nil
}

// callInsertSQL inserts calls from one JSON array (a parameter whose contents the planner cannot see, so
// the statement is planned once per connection rather than for each number of calls), and returns what
// became of each.
const callInsertSQL = `
	INSERT INTO core_tool_calls (id, tool_name, input, idempotency_key, max_attempts, run_id, agent, user_id, requested_by,
		approved_by, device, device_wait_ms, parent_id, traceparent, tracestate)
	SELECT id, tool_name, input, idempotency_key, coalesce(max_attempts, 5), run_id, agent, user_id, requested_by,
		approved_by, device, device_wait_ms, parent_id, traceparent, tracestate
	FROM jsonb_to_recordset($1::jsonb) AS t(id uuid, tool_name text, input jsonb, idempotency_key text, max_attempts integer,
		run_id uuid, agent text, user_id text, requested_by text, approved_by text, device text, device_wait_ms integer,
		parent_id uuid, traceparent text, tracestate text)
	RETURNING ` + insertedColumns

// callInsertRow is one element of callInsertSQL's array.
type callInsertRow struct {
	ID             uuid.UUID       `json:"id"`
	ToolName       string          `json:"tool_name"`
	Input          json.RawMessage `json:"input"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	RunID          *uuid.UUID      `json:"run_id,omitempty"`
	Agent          string          `json:"agent,omitempty"`
	UserID         string          `json:"user_id,omitempty"`
	RequestedBy    string          `json:"requested_by,omitempty"`
	ApprovedBy     string          `json:"approved_by,omitempty"`
	Device         string          `json:"device,omitempty"`
	DeviceWaitMS   int             `json:"device_wait_ms,omitempty"`
	ParentID       *uuid.UUID      `json:"parent_id,omitempty"`
	TraceParent    string          `json:"traceparent,omitempty"`
	TraceState     string          `json:"tracestate,omitempty"`
}

var emptyInput = json.RawMessage(`{}`)

func callInsertArgs(ctx context.Context, params []CallInsertParams) ([]uuid.UUID, []any, error) {
	traceparent, tracestate := telemetry.TraceContext(ctx)
	ids := make([]uuid.UUID, len(params))
	rows := make([]callInsertRow, len(params))
	for i, p := range params {
		if p.ToolName == "" {
			return nil, nil, fmt.Errorf("call %d: tool name is empty", i)
		}
		ids[i] = p.ID
		if ids[i] == uuid.Nil {
			ids[i] = uuid.Must(uuid.NewV7())
		}
		input := p.Input
		if len(input) == 0 {
			input = emptyInput
		}
		if !json.Valid(input) {
			return nil, nil, fmt.Errorf("call %d: input is not valid JSON", i)
		}
		rows[i] = callInsertRow{ID: ids[i], ToolName: p.ToolName, Input: input, IdempotencyKey: p.IdempotencyKey,
			MaxAttempts: max(p.MaxAttempts, 0), RunID: p.RunID, Agent: p.Agent, UserID: p.UserID, RequestedBy: p.RequestedBy,
			ApprovedBy: p.ApprovedBy, Device: p.Device, DeviceWaitMS: p.DeviceWaitMS, ParentID: p.ParentID, TraceParent: p.TraceParent, TraceState: p.TraceState}
		if rows[i].TraceParent == "" {
			rows[i].TraceParent, rows[i].TraceState = traceparent, tracestate
		}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, nil, fmt.Errorf("error encoding calls: %w", err)
	}
	return ids, []any{string(doc)}, nil
}

const callColumns = `id, tool_name, input, status, coalesce(idempotency_key, ''), attempt, max_attempts,
	coalesce(worker, ''), coalesce(job_id, 0), run_id, coalesce(agent, ''), coalesce(user_id, ''), coalesce(requested_by, ''),
	coalesce(error_code, ''), coalesce(error, ''), created_at, started_at, finished_at,
	coalesce(device, ''), coalesce(ran_on_device, ''), device_wait_ms, parent_id, idempotency_of, coalesce(approved_by, '')`

func scanCall(row pgx.Row) (*Call, error) {
	var c Call
	err := row.Scan(&c.ID, &c.ToolName, &c.Input, &c.Status, &c.IdempotencyKey, &c.Attempt, &c.MaxAttempts,
		&c.Worker, &c.JobID, &c.RunID, &c.Agent, &c.UserID, &c.RequestedBy, &c.ErrorCode, &c.Error, &c.CreatedAt,
		&c.StartedAt, &c.FinishedAt, &c.Device, &c.RanOnDevice, &c.DeviceWaitMS, &c.ParentID, &c.IdempotencyOf, &c.ApprovedBy)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// CallGet returns one call, or ErrNotFound.
func CallGet(ctx context.Context, db DBTX, id uuid.UUID) (*Call, error) {
	c, err := scanCall(db.QueryRow(ctx, `SELECT `+callColumns+` FROM core_calls WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error getting call: %w", err))
	}
	return c, nil
}

// CallListParams filter CallList. Zero values do not filter.
type CallListParams struct {
	ToolName string
	Status   registry.CallStatus
	RunID    *uuid.UUID
	// RequestedBy, Agent and Device keep the calls of one caller, one agent, or named or run on one device.
	RequestedBy string
	Agent       string
	Device      string
	// Viewer, when not empty, keeps only the calls that caller may read without the audit permission: those
	// it made (requested_by) or approved (approved_by).
	Viewer string
	// Since keeps calls created at or after it.
	Since time.Time
	// After continues a listing after the last row of the previous page.
	After *Cursor
	// Limit caps the rows returned. Defaults to 50; at most 1000.
	Limit int
	// MaxInputBytes replaces an input larger than this many bytes (as JSON text) with a Truncated marker and
	// cuts an error message to this many characters, in PostgreSQL, so a listing never carries a large
	// document. Defaults to 0: whole.
	MaxInputBytes int
}

// CallList returns calls, newest first.
func CallList(ctx context.Context, db DBTX, p CallListParams) ([]*Call, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	columns := callColumns
	if p.MaxInputBytes > 0 {
		columns = strings.Replace(callColumns, "tool_name, input,", "tool_name, "+truncatedJSON("input", p.MaxInputBytes)+",", 1)
		columns = strings.Replace(columns, "coalesce(error, '')", fmt.Sprintf("coalesce(left(error, %d), '')", p.MaxInputBytes), 1)
	}
	rows, err := db.Query(ctx, `SELECT `+columns+` FROM core_calls
		WHERE ($1 = '' OR tool_name = $1) AND ($2 = '' OR status = $2) AND ($3::uuid IS NULL OR run_id = $3)
		  AND ($4::timestamptz IS NULL OR created_at >= $4)
		  AND ($5::timestamptz IS NULL OR (created_at, id) < ($5, $6::uuid))
		  AND ($8 = '' OR requested_by = $8) AND ($9 = '' OR agent = $9) AND ($10 = '' OR device = $10 OR ran_on_device = $10)
		  AND ($11 = '' OR requested_by = $11 OR approved_by = $11)
		ORDER BY created_at DESC, id DESC LIMIT $7`,
		p.ToolName, string(p.Status), p.RunID, nullTime(p.Since), p.After.time(), p.After.id(), limit, p.RequestedBy, p.Agent, p.Device,
		p.Viewer)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing calls: %w", err))
	}
	defer rows.Close()
	var calls []*Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, Coded(fmt.Errorf("error reading call: %w", err))
		}
		calls = append(calls, c)
	}
	if err := rows.Err(); err != nil {
		return nil, Coded(fmt.Errorf("error listing calls: %w", err))
	}
	return calls, nil
}

// Truncated is the marker a listing puts in place of a JSON document larger than its bound: {"truncated":
// true, "bytes": N}, N the document's size as JSON text. The whole document is read by id.
type Truncated struct {
	Truncated bool `json:"truncated"`
	Bytes     int  `json:"bytes"`
}

// truncatedJSON is a select expression that replaces a jsonb column over max bytes with the Truncated
// marker. max is an int, never input, so building SQL from it is safe.
func truncatedJSON(column string, max int) string {
	return fmt.Sprintf(`CASE WHEN octet_length(%[1]s::text) > %[2]d THEN jsonb_build_object('truncated', true, 'bytes', octet_length(%[1]s::text)) ELSE %[1]s END`,
		column, max)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Cursor is a position in a listing ordered newest first: the last row's time and id.
type Cursor struct {
	Time time.Time
	ID   uuid.UUID
}

func (c *Cursor) time() *time.Time {
	if c == nil {
		return nil
	}
	return &c.Time
}

func (c *Cursor) id() uuid.UUID {
	if c == nil {
		return uuid.Nil
	}
	return c.ID
}

// CallAttempt is one failed attempt of a call's River job, as River recorded it.
type CallAttempt struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// CallAttempts returns the errors of a job's failed attempts, oldest first (none while its job is gone or
// never failed).
func CallAttempts(ctx context.Context, db DBTX, jobID int64) ([]CallAttempt, error) {
	var attempts []CallAttempt
	var raw []byte
	err := db.QueryRow(ctx, `SELECT coalesce(to_jsonb(errors), '[]') FROM river_job WHERE id = $1`, jobID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading attempts: %w", err))
	}
	if err := json.Unmarshal(raw, &attempts); err != nil {
		return nil, fmt.Errorf("error decoding attempts: %w", err)
	}
	return attempts, nil
}

// CallIdempotencyHits returns the ids of calls answered from this call's receipt (at most limit), newest
// first.
func CallIdempotencyHits(ctx context.Context, db DBTX, original uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, `SELECT call_id FROM core_tool_receipts WHERE idempotency_of = $1
		ORDER BY finished_at DESC LIMIT $2`, original, limit)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing idempotency hits: %w", err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing idempotency hits: %w", err))
	}
	return ids, nil
}

// IdempotencyConflictError is the refusal of a call whose caller used its idempotency key for an earlier call
// of the tool with another input, within the key's window (SQLSTATE GI001, 00038_request_keys.sql):
// nothing was made. CallID is the earlier call.
type IdempotencyConflictError struct {
	Message string
	CallID  uuid.UUID
	Tool    string
	Key     string
}

func (e *IdempotencyConflictError) Error() string { return e.Message }

// insertError is the error of a calls' insert: EKEYREUSED for GI001, its cause an *IdempotencyConflictError.
func insertError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "GI001" {
		ce := &IdempotencyConflictError{Message: pgErr.Message}
		var d struct {
			CallID uuid.UUID `json:"call_id"`
			Tool   string    `json:"tool"`
			Key    string    `json:"idempotency_key"`
		}
		if json.Unmarshal([]byte(pgErr.Detail), &d) == nil {
			ce.CallID, ce.Tool, ce.Key = d.CallID, d.Tool, d.Key
		}
		return &Error{Code: EKEYREUSED, Message: ce.Message + "; a retry sends the same input with the same key, a new request a new key",
			Details: map[string]any{"call_id": ce.CallID, "tool": ce.Tool, "idempotency_key": ce.Key}, Err: ce}
	}
	return Coded(fmt.Errorf("error inserting calls: %w", err))
}
