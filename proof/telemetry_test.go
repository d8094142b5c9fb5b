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
	// r.device returns once the device's registration has committed; the hub adopts the session just after
	// that commit, so the gauge may lag it by a moment (it failed once so, under make test's load).
	gauge := func(want float64) {
		t.Helper()
		require.Eventually(t, func() bool { return connected() == want }, 10*time.Second, 20*time.Millisecond, "gem_devices_connected never reached %v", want)
	}
	require.Zero(t, connected())
	a := r.device("metrics-a", "", "")
	gauge(1)
	r.device("metrics-b", "", "")
	gauge(2)
	a.kill()
	gauge(1)
}
