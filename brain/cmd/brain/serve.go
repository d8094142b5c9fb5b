package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/devicehub"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/packs"
	integrationsplan "github.com/gemhq/gem/packs/integrations/plan"
	"github.com/gemhq/gem/packs/plans"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/rs/zerolog"
	"riverqueue.com/riverui"
)

// Main is the brain process: registry, database, receipt waiter, planner, service and HTTP server.
// cmd/brain builds it from the environment; tests start the same Main on port :0.
type Main struct {
	// Config is the brain's configuration.
	Config Config
	// Log is the process logger.
	Log zerolog.Logger
	// Migrate applies the database migrations before starting.
	Migrate bool

	Registry *registry.Registry
	Pool     *pgxpool.Pool
	Waiter   *gemsql.ReceiptWaiter
	// RunEnds hears runs end (postgres.RunEndedChannel): a repeated request waits on it; and runs' events
	// recorded (postgres.RunEventChannel): their streams wait on it.
	RunEnds *gemsql.Listener
	Runs    *run.Service
	Chat    *chat.Chat
	MCP     *mcpserver.Server
	Devices *devicehub.Hub
	Server  *api.Server
	// Telemetry is the brain's metrics registry and tracer provider (docs/observability.md).
	Telemetry *telemetry.Telemetry
	// RiverUI is River UI, served to admins at /studio/river; stopRiverUI ends its background services.
	RiverUI     *riverui.Handler
	stopRiverUI context.CancelFunc
}

// Open loads, connects and starts serving; errors (a port in use, a broken registry) come back at once.
func (m *Main) Open(ctx context.Context) (err error) {
	cfg := m.Config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("invalid brain config: %w", err)
	}
	path, err := registry.Find(cfg.RegistryPath)
	if err != nil {
		return err
	}
	if m.Registry, err = registry.Load(path); err != nil {
		return err
	}
	m.Registry.SetSecrets(cfg.Secrets)
	if m.Pool, err = gemsql.NewPool(ctx, gemsql.PoolConfig{
		URL: cfg.DatabaseURL, SessionURL: cfg.SessionURL, ApplicationName: "gem-brain", ConnectWait: cfg.DBConnectWait,
		OnRetry: func(err error, wait time.Duration) {
			m.Log.Warn().Err(err).Dur("retry_in", wait).Msg("database not reachable yet; waiting (GEM_DB_CONNECT_WAIT)")
		},
	}); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.closeAll()
		}
	}()
	if err := m.openTelemetry(cfg); err != nil {
		return err
	}
	if m.Migrate {
		if _, err := gemsql.Migrate(ctx, m.Pool, gemlog.Slog(m.Log), packs.Lines()...); err != nil {
			return err
		}
	}
	// Tool search ranks from a catalog in PostgreSQL. A search adds what the catalog lacks, so a failure here
	// only makes the first search slower.
	if err := postgres.ToolCatalogLoad(ctx, m.Pool, m.Registry.Tools()); err != nil {
		m.Log.Warn().Err(err).Msg("error loading the tool search catalog; the first search will load it")
	}
	m.Waiter = gemsql.NewReceiptWaiter(m.Pool, gemlog.Slog(m.Log))
	if err := m.Waiter.Start(ctx); err != nil {
		m.Waiter = nil
		return err
	}
	m.RunEnds = gemsql.NewListener(m.Pool, "run listener", []string{postgres.RunEndedChannel, postgres.RunEventChannel}, gemlog.Slog(m.Log))
	if err := m.RunEnds.Start(ctx); err != nil {
		m.RunEnds = nil
		return err
	}
	var client llm.Client
	info := api.LLMInfo{}
	if cfg.LLM.Configured() {
		if client, err = llm.New(cfg.LLM, m.Telemetry.Registerer()); err != nil {
			return err
		}
		info = api.LLMInfo{Configured: true, Provider: client.Provider(), Model: client.DefaultModel()}
	}
	// The rules planner always exists: it plans runs (unless the LLM does), answers GET /brain/help and
	// POST /operator/chat when no agent can.
	rules, err := planner.NewRulesPlanner(m.Registry, plans.Rules, cfg.Timezone, cfg.PhoneRegion)
	if err != nil {
		return err
	}
	var runPlanner brain.Planner = rules
	if cfg.Planner == PlannerLLM {
		if client == nil {
			return fmt.Errorf("GEM_BRAIN_PLANNER=llm needs an LLM: set GEM_LLM_MODEL and GEM_LLM_API_KEY (or GEM_LLM_BASE_URL)")
		}
		llmPlanner := planner.NewLLMPlanner(client, m.Registry, m.Pool)
		llmPlanner.MinCoverage = cfg.Chat.ToolSearchMinCoverage
		runPlanner = llmPlanner
	}
	m.Runs = run.NewService(m.Registry, runPlanner, m.Pool, m.Waiter)
	m.Runs.UseRules(rules)
	m.Runs.UseSentences(plans.Sentences)
	m.Runs.UseTimezone(cfg.Timezone)
	m.Chat = chat.New(client, m.Registry, m.Pool, m.Waiter, m.RunEnds, cfg.Chat)
	if reg := m.Telemetry.Registerer(); reg != nil {
		if err := m.Chat.CountStumbles(reg); err != nil {
			return err
		}
	}
	m.Chat.Start(ctx, &m.Log)
	if m.MCP, err = mcpserver.New(&mcpserver.Params{Config: cfg.MCP, Registry: m.Registry, Pool: m.Pool, Waiter: m.Waiter, Log: m.Log}); err != nil {
		return err
	}
	if m.Devices, err = devicehub.New(&devicehub.Params{Config: cfg.Devices, Registry: m.Registry, Pool: m.Pool, Log: m.Log}); err != nil {
		return err
	}
	m.Devices.OnCatalogChange(func(ctx context.Context, ch devicehub.CatalogChange) {
		m.MCP.SetDeviceTools(ch.Added, ch.Removed)
		if err := postgres.ToolCatalogLoad(ctx, m.Pool, ch.Added); err != nil {
			m.Log.Warn().Err(err).Msg("error adding device tools to the tool search catalog; a search will add them")
		}
	})
	if err := m.Devices.Start(ctx); err != nil {
		m.Devices = nil
		return err
	}
	riverCtx, stopRiverUI := context.WithCancel(context.Background())
	m.stopRiverUI = stopRiverUI
	if m.RiverUI, err = newRiverUI(riverCtx, m.Pool, m.Log); err != nil {
		return err
	}
	m.Server = api.New(&api.Params{
		Config: cfg.api(),
		Runs:   m.Runs, Rules: rules, Chat: m.Chat, Registry: m.Registry, Pool: m.Pool, Waiter: m.Waiter, RunEvents: m.RunEnds, LLM: info, Log: m.Log,
		MCP: m.MCP, Devices: m.Devices, Telemetry: m.Telemetry, River: m.RiverUI,
		HighLevelPlanner: integrationsplan.HighLevel{Pipeline: cfg.HighLevel.Pipeline}, Examples: openAPIExamples(),
	})
	if err := m.Server.Open(); err != nil {
		m.Server = nil
		return err
	}
	adm := m.Server.Admission()
	m.Log.Info().Str("url", m.Server.URL()).Str("registry", path).Int("tools", m.Registry.Len()).
		Str("planner", runPlanner.Name()).Bool("llm", info.Configured).Bool("auth", !cfg.AuthDisabled).
		Bool("admission_off", adm.Off).Int("max_in_flight", adm.MaxInFlight).Int("max_queue", max(adm.MaxQueue, 0)).Dur("queue_wait", adm.QueueWait).
		Str("version", brain.Version).Msg("brain serving")
	return nil
}

