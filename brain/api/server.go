// Package api is the brain's HTTP API, and the only package that knows echo: routes, authentication,
// decoding request bodies and parameters into typed params (refusing at the edge what the rest of GEM
// cannot store), and the one table that turns error codes into HTTP statuses. Client is its Go client.
package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/highlevel"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/gemhq/gem/sql/testsignal"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/rs/zerolog"
)

// Defaults of Config.
const (
	// AddrDefault is where the HTTP service listens.
	AddrDefault = "127.0.0.1:8088"
	// MaxBodyDefault is the largest request body accepted, in bytes.
	MaxBodyDefault = 1 << 20
	// LongPollMax is the longest ?wait= of GET /calls/{id}.
	LongPollMax = 60 * time.Second
	// DefaultAgentDefault is the agent POST /operator/chat talks to (installed by the migrations).
	DefaultAgentDefault = "office-assistant"
)

// Token is a bearer token and the name recorded as who made the request.
type Token struct {
	Name  string
	Value string
}

// ParseTokens parses "name:token" entries (or bare tokens, named token-1, token-2, ...) separated by sep.
// Blank entries and lines starting with # are skipped.
func ParseTokens(s, sep string) []Token {
	var out []Token
	for _, entry := range strings.Split(s, sep) {
		entry = strings.TrimSpace(entry)
		if entry == "" || strings.HasPrefix(entry, "#") {
			continue
		}
		name, value, ok := strings.Cut(entry, ":")
		if !ok {
			name, value = fmt.Sprintf("token-%d", len(out)+1), entry
		}
		out = append(out, Token{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
	}
	return out
}

// Config configures the HTTP API. Zero values mean the defaults.
type Config struct {
	// Addr is the listen address; ":0" picks a free port. Defaults to 127.0.0.1:8088 (GEM_BRAIN_ADDR).
	Addr string
	// Tokens are the accepted bearer tokens. Required unless AuthDisabled.
	Tokens []Token
	// AuthDisabled serves without authentication. Defaults to false.
	AuthDisabled bool
	// MaxBody is the largest request body in bytes. Defaults to 1 MiB (GEM_BRAIN_MAX_BODY).
	MaxBody int64
	// ToolSearchMinCoverage is the coverage below which GET /brain/tools?q= answers that no tool fits
	// (postgres.ToolsFit); 0 returns whatever matches.
	ToolSearchMinCoverage float64
	// DefaultAgent is the agent POST /operator/chat talks to. Defaults to office-assistant
	// (GEM_BRAIN_DEFAULT_AGENT).
	DefaultAgent string
	// HighLevel configures POST HighLevelWebhookPath (GEM_HIGHLEVEL_WEBHOOK_PUBLIC_KEYS, GEM_PHONE_REGION).
	// The zero value checks signatures with HighLevel's published key.
	HighLevel HighLevelWebhookConfig
	// Studio configures the web console at /studio (docs/studio.md).
	Studio StudioConfig
	// Admission limits the routes that plan, enqueue and wait (overload.go; GEM_BRAIN_MAX_IN_FLIGHT,
	// GEM_BRAIN_MAX_QUEUE, GEM_BRAIN_QUEUE_WAIT). Its defaults depend on the database pool: New sets them.
	Admission AdmissionConfig
	// Conns bound how long a client may take to send a request and how many connections one address may
	// hold (conns.go; GEM_BRAIN_HEADER_TIMEOUT, GEM_BRAIN_BODY_TIMEOUT, GEM_BRAIN_IDLE_TIMEOUT,
	// GEM_BRAIN_MAX_CONNS_PER_CLIENT).
	Conns ConnLimits
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = AddrDefault
	}
	if c.MaxBody == 0 {
		c.MaxBody = MaxBodyDefault
	}
	if c.DefaultAgent == "" {
		c.DefaultAgent = DefaultAgentDefault
	}
	if c.Studio.SessionTTL == 0 {
		c.Studio.SessionTTL = StudioSessionTTLDefault
	}
	c.Conns = c.Conns.WithDefaults()
	return c
}

// Validate reports what is wrong with the configuration (after WithDefaults), naming the variables to set.
func (c Config) Validate() error {
	var errs []error
	if !c.AuthDisabled && len(c.Tokens) == 0 {
		errs = append(errs, errors.New("no bearer tokens: set GEM_BRAIN_TOKENS or GEM_BRAIN_TOKEN_FILE (or GEM_BRAIN_AUTH=off to serve without authentication)"))
	}
	names := map[string]bool{}
	for _, t := range c.Tokens {
		if len(t.Value) < 16 {
			errs = append(errs, fmt.Errorf("token %q is shorter than 16 characters", t.Name))
		}
		switch {
		case !gemsql.CallerNameRe.MatchString(t.Name) || strings.HasPrefix(t.Name, "sql:"):
			errs = append(errs, fmt.Errorf("token name %q: a caller's name is letters, digits and _.:@- (up to 128), not starting with sql:", t.Name))
		case reservedCallerName(t.Name) != "":
			errs = append(errs, fmt.Errorf("token name %q: %s", t.Name, reservedCallerName(t.Name)))
		case names[t.Name]:
			errs = append(errs, fmt.Errorf("token name %q is given twice", t.Name))
		}
		names[t.Name] = true
	}
	if c.Studio.SessionTTL < time.Minute {
		errs = append(errs, fmt.Errorf("the studio's session TTL must be at least 1m, not %s (GEM_STUDIO_SESSION_TTL)", c.Studio.SessionTTL))
	}
	if c.MaxBody < 1024 {
		errs = append(errs, fmt.Errorf("MaxBody must be at least 1024 bytes, not %d", c.MaxBody))
	}
	if !agentSlugRe.MatchString(c.DefaultAgent) {
		errs = append(errs, fmt.Errorf("DefaultAgent %q is not an agent slug (GEM_BRAIN_DEFAULT_AGENT)", c.DefaultAgent))
	}
	if err := c.Admission.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Conns.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

var agentSlugRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// LLMInfo says which LLM the brain uses, for /health.
type LLMInfo struct {
	Configured bool   `json:"configured"`
	Provider   string `json:"provider,omitempty"`
	Model      string `json:"model,omitempty"`
}

// Server is the brain's HTTP service.
type Server struct {
	cfg    Config
	runs   *run.Service
	rules  *planner.RulesPlanner
	chat   *chat.Chat
	reg    *registry.Registry
	pool   *pgxpool.Pool
	waiter *gemsql.ReceiptWaiter
	// runEvents hears runs' events recorded (postgres.RunEventChannel): GET /brain/runs/{id}/events waits on it.
	runEvents *gemsql.Listener
	log       zerolog.Logger
	llm       LLMInfo
	// highLevel plans the HighLevel webhook's events (highlevel_webhook.go); nil: the webhook answers 503.
	highLevel highlevel.Planner
	// tokens keeps what the brain read of callers and tokens, and slows addresses that send bad ones
	// (authguard.go).
	tokens *tokenGuard
	studio StudioConfig
	// closing is closed when the server starts shutting down, ending the studio's event streams.
	closing chan struct{}
	// admission limits the expensive routes (overload.go); nil: no limit.
	admission *limiter
	// description is the API's OpenAPI description (openapi.go).
	description []byte

	echo *echo.Echo
	http *http.Server
	ln   net.Listener
	done chan error

	// TestSignals are events a test of the brain waits for; they do nothing unless the test inits them.
	TestSignals ServerTestSignals
}

// ServerTestSignals are the server's events a test waits for instead of sleeping.
type ServerTestSignals struct {
	// ConnCounted is a client's address (its host) once a connection from it was accepted and counted
	// against MaxConnsPerClient.
	ConnCounted testsignal.Signal[string]
	// ConnReleased is a client's address (its host) once one of its counted connections was closed and
	// its place given back.
	ConnReleased testsignal.Signal[string]
	// SlotFreed is an admission slot given back to the free ones (not handed to a request in line).
	SlotFreed testsignal.Signal[struct{}]
	// LineChanged is the admission line's length after a request joined or left it.
	LineChanged testsignal.Signal[int]
}

// Params are what the server serves.
type Params struct {
	Config Config
	Runs   *run.Service
	// Rules is the rules planner, whose knowledge GET /brain/help shows (whichever planner runs plan).
	Rules *planner.RulesPlanner
	Chat  *chat.Chat
	// Registry, Pool and Waiter serve the call and receipt routes.
	Registry *registry.Registry
	Pool     *pgxpool.Pool
	Waiter   *gemsql.ReceiptWaiter
	// RunEvents is a started listener on postgres.RunEventChannel and postgres.RunEndedChannel (the run
	// events' streams wait on both).
	RunEvents *gemsql.Listener
	LLM       LLMInfo
	Log       zerolog.Logger
	// MCP serves the Model Context Protocol at /mcp (brain/mcpserver); nil serves no /mcp.
	MCP MCPHandler
	// Devices accepts devices' WebSockets at DeviceConnectPath (brain/devicehub); nil accepts none.
	Devices http.Handler
	// Telemetry counts requests and traces them, and serves /metrics (docs/observability.md); nil: none.
	Telemetry *telemetry.Telemetry
	// River is River UI, served to admins under /studio/river; nil serves none.
	River http.Handler
	// HighLevelPlanner decides which call a HighLevel webhook event makes (the integrations pack's); nil
	// answers every delivery 503.
	HighLevelPlanner highlevel.Planner
	// Examples are the OpenAPI description's examples that name tools (which the api does not); the zero
	// value describes the routes without them.
	Examples OpenAPIExamples
}

// MCPHandler serves one request to /mcp for the caller its bearer token names, which holds grants and may
// act only as agents (nil: any).
type MCPHandler interface {
	ServeMCP(w http.ResponseWriter, r *http.Request, caller string, grants registry.Grants, agents []string)
}

// New builds the HTTP service.
func New(p *Params) *Server {
	s := &Server{cfg: p.Config.WithDefaults(), runs: p.Runs, rules: p.Rules, chat: p.Chat, reg: p.Registry, pool: p.Pool, waiter: p.Waiter, runEvents: p.RunEvents,
		llm: p.LLM, log: p.Log, highLevel: p.HighLevelPlanner, closing: make(chan struct{}), tokens: newTokenGuard()}
	s.studio = s.cfg.Studio
	poolSize := 0
	if p.Pool != nil {
		poolSize = int(p.Pool.Config().MaxConns)
	}
	s.cfg.Admission = s.cfg.Admission.WithDefaults(poolSize)
	if !s.cfg.Admission.Off {
		s.admission = newLimiter(s.cfg.Admission)
		s.admission.testSignals.slotFreed = &s.TestSignals.SlotFreed
		s.admission.testSignals.lineChanged = &s.TestSignals.LineChanged
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	s.instrument(e, p.Telemetry) // first: it sees every request and its final status; serves /metrics
	e.Use(middleware.RequestID())
	e.Use(s.logRequests)
	e.Use(retryAfter)
	e.Use(recoverPanics)
	e.Use(middleware.BodyLimit(strconv.FormatInt(s.cfg.MaxBody, 10) + "B"))
	e.Use(readBodyWithin(s.cfg.Conns.BodyTimeout))
	e.Use(checkParams)

	// Each route is registered with the middleware its access calls for — authentication per route (not a
	// group), so an unknown route or method still answers 404 or 405; admin or approve on top where the
	// route needs it — and, for what plans, enqueues calls and waits for receipts, the admission limiter
	// (overload.go), after authentication: cheap reads and streams never are. The same entries describe the
	// API at GET /openapi.json (openapi.go).
	var served []route
	for _, r := range s.routes(p) {
		if r.off {
			continue
		}
		if !r.registered {
			s.register(e, r)
		}
		served = append(served, r)
	}
	description, err := s.describe(served)
	if err != nil {
		panic(err) // the routes' table is the program's: a mistake in it is a bug, found by every test
	}
	s.description = description
	s.mountStudio(e, p.River)
	s.echo = e
	return s
}

// Open records the callers the configuration names (its tokens), binds the listener (errors come back at
// once) and serves in the background.
func (s *Server) Open() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ensureCallers(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", s.cfg.Addr, err)
	}
	s.ln = limitPerClient(ln, s.cfg.Conns.MaxConnsPerClient, &s.TestSignals.ConnCounted, &s.TestSignals.ConnReleased)
	s.http = &http.Server{Handler: s.echo, ReadHeaderTimeout: s.cfg.Conns.HeaderTimeout, IdleTimeout: s.cfg.Conns.IdleTimeout}
	s.done = make(chan error, 1)
	go func() {
		err := s.http.Serve(s.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return nil
}

// Route is a method and path template the server answers.
type Route struct {
	Method, Path string
}

// Routes lists every route of the server's router (the authorization matrix test enumerates them).
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.echo.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}

// Admission is the admission limit the server applies, with its defaults (overload.go).
func (s *Server) Admission() AdmissionConfig { return s.cfg.Admission }

// URL is the server's base URL (useful with Addr ":0").
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops accepting requests and lets those in flight finish until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	close(s.closing)
	err := s.http.Shutdown(ctx)
	if serveErr := <-s.done; err == nil {
		err = serveErr
	}
	return err
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503 that does not compute its own (overload
// does): the database is away, and a restart takes seconds.
const unavailableRetryAfter = 2

// retryAfter gives every 503 a Retry-After: whichever handler answers it (an error, a run or a chat whose
// database went away, the studio's error page), the client is told when to try again.
func retryAfter(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Before(func() {
			if res.Status == http.StatusServiceUnavailable && res.Header().Get("Retry-After") == "" {
				res.Header().Set("Retry-After", strconv.Itoa(unavailableRetryAfter))
			}
		})
		return next(c)
	}
}

// errorStatus is the one place error codes become HTTP statuses.
var errorStatus = map[string]int{
	brain.EINVALID:      http.StatusBadRequest,
	brain.EUNAUTHORIZED: http.StatusUnauthorized,
	brain.EFORBIDDEN:    http.StatusForbidden,
	brain.ENOTFOUND:     http.StatusNotFound,
	brain.EMETHOD:       http.StatusMethodNotAllowed,
	brain.ECONFLICT:     http.StatusConflict,
	brain.EKEYREUSED:    http.StatusUnprocessableEntity,
	brain.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	brain.EUNAVAILABLE:  http.StatusServiceUnavailable,
	brain.ENOLLM:        http.StatusServiceUnavailable,
	brain.EOVERLOADED:   http.StatusServiceUnavailable,
	brain.ETOOMANY:      http.StatusTooManyRequests,
	brain.EINTERNAL:     http.StatusInternalServerError,
	brain.ENOPLAN:       http.StatusOK,
	brain.ETIMEOUT:      http.StatusOK,
	brain.ECALLFAILED:   http.StatusOK,
	brain.EAWAITING:     http.StatusOK,
	brain.ELLMREJECTED:  http.StatusUnprocessableEntity,

	brain.ETOOLITERATIONS: http.StatusOK, // a chat turn's answer: ok false, limit_reached true

	brain.EREQUESTTIMEOUT: http.StatusRequestTimeout, // a body too slow to arrive (conns.go)
}

// setRetryAfter tells the client when to try again: the retry_after_s of the first of errs whose details
// carry one (the LLM provider's Retry-After, on a 503).
func setRetryAfter(c echo.Context, errs ...*brain.Error) {
	for _, e := range errs {
		if d, ok := e.Details.(map[string]any); ok && d["retry_after_s"] != nil {
			c.Response().Header().Set("Retry-After", fmt.Sprint(d["retry_after_s"]))
			return
		}
	}
}

// HTTPStatus returns the HTTP status for an error code.
func HTTPStatus(code string) int {
	if s, ok := errorStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// runStatus is a run response's status: that of its first error with a non-200 status, else 200.
func runStatus(r *brain.RunResponse) int {
	for _, e := range r.Errors {
		if s := HTTPStatus(e.Code); s != http.StatusOK {
			return s
		}
	}
	return http.StatusOK
}

// errorBody is the JSON of an error response.
type errorBody struct {
	OK     bool           `json:"ok"`
	Errors []*brain.Error `json:"errors"`
}

// handleError is the one place errors become responses: an error's code (brain.AsError: the storage's
// too) maps to a status in errorStatus, only internal errors are logged as errors, and clients always get
// {"ok": false, "errors": [...]}.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	e := brain.AsError(err)
	switch {
	case e.Code != brain.EINTERNAL:
	case errors.As(err, &he):
		e = &brain.Error{Code: brain.EINTERNAL, Message: http.StatusText(he.Code)}
		switch he.Code {
		case http.StatusNotFound:
			e = brain.Errorf(brain.ENOTFOUND, "no route %s %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			e = brain.Errorf(brain.EMETHOD, "%s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusRequestEntityTooLarge:
			e = brain.Errorf(brain.ETOOLARGE, "the request body is larger than %d bytes", s.cfg.MaxBody)
		case http.StatusBadRequest:
			e = brain.Errorf(brain.EINVALID, "%v", he.Message)
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e = brain.Errorf(brain.EUNAVAILABLE, "the request was cancelled or timed out")
	}
	if e.Code == brain.EINTERNAL {
		zerolog.Ctx(c.Request().Context()).Error().Err(err).Msg("internal error")
	}
	if isStudioPage(c) {
		s.studioError(c, e)
		return
	}
	setRetryAfter(c, e)
	_ = c.JSON(HTTPStatus(e.Code), errorBody{Errors: []*brain.Error{e}})
}

// logRequests gives each request a logger carrying its request id (services add the run id to it, so the
// request's own line carries that too), and logs the request when it ends.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		log := s.log.With().Str("request_id", c.Response().Header().Get(echo.HeaderXRequestID)).Logger()
		c.SetRequest(c.Request().WithContext(log.WithContext(c.Request().Context())))
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		// A request whose client went away before its answer was written whole: not the status it began with.
		abandoned := c.Request().Context().Err() != nil
		if abandoned {
			status = statusClientClosed
		}
		ev := log.Info()
		switch {
		case status == http.StatusServiceUnavailable:
			// Refused by design (overloaded, no LLM configured): a warning, not a fault of the brain's. Under
			// overload these come by the thousand, and alerts on error lines should not fire for them.
			ev = log.Warn()
		case status >= 500:
			ev = log.Error()
		}
		if c.Request().URL.Path == "/health" {
			ev = log.Debug()
		}
		if abandoned {
			ev = ev.Bool("abandoned", true)
		}
		ev.Str("method", c.Request().Method).Str("route", c.Path()).Str("path", c.Request().URL.Path).Int("status", status).
			Str("requester", requester(c)).Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).Msg("request")
		return nil
	}
}

// statusClientClosed is what the request log says of a request its client abandoned (nginx's 499: the
// client closed the connection before the answer).
const statusClientClosed = 499

// recoverPanics answers a handler's panic as an internal error (500, {"ok": false, ...}) and logs it with
// the request's id and the stack, instead of echo's own recovery, which logged every goroutine's stack on
// echo's logger without the request id.
func recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		return gemlog.Guarded(zerolog.Ctx(c.Request().Context()), "a request's handler", func() error { return next(c) })
	}
}

// requester is the name of the request's caller ("" before authentication).
func requester(c echo.Context) string {
	if p := principalOf(c); p != nil {
		return p.name
	}
	return ""
}

// ok sends a successful answer: body with "ok": true.
func ok(c echo.Context, status int, body map[string]any) error {
	body["ok"] = true
	return c.JSON(status, body)
}
