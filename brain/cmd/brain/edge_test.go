package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// privateBrain starts a brain on a database of its own, with an executor when withExecutor is set.
func privateBrain(t *testing.T, withExecutor bool) (*testAPI, *pgxpool.Pool) {
	t.Helper()
	_, dbURL := sqltest.NewDB(t)
	if withExecutor {
		e, err := testenv.StartExecutor(dbURL)
		require.NoError(t, err)
		t.Cleanup(e.Stop)
	}
	m, err := startBrain(dbURL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return &testAPI{t: t, url: m.Server.URL(), token: testToken}, m.Pool
}

// TestTextPostgreSQLCannotStore: a NUL, a lone surrogate or invalid UTF-8 anywhere in a body, query or path
// is a 400 naming where it is, never a 500.
func TestTextPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tt := range []struct {
		name, method, path, body, where string
	}{
		{"nul in message", http.MethodPost, "/brain/run", `{"message": "note that a\u0000b"}`, "/message"},
		{"surrogate in message", http.MethodPost, "/brain/run", `{"message": "note that \ud800"}`, "/message"},
		{"invalid utf-8 in message", http.MethodPost, "/brain/run", "{\"message\": \"note that \xff\"}", "/message"},
		{"nul in conversation id", http.MethodPost, "/brain/run", `{"message": "health", "conversation_id": "c\u0000"}`, "/conversation_id"},
		{"surrogate in context value", http.MethodPost, "/brain/run", `{"message": "health", "context": {"lead_id": "\udc00x"}}`, "/context/lead_id"},
		{"nul in call input", http.MethodPost, "/calls", `{"tool": "os.create_note", "input": {"title": "a\u0000"}}`, "/input/title"},
		{"nul in nested input", http.MethodPost, "/calls", `{"tool": "os.create_note", "input": {"title": "t", "tags": ["ok", "x\u0000"]}}`, "/input/tags/1"},
		{"surrogate in idempotency key", http.MethodPost, "/calls", `{"tool": "os.health_check", "idempotency_key": "k\ud83d"}`, "/idempotency_key"},
		{"nul in a key", http.MethodPost, "/calls", `{"tool": "os.create_note", "input": {"a\u0000": 1}}`, "/input"},
		{"nul in skill", http.MethodPost, "/skills", `{"slug": "s-nul", "name": "n\u0000"}`, "/name"},
		{"nul in query", http.MethodGet, "/calls?tool=%00", "", "tool"},
		{"invalid utf-8 in query", http.MethodGet, "/receipts?error_code=%FF", "", "error_code"},
		{"nul in error code", http.MethodGet, "/receipts?error_code=%00", "", "error_code"},
		{"invalid utf-8 in path", http.MethodGet, "/agents/%FF", "", "slug"},
		{"nul in path", http.MethodGet, "/skills/a%00b", "", "slug"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := *a
			a.t = t
			var body any
			if tt.body != "" {
				body = tt.body
			}
			var resp errorResponse
			status := a.do(tt.method, tt.path, body, &resp)
			require.Equal(t, http.StatusBadRequest, status, "%+v", resp.Errors)
			require.Len(t, resp.Errors, 1)
			require.Equal(t, brain.EINVALID, resp.Errors[0].Code)
			require.Contains(t, resp.Errors[0].Message, tt.where)
		})
	}
	// A pair of surrogates is one character, and fine.
	resp, status := a.run(map[string]any{"message": "note that the gutters are fine \U0001F600", "mode": "answer"})
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
}

