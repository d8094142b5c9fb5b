package engine

import (
	"context"
	"errors"
	"time"

	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
)

// maintenanceInterval is how often an executor makes the months ahead and retires old ones.
const maintenanceInterval = time.Hour

// maintenanceLoop keeps history partitioned and retained (docs/retention.md): at start and then hourly it
// makes the partitions of the months ahead, and retires (archives, then drops) the months that ended
// Retention ago.
func (e *Executor) maintenanceLoop() {
	defer close(e.maintenanceDone)
	for {
		_ = gemlog.Guarded(&e.log, "history maintenance", func() error { e.Maintain(e.dbCtx, time.Now()); return nil })
		timer := time.NewTimer(maintenanceInterval)
		select {
		case <-e.stopLiveness:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// Maintain runs one pass of history maintenance as of now: it makes the months ahead and, unless another
// executor is at it, retires the months that ended Retention before now. It says how many it retired; errors
// are logged (a month that cannot be archived is kept and tried again next pass).
func (e *Executor) Maintain(ctx context.Context, now time.Time) int {
	if n, err := gemsql.EnsureMonths(ctx, e.pool, now); err != nil {
		if ctx.Err() == nil {
			e.log.Error().Err(err).Msg("error making the partitions of the months ahead; inserts of calls fail once the current month has none")
		}
	} else if n > 0 {
		e.log.Info().Int("partitions", n).Msg("made the partitions of the months ahead")
	}
	if e.cfg.Retention < 0 {
		return 0
	}
	done, err := gemsql.RetireBefore(ctx, e.pool, now.Add(-e.cfg.Retention), e.cfg.ArchiveDir)
	retired := 0
	for _, r := range done {
		switch {
		case errors.Is(r.Err, gemsql.ErrOpenCalls):
			e.log.Warn().Err(r.Err).Str("month", r.Month.Suffix).Msg("a month past retention is kept: some of its calls have no receipt yet")
		case r.Err != nil:
			// Reported below, as the pass's error.
		default:
			retired++
			ev := e.log.Info().Str("month", r.Month.Suffix).Str("archive", e.cfg.ArchiveDir).Dur("took", r.Took)
			for table, f := range r.Manifest.Tables {
				ev = ev.Int64(table, f.Rows)
			}
			ev.Msg("retired a month of history: archived, then dropped")
		}
	}
	if err != nil && !errors.Is(err, gemsql.ErrRetiring) && ctx.Err() == nil {
		e.log.Error().Err(err).Str("archive", e.cfg.ArchiveDir).Msg("error retiring a month of history; it is kept and tried again in an hour")
	}
	return retired
}
