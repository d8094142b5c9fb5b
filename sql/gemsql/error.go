package gemsql

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Codes of the errors the storage returns: what its caller can act on. The brain's doors answer each with
// one status (brain.E* has the same names and values); an error without a code is internal, a bug or an
// unexpected failure: logged, never shown.
const (
	ENOTFOUND    = "not_found"            // what was asked for does not exist
	ECONFLICT    = "conflict"             // it does not fit what is stored: it exists already
	EKEYREUSED   = "idempotency_conflict" // an idempotency key its caller used with another input
	EINVALID     = "invalid"              // the database refused the input as it is (text it cannot store)
	EUNAVAILABLE = "unavailable"          // the database is away (DatabaseAway): waiting fixes it, not another request
	EINTERNAL    = "internal"             // anything else
)

// Error is a storage failure with the code its caller acts on and a message fit for that caller (a client
// of the brain may read it), optional details, and the failure it comes from (Unwrap: errors.Is and
// errors.As see it, and its text is Error's, for logs).
type Error struct {
	Code    string
	Message string
	Details map[string]any
	Err     error
}

// Error is the text of the failure the error comes from, else its message.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the failure the error comes from.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns err's code: its *Error's, "" for nil, EINTERNAL for any other error.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return EINTERNAL
}

// Coded returns err with the code its caller acts on; the storage's functions return their failures
// through it, so nobody above them translates a driver's error:
//   - an *Error, nil, and the caller's own cancellation or deadline come back as they are;
//   - the database being away (DatabaseAway) is EUNAVAILABLE, which the brain answers 503 with a
//     Retry-After and the executor waits out without spending an attempt;
//   - text PostgreSQL cannot store or read (22021 a NUL or invalid UTF-8, 22P05 an untranslatable
//     character such as \u0000 in jsonb, 22P02 a malformed value) is EINVALID: the caller's input, named by
//     what PostgreSQL says;
//   - any other error comes back as it is: internal.
func Coded(err error) error {
	var e *Error
	var pgErr *pgconn.PgError
	switch {
	case err == nil, errors.As(err, &e), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case DatabaseAway(err):
		// A fixed message: the driver's error names the server's host, port and user, which a client of the
		// brain must not learn; it stays wrapped for the logs.
		return &Error{Code: EUNAVAILABLE, Message: "the database cannot be reached", Err: err}
	case errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05" || pgErr.Code == "22P02"):
		return &Error{Code: EINVALID, Message: "the request holds text the database cannot store: " + pgErr.Message,
			Details: map[string]any{"sqlstate": pgErr.Code}, Err: err}
	}
	return err
}
