package businesshandlers

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a provider's HTTP client or an SMTP
// conversation left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
