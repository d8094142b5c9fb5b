// Package engine turns River's jobs of tool calls into receipts: the worker and the plans of a call, the
// committers and their batch transactions, the device relay, limits, the upkeep loops and the metrics.
// Package executor wraps it (New, Start, Stop, Main) and is what handlers and the process see; the engine
// is kept apart from that surface as River keeps river/internal.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/devicerelay"
	"github.com/gemhq/gem/executor/internal/limits"
	"github.com/gemhq/gem/executor/internal/metrics"
	"github.com/gemhq/gem/executor/internal/runner"
	"github.com/gemhq/gem/executor/internal/upkeep"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

// jobTimeoutMargin is added to a tool's timeout to get River's timeout for its job: the handler has its
// own deadline, and the margin covers waiting for a committer and writing the receipt.
const jobTimeoutMargin = 10 * time.Second

// Executor works tool calls. Create it with New, then Start and Stop it.
type Executor struct {
	cfg      Config
	reg      *registry.Registry
	handlers gemcall.Handlers
	// pool registers the executor and rescues dead executors' calls; riverPool is River's and callPool
	// runs calls (see New).
	pool      *pgxpool.Pool
	riverPool *pgxpool.Pool
	callPool  *pgxpool.Pool
	client    *river.Client[pgx.Tx]
	log       zerolog.Logger
	devices   *devicerelay.Relay
	// waiter waits on the receipts of calls made from inside calls (Call.Invoke) and of the calls holding a
	// device call's key; it listens from its first use on.
	waiter *gemsql.ReceiptWaiter
	// inputCutoff is the largest input any tool accepts: a larger one is never read out of PostgreSQL.
	inputCutoff int64
	// waker wakes River when jobs snoozed by a limit are due.
	waker *limits.Waker
	// secrets seals and opens secret inputs (nil: no GEM_SECRET_KEY).
	secrets *registry.Secrets
	// metrics counts calls, batches and rescues (nil: no Config.Metrics); tracer makes calls' spans (nil: no
	// Config.TracerProvider).
	metrics *metrics.Metrics
	tracer  trace.Tracer

	queue          chan *pending
	runners        *runner.Runners
	stopCommitters chan struct{}
	committersDone sync.WaitGroup
	// dbCtx is the context of the executor's own statements (receipts, commits); it outlives the jobs'
	// contexts so a call cancelled at shutdown can still be rolled back cleanly.
	dbCtx    context.Context
	dbCancel context.CancelFunc

	// upkeep holds the liveness lock and runs the loops besides the calls: rescue, approvals, maintenance.
	upkeep   *upkeep.Upkeep
	stopOnce sync.Once
	stopErr  error
}

// riverPoolSize is the size of River's pool: fetching, completing, listening, leader election, maintenance.
const riverPoolSize = 10

