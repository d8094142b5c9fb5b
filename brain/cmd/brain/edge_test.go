package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
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
	return &testAPI{t: t, url: m.Server.URL(), token: testToken, brain: m}, m.Pool
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

// TestListsAreBounded: a listing carries large inputs as a marker (the whole one is at GET /calls/{id}),
// and a page ends early, with a cursor, before it grows past 4 MiB.
func TestListsAreBounded(t *testing.T) {
	t.Parallel()
	a, pool := privateBrain(t, false) // no executor: the calls stay queued, the listing is all this test's
	ctx := context.Background()
	big := strings.Repeat("x", 200<<10)
	var bigIDs []string
	require.NoError(t, pool.QueryRow(ctx, `WITH c AS (INSERT INTO core_tool_calls (tool_name, input)
		SELECT 'os.create_note', jsonb_build_object('title', 'big ' || i, 'body', $1::text) FROM generate_series(1, 30) i RETURNING id)
		SELECT array_agg(id::text) FROM c`,
		big).Scan(&bigIDs))
	// 600 inputs just under the marker's bound: about 4.8 MB listed whole, more than one page holds.
	medium := strings.Repeat("y", 7<<10)
	_, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input)
		SELECT 'os.create_note', jsonb_build_object('title', 'medium ' || i, 'body', $1::text) FROM generate_series(1, 600) i`, medium)
	require.NoError(t, err)

	type listed struct {
		ID    string         `json:"id"`
		Input map[string]any `json:"input"`
	}
	seen := map[string]listed{}
	pages, cursor := 0, ""
	for {
		req, err := http.NewRequest(http.MethodGet, a.url+"/calls?limit=1000"+cursor, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", body)
		require.LessOrEqual(t, len(body), 4<<20+16<<10, "page %d", pages)
		var page struct {
			Calls      []listed `json:"calls"`
			NextCursor *string  `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(body, &page))
		for _, c := range page.Calls {
			seen[c.ID] = c
		}
		pages++
		if page.NextCursor == nil {
			break
		}
		require.Less(t, pages, 5)
		cursor = "&cursor=" + *page.NextCursor
	}
	require.Len(t, seen, 630)
	require.GreaterOrEqual(t, pages, 2, "630 calls of 7 KiB do not fit one page")
	for _, id := range bigIDs {
		require.Equal(t, true, seen[id].Input["truncated"], "input of %s: %.200v", id, seen[id])
		require.Greater(t, seen[id].Input["bytes"], float64(200<<10))
	}
	var one struct {
		Call gemsql.Call `json:"call"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls/"+bigIDs[0], nil, &one))
	require.Contains(t, string(one.Call.Input), big)
}

// TestListedReceiptsAreBounded: a receipt whose result is over the bound is listed with a marker in its
// place, and served whole with its call.
func TestListedReceiptsAreBounded(t *testing.T) {
	t.Parallel()
	a, pool := privateBrain(t, true)
	ctx := context.Background()
	// 60 notes with long titles and contents: a search for 50 of them returns more than 8 KiB.
	_, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input)
		SELECT 'os.create_note', jsonb_build_object('domain', 'business', 'title', 'boundedlisting ' || i || ' ' || repeat('z', 120),
			'content', 'boundedlisting ' || repeat('y', 120)) FROM generate_series(1, 60) i`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_receipts WHERE status = 'succeeded'`).Scan(&n)
		return n == 60
	}, 30*time.Second, 50*time.Millisecond)
	var made struct {
		Receipt *registry.Receipt `json:"receipt"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.search_notes",
		"input": map[string]any{"query": "boundedlisting", "limit": 50}, "wait_timeout_ms": 20000}, &made))
	require.NotNil(t, made.Receipt)
	require.Equal(t, registry.StatusSucceeded, made.Receipt.Status)
	require.Greater(t, len(made.Receipt.Result), 8<<10, "the search's result is over the bound")

	var receipts struct {
		Receipts []struct {
			CallID string         `json:"call_id"`
			Result map[string]any `json:"result"`
		} `json:"receipts"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/receipts?tool=os.search_notes", nil, &receipts))
	require.Len(t, receipts.Receipts, 1)
	require.Equal(t, true, receipts.Receipts[0].Result["truncated"])
	require.Greater(t, receipts.Receipts[0].Result["bytes"], float64(8<<10))
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
