package upkeep

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
func (u *Upkeep) maintenanceLoop() {
	defer close(u.maintenanceDone)
	for {
		_ = gemlog.Guarded(&u.log, "history maintenance", func() error { u.Maintain(u.ctx, time.Now()); return nil })
		timer := time.NewTimer(maintenanceInterval)
		select {
		case <-u.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// Maintain runs one pass of history maintenance as of now: it makes the months ahead and, unless another
// executor is at it, retires the months that ended Retention before now. It says how many it retired; errors
// are logged (a month that cannot be archived is kept and tried again next pass).
func (u *Upkeep) Maintain(ctx context.Context, now time.Time) int {
	if n, err := gemsql.EnsureMonths(ctx, u.pool, now); err != nil {
		if ctx.Err() == nil {
			u.log.Error().Err(err).Msg("error making the partitions of the months ahead; inserts of calls fail once the current month has none")
		}
	} else if n > 0 {
		u.log.Info().Int("partitions", n).Msg("made the partitions of the months ahead")
	}
	if u.cfg.Retention < 0 {
		return 0
	}
	done, err := gemsql.RetireBefore(ctx, u.pool, now.Add(-u.cfg.Retention), u.cfg.ArchiveDir)
	retired := 0
	for _, r := range done {
		switch {
		case errors.Is(r.Err, gemsql.ErrOpenCalls):
			u.log.Warn().Err(r.Err).Str("month", r.Month.Suffix).Msg("a month past retention is kept: some of its calls have no receipt yet")
		case r.Err != nil:
			// Reported below, as the pass's error.
		default:
			retired++
			ev := u.log.Info().Str("month", r.Month.Suffix).Str("archive", u.cfg.ArchiveDir).Dur("took", r.Took)
			for table, f := range r.Manifest.Tables {
				ev = ev.Int64(table, f.Rows)
			}
			ev.Msg("retired a month of history: archived, then dropped")
		}
	}
	if err != nil && !errors.Is(err, gemsql.ErrRetiring) && ctx.Err() == nil {
		u.log.Error().Err(err).Str("archive", u.cfg.ArchiveDir).Msg("error retiring a month of history; it is kept and tried again in an hour")
	}
	return retired
}
