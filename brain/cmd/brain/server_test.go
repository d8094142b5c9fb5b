package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gemhq/gem/brain/internal/testenv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestRunOutcomesAsHTTPStatuses: POST /brain/run and POST /brain/runs/{id}/approve answer each outcome of
// the run service (its own tests are in brain/run) with its status: a run that did what it was asked, found
// nothing to run or whose call failed is a 200 saying so; an invalid plan, a missing field or too many calls
// a 400 naming it, with nothing enqueued; a second approval a 409. A context id that is no UUID is refused
// at the edge, naming where.
func TestRunOutcomesAsHTTPStatuses(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	resp := a.runOK(map[string]any{"message": "create a task to call John about the gutters, urgent", "mode": "enqueue_and_wait"})
	require.Equal(t, brain.RunCompleted, resp.Status)
	got := a.getRun(resp.RunID)
	require.True(t, got.OK)
	require.Equal(t, brain.RunCompleted, got.Status)
	require.Len(t, got.Receipts, 1)

	for _, tt := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"nothing to run", map[string]any{"message": "sing me a song about gutters", "mode": "enqueue_and_wait"}, http.StatusOK, brain.ENOPLAN},
		{"a failed call", map[string]any{"message": "complete task " + uuid.NewString(), "mode": "enqueue_and_wait"}, http.StatusOK, brain.ECALLFAILED},
		{"an invalid plan", map[string]any{"message": "log call: no answer", "mode": "enqueue_and_wait", "context": map[string]any{"entity_id": 42}},
			http.StatusBadRequest, brain.EINVALID},
		{"a missing field", map[string]any{"message": "new lead Bob Lee 0412 345 678", "mode": "enqueue_and_wait"}, http.StatusBadRequest, brain.EINVALID},
		{"too many calls", map[string]any{"message": "create a task to a\ncreate a task to b\ncreate a task to c", "limits": map[string]any{"max_tool_calls": 2}},
			http.StatusBadRequest, brain.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAPI(t)
			resp, status := a.run(tt.body)
			require.Equal(t, tt.status, status, "%+v", resp.Errors)
			require.False(t, resp.OK)
			require.Equal(t, tt.code, resp.Errors[0].Code)
			if status != http.StatusOK {
				require.Equal(t, 0, testenv.CountCalls(t, shared.pool, resp.RunID))
			}
		})
	}

	// GEM's context ids are UUIDs: anything else is refused at the edge, naming where.
	var e errorResponse
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/brain/run", map[string]any{"message": "create a task to call Ann", "context": map[string]any{"lead_id": "not-a-uuid"}}, &e))
	require.Equal(t, "/context/lead_id", e.Errors[0].Details.(map[string]any)["violations"].([]any)[0].(map[string]any)["path"])

	// A plan is approved once: waiting, the approval answers the receipts; again, 409; without waiting, the
	// call ids.
	resp = a.runOK(map[string]any{"message": "new lead Priya Nair 0433 222 111 in Ashfield via facebook", "mode": "plan"})
	var approved brain.RunResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/brain/runs/"+resp.RunID.String()+"/approve", map[string]any{"wait": true}, &approved))
	require.True(t, approved.OK, "%+v", approved.Errors)
	require.Equal(t, brain.RunCompleted, approved.Status)
	var conflict errorResponse
	require.Equal(t, http.StatusConflict, a.do(http.MethodPost, "/brain/runs/"+resp.RunID.String()+"/approve", nil, &conflict))
	require.Equal(t, brain.ECONFLICT, conflict.Errors[0].Code)
	require.Equal(t, 1, testenv.CountCalls(t, shared.pool, resp.RunID))
	resp, _ = a.run(map[string]any{"message": "create a task to measure the Nair roof", "mode": "plan"})
	var enq brain.RunResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/brain/runs/"+resp.RunID.String()+"/approve", nil, &enq))
	require.Equal(t, brain.RunEnqueued, enq.Status)
	require.Len(t, enq.Enqueued, 1)
}

