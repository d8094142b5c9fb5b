// Command executor runs GEM's tool calls.
//
//	executor [run] [-migrate] [-registry FILE]  work calls until SIGINT/SIGTERM (the default command)
//	executor migrate                            apply River's and GEM's migrations, then exit
//	executor registry check [-json] [FILE]      check a registry file and summarise it (exit 1 if it is broken)
//	executor mcp import [flags] SERVER          write registry entries for an MCP server's tools, for review
//	executor device [-registry FILE]            serve this machine's tools to a hub (docs/devices.md)
//	executor version                            print the version
//	executor help [COMMAND]                     the usage: commands, flags, environment (also -h, --help)
//
// Configuration comes from the environment; executor help lists it, docs/operations.md explains it.
package main

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/gemhq/gem/executor/remote"
	toolpacks "github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/rs/zerolog"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		// executor -h, executor --help: the whole usage (executor run -h prints run's).
		printUsage(stdout)
		return 0
	}
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runExecutor(args, stdout, stderr)
	case "migrate":
		return migrate(args, stdout, stderr)
	case "history":
		return history(args, stdout, stderr)
	case "device":
		return runDevice(args, stdout, stderr)
	case "registry":
		if len(args) > 0 && isHelpFlag(args[0]) {
			printCommandUsage(stdout, "registry check")
			return 0
		}
		if len(args) == 0 || args[0] != "check" {
			fmt.Fprintln(stderr, "executor registry: the only registry command is check")
			printShortUsage(stderr, "registry check")
			return 2
		}
		return registryCheck(args[1:], stdout, stderr)
	case "mcp":
		if len(args) > 0 && isHelpFlag(args[0]) {
			printCommandUsage(stdout, "mcp import")
			return 0
		}
		if len(args) == 0 || args[0] != "import" {
			fmt.Fprintln(stderr, "executor mcp: the only mcp command is import")
			printShortUsage(stderr, "mcp import")
			return 2
		}
		return mcpImport(args[1:], stdout, stderr)
	case "version":
		if len(args) > 0 && isHelpFlag(args[0]) {
			printCommandUsage(stdout, "version")
			return 0
		}
		fmt.Fprintln(stdout, executor.Version)
		return 0
	case "help":
		if len(args) > 0 {
			name := args[0]
			switch name {
			case "registry":
				name = "registry check"
			case "mcp":
				name = "mcp import"
			}
			if _, ok := commandUsage[name]; !ok {
				fmt.Fprintf(stderr, "executor help: unknown command %q (%s)\n", args[0], commandList)
				return 2
			}
			printCommandUsage(stdout, name)
			return 0
		}
		printUsage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "executor: unknown command %q (%s; executor help lists them)\n", cmd, commandList)
		return 2
	}
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// logger builds the process logger from GEM_LOG_LEVEL and GEM_LOG_FORMAT.
func logger(stderr io.Writer) (zerolog.Logger, error) {
	return gemlog.New(stderr, "executor", os.Getenv("GEM_LOG_LEVEL"), os.Getenv("GEM_LOG_FORMAT"))
}

// parseFlags parses a command's flags. It returns the exit code and false when the command should not go
// on: 0 after -h (usage on stdout), 2 after a bad flag (the error and the usage on stderr).
func parseFlags(fs *flag.FlagSet, name string, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printCommandUsage(stdout, name)
		return 0, false
	case err != nil:
		fmt.Fprintf(stderr, "executor %s: %v\n", name, err)
		printShortUsage(stderr, name)
		return 2, false
	}
	return 0, true
}

// parseNoArgFlags is parseFlags for a command that takes flags only: an argument is refused.
func parseNoArgFlags(fs *flag.FlagSet, name string, args []string, stdout, stderr io.Writer) (int, bool) {
	if code, ok := parseFlags(fs, name, args, stdout, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "executor %s: unexpected argument %q\n", name, fs.Arg(0))
		printShortUsage(stderr, name)
		return 2, false
	}
	return 0, true
}

