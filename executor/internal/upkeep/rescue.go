package upkeep

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5"
)

// Crash recovery has two layers.
//
// Liveness: every executor holds a session advisory lock (gem_executor_lock_key of its id) on a connection
// of its own for as long as it runs, and registers in core_executors. PostgreSQL releases the lock the
// moment the process dies (its socket closes), so every RescueInterval each executor looks for running calls
// whose executor is registered and no longer holds its lock, and makes their jobs available again at once:
// a killed executor's calls are taken up within about a second, whatever their tools' timeouts.
//
// Time: River's rescuer takes up any job running longer than RescueAfter (default: the longest tool timeout
// plus 15s), which covers an executor that is alive but stuck.
//
// Taking a call up twice is safe either way: the call row is locked for the whole of an attempt, and an
// attempt that finds a receipt only completes its job. A device call is locked only in its two short
// transactions; while two runs wait on its device, its attempts keep it with one device at a time
// (core_device_attempts_one_open, 00021).

// rescueDeadSQL makes the running jobs of dead executors available again. A dead executor is one in
// core_executors whose liveness lock can be taken.
//
// An executor's death does not use up a call's attempts: an executor holds up to MaxWorkers fetched calls,
// most of them waiting for a committer, and a few crashes in a row would otherwise fail healthy calls with
// job_discarded. Each such rescue is marked in the job's errors ("executor_died"); a call that has been
// rescued crashRescuesMax times (a call that kills every executor that runs it) gets no more and is
// discarded once its attempts are spent, and a database trigger writes its failed receipt.
const rescueDeadSQL = `
WITH workers AS (
	SELECT DISTINCT j.attempted_by[array_upper(j.attempted_by, 1)] AS worker
	FROM river_job j
	WHERE j.kind = 'gem.tool_call' AND j.state = 'running'
), dead AS (
	SELECT x.id AS worker
	FROM workers w JOIN core_executors x ON x.id = w.worker
	WHERE x.id <> $1 AND pg_try_advisory_xact_lock(gem_executor_lock_key(x.id))
), marked AS (
	UPDATE core_executors SET dead_at = coalesce(dead_at, now()) WHERE id IN (SELECT worker FROM dead)
), jobs AS (
	SELECT j.id, d.worker, crashes.n < $2 AS crash_retry_left, j.attempt < j.max_attempts OR crashes.n < $2 AS retry
	FROM river_job j JOIN dead d ON j.attempted_by[array_upper(j.attempted_by, 1)] = d.worker,
		LATERAL (SELECT count(*) AS n FROM unnest(j.errors) e WHERE (e ->> 'executor_died')::boolean) crashes
	WHERE j.kind = 'gem.tool_call' AND j.state = 'running'
)
UPDATE river_job j
SET state = CASE WHEN x.retry THEN 'available' ELSE 'discarded' END::river_job_state,
	max_attempts = CASE WHEN x.crash_retry_left THEN greatest(j.max_attempts, j.attempt + 1) ELSE j.max_attempts END,
	scheduled_at = CASE WHEN x.retry THEN now() ELSE j.scheduled_at END,
	finalized_at = CASE WHEN x.retry THEN NULL ELSE now() END,
	errors = array_append(j.errors, jsonb_build_object(
		'at', now(), 'attempt', j.attempt, 'trace', '', 'executor_died', true,
		'error', 'executor ' || x.worker || ' stopped during this attempt (its liveness lock was released)'))
FROM jobs x
WHERE j.id = x.id
RETURNING j.id, j.state`

// crashRescuesMax is how many executor deaths a call may live through beyond its attempts.
const crashRescuesMax = 10

// rescueOrphansSQL gives back the running jobs of this executor ($1) that it is not working on: River's
// fetch committed them (or River was to record how their run ended), but the database went away before
// River could hand them over or record it. Nothing else frees them while the executor lives and holds its
// lock: River's rescue of stuck jobs waits the longest tool timeout and more (a PostgreSQL restart left
// calls running for 2.5 minutes). $2 are the jobs it is working on or whose run ended less than
// orphanGrace ago (River may still be recording it); a job fetched less than orphanGrace ago may be on its
// way to a worker. The run that was lost spends no attempt, as a snooze does; the job's errors say why.
const rescueOrphansSQL = `
UPDATE river_job j
SET state = 'available', scheduled_at = now(), attempt = greatest(j.attempt - 1, 0),
	errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt, 'trace', '',
		'error', 'executor ' || $1 || ' lost this run (the database went away between River and the call); given back'))
WHERE j.kind = 'gem.tool_call' AND j.state = 'running' AND j.attempted_by[array_upper(j.attempted_by, 1)] = $1
	AND j.attempted_at < now() - make_interval(secs => $3) AND NOT (j.id = ANY ($2::bigint[]))
RETURNING j.id`

// orphanGrace is how long a job of this executor's may be running without a worker before it is an orphan:
// longer than River takes from its fetch to the worker, and than its completer retries recording a run.
const orphanGrace = 10 * time.Second

// Jobs knows the jobs this executor's workers hold, and those whose run ended with an error (a retry or
// snooze River's completer records) less than orphanGrace ago.
type Jobs struct {
	mu      sync.Mutex
	working map[int64]bool
	ended   map[int64]time.Time
}

// Begin records that a worker holds a job.
func (j *Jobs) Begin(id int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.working == nil {
		j.working, j.ended = map[int64]bool{}, map[int64]time.Time{}
	}
	j.working[id] = true
	delete(j.ended, id)
}

// End records that a run returned; a run that returned nil completed its job in its own transaction.
func (j *Jobs) End(id int64, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.working, id)
	if err != nil {
		j.ended[id] = time.Now()
	}
}

