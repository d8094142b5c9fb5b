package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/labstack/echo/v4"
)

// health answers whether the brain can do its work: the database answers and at least one executor is
// alive to run calls (from the executors' liveness registrations). It is 503 otherwise, saying why.
func (s *Server) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	dbErr := s.pool.Ping(ctx)
	db := map[string]any{"reachable": dbErr == nil, "latency_ms": float64(time.Since(start).Microseconds()) / 1000}
	if dbErr != nil {
		db["error"] = dbErr.Error()
	}
	executors := map[string]any{"alive": 0, "list": []*gemsql.Executor{}}
	var problems []string
	if dbErr != nil {
		problems = append(problems, "the database cannot be reached")
	} else if list, alive, err := s.executors(ctx); err != nil {
		problems = append(problems, "the executors cannot be listed: "+err.Error())
	} else {
		executors["alive"], executors["list"] = alive, list
		if alive == 0 {
			problems = append(problems, "no executor is running: calls are accepted but none will run until one starts (executor run)")
		}
	}
	body := map[string]any{
		"ok":        len(problems) == 0,
		"version":   brain.Version,
		"database":  db,
		"executors": executors,
		"registry":  map[string]any{"loaded": true, "version": s.reg.Version, "tools": s.reg.Len(), "path": s.reg.Path},
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
