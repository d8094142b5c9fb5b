package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/executor/remote"
	"github.com/gemhq/gem/executor/remote/mcppeers"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// mcpLog records the remote package's log lines, to find the pids of the stdio servers it starts.
type mcpLog struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *mcpLog) Write(p []byte) (int, error) {
	var line map[string]any
	if json.Unmarshal(p, &line) == nil {
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
	}
	return len(p), nil
}

// pids returns the pid of every stdio server started, in order.
func (l *mcpLog) pids() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pids []int
	for _, line := range l.lines {
		if pid, _ := line["pid"].(float64); line["message"] == "MCP server connected" && pid > 0 {
			pids = append(pids, int(pid))
		}
	}
	return pids
}

// connected lists the value of field in each "MCP server connected" line that has it.
func (l *mcpLog) connected(field string) []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []any
	for _, line := range l.lines {
		if v, ok := line[field]; ok && line["message"] == "MCP server connected" {
			out = append(out, v)
		}
	}
	return out
}

// connects counts the sessions opened.
func (l *mcpLog) connects() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if line["message"] == "MCP server connected" {
			n++
		}
	}
	return n
}

func (l *mcpLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, _ := json.MarshalIndent(l.lines, "", "  ")
	return string(b)
}

// mcpTool is a registry entry for a tool of an MCP server.
func mcpTool(name, server, remoteTool, input, output string, permission string, mode registry.Mode, timeoutMS int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name": %q, "description": "%s of MCP server %s", "input_schema": %s, "output_schema": %s,
		"permissions": [%q], "idempotency": {"mode": %q}, "timeout_ms": %d,
		"implementation": {"type": "mcp", "server": %q, "tool": %q}}`,
		name, remoteTool, server, input, output, permission, mode, timeoutMS, server, remoteTool))
}

// mcpRegistry is a registry of the given servers and tools.
func mcpRegistry(t *testing.T, servers map[string]any, tools ...json.RawMessage) *registry.Registry {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"version": "mcp-test", "mcp_servers": servers, "tools": tools})
	require.NoError(t, err)
	reg, err := registry.Parse(doc)
	require.NoError(t, err)
	return reg
}

// mcpGetenv is an executor environment: the machine's PATH and HOME, a database URL a server must never
// see, and vars.
func mcpGetenv(vars map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		switch name {
		case "PATH", "HOME":
			return os.Getenv(name)
		case "DATABASE_URL":
			return "postgres://gem:do-not-leak@db/gem"
		}
		return ""
	}
}

// startMCPExecutor registers reg's rest and mcp tools as the executor command does and starts an executor
// with them. It returns the log of the remote package and what closes its connections (also at cleanup,
// after the executor stopped).
func (b *testBundle) startMCPExecutor(t *testing.T, reg *registry.Registry, getenv func(string) string) (*executor.Executor, *mcpLog, func()) {
	t.Helper()
	rec := &mcpLog{}
	log := zerolog.New(rec).Level(zerolog.InfoLevel)
	h := executor.Handlers{}
	files := t.TempDir() // never the default .gem/files in the package's folder
	withFiles := func(name string) string {
		if v := getenv(name); v != "" || name != filestore.EnvDir {
			return v
		}
		return files
	}
	closeRemote, err := remote.Register(context.Background(), reg, h, remote.Options{Getenv: withFiles, Log: log})
	require.NoError(t, err)
	t.Cleanup(func() {
		closeRemote()
		if t.Failed() {
			t.Logf("remote log: %s", rec)
		}
	})
	execLog := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	e := b.startExecutorWith(t, executor.Config{}, reg, h, execLog)
	return e, rec, closeRemote
}

// mcpResult decodes a succeeded receipt's result.
func mcpResult(t *testing.T, r *registry.Receipt) map[string]any {
	t.Helper()
	require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %+v", r.ToolName, r.Error)
	var out map[string]any
	require.NoError(t, json.Unmarshal(r.Result, &out))
	return out
}

// requireFailed checks a failed receipt's code and that its message says what.
func requireFailed(t *testing.T, r *registry.Receipt, code registry.ErrorCode, says string) {
	t.Helper()
	require.Equal(t, registry.StatusFailed, r.Status, "%s: %s", r.ToolName, r.Result)
	require.NotNil(t, r.Error)
	require.Equal(t, code, r.Error.Code, r.Error.Message)
	require.Contains(t, r.Error.Message, says)
}

// processGone reports whether a process has exited and been reaped.
func processGone(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, os.ErrNotExist)
}

const (
	echoInput   = `{"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"], "additionalProperties": false}`
	textOutput  = `{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}`
	anyObject   = `{"type": "object"}`
	longInput   = `{"type": "object", "properties": {"duration": {"type": "number"}, "steps": {"type": "number"}}}`
	weatherIn   = `{"type": "object", "properties": {"location": {"enum": ["New York", "Chicago", "Los Angeles"]}}, "required": ["location"]}`
	weatherOut  = `{"type": "object", "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}, "humidity": {"type": "number"}}, "required": ["temperature", "conditions", "humidity"], "additionalProperties": false}`
	imageOutput = `{"type": "object", "properties": {"text": {"type": "string"}, "content": {"type": "array"}}, "required": ["text", "content"]}`
)