func TestAuthentication(t *testing.T) {
	t.Parallel()

	var e errorResponse
	noToken := &testAPI{t: t, url: shared.url}
	require.Equal(t, http.StatusUnauthorized, noToken.do(http.MethodPost, "/brain/run", map[string]any{"message": "health"}, &e))
	require.Equal(t, brain.EUNAUTHORIZED, e.Errors[0].Code)
	require.Equal(t, http.StatusUnauthorized, noToken.do(http.MethodGet, "/calls", nil, &e))

	wrong := &testAPI{t: t, url: shared.url, token: "wrong-token-0123456789"}
	require.Equal(t, http.StatusUnauthorized, wrong.do(http.MethodGet, "/brain/tools", nil, &e))
	require.Contains(t, e.Errors[0].Message, "invalid")

	req, _ := http.NewRequest(http.MethodGet, shared.url+"/brain/tools", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, `Bearer realm="gem"`, resp.Header.Get("WWW-Authenticate"))

	// /health stays open.
	var health map[string]any
	require.Equal(t, http.StatusOK, noToken.do(http.MethodGet, "/health", nil, &health))
	require.Equal(t, true, health["ok"])

	// A brain without tokens refuses to start unless authentication is switched off explicitly.
	_, err = startBrain(shared.dbURL, func(c *Config) { c.Tokens = nil })
	require.ErrorContains(t, err, "GEM_BRAIN_TOKENS")
	m, err := startBrain(shared.dbURL, func(c *Config) { c.Tokens, c.AuthDisabled = nil, true })
	require.NoError(t, err)
	defer m.Close(context.Background())
	open := &testAPI{t: t, url: m.Server.URL()}
	require.Equal(t, http.StatusOK, open.do(http.MethodGet, "/brain/tools", nil, nil))
}

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
		check  func(t *testing.T, e *brain.Error)
	}{
		{"malformed JSON", http.MethodPost, "/brain/run", `{"message": "health"`, 400, brain.EINVALID, nil},
		{"not an object", http.MethodPost, "/brain/run", `[1, 2]`, 400, brain.EINVALID, nil},
		{"every schema violation", http.MethodPost, "/brain/run",
			map[string]any{"mode": "yolo", "limits": map[string]any{"max_tool_calls": 99, "wait_timeout_ms": 10}, "extra": true}, 400, brain.EINVALID,
			func(t *testing.T, e *brain.Error) {
				vs := e.Details.(map[string]any)["violations"].([]any)
				paths := map[string]bool{}
				for _, v := range vs {
					paths[v.(map[string]any)["path"].(string)] = true
				}
				require.Equal(t, map[string]bool{"/message": true, "/mode": true, "/limits/max_tool_calls": true, "/limits/wait_timeout_ms": true, "": true}, paths)
			}},
		{"empty message", http.MethodPost, "/brain/run", map[string]any{"message": ""}, 400, brain.EINVALID, nil},
		{"context that is not ids", http.MethodPost, "/brain/run", map[string]any{"message": "health", "context": map[string]any{"Lead ID": map[string]any{}}}, 400, brain.EINVALID, nil},
		{"unknown run", http.MethodGet, "/brain/runs/" + uuid.NewString(), nil, 404, brain.ENOTFOUND, nil},
		{"run id not a uuid", http.MethodGet, "/brain/runs/42", nil, 400, brain.EINVALID, nil},
		{"approve unknown run", http.MethodPost, "/brain/runs/" + uuid.NewString() + "/approve", nil, 404, brain.ENOTFOUND, nil},
		{"approve with a bad body", http.MethodPost, "/brain/runs/" + uuid.NewString() + "/approve", map[string]any{"wait": "yes"}, 400, brain.EINVALID, nil},
		{"unknown call", http.MethodGet, "/calls/" + uuid.NewString(), nil, 404, brain.ENOTFOUND, nil},
		{"long poll too long", http.MethodGet, "/calls/" + uuid.NewString() + "?wait=5m", nil, 400, brain.EINVALID, nil},
		{"bad list filter", http.MethodGet, "/calls?status=done&limit=0", nil, 400, brain.EINVALID, nil},
		{"bad cursor", http.MethodGet, "/receipts?cursor=abc", nil, 400, brain.EINVALID, nil},
		{"body too large", http.MethodPost, "/brain/run", `{"message": "` + strings.Repeat("x", 2<<20) + `"}`, 413, brain.ETOOLARGE, nil},
		{"unknown route", http.MethodGet, "/brain/nothing", nil, 404, brain.ENOTFOUND, nil},
		{"wrong method", http.MethodDelete, "/brain/run", nil, 405, brain.EMETHOD, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &testAPI{t: t, url: a.url, token: a.token}
			var e errorResponse
			require.Equal(t, tt.status, a.do(tt.method, tt.path, tt.body, &e))
			require.False(t, e.OK)
			require.Equal(t, tt.code, e.Errors[0].Code)
			require.NotEmpty(t, e.Errors[0].Message)
			if tt.check != nil {
				tt.check(t, e.Errors[0])
			}
		})
	}

	// Approving a run that is not a stored plan is a conflict.
	resp, _ := a.run(map[string]any{"message": "health check", "mode": "answer"})
	var e errorResponse
	require.Equal(t, http.StatusConflict, a.do(http.MethodPost, "/brain/runs/"+resp.RunID.String()+"/approve", nil, &e))
	require.Equal(t, brain.ECONFLICT, e.Errors[0].Code)
}