// New builds an executor (executor.New says what it opens and why). cfg has its defaults applied and is valid (executor.New sees to both); version is the executor's, which
// it registers under.
func New(cfg Config, version string, reg *registry.Registry, handlers gemcall.Handlers, pool *pgxpool.Pool, log zerolog.Logger) (*Executor, error) {
	var secrets *registry.Secrets
	if cfg.SecretKey != "" {
		var err error
		if secrets, err = registry.NewSecrets(cfg.SecretKey, cfg.SecretKeysPrevious...); err != nil {
			return nil, fmt.Errorf("invalid executor config: GEM_SECRET_KEY: %w", err)
		}
	}
	for name := range handlers {
		if _, ok := reg.Tool(name); !ok {
			log.Warn().Str("tool", name).Msg("handler for a tool the registry does not have; it will never run")
		}
	}
	if longest := reg.LongestTimeout() + jobTimeoutMargin; cfg.RescueAfter < longest {
		log.Warn().Dur("rescue_after", cfg.RescueAfter).Dur("longest_job_timeout", longest).
			Msg("RescueAfter is shorter than the longest job timeout: slow calls may be taken up again while they run (they still get one receipt)")
	}

	collectors, err := metrics.New(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:            cfg,
		reg:            reg,
		handlers:       handlers,
		secrets:        secrets,
		pool:           pool,
		log:            log.With().Str("executor", cfg.ID).Logger(),
		queue:          make(chan *pending, cfg.MaxWorkers),
		runners:        runner.New(),
		stopCommitters: make(chan struct{}),
		metrics:        collectors,
	}
	if cfg.TracerProvider != nil {
		e.tracer = cfg.TracerProvider.Tracer(telemetry.Scope)
	}
	e.inputCutoff = cfg.MaxInputBytes
	for _, t := range reg.Tools() {
		e.inputCutoff = max(e.inputCutoff, t.MaxInput(cfg.MaxInputBytes))
	}
	e.dbCtx, e.dbCancel = context.WithCancel(context.Background())
	e.upkeep = upkeep.New(e.dbCtx, upkeep.Config{ID: cfg.ID, Version: version, RescueInterval: cfg.RescueInterval,
		Retention: cfg.Retention, ArchiveDir: cfg.ArchiveDir}, pool, reg, handlers, e.log, e.metrics, e.wakeRiver)
	e.devices = devicerelay.New(pool, reg, cfg.DeviceWait, e.log)
	e.waiter = gemsql.NewReceiptWaiter(pool, gemlog.Slog(e.log))

	// River's notifier LISTENs and its connections set synchronous_commit: they need sessions of their own.
	riverCfg := gemsql.Session(pool)
	riverCfg.MaxConns = riverPoolSize
	// River's listener, fetcher and completer each hold one.
	riverCfg.MinConns = 3
	riverCfg.ConnConfig.RuntimeParams["application_name"] = "gem-executor-river"
	riverCfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	riverPool, err := pgxpool.NewWithConfig(context.Background(), riverCfg)
	if err != nil {
		return nil, fmt.Errorf("error creating River's pool: %w", err)
	}
	e.riverPool = riverPool

	callCfg := pool.Config().Copy()
	callCfg.MaxConns = cfg.MaxConns
	// Keep a connection open for every committer and a few isolated calls: opening one on the hot path
	// costs tens of milliseconds when calls start arriving together.
	callCfg.MinConns = min(int32(cfg.Committers)+4, cfg.MaxConns)
	callCfg.ConnConfig.RuntimeParams["application_name"] = "gem-executor-calls"
	callCfg.ConnConfig.BuildContextWatcherHandler = func(pgConn *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pgConn, DeadlineDelay: 2 * time.Second}
	}
	callPool, err := pgxpool.NewWithConfig(context.Background(), callCfg)
	if err != nil {
		riverPool.Close()
		return nil, fmt.Errorf("error creating call pool: %w", err)
	}
	e.callPool = callPool

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &callWorker{e: e}); err != nil {
		e.closePools()
		return nil, fmt.Errorf("error adding worker: %w", err)
	}
	riverLog := e.log.With().Str("component", "river").Logger()
	if riverLog.GetLevel() < zerolog.WarnLevel {
		riverLog = riverLog.Level(zerolog.WarnLevel)
	}
	var middleware []rivertype.Middleware
	if e.tracer != nil {
		middleware = riverMiddleware()
	}
	client, err := river.NewClient(riverpgxv5.New(riverPool), &river.Config{
		ID:                   cfg.ID,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.MaxWorkers}},
		Workers:              workers,
		FetchCooldown:        cfg.FetchCooldown,
		FetchPollInterval:    cfg.FetchPollInterval,
		JobTimeout:           -1, // every job gets its tool's timeout from callWorker.Timeout
		RescueStuckJobsAfter: cfg.RescueAfter,
		// Receipts are the audit log; a finished call's job is only kept for its attempts' errors.
		CompletedJobRetentionPeriod: cfg.CompletedJobRetention,
		Logger:                      slog.New(zerolog.NewSlogHandler(riverLog)),
		Middleware:                  middleware,
	})
	if err != nil {
		e.closePools()
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	e.client = client
	return e, nil
}

// closePools closes the pools New opened.
func (e *Executor) closePools() {
	e.callPool.Close()
	e.riverPool.Close()
}

// Config returns the executor's configuration with defaults applied.
func (e *Executor) Config() Config { return e.cfg }

// Start registers the executor, takes its liveness lock, and starts the committers, the rescuer of dead
// executors' calls and the River client. Calls are taken from the queue until Stop. A Start that fails
// leaves nothing running and closes the pools New opened: the executor is not to be started or stopped
// again.
func (e *Executor) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			e.dbCancel()
			e.closePools()
		}
	}()
	if err := e.upkeep.SyncTools(ctx); err != nil {
		return err
	}
	if err := e.upkeep.StartLiveness(ctx); err != nil {
		return err
	}
	if err := e.devices.Start(ctx); err != nil {
		e.upkeep.Stop()
		return err
	}
	e.waker = limits.NewWaker(e.wakeRiver)
	e.upkeep.Start()
	for range e.cfg.Committers {
		e.committersDone.Add(1)
		go e.committer()
	}
	// River ties running jobs to the context Start gets: cancelling it would cancel every call at once.
	// Stopping is Stop's job, with its drain deadline.
	if err := e.client.Start(context.WithoutCancel(ctx)); err != nil {
		e.devices.Stop()
		e.waiter.Stop()
		close(e.stopCommitters)
		e.committersDone.Wait()
		e.upkeep.Stop()
		return fmt.Errorf("error starting River client: %w", err)
	}
	e.log.Info().Int("tools", e.reg.Len()).Int("handlers", len(e.handlers)).Int("max_workers", e.cfg.MaxWorkers).
		Int("committers", e.cfg.Committers).Int("batch_max", e.cfg.BatchMax).Dur("rescue_after", e.cfg.RescueAfter).
		Msg("executor started")
	return nil
}

// Stop stops taking calls, lets running calls finish until ctx ends (give it the drain deadline), then
// cancels the rest; cancelled calls are rolled back and retried by another executor.
func (e *Executor) Stop(ctx context.Context) error {
	e.stopOnce.Do(func() { e.stopErr = e.stop(ctx) })
	return e.stopErr
}

