package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/brain/run"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

func (s *Server) run(c echo.Context) error {
	params, _, err := decodeBody[brain.RunParams](c, runSchema, "")
	if err != nil {
		return err
	}
	if params.Mode == "" {
		params.Mode = brain.ModeDefault
	}
	agent, err := principalOf(c).callAgent(c.Request().Header.Get(agentHeader))
	if err != nil {
		return err
	}
	if params.Fingerprint, err = requestKey(c, &params.IdempotencyKey, &params.Async, params, agent); err != nil {
		return err
	}
	if wantsAsync(c, params.Async) {
		caller := requester(c)
		return s.runAsync(c, params, func(ctx context.Context, p *brain.RunParams) (*brain.RunResponse, error) {
			return s.runs.Run(ctx, p, caller, agent)
		},
			func(id uuid.UUID, ended *brain.RunResponse) error {
				if ended == nil {
					return accepted(c, id, "", false)
				}
				if status := runStatus(ended); status >= http.StatusBadRequest {
					return s.writeRun(c, status, ended) // refused (an invalid plan, too many calls...): as without async
				}
				return accepted(c, id, "", ended.Repeated)
			})
	}
	resp, err := s.runs.Run(c.Request().Context(), params, requester(c), agent)
	if err != nil {
		return err
	}
	return s.writeRun(c, runStatus(resp), resp)
}

// runAsync answers a run (answer) once run has recorded it with its calls — ended nil — or, when it ended
// before (answered, planned, refused), with its response; the wait for the calls' receipts and the answer go
// on after the request (a rules run's answer is derived from the receipts by whoever reads it, should this
// brain stop first). A request that failed before a run was recorded is answered its error.
func (s *Server) runAsync(c echo.Context, params *brain.RunParams, run func(context.Context, *brain.RunParams) (*brain.RunResponse, error),
	answer func(id uuid.UUID, ended *brain.RunResponse) error) error {
	d := detach(context.WithoutCancel(c.Request().Context()), func(ctx context.Context, begun func(uuid.UUID)) (*brain.RunResponse, error) {
		params.OnRecorded = begun
		resp, err := run(ctx, params)
		if err == nil {
			s.runs.Recorded(ctx, resp.RunID)
		}
		return resp, err
	})
	select {
	case id := <-d.begun:
		return answer(id, nil)
	case res := <-d.done:
		// Ended before its wait (answered, planned, refused): its run is recorded, or it failed whole.
		if res.err != nil {
			return res.err
		}
		return answer(res.value.RunID, res.value)
	}
}

// writeRun sends a run's response; its answer is recorded meanwhile (run.Service.Recorded), and the
// request ends without waiting for it, so a client's next request on the same connection is read at once.
// The brain's shutdown waits for the recordings still under way (run.Service.Close), and a read of the run
// before its answer is recorded derives it from the receipts (GetRun).
func (s *Server) writeRun(c echo.Context, status int, resp *brain.RunResponse) error {
	// With its length known the client has the whole body at the flush; a body written without it is
	// chunked, and its end goes out only when the handler returns.
	body, err := json.Marshal(resp)
	if err == nil {
		body = append(body, '\n')
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
		setRetryAfter(c, resp.Errors...)
		c.Response().WriteHeader(status)
		_, err = c.Response().Write(body)
		c.Response().Flush()
	}
	return err
}

// findRun answers GET /brain/runs?idempotency_key=K: the caller's run its request with that key made,
// within the key's window, as GET /brain/runs/{id} answers it. A client whose connection dropped finds
// whether its request was made, and what became of it. Without a key it lists runs (listRuns).
func (s *Server) findRun(c echo.Context) error {
	if _, keyed := c.QueryParams()["idempotency_key"]; !keyed {
		return s.listRuns(c)
	}
	key, err := brain.RequestKey([]string{c.QueryParam("idempotency_key")}, "")
	if err != nil {
		return err
	}
	if key == "" {
		return brain.Errorf(brain.EINVALID, "idempotency_key must hold 1 to %d characters", brain.RequestKeyMaxLen)
	}
	id, err := postgres.RunByKey(c.Request().Context(), s.pool, requester(c), key)
	if err != nil {
		return err
	}
	resp, err := s.runs.GetRun(c.Request().Context(), id, principalOf(c).reader())
	if err != nil {
		return err
	}
	return s.writeRun(c, http.StatusOK, resp)
}

