package settings_test

import (
	"testing"
	"time"

	"github.com/gemhq/gem/registry/settings"
	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]time.Duration{"30s": 30 * time.Second, "5m": 5 * time.Minute, "1h30m": 90 * time.Minute} {
		d, err := settings.ParseDuration("GEM_X_DELAY", value)
		require.NoError(t, err, value)
		require.Equal(t, want, d, value)
	}
	for _, bad := range []string{"often", "30", "0s", "-5m", ""} {
		_, err := settings.ParseDuration("GEM_X_DELAY", bad)
		require.EqualError(t, err, `GEM_X_DELAY="`+bad+`" is not a duration like 30s or 5m`)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{time.Hour: "1h", time.Minute: "1m", 30 * time.Second: "30s",
		90 * time.Minute: "1h30m", time.Millisecond: "1ms", 24 * time.Hour: "24h"} {
		require.Equal(t, want, settings.FormatDuration(d), d)
	}
}

func TestHTTPURLProblem(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://api.example", "http://127.0.0.1:1/v1", "https://api.example/search?x=1"} {
		require.NoError(t, settings.HTTPURLProblem("GEM_X_URL", ok), ok)
	}
	for _, bad := range []string{"api.example", "ftp://api.example", "https://", "http:///path", "images", "://x", ""} {
		require.EqualError(t, settings.HTTPURLProblem("GEM_X_URL", bad), `GEM_X_URL="`+bad+`" is not an http(s) URL`, bad)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	merged := settings.Merge(
		[]settings.Variable{{"GEM_A", "1", "a"}, {"GEM_SHARED", settings.Unset, "shared, as the first pack says"}},
		[]settings.Variable{{"GEM_SHARED", "2", "shared, as the last pack says"}, {"GEM_B", settings.Unset, "b"}},
	)
	require.Equal(t, []settings.Variable{{"GEM_A", "1", "a"}, {"GEM_SHARED", "2", "shared, as the last pack says"}, {"GEM_B", settings.Unset, "b"}}, merged)
}
