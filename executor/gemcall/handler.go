// Package gemcall is what a tool's handler sees of a call: the Handler it registers, the Call it runs, the
// database handle it writes through and the errors it ends a call with. Package executor re-exports all of
// it (executor.Call is gemcall.Call), so handlers keep writing executor.Call; it is a package of its own so
// the engine under executor/internal can build calls and read their errors, as River's rivertype is.
package gemcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/executor/internal/callstate"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
)

// Handler runs the calls of one tool.
type Handler struct {
	// Run does the work of one call and returns its result, which must match the tool's output schema (it
	// is marshalled to JSON). Run gets the call's input and a database handle inside the receipt's
	// transaction: everything it writes there commits with the receipt, or is rolled back if the call
	// fails, overruns its timeout or returns a result that breaks the output schema.
	//
	// Return one of the errors made by NotFound, Conflict, Invalid, NotConfigured or Retryable to say how the
	// call ended; any other error gives a failed receipt with code handler_error.
	Run func(ctx context.Context, c *Call) (any, error)

	// RequiredEnv lists the environment variables the handler needs to do real work; `executor registry
	// check` shows it. Without them Run should return NotConfigured.
	RequiredEnv []string

	// Isolated runs the handler in a transaction of its own instead of a shared batch. Set it for handlers
	// that wait on something outside PostgreSQL (an HTTP API), so they never hold up other calls' commits.
	// Tools whose permissions mean outside effects are always isolated.
	Isolated bool

	// Key, for a keyed tool, turns the value of its key_field into the idempotency key the call is kept
	// under, so one thing written two ways is one key (leads.create: a phone number in E.164). An error ends
	// the call before it runs, as Run's would. A key the caller gave is kept as it is.
	Key func(value string) (string, error)
}

// Handlers maps tool names to handlers.
type Handlers map[string]Handler

// Add registers a handler, panicking on a duplicate (a programming error caught at start-up).
func (h Handlers) Add(tool string, handler Handler) {
	if _, dup := h[tool]; dup {
		panic(fmt.Sprintf("executor: handler for %s registered twice", tool))
	}
	if handler.Run == nil {
		panic(fmt.Sprintf("executor: handler for %s has no Run", tool))
	}
	h[tool] = handler
}

// Func registers a handler that needs nothing but Run. With Typed, it is the one line that registers a
// tool's handler:
//
//	h.Func("os.defer_task", executor.Typed(deferTask))
func (h Handlers) Func(tool string, run func(ctx context.Context, c *Call) (any, error)) {
	h.Add(tool, Handler{Run: run})
}

