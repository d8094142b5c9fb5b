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
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/labstack/echo/v4"
)

// executorsRecent is how long after it stopped, died or started an executor that is not alive is still
// listed by /health (to a caller with a token): long enough to see what just went away.
const executorsRecent = time.Hour

// health answers whether the brain can do its work: the database answers and at least one executor is
// alive to run calls (from the executors' liveness registrations). It is 503 otherwise, saying why. Anyone
// may ask; only a request with a caller's token (or studio login) sees which executors run where — those
// alive and those gone within executorsRecent — and where the registry is.
func (s *Server) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	authenticated := false
	if c.Request().Header.Get(echo.HeaderAuthorization) != "" || s.cfg.AuthDisabled {
		_, err := s.requestPrincipal(c)
		authenticated = err == nil
	}
	start := time.Now()
	dbErr := s.pool.Ping(ctx)
	db := map[string]any{"reachable": dbErr == nil, "latency_ms": float64(time.Since(start).Microseconds()) / 1000}
	if dbErr != nil && authenticated {
		db["error"] = dbErr.Error()
	}
	executors := map[string]any{"alive": 0}
	var problems []string
	if dbErr != nil {
		problems = append(problems, "the database cannot be reached")
	} else if list, alive, err := s.executors(ctx); err != nil {
		problems = append(problems, "the executors cannot be listed")
	} else {
		recent := recentExecutors(list, time.Now())
		executors["alive"], executors["gone_recently"] = alive, len(recent)-alive
		if authenticated {
			executors["list"] = recent
		}
		if alive == 0 {
			problems = append(problems, "no executor is running: calls are accepted but none will run until one starts (executor run)")
		}
	}
	registryInfo := map[string]any{"loaded": true, "version": s.reg.Version, "tools": s.reg.Len()}
	if authenticated {
		registryInfo["path"] = s.reg.Path
	}
	body := map[string]any{
		"ok":        len(problems) == 0,
		"version":   brain.Version,
		"database":  db,
		"executors": executors,
		"registry":  registryInfo,
		"planner":   s.runs.Planner().Name(),
		"llm":       s.llm,
	}
	if len(problems) > 0 {
		body["problems"] = problems
	}
	status := http.StatusOK
	if len(problems) > 0 {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, body)
}

// recentExecutors keeps the executors alive, and those that stopped, died or started within
// executorsRecent of now.
func recentExecutors(list []*gemsql.Executor, now time.Time) []*gemsql.Executor {
	out := make([]*gemsql.Executor, 0, len(list))
	for _, x := range list {
		last := x.StartedAt
		for _, t := range []*time.Time{x.StoppedAt, x.DeadAt} {
			if t != nil && t.After(last) {
				last = *t
			}
		}
		if x.Alive || now.Sub(last) < executorsRecent {
			out = append(out, x)
		}
	}
	return out
}

// executors lists the registered executors and counts those holding their liveness lock.
func (s *Server) executors(ctx context.Context) ([]*gemsql.Executor, int, error) {
	list, err := gemsql.ExecutorList(ctx, s.pool)
	if err != nil {
		return nil, 0, err
	}
	alive := 0
	for _, x := range list {
		if x.Alive {
			alive++
		}
	}
	return list, alive, nil
}

// toolView is a tool as GET /brain/tools shows it (format gem).
type toolView struct {
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	Idempotency  registry.Idempotency `json:"idempotency"`
	Permissions  []string             `json:"permissions"`
	TimeoutMS    int64                `json:"timeout_ms"`
	InputSchema  json.RawMessage      `json:"input_schema"`
	OutputSchema json.RawMessage      `json:"output_schema"`
	// Devices are the connected devices serving the tool; DeviceAgnostic says any of them may run it.
	Devices        []string `json:"devices,omitempty"`
	DeviceAgnostic bool     `json:"device_agnostic,omitempty"`
}

// toolMatch is one tool a query found: its registry name, the function name an LLM calls it by, and its score.
type toolMatch struct {
	Name     string  `json:"name"`
	Function string  `json:"function"`
	Score    float64 `json:"score"`
	// Coverage is the share of the request the tool holds, from 0 to 1 (comparable across requests).
	Coverage float64 `json:"coverage"`
}

// toolsParams are GET /brain/tools' query parameters.
type toolsParams struct {
	format, agent, user, query string
	limit                      int
}

// toolsQueryMax bounds ?q= (a query is a request in words, not a document).
const toolsQueryMax = 1000

