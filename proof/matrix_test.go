package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// matrixTools are the tools of the authorization matrix, for the hub and the device alike: one a reader may
// call, one it may not (it writes), one that waits for approval, and one that runs one call at a time and
// lets a call wait 300 ms for its turn.
const matrixTools = `[
	{"name": "mx.read", "description": "Reads from the lab service.",
	 "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}}, "required": ["key"], "additionalProperties": false},
	 "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
	 "permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 10000,
	 "implementation": {"type": "rest", "method": "GET", "url": "${GEM_LAB_URL}/whoami?device=WHO&key={key}&sleep_ms={sleep_ms}"}},
	{"name": "mx.write", "description": "Writes to the lab service.",
	 "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}}, "required": ["key"], "additionalProperties": false},
	 "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
	 "permissions": ["write:external"], "idempotency": {"mode": "none"}, "timeout_ms": 10000,
	 "implementation": {"type": "rest", "method": "POST", "url": "${GEM_LAB_URL}/effect?device=WHO&key={key}&sleep_ms={sleep_ms}", "body": "none"}},
	{"name": "mx.guarded", "description": "Reads from the lab service, once a person approves.",
	 "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}}, "required": ["key"], "additionalProperties": false},
	 "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
	 "permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 10000,
	 "approval": {"required": true, "expires_after_ms": 600000},
	 "implementation": {"type": "rest", "method": "GET", "url": "${GEM_LAB_URL}/whoami?device=WHO&key={key}&sleep_ms={sleep_ms}"}},
	{"name": "mx.limited", "description": "Reads from the lab service, one call at a time.",
	 "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}}, "required": ["key"], "additionalProperties": false},
	 "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
	 "permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 10000,
	 "limits": {"concurrency": {"max": 1}, "max_wait_ms": 300},
	 "implementation": {"type": "rest", "method": "GET", "url": "${GEM_LAB_URL}/whoami?device=WHO&key={key}&sleep_ms={sleep_ms}"}}
]`

// outcome is how a call made through a front door ended, as that door tells it: the HTTP status (or the
// CLI's exit code) and the receipt's status or error code (awaiting_approval for a held call).
type outcome struct {
	Status int
	Result string
}

