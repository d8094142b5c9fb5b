package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/devicehub"
	"github.com/gemhq/gem/brain/mcpserver"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/rs/zerolog"
)

// MCPCallerDefault is the caller `brain mcp` makes its calls as when -as is not given. Over stdio there is no
// bearer token: the host that starts the process holds the database's credentials, so it is trusted as the
// brain's configuration is, and the caller is recorded (kind service) with every permission unless an
// operator narrowed it. -as names another caller, which must exist (docs/governance.md).
const MCPCallerDefault = api.StdioCaller

// serveMCP serves MCP over stdio until the client closes stdin or a signal comes: brain mcp [-agent SLUG]
// [-as NAME] [-names portable|dotted]. It needs the database and the registry, not the HTTP service; stdout
// carries only the protocol, logs go to stderr.
func serveMCP(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agent := fs.String("agent", "", "serve this agent's tools and skills, and make the calls for it")
	as := fs.String("as", MCPCallerDefault, "the name recorded as who made the calls (and the user an agent's skills are resolved for)")
	names := fs.String("names", mcpserver.NamesPortable, "the names tools/list gives: portable ("+registry.PortableName(ospack.CreateNote)+", what model APIs accept) or dotted (GEM's "+ospack.CreateNote+"); tools/call takes either")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 || *as == "" || *names != mcpserver.NamesPortable && *names != mcpserver.NamesDotted {
		fmt.Fprintln(stderr, "usage: brain mcp [-agent SLUG] [-as NAME] [-names portable|dotted]")
		return 2
	}
	log, err := gemlog.New(stderr, "brain-mcp", getenv("GEM_LOG_LEVEL"), getenv("GEM_LOG_FORMAT"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	zerolog.DefaultContextLogger = &log
	cfg, err := ConfigFromEnv(getenv)
	if err == nil {
		cfg = cfg.WithDefaults()
		if cfg.DatabaseURL == "" {
			err = errors.New("DatabaseURL is required (set DATABASE_URL)")
		}
	}
	if err != nil {
		log.Error().Err(err).Msg("invalid configuration")
		return 2
	}
	if cfg.MCP.BaseURL == "" {
		cfg.MCP.BaseURL = brainURL("", getenv) // where the CLI finds the brain, for a held task's approval link
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, caller, closeAll, err := openMCP(ctx, cfg, log, *as, *agent)
	if err != nil {
		log.Error().Err(err).Msg("brain mcp did not start")
		return 1
	}
	defer closeAll()
	caller.DottedNames = *names == mcpserver.NamesDotted
	log.Info().Str("caller", caller.Name).Str("agent", caller.Agent).Msg("serving MCP on stdio")
	// GEM's stdio transport answers a malformed line with a JSON-RPC error and reads on (the SDK's ends the
	// session on it).
	err = srv.Run(ctx, &mcpserver.StdioTransport{Reader: stdin, Writer: stdout}, caller)
	var unknown *brain.Error
	if errors.As(err, &unknown) {
		log.Error().Err(err).Msg("brain mcp did not start")
		return 2
	}
	if err != nil && !errors.Is(err, io.EOF) {
		log.Error().Err(err).Msg("MCP session ended with an error")
		return 1
	}
	return 0
}

// openMCP loads the registry and connects to the database: what the MCP server needs, and nothing of the
// HTTP service (no tokens, no planner, no LLM). It returns the caller the session speaks as.
func openMCP(ctx context.Context, cfg Config, log zerolog.Logger, as, agent string) (srv *mcpserver.Server, caller mcpserver.Caller, closeAll func(), err error) {
	path, err := registry.Find(cfg.RegistryPath)
	if err != nil {
		return nil, caller, nil, err
	}
	reg, err := registry.Load(path)
	if err != nil {
		return nil, caller, nil, err
	}
	reg.SetSecrets(cfg.Secrets)
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{
		URL: cfg.DatabaseURL, SessionURL: cfg.SessionURL, ApplicationName: "gem-brain-mcp", ConnectWait: cfg.DBConnectWait,
	})
	if err != nil {
		return nil, caller, nil, err
	}
	if caller, err = stdioCaller(ctx, pool, as, agent); err != nil {
		pool.Close()
		return nil, caller, nil, err
	}
	waiter := gemsql.NewReceiptWaiter(pool, gemlog.Slog(log))
	if err := waiter.Start(ctx); err != nil {
		pool.Close()
		return nil, caller, nil, err
	}
	closeAll = func() {
		waiter.Stop()
		pool.Close()
	}
	srv, err = mcpserver.New(&mcpserver.Params{Config: cfg.MCP, Registry: reg, Pool: pool, Waiter: waiter, Log: log})
	if err != nil {
		closeAll()
		return nil, caller, nil, err
	}
	// No device connects here, but the tools of connected devices are served as /mcp serves them.
	hub, err := devicehub.New(&devicehub.Params{Config: cfg.Devices, Registry: reg, Pool: pool, Log: log})
	if err != nil {
		closeAll()
		return nil, caller, nil, err
	}
	hub.OnCatalogChange(func(_ context.Context, ch devicehub.CatalogChange) { srv.SetDeviceTools(ch.Added, ch.Removed) })
	if err := hub.Start(ctx); err != nil {
		closeAll()
		return nil, caller, nil, err
	}
	stopAll := closeAll
	closeAll = func() {
		hub.Close()
		stopAll()
	}
	return srv, caller, closeAll, nil
}

// stdioCaller is the caller `brain mcp` acts as (as, recording MCPCallerDefault), for agent: a caller limited
// to some agents speaks for its only one without -agent, and must name one of several.
func stdioCaller(ctx context.Context, db gemsql.DBTX, as, agent string) (mcpserver.Caller, error) {
	if as == MCPCallerDefault {
		if err := gemsql.CallerEnsure(ctx, db, as, gemsql.CallerService, []string{"*"}, "brain mcp over stdio, without -as"); err != nil {
			return mcpserver.Caller{}, err
		}
	}
	c, err := gemsql.CallerGet(ctx, db, as)
	switch {
	case errors.Is(err, gemsql.ErrNotFound):
		return mcpserver.Caller{}, fmt.Errorf("-as %s: no such caller; make it with brain callers add %s -grant PERMISSIONS, or leave -as out", as, as)
	case err != nil:
		return mcpserver.Caller{}, err
	case c.Revoked():
		return mcpserver.Caller{}, fmt.Errorf("-as %s: the caller is revoked", as)
	}
	if agent, err = brain.CallAgent(c.Name, c.Agents, agent); err != nil {
		return mcpserver.Caller{}, fmt.Errorf("-as %s: %s (-agent)", as, brain.AsError(err).Message)
	}
	return mcpserver.Caller{Name: c.Name, Agent: agent, Grants: c.Permissions, Reader: brain.ReaderOf(c.Name, c.Permissions)}, nil
}
