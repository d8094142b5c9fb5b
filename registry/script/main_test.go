package script_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a script run's watchdog that
// does not end with the run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
