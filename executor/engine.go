package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor/internal/engine"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// Executor works tool calls. Create it with New, then Start and Stop it.
type Executor struct {
	e *engine.Executor
}

// New builds an executor. cfg gets its defaults; the pool must reach a migrated database. The executor
// registers itself and rescues dead executors' calls on that pool, and opens two of its own from its
// settings:
//
//   - River's, whose transactions commit without waiting for the disk (synchronous_commit off). River's
//     fetch is on every call's path, and its flush cost ~0.5 ms. Nothing of a call's outcome is committed
//     there: if the server crashes before a River commit is flushed, the job is as it was before (available
//     again, or running and taken up again), and a receipt committed later is flushed with everything
//     before it in the log, so no receipt can outlive the fetch that led to it.
//   - The calls', whose connections answer a cancelled context with a PostgreSQL cancel request: a handler
//     that overruns its timeout loses its statement (and rolls back to its savepoint), not the connection
//     other calls' receipts share. Its commits keep the server's setting (normally synchronous).
func New(cfg Config, reg *registry.Registry, handlers Handlers, pool *pgxpool.Pool, log zerolog.Logger) (*Executor, error) {
	cfg = cfg.WithDefaults()
	if cfg.RescueAfter == 0 {
		cfg.RescueAfter = reg.LongestTimeout() + RescueMarginDefault
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid executor config: %w", err)
	}
	e, err := engine.New(engine.Config(cfg), Version, reg, handlers, pool, log)
	if err != nil {
		return nil, err
	}
	return &Executor{e: e}, nil
}

// Config returns the executor's configuration with defaults applied.
func (e *Executor) Config() Config { return Config(e.e.Config()) }

// Start registers the executor, takes its liveness lock, and starts the committers, the rescuer of dead
// executors' calls and the River client. Calls are taken from the queue until Stop. A Start that fails
// leaves nothing running and closes the pools New opened: the executor is not to be started or stopped
// again.
func (e *Executor) Start(ctx context.Context) error { return e.e.Start(ctx) }

// Stop stops taking calls, lets running calls finish until ctx ends (give it the drain deadline), then
// cancels the rest; cancelled calls are rolled back and retried by another executor.
func (e *Executor) Stop(ctx context.Context) error { return e.e.Stop(ctx) }

// Maintain runs one pass of history maintenance as of now: it makes the months ahead and, unless another
// executor is at it, retires the months that ended Retention before now. It says how many it retired; errors
// are logged (a month that cannot be archived is kept and tried again next pass).
func (e *Executor) Maintain(ctx context.Context, now time.Time) int { return e.e.Maintain(ctx, now) }

// Detached is one run of a handler away from the database, as a device runs its tools: no transaction, no
// receipt (the hub side writes it). Handlers that need Call.DB cannot run detached; rest and mcp tools (and
// scripts) do not use it.
type Detached struct {
	CallID  uuid.UUID
	Tool    *registry.Tool
	Handler Handler
	Input   json.RawMessage
	Log     zerolog.Logger
}

// DetachedResult is how a detached run ended: a result that matches the tool's output schema, or an error
// as a receipt would carry it. Retryable marks a transient failure a caller may try again.
type DetachedResult struct {
	Result    json.RawMessage
	Error     *registry.CallError
	Retryable bool
}

// Run validates the input, runs the handler under the tool's timeout (recovering a panic) and checks its
// result against the output schema.
func (d *Detached) Run(ctx context.Context) DetachedResult {
	return DetachedResult((*engine.Detached)(d).Run(ctx))
}
