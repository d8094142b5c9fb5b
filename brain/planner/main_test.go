package planner_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a plan's work left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
