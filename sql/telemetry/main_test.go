package telemetry_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: an exporter or provider started and
// never shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
