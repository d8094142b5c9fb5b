package brain

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/rs/zerolog"
)

// Server is the brain's HTTP service.
type Server struct {
	cfg    Config
	svc    *Service
	agents *Agents
	chat   *Chat
	reg    *registry.Registry
	pool   *pgxpool.Pool
	waiter *gemsql.ReceiptWaiter
	log    zerolog.Logger
	llm    LLMInfo

	echo *echo.Echo
	http *http.Server
	ln   net.Listener
	done chan error
}

// LLMInfo says which LLM the brain uses, for /health.
type LLMInfo struct {
	Configured bool   `json:"configured"`
	Provider   string `json:"provider,omitempty"`
	Model      string `json:"model,omitempty"`
}

type requesterKey struct{}

// NewServer builds the HTTP service on the run service, agents and chat, the database and the waiter.
func NewServer(cfg Config, svc *Service, agents *Agents, chat *Chat, reg *registry.Registry, pool *pgxpool.Pool, waiter *gemsql.ReceiptWaiter, llm LLMInfo, log zerolog.Logger) *Server {
	s := &Server{cfg: cfg.WithDefaults(), svc: svc, agents: agents, chat: chat, reg: reg, pool: pool, waiter: waiter, llm: llm, log: log}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.RequestID())
	e.Use(s.logRequests)
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(strconv.FormatInt(s.cfg.MaxBody, 10) + "B"))

	e.GET("/health", s.health)
	// Authentication is per route (not a group), so an unknown route or method still answers 404 or 405.
	auth := s.authenticate
	e.GET("/brain/tools", s.tools, auth)
	e.POST("/brain/run", s.run, auth)
	e.GET("/brain/runs/:id", s.getRun, auth)
	e.POST("/brain/runs/:id/approve", s.approve, auth)
	e.GET("/calls", s.listCalls, auth)
	e.POST("/calls", s.createCall, auth)
	e.GET("/calls/:id", s.getCall, auth)
	e.GET("/receipts", s.listReceipts, auth)
	s.echo = e
	s.agentRoutes(auth)
	return s
}

// Open binds the listener (errors come back at once) and serves in the background.
func (s *Server) Open() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.http = &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.done = make(chan error, 1)
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return nil
}

// URL is the server's base URL (useful with Addr ":0").
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops accepting requests and lets those in flight finish until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.http.Shutdown(ctx)
	if serveErr := <-s.done; err == nil {
		err = serveErr
	}
	return err
}

// handleError is the one place errors become responses: codes map to statuses in errorStatus, only
// internal errors are logged as errors, and clients always get {"ok": false, "errors": [...]}.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.As(err, &he):
		e = &Error{Code: EINTERNAL, Message: http.StatusText(he.Code)}
		switch he.Code {
		case http.StatusNotFound:
			e = Errorf(ENOTFOUND, "no route %s %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			e = Errorf(EMETHOD, "%s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusRequestEntityTooLarge:
			e = Errorf(ETOOLARGE, "the request body is larger than %d bytes", s.cfg.MaxBody)
		case http.StatusBadRequest:
			e = Errorf(EINVALID, "%v", he.Message)
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e = Errorf(EUNAVAILABLE, "the request was cancelled or timed out")
	default:
		e = &Error{Code: EINTERNAL, Message: "internal error"}
	}
	if e.Code == EINTERNAL {
		zerolog.Ctx(c.Request().Context()).Error().Err(err).Msg("internal error")
	}
	_ = c.JSON(HTTPStatus(e.Code), errorBody{Errors: []*Error{e}})
}

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
		ev := log.Info()
		if status >= 500 {
			ev = log.Error()
		}
		if c.Request().URL.Path == "/health" {
			ev = log.Debug()
		}
		requester, _ := c.Get("requester").(string)
		ev.Str("method", c.Request().Method).Str("path", c.Request().URL.Path).Int("status", status).
			Str("requester", requester).Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).Msg("request")
		return nil
	}
}