// Typed makes a Handler's Run from a function that takes the call's input decoded into In (a struct with
// json tags) and returns its result as Out (a struct with json tags matching the tool's output schema), in
// the spirit of River's WorkFunc:
//
//	func deferTask(ctx context.Context, c *executor.Call, in deferTaskInput) (*deferTaskOutput, error)
//
//	h.Func("os.defer_task", executor.Typed(deferTask))
//	h.Add("comms.send_sms", executor.Handler{Run: executor.Typed(p.sendSMS), Isolated: true})
//
// The executor does the rest: an input that does not decode into In (the schema allows a value In cannot
// hold) ends the call with validation_error before run is called, and Out is checked against the output
// schema and written to the receipt like any result. Errors are returned as they are (see Handler.Run).
func Typed[In, Out any](run func(ctx context.Context, c *Call, in In) (Out, error)) func(ctx context.Context, c *Call) (any, error) {
	return func(ctx context.Context, c *Call) (any, error) {
		var in In
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		out, err := run(ctx, c, in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// Names returns the tool names with a handler, sorted.
func (h Handlers) Names() []string {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DB is the database handle a handler gets: the receipt's transaction. Its methods behave like pgx.Tx's.
// Handlers must not COMMIT or ROLLBACK it; they may use SAVEPOINTs of their own.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Call is one call as its handler sees it.
type Call struct {
	// ID is the call's id (core_tool_calls.id).
	ID uuid.UUID
	// Tool is the registry entry of the tool called.
	Tool *registry.Tool
	// Registry is the registry the executor runs, for handlers that reason about other tools' calls.
	Registry *registry.Registry
	// Input is the call's input, already valid against the tool's input schema.
	Input json.RawMessage
	// Attempt is River's attempt number, from 1.
	Attempt int
	// IdempotencyKey is the key the client sent with the call, else a keyed tool's key_field value, or "": a
	// handler may pass it on to a service that takes one.
	IdempotencyKey string
	// Agent is the agent the call is made for, or "".
	Agent string
	// UserID is the user an agent call is made for, or "".
	UserID string
	// RunID is the brain run that made the call, if any.
	RunID *uuid.UUID
	// DB is the receipt's transaction.
	DB DB
	// Log is a logger carrying the call's id, tool, attempt and run id.
	Log zerolog.Logger

	// state is the engine's: effects and files recorded, and how to Invoke.
	state callstate.State
}

func init() {
	callstate.Of = func(c *Call) *callstate.State { return &c.state }
	callstate.Retryable = func(e *Error) bool { return e.retryable }
}

// Invoke makes another call of a registry tool from inside this one, as a script tool's gem.x.y(input)
// does: a call of its own, enqueued, validated and receipted like any other, made for this call's agent,
// user and run, for this call's caller and with this call as its parent_id. It waits for the receipt and returns the
// result and the call's id; a receipt that is not succeeded is a *registry.CallError. The call commits on
// its own, whatever becomes of this one, so it is recorded in this call's effects.outside (kind "call").
func (c *Call) Invoke(ctx context.Context, tool string, input json.RawMessage) (json.RawMessage, string, error) {
	if c.state.Invoke == nil {
		return nil, "", errors.New("calls cannot be made from here (a device's tools cannot call other tools)")
	}
	result, id, err := c.state.Invoke(ctx, tool, input)
	if id != "" {
		c.RecordOutside(registry.OutsideEffect{Kind: "call", Target: tool, Reference: id})
	}
	return result, id, err
}

// Bind decodes the input into v (a pointer to a struct with json tags). An input that does not fit v is a
// validation_error naming the field. Handlers made with Typed get their input bound already.
func (c *Call) Bind(v any) error {
	err := json.Unmarshal(c.Input, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &Error{Code: registry.CodeValidation, Details: map[string]any{"field": te.Field},
			Message: fmt.Sprintf("input does not fit %s: %s is a JSON %s, which the handler cannot read as %s", c.Tool.Name, te.Field, te.Value, te.Type)}
	}
	if ferr := fieldError(c.Input, v); ferr != nil {
		return ferr
	}
	return Invalid("input does not fit %s: %v", c.Tool.Name, err)
}

var uuidTypes = []reflect.Type{reflect.TypeFor[uuid.UUID](), reflect.TypeFor[*uuid.UUID](), reflect.TypeFor[[]uuid.UUID]()}

// fieldError finds the top-level field of an input that v (a pointer to a struct) cannot read, once decoding
// failed with an error that names none (a value's UnmarshalText failing, as uuid's does). An id that is not
// a UUID names no record GEM can have: not_found, naming the field. Other fields: validation_error.
func fieldError(input json.RawMessage, v any) error {
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return nil
	}
	st := t.Elem()
	for i := range st.NumField() {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		raw, ok := fields[name]
		if !f.IsExported() || name == "" || name == "-" || !ok {
			continue
		}
		err := json.Unmarshal(raw, reflect.New(f.Type).Interface())
		if err == nil {
			continue
		}
		if slices.Contains(uuidTypes, f.Type) {
			return notARecordID(name, raw, err)
		}
		return &Error{Code: registry.CodeValidation, Details: map[string]any{"field": name},
			Message: fmt.Sprintf("%s %s cannot be read: %v", name, raw, err)}
	}
	return nil
}

// RecordOutside adds an effect outside the database (a message sent, a file written) to the receipt.
func (c *Call) RecordOutside(e registry.OutsideEffect) {
	c.state.Outside = append(c.state.Outside, e)
}

// RecordFile adds a file the handler put in GEM's file store to the receipt's effects.files_written.
func (c *Call) RecordFile(f registry.FileWritten) {
	c.state.Files = append(c.state.Files, f)
}

// StageFile adds a file to the receipt's effects.files_written that the executor writes to GEM's file store
// only once the call has succeeded: after its result passed the size limit and the output schema, before
// its receipt commits. A call that fails (an error, a timeout, result_too_large, output_contract_violation)
// writes nothing, and a committed receipt never names a file that is not there. The store names a file by
// its content, so the result may name f.Ref at once. The same file staged twice is written and listed once.
func (c *Call) StageFile(f *filestore.File) {
	for _, s := range c.state.Staged {
		if s.Ref == f.Ref {
			return
		}
	}
	c.state.Staged = append(c.state.Staged, f)
}

// Error is how a handler ends a call with a specific receipt.
type Error struct {
	// Code is the receipt's error code.
	Code registry.ErrorCode
	// Message says what happened, for a person or an LLM.
	Message string
	// Details are extra structured facts (marshalled to JSON).
	Details any

	retryable bool
	cause     error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the wrapped cause of a Retryable error.
func (e *Error) Unwrap() error { return e.cause }

// NotFound ends the call with a failed receipt, code not_found: a row the input names does not exist.
func NotFound(format string, args ...any) error {
	return &Error{Code: registry.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// Conflict ends the call with a failed receipt, code conflict: the current state refuses the change (a
// locked inspection, an invoice already paid).
func Conflict(format string, args ...any) error {
	return &Error{Code: registry.CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// Invalid ends the call with a failed receipt, code validation_error, for input the schema allows but the
// tool cannot use (a due date in the past, an unknown currency for this account).
func Invalid(format string, args ...any) error {
	return &Error{Code: registry.CodeValidation, Message: fmt.Sprintf(format, args...)}
}

// NotConfigured ends the call with a not_configured receipt: the tool needs a provider that is not set up.
func NotConfigured(reason string, requiredEnv []string, nextSteps ...string) error {
	if requiredEnv == nil {
		requiredEnv = []string{}
	}
	if nextSteps == nil {
		nextSteps = []string{}
	}
	return &Error{Code: registry.CodeNotConfigured, Message: reason, Details: registry.NotConfiguredDetails{
		Reason: reason, RequiredEnv: requiredEnv, NextSteps: nextSteps,
	}}
}

// Retryable marks err as transient (a provider briefly unavailable): the call's effects are rolled back and
// River retries it with backoff, up to the call's max_attempts; after the last attempt it fails with
// retries_exhausted.
func Retryable(err error) error {
	return &Error{Code: registry.CodeRetriesExhausted, Message: err.Error(), retryable: true, cause: err}
}

// RetryableWith is Retryable with details of the failure (a provider's HTTP status and Retry-After), which the
// retries_exhausted receipt of the last attempt keeps.
func RetryableWith(err error, details any) error {
	return &Error{Code: registry.CodeRetriesExhausted, Message: err.Error(), Details: details, retryable: true, cause: err}
}
