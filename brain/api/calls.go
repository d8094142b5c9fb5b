package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// Bounds of a listing (GET /calls, GET /receipts): whatever the documents, an answer stays small and the
// brain's memory bounded. A call's whole input and a receipt's whole result are at GET /calls/{id}.
const (
	// listValueMaxBytes: an input, result or error details larger than this (as JSON text) is listed as
	// {"truncated": true, "bytes": N}, replaced in PostgreSQL before it reaches the brain.
	listValueMaxBytes = 8 << 10
	// listMaxBytes: a page ends early (with a next_cursor) once its rows reach this size.
	listMaxBytes = 4 << 20
)

// getCall returns a call and its receipt; ?wait=5s long-polls until the receipt exists (at most 60s).
func (s *Server) getCall(c echo.Context) error {
	id, err := parseID(c, "call")
	if err != nil {
		return err
	}
	var wait time.Duration
	if w := c.QueryParam("wait"); w != "" {
		if wait, err = time.ParseDuration(w); err != nil || wait < 0 || wait > LongPollMax {
			return brain.Errorf(brain.EINVALID, "wait must be a duration between 0s and %s, like 5s", LongPollMax)
		}
	}
	ctx := c.Request().Context()
	call, err := postgres.CallReadable(ctx, s.pool, principalOf(c).reader(), id)
	if err != nil {
		return err
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
		return err
	}
	body := map[string]any{"ok": true, "call": call, "receipt": receipt}
	if approval, err := gemsql.ApprovalGet(ctx, s.pool, id); err == nil {
		body["approval"] = approval
	} else if !errors.Is(err, gemsql.ErrNotFound) {
		return err
	}
	return c.JSON(http.StatusOK, body)
}

// encodeCursor makes an opaque position in a listing.
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
		return nil, brain.Errorf(brain.EINVALID, "cursor %q is not one this server returned", s)
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
	if p.status != "" && !slices.Contains(statuses, p.status) {
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
		problems = append(problems, err.(*brain.Error).Message)
	}
	if len(problems) > 0 {
		return nil, &brain.Error{Code: brain.EINVALID, Message: strings.Join(problems, "; "), Details: map[string]any{"problems": problems}}
	}
	return p, nil
}

// page encodes a listing's rows once, keeping those that fit listMaxBytes (always the first), and says
// where the next page starts: after the last row kept, when rows were left out or a full page was read.
func page[T any](rows []T, limit int, position func(T) (time.Time, uuid.UUID)) ([]json.RawMessage, any, error) {
	kept := make([]json.RawMessage, 0, len(rows))
	size := 0
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, fmt.Errorf("error encoding a listed row: %w", err)
		}
		if size += len(b); size > listMaxBytes && len(kept) > 0 {
			break
		}
		kept = append(kept, b)
	}
	if len(kept) == 0 || len(kept) == len(rows) && len(rows) < limit {
		return kept, nil, nil
	}
	t, id := position(rows[len(kept)-1])
	return kept, encodeCursor(t, id), nil
}

func (s *Server) listCalls(c echo.Context) error {
	p, err := parseListParams(c, callStatuses)
	if err != nil {
		return err
	}
	f, err := parseCallFilter(c)
	if err != nil {
		return err
	}
	calls, err := gemsql.CallList(c.Request().Context(), s.pool, gemsql.CallListParams{ToolName: p.tool,
		Status: registry.CallStatus(p.status), RequestedBy: f.Caller, Agent: f.Agent, Device: f.Device, Viewer: principalOf(c).reader().Viewer(),
		Since: p.since, After: p.after, Limit: p.limit, MaxInputBytes: listValueMaxBytes})
	if err != nil {
		return err
	}
	rows, next, err := page(calls, p.limit, func(c *gemsql.Call) (time.Time, uuid.UUID) { return c.CreatedAt, c.ID })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "calls": rows, "next_cursor": next})
}