// held lists the jobs that are not orphans, forgetting runs that ended long enough ago.
func (j *Jobs) held() []int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	ids := make([]int64, 0, len(j.working)+len(j.ended))
	for id := range j.working {
		ids = append(ids, id)
	}
	for id, at := range j.ended {
		if time.Since(at) > orphanGrace {
			delete(j.ended, id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// StartLiveness registers the executor and takes its liveness lock. It fails if another running executor
// has the same id.
func (u *Upkeep) StartLiveness(ctx context.Context) error {
	conn, err := u.lockLiveness(ctx)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	_, err = u.pool.Exec(ctx, `INSERT INTO core_executors (id, hostname, pid, version, tools) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET hostname = $2, pid = $3, version = $4, tools = $5, started_at = now(), stopped_at = NULL, dead_at = NULL`,
		u.cfg.ID, host, os.Getpid(), u.cfg.Version, u.toolReadiness())
	if err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("error registering executor: %w", err)
	}
	u.livenessDone = make(chan struct{})
	go u.keepLiveness(conn)
	return nil
}

// toolReadiness says, for each tool the executor has a handler for, which of the environment variables
// the handler needs are missing here (the studio shows which tools run for real).
func (u *Upkeep) toolReadiness() map[string]gemsql.ToolReadiness {
	out := make(map[string]gemsql.ToolReadiness, len(u.handlers))
	for name, h := range u.handlers {
		out[name] = gemsql.ToolReadiness{RequiredEnv: h.RequiredEnv, MissingEnv: MissingEnv(h.RequiredEnv)}
	}
	return out
}

// MissingEnv lists the variables of names that are unset or empty here: what keeps a handler's RequiredEnv
// from doing real work.
func MissingEnv(names []string) []string {
	var missing []string
	for _, env := range names {
		if os.Getenv(env) == "" {
			missing = append(missing, env)
		}
	}
	return missing
}

func (u *Upkeep) lockLiveness(ctx context.Context) (*pgx.Conn, error) {
	cfg := gemsql.Session(u.pool).ConnConfig
	cfg.RuntimeParams["application_name"] = "gem-executor-liveness"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting the liveness lock: %w", err)
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(gem_executor_lock_key($1))`, u.cfg.ID).Scan(&locked); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("error taking the liveness lock: %w", err)
	}
	if !locked {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("another executor with id %q is running (its liveness lock is held)", u.cfg.ID)
	}
	return conn, nil
}

// keepLiveness checks the liveness connection every second and takes the lock again after losing it (a
// database restart). While it is lost, other executors may take up this executor's running calls, which is
// safe and, after a restart, right: the restart aborted them.
func (u *Upkeep) keepLiveness(conn *pgx.Conn) {
	defer close(u.livenessDone)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-u.stop:
			if conn != nil {
				_, _ = u.pool.Exec(context.Background(), `UPDATE core_executors SET stopped_at = now() WHERE id = $1`, u.cfg.ID)
				_ = conn.Close(context.Background())
			}
			return
		case <-ticker.C:
		}
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := conn.Ping(ctx)
			cancel()
			if err == nil {
				continue
			}
			u.log.Warn().Err(err).Msg("liveness connection lost; reconnecting")
			_ = conn.Close(context.Background())
			conn = nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := u.lockLiveness(ctx)
		cancel()
		if err != nil {
			u.log.Warn().Err(err).Msg("cannot take the liveness lock yet")
			continue
		}
		conn = c
		u.log.Info().Msg("liveness lock taken again")
	}
}

// rescueLoop takes up the running calls of dead executors every RescueInterval.
func (u *Upkeep) rescueLoop() {
	defer close(u.rescueDone)
	ticker := time.NewTicker(u.cfg.RescueInterval)
	defer ticker.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-ticker.C:
		}
		rescue := func() error { _, err := u.rescueDead(u.ctx); return err }
		if err := gemlog.Guarded(&u.log, "rescuing dead executors' calls", rescue); err != nil && u.ctx.Err() == nil {
			u.log.Warn().Err(err).Msg("error rescuing the calls of dead executors")
		}
		if err := u.rescueOrphans(u.ctx); err != nil && u.ctx.Err() == nil {
			u.log.Warn().Err(err).Msg("error giving back the calls this executor lost")
		}
	}
}

// rescueDead runs one pass of liveness rescue and returns how many jobs it took up.
func (u *Upkeep) rescueDead(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := u.pool.Query(ctx, rescueDeadSQL, u.cfg.ID, crashRescuesMax)
	if err != nil {
		return 0, err
	}
	var retried, discarded int
	for rows.Next() {
		var id int64
		var state string
		if err := rows.Scan(&id, &state); err != nil {
			rows.Close()
			return 0, err
		}
		if state == "available" {
			retried++
		} else {
			discarded++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	u.metrics.ObserveRescue(retried, discarded)
	if retried > 0 {
		u.wake() // now rather than at the executors' next poll
	}
	if retried+discarded > 0 {
		u.log.Warn().Int("retried", retried).Int("discarded", discarded).Msg("took up the running calls of a dead executor")
	}
	return retried + discarded, nil
}

// rescueOrphans gives back the running jobs this executor lost (see rescueOrphansSQL).
func (u *Upkeep) rescueOrphans(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := u.pool.Query(ctx, rescueOrphansSQL, u.cfg.ID, u.Jobs.held(), orphanGrace.Seconds())
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		u.metrics.ObserveRescue(len(ids), 0)
		u.wake()
		u.log.Warn().Int("retried", len(ids)).Ints64("job_ids", ids).Msg("gave back running calls this executor lost when the database went away")
	}
	return nil
}
