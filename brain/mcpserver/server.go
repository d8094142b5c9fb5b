// Package mcpserver serves GEM over the Model Context Protocol: every registry tool (or an agent's) as an MCP
// tool whose calls are enqueued, executed and receipted like any other GEM call, gem.get_receipt for calls
// that outlast a client's patience, and the skills catalog through the MCP Skills extension (SEP-2640). The
// brain mounts it at /mcp (streamable HTTP, stateless) and `brain mcp` serves it over stdio.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// Defaults of Config, and the names a client uses.
const (
	// CallWaitDefault is how long tools/call waits for a receipt before answering pending: well under the
	// minute many MCP clients wait for an answer.
	CallWaitDefault = 25 * time.Second
	// CallWaitMax bounds CallWait.
	CallWaitMax = 10 * time.Minute
	// ProgressIntervalDefault is how often a waiting tools/call sends a progress notification.
	ProgressIntervalDefault = time.Second

	// SkillsExtension is the MCP Skills extension's id (SEP-2640), declared in the server's capabilities.
	SkillsExtension = "io.modelcontextprotocol/skills"
	// GetReceiptTool is GEM's own tool: a call's receipt, by call id (listed as gem__get_receipt).
	GetReceiptTool = "gem.get_receipt"
	// AgentHeader and AgentQuery name the agent an HTTP client speaks for (either; both must agree).
	AgentHeader = brain.AgentHeader
	AgentQuery  = "agent"
	// NamesQuery chooses the names tools/list gives (?names=dotted for GEM's own); tools/call takes either.
	NamesQuery = "names"
	// NamesPortable (the default) lists tools by the names model APIs accept (registry.PortableName).
	NamesPortable = "portable"
	// NamesDotted lists tools by GEM's dotted names, for clients that map names themselves.
	NamesDotted = "dotted"
)

// Config configures the MCP server. Zero values mean the defaults.
type Config struct {
	// CallWait is how long tools/call (and gem.get_receipt) waits for a receipt; a call still running then is
	// answered {call_id, status: "pending"} and keeps running. Defaults to 25s (GEM_MCP_CALL_WAIT).
	CallWait time.Duration
	// ProgressInterval is how often a waiting call sends a progress notification to a client that asked for
	// them (a progressToken). Defaults to 1s.
	ProgressInterval time.Duration
	// TaskWait is how long a tools/call from a client that declared the tasks extension waits for a receipt
	// before answering with a task instead (docs/mcp-server.md#tasks). Defaults to 1s (GEM_MCP_TASK_WAIT).
	TaskWait time.Duration
	// TaskPollInterval is the pollIntervalMs a task suggests while its call is queued or runs (five times it
	// while a person has to decide). Defaults to 1s.
	TaskPollInterval time.Duration
	// BaseURL is the brain's URL as people reach it, for the approval link of a task held for approval:
	// GEM_BRAIN_URL; when empty, /mcp uses the URL its request came to, and `brain mcp` BaseURLDefault.
	BaseURL string
}

// BaseURLDefault is the brain's URL when nothing says otherwise: where make run serves it.
const BaseURLDefault = "http://127.0.0.1:8088"

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.CallWait == 0 {
		c.CallWait = CallWaitDefault
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = ProgressIntervalDefault
	}
	if c.TaskWait == 0 {
		c.TaskWait = TaskWaitDefault
	}
	if c.TaskPollInterval == 0 {
		c.TaskPollInterval = TaskPollIntervalDefault
	}
	return c
}

// Validate reports what is wrong with the configuration (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	if c.CallWait < 0 || c.CallWait > CallWaitMax {
		errs = append(errs, fmt.Errorf("CallWait must be between 0s and %s, not %s (GEM_MCP_CALL_WAIT)", CallWaitMax, c.CallWait))
	}
	if c.ProgressInterval < 0 {
		errs = append(errs, fmt.Errorf("ProgressInterval must not be negative, not %s", c.ProgressInterval))
	}
	if c.TaskWait < 0 || c.TaskWait > CallWaitMax {
		errs = append(errs, fmt.Errorf("TaskWait must be between 0s and %s, not %s (GEM_MCP_TASK_WAIT)", CallWaitMax, c.TaskWait))
	}
	if c.TaskPollInterval < time.Millisecond {
		errs = append(errs, fmt.Errorf("TaskPollInterval must be at least 1ms, not %s", c.TaskPollInterval))
	}
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("BaseURL must be an http(s) URL like https://gem.example.com, not %q (GEM_BRAIN_URL)", c.BaseURL))
		}
	}
	return errors.Join(errs...)
}

