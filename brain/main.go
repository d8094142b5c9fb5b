package brain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
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
	Service  *Service
	Agents   *Agents
	Chat     *Chat
	Server   *Server
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
	if m.Pool, err = gemsql.NewPool(ctx, gemsql.PoolConfig{
		URL: cfg.DatabaseURL, ApplicationName: "gem-brain", ConnectWait: cfg.DBConnectWait,
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
	if m.Migrate {
		if _, err := gemsql.Migrate(ctx, m.Pool, nil); err != nil {
			return err
		}
	}
	m.Waiter = gemsql.NewReceiptWaiter(m.Pool, nil)
	if err := m.Waiter.Start(ctx); err != nil {
		m.Waiter = nil
		return err
	}
	var llm LLM
	info := LLMInfo{}
	if cfg.LLM.Configured() {
		if llm, err = NewLLM(cfg.LLM); err != nil {
			return err
		}
		info = LLMInfo{Configured: true, Provider: llm.Provider(), Model: llm.DefaultModel()}
	}
	var planner Planner
	switch cfg.Planner {
	case PlannerLLM:
		if llm == nil {
			return fmt.Errorf("GEM_BRAIN_PLANNER=llm needs an LLM: set GEM_LLM_MODEL and GEM_LLM_API_KEY (or GEM_LLM_BASE_URL)")
		}
		planner = NewLLMPlanner(llm, m.Registry)
	default:
		if planner, err = NewRulesPlanner(m.Registry, nil, cfg.Timezone); err != nil {
			return err
		}
	}
	m.Service = NewService(m.Registry, planner, m.Pool, m.Waiter, m.Log)
	m.Agents = &Agents{pool: m.Pool, reg: m.Registry}
	m.Chat = NewChat(llm, m.Registry, m.Agents, m.Pool, m.Waiter, cfg.Chat, m.Log)
	m.Server = NewServer(cfg, m.Service, m.Agents, m.Chat, m.Registry, m.Pool, m.Waiter, info, m.Log)
	if err := m.Server.Open(); err != nil {
		m.Server = nil
		return err
	}
	m.Log.Info().Str("url", m.Server.URL()).Str("registry", path).Int("tools", m.Registry.Len()).
		Str("planner", planner.Name()).Bool("llm", info.Configured).Bool("auth", !cfg.AuthDisabled).Str("version", Version).Msg("brain serving")
	return nil
}

// Close stops serving (requests in flight may finish until ctx ends) and closes the database.
func (m *Main) Close(ctx context.Context) error {
	var err error
	if m.Server != nil {
		err = m.Server.Close(ctx)
	}
	m.closeAll()
	return err
}

func (m *Main) closeAll() {
	if m.Waiter != nil {
		m.Waiter.Stop()
	}
	if m.Pool != nil {
		m.Pool.Close()
	}
}

// NewLogger returns the process logger: JSON lines, or a console format (GEM_LOG_FORMAT=console); level is
// debug, info (the default), warn or error (GEM_LOG_LEVEL).
func NewLogger(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zerolog.ParseLevel(strings.ToLower(level)); err != nil {
			return zerolog.Nop(), errors.New("GEM_LOG_LEVEL: " + err.Error())
		}
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("service", "brain").Logger(), nil
}
