package gemsql_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a receipt waiter, listener or pool
// started and never stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
