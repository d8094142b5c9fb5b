package agentskillshandlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	agentskillshandlers "github.com/gemhq/gem/packs/agentskills/handlers"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// testBundle is a migrated database of its own with an executor running the pack's handlers.
type testBundle struct {
	pool   *pgxpool.Pool
	waiter *gemsql.ReceiptWaiter
}

// setup starts an executor with the pack configured by cfg (the zero Config configures no provider).
func setup(t *testing.T, cfg agentskillspack.Config) (context.Context, *testBundle) {
	t.Helper()
	pool, url := sqltest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	reg, err := registry.Load("../../../tools.registry.json")
	require.NoError(t, err)
	waiter := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, waiter.Start(ctx))
	t.Cleanup(waiter.Stop)

	h := executor.Handlers{}
	agentskillshandlers.Register(h, cfg)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	e, err := executor.New(executor.Config{DatabaseURL: url, ID: "test-" + uuid.NewString()[:8]}, reg, h, pool, log)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(stopCtx)
	})
	return ctx, &testBundle{pool: pool, waiter: waiter}
}

// call makes a call with plain SQL, as a person would in psql, and waits for its receipt.
func (b *testBundle) call(t *testing.T, ctx context.Context, tool, input string) *registry.Receipt {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`,
		tool, input).Scan(&id))
	return b.wait(t, ctx, id)
}

// callFor makes a call for an agent (core_tool_calls.agent) and waits for its receipt.
func (b *testBundle) callFor(t *testing.T, ctx context.Context, agent, tool, input string) *registry.Receipt {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, agent) VALUES ($1, $2, $3) RETURNING id`,
		tool, input, agent).Scan(&id))
	return b.wait(t, ctx, id)
}

// callOnce makes a call with max_attempts 1 (a transient failure ends it at once) and waits for its receipt.
func (b *testBundle) callOnce(t *testing.T, ctx context.Context, tool, input string) *registry.Receipt {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, max_attempts) VALUES ($1, $2, 1) RETURNING id`,
		tool, input).Scan(&id))
	return b.wait(t, ctx, id)
}

func (b *testBundle) wait(t *testing.T, ctx context.Context, id uuid.UUID) *registry.Receipt {
	t.Helper()
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := b.waiter.Wait(waitCtx, []uuid.UUID{id})
	require.NoError(t, err, "call %s has no receipt", id)
	return res.Receipts[id]
}

// succeed makes a call, requires it to succeed and decodes its result into out.
func (b *testBundle) succeed(t *testing.T, ctx context.Context, tool, input string, out any) *registry.Receipt {
	t.Helper()
	r := b.call(t, ctx, tool, input)
	requireSucceeded(t, r, out)
	return r
}

func requireSucceeded(t *testing.T, r *registry.Receipt, out any) {
	t.Helper()
	require.Equal(t, registry.StatusSucceeded, r.Status, "error: %+v", r.Error)
	if out != nil {
		require.NoError(t, json.Unmarshal(r.Result, out))
	}
}

// requireFailed requires a receipt with the status and code and returns its error details.
func requireFailed(t *testing.T, r *registry.Receipt, status registry.ReceiptStatus, code registry.ErrorCode) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, "result: %s", r.Result)
	require.NotNil(t, r.Error)
	require.Equal(t, code, r.Error.Code, "error: %s %s", r.Error.Message, r.Error.Details)
	d := map[string]any{}
	if len(r.Error.Details) > 0 {
		require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	}
	return d
}

// requireNotConfigured requires a not_configured receipt naming exactly the environment variables.
func requireNotConfigured(t *testing.T, r *registry.Receipt, env ...string) registry.NotConfiguredDetails {
	t.Helper()
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	require.Equal(t, registry.CodeNotConfigured, r.Error.Code)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Equal(t, env, d.RequiredEnv)
	require.NotEmpty(t, d.Reason)
	require.NotEmpty(t, d.NextSteps)
	for _, e := range env {
		require.Contains(t, d.Reason+fmt.Sprint(d.NextSteps), e, "the receipt says what to set")
	}
	return d
}

// count returns one integer from SQL.
func (b *testBundle) count(t *testing.T, ctx context.Context, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

// writes maps "table op" to the row count in a receipt's effects.db_writes.
func writes(r *registry.Receipt) map[string]int {
	m := map[string]int{}
	for _, w := range r.Effects.DBWrites {
		m[w.Table+" "+w.Op] = w.Count
	}
	return m
}

// fakeProvider is an httptest server standing in for a paid provider. Its handler checks each request
// against the provider's documented wire format and records what it finds wrong; the test then requires
// there was nothing (a handler cannot fail a test from the server's goroutine).
type fakeProvider struct {
	*httptest.Server

	mu       sync.Mutex
	problems []string
	requests int
}

// newFakeProvider starts a fake whose handler answers each request.
func newFakeProvider(t *testing.T, handle func(f *fakeProvider, w http.ResponseWriter, r *http.Request)) *fakeProvider {
	t.Helper()
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		f.mu.Unlock()
		handle(f, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// expect records a problem unless ok.
func (f *fakeProvider) expect(ok bool, format string, args ...any) {
	if ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

// checked returns how many requests the fake received, and requires they were all well formed.
func (f *fakeProvider) checked(t *testing.T) int {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Empty(t, f.problems, "requests the real provider would refuse")
	return f.requests
}

// writeJSON answers with a status and a JSON body.
func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decodeBody decodes a JSON request body into a map, recording a problem if it is not one.
func (f *fakeProvider) decodeBody(r *http.Request) map[string]any {
	var body map[string]any
	err := json.NewDecoder(r.Body).Decode(&body)
	f.expect(err == nil, "the body is not a JSON object: %v", err)
	return body
}

// jsonString marshals v for use as a call's input.
func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