func runExecutor(args []string, stdout, stderr io.Writer) int {
	fs, flags := runFlagSet()
	if code, ok := parseNoArgFlags(fs, "run", args, stdout, stderr); !ok {
		return code
	}
	log, err := logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg, err := executor.ConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error().Err(err).Msg("invalid configuration")
		return 2
	}
	if *flags.registry != "" {
		cfg.RegistryPath = *flags.registry
	}
	builtIn := packsFromEnv(os.Getenv)
	builtIn.reportProblems(log)

	if addr := os.Getenv("GEM_PPROF_ADDR"); addr != "" {
		servePprof(addr, log)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &executor.Main{Config: cfg, Handlers: builtIn.handlers(), Log: log, Migrate: *flags.migrate, Lines: toolpacks.Lines(), Extend: remote.Extend(log)}
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

func migrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if code, ok := parseNoArgFlags(fs, "migrate", args, stdout, stderr); !ok {
		return code
	}
	log, err := logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{
		URL: os.Getenv("DATABASE_URL"), SessionURL: os.Getenv("GEM_DATABASE_SESSION_URL"), ApplicationName: "gem-migrate",
	})
	if err != nil {
		fmt.Fprintln(stderr, "migrate:", err)
		return 1
	}
	defer pool.Close()
	res, err := gemsql.Migrate(ctx, pool, gemlog.Slog(log.With().Str("component", "migrate").Logger()), toolpacks.Lines()...)
	if err != nil {
		fmt.Fprintln(stderr, "migrate:", err)
		return 1
	}
	fmt.Fprintf(stderr, "migrate: applied %d River and %d GEM migrations; the database is up to date\n", len(res.River), len(res.GEM))
	return 0
}

// toolSummary is one line of the registry summary.
type toolSummary struct {
	Name           string `json:"name"`
	Mode           string `json:"mode"`
	TimeoutMS      int64  `json:"timeout_ms"`
	OutsideEffects bool   `json:"outside_effects"`
	// Implementation is go, rest or mcp.
	Implementation string `json:"implementation"`
	// Target is what a rest or mcp tool calls: "METHOD URL", or "server/tool".
	Target      string   `json:"target,omitempty"`
	Handler     bool     `json:"handler"`
	RequiredEnv []string `json:"required_env,omitempty"`
	MissingEnv  []string `json:"missing_env,omitempty"`
}

// mcpServerSummary is one MCP server of the registry summary.
type mcpServerSummary struct {
	Name string `json:"name"`
	// Transport is stdio or http.
	Transport string `json:"transport"`
	// Target is the stdio command line, or the URL (${ENV} references as written).
	Target      string   `json:"target"`
	Tools       int      `json:"tools"`
	RequiredEnv []string `json:"required_env,omitempty"`
	MissingEnv  []string `json:"missing_env,omitempty"`
}

// registryCheckResult is what registry check -json prints.
type registryCheckResult struct {
	Path     string             `json:"path"`
	OK       bool               `json:"ok"`
	Version  string             `json:"version,omitempty"`
	Problems []registry.Problem `json:"problems,omitempty"`
	Tools    []toolSummary      `json:"tools,omitempty"`
	// MCPServers are the registry's mcp_servers.
	MCPServers []mcpServerSummary `json:"mcp_servers,omitempty"`
	// SettingProblems are the tool packs' settings that are set but cannot be used, each naming its
	// variable (the executor starts all the same, and logs each).
	SettingProblems []string `json:"setting_problems,omitempty"`
}

