package brain

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gemhq/gem/sql/gemsql"
)

// Error codes. Each maps to one HTTP status in the API's status table (brain/api); clients match on the code.
// Those a storage error can carry are the storage's own (gemsql.Error): AsError reads them as they are.
const (
	EINVALID      = gemsql.EINVALID     // the request or the plan it leads to is invalid (400)
	EUNAUTHORIZED = "unauthorized"      // missing or wrong bearer token (401)
	EFORBIDDEN    = "forbidden"         // the caller lacks a permission the request needs (403)
	ENOTFOUND     = gemsql.ENOTFOUND    // unknown run, call or route (404)
	ECONFLICT     = gemsql.ECONFLICT    // the request does not fit the current state (409)
	EKEYREUSED    = gemsql.EKEYREUSED   // an idempotency key its caller used with another input (422)
	ETOOLARGE     = "too_large"         // the request body is over the limit (413)
	EUNAVAILABLE  = gemsql.EUNAVAILABLE // the database or the LLM cannot be reached (503)
	EINTERNAL     = gemsql.EINTERNAL    // a bug or an unexpected failure (500)
	ENOPLAN       = "no_plan"           // nothing in the message matched what the brain can do (200, ok false)
	ETIMEOUT      = "wait_timeout"      // receipts did not all arrive in time; the calls keep running (200, ok false)
	ECALLFAILED   = "call_failed"       // a call ended with a failed or not_configured receipt (200, ok false)
	EAWAITING     = "awaiting_approval" // a call waits for a person's decision (200, ok false)
	EMETHOD       = "method_not_allowed"
	ENOLLM        = "llm_not_configured" // the request needs an LLM and none is configured (503)
	EOVERLOADED   = "overloaded"         // too many requests at once; retry after the Retry-After header (503)
	// EREQUESTTIMEOUT: the request's body did not arrive in time; the connection is closed (408).
	EREQUESTTIMEOUT = "request_timeout"
	ETOOMANY        = "too_many_failures" // too many failed authentications from one address; retry after Retry-After (429)
	// ELLMREJECTED: the LLM's provider refused the request as it is (context too long, a bad request): the
	// same request will fail again, so it is not a 503 (422, with the provider's message).
	ELLMREJECTED = "llm_rejected"
	// ETOOLITERATIONS: the agent reached its max_tool_iterations before answering in text (200, ok false).
	ETOOLITERATIONS = "tool_iterations_exhausted"
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

// ErrorCode returns the code of err: AsError's, read the one way.
func ErrorCode(err error) string { return AsError(err).Code }

// AsError turns any error into an *Error, the one reading of an error the doors (HTTP, MCP, chat) answer
// with: an *Error as it is; a storage error (gemsql.Error: the storage's functions return their failures
// coded) with its code, message and details; a database failure a statement outside them met, coded the
// storage's way (gemsql.Coded); anything else internal, with a generic message (details are logged).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var se *gemsql.Error
	if errors.As(gemsql.Coded(err), &se) && se.Code != EINTERNAL {
		var details any
		if se.Details != nil {
			details = se.Details
		}
		return &Error{Code: se.Code, Message: se.Message, Details: details}
	}
	return &Error{Code: EINTERNAL, Message: "internal error"}
}

// IdempotencyKeyHeader is the HTTP request header that carries a client's key for its request (the IETF
// HTTPAPI draft's Idempotency-Key), as a body's idempotency_key does.
const IdempotencyKeyHeader = "Idempotency-Key"

// RequestKeyMaxLen bounds a client's key for its request.
const RequestKeyMaxLen = 1000

// RequestKey is the client's key for its request from the Idempotency-Key header's values (a structured-field
// string, quoted, or the bare key) and the key the body or the protocol's own field gives: either, or both
// when they agree.
func RequestKey(header []string, field string) (string, error) {
	if len(header) == 0 {
		return field, nil
	}
	if len(header) > 1 {
		return "", Errorf(EINVALID, "send one %s header, not %d", IdempotencyKeyHeader, len(header))
	}
	key := strings.TrimSpace(header[0])
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		unquoted, err := strconv.Unquote(key)
		if err != nil {
			return "", Errorf(EINVALID, "the %s header is not a valid quoted string", IdempotencyKeyHeader)
		}
		key = unquoted
	}
	switch {
	case key == "" || utf8.RuneCountInString(key) > RequestKeyMaxLen:
		return "", Errorf(EINVALID, "the %s header must hold 1 to %d characters", IdempotencyKeyHeader, RequestKeyMaxLen)
	case strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !utf8.ValidString(key):
		return "", Errorf(EINVALID, "the %s header holds a control character or invalid UTF-8", IdempotencyKeyHeader)
	case field != "" && field != key:
		return "", Errorf(EINVALID, "the %s header (%q) and the request's idempotency_key (%q) differ; send one key",
			IdempotencyKeyHeader, key, field)
	}
	return key, nil
}

// RequestFingerprint is the SHA-256 of a request as its door decoded it, without its key: door names the
// endpoint, parts are what decides the work (the body with its key cleared, the agent acted as). A request
// key held by another fingerprint is a conflict, by the same one a repeat.
func RequestFingerprint(door string, parts ...any) []byte {
	b, err := json.Marshal(append([]any{door}, parts...)) // struct fields in order, map keys sorted
	if err != nil {
		b = fmt.Appendf(nil, "%s %#v", door, parts)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
