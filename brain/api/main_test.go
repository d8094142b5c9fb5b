package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a request's handler, a server or an
// overload queue's waiter left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