// TestPlanIsAllOrNothing: a message understood only in part enqueues nothing and says which part.
func TestPlanIsAllOrNothing(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	title := "all-or-nothing " + uniq("t")
	resp, status := a.run(map[string]any{"message": "create a task to " + title + "; frobnicate the wibble"})
	require.Equal(t, http.StatusOK, status)
	require.False(t, resp.OK)
	require.Equal(t, brain.RunFailed, resp.Status)
	require.Empty(t, resp.Enqueued)
	require.Len(t, resp.Errors, 1)
	require.Equal(t, brain.ENOPLAN, resp.Errors[0].Code)
	require.Contains(t, resp.Errors[0].Message, `"frobnicate the wibble"`)
	require.Equal(t, 0, countCalls(t, shared.pool, resp.RunID))
	var tasks int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM os_tasks WHERE title LIKE $1`, "%"+title+"%").Scan(&tasks))
	require.Zero(t, tasks)
}

// TestDeadExecutorIsVisible: with no executor alive, /health is 503 and says so, and a call's wait ends
// with wait_timeout saying nothing will run it.
func TestDeadExecutorIsVisible(t *testing.T) {
	t.Parallel()
	a, _ := privateBrain(t, false)
	var health struct {
		OK        bool     `json:"ok"`
		Problems  []string `json:"problems"`
		Executors struct {
			Alive int `json:"alive"`
		} `json:"executors"`
	}
	require.Equal(t, http.StatusServiceUnavailable, a.do(http.MethodGet, "/health", nil, &health))
	require.False(t, health.OK)
	require.Zero(t, health.Executors.Alive)
	require.Contains(t, strings.Join(health.Problems, "; "), "no executor is running")

	var call struct {
		OK      bool           `json:"ok"`
		Receipt any            `json:"receipt"`
		Errors  []*brain.Error `json:"errors"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.health_check", "wait_timeout_ms": 300}, &call))
	require.False(t, call.OK)
	require.Nil(t, call.Receipt)
	require.Len(t, call.Errors, 1)
	require.Equal(t, brain.ETIMEOUT, call.Errors[0].Code)
	require.Contains(t, call.Errors[0].Message, "no executor is running")

	// The shared brain has an executor: healthy.
	var ok struct {
		OK        bool `json:"ok"`
		Executors struct {
			Alive int `json:"alive"`
		} `json:"executors"`
	}
	require.Equal(t, http.StatusOK, newAPI(t).do(http.MethodGet, "/health", nil, &ok))
	require.True(t, ok.OK)
	require.GreaterOrEqual(t, ok.Executors.Alive, 1)
}

// TestListsAreBounded: a listing carries large documents as a marker (the whole one is at GET /calls/{id})
// and a page ends early, with a cursor, before it grows large.
func TestListsAreBounded(t *testing.T) {
	t.Parallel()
	a, pool := privateBrain(t, true)
	ctx := context.Background()
	big := strings.Repeat("x", 200<<10)
	var ids []string
	for i := range 30 {
		var id string
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_note', $1) RETURNING id`,
			fmt.Sprintf(`{"title": "big %d", "content": %q}`, i, big)).Scan(&id))
		ids = append(ids, id)
	}
	var page struct {
		Calls []struct {
			ID    string         `json:"id"`
			Input map[string]any `json:"input"`
		} `json:"calls"`
		NextCursor *string `json:"next_cursor"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls?limit=1000", nil, &page))
	require.Len(t, page.Calls, 30)
	require.Nil(t, page.NextCursor)
	for _, c := range page.Calls {
		require.Equal(t, true, c.Input["truncated"], "input of %s", c.ID)
		require.Greater(t, c.Input["bytes"], float64(200<<10))
	}
	var one struct {
		Call gemsql.Call `json:"call"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls/"+ids[0], nil, &one))
	require.Contains(t, string(one.Call.Input), big)

	// Receipts: results over the bound are markers too (a failed receipt's details here).
	require.Eventually(t, func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_receipts`).Scan(&n)
		return n == 30
	}, 30*time.Second, 50*time.Millisecond)
	var receipts struct {
		Receipts []map[string]any `json:"receipts"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/receipts?limit=1000", nil, &receipts))
	require.Len(t, receipts.Receipts, 30)
}

// TestBearerSchemeIsCaseInsensitive: the Authorization scheme matches in any case (RFC 9110).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		req, err := http.NewRequest(http.MethodGet, shared.url+"/brain/tools", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", scheme+" "+testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, scheme)
	}
}
