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

// Handler runs the calls of one tool (see gemcall.Handler).
type Handler = gemcall.Handler

// Handlers maps tool names to handlers.
type Handlers = gemcall.Handlers

// Call is one call as its handler sees it (see gemcall.Call).
type Call = gemcall.Call

// DB is the database handle a handler gets: the receipt's transaction.
type DB = gemcall.DB

// Error is how a handler ends a call with a specific receipt.
type Error = gemcall.Error

// Optional is a patch's field as a handler read it: left out, null or a value.
type Optional[T any] = gemcall.Optional[T]

// Typed makes a Handler's Run from a function that takes the call's input decoded into In and returns its
// result as Out (see gemcall.Typed).
func Typed[In, Out any](run func(ctx context.Context, c *Call, in In) (Out, error)) func(ctx context.Context, c *Call) (any, error) {
	return gemcall.Typed(run)
}

// MissingEnv lists the variables of names that are unset or empty here: what keeps a handler's RequiredEnv
// from doing real work.
func MissingEnv(names []string) []string { return upkeep.MissingEnv(names) }

// NotFound ends the call with a failed receipt, code not_found.
func NotFound(format string, args ...any) error { return gemcall.NotFound(format, args...) }

// Conflict ends the call with a failed receipt, code conflict.
func Conflict(format string, args ...any) error { return gemcall.Conflict(format, args...) }

// Invalid ends the call with a failed receipt, code validation_error.
func Invalid(format string, args ...any) error { return gemcall.Invalid(format, args...) }

// NotConfigured ends the call with a not_configured receipt.
func NotConfigured(reason string, requiredEnv []string, nextSteps ...string) error {
	return gemcall.NotConfigured(reason, requiredEnv, nextSteps...)
}

// Retryable marks err as transient: River retries the call with backoff.
func Retryable(err error) error { return gemcall.Retryable(err) }

// RetryableWith is Retryable with details of the failure.
func RetryableWith(err error, details any) error { return gemcall.RetryableWith(err, details) }

// InvalidField ends a call with validation_error about one input field.
func InvalidField(field, format string, args ...any) error {
	return gemcall.InvalidField(field, format, args...)
}

// NotFoundIfNoRows turns pgx.ErrNoRows into a not_found error naming what is missing.
func NotFoundIfNoRows(err error, what string, id any) error {
	return gemcall.NotFoundIfNoRows(err, what, id)
}

// RecordID reads the id an input's field gives as text; anything but a UUID ends the call not_found.
func RecordID(field, s string) (uuid.UUID, error) { return gemcall.RecordID(field, s) }

// QueryList runs a query and scans each row with scan; it never returns a nil slice.
func QueryList[T any](ctx context.Context, db DB, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	return gemcall.QueryList(ctx, db, scan, sql, args...)
}

// LimitOr is an input's limit, or def when it is left out or not positive.
func LimitOr(n, def int) int { return gemcall.LimitOr(n, def) }

// LikeEscape makes s match itself in a LIKE or ILIKE pattern.
func LikeEscape(s string) string { return gemcall.LikeEscape(s) }

// LikeContains is the LIKE or ILIKE pattern of a text that contains s.
func LikeContains(s string) string { return gemcall.LikeContains(s) }

// SamePtr reports whether two optional values are both absent or both present and equal.
func SamePtr[T comparable](a, b *T) bool { return gemcall.SamePtr(a, b) }

// ValueOr is *p, or def when p is nil.
func ValueOr[T any](p *T, def T) T { return gemcall.ValueOr(p, def) }