func (e *Executor) stop(ctx context.Context) error {
	err := e.client.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		e.log.Warn().Msg("drain deadline passed; cancelling running calls")
		hardCtx, cancel := context.WithTimeout(context.Background(), e.cfg.AbandonGrace+5*time.Second)
		err = e.client.StopAndCancel(hardCtx)
		cancel()
	}
	close(e.stopCommitters)
	e.committersDone.Wait()
	e.waker.Stop()
	e.runners.Stop()
	e.devices.Stop()
	e.waiter.Stop()
	// The liveness lock goes last: until every call is finished or rolled back, no one may take them up.
	e.upkeep.Stop()
	e.dbCancel()
	e.closePools()
	e.log.Info().Msg("executor stopped")
	return err
}

func (e *Executor) newAttempt(p *pending) *attempt {
	a := &attempt{e: e, p: p, ctx: p.ctx, job: p.job, args: p.args, started: time.Now(),
		callRow: callRow{toolName: p.args.ToolName}}
	if _, h := deviceOf(p.step); h != nil {
		a.started = h.started // a device call's run began with its hand-off
	}
	// The call's fields are added by a hook, which runs only for events that are logged: most calls log
	// nothing at the default levels, and encoding the fields up front cost every call.
	a.log = e.log.Hook(a)
	return a
}

// Run adds the call's fields to an event of its logger (zerolog.Hook).
func (a *attempt) Run(ev *zerolog.Event, _ zerolog.Level, _ string) {
	ev.Stringer("call_id", a.args.CallID).Str("tool", a.args.ToolName).Int("attempt", a.job.Attempt).
		Int64("job_id", a.job.ID).Float64("duration_ms", msSince(a.started))
	if a.runID != nil {
		ev.Stringer("run_id", a.runID)
	}
}

// callWorker is the River worker of every tool call.
type callWorker struct {
	river.WorkerDefaults[registry.CallArgs]
	e *Executor
}

// Timeout gives River a deadline past the tool's own: the handler's deadline is the tool's timeout_ms.
func (w *callWorker) Timeout(job *river.Job[registry.CallArgs]) time.Duration {
	if w.e.devices.IsDeviceCall(job.Args) {
		// Its contract may be a device's, and it may wait for a device; the relay bounds its own waits.
		return registry.TimeoutMax + devicerelay.WaitChunk + w.e.cfg.DeviceWait + jobTimeoutMargin
	}
	if t, ok := w.e.reg.Tool(job.Args.ToolName); ok {
		return t.Timeout() + jobTimeoutMargin
	}
	return jobTimeoutMargin
}

// awayRetry is when a call whose run the database's absence cut short is taken up again.
const awayRetry = time.Second

func (w *callWorker) Work(ctx context.Context, job *river.Job[registry.CallArgs]) (err error) {
	w.e.upkeep.Jobs.Begin(job.ID)
	defer func() { w.e.upkeep.Jobs.End(job.ID, err) }()
	err = w.work(ctx, job)
	var away databaseAwayError
	if errors.As(err, &away) && ctx.Err() == nil {
		// Nothing of the run was kept (or the next run finds its receipt): waiting for the database is not
		// the call's failure, so the call is given back without spending an attempt, as River's snooze does.
		// A restart otherwise spent the last attempt of a call that executor deaths had brought to it (they
		// spend none), and River discarded it.
		return river.JobSnooze(awayRetry)
	}
	return err
}

// databaseAwayError marks a failure of the executor's own statements (a batch's transaction, the device
// relay's reads and writes) caused by the database being away (gemsql.DatabaseAway). A handler's errors
// are never marked: a service it calls being away spends attempts as any transient failure does.
type databaseAwayError struct{ error }

func (e databaseAwayError) Unwrap() error { return e.error }

// awayOr marks err when the database being away caused it.
func awayOr(err error) error {
	if gemsql.DatabaseAway(err) {
		return databaseAwayError{err}
	}
	return err
}

func (w *callWorker) work(ctx context.Context, job *river.Job[registry.CallArgs]) error {
	e := w.e
	p := &pending{ctx: ctx, job: job.JobRow, args: job.Args, result: make(chan error, 1), step: runStep{}}
	if e.tracer != nil {
		p.since = time.Now()
	}
	limits.AwaitRateStart(ctx, job.JobRow)
	tool, known := e.reg.Tool(job.Args.ToolName)
	switch {
	case e.devices.IsDeviceCall(job.Args):
		// Its attempts, not the outside-effects marker, remember whether a device may have run it.
		return e.runDevice(p)
	case known && tool.RunsAtMostOnce():
		return e.runOutside(p)
	case known && (e.handlers[tool.Name].Isolated || tool.HasOutsideEffects()), e.cfg.BatchMax == 1:
		e.runBatch([]*pending{p})
	default:
		return e.commitQueued(p)
	}
	return <-p.result
}

// Maintain runs one pass of history maintenance as of now (see executor.Executor.Maintain).
func (e *Executor) Maintain(ctx context.Context, now time.Time) int {
	return e.upkeep.Maintain(ctx, now)
}
