package postgres_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a pool or a connection left open.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
