package executor

import (
	"context"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/upkeep"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The tool author's surface is package gemcall, below the engine that builds calls and reads their errors;
// here it is by its old names, so handlers keep writing executor.Call and executor.NotFound.

// Handler runs the calls of one tool.
//
// Its fields and methods are documented in package gemcall: go doc executor/gemcall.Handler.
type Handler = gemcall.Handler

// Handlers maps tool names to handlers.
//
// Its fields and methods are documented in package gemcall: go doc executor/gemcall.Handlers.
type Handlers = gemcall.Handlers

// Call is one call as its handler sees it.
//
// Its fields and methods are documented in package gemcall: go doc executor/gemcall.Call.
type Call = gemcall.Call

// DB is the database handle a handler gets: the receipt's transaction. Its methods behave like pgx.Tx's.
// Handlers must not COMMIT or ROLLBACK it; they may use SAVEPOINTs of their own.
//
// Its fields and methods are documented in package gemcall: go doc executor/gemcall.DB.
type DB = gemcall.DB

// Error is how a handler ends a call with a specific receipt.
//
// Its fields and methods are documented in package gemcall: go doc executor/gemcall.Error.
type Error = gemcall.Error

// Optional is a patch's field as a handler read it, key by key, with its own message for each wrong value:
// left out (Set false), null (Set, Value nil) or a value. Set says it was given.
//
// Its fields and methods are documented in package gemcall: go doc executor/gemcall.Optional.
type Optional[T any] = gemcall.Optional[T]

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
	return gemcall.Typed(run)
}

// MissingEnv lists the variables of names that are unset or empty here: what keeps a handler's RequiredEnv
// from doing real work.
func MissingEnv(names []string) []string { return upkeep.MissingEnv(names) }

// NotFound ends the call with a failed receipt, code not_found: a row the input names does not exist.
func NotFound(format string, args ...any) error { return gemcall.NotFound(format, args...) }

// Conflict ends the call with a failed receipt, code conflict: the current state refuses the change (a
// locked inspection, an invoice already paid).
func Conflict(format string, args ...any) error { return gemcall.Conflict(format, args...) }

// Invalid ends the call with a failed receipt, code validation_error, for input the schema allows but the
// tool cannot use (a due date in the past, an unknown currency for this account).
func Invalid(format string, args ...any) error { return gemcall.Invalid(format, args...) }

// NotConfigured ends the call with a not_configured receipt: the tool needs a provider that is not set up.
func NotConfigured(reason string, requiredEnv []string, nextSteps ...string) error {
	return gemcall.NotConfigured(reason, requiredEnv, nextSteps...)
}

// Retryable marks err as transient (a provider briefly unavailable): the call's effects are rolled back and
// River retries it with backoff, up to the call's max_attempts; after the last attempt it fails with
// retries_exhausted.
func Retryable(err error) error { return gemcall.Retryable(err) }

// RetryableWith is Retryable with details of the failure (a provider's HTTP status and Retry-After), which the
// retries_exhausted receipt of the last attempt keeps.
func RetryableWith(err error, details any) error { return gemcall.RetryableWith(err, details) }

// InvalidField ends a call with validation_error about one input field, which the details name
// ({"field": "patch.title"}) and the message starts with.
func InvalidField(field, format string, args ...any) error {
	return gemcall.InvalidField(field, format, args...)
}

// NotFoundIfNoRows turns pgx.ErrNoRows into a not_found error naming what is missing ("task 5b0f… does not
// exist"); other errors pass through as they are (the executor chooses the receipt code of a database error).
func NotFoundIfNoRows(err error, what string, id any) error {
	return gemcall.NotFoundIfNoRows(err, what, id)
}

// RecordID reads the id an input's field gives as text (spaces around it ignored): anything but a UUID names
// no record GEM keeps, so the call ends not_found naming the field, in the words Call.Bind uses for a field
// declared a uuid.UUID.
func RecordID(field, s string) (uuid.UUID, error) { return gemcall.RecordID(field, s) }

// QueryList runs a query and scans each row with scan. It never returns a nil slice, so an empty list is
// JSON [] rather than null, as output schemas of lists ask.
func QueryList[T any](ctx context.Context, db DB, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	return gemcall.QueryList(ctx, db, scan, sql, args...)
}

// LimitOr is an input's limit, or def when it is left out (zero) or not positive.
func LimitOr(n, def int) int { return gemcall.LimitOr(n, def) }

// LikeEscape makes s match itself in a LIKE or ILIKE pattern: a % or _ of the input matches only itself.
func LikeEscape(s string) string { return gemcall.LikeEscape(s) }

// LikeContains is the LIKE or ILIKE pattern of a text that contains s.
func LikeContains(s string) string { return gemcall.LikeContains(s) }

// SamePtr reports whether two optional values are both absent or both present and equal: whether an update
// changes a nullable column.
func SamePtr[T comparable](a, b *T) bool { return gemcall.SamePtr(a, b) }

// ValueOr is *p, or def when p is nil.
func ValueOr[T any](p *T, def T) T { return gemcall.ValueOr(p, def) }
