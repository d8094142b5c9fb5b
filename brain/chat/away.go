package chat

import (
	"context"
	"time"

	"github.com/gemhq/gem/brain"
)

// A turn's journal write that finds the database away (a restart, a failover, a few seconds of outage) is
// written again once the database is back, under the run's claim: the LLM answer the brain holds is
// journaled, not asked for again, and the client is answered the turn. Only a database away longer than
// Config.AwayWait leaves the turn to its lease (503 with its run_id), for a brain to resume from its journal.

// AwayWaitDefault is how long a turn's journal write waits for the database to come back before the turn is
// left to its lease.
const AwayWaitDefault = 30 * time.Second

// awayPause is the first pause between two tries of a write that found the database away; it doubles up to
// awayPauseMax, so a server back is found within a fraction of a second without a storm of connections.
const (
	awayPause    = 50 * time.Millisecond
	awayPauseMax = 500 * time.Millisecond
)

// away says whether err is the database being away (EUNAVAILABLE: the storage's code for it, which
// brain.ErrorCode also gives a driver's error that says so).
func away(err error) bool {
	return brain.ErrorCode(err) == brain.EUNAVAILABLE
}

// untilBack runs write (its try numbered from 1) and again while it finds the database away, for up to
// Config.AwayWait. write must be safe to try again: a try whose commit's answer was lost with the connection
// may have committed.
func (c *Chat) untilBack(ctx context.Context, write func(try int) error) error {
	deadline := time.Now().Add(c.awayWait)
	pause := awayPause
	for try := 1; ; try++ {
		err := write(try)
		if err == nil || !away(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, awayPauseMax)
	}
}
