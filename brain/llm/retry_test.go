package llm

import (
	"net/http"
	"testing"
	"time"

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