// authenticate checks the bearer token against every configured token (in constant time).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AuthDisabled {
			c.Set("requester", "anonymous")
			return next(c)
		}
		auth := c.Request().Header.Get(echo.HeaderAuthorization)
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || token == "" {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="gem"`)
			return Errorf(EUNAUTHORIZED, "missing bearer token (send Authorization: Bearer <token>)")
		}
		name := ""
		for _, t := range s.cfg.Tokens {
			if subtle.ConstantTimeCompare([]byte(token), []byte(t.Value)) == 1 {
				name = t.Name
			}
		}
		if name == "" {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="gem", error="invalid_token"`)
			return Errorf(EUNAUTHORIZED, "invalid bearer token")
		}
		c.Set("requester", name)
		return next(c)
	}
}

func requester(c echo.Context) string {
	name, _ := c.Get("requester").(string)
	return name
}

func (s *Server) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	dbErr := s.pool.Ping(ctx)
	db := map[string]any{"reachable": dbErr == nil, "latency_ms": float64(time.Since(start).Microseconds()) / 1000}
	if dbErr != nil {
		db["error"] = dbErr.Error()
	}
	body := map[string]any{
		"ok":       dbErr == nil,
		"version":  Version,
		"database": db,
		"registry": map[string]any{"loaded": true, "version": s.reg.Version, "tools": s.reg.Len(), "path": s.reg.Path},
		"planner":  s.svc.planner.Name(),
		"llm":      s.llm,
	}
	status := http.StatusOK
	if dbErr != nil {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, body)
}

// toolView is a tool as GET /brain/tools shows it.
type toolView struct {
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	Idempotency  registry.Idempotency `json:"idempotency"`
	Permissions  []string             `json:"permissions"`
	TimeoutMS    int64                `json:"timeout_ms"`
	InputSchema  json.RawMessage      `json:"input_schema"`
	OutputSchema json.RawMessage      `json:"output_schema"`
}

func (s *Server) tools(c echo.Context) error {
	out := make([]toolView, 0, s.reg.Len())
	for _, t := range s.reg.Tools() {
		out = append(out, toolView{Name: t.Name, Description: t.Description, Idempotency: t.Idempotency, Permissions: t.Permissions,
			TimeoutMS: t.TimeoutMS, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "version": s.reg.Version, "tools": out})
}

func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, echo.ErrStatusRequestEntityTooLarge
		}
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, Errorf(EINVALID, "error reading the request body: %v", err)
	}
	return body, nil
}

func (s *Server) run(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	req, err := decodeRunRequest(body)
	if err != nil {
		return err
	}
	resp, err := s.svc.Run(c.Request().Context(), req, requester(c))
	if err != nil {
		return err
	}
	return s.writeRun(c, resp.HTTPStatus(), resp)
}

// writeRun sends a run's response, then waits for its answer to be recorded (see RunResponse.Recorded): the
// client has its answer one database round trip sooner, and the request still ends only when the run is
// written, so shutdown's drain covers it.
func (s *Server) writeRun(c echo.Context, status int, resp *RunResponse) error {
	// With its length known the client has the whole body at the flush; a body written without it is
	// chunked, and its end goes out only when the handler returns.
	body, err := json.Marshal(resp)
	if err == nil {
		body = append(body, '\n')
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
		c.Response().WriteHeader(status)
		_, err = c.Response().Write(body)
		c.Response().Flush()
	}
	if rerr := resp.Recorded(); rerr != nil {
		s.log.Warn().Err(rerr).Str("run_id", resp.RunID.String()).
			Msg("the run's answer was not recorded; GET /brain/runs/{id} derives it again")
	}
	return err
}

func parseID(c echo.Context, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, Errorf(EINVALID, "%q is not a %s id (a UUID)", c.Param("id"), what)
	}
	return id, nil
}

