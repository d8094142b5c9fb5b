// Package runner runs handlers on goroutines that outlive one call.
package runner

import "time"

// runnerIdle is how long an idle handler goroutine waits for the next handler before it exits.
const runnerIdle = 10 * time.Second

// Runners runs handlers on goroutines that outlive one call. A handler's database calls grow a fresh
// goroutine's stack several times over; reusing goroutines whose stacks have already grown saves that on
// every call. A runner kept by a handler that never returns (abandoned after its timeout) is simply not
// reused.
type Runners struct {
	tasks chan func()
	quit  chan struct{}
}

// New makes an empty set of runners.
func New() *Runners { return &Runners{tasks: make(chan func()), quit: make(chan struct{})} }

// Stop makes idle runners exit; call it once no more handlers start.
func (r *Runners) Stop() { close(r.quit) }

// Go runs f on an idle runner, or on a new one if none is idle.
func (r *Runners) Go(f func()) {
	select {
	case r.tasks <- f:
	default:
		go r.run(f)
	}
}

func (r *Runners) run(f func()) {
	idle := time.NewTimer(runnerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(runnerIdle)
		select {
		case f = <-r.tasks:
		case <-idle.C:
			return
		case <-r.quit:
			return
		}
	}
}
