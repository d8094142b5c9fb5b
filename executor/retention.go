package executor

import (
	"context"
	"errors"
	"time"

	gemsql "github.com/gemhq/gem/sql"
)

// maintenanceInterval is how often an executor makes the months ahead and retires old ones.
const maintenanceInterval = time.Hour

// retentionLockKey is the session advisory lock the executor that retires months holds: one at a time.
const retentionLockKey = "gem.retention"

// maintenanceLoop keeps history partitioned and retained (docs/retention.md): at start and then hourly it
// makes the partitions of the months ahead, and retires (archives, then drops) the months that ended
// Retention ago.
func (e *Executor) maintenanceLoop() {
	defer close(e.maintenanceDone)
	for {
		e.Maintain(e.dbCtx, time.Now())
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
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return 0
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, retentionLockKey).Scan(&mine); err != nil || !mine {
		return 0 // another executor is retiring
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, retentionLockKey)
	}()
	months, err := gemsql.HistoryMonths(ctx, e.pool)
	if err != nil {
		e.log.Warn().Err(err).Msg("error listing the months of history")
		return 0
	}
	cutoff := now.Add(-e.cfg.Retention)
	retired := 0
	for _, m := range months {
		if m.End.After(cutoff) {
			continue
		}
		start := time.Now()
		manifest, err := gemsql.Retire(ctx, e.pool, e.cfg.ArchiveDir, m)
		switch {
		case errors.Is(err, gemsql.ErrOpenCalls):
			e.log.Warn().Err(err).Str("month", m.Suffix).Msg("a month past retention is kept: some of its calls have no receipt yet")
		case err != nil:
			if ctx.Err() == nil {
				e.log.Error().Err(err).Str("month", m.Suffix).Str("archive", e.cfg.ArchiveDir).Msg("error retiring a month of history; it is kept and tried again in an hour")
			}
			return retired
		default:
			retired++
			ev := e.log.Info().Str("month", m.Suffix).Str("archive", e.cfg.ArchiveDir).Dur("took", time.Since(start))
			for table, f := range manifest.Tables {
				ev = ev.Int64(table, f.Rows)
			}
			ev.Msg("retired a month of history: archived, then dropped")
		}
	}
	return retired
}