// Params are what the MCP server serves.
type Params struct {
	Config   Config
	Registry *registry.Registry
	Pool     *pgxpool.Pool
	Waiter   *gemsql.ReceiptWaiter
	Log      zerolog.Logger
}

// Caller is who makes MCP requests: the name recorded on its calls (the bearer token's name over HTTP), its
// permissions, and the agent it speaks for, if any. tools/list lists the tools its grants cover; with an agent,
// only the agent's (its available skills for the user Name), and the skills catalog is the agent's. Its calls
// are made for the agent, so the executor refuses a tool the agent's skills do not enable.
type Caller struct {
	Name  string
	Agent string
	// Grants are the caller's permissions (core_callers): a tool they do not cover is not listed, and the
	// executor refuses its calls.
	Grants registry.Grants
	// Reader is what the caller may read of calls (gem.get_receipt): its own, or everyone's with audit.
	Reader brain.Reader
	// DottedNames lists tools by GEM's dotted names instead of their portable ones (NamesDotted).
	DottedNames bool
}

// toolName is how the caller's tools/list names a tool GEM calls gem.
func (c Caller) toolName(gem string) string {
	if c.DottedNames {
		return gem
	}
	return registry.PortableName(gem)
}

// Server is GEM's MCP server: one mcp.Server for every client, HTTP or stdio, which learns who calls from the
// request's context.
type Server struct {
	cfg    Config
	reg    *registry.Registry
	pool   *pgxpool.Pool
	waiter *gemsql.ReceiptWaiter
	log    zerolog.Logger

	mcp  *mcp.Server
	http http.Handler

	// served are the tools served, by their MCP (portable) name: the registry's, the devices', GEM's own.
	servedMu sync.RWMutex
	served   map[string]*servedTool
}

// New builds the MCP server with every registry tool, gem.get_receipt and the skills catalog.
func New(p *Params) (*Server, error) {
	cfg := p.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, reg: p.Registry, pool: p.Pool, waiter: p.Waiter, log: p.Log}
	caps := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{},
		Resources: &mcp.ResourceCapabilities{},
	}
	caps.AddExtension(SkillsExtension, nil)
	caps.AddExtension(TasksExtension, nil)
	// The SDK logs every stateless request's session at info; the brain's request log already has one line
	// per request, so the SDK says only what went wrong.
	sdkLog := gemlog.Slog(p.Log.Level(max(p.Log.GetLevel(), zerolog.WarnLevel)))
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "gem", Title: "GEM", Version: brain.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLog,
		Capabilities: caps,
		// What a client sees depends on who it is (its agent), so no cache may share it.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	// Devices' tools join as their devices connect (SetDeviceTools).
	s.served = map[string]*servedTool{}
	s.addTools(p.Registry.OwnTools())
	s.addOwnTool(GetReceiptTool, getReceiptDefinition, s.getReceipt)
	s.addOwnTool(ApproveTool, approveDefinition, s.approve)
	s.mcp.AddReceivingMiddleware(s.toolMethods)
	s.mcp.AddReceivingMiddleware(s.taskMethods) // around toolMethods: a task skips the output schema's check
	if err := s.addSkills(); err != nil {
		return nil, err
	}
	if err := s.addTasks(); err != nil {
		return nil, err
	}
	s.mcp.AddReceivingMiddleware(endWithRequest)
	// Outermost, so that it also catches what the middleware above it does.
	s.mcp.AddReceivingMiddleware(s.recoverPanics)
	s.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: sdkLog})
	return s, nil
}

const instructions = `GEM runs tools for a business and records a receipt for every call.
A tool answers with its result. A call still running after a while answers {"call_id", "status": "pending"} and keeps running: call gem__get_receipt (gem.get_receipt) with that call_id for its receipt. A client that declares the tasks extension (io.modelcontextprotocol/tasks) gets a task instead, to poll with tasks/get.
A failed call answers isError with the receipt's error code and message.
Skills (io.modelcontextprotocol/skills: skills/list, skills/get) say how to use the tools together.`

