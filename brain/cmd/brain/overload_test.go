package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestOverloadConfig: GEM_BRAIN_MAX_IN_FLIGHT, GEM_BRAIN_MAX_QUEUE and GEM_BRAIN_QUEUE_WAIT, and their nonsense.
func TestOverloadConfig(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cfg, err := ConfigFromEnv(env())
	require.NoError(t, err)
	require.Equal(t, api.AdmissionConfig{}, cfg.Admission, "unset: the defaults, set from the pool when the server starts")
	pool := int(shared.pool.Config().MaxConns)
	require.GreaterOrEqual(t, pool, 20)
	inFlight := max(64, pool-pool/4)
	require.Equal(t, api.AdmissionConfig{MaxInFlight: inFlight, MaxQueue: 4 * inFlight, QueueWait: 2 * time.Second}, shared.brain.Server.Admission(),
		"the shared brain's: 64, or three quarters of a larger pool")

	cfg, err = ConfigFromEnv(env("GEM_BRAIN_MAX_IN_FLIGHT", "8", "GEM_BRAIN_MAX_QUEUE", "32", "GEM_BRAIN_QUEUE_WAIT", "500ms"))
	require.NoError(t, err)
	require.Equal(t, api.AdmissionConfig{MaxInFlight: 8, MaxQueue: 32, QueueWait: 500 * time.Millisecond}, cfg.Admission)

	cfg, err = ConfigFromEnv(env("GEM_BRAIN_MAX_QUEUE", "0"))
	require.NoError(t, err)
	require.Equal(t, api.NoQueue, cfg.Admission.MaxQueue, "0: no queue")
	cfg, err = ConfigFromEnv(env("GEM_BRAIN_MAX_IN_FLIGHT", "OFF"))
	require.NoError(t, err)
	require.True(t, cfg.Admission.Off)

	for name, values := range map[string][]string{
		"GEM_BRAIN_MAX_IN_FLIGHT": {"0", "-1", "many", "1.5"},
		"GEM_BRAIN_MAX_QUEUE":     {"-1", "lots", "off"},
		"GEM_BRAIN_QUEUE_WAIT":    {"0", "-1s", "soon", "2", "2m"},
	} {
		for _, v := range values {
			_, err := ConfigFromEnv(env(name, v))
			require.ErrorContains(t, err, name, v)
			require.ErrorContains(t, err, strconv.Quote(v), v)
		}
	}
}

// overloadClient sends requests from any goroutine (no require there): status, headers and body.
type overloadClient struct{ url string }

type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (o overloadClient) send(ctx context.Context, method, path string, body any) answer {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return answer{err: err}
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, o.url+path, r)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data, err: err}
}

// async sends a request on its own goroutine.
func (o overloadClient) async(ctx context.Context, method, path string, body any) <-chan answer {
	ch := make(chan answer, 1)
	go func() { ch <- o.send(ctx, method, path, body) }()
	return ch
}

// heldLLM is a fake LLM whose answers wait, each, until the test releases them: the turn that holds tells
// the test it has the request (entered), so a chat holds its brain's slot for as long as the test wants.
type heldLLM struct {
	*llmfake.Server
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldLLM(t *testing.T, turns ...llmfake.Turn) *heldLLM {
	h := &heldLLM{entered: make(chan struct{}, 4), release: make(chan struct{})}
	h.Server = llmfake.NewOpenAI(t, fakeKey, turns...)
	t.Cleanup(h.free) // before the fake's own cleanup, which waits for its handlers
	return h
}

// hold is a turn that waits for the release.
func (h *heldLLM) hold(text string) llmfake.Turn {
	return llmfake.Turn{Text: text, Check: func(require.TestingT, *llmfake.Request) {
		h.entered <- struct{}{}
		<-h.release
	}}
}

func (h *heldLLM) free() { h.once.Do(func() { close(h.release) }) }

// awaitEntered waits until a chat is inside the LLM, holding its slot.
func (h *heldLLM) awaitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no chat reached the LLM")
	}
}

