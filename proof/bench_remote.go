package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/sql/gemsql"
)

// Scenarios of the ways in past the plain insert: the brain's MCP endpoint next to its HTTP API on the same
// tool, and a rest tool next to a Go handler doing the same work.
const (
	scBrainHealth = "brain /brain/run, os.health_check"
	scMCP         = "brain MCP tools/call, os.health_check"
	scMCPSDK      = "brain MCP tools/call, Go SDK client"
	scREST        = "GEM, rest tool (local HTTP server)"
	scRESTGo      = "GEM, the same work as a Go handler"
	scDevice      = "GEM, the rest tool relayed to a device"
)

// benchMCP measures one os.health_check through the brain's two doors in the same run: POST /brain/run
// (the rules planner plans the health check) and an MCP tools/call over streamable HTTP. The goal's row
// makes the tools/call with the same plain HTTP client as /brain/run, so the two rows differ only by the
// server's door; a second row makes it through the official Go SDK's client, as a Go host would, which adds
// the client's own cost.
func benchMCP(ctx context.Context, cfg benchConfig, res *benchResult, brain *brainProc, settle func(context.Context) error,
	progress func(string, ...any)) error {
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	progress("brain: POST /brain/run planning os.health_check")
	err := measureLatency(ctx, cfg, res, scBrainHealth, func(ctx context.Context, i int) (time.Time, error) {
		return brainRun(ctx, httpClient, brain, "health check")
	}, settle, progress)
	if err != nil {
		return err
	}

	progress("brain: MCP tools/call os.health_check, plain HTTP client")
	rpc, err := newMCPHTTP(ctx, httpClient, brain)
	if err != nil {
		return err
	}
	err = measureLatency(ctx, cfg, res, scMCP, func(ctx context.Context, i int) (time.Time, error) {
		return rpc.callTool(ctx, i, ospack.HealthCheck)
	}, settle, progress)
	if err != nil {
		return err
	}

	progress("brain: MCP tools/call os.health_check, Go SDK client")
	mcpHTTP := &http.Client{Transport: bearer{token: brain.token, base: &http.Transport{MaxIdleConnsPerHost: 64}}, Timeout: 30 * time.Second}
	client := mcp.NewClient(&mcp.Implementation{Name: "gem-proof", Version: "1"}, nil)
	// The SDK's client sends a session's requests one after another (each POST under the connection's write
	// lock until the server answers), as a host making one call at a time does; the open loop needs calls
	// in flight together, so it spreads them over several sessions, as several hosts would.
	sessions := make([]*mcp.ClientSession, mcpSessions)
	for i := range sessions {
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: brain.url + "/mcp", HTTPClient: mcpHTTP, DisableStandaloneSSE: true}, nil)
		if err != nil {
			return fmt.Errorf("MCP connect: %w", err)
		}
		defer s.Close()
		sessions[i] = s
	}
	return measureLatency(ctx, cfg, res, scMCPSDK, func(ctx context.Context, i int) (time.Time, error) {
		out, err := sessions[i%len(sessions)].CallTool(ctx, &mcp.CallToolParams{Name: ospack.HealthCheck, Arguments: map[string]any{}})
		end := time.Now()
		if err != nil {
			return end, err
		}
		if out.IsError || out.StructuredContent == nil {
			b, _ := json.Marshal(out)
			return end, fmt.Errorf("MCP call did not succeed: %.300s", b)
		}
		return end, nil
	}, settle, progress)
}

// mcpHTTP is an MCP client in plain HTTP, as a host behind nothing but an HTTP library speaks to a stateless
// server: one initialize for the protocol version, then each tools/call is one POST whose answer is either a
// JSON body or an event stream carrying the JSON-RPC response.
type mcpHTTP struct {
	client  *http.Client
	brain   *brainProc
	version string
}

func newMCPHTTP(ctx context.Context, client *http.Client, b *brainProc) (*mcpHTTP, error) {
	c := &mcpHTTP{client: client, brain: b}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	err := c.rpc(ctx, 0, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "gem-proof", "version": "1"}}, &init)
	if err != nil {
		return nil, fmt.Errorf("MCP initialize: %w", err)
	}
	if init.ProtocolVersion == "" {
		return nil, fmt.Errorf("MCP initialize answered no protocol version")
	}
	c.version = init.ProtocolVersion
	return c, nil
}

