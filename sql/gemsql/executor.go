package gemsql

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Executor is an executor registered in core_executors, and whether it is alive.
type Executor struct {
	// ID is the executor's unique id (GEM_EXECUTOR_ID): calls' worker, River's attempted_by.
	ID string `json:"id"`
	// Hostname is the host it runs on.
	Hostname string `json:"hostname"`
	// PID is its process id on Hostname.
	PID int `json:"pid"`
	// Version is its build version.
	Version string `json:"version"`
	// StartedAt is when it last started.
	StartedAt time.Time `json:"started_at"`
	// StoppedAt is when it stopped cleanly, if it did since it last started.
	StoppedAt *time.Time `json:"stopped_at,omitempty"`
	// DeadAt is when another executor found it dead and took up its running calls, if one did.
	DeadAt *time.Time `json:"dead_at,omitempty"`
	// Alive says whether its liveness lock (a session advisory lock on gem_executor_lock_key(id)) is held:
	// PostgreSQL releases it the moment the process or its connection dies. This is how executors decide
	// that another is dead; it is read from pg_locks, so asking takes no lock.
	Alive bool `json:"alive"`
}

// executorListSQL lists registered executors with their liveness. A bigint advisory lock shows in pg_locks
// as classid (high 32 bits) and objid (low 32 bits) with objsubid 1, in the database it was taken in.
const executorListSQL = `
SELECT x.id, x.hostname, x.pid, x.version, x.started_at, x.stopped_at, x.dead_at,
	EXISTS (
		SELECT 1 FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND ((l.classid::bigint << 32) | l.objid::bigint) = gem_executor_lock_key(x.id)
	) AS alive
FROM core_executors x
ORDER BY alive DESC, x.started_at DESC, x.id`

// ExecutorList returns every executor registered in core_executors, the live ones first, then by latest
// start. Executors stay registered after they stop or die (Alive false) until their id starts again.
func ExecutorList(ctx context.Context, db DBTX) ([]*Executor, error) {
	rows, err := db.Query(ctx, executorListSQL)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing executors: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Executor, error) {
		var x Executor
		err := row.Scan(&x.ID, &x.Hostname, &x.PID, &x.Version, &x.StartedAt, &x.StoppedAt, &x.DeadAt, &x.Alive)
		return &x, err
	})
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing executors: %w", err))
	}
	return list, nil
}

// ToolReadiness is what an executor that has a handler for a tool needs to run it for real: the
// environment variables the handler reads, and those not set where it runs (then it answers
// not_configured).
type ToolReadiness struct {
	RequiredEnv []string `json:"required_env,omitempty"`
	MissingEnv  []string `json:"missing_env,omitempty"`
}

// ExecutorTools returns, for every tool some live executor has a handler for, the best readiness among
// them (one with nothing missing, if any). A tool absent from the map has no handler on a live executor.
func ExecutorTools(ctx context.Context, db DBTX) (map[string]ToolReadiness, error) {
	rows, err := db.Query(ctx, `SELECT l.tools FROM (`+executorListSQL+`) l0 JOIN core_executors l ON l.id = l0.id WHERE l0.alive`)
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading executors' tools: %w", err))
	}
	each, err := pgx.CollectRows(rows, pgx.RowTo[map[string]ToolReadiness])
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading executors' tools: %w", err))
	}
	out := map[string]ToolReadiness{}
	for _, tools := range each {
		for name, r := range tools {
			if prev, seen := out[name]; !seen || len(r.MissingEnv) < len(prev.MissingEnv) {
				out[name] = r
			}
		}
	}
	return out, nil
}
