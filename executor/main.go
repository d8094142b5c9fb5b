package executor

import (
	"context"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// mainPoolSize is the size of the pool Main opens: migrations, registration and rescue (River and the calls
// have pools of their own, see New).
const mainPoolSize = 4

// Main is the executor process: it loads the registry, connects, optionally migrates, and works calls.
// cmd/executor builds one from the environment; tests start the same Main.
type Main struct {
	// Config is the executor's configuration.
	Config Config
	// Handlers are the tool handlers this executor runs.
	Handlers Handlers
	// Log is the process logger.
	Log zerolog.Logger
	// Migrate applies the database migrations before starting: the core's line, then Lines.
	Migrate bool
	// Lines are the packs' migration lines (packs.Lines), applied after the core's when Migrate is set.
	Lines []gemsql.Line
	// Extend, when set, is called with the loaded registry before the executor starts. It may add handlers
	// the registry itself describes (rest and mcp tools, see package remote) and returns what to call once
	// the executor has stopped (closing MCP connections).
	Extend func(ctx context.Context, reg *registry.Registry, h Handlers) (closeFn func(), err error)

	// Registry is the loaded registry (set by Open).
	Registry *registry.Registry
	// Pool is the executor's connection pool (set by Open).
	Pool *pgxpool.Pool
	// Executor is the running executor (set by Open).
	Executor *Executor
	// Telemetry is the process's metrics registry and tracer provider (set by Open).
	Telemetry *telemetry.Telemetry

	closeExtension func()
	metrics        *metricsServer
}

// MetricsURL is the URL of the executor's /metrics ("" when it serves none).
func (m *Main) MetricsURL() string {
	if m.metrics == nil {
		return ""
	}
	return m.metrics.url()
}

// Open loads, connects and starts. Errors come back at once.
func (m *Main) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil && m.closeExtension != nil {
			m.closeExtension()
			m.closeExtension = nil
		}
		if err != nil {
			m.closeTelemetry(context.Background())
		}
	}()
	explicitMetrics := m.Config.MetricsAddr != ""
	cfg := m.Config.WithDefaults()
	if err := m.openTelemetry(&cfg, explicitMetrics); err != nil {
		return err
	}
	path, err := registry.Find(cfg.RegistryPath)
	if err != nil {
		return err
	}
	if m.Registry, err = registry.Load(path); err != nil {
		return err
	}
	m.Log.Info().Str("registry", path).Int("tools", m.Registry.Len()).Str("version", Version).Msg("registry loaded")
	if m.Extend != nil {
		if m.Handlers == nil {
			m.Handlers = Handlers{}
		}
		if m.closeExtension, err = m.Extend(ctx, m.Registry, m.Handlers); err != nil {
			return err
		}
	}
	if m.Pool, err = gemsql.NewPool(ctx, gemsql.PoolConfig{
		URL: cfg.DatabaseURL, SessionURL: cfg.SessionURL, ApplicationName: "gem-executor", MaxConns: mainPoolSize,
		ConnectWait: cfg.DBConnectWait, OnRetry: connectRetryLogger(m.Log),
	}); err != nil {
		return err
	}
	if err := m.Telemetry.Register(telemetry.NewQueueCollector(m.Pool)); err != nil {
		m.Pool.Close()
		return err
	}
	if m.Migrate {
		res, err := gemsql.Migrate(ctx, m.Pool, gemlog.Slog(m.Log.With().Str("component", "migrate").Logger()), m.Lines...)
		if err != nil {
			m.Pool.Close()
			return err
		}
		m.Log.Info().Ints("river", res.River).Strs("gem", res.GEM).Msg("migrations applied")
	}
	// The server can go away between the pool's first connection and the executor's own (a restart):
	// starting is retried like connecting, within DBConnectWait.
	deadline := time.Now().Add(cfg.DBConnectWait)
	for {
		if m.Executor, err = New(cfg, m.Registry, m.Handlers, m.Pool, m.Log); err != nil {
			m.Pool.Close()
			return err
		}
		err = m.Executor.Start(ctx)
		if err == nil {
			if m.metrics != nil {
				m.metrics.serve(m.Telemetry.RequireToken(m.Telemetry.Handler()))
				m.Log.Info().Str("url", m.metrics.url()).Msg("serving metrics (GEM_EXECUTOR_METRICS_ADDR)")
			}
			return nil
		}
		if !gemsql.DatabaseAway(err) || ctx.Err() != nil || time.Now().Add(time.Second).After(deadline) {
			m.Pool.Close()
			return err
		}
		m.Log.Warn().Err(err).Msg("executor could not start; retrying (GEM_DB_CONNECT_WAIT)")
		select {
		case <-ctx.Done():
			m.Pool.Close()
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// connectRetryLogger logs each failed attempt to reach the database at start-up.
func connectRetryLogger(log zerolog.Logger) func(error, time.Duration) {
	return func(err error, wait time.Duration) {
		log.Warn().Err(err).Dur("retry_in", wait).Msg("database not reachable yet; waiting (GEM_DB_CONNECT_WAIT)")
	}
}

// Close drains running calls until ctx ends (give it the drain deadline), then cancels what is left, and
// exports the spans still buffered.
func (m *Main) Close(ctx context.Context) error {
	var err error
	if m.Executor != nil {
		err = m.Executor.Stop(ctx)
	}
	if m.Pool != nil {
		m.Pool.Close()
	}
	if m.closeExtension != nil {
		m.closeExtension()
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	m.closeTelemetry(flushCtx)
	return err
}

// openTelemetry builds the process's telemetry into cfg and binds the metrics listener. The default address
// may be taken (several executors on one machine): that costs this executor its listener, not its start.
func (m *Main) openTelemetry(cfg *Config, explicitAddr bool) error {
	tcfg := cfg.Telemetry
	tcfg.MetricsOff = cfg.MetricsAddr == MetricsOff
	tel, err := telemetry.New(tcfg, "gem-executor")
	if err != nil {
		return err
	}
	m.Telemetry = tel
	if cfg.Metrics == nil {
		cfg.Metrics = tel.Registerer()
	}
	if cfg.TracerProvider == nil && tel.Tracing() {
		cfg.TracerProvider = tel.TracerProvider
	}
	if tcfg.MetricsOff {
		return nil
	}
	if m.metrics, err = listenMetrics(cfg.MetricsAddr); err != nil {
		if explicitAddr {
			return err
		}
		m.Log.Warn().Err(err).Msg("not serving metrics: the default address is taken (set GEM_EXECUTOR_METRICS_ADDR to another, or off)")
	}
	return nil
}

// closeTelemetry stops serving metrics and exports the spans still buffered, within ctx.
func (m *Main) closeTelemetry(ctx context.Context) {
	if m.metrics != nil {
		m.metrics.close(ctx)
		m.metrics = nil
	}
	if m.Telemetry != nil {
		if err := m.Telemetry.Shutdown(ctx); err != nil {
			m.Log.Warn().Err(err).Msg("spans were not all exported")
		}
	}
}
