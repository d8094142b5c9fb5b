package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// GEM's tasks driven by a real client that speaks the extension: the official requester of the tasks
// extension (@modelcontextprotocol/ext-tasks) on the official TypeScript SDK v2 client
// (scripts/mcp-tasks-client/tasks-client.mjs, installed by `make mcp-peers`). The package checks every
// answer it reads against its own schemas of the extension and throws when one does not match.

// tasksClientCall is one call of a tasks-client plan.
type tasksClientCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	// Input answers the task's input requests (an elicitation's answer).
	Input map[string]any `json:"input,omitempty"`
	// Hold waits for the test's go-ahead after tools/call answered; Cancel cancels the task then.
	Hold   bool `json:"hold,omitempty"`
	Cancel bool `json:"cancel,omitempty"`
}

// tasksClientEvent is a line tasks-client.mjs printed.
type tasksClientEvent struct {
	Event   string         `json:"event"`
	Index   int            `json:"index"`
	Kind    string         `json:"kind"`
	TaskID  string         `json:"taskId"`
	Request map[string]any `json:"request"`
	Error   string         `json:"error"`
	Outcome *struct {
		Status string         `json:"status"`
		Result map[string]any `json:"result"`
		Error  string         `json:"error"`
	} `json:"outcome"`
	LastTask *struct {
		Status        string         `json:"status"`
		StatusMessage string         `json:"statusMessage"`
		Raw           map[string]any `json:"raw"`
	} `json:"lastTask"`
}

// tasksClientDir is where make mcp-peers installs the tasks client; a test fails, not skips, without it.
func tasksClientDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "scripts", "mcp-tasks-client")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "ext-tasks", "package.json")); err != nil {
		t.Fatalf("the MCP tasks client is not installed (%v): run make mcp-peers", err)
	}
	return dir
}

// tasksClient runs tasks-client.mjs on a plan; events gives its lines as they come, goAhead releases a held
// call, and wait returns once it exits.
type tasksClient struct {
	events chan tasksClientEvent
	stdin  io.WriteCloser
	done   chan error
	stderr *sqltest.SyncBuffer
}

func startTasksClient(t *testing.T, url, token string, calls []tasksClientCall) *tasksClient {
	t.Helper()
	dir := tasksClientDir(t)
	data, err := json.Marshal(map[string]any{"url": url + "/mcp", "token": token, "calls": calls})
	require.NoError(t, err)
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, data, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "tasks-client.mjs"), plan)
	c := &tasksClient{events: make(chan tasksClientEvent, 64), done: make(chan error, 1), stderr: &sqltest.SyncBuffer{}}
	cmd.Stderr = c.stderr
	c.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		scan := bufio.NewScanner(stdout)
		scan.Buffer(nil, 16<<20)
		for scan.Scan() {
			var e tasksClientEvent
			if json.Unmarshal(scan.Bytes(), &e) == nil {
				c.events <- e
			}
		}
		close(c.events)
		c.done <- cmd.Wait()
	}()
	return c
}

// next is the client's next line; it fails when the client ends or keeps silent for a minute.
func (c *tasksClient) next(t *testing.T) tasksClientEvent {
	t.Helper()
	select {
	case e, ok := <-c.events:
		require.True(t, ok, "tasks-client.mjs ended early: %s", c.stderr.String())
		require.NotEqual(t, "threw", e.Event, "tasks-client.mjs: %s", e.Error)
		return e
	case <-time.After(time.Minute):
		t.Fatalf("tasks-client.mjs said nothing for a minute: %s", c.stderr.String())
		return tasksClientEvent{}
	}
}

func (c *tasksClient) goAhead(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(c.stdin, "go\n")
	require.NoError(t, err)
}

func (c *tasksClient) wait(t *testing.T) {
	t.Helper()
	for e := range c.events {
		require.NotEqual(t, "threw", e.Event, "tasks-client.mjs: %s", e.Error)
	}
	require.NoError(t, <-c.done, "tasks-client.mjs: %s", c.stderr.String())
}

