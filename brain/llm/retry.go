package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/llmconfig"
)

// Attempt is one failed request of an LLM step that is tried again (Request.OnRetry).
type Attempt struct {
	// N counts the step's attempts from 1.
	N int
	// Err is why the attempt failed, as a client would be told (a *brain.Error).
	Err *brain.Error
	// Latency is how long the attempt took.
	Latency time.Duration
	// Wait is how long the step waits before the next attempt.
	Wait time.Duration
}

// Outcomes of one attempt (the outcome label of gem_llm_requests_total).
const (
	outcomeOK          = "ok"
	outcomeRejected    = "rejected"     // the provider refused the request as it is (a 4xx): never retried
	outcomeRateLimited = "rate_limited" // 429: retried
	outcomeTimeout     = "timeout"      // no answer within GEM_LLM_TIMEOUT: retried
	outcomeError       = "error"        // 5xx, 408, 409 or no answer (retried); a refused key or unknown model (not)
)

// providerMessageMax bounds the provider's message carried in an error.
const providerMessageMax = 2000

// backoffMax caps the wait between attempts when the provider gives no Retry-After.
const backoffMax = 8 * time.Second

// failure is one failed request to a provider, classified once: whether to retry it, and what the client
// is told when it is the step's last.
type failure struct {
	provider string
	// status is the provider's HTTP status; 0 when no answer came (network, timeout).
	status int
	// message is the provider's own message, or the transport's error.
	message string
	// retryAfter is the provider's Retry-After (or retry-after-ms), when hasRetryAfter.
	retryAfter    time.Duration
	hasRetryAfter bool
	// timeout: the attempt ran out of GEM_LLM_TIMEOUT (or of the step's deadline).
	timeout bool
	err     error
}

func (f *failure) Error() string { return f.asError(1, "").Error() }
func (f *failure) Unwrap() error { return f.err }

// apiFailure classifies a provider's answer with an error status (header may be nil).
func apiFailure(provider string, status int, header http.Header, message string, err error) *failure {
	f := &failure{provider: provider, status: status, message: strings.TrimSpace(message), err: err}
	if f.message == "" {
		f.message = http.StatusText(status)
	}
	if len(f.message) > providerMessageMax {
		f.message = f.message[:providerMessageMax] + "…"
	}
	f.retryAfter, f.hasRetryAfter = retryAfterOf(header, time.Now())
	return f
}

// transportFailure is a request that got no answer (or an answer that could not be read).
func transportFailure(provider string, err error) *failure {
	return &failure{provider: provider, message: err.Error(), err: err, timeout: errors.Is(err, context.DeadlineExceeded)}
}

// outcome is the attempt's outcome label.
func (f *failure) outcome() string {
	switch {
	case f.timeout:
		return outcomeTimeout
	case f.status == http.StatusTooManyRequests:
		return outcomeRateLimited
	case f.rejected():
		return outcomeRejected
	}
	return outcomeError
}

// rejected: the provider refused the request itself (context too long, a bad request): sending it again
// fails again. A refused key, an unknown model or endpoint are the operator's to fix, not the request's.
func (f *failure) rejected() bool {
	switch f.status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return f.status >= 400 && f.status < 500
}

// retryable: the same request may succeed later (the SDKs' rule: no answer, 408, 409, 429, 5xx).
func (f *failure) retryable() bool {
	return f.status == 0 || f.status == http.StatusRequestTimeout || f.status == http.StatusConflict ||
		f.status == http.StatusTooManyRequests || f.status >= 500
}

// asError is what a client is told of the step that ended with f after attempts attempts; why says why it
// was not tried again ("" when it could not be). A rejected request is llm_rejected (422) with the
// provider's message; anything else is unavailable (503), with the provider's Retry-After when it gave one.
func (f *failure) asError(attempts int, why string) *brain.Error {
	details := map[string]any{"provider": f.provider, "status": f.status, "attempts": attempts}
	if f.rejected() {
		details["provider_message"] = f.message
		return &brain.Error{Code: brain.ELLMREJECTED, Details: details,
			Message: fmt.Sprintf("the LLM (%s) rejected the request (HTTP %d): %s", f.provider, f.status, f.message)}
	}
	var msg string
	switch {
	case f.timeout:
		msg = fmt.Sprintf("the LLM (%s) did not answer in time (GEM_LLM_TIMEOUT, GEM_LLM_STEP_TIMEOUT)", f.provider)
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		msg = fmt.Sprintf("the LLM (%s) refused the API key (HTTP %d); check GEM_LLM_API_KEY", f.provider, f.status)
	case f.status == http.StatusNotFound:
		msg = fmt.Sprintf("the LLM (%s) does not know the model or endpoint (HTTP 404); check GEM_LLM_MODEL and GEM_LLM_BASE_URL", f.provider)
	case f.status == http.StatusTooManyRequests:
		msg = fmt.Sprintf("the LLM (%s) is rate limiting requests (HTTP 429): %s", f.provider, f.message)
	case f.status != 0:
		msg = fmt.Sprintf("the LLM (%s) failed (HTTP %d): %s", f.provider, f.status, f.message)
	default:
		msg = fmt.Sprintf("the LLM (%s) failed: %s", f.provider, f.message)
	}
	if attempts > 1 {
		msg += fmt.Sprintf(" (%d attempts)", attempts)
	}
	if why != "" {
		msg += "; " + why
	}
	if f.hasRetryAfter {
		details["retry_after_s"] = max(1, int(math.Ceil(f.retryAfter.Seconds())))
	}
	return &brain.Error{Code: brain.EUNAVAILABLE, Message: msg, Details: details}
}

