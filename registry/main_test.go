package registry

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the watchdog of a script tool's run
// left running after the run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
