package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gemhq/gem/executor/remote"
	"github.com/gemhq/gem/registry"
	"github.com/rs/zerolog"
)

// mcpImportTimeout bounds connecting to the server and listing its tools.
const mcpImportTimeout = 2 * time.Minute

// mcpImport is executor mcp import: it writes registry entries for an MCP server's tools. Exit 0 with the
// document written, 1 when the server cannot be reached or listed, 2 on a usage error.
func mcpImport(args []string, stdout, stderr io.Writer) int {
	fs, flags := mcpImportFlagSet()
	if code, ok := parseFlags(fs, "mcp import", args, stdout, stderr); !ok {
		return code
	}
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "executor mcp import: "+format+"\n", a...)
		printShortUsage(stderr, "mcp import")
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError("name the server: SERVER")
	}
	name, command := rest[0], rest[1:]
	if strings.HasPrefix(name, "-") {
		return usageError("%q: flags go before SERVER", name)
	}
	if len(command) > 0 {
		if command[0] != "--" || len(command) == 1 {
			return usageError("unexpected argument %q after SERVER (flags go before SERVER; a stdio command goes after --)", command[0])
		}
		command = command[1:]
	}
	if t := time.Duration(*flags.timeoutMS) * time.Millisecond; t < registry.TimeoutMin || t > registry.TimeoutMax {
		return usageError("-timeout-ms %d is outside the allowed %d..%d", *flags.timeoutMS, registry.TimeoutMin.Milliseconds(), registry.TimeoutMax.Milliseconds())
	}

	var (
		server  *registry.MCPServer
		reg     *registry.Registry
		regPath string
	)
	switch {
	case *flags.url != "" && len(command) > 0:
		return usageError("give -url (an HTTP server) or a command after -- (a stdio server), not both")
	case *flags.url != "" || len(command) > 0:
		if *flags.registry != "" {
			return usageError("-registry names a registry whose server to import; with -url or a command after --, the server is given here")
		}
		var err error
		if server, err = adHocServer(name, *flags.url, *flags.headers, *flags.env, command); err != nil {
			return usageError("%v", err)
		}
	default:
		if len(*flags.headers) > 0 || len(*flags.env) > 0 {
			return usageError("-header and -env describe a server given here (with -url or a command after --), not one of the registry")
		}
		regPath = *flags.registry
		if regPath == "" {
			regPath = os.Getenv("GEM_REGISTRY")
		}
		if regPath == "" {
			found, err := registry.Find(registry.DefaultPath)
			if err != nil {
				fmt.Fprintln(stderr, "executor mcp import:", err)
				return 1
			}
			regPath = found
		}
		var err error
		if reg, err = registry.Load(regPath); err != nil {
			fmt.Fprintf(stderr, "executor mcp import: %s: %v\n", regPath, err)
			return 1
		}
		var ok bool
		if server, ok = reg.MCPServer(name); !ok {
			var known []string
			for _, s := range reg.MCPServers() {
				known = append(known, s.Name)
			}
			if len(known) == 0 {
				known = []string{"none"}
			}
			return usageError("%s has no MCP server %q in mcp_servers (it has: %s); add it there, or give -url or a command after --",
				regPath, name, strings.Join(known, ", "))
		}
	}

	log, err := logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if os.Getenv("GEM_LOG_LEVEL") == "" {
		log = log.Level(zerolog.WarnLevel) // the summary below says what happened
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, mcpImportTimeout)
	defer cancel()
	opts := remote.ImportOptions{Prefix: *flags.prefix, TimeoutMS: *flags.timeoutMS, Log: log}
	if reg != nil {
		opts.Version = reg.Version
	}
	res, err := remote.Import(ctx, server, opts)
	if err != nil {
		fmt.Fprintln(stderr, "executor mcp import:", err)
		return 1
	}

	data, err := json.MarshalIndent(res.Document, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "executor mcp import:", err)
		return 1
	}
	data = append(data, '\n')
	dest := "stdout"
	if *flags.out != "" {
		dest = *flags.out
		if err := os.WriteFile(*flags.out, data, 0o644); err != nil {
			fmt.Fprintln(stderr, "executor mcp import:", err)
			return 1
		}
	} else if _, err := stdout.Write(data); err != nil {
		fmt.Fprintln(stderr, "executor mcp import:", err)
		return 1
	}

	fmt.Fprintf(stderr, "executor mcp import: %d %s of MCP server %s (%s) written to %s:\n",
		len(res.Tools), plural(len(res.Tools), "tool", "tools"), server.Name, server.Transport(), dest)
	for _, t := range res.Document.Tools {
		fmt.Fprintf(stderr, "  %s  (tool %s; %s, %s)\n", t.Name, t.Implementation.RemoteTool, strings.Join(t.Permissions, " "), t.Idempotency.Mode)
	}
	notes := res.Notes
	if reg != nil {
		for _, t := range res.Tools {
			if _, ok := reg.Tool(t.Name); ok {
				notes = append(notes, fmt.Sprintf("%s is already in %s: replace that entry when merging", t.Name, regPath))
			}
		}
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "note: "+n)
	}
	fmt.Fprintln(stderr, "Review the entries (the permissions and idempotency come from the server's own hints), then merge them into the registry and run executor registry check: docs/mcp-tools.md.")
	return 0
}

// adHocServer is the server described by mcp import's flags, checked as the registry would check it.
func adHocServer(name, url string, headers, env, command []string) (*registry.MCPServer, error) {
	s := &registry.MCPServer{Name: name, URL: url}
	if len(command) > 0 {
		s.Command, s.Args = command[0], command[1:]
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return nil, fmt.Errorf("-header %q is not Name: value", h)
		}
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	for _, e := range env {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("-env %q is not NAME=value", e)
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
	doc, err := json.Marshal(map[string]any{"version": "1", "tools": []any{}, "mcp_servers": map[string]any{name: s}})
	if err != nil {
		return nil, err
	}
	if _, err := registry.Parse(doc); err != nil {
		ce, ok := registry.AsCheckError(err)
		if !ok {
			return nil, err
		}
		var msgs []string
		for _, p := range ce.Problems {
			msgs = append(msgs, p.String())
		}
		sort.Strings(msgs)
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return s, nil
}
