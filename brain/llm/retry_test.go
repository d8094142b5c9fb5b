package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

// TestRetryAfterOf reads a provider's Retry-After as the SDKs did: retry-after-ms first, then seconds or
// an HTTP date; anything else is no wish at all.
func TestRetryAfterOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "300"}, 300 * time.Second, true},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{map[string]string{"retry-after-ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(42 * time.Second).Format(http.TimeFormat)}, 42 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "1e300"}, 24 * time.Hour, true},
		{map[string]string{"Retry-After": "-3"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"retry-after-ms": "NaN"}, 0, false},
		{nil, 0, false},
	} {
		h := http.Header{}
		for k, v := range c.header {
			h.Set(k, v)
		}
		got, ok := retryAfterOf(h, now)
		require.Equal(t, c.ok, ok, "%v", c.header)
		require.Equal(t, c.want, got, "%v", c.header)
	}
}

// TestStepDeadline: a provider that never answers costs one step's deadline, not attempts × the request
// timeout, and the step ends unavailable (timeout), each attempt counted.
func TestStepDeadline(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // then the server hears the client hang up
		<-r.Context().Done()
	}))
	t.Cleanup(silent.Close)
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		c, err := New(llmconfig.Config{Provider: provider, BaseURL: silent.URL, APIKey: "k", Model: "m",
			Timeout: 400 * time.Millisecond, StepTimeout: time.Second}, nil)
		require.NoError(t, err)
		var retried []Attempt
		start := time.Now()
		_, err = c.Complete(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}},
			OnRetry: func(a Attempt) { retried = append(retried, a) }})
		took := time.Since(start)
		require.Equal(t, brain.EUNAVAILABLE, brain.ErrorCode(err), "%v", err)
		require.Contains(t, err.Error(), "did not answer in time")
		require.Less(t, took, 3*time.Second, "one step's deadline (1 s), not 3 × 400 ms plus waits unbounded")
		require.NotEmpty(t, retried, provider)
		for i, a := range retried {
			require.Equal(t, i+1, a.N)
			require.Equal(t, brain.EUNAVAILABLE, a.Err.Code)
		}
	}
	require.GreaterOrEqual(t, requests.Load(), int32(4), "each provider was asked more than once")
}
