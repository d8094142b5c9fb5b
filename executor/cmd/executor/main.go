// Command executor runs GEM's tool calls.
//
//	executor [run] [-migrate]          work calls until SIGINT/SIGTERM (the default command)
//	executor migrate                   apply River's and GEM's migrations, then exit
//	executor registry check [FILE]     check a registry file and summarise it (exit 1 if it is broken)
//	executor version                   print the version
//
// Configuration comes from the environment; see docs/operations.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/agentskills"
	"github.com/gemhq/gem/executor/business"
	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/rs/zerolog"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// handlers are the tool handlers built into this executor.
func handlers() executor.Handlers {
	h := executor.Handlers{}
	business.Register(h)
	agentskills.Register(h)
	return h
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runExecutor(args, stderr)
	case "migrate":
		return migrate(stderr)
	case "registry":
		if len(args) == 0 || args[0] != "check" {
			fmt.Fprintln(stderr, "usage: executor registry check [-json] [FILE]")
			return 2
		}
		return registryCheck(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, executor.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, "usage: executor [run [-migrate] | migrate | registry check [FILE] | version]")
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q (run, migrate, registry check, version)\n", cmd)
		return 2
	}
}

func runExecutor(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	migrateFirst := fs.Bool("migrate", false, "apply migrations before starting")
	registryPath := fs.String("registry", "", "registry file (default $GEM_REGISTRY or tools.registry.json)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log, err := executor.NewLogger(os.Stderr, os.Getenv("GEM_LOG_LEVEL"), os.Getenv("GEM_LOG_FORMAT"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg, err := executor.ConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error().Err(err).Msg("invalid configuration")
		return 2
	}
	if *registryPath != "" {
		cfg.RegistryPath = *registryPath
	}

	if addr := os.Getenv("GEM_PPROF_ADDR"); addr != "" {
		servePprof(addr, log)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &executor.Main{Config: cfg, Handlers: handlers(), Log: log, Migrate: *migrateFirst}
	if err := m.Open(ctx); err != nil {
		log.Error().Err(err).Msg("executor did not start")
		return 1
	}
	<-ctx.Done()
	stop()
	log.Info().Msg("stopping: draining running calls")
	drain := m.Executor.Config().DrainTimeout
	closeCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := m.Close(closeCtx); err != nil {
		log.Error().Err(err).Msg("executor did not stop cleanly")
		return 1
	}
	return 0
}

// servePprof serves Go's profiler (net/http/pprof) on addr, for measuring a running executor. Keep it on
// loopback: it has no authentication.
func servePprof(addr string, log zerolog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		log.Info().Str("addr", addr).Msg("serving pprof (GEM_PPROF_ADDR)")
		if err := srv.ListenAndServe(); err != nil {
			log.Error().Err(err).Msg("pprof server stopped")
		}
	}()
}

func migrate(stderr io.Writer) int {
	url := os.Getenv("DATABASE_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: url, ApplicationName: "gem-migrate"})
	if err != nil {
		fmt.Fprintln(stderr, "migrate:", err)
		return 1
	}
	defer pool.Close()
	res, err := gemsql.Migrate(ctx, pool, nil)
	if err != nil {
		fmt.Fprintln(stderr, "migrate:", err)
		return 1
	}
	fmt.Fprintf(stderr, "migrate: applied %d River and %d GEM migrations; the database is up to date\n", len(res.River), len(res.GEM))
	return 0
}

// toolSummary is one line of the registry summary.
type toolSummary struct {
	Name           string   `json:"name"`
	Mode           string   `json:"mode"`
	TimeoutMS      int64    `json:"timeout_ms"`
	OutsideEffects bool     `json:"outside_effects"`
	Handler        bool     `json:"handler"`
	RequiredEnv    []string `json:"required_env,omitempty"`
	MissingEnv     []string `json:"missing_env,omitempty"`
}

func registryCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := fs.Arg(0)
	if path == "" {
		path = os.Getenv("GEM_REGISTRY")
	}
	if path == "" {
		var err error
		if path, err = registry.Find(registry.DefaultPath); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	reg, err := registry.Load(path)
	if err != nil {
		if ce, ok := registry.AsCheckError(err); ok {
			fmt.Fprintf(stderr, "%s: %d %s\n", path, len(ce.Problems), plural(len(ce.Problems), "problem", "problems"))
			for _, p := range ce.Problems {
				fmt.Fprintln(stderr, "  "+p.String())
			}
			return 1
		}
		fmt.Fprintln(stderr, err)
		return 1
	}

	h := handlers()
	var tools []toolSummary
	for _, t := range reg.Tools() {
		s := toolSummary{Name: t.Name, Mode: string(t.Idempotency.Mode), TimeoutMS: t.TimeoutMS, OutsideEffects: t.HasOutsideEffects()}
		if handler, ok := h[t.Name]; ok {
			s.Handler = true
			s.RequiredEnv = handler.RequiredEnv
			for _, env := range handler.RequiredEnv {
				if os.Getenv(env) == "" {
					s.MissingEnv = append(s.MissingEnv, env)
				}
			}
		}
		tools = append(tools, s)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"path": path, "version": reg.Version, "tools": tools})
		return 0
	}

	domains, byDomain := reg.Domains()
	fmt.Fprintf(stdout, "%s: version %s, %d tools in %d domains: OK\n\n", path, reg.Version, reg.Len(), len(domains))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "domain\ttools\tnone\tsafe-retry\tkeyed\toutside effects\twith handler\t")
	for _, d := range domains {
		var none, safe, keyed, outside, handled int
		for _, t := range byDomain[d] {
			switch t.Idempotency.Mode {
			case registry.ModeNone:
				none++
			case registry.ModeSafeRetry:
				safe++
			case registry.ModeKeyed:
				keyed++
			}
			if t.HasOutsideEffects() {
				outside++
			}
			if _, ok := h[t.Name]; ok {
				handled++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", d, len(byDomain[d]), none, safe, keyed, outside, handled)
	}
	_ = tw.Flush()

	var missing, needsEnv []string
	for _, s := range tools {
		switch {
		case !s.Handler:
			missing = append(missing, s.Name)
		case len(s.MissingEnv) > 0:
			needsEnv = append(needsEnv, fmt.Sprintf("%s (set %s)", s.Name, strings.Join(s.MissingEnv, ", ")))
		}
	}
	sort.Strings(missing)
	fmt.Fprintf(stdout, "\n%d of %d tools have a handler in this executor.\n", reg.Len()-len(missing), reg.Len())
	if len(missing) > 0 {
		fmt.Fprintf(stdout, "Answer not_configured (no handler here): %s\n", strings.Join(missing, ", "))
	}
	if len(needsEnv) > 0 {
		fmt.Fprintf(stdout, "Answer not_configured until configured: %s\n", strings.Join(needsEnv, "; "))
	}
	var unknown []string
	for _, name := range h.Names() {
		if _, ok := reg.Tool(name); !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(stdout, "Handlers for tools this registry lacks (never run): %s\n", strings.Join(unknown, ", "))
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
