// Package upkeep is what an executor does besides its calls (docs/architecture.md#crash-recovery): it
// registers the executor and holds its liveness lock, takes up the running calls of dead executors and
// gives back those it lost, ends calls whose approval expired, forgets old rate windows and request keys,
// keeps history partitioned and retained, and records the registry's tools in core_tools.
package upkeep

import (
	"context"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/metrics"
	"github.com/gemhq/gem/registry"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// Config is what upkeep needs of the executor's configuration.
type Config struct {
	// ID is the executor's id, Version the version it registers under.
	ID      string
	Version string
	// RescueInterval is how often dead executors' calls are looked for.
	RescueInterval time.Duration
	// Retention is how long history is kept (negative: always); ArchiveDir is where retired months go.
	Retention  time.Duration
	ArchiveDir string
}

// Upkeep is one executor's upkeep: StartLiveness, then Start the loops, then Stop.
type Upkeep struct {
	cfg      Config
	pool     *pgxpool.Pool
	reg      *registry.Registry
	handlers gemcall.Handlers
	log      zerolog.Logger
	metrics  *metrics.Metrics
	// wake tells the executors' River clients that jobs are available.
	wake func()
	// ctx is the context of the loops' statements (the executor's own, which outlives its jobs').
	ctx context.Context

	// Jobs are the jobs the executor's workers hold (see rescueOrphans).
	Jobs Jobs

	stop         chan struct{}
	livenessDone chan struct{}
	rescueDone   chan struct{}
	// approvalsDone closes when approvalsLoop returns (it stops with stop).
	approvalsDone chan struct{}
	// maintenanceDone closes when maintenanceLoop returns (it stops with stop).
	maintenanceDone chan struct{}
	loops           bool
}

// New is the upkeep of an executor working on pool's database.
func New(ctx context.Context, cfg Config, pool *pgxpool.Pool, reg *registry.Registry, handlers gemcall.Handlers,
	log zerolog.Logger, m *metrics.Metrics, wake func()) *Upkeep {
	return &Upkeep{cfg: cfg, pool: pool, reg: reg, handlers: handlers, log: log, metrics: m, wake: wake, ctx: ctx,
		stop: make(chan struct{}), rescueDone: make(chan struct{}), approvalsDone: make(chan struct{}),
		maintenanceDone: make(chan struct{})}
}

// Start starts the loops: rescue, approvals (with the forgetting of old rates and keys) and maintenance.
func (u *Upkeep) Start() {
	u.loops = true
	go u.rescueLoop()
	go u.approvalsLoop()
	go u.maintenanceLoop()
}

// Stop stops the loops, if started, then gives up the liveness lock (StartLiveness succeeded).
func (u *Upkeep) Stop() {
	close(u.stop)
	if u.loops {
		<-u.rescueDone
		<-u.approvalsDone
		<-u.maintenanceDone
	}
	<-u.livenessDone
}