func registryCheck(args []string, stdout, stderr io.Writer) int {
	fs, asJSON := registryCheckFlagSet()
	if code, ok := parseFlags(fs, "registry check", args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "executor registry check: one FILE at most, not %d\n", fs.NArg())
		printShortUsage(stderr, "registry check")
		return 2
	}
	printJSON := func(res registryCheckResult) {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	}
	// fail reports a registry that cannot be used: every problem (JSON on stdout with -json, else text on
	// stderr), exit 1.
	fail := func(path string, err error) int {
		ce, isCheck := registry.AsCheckError(err)
		if *asJSON {
			res := registryCheckResult{Path: path, OK: false}
			if isCheck {
				res.Problems = ce.Problems
			} else {
				res.Problems = []registry.Problem{{Message: err.Error()}}
			}
			printJSON(res)
			return 1
		}
		if isCheck {
			fmt.Fprintf(stderr, "%s: %d %s\n", path, len(ce.Problems), plural(len(ce.Problems), "problem", "problems"))
			for _, p := range ce.Problems {
				fmt.Fprintln(stderr, "  "+p.String())
			}
			return 1
		}
		fmt.Fprintln(stderr, err)
		return 1
	}

	path := fs.Arg(0)
	if path == "" {
		path = os.Getenv("GEM_REGISTRY")
	}
	if path == "" {
		found, err := registry.Find(registry.DefaultPath)
		if err != nil {
			return fail(registry.DefaultPath, err)
		}
		path = found
	}
	reg, err := registry.Load(path)
	if err != nil {
		return fail(path, err)
	}

	// The rest and mcp tools get their handlers as in run; nothing connects until a call.
	builtIn := packsFromEnv(os.Getenv)
	h := builtIn.handlers()
	closeRemote, err := remote.Register(context.Background(), reg, h, remote.Options{})
	if err != nil {
		return fail(path, err)
	}
	defer closeRemote()
	var tools []toolSummary
	mcpTools := map[string]int{}
	for _, t := range reg.Tools() {
		s := toolSummary{Name: t.Name, Mode: string(t.Idempotency.Mode), TimeoutMS: t.TimeoutMS, OutsideEffects: t.HasOutsideEffects(),
			Implementation: t.ImplementationType()}
		switch im := t.Implementation; t.ImplementationType() {
		case registry.ImplREST:
			s.Target = im.Method + " " + im.URL
		case registry.ImplMCP:
			s.Target = im.Server + "/" + im.RemoteTool
			mcpTools[im.Server]++
		}
		if handler, ok := h[t.Name]; ok {
			s.Handler = true
			s.RequiredEnv = handler.RequiredEnv
			s.MissingEnv = executor.MissingEnv(handler.RequiredEnv)
		}
		tools = append(tools, s)
	}
	var servers []mcpServerSummary
	for _, srv := range reg.MCPServers() {
		target := srv.URL
		if srv.Transport() == "stdio" {
			target = strings.Join(append([]string{srv.Command}, srv.Args...), " ")
		}
		required := remote.ServerEnvRefs(srv)
		servers = append(servers, mcpServerSummary{Name: srv.Name, Transport: srv.Transport(), Target: target, Tools: mcpTools[srv.Name],
			RequiredEnv: required, MissingEnv: executor.MissingEnv(required)})
	}
	var settingProblems []string
	for _, err := range builtIn.problems() {
		settingProblems = append(settingProblems, err.Error())
	}
	if *asJSON {
		printJSON(registryCheckResult{Path: path, OK: true, Version: reg.Version, Tools: tools, MCPServers: servers,
			SettingProblems: settingProblems})
		return 0
	}

	domains, byDomain := reg.Domains()
	fmt.Fprintf(stdout, "%s: version %s, %d tools in %d domains: OK\n\n", path, reg.Version, reg.Len(), len(domains))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "domain\ttools\tnone\tsafe-retry\tkeyed\trest\tmcp\toutside effects\twith handler\t")
	for _, d := range domains {
		var none, safe, keyed, rest, mcp, outside, handled int
		for _, t := range byDomain[d] {
			switch t.ImplementationType() {
			case registry.ImplREST:
				rest++
			case registry.ImplMCP:
				mcp++
			}
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
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", d, len(byDomain[d]), none, safe, keyed, rest, mcp, outside, handled)
	}
	_ = tw.Flush()
	printRemote(stdout, tools, servers)

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
	if len(settingProblems) > 0 {
		fmt.Fprintf(stdout, "Settings that cannot be used (the tools that need them will not work until they are fixed):\n")
		for _, p := range settingProblems {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
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

// printRemote lists the registry's MCP servers and its rest and mcp tools, with the variables still unset.
func printRemote(w io.Writer, tools []toolSummary, servers []mcpServerSummary) {
	if len(servers) > 0 {
		fmt.Fprint(w, "\nMCP servers (connected on a tool's first call):\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range servers {
			unset := ""
			if len(s.MissingEnv) > 0 {
				unset = "set " + strings.Join(s.MissingEnv, ", ")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d %s\t%s\n", s.Name, s.Transport, s.Target, s.Tools, plural(s.Tools, "tool", "tools"), unset)
		}
		_ = tw.Flush()
	}
	var remoteTools []toolSummary
	for _, t := range tools {
		if t.Implementation != registry.ImplGo {
			remoteTools = append(remoteTools, t)
		}
	}
	if len(remoteTools) == 0 {
		return
	}
	fmt.Fprint(w, "\nTools that are not Go handlers:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range remoteTools {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name, t.Implementation, t.Target)
	}
	_ = tw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
