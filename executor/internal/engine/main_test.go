package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the engine's tests when a goroutine outlives them: a committer, a runner or a pool's health
// check left running by an executor a test built.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
