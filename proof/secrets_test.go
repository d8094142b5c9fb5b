package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// secretLoginTool is a rest tool whose password is secret: the local service it posts to says whether the
// password is one it knows, which proves the handler had it in clear.
const secretLoginTool = `{
	"name": "lab.login",
	"description": "Logs in to the lab service with a user and a password (the password is secret).",
	"input_schema": {"type": "object", "properties": {
		"user": {"type": "string", "minLength": 1},
		"password": {"type": "string", "minLength": 8, "writeOnly": true}},
		"required": ["user", "password"], "additionalProperties": false},
	"output_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
	"permissions": ["read:external"],
	"idempotency": {"mode": "safe-retry"},
	"timeout_ms": 5000,
	"implementation": {"type": "rest", "method": "POST", "url": "${GEM_LAB_URL}/login"}
}`

// TestSecretsStayOutOfRecords plants a secret through every way a call is made — the HTTP API, plain SQL
// (in clear), an agent's tool call, a run_code program, MCP — and the LLM provider's key, runs them to
// their receipts (each handler had its secret in clear), then reads every row of every table and every log
// line of the brain and the executor (at debug level) for them.
func TestSecretsStayOutOfRecords(t *testing.T) {
	t.Parallel()
	bins := testBinaries(t)
	pool, dbURL := sqltest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	planted := func(way string) string { return "planted-" + way + "-" + strings.ReplaceAll(uuid.NewString(), "-", "") }
	secrets := map[string]string{}
	for _, way := range []string{"api", "sql", "chat", "code", "mcp"} {
		secrets[way] = planted(way)
	}
	providerKey := "sk-" + planted("provider")

	// The lab service knows the planted passwords, and counts the logins it saw with each.
	var mu sync.Mutex
	seen := map[string]int{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Password string `json:"password"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		seen[in.Password]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": slices.Contains(slices.Collect(maps.Values(secrets)), in.Password)})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	// The LLM: a local fake in OpenAI's wire format whose tool calls the test sets before each chat.
	var next atomic.Pointer[[]fakeToolCall]
	llm, err := startFakeLLM(providerKey, func(fakeRequest) []fakeToolCall { return *next.Load() })
	require.NoError(t, err)
	t.Cleanup(llm.close)

	regPath, err := registryWith(bins, secretLoginTool)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Remove(regPath) })
	key := strings.Repeat("5e", 32)
	logs := &sqltest.SyncBuffer{}
	env := []string{"GEM_REGISTRY=" + regPath, "GEM_SECRET_KEY=" + key, "GEM_LAB_URL=http://" + ln.Addr().String(), "GEM_LOG_LEVEL=debug"}
	exec, err := startExecutor(bins, dbURL, "secrets-executor", env, logs, pool, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = exec.stop(10 * time.Second) })
	brain, err := startBrain(bins, dbURL, append(env, "GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL="+llm.url,
		"GEM_LLM_API_KEY="+providerKey, "GEM_LLM_MODEL=fake-model"), logs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = brain.stop(10 * time.Second) })
	rig := &deviceRig{brain: brain, client: &http.Client{Timeout: 60 * time.Second}}
	api := func(method, path string, body any) map[string]any {
		t.Helper()
		var out map[string]any
		status, err := rig.api(ctx, method, path, body, &out)
		require.NoError(t, err)
		require.Less(t, status, 300, "%s %s: %d %v", method, path, status, out)
		return out
	}
	login := func(way string) map[string]any { return map[string]any{"user": way, "password": secrets[way]} }

	// 1. The HTTP API.
	out := api(http.MethodPost, "/calls", map[string]any{"tool": "lab.login", "input": login("api"), "wait_timeout_ms": 20000})
	require.Equal(t, true, out["receipt"].(map[string]any)["result"].(map[string]any)["ok"], "%v", out)

	// A sealed value copied from a stored call is refused: opening it would give this caller that secret.
	var envelope json.RawMessage
	require.NoError(t, pool.QueryRow(ctx, `SELECT input -> 'password' FROM core_tool_calls WHERE tool_name = 'lab.login' LIMIT 1`).Scan(&envelope))
	var refused map[string]any
	status, err := rig.api(ctx, http.MethodPost, "/calls", map[string]any{"tool": "lab.login", "input": map[string]any{"user": "thief", "password": envelope}}, &refused)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, "%v", refused)
	require.Contains(t, fmt.Sprint(refused), "send secret values in clear")

	// 2. Plain SQL, in clear: the executor seals it in the call's transaction.
	in, _ := json.Marshal(login("sql"))
	var sqlCall uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('lab.login', $1) RETURNING id`, in).Scan(&sqlCall))

	// 3. An agent's tool call, and 4. a run_code program with the secret in its source.
	api(http.MethodPost, "/skills", map[string]any{"slug": "lab-login", "name": "Lab login", "instructions": "Log in when asked.", "tools": []string{"lab.login"}})
	api(http.MethodPost, "/agents", map[string]any{"slug": "sec-agent", "name": "Secret agent", "max_tool_iterations": 3})
	api(http.MethodPut, "/agents/sec-agent/skills/lab-login", nil)
	api(http.MethodPost, "/agents", map[string]any{"slug": "sec-coder", "name": "Secret coder", "code_mode": true, "max_tool_iterations": 3})
	api(http.MethodPut, "/agents/sec-coder/skills/lab-login", nil)
	args, _ := json.Marshal(login("chat"))
	next.Store(&[]fakeToolCall{{Name: "lab__login", Arguments: string(args)}})
	out = api(http.MethodPost, "/agents/sec-agent/chat", map[string]any{"message": "log me in", "user_id": "u1"})
	require.Equal(t, "succeeded", out["tool_calls"].([]any)[0].(map[string]any)["status"], "%v", out)
	code, _ := json.Marshal(map[string]any{"code": fmt.Sprintf("const r = gem.lab.login({user: 'code', password: '%s'}); console.log('logged in with %s'); return r.ok;",
		secrets["code"], secrets["code"])})
	next.Store(&[]fakeToolCall{{Name: "run_code", Arguments: string(code)}})
	out = api(http.MethodPost, "/agents/sec-coder/chat", map[string]any{"message": "log me in with code", "user_id": "u1"})
	require.Equal(t, "succeeded", out["tool_calls"].([]any)[0].(map[string]any)["status"], "%v", out)

	// 5. MCP tools/call.
	rpc, err := newMCPHTTP(ctx, rig.client, brain)
	require.NoError(t, err)
	var mcpOut struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	require.NoError(t, rpc.rpc(ctx, 7, "tools/call", map[string]any{"name": "lab.login", "arguments": login("mcp")}, &mcpOut))
	require.False(t, mcpOut.IsError, "%v", mcpOut.StructuredContent)

	// Every call has its receipt, and every handler had its password in clear.
	require.Eventually(t, func() bool {
		var open int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE status IN ('queued', 'running')`).Scan(&open)
		return open == 0
	}, 30*time.Second, 20*time.Millisecond)
	var failed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_receipts WHERE tool_name = 'lab.login' AND (status <> 'succeeded' OR result ->> 'ok' <> 'true')`).Scan(&failed))
	require.Zero(t, failed)
	mu.Lock()
	for way, s := range secrets {
		require.Equal(t, 1, seen[s], "the service saw the %s password once", way)
	}
	mu.Unlock()

	// Now look for them everywhere.
	needles := map[string]string{"the provider key": providerKey}
	for way, s := range secrets {
		needles["the "+way+" secret"] = s
	}
	rows, err := pool.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Schema, Name string }])
	require.NoError(t, err)
	require.Greater(t, len(tables), 40)
	for _, tb := range tables {
		ident := pgx.Identifier{tb.Schema, tb.Name}.Sanitize()
		for what, needle := range needles {
			var n int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+ident+` x WHERE strpos(x::text, $1) > 0`, needle).Scan(&n))
			require.Zero(t, n, "%s is in %d rows of %s", what, n, ident)
		}
	}
	var sealed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE tool_name = 'lab.login' AND input -> 'password' ? '$gem_secret'`).Scan(&sealed))
	require.Equal(t, len(secrets), sealed, "every stored password is sealed")

	all := logs.String()
	require.Contains(t, all, "lab.login", "the logs are the processes' (at debug level)")
	for what, needle := range needles {
		require.False(t, strings.Contains(all, needle), "%s is in the logs", what)
	}
}
