package agentskillshandlers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/llmtext"
	"github.com/gemhq/gem/registry"
)

// handlerError ends a call with a failed receipt, code handler_error, and structured details.
func handlerError(details map[string]any, format string, args ...any) error {
	return &executor.Error{Code: registry.CodeHandlerError, Message: fmt.Sprintf(format, args...), Details: details}
}

// maxDetailChars bounds the provider text copied into a receipt.
const maxDetailChars = 2000

// truncate shortens s to at most n characters, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	head, _ := cutRunes(s, n)
	return head + "…"
}

// providerHTTPError is a provider's answer with an HTTP error status (llmtext's, which the LLM client returns).
type providerHTTPError = llmtext.HTTPError

// transientStatus reports whether an HTTP status is worth retrying: rate limited, timed out or a server error.
func transientStatus(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500
}

// providerFailure turns a failed provider request into the call's ending. envKey names the variable holding
// the API key (for a refused key). With mayRetry, transient failures are retried by River; without it (a
// tool that must not run twice) they end the call with handler_error and "retryable": true in the details,
// for the caller to decide.
func providerFailure(ctx context.Context, provider, envKey string, err error, mayRetry bool) error {
	if ctx.Err() != nil {
		// The call's deadline passed (the executor reports a timeout) or the executor is stopping.
		return fmt.Errorf("error calling %s: %w", provider, err)
	}
	var me *malformedResponseError
	if errors.As(err, &me) {
		details := map[string]any{"provider": provider, "reason": "malformed_provider_response", "problem": me.Problem}
		if me.Body != "" {
			details["body"] = me.Body
		}
		return handlerError(details, "%s", me.Error())
	}
	var he *providerHTTPError
	if errors.As(err, &he) {
		details := map[string]any{"provider": provider, "status": he.Status, "body": truncate(he.Body, maxDetailChars)}
		switch {
		case he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden:
			details["reason"] = "credentials_refused"
			return handlerError(details, "%s refused the API key (HTTP %d); check %s", provider, he.Status, envKey)
		case transientStatus(he.Status) && mayRetry:
			return executor.Retryable(he)
		case transientStatus(he.Status):
			details["reason"], details["retryable"] = "provider_unavailable", true
			return handlerError(details, "%s is unavailable (HTTP %d); the call was not retried because it must not run twice", provider, he.Status)
		default:
			details["reason"] = "provider_error"
			return handlerError(details, "%s answered HTTP %d: %s", provider, he.Status, truncate(he.Body, 300))
		}
	}
	if mayRetry {
		return executor.Retryable(fmt.Errorf("error calling %s: %w", provider, err))
	}
	return handlerError(map[string]any{"provider": provider, "reason": "provider_unreachable", "error": err.Error(), "retryable": true},
		"error calling %s: %v; the call was not retried because it must not run twice", provider, err)
}

// round4 rounds a score to four decimals, which is all a ranking needs and keeps receipts readable.
func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }
