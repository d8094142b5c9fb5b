package testsignal_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gemhq/gem/sql/testsignal"
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

// TestWaitBeforeInit: waiting on a signal no test initialised says so, instead of a nil dereference.
func TestWaitBeforeInit(t *testing.T) {
	t.Parallel()
	var never testsignal.Signal[int]
	require.PanicsWithValue(t, "testsignal: Wait on a signal that was never Init: call Init before the events the test waits for", func() { never.Wait() })
}

// TestTestingNotLinked: the package the brain's and the executor's components import does not bring package
// testing into their binaries.
func TestTestingNotLinked(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	require.NotContains(t, strings.Fields(string(out)), "testing")
}
