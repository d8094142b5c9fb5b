package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// These tests drive GEM's MCP server with the official MCP TypeScript SDK's client (scripts/mcp-peers/
// sdk-client.mjs, installed by `make mcp-peers`), the client most agent frameworks are built on: it checks
// every answer's structuredContent against the outputSchema tools/list gave, and throws when it does not match.

// sdkPlan is what sdk-client.mjs does: connect over HTTP or stdio, list the tools, make the calls.
type sdkPlan struct {
	HTTP  *sdkHTTP  `json:"http,omitempty"`
	Stdio *sdkStdio `json:"stdio,omitempty"`
	Calls []sdkCall `json:"calls"`
}

type sdkHTTP struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

type sdkStdio struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// sdkCall is one tools/call; an argument "$call_id:N" is the call_id the Nth call answered with.
type sdkCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	Meta      map[string]any `json:"meta,omitempty"`
}

// sdkRun is what sdk-client.mjs printed.
type sdkRun struct {
	Tools []struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Meta         map[string]any  `json:"meta"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	} `json:"tools"`
	ListBytes int `json:"list_bytes"`
	Results   []struct {
		Name   string `json:"name"`
		Threw  string `json:"threw"`
		Result *struct {
			IsError           bool             `json:"isError"`
			StructuredContent map[string]any   `json:"structuredContent"`
			Content           []map[string]any `json:"content"`
			Meta              map[string]any   `json:"_meta"`
		} `json:"result"`
	} `json:"results"`
}

// names are the listed tools' names.
func (r *sdkRun) names() []string {
	out := make([]string, len(r.Tools))
	for i, tool := range r.Tools {
		out[i] = tool.Name
	}
	return out
}

// status is the Nth answer's structured status, failing the test when the SDK threw.
func (r *sdkRun) status(t *testing.T, n int) string {
	t.Helper()
	res := r.Results[n]
	require.Empty(t, res.Threw, "the TypeScript SDK refused the answer to %s (call %d)", res.Name, n)
	require.NotNil(t, res.Result, res.Name)
	status, _ := res.Result.StructuredContent["status"].(string)
	return status
}

// runSDKClient runs the TypeScript SDK's client on a plan, failing (not skipping) when it is not installed.
func runSDKClient(t *testing.T, plan sdkPlan) *sdkRun {
	t.Helper()
	peers := filepath.Join(repoRoot(t), "scripts", "mcp-peers")
	if _, err := os.Stat(filepath.Join(peers, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed (%v): run make mcp-peers", err)
	}
	var run sdkRun
	runNodeScript(t, filepath.Join(peers, "sdk-client.mjs"), plan, &run)
	require.Len(t, run.Results, len(plan.Calls))
	return &run
}

// runNodeScript runs a node script on a plan (written to a file, its one argument) and decodes the JSON it
// prints into out, failing the test when it exits with an error.
func runNodeScript(t *testing.T, script string, plan, out any) {
	t.Helper()
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s: %s", filepath.Base(script), stderr.String())
	require.NoError(t, json.Unmarshal(stdout.Bytes(), out), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
}

// sdkOverHTTP is a plan's way to a brain's /mcp (query: "?names=dotted" and the like) with a bearer token.
func sdkOverHTTP(url, query, token string) *sdkHTTP {
	return &sdkHTTP{URL: url + "/mcp" + query, Headers: map[string]string{"Authorization": "Bearer " + token}}
}

// sdkOverStdio is a plan's way to `brain mcp` with flags on a database and registry, and env.
func sdkOverStdio(t *testing.T, dbURL, registryPath string, env map[string]string, flags ...string) *sdkStdio {
	vars := map[string]string{"DATABASE_URL": dbURL, "GEM_REGISTRY": registryPath, "GEM_LOG_LEVEL": "warn", "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
	for k, v := range env {
		vars[k] = v
	}
	return &sdkStdio{Command: brainBinary(t), Args: append([]string{"mcp"}, flags...), Env: vars}
}

// requireAnswersKeepSchema checks every answer of a run against the outputSchema its tool is listed with,
// with the Go jsonschema library the registry validates with (listed, from another run when the caller
// could not list the tool).
func requireAnswersKeepSchema(t *testing.T, run *sdkRun, listed *sdkRun) {
	t.Helper()
	schemas := map[string]*registry.Schema{}
	for _, tool := range listed.Tools {
		s, err := registry.CompileSchema(tool.Name, tool.OutputSchema)
		require.NoError(t, err, "%s's outputSchema compiles", tool.Name)
		schemas[tool.Name] = s
		schemas[registry.DottedName(tool.Name)] = s
	}
	for i, res := range run.Results {
		require.Empty(t, res.Threw, "call %d (%s): the TypeScript SDK threw", i, res.Name)
		schema := schemas[res.Name]
		require.NotNil(t, schema, res.Name)
		doc, err := json.Marshal(res.Result.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, schema.Validate(doc), "call %d (%s): %s", i, res.Name, doc)
	}
}

// TestMCPToolNames: tools are listed by names model APIs accept (os__create_note), with GEM's name in title
// and _meta; tools/call takes either name; ?names=dotted (brain mcp -names dotted) lists GEM's names; a
// registry whose names cannot be exported one to one does not load.
func TestMCPToolNames(t *testing.T) {
	t.Parallel()
	reg := shared.brain.Registry
	calls := []sdkCall{
		{Name: "os__create_note", Arguments: map[string]any{"domain": "business", "title": "portable " + uuid.NewString()[:8], "content": "x"}},
		{Name: "os.create_note", Arguments: map[string]any{"domain": "business", "title": "dotted " + uuid.NewString()[:8], "content": "x"}},
		{Name: "gem__get_receipt", Arguments: map[string]any{"call_id": "$call_id:0"}},
		{Name: "gem.get_receipt", Arguments: map[string]any{"call_id": "$call_id:1"}},
	}
	// requireCalled: either name calls the tool.
	requireCalled := func(t *testing.T, run *sdkRun) {
		t.Helper()
		for i := range 2 {
			require.Empty(t, run.status(t, i), "a note's result, not an error")
			require.NotEmpty(t, run.Results[i].Result.StructuredContent["note_id"])
			require.Equal(t, "succeeded", run.status(t, i+2), "its receipt")
			require.Equal(t, "os.create_note", run.Results[i+2].Result.StructuredContent["tool"])
		}
	}
	requirePortable := func(t *testing.T, run *sdkRun) {
		t.Helper()
		require.Len(t, run.Tools, reg.Len()+2, "every tool, gem.get_receipt and gem.approve")
		for _, tool := range run.Tools {
			require.Regexp(t, registry.PortableNameRe, tool.Name, "OpenAI and Anthropic take it as a function name")
			gem, _ := tool.Meta[llm.MCPMetaName].(string)
			require.Equal(t, registry.DottedName(tool.Name), gem, "GEM's name in _meta")
			require.Contains(t, tool.Title, gem, "and in the title")
		}
		require.Contains(t, run.names(), "gem__get_receipt")
		require.Contains(t, run.names(), "gem__approve")
		requireCalled(t, run)
	}
	requireDotted := func(t *testing.T, run *sdkRun) {
		t.Helper()
		require.Len(t, run.Tools, reg.Len()+2)
		for _, tool := range run.Tools {
			require.Contains(t, tool.Name, ".")
			require.Equal(t, tool.Name, tool.Meta[llm.MCPMetaName])
		}
		require.Contains(t, run.names(), "os.create_note")
		require.Contains(t, run.names(), mcpserver.GetReceiptTool)
		requireCalled(t, run)
	}

	t.Run("over HTTP", func(t *testing.T) {
		t.Parallel()
		requirePortable(t, runSDKClient(t, sdkPlan{HTTP: sdkOverHTTP(shared.url, "", testToken), Calls: calls}))
	})
	t.Run("over HTTP, dotted on request", func(t *testing.T) {
		t.Parallel()
		requireDotted(t, runSDKClient(t, sdkPlan{HTTP: sdkOverHTTP(shared.url, "?names=dotted", testToken), Calls: calls}))
		status, body := mcpRawURL(t, shared.url+"/mcp?names=dots", testToken, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, "?names= is portable or dotted")
	})
	t.Run("over stdio", func(t *testing.T) {
		t.Parallel()
		requirePortable(t, runSDKClient(t, sdkPlan{Stdio: sdkOverStdio(t, shared.dbURL, testenv.RegistryPath(), nil), Calls: calls}))
	})
	t.Run("over stdio, dotted on request", func(t *testing.T) {
		t.Parallel()
		requireDotted(t, runSDKClient(t, sdkPlan{Stdio: sdkOverStdio(t, shared.dbURL, testenv.RegistryPath(), nil, "-names", "dotted"), Calls: calls}))
	})
	t.Run("a registry whose names do not map one to one does not load", func(t *testing.T) {
		t.Parallel()
		data, err := os.ReadFile(testenv.RegistryPath())
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc))
		tools := doc["tools"].([]any)
		clash := map[string]any{}
		for k, v := range tools[0].(map[string]any) {
			clash[k] = v
		}
		name := tools[0].(map[string]any)["name"].(string)
		clash["name"] = strings.Replace(name, ".", "__", 1) + ".x" // os.create_note and os__create_note.x: os__create_note__x
		clash2 := map[string]any{}
		for k, v := range clash {
			clash2[k] = v
		}
		clash2["name"] = name + "__x"
		doc["tools"] = append(tools, clash, clash2)
		out, err := json.Marshal(doc)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "clash.registry.json")
		require.NoError(t, os.WriteFile(path, out, 0o600))
		cmd := exec.Command(brainBinary(t), "mcp")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+shared.dbURL, "GEM_REGISTRY="+path)
		cmd.Stdin = strings.NewReader("")
		got, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", got)
		for _, c := range []map[string]any{clash, clash2} {
			require.Contains(t, string(got), "tool "+c["name"].(string)+": field name is exported as", "each of the clashing tools is named")
		}
		require.Contains(t, string(got), "reads back as")
	})
}

// TestMCPListFollowsGrants: tools/list lists the tools the caller may call — those its permissions cover (and
// gem.approve only with approve) — over HTTP and stdio; a call of another is refused as before, with a
// receipt. It logs the list's size for an admin and for a read-only caller.
func TestMCPListFollowsGrants(t *testing.T) {
	t.Parallel()
	reg := shared.brain.Registry
	admin := newAPI(t)
	readerName, reader := addCaller(t, admin, []string{"read:db"}, nil)
	readable := []string{"gem__get_receipt"}
	for _, tool := range reg.Tools() {
		if registry.Grants([]string{"read:db"}).Missing(tool.Permissions) == nil {
			readable = append(readable, registry.PortableName(tool.Name))
		}
	}
	require.Greater(t, len(readable), 5)
	require.Less(t, len(readable), reg.Len()/2)

	create := sdkCall{Name: "os__create_note", Arguments: map[string]any{"domain": "personal", "title": "not mine to write", "content": "x"}}
	adminRun := runSDKClient(t, sdkPlan{HTTP: sdkOverHTTP(shared.url, "", testToken)})
	readerRun := runSDKClient(t, sdkPlan{HTTP: sdkOverHTTP(shared.url, "", reader.token), Calls: []sdkCall{create}})
	require.Len(t, adminRun.Tools, reg.Len()+2)
	require.ElementsMatch(t, readable, readerRun.names(), "what read:db may call, gem__get_receipt, and no gem__approve")
	t.Logf("tools/list: %d tools, %d bytes for an admin; %d tools, %d bytes for a read:db caller",
		len(adminRun.Tools), adminRun.ListBytes, len(readerRun.Tools), readerRun.ListBytes)

	// A call of a tool not listed is made and refused by the executor, as every call the caller may not make.
	res := readerRun.Results[0]
	require.Empty(t, res.Threw)
	require.True(t, res.Result.IsError)
	require.Equal(t, string(registry.CodePermissionDenied), res.Result.StructuredContent["error"].(map[string]any)["code"])
	require.Equal(t, readerName, callOf(t, res.Result.Meta).RequestedBy)
	requireAnswersKeepSchema(t, readerRun, adminRun)

	// Over stdio, -as a read-only caller lists the same.
	_, err := shared.pool.Exec(context.Background(), `SELECT gem_caller_grant($1, '{read:db}')`, "mcp-reader")
	require.NoError(t, err)
	s := stdioSession(t, shared.dbURL, "-as", "mcp-reader")
	require.ElementsMatch(t, readable, toolNames(t, s))
}

// TestMCPAbandonedCallsFreeSlots: a client cut off while its tools/call or gem.get_receipt waits frees its
// admission slot at once (its request logged abandoned, not 200), and the call goes on to its receipt. A
// brain with two slots and no line: two abandoned calls do not make a third client's call a 503.
func TestMCPAbandonedCallsFreeSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logs := &sqltest.SyncBuffer{}
	m := &Main{Config: Config{DatabaseURL: shared.dbURL, RegistryPath: testenv.RegistryPath(), Addr: "127.0.0.1:0",
		Tokens:    []api.Token{{Name: "tester", Value: testToken}},
		Admission: api.AdmissionConfig{MaxInFlight: 2, MaxQueue: api.NoQueue, QueueWait: time.Second}}, Log: zerolog.New(logs)}
	require.NoError(t, m.Open(ctx))
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	m.Server.TestSignals.SlotFreed.Init(t)
	url := m.Server.URL() + "/mcp"

	// A task whose completion a row lock holds (the task comes through the shared brain).
	res, err := session(t, shared.url+"/mcp", nil, nil).CallTool(ctx, &mcp.CallToolParams{Name: "os__create_task",
		Arguments: map[string]any{"title": "held while its clients go away", "domain": "business"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	taskID := res.StructuredContent.(map[string]any)["task_id"].(string)
	lock, err := shared.pool.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx)
	_, err = lock.Exec(ctx, `SELECT 1 FROM os_tasks WHERE id = $1 FOR UPDATE`, taskID)
	require.NoError(t, err)

	// waiting starts a request that waits (it asked for progress: its first notification says it is in its
	// handler), to be cut off by cancel.
	type cutOff struct {
		cancel context.CancelFunc
		done   chan error
	}
	waiting := func(name string, args map[string]any) cutOff {
		t.Helper()
		reqCtx, cancel := context.WithCancel(ctx)
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": args, "_meta": map[string]any{"progressToken": name}}})
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(mcpRequest(t, reqCtx, url, testToken, string(body)))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() && !strings.Contains(lines.Text(), "notifications/progress") {
		}
		done := make(chan error, 1)
		go func() {
			defer resp.Body.Close()
			for lines.Scan() {
			}
			done <- lines.Err()
		}()
		return cutOff{cancel, done}
	}
	health := func() int {
		status, _ := mcpRawURL(t, url, testToken, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"os__health_check","arguments":{}}}`)
		return status
	}

	start := time.Now()
	first := waiting("os__complete_task", map[string]any{"task_id": taskID})
	var callID uuid.UUID
	require.NoError(t, shared.pool.QueryRow(ctx, `SELECT id FROM core_tool_calls WHERE tool_name = 'os.complete_task' AND input->>'task_id' = $1`, taskID).Scan(&callID))
	second := waiting("gem__get_receipt", map[string]any{"call_id": callID.String()})
	require.Equal(t, http.StatusServiceUnavailable, health(), "both slots are held while the calls wait")

	time.Sleep(time.Until(start.Add(time.Second)))
	first.cancel()
	second.cancel()
	require.Error(t, <-first.done)
	require.Error(t, <-second.done)
	cut := time.Now()
	m.Server.TestSignals.SlotFreed.Wait()
	m.Server.TestSignals.SlotFreed.Wait()
	require.Less(t, time.Since(cut), 3*time.Second, "the abandoned calls freed their slots at once (the wait is %s)", mcpserver.CallWaitDefault)
	require.Equal(t, http.StatusOK, health())
	t.Logf("a third client's call was admitted %s after the two were cut off", time.Since(cut).Round(time.Millisecond))

	// Each abandoned request is logged so, and its call goes on to its receipt once the lock is gone.
	var abandoned []map[string]any
	require.Eventually(t, func() bool {
		abandoned = nil
		for _, line := range strings.Split(logs.String(), "\n") {
			var entry map[string]any
			if json.Unmarshal([]byte(line), &entry) == nil && entry["message"] == "request" && entry["abandoned"] == true {
				abandoned = append(abandoned, entry)
			}
		}
		return len(abandoned) == 2
	}, 5*time.Second, 20*time.Millisecond, logs.String())
	for _, entry := range abandoned {
		require.Equal(t, "/mcp", entry["route"])
		require.Equal(t, 499.0, entry["status"], "not the 200 its stream began with")
		require.Less(t, entry["duration_ms"], 5000.0, "the request ended with its client")
	}
	require.Contains(t, logs.String(), "MCP wait abandoned; the call goes on")
	require.NoError(t, lock.Rollback(ctx))
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	receipts, err := shared.brain.Waiter.Wait(waitCtx, []uuid.UUID{callID})
	require.NoError(t, err)
	require.Equal(t, registry.StatusSucceeded, receipts.Receipts[callID].Status)
}

