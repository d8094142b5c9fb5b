package brain

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to one HTTP status in the API's status table (brain/api); clients match on the code.
const (
	EINVALID      = "invalid"           // the request or the plan it leads to is invalid (400)
	EUNAUTHORIZED = "unauthorized"      // missing or wrong bearer token (401)
	EFORBIDDEN    = "forbidden"         // the caller lacks a permission the request needs (403)
	ENOTFOUND     = "not_found"         // unknown run, call or route (404)
	ECONFLICT     = "conflict"          // the request does not fit the current state (409)
	ETOOLARGE     = "too_large"         // the request body is over the limit (413)
	EUNAVAILABLE  = "unavailable"       // the database or the LLM cannot be reached (503)
	EINTERNAL     = "internal"          // a bug or an unexpected failure (500)
	ENOPLAN       = "no_plan"           // nothing in the message matched what the brain can do (200, ok false)
	ETIMEOUT      = "wait_timeout"      // receipts did not all arrive in time; the calls keep running (200, ok false)
	ECALLFAILED   = "call_failed"       // a call ended with a failed or not_configured receipt (200, ok false)
	EAWAITING     = "awaiting_approval" // a call waits for a person's decision (200, ok false)
	EMETHOD       = "method_not_allowed"
	ENOLLM        = "llm_not_configured" // the request needs an LLM and none is configured (503)
	EOVERLOADED   = "overloaded"         // too many requests at once; retry after the Retry-After header (503)
)

// Error is the brain's one error type: a code, a message for people, and optional structured details
// (for example every schema violation).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err: its *Error's, or EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// AsError turns any error into an *Error; internal errors keep a generic message (details are logged).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: EINTERNAL, Message: "internal error"}
}