func (s *Server) listReceipts(c echo.Context) error {
	p, err := parseListParams(c, []string{"succeeded", "failed", "not_configured"})
	if err != nil {
		return err
	}
	receipts, err := gemsql.ReceiptList(c.Request().Context(), s.pool, gemsql.ReceiptListParams{ToolName: p.tool,
		Status: registry.ReceiptStatus(p.status), ErrorCode: registry.ErrorCode(c.QueryParam("error_code")), Since: p.since,
		Viewer: principalOf(c).reader().Viewer(), After: p.after, Limit: p.limit, MaxResultBytes: listValueMaxBytes})
	if err != nil {
		return err
	}
	rows, next, err := page(receipts, p.limit, func(r *registry.Receipt) (time.Time, uuid.UUID) { return r.FinishedAt, r.CallID })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "receipts": rows, "next_cursor": next})
}

// callParams are the body of POST /calls.
type callParams struct {
	Tool           string          `json:"tool"`
	Input          json.RawMessage `json:"input"`
	IdempotencyKey string          `json:"idempotency_key"`
	WaitTimeoutMS  int             `json:"wait_timeout_ms"`
	Device         string          `json:"device"`
	DeviceWaitMS   int             `json:"device_wait_ms"`
	// Agent is the agent the call is made for (or the X-GEM-Agent header); a caller limited to one agent
	// makes its calls for it without naming it (principal.callAgent).
	Agent string `json:"agent"`
}

// createCall makes one call to a named tool (validated against the registry first) and, with
// wait_timeout_ms, waits for its receipt. A wait that ends without the receipt answers ok false with
// wait_timeout, saying whether any executor is alive to run the call.
// decodeCall reads a call's body and checks it against the registry: everything making a call does before
// the database.
func (s *Server) decodeCall(c echo.Context) (*callParams, error) {
	req, _, err := decodeBody[callParams](c, callSchema, "")
	if err != nil {
		return nil, err
	}
	if len(req.Input) == 0 {
		req.Input = json.RawMessage("{}")
	}
	// A call for a named device whose tools are not in the catalog now (it is away) is the executor's to
	// judge when the device is back, or to end device_unavailable.
	if s.reg.HasSealed(req.Tool, req.Input) {
		return nil, brain.ErrSealedInput(req.Tool)
	}
	if _, known := s.reg.Tool(req.Tool); known || req.Device == "" {
		planned := []brain.PlannedCall{{Tool: req.Tool, Input: req.Input}}
		if errs := brain.PrepareCalls(s.reg, planned, nil); len(errs) > 0 {
			return nil, errs[0]
		}
		req.Input = planned[0].Input // its secrets sealed
	}
	return req, nil
}

func (s *Server) createCall(c echo.Context) error {
	req, err := s.decodeCall(c)
	if err != nil {
		return err
	}
	if req.IdempotencyKey, err = brain.RequestKey(c.Request().Header.Values(brain.IdempotencyKeyHeader), req.IdempotencyKey); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if req.Agent, err = s.callAgent(c, req.Agent, req.Tool); err != nil {
		return err
	}
	id := uuid.Must(uuid.NewV7())
	var sub *gemsql.Subscription
	if req.WaitTimeoutMS > 0 {
		sub = s.waiter.Subscribe([]uuid.UUID{id}) // before the call exists, so the wait need not read first
		defer sub.Close()
	}
	inserted, err := gemsql.CallInsert(ctx, s.pool, gemsql.CallInsertParams{ID: id, ToolName: req.Tool, Input: req.Input,
		IdempotencyKey: req.IdempotencyKey, RequestedBy: requester(c), Agent: req.Agent, Device: req.Device, DeviceWaitMS: req.DeviceWaitMS})
	if err != nil {
		return err
	}
	made := inserted[0]
	if made.Awaiting {
		return s.awaitingApproval(c, id, nil)
	}
	if of := made.IdempotencyOf; of != nil && sub != nil {
		// A repeated request: its receipt comes when the first one's does. If that one waits for a person,
		// so does this answer.
		if first, err := gemsql.CallsInserted(ctx, s.pool, []uuid.UUID{*of}); err == nil && first[0].Awaiting {
			return s.awaitingApproval(c, *of, &id)
		}
	}
	var receipt *registry.Receipt
	if sub != nil {
		waitCtx, cancel := context.WithTimeout(ctx, time.Duration(req.WaitTimeoutMS)*time.Millisecond)
		res, _ := sub.Wait(waitCtx)
		cancel()
		receipt = res.Receipts[id]
	}
	call, err := gemsql.CallGet(ctx, s.pool, id)
	if err != nil {
		return err
	}
	body := map[string]any{"ok": receipt == nil || receipt.Status == registry.StatusSucceeded, "call": call, "receipt": receipt}
	if req.WaitTimeoutMS > 0 && receipt == nil {
		body["ok"] = false
		body["errors"] = []*brain.Error{s.waitTimeout(ctx, []uuid.UUID{id}, time.Duration(req.WaitTimeoutMS)*time.Millisecond)}
	}
	return c.JSON(http.StatusOK, body)
}