func (s *Server) getRun(c echo.Context) error {
	id, err := parseID(c, "run")
	if err != nil {
		return err
	}
	resp, err := s.svc.GetRun(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.writeRun(c, http.StatusOK, resp)
}

var approveSchema = registry.MustCompileSchema("approve request", []byte(fmt.Sprintf(`{
	"type": "object",
	"properties": {
		"wait": {"type": "boolean"},
		"wait_timeout_ms": {"type": "integer", "minimum": %d, "maximum": %d}
	},
	"additionalProperties": false
}`, WaitTimeoutMin.Milliseconds(), WaitTimeoutMax.Milliseconds())))

func (s *Server) approve(c echo.Context) error {
	id, err := parseID(c, "run")
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Wait          bool `json:"wait"`
		WaitTimeoutMS int  `json:"wait_timeout_ms"`
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := approveSchema.Validate(body); err != nil {
			return invalidRequest(err)
		}
		_ = json.Unmarshal(body, &req)
	}
	timeout := WaitTimeoutDefault
	if req.WaitTimeoutMS > 0 {
		timeout = time.Duration(req.WaitTimeoutMS) * time.Millisecond
	}
	resp, err := s.svc.Approve(c.Request().Context(), id, req.Wait, timeout, requester(c))
	if err != nil {
		return err
	}
	return s.writeRun(c, resp.HTTPStatus(), resp)
}

// getCall returns a call and its receipt; ?wait=5s long-polls until the receipt exists (at most 60s).
func (s *Server) getCall(c echo.Context) error {
	id, err := parseID(c, "call")
	if err != nil {
		return err
	}
	var wait time.Duration
	if w := c.QueryParam("wait"); w != "" {
		if wait, err = time.ParseDuration(w); err != nil || wait < 0 || wait > LongPollMax {
			return Errorf(EINVALID, "wait must be a duration between 0s and %s, like 5s", LongPollMax)
		}
	}
	ctx := c.Request().Context()
	call, err := gemsql.CallGet(ctx, s.pool, id)
	if errors.Is(err, gemsql.ErrNotFound) {
		return Errorf(ENOTFOUND, "no call %s", id)
	}
	if err != nil {
		return unavailable(err)
	}
	receipt, err := gemsql.ReceiptGet(ctx, s.pool, id)
	if errors.Is(err, gemsql.ErrNotFound) && wait > 0 {
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		receipt, err = s.waiter.WaitOne(waitCtx, id)
		cancel()
		if err != nil && ctx.Err() == nil {
			err = gemsql.ErrNotFound
		}
	}
	switch {
	case err == nil:
		// The receipt may have arrived after the call was read.
		if call.Status != registry.CallStatus(receipt.Status) {
			if fresh, err := gemsql.CallGet(ctx, s.pool, id); err == nil {
				call = fresh
			}
		}
	case errors.Is(err, gemsql.ErrNotFound):
		receipt = nil
	default:
		return unavailable(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "call": call, "receipt": receipt})
}

// cursor is an opaque position in a listing.
func encodeCursor(t time.Time, id uuid.UUID) string {
	b, _ := json.Marshal(map[string]any{"t": t, "id": id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*gemsql.Cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c struct {
		T  time.Time `json:"t"`
		ID uuid.UUID `json:"id"`
	}
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == uuid.Nil {
		return nil, Errorf(EINVALID, "cursor %q is not one this server returned", s)
	}
	return &gemsql.Cursor{Time: c.T, ID: c.ID}, nil
}

// listParams are the common query parameters of /calls and /receipts.
type listParams struct {
	tool   string
	status string
	since  time.Time
	limit  int
	after  *gemsql.Cursor
}

func parseListParams(c echo.Context, statuses []string) (*listParams, error) {
	p := &listParams{tool: c.QueryParam("tool"), status: c.QueryParam("status"), limit: 50}
	var problems []string
	if p.status != "" && !contains(statuses, p.status) {
		problems = append(problems, fmt.Sprintf("status must be one of %s", strings.Join(statuses, ", ")))
	}
	if s := c.QueryParam("since"); s != "" {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			p.since = t
		} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
			p.since = time.Now().Add(-d)
		} else {
			problems = append(problems, "since must be an RFC 3339 time or a duration back from now, like 1h")
		}
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			problems = append(problems, "limit must be a whole number from 1 to 1000")
		}
		p.limit = n
	}
	var err error
	if p.after, err = decodeCursor(c.QueryParam("cursor")); err != nil {
		problems = append(problems, err.(*Error).Message)
	}
	if len(problems) > 0 {
		return nil, &Error{Code: EINVALID, Message: strings.Join(problems, "; "), Details: map[string]any{"problems": problems}}
	}
	return p, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Server) listCalls(c echo.Context) error {
	p, err := parseListParams(c, []string{"queued", "running", "succeeded", "failed", "not_configured"})
	if err != nil {
		return err
	}
	calls, err := gemsql.CallList(c.Request().Context(), s.pool, gemsql.CallListParams{ToolName: p.tool,
		Status: registry.CallStatus(p.status), Since: p.since, After: p.after, Limit: p.limit})
	if err != nil {
		return unavailable(err)
	}
	body := map[string]any{"ok": true, "calls": calls, "next_cursor": nil}
	if calls == nil {
		body["calls"] = []*gemsql.Call{}
	}
	if len(calls) == p.limit {
		last := calls[len(calls)-1]
		body["next_cursor"] = encodeCursor(last.CreatedAt, last.ID)
	}
	return c.JSON(http.StatusOK, body)
}