// TestAuthorizationMatrix makes the same four calls through every front door — HTTP, the CLI, MCP, a
// device, a SQL role and an agent's chat — as a caller that may read but not write: one allowed, one denied
// (permission_denied), one that needs approval, and one over its tool's concurrency limit (rate_limited), and
// checks each door's exact answer.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	bins := testBinaries(t)
	pool, dbURL := sqltest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	lab, err := startLabService()
	require.NoError(t, err)
	t.Cleanup(lab.close)

	var next atomic.Pointer[[]fakeToolCall]
	next.Store(&[]fakeToolCall{})
	llm, err := startFakeLLM("sk-matrix", func(fakeRequest) []fakeToolCall { return *next.Load() })
	require.NoError(t, err)
	t.Cleanup(llm.close)

	hubTools := strings.ReplaceAll(matrixTools, "WHO", "hub")
	regPath, err := registryWith(bins, jsonArray(t, hubTools)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Remove(regPath) })
	logs := &sqltest.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("\n" + logs.String())
		}
	})
	env := []string{"GEM_REGISTRY=" + regPath, "GEM_LAB_URL=" + lab.url, "GEM_DEVICE_HEARTBEAT=200ms", "GEM_DEVICE_MISSED_HEARTBEATS=5"}
	exec1, err := startExecutor(bins, dbURL, "matrix-executor", env, logs, pool, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = exec1.stop(10 * time.Second) })
	brain, err := startBrain(bins, dbURL, append(env, "GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL="+llm.url,
		"GEM_LLM_API_KEY=sk-matrix", "GEM_LLM_MODEL=fake-model"), logs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = brain.stop(10 * time.Second) })
	admin := &deviceRig{bins: bins, dbURL: dbURL, pool: pool, brain: brain, lab: lab, dir: t.TempDir(), logw: logs,
		client: &http.Client{Timeout: 60 * time.Second}}
	do := func(rig *deviceRig, method, path string, body any) (int, map[string]any) {
		t.Helper()
		var out map[string]any
		status, err := rig.api(ctx, method, path, body, &out)
		require.NoError(t, err)
		return status, out
	}
	mustDo := func(method, path string, body any) map[string]any {
		t.Helper()
		status, out := do(admin, method, path, body)
		require.Less(t, status, 300, "%s %s: %d %v", method, path, status, out)
		return out
	}

	// The caller: may read, not write.
	created := mustDo(http.MethodPost, "/callers", map[string]any{"name": "mx-reader", "permissions": []string{"read:*"}})
	readerBrain := &brainProc{proc: brain.proc, url: brain.url, token: created["token"].(string)}
	reader := &deviceRig{brain: readerBrain, client: admin.client}

	// The device, serving the same tools.
	devToken, err := admin.addDevice(ctx, "mx-dev")
	require.NoError(t, err)
	devReg, err := admin.writeRegistry("mx-dev", `{"version": "matrix", "tools": `+strings.ReplaceAll(matrixTools, "WHO", "mx-dev")+`}`)
	require.NoError(t, err)
	dev, err := admin.startDeviceAt("mx-dev", devToken, devReg, "", true)
	require.NoError(t, err)
	t.Cleanup(dev.kill)

	// The SQL role, whose calls carry sql:mx_sql, granted reads.
	_, err = pool.Exec(ctx, `CREATE ROLE mx_sql LOGIN IN ROLE gem_caller`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP OWNED BY mx_sql; DROP ROLE mx_sql`) })
	_, err = pool.Exec(ctx, `SELECT gem_caller_grant('sql:mx_sql', '{read:*}')`)
	require.NoError(t, err)
	roleCfg, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	roleCfg.User, roleCfg.Password = "mx_sql", ""
	role, err := pgx.ConnectConfig(ctx, roleCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = role.Close(context.Background()) })

	// The agent, with every matrix tool, spoken to by the reader.
	mustDo(http.MethodPost, "/skills", map[string]any{"slug": "mx", "name": "Matrix", "instructions": "Use the lab.",
		"tools": []string{"mx.read", "mx.write", "mx.guarded", "mx.limited"}})
	mustDo(http.MethodPost, "/agents", map[string]any{"slug": "mx-agent", "name": "Matrix agent", "max_tool_iterations": 2})
	mustDo(http.MethodPut, "/agents/mx-agent/skills/mx", nil)

	// receiptOutcome reads a call's receipt (waiting for it) as an outcome's Result.
	receiptOutcome := func(id string) string {
		t.Helper()
		var got map[string]any
		status, err := admin.api(ctx, http.MethodGet, "/calls/"+id+"?wait=20s", nil, &got)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, "%v", got)
		if got["call"].(map[string]any)["status"] == "awaiting_approval" {
			return "awaiting_approval"
		}
		return resultOf(got["receipt"].(map[string]any))
	}
	callBody := func(out map[string]any) string {
		if errs, _ := out["errors"].([]any); len(errs) > 0 && errs[0].(map[string]any)["code"] == "awaiting_approval" {
			return "awaiting_approval"
		}
		rc, _ := out["receipt"].(map[string]any)
		if rc == nil {
			return fmt.Sprintf("no receipt: %v", out)
		}
		return resultOf(rc)
	}

	doors := []struct {
		name string
		call func(tool, key string) outcome
	}{
		{"HTTP", func(tool, key string) outcome {
			status, out := do(reader, http.MethodPost, "/calls", map[string]any{"tool": tool, "input": map[string]any{"key": key}, "wait_timeout_ms": 20000})
			return outcome{status, callBody(out)}
		}},
		{"CLI", func(tool, key string) outcome {
			cmd := exec.CommandContext(ctx, bins.brain, "call", tool, fmt.Sprintf(`{"key": %q}`, key), "-wait", "20s", "-json")
			cmd.Env = []string{"GEM_BRAIN_URL=" + brain.url, "GEM_BRAIN_TOKEN=" + readerBrain.token, "PATH=/usr/bin:/bin"}
			var stdout bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, logs
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			var out map[string]any
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), stdout.String())
			return outcome{code, callBody(out)}
		}},
		{"MCP", func(tool, key string) outcome {
			rpc, err := newMCPHTTP(ctx, admin.client, readerBrain)
			require.NoError(t, err)
			var out struct {
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
			}
			require.NoError(t, rpc.rpc(ctx, 3, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"key": key}}, &out))
			sc := out.StructuredContent
			switch {
			case sc["status"] == "awaiting_approval":
				return outcome{http.StatusOK, "awaiting_approval"}
			case out.IsError:
				e, _ := sc["error"].(map[string]any)
				return outcome{http.StatusOK, fmt.Sprintf("failed %v", e["code"])}
			}
			return outcome{http.StatusOK, "succeeded"}
		}},
		{"device", func(tool, key string) outcome {
			status, out := do(reader, http.MethodPost, "/calls", map[string]any{"tool": tool, "input": map[string]any{"key": key},
				"device": "mx-dev", "wait_timeout_ms": 20000})
			res := callBody(out)
			if res == "succeeded" {
				res += " on " + fmt.Sprint(out["receipt"].(map[string]any)["device"])
			}
			return outcome{status, res}
		}},
		{"SQL role", func(tool, key string) outcome {
			var id uuid.UUID
			var status string
			require.NoError(t, role.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, jsonb_build_object('key', $2::text)) RETURNING id, status`,
				tool, key).Scan(&id, &status))
			if status == "awaiting_approval" {
				return outcome{0, status}
			}
			return outcome{0, receiptOutcome(id.String())}
		}},
		{"agent chat", func(tool, key string) outcome {
			next.Store(&[]fakeToolCall{{Name: strings.ReplaceAll(tool, ".", "__"), Arguments: fmt.Sprintf(`{"key": %q, "sleep_ms": null}`, key)}})
			status, out := do(reader, http.MethodPost, "/agents/mx-agent/chat", map[string]any{"message": "go", "user_id": "u1"})
			tcs, _ := out["tool_calls"].([]any)
			require.Len(t, tcs, 1, "%v", out)
			tc := tcs[0].(map[string]any)
			if tc["status"] == "awaiting_approval" {
				return outcome{status, "awaiting_approval"}
			}
			return outcome{status, receiptOutcome(tc["call_id"].(string))}
		}},
	}

	want := map[string]map[string]outcome{
		"HTTP":       {"allowed": {200, "succeeded"}, "denied": {200, "failed permission_denied"}, "approval": {200, "awaiting_approval"}, "over limit": {200, "failed rate_limited"}},
		"CLI":        {"allowed": {0, "succeeded"}, "denied": {1, "failed permission_denied"}, "approval": {1, "awaiting_approval"}, "over limit": {1, "failed rate_limited"}},
		"MCP":        {"allowed": {200, "succeeded"}, "denied": {200, "failed permission_denied"}, "approval": {200, "awaiting_approval"}, "over limit": {200, "failed rate_limited"}},
		"device":     {"allowed": {200, "succeeded on mx-dev"}, "denied": {200, "failed permission_denied"}, "approval": {200, "awaiting_approval"}, "over limit": {200, "failed rate_limited"}},
		"SQL role":   {"allowed": {0, "succeeded"}, "denied": {0, "failed permission_denied"}, "approval": {0, "awaiting_approval"}, "over limit": {0, "failed rate_limited"}},
		"agent chat": {"allowed": {200, "succeeded"}, "denied": {200, "failed permission_denied"}, "approval": {200, "awaiting_approval"}, "over limit": {200, "failed rate_limited"}},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| door | allowed | denied | approval | over limit |\n| --- | --- | --- | --- | --- |\n")
	for _, door := range doors {
		row := map[string]outcome{}
		key := func(what string) string { return strings.ReplaceAll(door.name+"-"+what, " ", "-") }
		row["allowed"] = door.call("mx.read", key("allowed"))
		row["denied"] = door.call("mx.write", key("denied"))
		row["approval"] = door.call("mx.guarded", key("approval"))

		// Over the limit: a call of the tool holds its only slot for 3 s; the door's call waits 300 ms and
		// gives up. (The blocker runs where the door's call would: on the device for the device's door.)
		blocker := map[string]any{"tool": "mx.limited", "input": map[string]any{"key": key("blocker"), "sleep_ms": 3000}}
		if door.name == "device" {
			blocker["device"] = "mx-dev"
		}
		out := mustDo(http.MethodPost, "/calls", blocker)
		blockerID := out["call"].(map[string]any)["id"].(string)
		require.Eventually(t, func() bool { return lab.count("whoami", key("blocker")) == 1 }, 20*time.Second, 5*time.Millisecond)
		row["over limit"] = door.call("mx.limited", key("over"))
		require.Equal(t, "succeeded", receiptOutcome(blockerID))

		cell := func(o outcome) string {
			switch door.name {
			case "CLI":
				return fmt.Sprintf("exit %d, %s", o.Status, o.Result)
			case "SQL role":
				return o.Result
			}
			return fmt.Sprintf("%d, %s", o.Status, o.Result)
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s |\n", door.name, cell(row["allowed"]), cell(row["denied"]), cell(row["approval"]), cell(row["over limit"]))
		for what, got := range row {
			require.Equal(t, want[door.name][what], got, "%s, %s", door.name, what)
		}
	}
	t.Log("\n" + table.String())
	require.Zero(t, lab.count("effect", "HTTP-denied")+lab.count("effect", "device-denied"), "a denied write never reached the service")
	require.Zero(t, lab.count("whoami", "HTTP-over"), "a call over its limit never ran")
}

// resultOf is a receipt's status, with its error code when it did not succeed.
func resultOf(rc map[string]any) string {
	if rc["status"] == "succeeded" {
		return "succeeded"
	}
	e, _ := rc["error"].(map[string]any)
	return fmt.Sprintf("%v %v", rc["status"], e["code"])
}

// jsonArray splits a JSON array into its elements' texts.
func jsonArray(t *testing.T, doc string) []string {
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(doc), &items))
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}