// overloadBrain starts a brain on the shared database (and its executor) with an admission limit and a held LLM.
func overloadBrain(t *testing.T, llm *heldLLM, adm api.AdmissionConfig) (*testAPI, overloadClient) {
	t.Helper()
	m, err := startBrain(shared.dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: llm.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Admission = adm
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	require.Equal(t, adm, m.Server.Admission())
	m.Server.TestSignals.LineChanged.Init(t)
	return &testAPI{t: t, url: m.Server.URL(), token: testToken, brain: m}, overloadClient{url: m.Server.URL()}
}

// requireOverloaded checks a 503 overloaded: Retry-After in whole seconds (at least 1) and the API's error
// body, whose details say what the limiter saw.
func requireOverloaded(t *testing.T, a answer, reason string) map[string]any {
	t.Helper()
	require.NoError(t, a.err)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%s", a.body)
	secs, err := strconv.Atoi(a.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", a.header.Get("Retry-After"))
	require.GreaterOrEqual(t, secs, 1)
	var e errorResponse
	require.NoError(t, json.Unmarshal(a.body, &e), "%s", a.body)
	require.False(t, e.OK)
	require.Len(t, e.Errors, 1)
	require.Equal(t, brain.EOVERLOADED, e.Errors[0].Code)
	details := e.Errors[0].Details.(map[string]any)
	require.Equal(t, reason, details["reason"])
	require.Equal(t, float64(secs), details["retry_after_s"])
	return details
}

// scrape reads the brain's metrics.
func scrape(t *testing.T, a *testAPI) telemetrytest.Families {
	t.Helper()
	f, status, err := telemetrytest.Scrape(a.url+"/metrics", testToken)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	return f
}

// requireGauges checks that the brain's gauges show inFlight running and queued waiting.
func requireGauges(t *testing.T, a *testAPI, inFlight, queued float64) {
	t.Helper()
	f := scrape(t, a)
	require.Equal(t, inFlight, f.Value("gem_admission_in_flight"), "in flight")
	require.Equal(t, queued, f.Value("gem_admission_queued"), "queued")
}

// awaitLine waits until the brain's admission line, changed by a request joining or leaving it, holds n
// requests, and checks that the gauges show it with inFlight running.
func awaitLine(t *testing.T, a *testAPI, inFlight float64, n int) {
	t.Helper()
	for a.brain.Server.TestSignals.LineChanged.Wait() != n {
	}
	requireGauges(t, a, inFlight, float64(n))
}

// awaitSlotFreed waits until an admission slot is given back to the free ones (watchSlots), and checks that
// the gauges show none taken and none waiting.
func awaitSlotFreed(t *testing.T, a *testAPI) {
	t.Helper()
	a.brain.Server.TestSignals.SlotFreed.Wait()
	requireGauges(t, a, 0, 0)
}

// watchSlots makes the brain report the slots given back from now on to awaitSlotFreed (not those of the
// requests before, such as making the test's agent).
func watchSlots(a *testAPI) {
	a.brain.Server.TestSignals.SlotFreed.Init(a.t)
}

// TestOverloadSaturatedBrain: a brain with one slot and a line of one, the slot held by an agent's chat whose
// LLM answer the test holds. A request beyond the line gets 503 with Retry-After, over HTTP and over MCP; a
// client that goes away leaves the line; health, reads and MCP's tools/list answer meanwhile; the request in
// line is served when the slot frees; the metrics count what was refused.
func TestOverloadSaturatedBrain(t *testing.T) {
	t.Parallel()
	llm := newHeldLLM(t)
	llm.Push(llm.hold("First answer."), llmfake.Turn{Text: "Second answer."})
	a, o := overloadBrain(t, llm, api.AdmissionConfig{MaxInFlight: 1, MaxQueue: 1, QueueWait: time.Minute})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}}) // (admin routes are not limited)
	mcpSession := session(t, a.url+"/mcp", nil, nil)                                         // (initialize is not limited)
	chat := func(ctx context.Context, message string) <-chan answer {
		return o.async(ctx, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": message, "user_id": "user-1"})
	}
	f := scrape(t, a)
	require.Zero(t, f.Value("gem_admission_rejected_total", "reason", "queue_full"))
	require.Zero(t, f.Value("gem_admission_rejected_total", "reason", "wait_timeout"))

	first := chat(context.Background(), "what is on my list?")
	llm.awaitEntered(t)
	requireGauges(t, a, 1, 0) // its slot was taken before its handler ran

	// A client that goes away while in line leaves it at once (the wait is a minute).
	ctx, cancel := context.WithCancel(context.Background())
	gone := chat(ctx, "never mind")
	awaitLine(t, a, 1, 1)
	cancel()
	require.Error(t, (<-gone).err)
	awaitLine(t, a, 1, 0)

	second := chat(context.Background(), "and now?")
	awaitLine(t, a, 1, 1)

	// Beyond the line: 503 overloaded at once, whichever expensive route.
	run := o.send(context.Background(), http.MethodPost, "/brain/run", map[string]any{"message": "create a task to call John", "mode": "enqueue_and_wait"})
	details := requireOverloaded(t, run, api.RejectQueueFull)
	require.Equal(t, map[string]any{"reason": "queue_full", "in_flight": 1.0, "queued": 1.0, "limit": 1.0, "max_queue": 1.0,
		"queue_wait_ms": 60000.0, "retry_after_s": details["retry_after_s"]}, details)
	call := o.send(context.Background(), http.MethodPost, "/calls", map[string]any{"tool": "os.health_check", "input": map[string]any{}, "wait_timeout_ms": 5000})
	requireOverloaded(t, call, api.RejectQueueFull)
	_, err := mcpSession.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.health_check", Arguments: map[string]any{}})
	require.ErrorContains(t, err, http.StatusText(http.StatusServiceUnavailable), "an MCP tools/call is refused too")

	// What is cheap answers meanwhile: health (no token), reads, MCP's tools/list.
	health := o.send(context.Background(), http.MethodGet, "/health", nil)
	require.NoError(t, health.err)
	require.Equal(t, http.StatusOK, health.status, "%s", health.body)
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls?limit=1", nil, nil))
	tools, err := session(t, a.url+"/mcp", nil, nil).ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools)

	f = scrape(t, a)
	require.Equal(t, 3.0, f.Value("gem_admission_rejected_total", "reason", "queue_full"))
	require.Zero(t, f.Value("gem_admission_rejected_total", "reason", "wait_timeout"))
	require.Equal(t, 2.0, f.Value("gem_http_requests_total", "route", "/agents/:slug/chat", "code", "503")+
		f.Value("gem_http_requests_total", "route", "/brain/run", "code", "503"))

	// The slot frees: the first chat answers, and the one in line is served.
	watchSlots(a)
	llm.free()
	for want, ch := range map[string]<-chan answer{"First answer.": first, "Second answer.": second} {
		got := <-ch
		require.NoError(t, got.err)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		var resp brain.ChatResponse
		require.NoError(t, json.Unmarshal(got.body, &resp))
		require.True(t, resp.OK, "%+v", resp.Errors)
		require.Equal(t, want, resp.Reply)
	}
	awaitSlotFreed(t, a) // the second chat's: the first one's was handed to it
	require.Equal(t, 0, llm.Remaining())
	require.Len(t, llm.Requests(), 2, "the chat whose client went away never reached the LLM")
}