// headerOf is an answer's header (nil without an answer).
func headerOf(res *http.Response) http.Header {
	if res == nil {
		return nil
	}
	return res.Header
}

// retryAfterOf reads a provider's wish on when to try again: retry-after-ms (OpenAI's), else Retry-After in
// seconds or as an HTTP date.
func retryAfterOf(h http.Header, now time.Time) (time.Duration, bool) {
	const longest = 24 * time.Hour // a longer wish is as good as never; the bound keeps the arithmetic sane
	seconds := func(v string, unit time.Duration) (time.Duration, bool) {
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(n) || n < 0 {
			return 0, false
		}
		return min(time.Duration(min(n, float64(longest/unit))*float64(unit)), longest), true
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if d, ok := seconds(v, time.Millisecond); ok {
			return d, true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if d, ok := seconds(v, time.Second); ok {
		return d, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), longest), true
	}
	return 0, false
}

// retrying is a Client whose every step is up to llmconfig.StepAttempts requests to the wrapped client
// (one request each), each bounded by GEM_LLM_TIMEOUT, all within one deadline (GEM_LLM_STEP_TIMEOUT).
type retrying struct {
	Client
	timeout, step, retryAfterMax time.Duration
	attempts                     int
}

// Retrying wraps c (which makes one request per Complete) so that a step that failed for a reason that
// may pass (no answer, 408, 409, 429, 5xx) is tried again: after the provider's Retry-After when it gives
// one (up to GEM_LLM_RETRY_AFTER_MAX), else after a jittered backoff. A wait longer than the bound, or than
// what is left of the step's deadline, ends the step at once: its error carries the provider's Retry-After
// for the client.
func Retrying(c Client, cfg llmconfig.Config) Client {
	cfg = cfg.WithDefaults()
	return &retrying{Client: c, timeout: cfg.Timeout, step: cfg.StepTimeout, retryAfterMax: cfg.RetryAfterMax, attempts: llmconfig.StepAttempts}
}

// Complete makes the step's attempts; req.OnAttempt hears of each one as it begins, req.OnRetry of each one
// tried again.
func (r *retrying) Complete(ctx context.Context, req *Request) (*Response, error) {
	step, cancel := context.WithTimeout(ctx, r.step)
	defer cancel()
	for n := 1; ; n++ {
		if req.OnAttempt != nil {
			req.OnAttempt(n)
		}
		attempt, cancelAttempt := context.WithTimeout(step, r.timeout)
		start := time.Now()
		resp, err := r.Client.Complete(attempt, req)
		cancelAttempt()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil { // the caller is gone (or its own deadline passed): the step ends here
			return nil, transportFailure(r.Provider(), ctx.Err()).asError(n, "the request ended before the LLM answered")
		}
		var f *failure
		if !errors.As(err, &f) {
			f = transportFailure(r.Provider(), err)
		}
		wait, why := r.next(step, f, n)
		if why != "" || !f.retryable() {
			return nil, f.asError(n, why)
		}
		if req.OnRetry != nil {
			req.OnRetry(Attempt{N: n, Err: f.asError(n, ""), Latency: time.Since(start), Wait: wait})
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-step.Done():
			t.Stop()
			if ctx.Err() != nil {
				return nil, transportFailure(r.Provider(), ctx.Err()).asError(n, "the request ended before the LLM answered")
			}
			return nil, f.asError(n, "the step's deadline passed (GEM_LLM_STEP_TIMEOUT)")
		}
	}
}

// next is how long to wait before attempt n+1, or why there is none.
func (r *retrying) next(step context.Context, f *failure, n int) (time.Duration, string) {
	if !f.retryable() {
		return 0, ""
	}
	if step.Err() != nil {
		return 0, fmt.Sprintf("the step's deadline passed (GEM_LLM_STEP_TIMEOUT %s)", r.step)
	}
	if n >= r.attempts {
		return 0, "no attempt is left"
	}
	wait := backoff(n)
	if f.hasRetryAfter {
		wait = f.retryAfter
		if wait > r.retryAfterMax {
			return 0, fmt.Sprintf("it asked to wait %s, longer than GEM_LLM_RETRY_AFTER_MAX (%s)", wait.Round(time.Millisecond), r.retryAfterMax)
		}
	}
	if deadline, ok := step.Deadline(); ok && time.Until(deadline) <= wait {
		return 0, fmt.Sprintf("waiting %s would pass the step's deadline (GEM_LLM_STEP_TIMEOUT %s)", wait.Round(time.Millisecond), r.step)
	}
	return wait, ""
}

// backoff is the wait after failed attempt n with no Retry-After: 0.5 s doubling, less up to a quarter of
// jitter, at most backoffMax.
func backoff(n int) time.Duration {
	d := min(500*time.Millisecond<<min(n-1, 10), backoffMax)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}