// callTool calls a tool without arguments and checks that it answered a result.
func (c *mcpHTTP) callTool(ctx context.Context, id int, tool string) (time.Time, error) {
	var out struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	err := c.rpc(ctx, id+1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, &out)
	end := time.Now()
	if err == nil && (out.IsError || len(out.StructuredContent) == 0) {
		err = fmt.Errorf("MCP call did not succeed: isError %v, structuredContent %.300s", out.IsError, out.StructuredContent)
	}
	return end, err
}

// rpc makes one JSON-RPC request and decodes its result.
func (c *mcpHTTP) rpc(ctx context.Context, id int, method string, params, result any) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.brain.url+"/mcp", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.brain.token)
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("MCP %s: %s: %.300s", method, resp.Status, data)
	}
	msg := data
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for line := range strings.Lines(string(data)) {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok && strings.Contains(d, `"id"`) {
				msg = []byte(strings.TrimSpace(d))
			}
		}
	}
	var out struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &out); err != nil {
		return fmt.Errorf("MCP %s answered %.300q: %w", method, data, err)
	}
	if out.Error != nil {
		return fmt.Errorf("MCP %s: error %d: %s", method, out.Error.Code, out.Error.Message)
	}
	if out.ID != id {
		return fmt.Errorf("MCP %s: answer for request %d, not %d", method, out.ID, id)
	}
	return json.Unmarshal(out.Result, result)
}

// mcpSessions is how many MCP sessions the open loop spreads its calls over.
const mcpSessions = 16

// bearer adds the brain's bearer token to every MCP request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// restBenchTool is the rest tool benchREST adds to the registry: GET a local server that reads the database
// server's version and clock in one statement, as os.health_check's Go handler reads them (with the queue's
// state) in one statement.
const restBenchTool = `{
	"name": "bench.rest_status",
	"description": "Reads the database server's version and clock through a local HTTP service (make bench's rest tool).",
	"input_schema": {"type": "object", "properties": {}, "additionalProperties": false},
	"output_schema": {"type": "object", "required": ["server_version", "server_time"],
		"properties": {"server_version": {"type": "string"}, "server_time": {"type": "string"}}},
	"permissions": ["read:external"],
	"idempotency": {"mode": "safe-retry"},
	"timeout_ms": 5000,
	"implementation": {"type": "rest", "method": "GET", "url": "${GEM_BENCH_REST_URL}/status"}
}`