// runListLimitDefault is how many runs GET /brain/runs lists without ?limit=.
const runListLimitDefault = 50

// runModes are the modes a run is made in: the four of /brain/run, and chat.
var runModes = []string{string(brain.ModeAnswer), string(brain.ModePlan), string(brain.ModeEnqueue), string(brain.ModeEnqueueAndWait), string(brain.ModeChat)}

// listRuns answers GET /brain/runs: the newest runs the caller may read, by ?status=, ?mode=, ?agent= and
// ?caller= (who made it), at most ?limit=.
func (s *Server) listRuns(c echo.Context) error {
	f := postgres.RunFilter{Status: c.QueryParam("status"), Mode: c.QueryParam("mode"), Agent: c.QueryParam("agent"),
		Caller: c.QueryParam("caller"), Limit: runListLimitDefault}
	var problems []string
	if f.Status != "" && !slices.Contains(runStatuses, f.Status) {
		problems = append(problems, "status must be one of "+strings.Join(runStatuses, ", "))
	}
	if f.Mode != "" && !slices.Contains(runModes, f.Mode) {
		problems = append(problems, "mode must be one of "+strings.Join(runModes, ", "))
	}
	if len(f.Agent) > 200 || len(f.Caller) > 200 {
		problems = append(problems, "agent and caller are at most 200 characters")
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > postgres.RunListMax {
			problems = append(problems, fmt.Sprintf("limit must be a whole number from 1 to %d", postgres.RunListMax))
		}
		f.Limit = n
	}
	if len(problems) > 0 {
		return &brain.Error{Code: brain.EINVALID, Message: strings.Join(problems, "; "), Details: map[string]any{"problems": problems}}
	}
	runs, err := postgres.RunList(c.Request().Context(), s.pool, f, principalOf(c).reader())
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"runs": runs})
}

func (s *Server) getRun(c echo.Context) error {
	id, err := parseID(c, "run")
	if err != nil {
		return err
	}
	resp, err := s.runs.GetRun(c.Request().Context(), id, principalOf(c).reader())
	if err != nil {
		return err
	}
	return s.writeRun(c, http.StatusOK, resp)
}

// approveParams are the body of POST /brain/runs/{id}/approve.
type approveParams struct {
	Wait          bool `json:"wait"`
	WaitTimeoutMS int  `json:"wait_timeout_ms"`
}

func (s *Server) approve(c echo.Context) error {
	id, err := parseID(c, "run")
	if err != nil {
		return err
	}
	params, _, err := decodeBody[approveParams](c, approveSchema, "{}")
	if err != nil {
		return err
	}
	timeout := brain.WaitTimeoutDefault
	if params.WaitTimeoutMS > 0 {
		timeout = time.Duration(params.WaitTimeoutMS) * time.Millisecond
	}
	p := principalOf(c)
	resp, err := s.runs.Approve(c.Request().Context(), id, params.Wait, timeout, &run.Approver{Name: p.name, Grants: p.grants, Agents: p.agents})
	if err != nil {
		return err
	}
	return s.writeRun(c, runStatus(resp), resp)
}

// requestKey reads a request's key into *key — the Idempotency-Key header or the body's key, which must
// agree — and returns, when it has one, the request's fingerprint: its route, its body (a pointer to the
// decoded params holding *key) without the key and without *async (answered at once or later, it is the
// same request), and what else decides the work (the agent acted as).
func requestKey(c echo.Context, key *string, async *bool, body any, parts ...any) ([]byte, error) {
	k, err := brain.RequestKey(c.Request().Header.Values(brain.IdempotencyKeyHeader), *key)
	if err != nil || k == "" {
		return nil, err
	}
	wasAsync := *async
	*key, *async = "", false
	fp := brain.RequestFingerprint(c.Request().Method+" "+c.Path(), append([]any{body}, parts...)...)
	*key, *async = k, wasAsync
	return fp, nil
}
