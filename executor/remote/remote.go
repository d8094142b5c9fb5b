// Package remote runs the registry tools that are not Go handlers: a rest tool is one HTTP request
// described by its registry entry, an mcp tool is a tool of an MCP server the registry names, a script tool
// is JavaScript in the entry, run in GEM's sandbox. Register turns
// each such entry into an ordinary executor.Handler, so its calls are validated, deduplicated, timed out
// and receipted like any other.
package remote

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/rs/zerolog"
)

// Options configure Register.
type Options struct {
	// Getenv reads the ${NAME} references of URLs, headers and MCP server settings. Defaults to os.Getenv.
	Getenv func(string) string
	// HTTPClient sends rest calls. Defaults to a client without a timeout of its own: each call is bounded
	// by its tool's timeout_ms.
	HTTPClient *http.Client
	// Log receives connection events (an MCP server started, lost, reconnected).
	Log zerolog.Logger
}

// Register adds a handler to h for every rest and mcp tool of reg, and returns what closes the MCP
// connections it opens (lazily, on a tool's first call). A Go handler already in h for such a tool is an
// error: the registry says the tool is not Go.
func Register(ctx context.Context, reg *registry.Registry, h executor.Handlers, opts Options) (func(), error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	minBytes, err := base64MinBytes(opts.Getenv)
	if err != nil {
		return nil, err
	}
	pool := newMCPPool(reg, opts)
	pool.base64MinBytes = minBytes
	for _, t := range reg.Tools() {
		var handler executor.Handler
		switch t.ImplementationType() {
		case registry.ImplREST:
			handler = restHandler(t, opts)
		case registry.ImplMCP:
			handler = pool.handler(t)
		case registry.ImplScript:
			handler = scriptHandler(t)
		default:
			continue
		}
		if _, dup := h[t.Name]; dup {
			return nil, fmt.Errorf("tool %s: the registry gives it a %s implementation, but the executor also has a Go handler for it", t.Name, t.ImplementationType())
		}
		h.Add(t.Name, handler)
	}
	return pool.close, nil
}

// Extend is executor.Main's Extend for the executor command: Register with the process environment.
func Extend(log zerolog.Logger) func(ctx context.Context, reg *registry.Registry, h executor.Handlers) (func(), error) {
	return func(ctx context.Context, reg *registry.Registry, h executor.Handlers) (func(), error) {
		return Register(ctx, reg, h, Options{Log: log.With().Str("component", "remote").Logger()})
	}
}