// benchREST measures a rest tool against a local server next to a Go handler whose work is one database
// statement too (os.health_check), each on an executor of its own, in the same run.
func benchREST(ctx context.Context, cfg benchConfig, res *benchResult, bins binaries, gemURL string, gemPool *pgxpool.Pool,
	settle func(context.Context) error, progress func(string, ...any)) (err error) {
	regPath, err := registryWith(bins, restBenchTool)
	if err != nil {
		return err
	}
	defer os.Remove(regPath)
	url, closeServer, err := statusServer(ctx, gemURL)
	if err != nil {
		return err
	}
	defer closeServer()

	progress("GEM executor: a rest tool (GET a local HTTP server) next to a Go handler")
	exec, err := startExecutor(bins, gemURL, "bench-executor-rest", []string{"GEM_REGISTRY=" + regPath, "GEM_BENCH_REST_URL=" + url},
		cfg.Log, gemPool, true)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := exec.stop(40 * time.Second); err == nil {
			err = stopErr
		}
	}()
	listener, err := listen(ctx, gemURL, gemsql.ReceiptChannel)
	if err != nil {
		return err
	}
	defer listener.close()
	call := func(tool, device string) func(context.Context, int) (time.Time, error) {
		var dev any
		if device != "" {
			dev = device
		}
		return func(ctx context.Context, i int) (time.Time, error) {
			id := uuid.Must(uuid.NewV7())
			if _, err := gemPool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name, input, device) VALUES ($1, $2, '{}', $3)`, id, tool, dev); err != nil {
				return time.Time{}, err
			}
			end, err := listener.wait(ctx, id.String())
			if err != nil {
				return end, err
			}
			var status string
			if err := gemPool.QueryRow(ctx, `SELECT status FROM core_tool_receipts WHERE call_id = $1`, id).Scan(&status); err != nil || status != "succeeded" {
				return end, fmt.Errorf("%s call %s ended %q (%v)", tool, id, status, err)
			}
			return end, nil
		}
	}
	if err := measureLatency(ctx, cfg, res, scREST, call("bench.rest_status", ""), settle, progress); err != nil {
		return err
	}
	if err := measureLatency(ctx, cfg, res, scRESTGo, call(ospack.HealthCheck, ""), settle, progress); err != nil {
		return err
	}

	// The same rest tool served by a device: the executor relays each call through the hub (a brain) to an
	// `executor device` process, which makes the same request.
	progress("devices: the rest tool relayed through the hub to a device")
	brain, err := startBrain(bins, gemURL, []string{"GEM_REGISTRY=" + regPath}, cfg.Log)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := brain.stop(15 * time.Second); err == nil {
			err = stopErr
		}
	}()
	rig := &deviceRig{bins: bins, dbURL: gemURL, pool: gemPool, brain: brain, client: &http.Client{Timeout: 30 * time.Second}}
	token, err := rig.addDevice(ctx, "bench-device")
	if err != nil {
		return err
	}
	doc, err := os.CreateTemp("", "gem-bench-device-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(doc.Name())
	if _, err := fmt.Fprintf(doc, `{"version": "bench-device", "tools": [%s]}`, restBenchTool); err != nil {
		return err
	}
	_ = doc.Close()
	device, err := startProc("bench-device", bins.executor, []string{"device"}, []string{"GEM_DEVICE_HUB=" + brain.url,
		"GEM_DEVICE_TOKEN=" + token, "GEM_DEVICE_REGISTRY=" + doc.Name(), "GEM_BENCH_REST_URL=" + url, "GEM_LOG_LEVEL=warn"}, cfg.Log)
	if err != nil {
		return err
	}
	defer func() { _ = device.stop(10 * time.Second) }()
	if err := rig.awaitAlive(device, "bench-device", true); err != nil {
		return err
	}
	return measureLatency(ctx, cfg, res, scDevice, call("bench.rest_status", "bench-device"), settle, progress)
}

// registryWith writes the repository's registry with extra tools added to a temporary file.
func registryWith(bins binaries, tools ...string) (string, error) {
	data, err := os.ReadFile(filepath.Join(bins.root, "tools.registry.json"))
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	list, _ := doc["tools"].([]any)
	for _, t := range tools {
		var v any
		if err := json.Unmarshal([]byte(t), &v); err != nil {
			return "", err
		}
		list = append(list, v)
	}
	doc["tools"] = list
	f, err := os.CreateTemp("", "gem-bench-registry-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return f.Name(), json.NewEncoder(f).Encode(doc)
}

// statusServer serves GET /status: the database server's version and clock, read in one statement. It
// returns the server's URL and what stops it.
func statusServer(ctx context.Context, dbURL string) (string, func(), error) {
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-bench-rest", MaxConns: 16})
	if err != nil {
		return "", nil, err
	}
	if err := warmPool(ctx, pool, 8); err != nil {
		pool.Close()
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pool.Close()
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		var out struct {
			ServerVersion string    `json:"server_version"`
			ServerTime    time.Time `json:"server_time"`
		}
		if err := pool.QueryRow(r.Context(), `SELECT current_setting('server_version'), now()`).Scan(&out.ServerVersion, &out.ServerTime); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close(); pool.Close() }, nil
}

// Code mode's scenarios: one chat turn whose run_code program makes 5 calls, against 5 sequential
// /brain/run calls, each of os.health_check. The LLM is the local fake, which answers at once.
const (
	scCode5 = "brain chat, run_code making 5 calls (instant fake LLM)"
	scRuns5 = "brain, 5 sequential POST /brain/run"
	// The agent loop's own cost: a chat turn whose (instant, fake) model asks for one tool call, or for five
	// in one answer, which the loop makes at once and waits for together.
	scAgent1 = "brain chat, 1 tool call in a turn (instant fake LLM)"
	scAgent5 = "brain chat, 5 parallel tool calls in a turn (instant fake LLM)"
	// The same one-call turn asked with Accept: text/event-stream, measured to its first event (run_started,
	// read from the database after the turn's first transaction): how soon a client sees its turn begin.
	scAgentStream = "brain chat, first event of a streamed turn (1 tool call, instant fake LLM)"

	fakeLLMKey       = "bench-fake-llm-key-0123456789"
	fiveCallsProgram = `{"code": "const n = []; for (let i = 0; i < 5; i++) { n.push(Object.keys(gem.os.health_check({})).length); } return n;"}`
)

func benchCode(ctx context.Context, cfg benchConfig, res *benchResult, brain *brainProc, base *baselineStack, settle func(context.Context) error,
	progress func(string, ...any)) error {
	rig := &deviceRig{brain: brain, client: &http.Client{Timeout: 60 * time.Second}}
	agent := "bench-coder"
	if err := setUpAgents(ctx, rig); err != nil {
		return err
	}
	var baseRig *deviceRig
	if base != nil {
		var err error
		if baseRig, err = base.rig(ctx); err != nil {
			return fmt.Errorf("the baseline build: %w", err)
		}
	}
	// Each sample is five calls: fewer samples, and a fifth of the rate, keep the calls per second the same.
	five := cfg
	five.Calls, five.OpenCalls, five.Rate = min(cfg.Calls, 200), min(cfg.OpenCalls, 200), cfg.Rate/5
	if err := benchAgentLoop(ctx, five, res, rig, baseRig, both(settle, base), progress); err != nil {
		return err
	}
	progress("code mode: a chat turn whose run_code program makes 5 calls, against 5 sequential /brain/run")
	err := measureLatency(ctx, five, res, scCode5, func(ctx context.Context, i int) (time.Time, error) {
		var out struct {
			OK        bool   `json:"ok"`
			Reply     string `json:"reply"`
			ToolCalls []struct {
				Tool   string `json:"tool"`
				Status string `json:"status"`
			} `json:"tool_calls"`
		}
		status, err := rig.api(ctx, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "check the health five times", "user_id": "bench"}, &out)
		end := time.Now()
		if err != nil {
			return end, err
		}
		succeeded := 0
		for _, tc := range out.ToolCalls {
			if tc.Tool == ospack.HealthCheck && tc.Status == "succeeded" {
				succeeded++
			}
		}
		if status != http.StatusOK || !out.OK || succeeded != 5 {
			return end, fmt.Errorf("chat answered %d, ok %v, %d health checks succeeded: %+v", status, out.OK, succeeded, out)
		}
		return end, nil
	}, settle, progress)
	if err != nil {
		return err
	}
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	return measureLatency(ctx, five, res, scRuns5, func(ctx context.Context, i int) (time.Time, error) {
		var end time.Time
		for range 5 {
			var err error
			if end, err = brainRun(ctx, httpClient, brain, "health check"); err != nil {
				return end, err
			}
		}
		return end, nil
	}, settle, progress)
}

// setUpAgents gives a brain the bench's skill and agents: bench-coder (code mode) and benchAgent.
func setUpAgents(ctx context.Context, rig *deviceRig) error {
	for _, step := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/skills", map[string]any{"slug": "bench-health", "name": "Health", "instructions": "Check health.", "tools": []string{ospack.HealthCheck}}},
		{http.MethodPost, "/agents", map[string]any{"slug": "bench-coder", "name": "Bench coder", "code_mode": true, "max_tool_iterations": 3}},
		{http.MethodPut, "/agents/bench-coder/skills/bench-health", nil},
		{http.MethodPost, "/agents", map[string]any{"slug": benchAgent, "name": "Bench agent", "max_tool_iterations": 3}},
		{http.MethodPut, "/agents/" + benchAgent + "/skills/bench-health", nil},
	} {
		var out map[string]any
		status, err := rig.api(ctx, step.method, step.path, step.body, &out)
		if err != nil {
			return err
		}
		if status >= 300 {
			return fmt.Errorf("%s %s: %d %v", step.method, step.path, status, out)
		}
	}
	return nil
}

// benchAgent is the agent of the agent-loop scenarios: os.health_check, no code mode.
const benchAgent = "bench-agent"

// benchLLMCalls is what the bench's fake model asks for: a code-mode agent's run_code program, or, for the
// agent loop, five health checks when the message says "five", else one.
func benchLLMCalls(req fakeRequest) []fakeToolCall {
	if req.offers("run_code") {
		return []fakeToolCall{{Name: "run_code", Arguments: fiveCallsProgram}}
	}
	n := 1
	if strings.Contains(req.User, "five") {
		n = 5
	}
	calls := make([]fakeToolCall, n)
	for i := range calls {
		calls[i] = fakeToolCall{Name: "os__health_check", Arguments: "{}"}
	}
	return calls
}

// benchAgentLoop measures chat turns of a plain agent whose model asks for one tool call, then for five at
// once: the loop's own cost (two model requests, the calls made and waited for together, the turn and its
// messages stored), apart from any model's latency.
func benchAgentLoop(ctx context.Context, cfg benchConfig, res *benchResult, rig, baseRig *deviceRig, settle func(context.Context) error,
	progress func(string, ...any)) error {
	turnOn := func(rig *deviceRig, message string, want int) func(context.Context, int) (time.Time, error) {
		return func(ctx context.Context, i int) (time.Time, error) {
			var out struct {
				OK        bool `json:"ok"`
				ToolCalls []struct {
					Tool   string `json:"tool"`
					Status string `json:"status"`
				} `json:"tool_calls"`
			}
			status, err := rig.api(ctx, http.MethodPost, "/agents/"+benchAgent+"/chat", map[string]any{"message": message, "user_id": "bench"}, &out)
			end := time.Now()
			if err != nil {
				return end, err
			}
			succeeded := 0
			for _, tc := range out.ToolCalls {
				if tc.Tool == ospack.HealthCheck && tc.Status == "succeeded" {
					succeeded++
				}
			}
			if status != http.StatusOK || !out.OK || succeeded != want {
				return end, fmt.Errorf("chat answered %d, ok %v, %d of %d health checks succeeded: %+v", status, out.OK, succeeded, want, out)
			}
			return end, nil
		}
	}
	turn := func(message string, want int) func(context.Context, int) (time.Time, error) {
		return turnOn(rig, message, want)
	}
	scenarios := []latencyScenario{
		{scAgent1, turn("one health check", 1)},
		{scAgent5, turn("five health checks", 5)},
		{scAgentStream, func(ctx context.Context, i int) (time.Time, error) {
			return firstStreamedEvent(ctx, rig, "one health check")
		}},
	}
	progress("agent loop: chat turns with 1 tool call, with 5 parallel tool calls, and streamed (to the first event), in turn")
	if baseRig != nil {
		// The baseline build's one-call turn takes its turn between this build's, call by call.
		progress("agent loop: the baseline build's one-call turns, in turn with them")
		scenarios = append(scenarios, latencyScenario{scAgent1Baseline, turnOn(baseRig, "one health check", 1)})
	}
	return measureInterleaved(ctx, cfg, res, scenarios, settle, progress)
}

// firstStreamedEvent sends a chat turn asking for its events and returns when the first arrived; it reads
// the stream to its end (the turn's response) before returning, so turns do not pile up.
func firstStreamedEvent(ctx context.Context, rig *deviceRig, message string) (time.Time, error) {
	body, _ := json.Marshal(map[string]any{"message": message, "user_id": "bench"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rig.brain.url+"/agents/"+benchAgent+"/chat", bytes.NewReader(body))
	if err != nil {
		return time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+rig.brain.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := rig.client.Do(req)
	if err != nil {
		return time.Now(), err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return time.Now(), fmt.Errorf("a streamed chat answered %s (%s): %.300s", resp.Status, resp.Header.Get("Content-Type"), data)
	}
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	first := time.Now()
	if err != nil || line != "id: 1\n" {
		return first, fmt.Errorf("a streamed chat's first line was %q (%v), not its first event", line, err)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return first, err
	}
	if !bytes.Contains(rest, []byte("event: response\ndata: {\"ok\":true")) {
		return first, fmt.Errorf("a streamed chat did not end with an ok response: %.500s", rest)
	}
	return first, nil
}