// everythingTools are the tools the tests call on a server-everything named server.
func everythingTools(server string) []json.RawMessage {
	return []json.RawMessage{
		mcpTool(server+".echo", server, "echo", echoInput, textOutput, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool(server+".weather", server, "get-structured-content", weatherIn, weatherOut, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool(server+".image", server, "get-tiny-image", anyObject, imageOutput, "read:external", registry.ModeSafeRetry, 10000),
		// The registry lets anything through, so the server's own validation answers with isError.
		mcpTool(server+".sum_loose", server, "get-sum", anyObject, `{}`, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool(server+".missing", server, "no-such-tool", anyObject, `{}`, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool(server+".long", server, "trigger-long-running-operation", longInput, `{}`, "read:external", registry.ModeSafeRetry, 500),
	}
}

// checkEverything makes the calls every transport must answer the same way.
func checkEverything(t *testing.T, ctx context.Context, b *testBundle, server string) {
	t.Helper()
	echo := b.call(t, ctx, server+".echo", `{"message": "hello from GEM"}`)
	weather := b.call(t, ctx, server+".weather", `{"location": "Chicago"}`)
	image := b.call(t, ctx, server+".image", `{}`)
	badArgs := b.call(t, ctx, server+".sum_loose", `{"a": "two"}`)
	missing := b.call(t, ctx, server+".missing", `{}`)
	receipts := b.wait(t, ctx, echo, weather, image, badArgs, missing)

	require.Equal(t, map[string]any{"text": "Echo: hello from GEM"}, mcpResult(t, receipts[echo]))
	require.Equal(t, 1, receipts[echo].Attempt)
	// structuredContent is the result, checked against the tool's output schema.
	require.Equal(t, map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}, mcpResult(t, receipts[weather]))
	// An image is summarised, its base64 never copied into the receipt.
	img := mcpResult(t, receipts[image])
	require.Contains(t, img["text"], "The image above is the MCP logo.")
	content := img["content"].([]any)
	require.Len(t, content, 1)
	require.Equal(t, "image", content[0].(map[string]any)["type"])
	require.Equal(t, "image/png", content[0].(map[string]any)["mimeType"])
	require.Greater(t, content[0].(map[string]any)["bytes"], 1000.0)
	require.NotContains(t, string(receipts[image].Result), "iVBORw0KGgo")

	// isError is a failed receipt carrying the remote's text.
	requireFailed(t, receipts[badArgs], registry.CodeRemoteError, "get-sum")
	require.Contains(t, receipts[badArgs].Error.Message, "a")
	details := decodeDetails(t, receipts[badArgs])
	require.Equal(t, server, details["server"])
	require.Equal(t, "get-sum", details["tool"])
	requireFailed(t, receipts[missing], registry.CodeRemoteError, "no-such-tool")
	require.Contains(t, strings.ToLower(receipts[missing].Error.Message), "not found")

	// A call that overruns timeout_ms ends with a timeout receipt; the session survives it.
	started := time.Now()
	long := b.waitOne(t, ctx, b.call(t, ctx, server+".long", `{"duration": 5, "steps": 1}`))
	requireFailed(t, long, registry.CodeTimeout, "timeout")
	require.Less(t, time.Since(started), 4*time.Second)
	again := b.waitOne(t, ctx, b.call(t, ctx, server+".echo", `{"message": "still there"}`))
	require.Equal(t, "Echo: still there", mcpResult(t, again)["text"])
}

// TestMCPStdio runs tools of server-everything started over stdio through the executor: results, isError,
// the input checked before the server is reached, timeouts, one shared session, and the server's
// environment.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	bin := mcppeers.Everything(t)
	reg := mcpRegistry(t, map[string]any{
		"everything": map[string]any{"command": bin, "args": []string{"stdio"}, "env": map[string]string{"GEM_TEST_MCP_TOKEN": "${GEM_TEST_MCP_SECRET}"}},
		"unset":      map[string]any{"command": bin, "env": map[string]string{"TOKEN": "${GEM_TEST_MCP_UNSET}"}},
		"absent":     map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
	}, append(everythingTools("everything"),
		mcpTool("everything.env", "everything", "get-env", anyObject, textOutput, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool("unset.echo", "unset", "echo", echoInput, textOutput, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool("absent.echo", "absent", "echo", echoInput, textOutput, "read:external", registry.ModeSafeRetry, 10000),
	)...)
	_, rec, _ := b.startMCPExecutor(t, reg, mcpGetenv(map[string]string{"GEM_TEST_MCP_SECRET": "s3cret-token"}))

	// Input the schema refuses never reaches the server: no session is opened for it.
	bad := b.waitOne(t, ctx, b.call(t, ctx, "everything.echo", `{"message": 42}`))
	requireFailed(t, bad, registry.CodeValidation, "message")
	require.Zero(t, rec.connects(), "a call with invalid input opened a session")

	checkEverything(t, ctx, b, "everything")

	// Concurrent calls share the one session (MCP multiplexes requests).
	var ids []uuid.UUID
	for i := range 20 {
		ids = append(ids, b.call(t, ctx, "everything.echo", fmt.Sprintf(`{"message": "n%d"}`, i)))
	}
	receipts := b.wait(t, ctx, ids...)
	for i, id := range ids {
		require.Equal(t, fmt.Sprintf("Echo: n%d", i), mcpResult(t, receipts[id])["text"])
	}
	require.Len(t, rec.pids(), 1, "one stdio server serves every call")

	// The server gets its own env, expanded, and none of the executor's other variables.
	env := mcpResult(t, b.waitOne(t, ctx, b.call(t, ctx, "everything.env", `{}`)))["text"].(string)
	require.Contains(t, env, `"GEM_TEST_MCP_TOKEN": "s3cret-token"`)
	require.NotContains(t, env, "do-not-leak")
	require.NotContains(t, env, "DATABASE_URL")

	// A missing variable or command is not_configured, naming what to set or install.
	unset := b.waitOne(t, ctx, b.call(t, ctx, "unset.echo", `{"message": "x"}`))
	require.Equal(t, registry.StatusNotConfigured, unset.Status)
	require.Equal(t, registry.CodeNotConfigured, unset.Error.Code)
	require.Contains(t, unset.Error.Message, "GEM_TEST_MCP_UNSET")
	require.Equal(t, []any{"GEM_TEST_MCP_UNSET"}, decodeDetails(t, unset)["required_env"])
	absent := b.waitOne(t, ctx, b.call(t, ctx, "absent.echo", `{"message": "x"}`))
	require.Equal(t, registry.StatusNotConfigured, absent.Status)
	require.Contains(t, absent.Error.Message, "no-such-server")
}

// TestMCPStdioServerDies kills the stdio server between calls and during calls: the next call reconnects,
// a call cut short is retried when its tool may run twice and fails remote_error when it may not, and no
// server process outlives the executor.
func TestMCPStdioServerDies(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	bin := mcppeers.Everything(t)
	reg := mcpRegistry(t, map[string]any{"everything": map[string]any{"command": bin}},
		mcpTool("everything.echo", "everything", "echo", echoInput, textOutput, "read:external", registry.ModeSafeRetry, 10000),
		mcpTool("everything.long", "everything", "trigger-long-running-operation", longInput, `{}`, "read:external", registry.ModeSafeRetry, 20000),
		// Writes outside GEM without idempotency: it must never run twice.
		mcpTool("everything.long_once", "everything", "trigger-long-running-operation", longInput, `{}`, "write:external", registry.ModeNone, 20000),
	)
	e, rec, closeRemote := b.startMCPExecutor(t, reg, mcpGetenv(nil))
	currentPid := func(n int) int {
		t.Helper()
		require.Eventually(t, func() bool { return len(rec.pids()) >= n }, 20*time.Second, 10*time.Millisecond, "server %d never started", n)
		pids := rec.pids()
		return pids[len(pids)-1]
	}
	kill := func(pid int) {
		t.Helper()
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		require.Eventually(t, func() bool { return processGone(pid) }, 10*time.Second, 10*time.Millisecond, "the killed server %d was never reaped", pid)
	}
	// waitRunning waits until a call's job runs, and a little more so its request is on the wire.
	waitRunning := func(id uuid.UUID) {
		t.Helper()
		require.Eventually(t, func() bool {
			var status string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM core_calls WHERE id = $1`, id).Scan(&status))
			return status == "running"
		}, 20*time.Second, 5*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
	}

	first := b.waitOne(t, ctx, b.call(t, ctx, "everything.echo", `{"message": "one"}`))
	require.Equal(t, "Echo: one", mcpResult(t, first)["text"])
	pid1 := currentPid(1)

	// Killed between calls: the next call opens a new session and succeeds at once.
	kill(pid1)
	second := b.waitOne(t, ctx, b.call(t, ctx, "everything.echo", `{"message": "two"}`))
	require.Equal(t, "Echo: two", mcpResult(t, second)["text"])
	require.Equal(t, 1, second.Attempt)
	pid2 := currentPid(2)
	require.NotEqual(t, pid1, pid2)

	// Killed during a call that may not run twice: failed remote_error, not retried.
	once := b.call(t, ctx, "everything.long_once", `{"duration": 3, "steps": 1}`)
	waitRunning(once)
	kill(pid2)
	r := b.waitOne(t, ctx, once)
	requireFailed(t, r, registry.CodeRemoteError, "may or may not have run")
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, true, decodeDetails(t, r)["sent"])

	// Killed during a call that may run twice: River retries it on a new session.
	echo := b.waitOne(t, ctx, b.call(t, ctx, "everything.echo", `{"message": "three"}`))
	require.Equal(t, "Echo: three", mcpResult(t, echo)["text"])
	pid3 := currentPid(3)
	safe := b.call(t, ctx, "everything.long", `{"duration": 2, "steps": 1}`)
	waitRunning(safe)
	kill(pid3)
	r = b.waitOne(t, ctx, safe)
	require.Contains(t, mcpResult(t, r)["text"], "Long running operation completed")
	require.Equal(t, 2, r.Attempt)
	pids := rec.pids()
	require.Len(t, pids, 4)

	// Stopping the executor and closing the pool stops the server: nothing is left running.
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(stopCtx))
	closeRemote()
	for _, pid := range pids {
		require.True(t, processGone(pid), "server process %d outlived the pool", pid)
	}
}

// TestMCPStreamableHTTP runs the same calls against server-everything over streamable HTTP, through a proxy
// that records what reaches the server: the URL and headers with their ${ENV} expanded, and a new session
// after the server restarts.
func TestMCPStreamableHTTP(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	port, stop := mcppeers.StartEverythingHTTP(t, 0)

	// The proxy stands for the network between the executor and the server.
	target, err := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	require.NoError(t, err)
	var authMu sync.Mutex
	auth := map[string]int{}
	// throttle makes the network refuse tools/call as a rate-limiting gateway does.
	var throttle atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authMu.Lock()
		auth[r.Header.Get("Authorization")]++
		authMu.Unlock()
		if throttle.Load() {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"tools/call"`) {
				w.Header().Set("Retry-After", "7")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	reg := mcpRegistry(t, map[string]any{
		"everything": map[string]any{"url": "${GEM_TEST_MCP_URL}/mcp", "headers": map[string]string{"Authorization": "Bearer ${GEM_TEST_MCP_TOKEN}"}},
		"unset":      map[string]any{"url": "http://127.0.0.1:1/mcp", "headers": map[string]string{"Authorization": "Bearer ${GEM_TEST_MCP_UNSET}"}},
	}, append(everythingTools("everything"),
		mcpTool("unset.echo", "unset", "echo", echoInput, textOutput, "read:external", registry.ModeSafeRetry, 10000))...)
	_, rec, _ := b.startMCPExecutor(t, reg, mcpGetenv(map[string]string{"GEM_TEST_MCP_URL": srv.URL, "GEM_TEST_MCP_TOKEN": "t0ken"}))

	checkEverything(t, ctx, b, "everything")
	require.Equal(t, 1, rec.connects(), "one session serves every call")
	require.Equal(t, []any{"${GEM_TEST_MCP_URL}/mcp"}, rec.connected("url"), "an HTTP server is logged by its URL, its ${ENV} unexpanded")
	require.Empty(t, rec.connected("pid"), "not by a process id it has not")
	authMu.Lock()
	require.Equal(t, []string{"Bearer t0ken"}, mapKeys(auth), "every request carries the header, expanded")
	authMu.Unlock()

	// The server restarts and forgets its sessions: the next call opens a new one and succeeds.
	stop()
	_, _ = mcppeers.StartEverythingHTTP(t, port)
	r := b.waitOne(t, ctx, b.call(t, ctx, "everything.echo", `{"message": "after restart"}`))
	require.Equal(t, "Echo: after restart", mcpResult(t, r)["text"])
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, 2, rec.connects())
	require.NotContains(t, string(r.Result), "t0ken")

	// A server that refuses with 429: the last attempt's retries_exhausted receipt keeps the status and the
	// Retry-After the client was told.
	throttle.Store(true)
	var limited uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, max_attempts) VALUES ('everything.echo', '{"message": "too soon"}', 1)
		RETURNING id`).Scan(&limited))
	r = b.waitOne(t, ctx, limited)
	throttle.Store(false)
	requireFailed(t, r, registry.CodeRetriesExhausted, "answered tools/call of echo with HTTP 429")
	d := decodeDetails(t, r)
	require.Equal(t, float64(http.StatusTooManyRequests), d["status"], "%v", d)
	require.Equal(t, "7", d["retry_after"])
	require.Equal(t, "everything", d["server"])

	// A header naming an unset variable: not_configured, and nothing is sent.
	unset := b.waitOne(t, ctx, b.call(t, ctx, "unset.echo", `{"message": "x"}`))
	require.Equal(t, registry.StatusNotConfigured, unset.Status)
	require.Contains(t, unset.Error.Message, "GEM_TEST_MCP_UNSET")
}

func mapKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestMCPImportRoundTrip imports server-everything's tools, merges them into a copy of the repository's
// registry, loads it with the registry check, and calls imported tools through the executor.
func TestMCPImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	bin := mcppeers.Everything(t)
	server := &registry.MCPServer{Name: "everything", Command: bin}
	importCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := remote.Import(importCtx, server, remote.ImportOptions{Getenv: mcpGetenv(nil)})
	require.NoError(t, err)
	require.Empty(t, res.Notes)

	byName := map[string]*registry.Tool{}
	for _, tool := range res.Document.Tools {
		byName[tool.Name] = tool
	}
	// The annotations decide permissions and idempotency (docs/mcp-tools.md).
	for name, want := range map[string]struct {
		permission string
		mode       registry.Mode
	}{
		"everything.echo":                     {"read:external", registry.ModeSafeRetry},
		"everything.get-structured-content":   {"read:external", registry.ModeSafeRetry},
		"everything.gzip-file-as-resource":    {"write:external", registry.ModeSafeRetry}, // not read-only, idempotent
		"everything.toggle-simulated-logging": {"write:external", registry.ModeNone},      // not read-only, not idempotent
	} {
		tool := byName[name]
		require.NotNil(t, tool, "%s imported", name)
		require.Equal(t, []string{want.permission}, tool.Permissions, name)
		require.Equal(t, want.mode, tool.Idempotency.Mode, name)
		require.Equal(t, &registry.Implementation{Type: registry.ImplMCP, Server: "everything", RemoteTool: strings.TrimPrefix(name, "everything.")}, tool.Implementation)
		require.Contains(t, tool.Description, `MCP tool "`+strings.TrimPrefix(name, "everything.")+`" of server "everything"`)
	}
	require.JSONEq(t, `{}`, string(byName["everything.echo"].OutputSchema))
	require.Contains(t, string(byName["everything.get-structured-content"].OutputSchema), "temperature")

	// Merge into the repository's registry, as a person would after review.
	var root map[string]any
	data, err := os.ReadFile("../tools.registry.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &root))
	imported, err := json.Marshal(res.Document)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(imported, &doc))
	root["mcp_servers"] = doc["mcp_servers"]
	root["tools"] = append(root["tools"].([]any), doc["tools"].([]any)...)
	merged, err := json.Marshal(root)
	require.NoError(t, err)
	reg, err := registry.Parse(merged)
	require.NoError(t, err)
	require.Equal(t, b.reg.Len()-len(testToolNames(t))+len(res.Tools), reg.Len())

	b.startMCPExecutor(t, reg, mcpGetenv(nil))
	sum := b.call(t, ctx, "everything.get-sum", `{"a": 2, "b": 3}`)
	weather := b.call(t, ctx, "everything.get-structured-content", `{"location": "Los Angeles"}`)
	wrong := b.call(t, ctx, "everything.get-structured-content", `{"location": "Paris"}`)
	receipts := b.wait(t, ctx, sum, weather, wrong)
	require.Contains(t, mcpResult(t, receipts[sum])["text"], "5")
	require.Equal(t, "Sunny / Clear", mcpResult(t, receipts[weather])["conditions"])
	// The imported input schema is enforced before the server is called.
	requireFailed(t, receipts[wrong], registry.CodeValidation, "location")
}

// testToolNames are the tools testdata/test-tools.json adds to the test registry.
func testToolNames(t *testing.T) []string {
	t.Helper()
	var extra struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	data, err := os.ReadFile("testdata/test-tools.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &extra))
	names := make([]string, len(extra.Tools))
	for i, tool := range extra.Tools {
		names[i] = tool.Name
	}
	return names
}

// TestMCPToolsDoc keeps docs/mcp-tools.md true: its example registry loads, and its tools, run by a real
// executor against server-everything (started from make mcp-peers instead of npx), answer as the page says.
func TestMCPToolsDoc(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	bin := mcppeers.Everything(t)
	raw, err := os.ReadFile("../docs/mcp-tools.md")
	require.NoError(t, err)
	blocks := fences(string(raw), "json")
	require.GreaterOrEqual(t, len(blocks), 2)

	var example map[string]any
	require.NoError(t, json.Unmarshal([]byte(blocks[0]), &example), blocks[0])
	everything := example["mcp_servers"].(map[string]any)["everything"].(map[string]any)
	require.Equal(t, []any{"-y", "@modelcontextprotocol/server-everything", "stdio"}, everything["args"])
	everything["command"], everything["args"] = bin, []any{"stdio"}
	example["version"] = "doc"
	doc, err := json.Marshal(example)
	require.NoError(t, err)
	reg, err := registry.Parse(doc)
	require.NoError(t, err)

	b.startMCPExecutor(t, reg, mcpGetenv(map[string]string{"EVERYTHING_TOKEN": "t"}))
	weather := b.call(t, ctx, "everything.weather", `{"location": "Chicago"}`)
	echo := b.call(t, ctx, "everything.echo", `{"message": "hello"}`)
	paris := b.call(t, ctx, "everything.weather", `{"location": "Paris"}`)
	receipts := b.wait(t, ctx, weather, echo, paris)
	require.JSONEq(t, blocks[1], string(receipts[weather].Result))
	require.Equal(t, "Light rain / drizzle", receipts[weather].Summary["result.conditions"])
	require.JSONEq(t, `{"text": "Echo: hello"}`, string(receipts[echo].Result))
	require.Contains(t, string(raw), "its result is `{\"text\": \"Echo: hello\"}`")
	requireFailed(t, receipts[paris], registry.CodeValidation, "location")
}