func (s *Server) listReceipts(c echo.Context) error {
	p, err := parseListParams(c, []string{"succeeded", "failed", "not_configured"})
	if err != nil {
		return err
	}
	receipts, err := gemsql.ReceiptList(c.Request().Context(), s.pool, gemsql.ReceiptListParams{ToolName: p.tool,
		Status: registry.ReceiptStatus(p.status), ErrorCode: registry.ErrorCode(c.QueryParam("error_code")), Since: p.since,
		After: p.after, Limit: p.limit})
	if err != nil {
		return unavailable(err)
	}
	body := map[string]any{"ok": true, "receipts": receipts, "next_cursor": nil}
	if receipts == nil {
		body["receipts"] = []*registry.Receipt{}
	}
	if len(receipts) == p.limit {
		last := receipts[len(receipts)-1]
		body["next_cursor"] = encodeCursor(last.FinishedAt, last.CallID)
	}
	return c.JSON(http.StatusOK, body)
}

var callRequestSchema = registry.MustCompileSchema("call request", []byte(fmt.Sprintf(`{
	"type": "object",
	"properties": {
		"tool": {"type": "string", "minLength": 1, "maxLength": 200},
		"input": {"type": "object"},
		"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 1000},
		"wait_timeout_ms": {"type": "integer", "minimum": 0, "maximum": %d}
	},
	"required": ["tool"],
	"additionalProperties": false
}`, WaitTimeoutMax.Milliseconds())))

// createCall makes one call to a named tool (validated against the registry first) and, with
// wait_timeout_ms, waits for its receipt.
func (s *Server) createCall(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Tool           string          `json:"tool"`
		Input          json.RawMessage `json:"input"`
		IdempotencyKey string          `json:"idempotency_key"`
		WaitTimeoutMS  int             `json:"wait_timeout_ms"`
	}
	if err := callRequestSchema.Validate(body); err != nil {
		return invalidRequest(err)
	}
	_ = json.Unmarshal(body, &req)
	if len(req.Input) == 0 {
		req.Input = json.RawMessage("{}")
	}
	if errs := prepareCalls(s.reg, []PlannedCall{{Tool: req.Tool, Input: req.Input}}, nil); len(errs) > 0 {
		return errs[0]
	}
	ctx := c.Request().Context()
	id, err := gemsql.CallInsert(ctx, s.pool, gemsql.CallInsertParams{ToolName: req.Tool, Input: req.Input,
		IdempotencyKey: req.IdempotencyKey, RequestedBy: requester(c)})
	if err != nil {
		return unavailable(err)
	}
	var receipt *registry.Receipt
	if req.WaitTimeoutMS > 0 {
		waitCtx, cancel := context.WithTimeout(ctx, time.Duration(req.WaitTimeoutMS)*time.Millisecond)
		receipt, _ = s.waiter.WaitOne(waitCtx, id)
		cancel()
	}
	call, err := gemsql.CallGet(ctx, s.pool, id)
	if err != nil {
		return unavailable(err)
	}
	okBody := receipt == nil || receipt.Status == registry.StatusSucceeded
	return c.JSON(http.StatusOK, map[string]any{"ok": okBody, "call": call, "receipt": receipt})
}