func TestHealthAndTools(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	var health struct {
		OK       bool           `json:"ok"`
		Version  string         `json:"version"`
		Database map[string]any `json:"database"`
		Registry map[string]any `json:"registry"`
		LLM      api.LLMInfo    `json:"llm"`
		Planner  string         `json:"planner"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/health", nil, &health))
	require.True(t, health.OK)
	require.Equal(t, true, health.Database["reachable"])
	require.Equal(t, true, health.Registry["loaded"])
	require.Equal(t, float64(shared.brain.Registry.Len()), health.Registry["tools"])
	require.False(t, health.LLM.Configured)
	require.Equal(t, "rules", health.Planner)

	var tools struct {
		Tools []struct {
			Name        string               `json:"name"`
			Description string               `json:"description"`
			Idempotency registry.Idempotency `json:"idempotency"`
			Permissions []string             `json:"permissions"`
			InputSchema json.RawMessage      `json:"input_schema"`
		} `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/tools", nil, &tools))
	require.Len(t, tools.Tools, shared.brain.Registry.Len())
	for _, tl := range tools.Tools {
		require.NotEmpty(t, tl.Description, tl.Name)
		require.NotEmpty(t, tl.Idempotency.Mode, tl.Name)
		require.True(t, json.Valid(tl.InputSchema), tl.Name)
	}
}

func TestListCallsAndReceipts(t *testing.T) {
	t.Parallel()
	// A database of its own, so the listing is this test's alone.
	a, _ := privateBrain(t, true)

	var ids []uuid.UUID
	for i := range 7 {
		resp, _ := a.run(map[string]any{"message": fmt.Sprintf("find notes about pagination-%d", i), "mode": "enqueue_and_wait"})
		require.True(t, resp.OK, "%+v", resp.Errors)
		ids = append(ids, resp.Enqueued[0].CallID)
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		var page struct {
			Calls      []gemsql.Call `json:"calls"`
			NextCursor *string       `json:"next_cursor"`
		}
		path := "/calls?tool=os.search_notes&status=succeeded&since=1h&limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		require.Equal(t, http.StatusOK, a.do(http.MethodGet, path, nil, &page))
		for _, c := range page.Calls {
			require.False(t, seen[c.ID.String()])
			seen[c.ID.String()] = true
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		require.Less(t, pages, 10)
	}
	for _, id := range ids {
		require.True(t, seen[id.String()], "call %s listed", id)
	}

	var receipts struct {
		Receipts []registry.Receipt `json:"receipts"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/receipts?tool=os.search_notes&limit=1000", nil, &receipts))
	require.GreaterOrEqual(t, len(receipts.Receipts), 7)
	for _, r := range receipts.Receipts {
		require.Equal(t, "os.search_notes", r.ToolName)
	}
}

// TestForgedReceiptNoticeIsNotAnAnswer: any database login may NOTIFY gem_receipt (PostgreSQL has no
// permissions on channels). A receipt made up as JSON, and the bare id of a call that has no receipt, sent
// while a POST /calls client waits, must not become its answer: on a database no executor serves, the
// client is told its call is still pending, with the call queued and no receipt.
func TestForgedReceiptNoticeIsNotAnAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	m, err := startBrain(dbURL, nil)
	require.NoError(t, err)
	defer m.Close(ctx)
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}

	forged := make(chan error, 1)
	go func() {
		forged <- func() error {
			deadline := time.Now().Add(10 * time.Second)
			var id uuid.UUID
			for {
				err := pool.QueryRow(ctx, `SELECT id FROM core_tool_calls WHERE tool_name = 'os.health_check'`).Scan(&id)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the call never appeared: %w", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			fake := fmt.Sprintf(`{"call_id": %q, "tool": "os.health_check", "status": "succeeded", "result": {"forged": true}, `+
				`"effects": {"db_writes": []}, "attempt": 1, "started_at": %q, "finished_at": %q}`,
				id, time.Now().Format(time.RFC3339Nano), time.Now().Format(time.RFC3339Nano))
			for _, payload := range []string{fake, id.String()} {
				if _, err := pool.Exec(ctx, `SELECT pg_notify('gem_receipt', $1)`, payload); err != nil {
					return err
				}
			}
			return nil
		}()
	}()

	var body struct {
		OK      bool              `json:"ok"`
		Call    gemsql.Call       `json:"call"`
		Receipt *registry.Receipt `json:"receipt"`
		Errors  []brain.Error     `json:"errors"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.health_check", "wait_timeout_ms": 1500}, &body))
	require.NoError(t, <-forged)
	require.Nil(t, body.Receipt, "a forged notification is not a receipt")
	require.False(t, body.OK)
	require.Equal(t, registry.CallQueued, body.Call.Status)
	require.Equal(t, brain.ETIMEOUT, body.Errors[0].Code)
}
