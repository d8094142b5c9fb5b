// Package testsignal lets a test wait for a component's internal event instead of sleeping or polling: the
// component sends on a Signal, which does nothing until a test calls Init, and the test waits on it
// (River's rivershared/testsignal, cut to what GEM uses). It does not import package testing, so the binaries
// whose components report signals do not link it.
package testsignal

import (
	"sync/atomic"
	"time"
)

// TB is what a signal needs of the test waiting on it (testing.TB has it).
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// WaitTimeout bounds Wait: long enough for a loaded machine, short enough to fail a test that waits for an
// event that never comes.
const WaitTimeout = 30 * time.Second

// capacity is how many signals a test may leave unread before Signal fails it.
const capacity = 50

// Signal is an event a component reports to a test. Its zero value is safe to Signal and does nothing, so
// production code pays one atomic load; a test calls Init, then Wait.
type Signal[T any] struct {
	// on is set once by Init; atomic, so a test may init a signal of a component already running (a
	// server's, reached only once it serves).
	on atomic.Pointer[initialised[T]]
}

type initialised[T any] struct {
	ch chan T
	tb TB
}

// Init makes the signal record its events for tb; only tests call it, before the events they wait for.
func (s *Signal[T]) Init(tb TB) {
	s.on.Store(&initialised[T]{ch: make(chan T, capacity), tb: tb})
}

// Signal reports val to the test, if one waits on s; it never blocks.
func (s *Signal[T]) Signal(val T) {
	on := s.on.Load()
	if on == nil {
		return
	}
	select {
	case on.ch <- val:
	default:
		on.tb.Errorf("test signal's channel is full: a test left %d signals unread", capacity)
	}
}

// Wait returns the next value signalled, failing the test after WaitTimeout. It panics when Init was not
// called: there is no test to fail, and the wait could never end.
func (s *Signal[T]) Wait() T {
	on := s.on.Load()
	if on == nil {
		panic("testsignal: Wait on a signal that was never Init: call Init before the events the test waits for")
	}
	on.tb.Helper()
	select {
	case val := <-on.ch:
		return val
	case <-time.After(WaitTimeout):
		on.tb.Fatalf("timed out after %s waiting for a test signal", WaitTimeout)
	}
	var zero T
	return zero
}
