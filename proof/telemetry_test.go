package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/stretchr/testify/require"
)

// TestDevicesConnectedMetric scrapes a hub's /metrics while `executor device` processes connect and one is
// killed: gem_devices_connected follows them.
func TestDevicesConnectedMetric(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	connected := func() float64 {
		f, status, err := telemetrytest.Scrape(r.brain.url+"/metrics", r.brain.token)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		return f.Value("gem_devices_connected")
	}
	require.Zero(t, connected())
	a := r.device("metrics-a", "", "")
	require.Equal(t, 1.0, connected())
	r.device("metrics-b", "", "")
	require.Equal(t, 2.0, connected())
	a.kill()
	require.Eventually(t, func() bool { return connected() == 1 }, 10*time.Second, 50*time.Millisecond)
}
