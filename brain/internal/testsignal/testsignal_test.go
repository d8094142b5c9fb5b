package testsignal_test

import (
	"testing"

	"github.com/gemhq/gem/brain/internal/testsignal"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSignal: an uninitialised signal ignores what it is sent; an initialised one hands each value to Wait in
// order.
func TestSignal(t *testing.T) {
	t.Parallel()
	var off testsignal.Signal[int]
	for i := range 100 {
		off.Signal(i) // never blocks, never fails
	}

	var on testsignal.Signal[string]
	on.Init(t)
	on.Signal("first")
	on.Signal("second")
	require.Equal(t, "first", on.Wait())
	require.Equal(t, "second", on.Wait())
}