// callerKey keys the Caller in a request's context.
type callerKey struct{}

// WithCaller returns ctx carrying the caller, which every handler reads.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// userOf is the user an agent's skills are resolved for: the caller's name, when it speaks for an agent.
func (c Caller) userOf() string {
	if c.Agent == "" {
		return ""
	}
	return c.Name
}

var agentSlugRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// ServeMCP serves one HTTP request to /mcp for an authenticated caller (the bearer token's name) holding
// grants. The agent, if any, comes from the X-GEM-Agent header or the ?agent= parameter; a caller limited to
// some agents (agents, when not nil) speaks for its only agent without naming it, and must name one of several
// (400). An unknown agent is a 404 before any MCP message is read, and an agent the caller may not act as a
// 403. ?names=dotted lists GEM's dotted names. The request's end (its client went away) ends its handler's
// waits.
func (s *Server) ServeMCP(w http.ResponseWriter, r *http.Request, caller string, grants registry.Grants, agents []string) {
	names := r.URL.Query().Get(NamesQuery)
	if names != "" && names != NamesPortable && names != NamesDotted {
		writeError(w, http.StatusBadRequest, &brain.Error{Code: brain.EINVALID,
			Message: fmt.Sprintf("?%s= is %s or %s, not %q", NamesQuery, NamesPortable, NamesDotted, names),
			Details: map[string]any{"field": NamesQuery}})
		return
	}
	header, query := r.Header.Get(AgentHeader), r.URL.Query().Get(AgentQuery)
	agent := header
	switch {
	case header != "" && query != "" && header != query:
		writeError(w, http.StatusBadRequest, brain.Errorf(brain.EINVALID, "the %s header (%q) and ?%s= (%q) name different agents",
			AgentHeader, header, AgentQuery, query))
		return
	case agent == "":
		agent = query
	}
	if agent != "" && !agentSlugRe.MatchString(agent) {
		writeError(w, http.StatusBadRequest, brain.Errorf(brain.EINVALID, "%q is not an agent slug", agent))
		return
	}
	agent, err := brain.CallAgent(caller, agents, agent)
	if err != nil {
		status := http.StatusForbidden
		if brain.ErrorCode(err) == brain.EINVALID {
			status = http.StatusBadRequest
		}
		writeError(w, status, brain.AsError(err))
		return
	}
	if agent != "" {
		if _, err := postgres.AgentGet(r.Context(), s.pool, agent); err != nil {
			e := brain.AsError(err)
			status := http.StatusInternalServerError
			switch e.Code {
			case brain.ENOTFOUND:
				status = http.StatusNotFound
			case brain.EUNAVAILABLE:
				status = http.StatusServiceUnavailable
			default:
				zerolog.Ctx(r.Context()).Error().Err(err).Msg("error reading the agent")
			}
			writeError(w, status, e)
			return
		}
	}
	c := Caller{Name: caller, Agent: agent, Grants: grants, Reader: brain.ReaderOf(caller, grants), DottedNames: names == NamesDotted}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ctx := context.WithValue(context.WithValue(r.Context(), requestKey{}, r.Context()), baseURLKey{}, scheme+"://"+r.Host)
	r = r.WithContext(WithCaller(ctx, c))
	r.Header.Del(jsonrpcIDHeader)
	answer := &httpAnswer{ResponseWriter: w, id: jsonNull}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The brain's body limit cuts a body sent without a length (one with a length too long never gets here).
			writeAnswer(w, http.StatusBadRequest, errorAnswer(nil, &rpcError{jsonrpc.CodeParseError, "parse error: the body could not be read: " + err.Error()}))
			return
		}
		msg, id, rerr := checkMessage(body)
		switch {
		case rerr != nil:
			status := http.StatusBadRequest
			if rerr.code == jsonrpc.CodeMethodNotFound || rerr.code == jsonrpc.CodeInvalidParams {
				status = http.StatusOK // a well-formed request, answered with an error as its handler would
			}
			writeAnswer(w, status, errorAnswer(id, rerr))
			return
		case msg.ignore:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if rerr := taskNameHeader(r.Header, msg); rerr != nil {
			writeAnswer(w, http.StatusBadRequest, errorAnswer(msg.id, rerr))
			return
		}
		if msg.id != nil {
			answer.id, answer.surrogate = msg.id, msg.surrogate
			r.Header.Set(jsonrpcIDHeader, string(msg.id))
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(msg.body)), int64(len(msg.body))
	}
	s.http.ServeHTTP(answer, r)
	answer.finish()
}