// TestMCPAnswersKeepTheirSchema: every tools/call answer — a result, a failed receipt, a refusal before any
// call, pending, awaiting approval, not configured, and gem.get_receipt's and gem.approve's — matches the
// outputSchema its tool is listed with, for the TypeScript SDK (which throws otherwise) and for the Go
// jsonschema library, over HTTP and stdio.
func TestMCPAnswersKeepTheirSchema(t *testing.T) {
	t.Parallel()

	t.Run("calls that end", func(t *testing.T) {
		t.Parallel()
		run := runSDKClient(t, sdkPlan{HTTP: sdkOverHTTP(shared.url, "", testToken), Calls: []sdkCall{
			{Name: "os__create_note", Arguments: map[string]any{"domain": "business", "title": "kept " + uuid.NewString()[:8], "content": "x"}},
			{Name: "os__complete_task", Arguments: map[string]any{"task_id": uuid.NewString()}},
			{Name: "gem__get_receipt", Arguments: map[string]any{"call_id": "$call_id:0"}},
			{Name: "gem__get_receipt", Arguments: map[string]any{"call_id": "$call_id:1"}},
			{Name: "os__create_note", Arguments: map[string]any{"domain": "diary", "title": "never"}},
			{Name: "gem__get_receipt", Arguments: map[string]any{"call_id": uuid.NewString()}},
		}})
		requireAnswersKeepSchema(t, run, run)
		for i, want := range []string{"", "failed", "succeeded", "failed", "invalid_arguments", "not_found"} {
			require.Equal(t, want, run.status(t, i), "call %d", i)
		}
		require.Nil(t, run.Results[3].Result.StructuredContent["result"], "a failed receipt has no result")
	})

	// A database of its own without an executor: calls stay queued (pending); lab.login's secret input
	// cannot be stored without GEM_SECRET_KEY (not configured); read:reminders waits for approval.
	pool, dbURL := sqltest.NewDB(t)
	_, err := pool.Exec(context.Background(), `INSERT INTO core_approval_policies (permission, expires_ms, note) VALUES ('read:reminders', 600000, 'schema test')`)
	require.NoError(t, err)
	// What an executor records of the tool when it starts, which the policy is matched against.
	_, err = pool.Exec(context.Background(), `INSERT INTO core_tools (name, permissions) VALUES ('os.list_reminders', '{read:reminders}')`)
	require.NoError(t, err)
	regPath := registryWithTool(t, secretTool) // lab.login: its password is a secret input
	m, err := startBrain(dbURL, func(c *Config) {
		c.RegistryPath = regPath
		c.MCP = mcpserver.Config{CallWait: 300 * time.Millisecond}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	key := uuid.NewString()
	waits := []sdkCall{
		{Name: "lab__login", Arguments: map[string]any{"user": "ann", "password": "hunter22-secret"}},
		{Name: "os__health_check", Arguments: map[string]any{}},
		{Name: "gem__get_receipt", Arguments: map[string]any{"call_id": "$call_id:1"}},
		{Name: "os__list_reminders", Arguments: map[string]any{}},
		{Name: "gem__get_receipt", Arguments: map[string]any{"call_id": "$call_id:3"}},
		{Name: "finance__add_expense", Arguments: expense("schema "+key, 700), Meta: map[string]any{"gem/idempotency_key": key}},
		{Name: "finance__add_expense", Arguments: expense("schema "+key, 701), Meta: map[string]any{"gem/idempotency_key": key}},
		{Name: "gem__approve", Arguments: map[string]any{"call_id": "$call_id:1", "approve": true}},
	}
	wantStatus := []string{"not_configured", "pending", "pending", "awaiting_approval", "awaiting_approval", "pending", "failed", "refused"}
	requireWaits := func(t *testing.T, run *sdkRun) {
		t.Helper()
		requireAnswersKeepSchema(t, run, run)
		for i, want := range wantStatus {
			require.Equal(t, want, run.status(t, i), "call %d", i)
		}
		notConfigured := run.Results[0].Result
		require.True(t, notConfigured.IsError)
		e := notConfigured.StructuredContent["error"].(map[string]any)
		require.Equal(t, string(registry.CodeNotConfigured), e["code"])
		require.Equal(t, []any{"GEM_SECRET_KEY"}, e["details"].(map[string]any)["required_env"])
	}
	t.Run("calls that wait or are refused, over HTTP", func(t *testing.T) {
		t.Parallel()
		requireWaits(t, runSDKClient(t, sdkPlan{HTTP: sdkOverHTTP(m.Server.URL(), "", testToken), Calls: waits}))
	})
	t.Run("calls that wait or are refused, over stdio", func(t *testing.T) {
		t.Parallel()
		stdioWaits := append([]sdkCall(nil), waits...)
		stdioKey := uuid.NewString()
		for _, i := range []int{5, 6} {
			stdioWaits[i].Meta = map[string]any{"gem/idempotency_key": stdioKey}
		}
		requireWaits(t, runSDKClient(t, sdkPlan{Stdio: sdkOverStdio(t, dbURL, regPath, map[string]string{"GEM_MCP_CALL_WAIT": "300ms"}),
			Calls: stdioWaits}))
	})
}

// TestMCPStdioStopsQuietly: `brain mcp` stopped by SIGTERM, as a host stops its servers, exits 0 and logs no
// error.
func TestMCPStdioStopsQuietly(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(brainBinary(t), "mcp")
	var stderr sqltest.SyncBuffer
	cmd.Env = append(os.Environ(), "DATABASE_URL="+shared.dbURL, "GEM_REGISTRY="+testenv.RegistryPath(), "GEM_LOG_LEVEL=info", "GEM_LOG_FORMAT=json")
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The host keeps stdin open: the signal, not the end of input, stops the server.
	s, err := mcp.NewClient(&mcp.Implementation{Name: "gem-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, toolNames(t, s))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status 0:\n%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("brain mcp did not stop on SIGTERM:\n%s", stderr.String())
	}
	_ = s.Close()
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "a JSON log line: %q", line)
		require.NotContains(t, []string{"error", "fatal", "panic"}, entry["level"], "a normal stop logs no error: %s", line)
	}
	require.Contains(t, stderr.String(), "serving MCP on stdio", "the log was read")
}