// callAgent is the agent a call is made for (principal.callAgent), from the body's agent field or the
// X-GEM-Agent header, which must agree; the agent must exist and its skills enable the tool (403 otherwise),
// as the executor will check again.
func (s *Server) callAgent(c echo.Context, named, tool string) (string, error) {
	if h := c.Request().Header.Get(agentHeader); h != "" {
		if !agentSlugRe.MatchString(h) {
			return "", brain.Errorf(brain.EINVALID, "the %s header (%q) is not an agent slug", agentHeader, h)
		}
		if named != "" && named != h {
			return "", &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("the agent field (%q) and the %s header (%q) name different agents", named, agentHeader, h),
				Details: map[string]any{"field": "agent"}}
		}
		named = h
	}
	agent, err := principalOf(c).callAgent(named)
	if err != nil || agent == "" {
		return agent, err
	}
	ctx := c.Request().Context()
	if _, err := postgres.AgentGet(ctx, s.pool, agent); err != nil {
		return "", err
	}
	missing, err := postgres.AgentToolsMissing(ctx, s.pool, agent, "", []string{tool})
	if err != nil {
		return "", err
	}
	if missing != nil {
		return "", &brain.Error{Code: brain.EFORBIDDEN, Message: fmt.Sprintf("agent %q, which the call is made for, has no enabled skill with %s", agent, tool),
			Details: map[string]any{"agent": agent, "tool": tool}}
	}
	return agent, nil
}

// awaitingApproval answers a call that waits for a decision: 200, ok false, with awaiting_approval saying
// until when and how to decide it. The call is made; nothing is wrong with it. A repeated request (repeat)
// waits for the first, which is the one to decide.
func (s *Server) awaitingApproval(c echo.Context, id uuid.UUID, repeat *uuid.UUID) error {
	ctx := c.Request().Context()
	call, err := gemsql.CallGet(ctx, s.pool, id)
	if err != nil {
		return err
	}
	approval, err := gemsql.ApprovalGet(ctx, s.pool, id)
	if err != nil {
		return err
	}
	e := &brain.Error{Code: brain.EAWAITING, Message: fmt.Sprintf("call %s awaits approval (%s) until %s: POST /calls/%s/approve or /reject, by a caller holding approve",
		id, approval.RequiredBy, approval.ExpiresAt.Format(time.RFC3339), id), Details: map[string]any{"call_id": id, "expires_at": approval.ExpiresAt}}
	body := map[string]any{"ok": false, "call": call, "receipt": nil, "approval": approval, "errors": []*brain.Error{e}}
	if repeat != nil {
		if body["call"], err = gemsql.CallGet(ctx, s.pool, *repeat); err != nil {
			return err
		}
		e.Message = fmt.Sprintf("this request repeats call %s (the same idempotency key), which ", id) + strings.TrimPrefix(e.Message, fmt.Sprintf("call %s ", id))
	}
	return c.JSON(http.StatusOK, body)
}

// waitTimeout is the error of a wait that ended before the receipts came, saying whether an executor is
// alive to run the calls (a dead executor would otherwise look like a slow call).
func (s *Server) waitTimeout(ctx context.Context, pending []uuid.UUID, waited time.Duration) *brain.Error {
	e := &brain.Error{Code: brain.ETIMEOUT, Message: fmt.Sprintf("no receipt after %s; the call keeps running (GET /calls/%s?wait=5s)", waited, pending[0]),
		Details: map[string]any{"pending": pending}}
	if _, alive, err := s.executors(ctx); err == nil && alive == 0 {
		e.Message += "; no executor is running, so nothing will run it until one starts"
		e.Details.(map[string]any)["executors_alive"] = 0
	}
	return e
}