// TestOverloadQueueWait: a request that waits in line longer than GEM_BRAIN_QUEUE_WAIT gets 503 with
// Retry-After, and is counted.
func TestOverloadQueueWait(t *testing.T) {
	t.Parallel()
	llm := newHeldLLM(t)
	llm.Push(llm.hold("Held."))
	const wait = 200 * time.Millisecond
	a, o := overloadBrain(t, llm, api.AdmissionConfig{MaxInFlight: 1, MaxQueue: 4, QueueWait: wait})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

	watchSlots(a)
	held := o.async(context.Background(), http.MethodPost, "/operator/chat", nil) // refused (400): its slot is given back
	require.Equal(t, http.StatusBadRequest, (<-held).status)
	awaitSlotFreed(t, a)
	held = o.async(context.Background(), http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hold on", "user_id": "user-1"})
	llm.awaitEntered(t)

	// Nothing frees the slot while it waits: it can only time out.
	start := time.Now()
	run := o.send(context.Background(), http.MethodPost, "/brain/run", map[string]any{"message": "create a task to call Ann", "mode": "enqueue_and_wait"})
	require.GreaterOrEqual(t, time.Since(start), wait)
	details := requireOverloaded(t, run, api.RejectWaitTimeout)
	require.Equal(t, 1.0, details["in_flight"])
	require.Equal(t, 0.0, details["queued"])
	require.Equal(t, float64(wait.Milliseconds()), details["queue_wait_ms"])

	f := scrape(t, a)
	require.Equal(t, 1.0, f.Value("gem_admission_rejected_total", "reason", "wait_timeout"))
	require.Zero(t, f.Value("gem_admission_rejected_total", "reason", "queue_full"))
	require.Equal(t, 1.0, f.Value("gem_admission_in_flight"))
	require.Zero(t, f.Value("gem_admission_queued"))

	llm.free()
	got := <-held
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	awaitSlotFreed(t, a)
}