// writeError answers as the brain's API does: {"ok": false, "errors": [...]}.
func writeError(w http.ResponseWriter, status int, e *brain.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "errors": []*brain.Error{e}})
}

// Run serves one client over a transport (stdio) until it disconnects or ctx ends, which is a normal stop
// (nil). An agent that does not exist is a *brain.Error before anything is served.
func (s *Server) Run(ctx context.Context, t mcp.Transport, c Caller) error {
	if c.Agent != "" {
		if _, err := postgres.AgentGet(ctx, s.pool, c.Agent); err != nil {
			return err
		}
	}
	// Not the SDK's Server.Run, which logs a stop by signal as an error.
	ss, err := s.mcp.Connect(WithCaller(ctx, c), t, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-ended
		return nil
	case err := <-ended:
		return err
	}
}

// requestKey keys, in an HTTP request's context, that context itself: the SDK's stateless handler runs in a
// context that keeps the request's values but not its end (the client going away), which endWithRequest
// gives it back.
type requestKey struct{}

// endWithRequest ends a handler's context when its HTTP request's does (the client went away), so that no
// wait outlives the request that asked for it and the request frees its admission slot at once. A call the
// request made goes on: it is durable, and gets its receipt.
func endWithRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		request, ok := ctx.Value(requestKey{}).(context.Context)
		if !ok {
			return next(ctx, method, req) // stdio: notifications/cancelled and the session's end cancel
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(request, func() { cancel(errAbandoned) })
		defer stop()
		return next(ctx, method, req)
	}
}

// errAbandoned is why a handler's context ended when its client went away.
var errAbandoned = errors.New("the client went away")

// recoverPanics answers a handler's panic with a JSON-RPC internal error and logs it with the request's id,
// so that no request ends the process: the SDK runs each handler in a goroutine of its own, where nothing
// else recovers.
func (s *Server) recoverPanics(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		logCtx := s.logger(ctx).With().Str("method", method)
		if extra := req.GetExtra(); extra != nil && extra.Header.Get(jsonrpcIDHeader) != "" {
			logCtx = logCtx.Str("jsonrpc_id", extra.Header.Get(jsonrpcIDHeader))
		}
		log := logCtx.Logger()
		err = gemlog.Guarded(&log, "an MCP handler", func() error {
			res, err = next(ctx, method, req)
			return err
		})
		var panicked *gemlog.PanicError
		if errors.As(err, &panicked) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: the brain failed to handle %s (the failure is logged)", method)}
		}
		return res, encodableError(err, req)
	}
}

// encodableError mends an error whose data JSON cannot read, which would make its whole answer unwritable
// (the client got nothing): the SDK's ResourceNotFoundError quotes the URI Go's way (a DEL as \x7f), as it
// does for a URI no resource matches. The data is written again from the request's URI, or left out.
func encodableError(err error, req mcp.Request) error {
	var e *jsonrpc.Error
	if !errors.As(err, &e) || len(e.Data) == 0 || json.Valid(e.Data) {
		return err
	}
	mended := &jsonrpc.Error{Code: e.Code, Message: e.Message}
	if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && e.Code == mcp.CodeResourceNotFound {
		mended.Data, _ = json.Marshal(map[string]string{"uri": p.URI})
	}
	return mended
}

// internal logs an unexpected error and returns what the client is told: the brain's message for errors it
// knows (a database that cannot be reached), "internal error" otherwise.
func (s *Server) internal(ctx context.Context, err error, msg string) error {
	e := brain.AsError(err)
	if e.Code == brain.EINTERNAL {
		s.logger(ctx).Error().Err(err).Msg(msg)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: %s", msg, e.Message)}
}

// logger is the request's logger (with its request id) when there is one, else the server's.
func (s *Server) logger(ctx context.Context) *zerolog.Logger {
	if l := zerolog.Ctx(ctx); l.GetLevel() != zerolog.Disabled {
		return l
	}
	return &s.log
}