func parseToolsParams(c echo.Context) (*toolsParams, error) {
	p := &toolsParams{format: c.QueryParam("format"), agent: c.QueryParam("agent"), user: c.QueryParam("user_id"),
		query: c.QueryParam("q"), limit: llm.ToolSearchLimitDefault}
	var problems []string
	details := map[string]any{}
	if p.format == "" {
		p.format = llm.FormatGEM
	} else if !slices.Contains(llm.ExportFormats, p.format) {
		problems = append(problems, fmt.Sprintf("format must be one of %s, not %q", strings.Join(llm.ExportFormats, ", "), p.format))
		details["allowed_formats"] = llm.ExportFormats
	}
	_, hasQuery := c.QueryParams()["q"]
	switch {
	case hasQuery && strings.TrimSpace(p.query) == "":
		problems = append(problems, "q must say what the tool should do, in words")
	case len(p.query) > toolsQueryMax:
		problems = append(problems, fmt.Sprintf("q must be at most %d bytes, not %d", toolsQueryMax, len(p.query)))
	}
	if s, set := c.QueryParams()["limit"]; set {
		n, err := strconv.Atoi(s[0])
		switch {
		case !hasQuery:
			problems = append(problems, "limit bounds the results of a query: give q too")
		case err != nil || n < 1 || n > llm.ToolSearchLimitMax:
			problems = append(problems, fmt.Sprintf("limit must be a whole number from 1 to %d, not %q", llm.ToolSearchLimitMax, s[0]))
		default:
			p.limit = n
		}
	}
	if p.user != "" && p.agent == "" {
		problems = append(problems, "user_id scopes an agent's tools: give agent too")
	}
	if len(problems) > 0 {
		details["problems"] = problems
		return nil, &brain.Error{Code: brain.EINVALID, Message: strings.Join(problems, "; "), Details: details}
	}
	return p, nil
}

// tools answers GET /brain/tools: the registry's tools, or an agent's (?agent=, for ?user_id=), exported in a
// format (?format=gem, the default, or openai, anthropic, mcp: exactly what the LLM loop sends), or the best of
// them for a query (?q=, ?limit=, default 5, at most 50) by the tool search the LLM's search_tools uses.
func (s *Server) tools(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := parseToolsParams(c)
	if err != nil {
		return err
	}
	tools := s.reg.Tools()
	body := map[string]any{"version": s.reg.Version, "format": p.format}
	if p.agent != "" {
		if _, err := postgres.AgentGet(ctx, s.pool, p.agent); err != nil {
			return err
		}
		if tools, err = postgres.AgentTools(ctx, s.pool, s.reg, p.agent, p.user); err != nil {
			return err
		}
		body["agent"] = p.agent
	}
	// Function names are those of the whole set, as the LLM loop exports it, whatever a query keeps.
	set := llm.NewToolSet(tools)
	if p.query != "" {
		hits, err := postgres.ToolSearch(ctx, s.pool, tools, p.query, p.limit)
		if err != nil {
			return err
		}
		fits := postgres.ToolsFit(hits, s.cfg.ToolSearchMinCoverage)
		if !fits {
			hits = nil // the least bad tools are not an answer
		}
		matches := make([]toolMatch, len(hits))
		tools = make([]*registry.Tool, len(hits))
		for i, h := range hits {
			fn, _ := set.Function(h.Tool.Name)
			matches[i] = toolMatch{Name: h.Tool.Name, Function: fn, Score: h.Score, Coverage: h.Coverage}
			tools[i] = h.Tool
		}
		body["query"], body["limit"], body["matches"], body["fits"] = p.query, p.limit, matches, fits
	}
	if p.format == llm.FormatGEM {
		out := make([]toolView, 0, len(tools))
		for _, t := range tools {
			out = append(out, toolView{Name: t.Name, Description: t.Description, Idempotency: t.Idempotency, Permissions: t.Permissions,
				TimeoutMS: t.TimeoutMS, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
				Devices: s.reg.ServedBy(t.Name), DeviceAgnostic: t.DeviceAgnostic})
		}
		body["tools"] = out
		return ok(c, http.StatusOK, body)
	}
	out := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		def, err := set.Export(p.format, t.Name)
		if err != nil {
			return fmt.Errorf("error exporting %s: %w", t.Name, err)
		}
		out = append(out, def)
	}
	body["tools"] = out
	return ok(c, http.StatusOK, body)
}