// Close stops serving (requests in flight may finish until ctx ends) and closes the database.
func (m *Main) Close(ctx context.Context) error {
	var err error
	// Chat turns are handed over first, at once: another brain takes them up while this one drains its
	// requests (a turn this brain goes on with meanwhile is fenced out at its next step, and its client is
	// answered with the taker's answer).
	m.handOver()
	if m.Server != nil {
		err = m.Server.Close(ctx)
	}
	if m.Runs != nil {
		m.Runs.Close() // the answers still being recorded, before the pool closes
	}
	m.closeAll()
	return err
}

func (m *Main) closeAll() {
	if m.stopRiverUI != nil {
		m.stopRiverUI()
	}
	if m.Devices != nil {
		// Devices' sockets are hijacked connections the HTTP server's shutdown does not wait for.
		m.Devices.Close()
	}
	m.handOver()
	if m.Waiter != nil {
		m.Waiter.Stop()
	}
	if m.RunEnds != nil {
		m.RunEnds.Stop()
	}
	if m.Pool != nil {
		m.Pool.Close()
	}
	m.closeTelemetry()
}

// newRiverUI builds River UI over the brain's pool: an insert-only River client (the brain runs no jobs)
// and River's own handler, mounted by the API under /studio/river. Its background services run until ctx ends.
func newRiverUI(ctx context.Context, pool *pgxpool.Pool, log zerolog.Logger) (*riverui.Handler, error) {
	logger := gemlog.Slog(log.With().Str("component", "river_ui").Logger())
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("error making River UI's client: %w", err)
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(client, nil), Logger: logger,
		Prefix: "/studio/river", JobListHideArgsByDefault: true})
	if err != nil {
		return nil, fmt.Errorf("error making River UI: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("error starting River UI: %w", err)
	}
	return h, nil
}

// handOver stops taking runs over and hands this brain's chat turns to the others (Chat.Stop; once).
func (m *Main) handOver() {
	if m.Chat == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Chat.Stop(ctx); err != nil {
		m.Log.Warn().Err(err).Msg("error handing chat turns over to other brains")
	}
}
