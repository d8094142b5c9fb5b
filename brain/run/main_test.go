package run_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: an answer still being recorded, or a
// receipt waiter left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
