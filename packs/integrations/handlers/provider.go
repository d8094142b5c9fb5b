package integrationshandlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/settings"
)

// urlNotConfigured answers not_configured when value, the address the variable name gives a provider
// (defaults filled in), is not an http(s) URL: a request to it would fail on every call. Main reported it
// at start.
func urlNotConfigured(name, value string) error {
	if err := settings.HTTPURLProblem(name, value); err != nil {
		return executor.NotConfigured(err.Error(), []string{name},
			"Set "+name+" to the provider's http(s) address, or unset it for the default, and restart the executor.")
	}
	return nil
}

// providerError is a request to a provider that did not succeed: an HTTP status other than 2xx, or no
// answer at all (Status 0).
type providerError struct {
	// Provider names the provider ("HighLevel", "Google Drive").
	Provider string
	// Status is the HTTP status, or 0 when the request got no answer.
	Status int
	// Message is the provider's own message, or the network error.
	Message string
	// RetryAfter is the provider's Retry-After, if it sent one.
	RetryAfter time.Duration

	// body is the error body, for providers whose error codes say more than the status.
	body []byte
}

func (e *providerError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s did not answer: %s", e.Provider, e.Message)
	}
	return fmt.Sprintf("%s answered HTTP %d: %s", e.Provider, e.Status, e.Message)
}

// retryable reports whether the same request may succeed later: rate limiting, a server error, or no
// answer.
func (e *providerError) retryable() bool {
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// refusedCredentials reports whether the provider refused the credentials.
func (e *providerError) refusedCredentials() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// asProviderError returns the *providerError in err, if any.
func asProviderError(err error) (*providerError, bool) {
	var pe *providerError
	ok := errors.As(err, &pe)
	return pe, ok
}

// apiRequest is one JSON request to a provider.
type apiRequest struct {
	provider string
	method   string
	url      string
	header   http.Header
	// body is marshalled to JSON when not nil; form is sent form-encoded instead.
	body any
	form url.Values
	// errorMessage extracts the provider's message from an error body; the raw body is used without it.
	errorMessage func(raw []byte) string
}

// do sends the request and decodes a 2xx JSON answer into out (when out is not nil). Any other answer is a
// *providerError; the call's deadline is returned as it is (a timeout receipt).
func do(ctx context.Context, client *http.Client, r apiRequest, out any) error {
	var body io.Reader
	header := r.header.Clone()
	if header == nil {
		header = http.Header{}
	}
	switch {
	case r.form != nil:
		body = strings.NewReader(r.form.Encode())
		header.Set("Content-Type", "application/x-www-form-urlencoded")
	case r.body != nil:
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("error encoding the %s request: %w", r.provider, err)
		}
		body = bytes.NewReader(b)
		header.Set("Content-Type", "application/json")
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return fmt.Errorf("error building the %s request: %w", r.provider, err)
	}
	req.Header = header
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "gem-executor/"+executor.Version)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error() // without the URL, which may carry ids
		}
		return &providerError{Provider: r.provider, Message: msg}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &providerError{Provider: r.provider, Message: "error reading the answer: " + err.Error()}
	}
	if resp.StatusCode/100 != 2 {
		pe := &providerError{Provider: r.provider, Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After")), body: raw}
		if r.errorMessage != nil {
			pe.Message = r.errorMessage(raw)
		}
		if pe.Message == "" {
			pe.Message = strings.TrimSpace(fmt.Sprintf("%.300s", raw))
		}
		if pe.Message == "" {
			pe.Message = http.StatusText(resp.StatusCode)
		}
		return pe
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &providerError{Provider: r.provider, Status: resp.StatusCode,
			Message: fmt.Sprintf("the answer is not the JSON expected (%v): %.200s", err, raw)}
	}
	return nil
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// readFailure turns a failed read-only request into the call's ending: credentials refused are
// not_configured, a transient failure is retried by the executor, anything else is a handler error
// carrying the provider's message.
func readFailure(err error, requiredEnv []string, nextSteps ...string) error {
	pe, ok := asProviderError(err)
	if !ok {
		return err
	}
	details := map[string]any{"provider": pe.Provider, "http_status": pe.Status, "message": pe.Message}
	switch {
	case pe.refusedCredentials():
		return executor.NotConfigured(fmt.Sprintf("%s refused the credentials (HTTP %d: %s)", pe.Provider, pe.Status, pe.Message),
			requiredEnv, nextSteps...)
	case pe.retryable():
		return executor.Retryable(pe)
	case pe.Status == http.StatusNotFound:
		return &executor.Error{Code: registry.CodeNotConfigured, Details: registry.NotConfiguredDetails{
			Reason:      pe.Error() + "; the configured account, property or location does not exist or is not shared with these credentials",
			RequiredEnv: nonNil(requiredEnv), NextSteps: nonNil(nextSteps)}, Message: pe.Error()}
	case pe.Status/100 == 4:
		return &executor.Error{Code: registry.CodeValidation, Details: details, Message: pe.Error()}
	default:
		return &executor.Error{Code: registry.CodeHandlerError, Details: details, Message: pe.Error()}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// googleErrorMessage reads Google's error body: {"error": {"code": 400, "message": "...", "status": "..."}}.
func googleErrorMessage(raw []byte) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Error.Message == "" {
		return ""
	}
	if body.Error.Status != "" {
		return body.Error.Status + ": " + body.Error.Message
	}
	return body.Error.Message
}

// googleAdsErrorMessage reads the Google Ads API's error body, which is Google's (an array of them for
// searchStream) with GoogleAdsFailure details.
func googleAdsErrorMessage(raw []byte) string {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 {
			trimmed = list[0]
		}
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Errors []struct {
					Message string `json:"message"`
				} `json:"errors"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(trimmed, &body) != nil || body.Error.Message == "" {
		return ""
	}
	msg := body.Error.Message
	for _, d := range body.Error.Details {
		for _, e := range d.Errors {
			if e.Message != "" {
				msg += "; " + e.Message
			}
		}
	}
	if body.Error.Status != "" {
		msg = body.Error.Status + ": " + msg
	}
	return msg
}