// TestMCPTasksClient: the official tasks requester drives /mcp. A call that ends at once is answered at
// once; a call held by a row lock becomes a task the client follows to its result, the same structured
// content as the receipt; a queued call it cancels ends cancelled with one receipt; a held call's input
// request reaches the client — the approval page's URL for a caller that may not decide, a form for one
// that may — and the form's answer decides it.
func TestMCPTasksClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("immediate and task results", func(t *testing.T) {
		t.Parallel()
		taskID, release := heldOSTask(t, "held for the tasks client")

		c := startTasksClient(t, shared.url, testToken, []tasksClientCall{
			{Name: "os__create_note", Arguments: map[string]any{"domain": "business", "title": "at once " + uuid.NewString()[:8], "content": "x"}},
			{Name: "os__complete_task", Arguments: map[string]any{"task_id": taskID}, Hold: true},
		})
		started := c.next(t)
		require.Equal(t, "immediate", started.Kind, "a call that ends within the task wait answers at once")
		settled := c.next(t)
		require.Equal(t, "completed", settled.Outcome.Status)
		require.NotEmpty(t, settled.Outcome.Result["structuredContent"].(map[string]any)["note_id"])

		started = c.next(t)
		require.Equal(t, "task", started.Kind, "a held call becomes a task")
		require.Regexp(t, `^gemtask_`, started.TaskID)
		release()
		c.goAhead(t)
		settled = c.next(t)
		require.Equal(t, "completed", settled.Outcome.Status, "%+v", settled)
		result := settled.Outcome.Result
		require.Equal(t, "complete", result["resultType"])
		require.NotEqual(t, true, result["isError"])
		callID := settled.LastTask.Raw["_meta"].(map[string]any)["gem/call_id"].(string)
		var receipt json.RawMessage
		require.NoError(t, shared.pool.QueryRow(ctx, `SELECT result FROM core_tool_receipts WHERE call_id = $1`, callID).Scan(&receipt))
		structured, err := json.Marshal(result["structuredContent"])
		require.NoError(t, err)
		require.JSONEq(t, string(receipt), string(structured), "the task's result is the receipt's")
		c.wait(t)
	})

	t.Run("cancelled and held calls", func(t *testing.T) {
		t.Parallel()
		m, pool, _ := taskBrain(t, func(c *Config) { c.MCP.TaskWait, c.MCP.TaskPollInterval = 100*time.Millisecond, 50*time.Millisecond })
		reader := startTasksClient(t, m.Server.URL(), taskReadToken, []tasksClientCall{
			{Name: "os__list_reminders", Arguments: map[string]any{}, Input: map[string]any{"action": "accept"}},
		})
		started := reader.next(t)
		require.Equal(t, "task", started.Kind, "%s", reader.stderr.String())
		input := reader.next(t)
		require.Equal(t, "input", input.Event)
		params := input.Request["params"].(map[string]any)
		require.Equal(t, "url", params["mode"], "a caller that may not decide is shown where a person does: %v", input.Request)
		require.Regexp(t, `^`+m.Server.URL()+`/studio/approvals#call-[0-9a-f-]{36}$`, params["url"])
		callID := params["elicitationId"].(string)
		// The person decides in the studio (here: the API it calls): rejected, the task completes with the receipt.
		api := &testAPI{t: t, url: m.Server.URL(), token: taskOwnerToken}
		require.Zero(t, receiptsOf(t, pool, callID))
		require.Equal(t, http.StatusOK, api.do(http.MethodPost, "/calls/"+callID+"/reject", map[string]any{"reason": "not now"}, nil))
		settled := reader.next(t)
		require.Equal(t, "completed", settled.Outcome.Status, "%+v", settled)
		require.Equal(t, true, settled.Outcome.Result["isError"], "a rejected call is the tool's error, as tools/call answers it")
		require.Equal(t, "rejected", settled.Outcome.Result["structuredContent"].(map[string]any)["error"].(map[string]any)["code"])
		reader.wait(t)

		owner := startTasksClient(t, m.Server.URL(), taskOwnerToken, []tasksClientCall{
			{Name: "os__health_check", Arguments: map[string]any{}, Cancel: true},
			{Name: "os__list_reminders", Arguments: map[string]any{}, Input: map[string]any{"action": "accept", "content": map[string]any{"approve": false, "reason": "decided in the client"}}},
		})
		started = owner.next(t)
		require.Equal(t, "task", started.Kind, "no executor: the call stays queued: %s", owner.stderr.String())
		settled = owner.next(t)
		require.Equal(t, "cancelled", settled.Outcome.Status, "%+v", settled)
		cancelled := settled.LastTask.Raw["_meta"].(map[string]any)["gem/call_id"].(string)
		require.Equal(t, 1, receiptsOf(t, pool, cancelled))

		started = owner.next(t)
		require.Equal(t, "task", started.Kind)
		input = owner.next(t)
		params = input.Request["params"].(map[string]any)
		require.NotEqual(t, "url", params["mode"], "a caller that may decide gets the form: %v", input.Request)
		require.Contains(t, params["requestedSchema"].(map[string]any)["properties"], "approve")
		settled = owner.next(t)
		require.Equal(t, "completed", settled.Outcome.Status, "%+v", settled)
		e := settled.Outcome.Result["structuredContent"].(map[string]any)["error"].(map[string]any)
		require.Equal(t, "rejected", e["code"])
		require.Equal(t, "rejected by owner: decided in the client", e["message"])
		owner.wait(t)
	})
}

// wireCheck is an answer of the server and the package schema (an export of
// @modelcontextprotocol/ext-tasks/core/v2) it must match.
type wireCheck struct {
	Schema string `json:"schema"`
	Value  any    `json:"value"`
}

// requireTaskWire checks answers against the tasks package's own schemas of the extension's wire
// (tasks-client.mjs --validate).
func requireTaskWire(t *testing.T, checks []wireCheck) {
	t.Helper()
	require.NotEmpty(t, checks)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, c := range checks {
		require.NoError(t, enc.Encode(c))
	}
	cmd := exec.Command("node", filepath.Join(tasksClientDir(t), "tasks-client.mjs"), "--validate")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tasks-client.mjs --validate: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, len(checks), "%s", out)
	for i, line := range lines {
		var v struct {
			Schema string   `json:"schema"`
			OK     bool     `json:"ok"`
			Issues []string `json:"issues"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		value, _ := json.Marshal(checks[i].Value)
		require.True(t, v.OK, "%s does not match %s: %v", value, v.Schema, v.Issues)
	}
}
