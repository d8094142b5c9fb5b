package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The MCP tasks extension (io.modelcontextprotocol/tasks, SEP-2663) as clients meet it on /mcp and `brain
// mcp`: raw JSON-RPC of protocol revision 2026-07-28, with and without the extension declared.

const (
	tasksRevision  = "2026-07-28"
	taskOwnerToken = "task-owner-token-0123456789"
	taskOtherToken = "task-other-token-0123456789"
	taskReadToken  = "task-reader-token-0123456789"
)

// tasksPeer speaks revision 2026-07-28 to a brain's /mcp as SEP-2663 has a client do: each request carries
// its _meta (the protocol version, the client, its capabilities: the tasks extension when declare is set)
// and the headers SEP-2243 asks for (MCP-Protocol-Version, Mcp-Method, Mcp-Name).
type tasksPeer struct {
	t       *testing.T
	url     string
	token   string
	declare bool
	// agent, when set, is the agent the peer speaks for (X-GEM-Agent).
	agent string
	ids   int
}

func newTasksPeer(t *testing.T, url, token string, declare bool) *tasksPeer {
	return &tasksPeer{t: t, url: url, token: token, declare: declare}
}

// meta is the _meta of a request of this peer.
func (p *tasksPeer) meta() map[string]any {
	caps := map[string]any{}
	if p.declare {
		caps["extensions"] = map[string]any{mcpserver.TasksExtension: map[string]any{}}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    tasksRevision,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "gem-tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// request sends method with params (and the peer's _meta, merged under params._meta) and returns the HTTP
// status and the answer to it (the message with its id; progress notifications are skipped).
func (p *tasksPeer) request(method string, params map[string]any) (int, rpcMessage) {
	p.t.Helper()
	params = maps.Clone(params)
	if params == nil {
		params = map[string]any{}
	}
	meta := p.meta()
	if m, ok := params["_meta"].(map[string]any); ok {
		maps.Copy(meta, m)
	}
	params["_meta"] = meta
	name, _ := params["taskId"].(string)
	if method == "tools/call" {
		name, _ = params["name"].(string)
	}
	p.ids++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.ids, "method": method, "params": params})
	require.NoError(p.t, err)
	return p.send(body, method, name)
}

// send posts one body with the revision's headers (Mcp-Name only when name is not empty).
func (p *tasksPeer) send(body []byte, method, name string) (int, rpcMessage) {
	p.t.Helper()
	req := mcpRequest(p.t, context.Background(), p.url+"/mcp", p.token, string(body))
	req.Header.Set("MCP-Protocol-Version", tasksRevision)
	req.Header.Set("Mcp-Method", method)
	if p.agent != "" {
		req.Header.Set(mcpserver.AgentHeader, p.agent)
	}
	if strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		name = "=?base64?" + base64.StdEncoding.EncodeToString([]byte(name)) + "?=" // SEP-2243's form for what a header cannot carry
	}
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	require.NoError(p.t, err, "body %s: the brain did not answer", body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	var answer rpcMessage
	for _, m := range rpcMessages(p.t, resp.Header.Get("Content-Type"), data) {
		if m["id"] != nil {
			answer = m
		}
	}
	require.NotNil(p.t, answer, "no answer to %s: %s", body, data)
	return resp.StatusCode, answer
}

// result sends a request that must succeed and returns its result.
func (p *tasksPeer) result(method string, params map[string]any) map[string]any {
	p.t.Helper()
	status, m := p.request(method, params)
	require.Equal(p.t, http.StatusOK, status, "%s: %v", method, m)
	require.Nil(p.t, m["error"], "%s %v: %s", method, params, m["error"])
	var res map[string]any
	require.NoError(p.t, json.Unmarshal(m["result"], &res))
	return res
}

// rpcErr is a JSON-RPC error answered.
type rpcErr struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// fails sends a request that must fail and returns its error.
func (p *tasksPeer) fails(method string, params map[string]any) rpcErr {
	p.t.Helper()
	_, m := p.request(method, params)
	require.NotNil(p.t, m["error"], "%s %v answered %s", method, params, m["result"])
	var e rpcErr
	require.NoError(p.t, json.Unmarshal(m["error"], &e))
	return e
}

// call makes a tools/call and returns its result.
func (p *tasksPeer) call(tool string, args map[string]any) map[string]any {
	p.t.Helper()
	return p.result("tools/call", map[string]any{"name": tool, "arguments": args})
}

// task asks tasks/get for a task.
func (p *tasksPeer) task(taskID string) map[string]any {
	p.t.Helper()
	return p.result("tasks/get", map[string]any{"taskId": taskID})
}

// waitStatus polls tasks/get until the task has status want, and returns it.
func (p *tasksPeer) waitStatus(taskID, want string) map[string]any {
	p.t.Helper()
	var task map[string]any
	require.Eventually(p.t, func() bool {
		task = p.task(taskID)
		return task["status"] == want
	}, 30*time.Second, 50*time.Millisecond, "task %s never became %s", taskID, want)
	return task
}

// taskBrain is a brain of its own, on a database of its own without an executor (every call stays queued:
// what tasks/cancel may cancel), with three tokens: owner and other may do everything (approve included),
// reader holds read:reminders only. os.list_reminders needs approval (a policy on read:reminders).
func taskBrain(t *testing.T, edit func(*Config)) (*Main, *pgxpool.Pool, string) {
	t.Helper()
	pool, dbURL := sqltest.NewDB(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO core_approval_policies (permission, expires_ms, note) VALUES ('read:reminders', 600000, 'tasks test')`)
	require.NoError(t, err)
	// What an executor records of the tool when it starts, which the policy is matched against.
	_, err = pool.Exec(ctx, `INSERT INTO core_tools (name, permissions) VALUES ('os.list_reminders', '{read:reminders}')`)
	require.NoError(t, err)
	m, err := startBrain(dbURL, func(c *Config) {
		c.Tokens = []api.Token{{Name: "owner", Value: taskOwnerToken}, {Name: "other", Value: taskOtherToken}, {Name: "reader", Value: taskReadToken}}
		if edit != nil {
			edit(c)
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_, err = pool.Exec(ctx, `SELECT gem_caller_grant('reader', '{read:reminders}')`)
	require.NoError(t, err)
	return m, pool, dbURL
}

// receiptsOf counts a call's receipts, in SQL.
func receiptsOf(t *testing.T, pool *pgxpool.Pool, callID string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM core_tool_receipts WHERE call_id = $1`, callID).Scan(&n))
	return n
}

// withoutMeta is a result without its _meta (where the SDK puts the server's name on revision 2026-07-28).
func withoutMeta(res map[string]any) map[string]any {
	out := maps.Clone(res)
	delete(out, "_meta")
	return out
}

// callIDOf is the GEM call a task or an answer names in its _meta.
func callIDOf(t *testing.T, res map[string]any) string {
	t.Helper()
	meta, _ := res["_meta"].(map[string]any)
	id, ok := meta["gem/call_id"].(string)
	require.True(t, ok, "no gem/call_id in %v", res)
	require.NoError(t, uuid.Validate(id))
	return id
}

// TestMCPTasksQueuedAndCancelled: a client that declares the extension gets, for a call that does not end
// within GEM_MCP_TASK_WAIT, a task whose state is its call's; tasks/cancel cancels the queued call with its
// one receipt, however often it is asked; a client that does not declare it keeps pending and gem.get_receipt.
func TestMCPTasksQueuedAndCancelled(t *testing.T) {
	t.Parallel()
	m, pool, _ := taskBrain(t, func(c *Config) { c.MCP.TaskWait, c.MCP.CallWait = 200*time.Millisecond, 300*time.Millisecond })
	owner := newTasksPeer(t, m.Server.URL(), taskOwnerToken, true)

	start := time.Now()
	created := owner.call("os__health_check", map[string]any{})
	require.Less(t, time.Since(start), 10*time.Second, "answered after the task wait, not the call wait")
	require.Equal(t, "task", created["resultType"], "%v", created)
	taskID, _ := created["taskId"].(string)
	require.Regexp(t, `^gemtask_[A-Za-z0-9_-]{43}$`, taskID)
	require.Equal(t, "working", created["status"])
	require.Contains(t, created, "ttlMs")
	require.Nil(t, created["ttlMs"])
	callID := callIDOf(t, created)

	got := owner.task(taskID)
	require.Equal(t, "complete", got["resultType"])
	require.Equal(t, "working", got["status"])
	require.Equal(t, "queued: waiting for an executor", got["statusMessage"])
	require.Equal(t, created["createdAt"], got["createdAt"])
	require.EqualValues(t, 1000, got["pollIntervalMs"])

	for range 2 { // the second is the SEP's answer to a double cancel: an acknowledgement
		require.Equal(t, map[string]any{"resultType": "complete"}, withoutMeta(owner.result("tasks/cancel", map[string]any{"taskId": taskID})))
	}
	got = owner.task(taskID)
	require.Equal(t, "cancelled", got["status"], "%v", got)
	require.Equal(t, "cancelled by owner before it ran", got["statusMessage"])
	require.NotContains(t, got, "result")
	require.Equal(t, 1, receiptsOf(t, pool, callID))
	var code, jobState string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT r.error_code, j.state::text FROM core_tool_receipts r
		JOIN core_tool_calls c ON c.id = r.call_id JOIN river_job j ON j.id = c.job_id WHERE r.call_id = $1`, callID).Scan(&code, &jobState))
	require.Equal(t, "cancelled", code)
	require.Equal(t, "cancelled", jobState)

	// Without the extension: pending, as before, and tasks/* are refused -32021.
	plain := newTasksPeer(t, m.Server.URL(), taskOwnerToken, false)
	res := plain.call("os__health_check", map[string]any{})
	require.NotContains(t, res, "taskId")
	require.Equal(t, "pending", res["structuredContent"].(map[string]any)["status"], "%v", res)
	e := plain.fails("tasks/get", map[string]any{"taskId": taskID})
	require.EqualValues(t, -32021, e.Code)
	require.True(t, strings.HasPrefix(e.Message, "Missing required client capability"), e.Message)
}

// heldOSTask makes an os_tasks row (through the shared brain) and holds it with a row lock, so that a call
// completing it runs until release is called (or the test ends).
func heldOSTask(t *testing.T, title string) (taskID string, release func()) {
	t.Helper()
	ctx := context.Background()
	res, err := session(t, shared.url+"/mcp", nil, nil).CallTool(ctx, &mcp.CallToolParams{Name: "os__create_task",
		Arguments: map[string]any{"title": title, "domain": "business"}})
	require.NoError(t, err)
	taskID = res.StructuredContent.(map[string]any)["task_id"].(string)
	lock, err := shared.pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(ctx) })
	_, err = lock.Exec(ctx, `SELECT 1 FROM os_tasks WHERE id = $1 FOR UPDATE`, taskID)
	require.NoError(t, err)
	return taskID, func() { require.NoError(t, lock.Rollback(ctx)) }
}

// TestMCPTasksHeldAndBound: a call held for approval is an input_required task whose input request is where
// a person decides it — the studio's approvals page, for a caller that may not decide; a form, for one that
// may. tasks/update decides it only for a caller that may; tasks/cancel cancels it with one receipt. A task
// is its caller's: another token asking for it (get, update or cancel) is answered as for an id never made,
// and its call is left alone. Malformed ids, missing params and routing headers that do not match are clear
// errors; the brain goes on.
func TestMCPTasksHeldAndBound(t *testing.T) {
	t.Parallel()
	m, pool, _ := taskBrain(t, func(c *Config) { c.MCP.TaskWait = 100 * time.Millisecond })
	ctx := context.Background()
	url := m.Server.URL()
	reader := newTasksPeer(t, url, taskReadToken, true)
	owner := newTasksPeer(t, url, taskOwnerToken, true)
	other := newTasksPeer(t, url, taskOtherToken, true)
	var wire []wireCheck
	approval := func(callID string) (decision, decidedBy string) {
		t.Helper()
		var d, by *string
		require.NoError(t, pool.QueryRow(ctx, `SELECT decision, decided_by FROM core_approvals WHERE call_id = $1`, callID).Scan(&d, &by))
		if d != nil {
			decision, decidedBy = *d, *by
		}
		return decision, decidedBy
	}

	// A caller that may not decide: the URL where a person does.
	created := reader.call("os__list_reminders", map[string]any{})
	require.Equal(t, "input_required", created["status"], "%v", created)
	held := created["taskId"].(string)
	heldCall := callIDOf(t, created)
	wire = append(wire, wireCheck{"CreateTaskResultV2Schema", created})
	task := reader.task(held)
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", task})
	require.Equal(t, "input_required", task["status"])
	approvalsURL := url + "/studio/approvals#call-" + heldCall
	require.Contains(t, task["statusMessage"], approvalsURL)
	require.EqualValues(t, 5000, task["pollIntervalMs"], "a person decides: polled less often")
	request := task["inputRequests"].(map[string]any)["approval"].(map[string]any)
	require.Equal(t, "elicitation/create", request["method"])
	params := request["params"].(map[string]any)
	require.Equal(t, "url", params["mode"])
	require.Equal(t, approvalsURL, params["url"])
	require.Equal(t, heldCall, params["elicitationId"])
	require.Contains(t, params["message"], "/calls/"+heldCall+"/approve")

	// It may not decide through the task; it may acknowledge the URL, and the task then waits as working.
	e := reader.fails("tasks/update", map[string]any{"taskId": held, "inputResponses": map[string]any{
		"approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}})
	require.EqualValues(t, -32602, e.Code)
	require.Contains(t, e.Message, "caller reader may not decide this approval: it lacks permission approve")
	require.JSONEq(t, `{"code": "forbidden", "url": "`+approvalsURL+`"}`, string(e.Data))
	decision, _ := approval(heldCall)
	require.Empty(t, decision, "nothing decided")
	for _, bad := range []map[string]any{
		{"taskId": held},
		{"taskId": held, "inputResponses": []any{"approval"}},
		{"taskId": held, "inputResponses": map[string]any{"approval": map[string]any{"action": "maybe"}}},
		{"taskId": held, "inputResponses": map[string]any{"approval": "yes"}},
	} {
		require.EqualValues(t, -32602, reader.fails("tasks/update", bad).Code, "%v", bad)
	}
	ack := reader.result("tasks/update", map[string]any{"taskId": held, "inputResponses": map[string]any{"approval": map[string]any{"action": "accept"},
		"never-asked": map[string]any{"action": "accept"}}})
	require.Equal(t, map[string]any{"resultType": "complete"}, withoutMeta(ack))
	wire = append(wire, wireCheck{"UpdateTaskResultV2Schema", ack})
	task = reader.task(held)
	require.Equal(t, "working", task["status"], "answered: no request is outstanding")
	require.Equal(t, "awaiting a person's decision until "+task["statusMessage"].(string)[len("awaiting a person's decision until "):], task["statusMessage"])
	require.Contains(t, task["statusMessage"], approvalsURL)
	require.NotContains(t, task, "inputRequests")
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", task})

	// Another caller finds nothing of it, exactly as for an id never made and for a malformed one.
	never := "gemtask_" + strings.Repeat("A", 43)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := func(id any) map[string]any {
			return map[string]any{"taskId": id, "inputResponses": map[string]any{"approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}}
		}
		theirs := other.fails(method, params(held))
		require.EqualValues(t, -32602, theirs.Code, method)
		require.Contains(t, theirs.Message, "Task not found", method)
		require.Equal(t, theirs, other.fails(method, params(never)), "%s: another's task is answered as one never made", method)
		for _, malformed := range []any{"", "x", "gemtask_", never + "A", strings.Repeat("g", 6000), held + "\u0000"} {
			require.Equal(t, theirs, other.fails(method, params(malformed)), "%s %.40q", method, malformed)
		}
		for _, wrongType := range []any{nil, 7, true, []any{held}, map[string]any{"id": held}} {
			e := other.fails(method, params(wrongType))
			require.EqualValues(t, -32602, e.Code, "%s %v", method, wrongType)
			require.Contains(t, e.Message, `"taskId", a string`)
		}
		e := other.fails(method, map[string]any{})
		require.EqualValues(t, -32602, e.Code, method)
	}
	decision, _ = approval(heldCall)
	require.Empty(t, decision, "another caller decided nothing")
	require.Zero(t, receiptsOf(t, pool, heldCall), "another caller cancelled nothing")
	require.Equal(t, "working", reader.task(held)["status"])

	// The reader cancels its held call: one receipt, the approval "cancelled"; again: the same.
	for range 2 {
		wire = append(wire, wireCheck{"CancelTaskResultV2Schema", reader.result("tasks/cancel", map[string]any{"taskId": held})})
	}
	require.Equal(t, 1, receiptsOf(t, pool, heldCall))
	decision, by := approval(heldCall)
	require.Equal(t, []string{"cancelled", "reader"}, []string{decision, by})
	task = reader.task(held)
	require.Equal(t, "cancelled", task["status"])
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", task})

	// A caller that may decide: a form, answered to reject (a reason is required) or to approve.
	created = owner.call("os__list_reminders", map[string]any{})
	rejected := created["taskId"].(string)
	rejectedCall := callIDOf(t, created)
	task = owner.task(rejected)
	params = task["inputRequests"].(map[string]any)["approval"].(map[string]any)["params"].(map[string]any)
	require.Equal(t, "form", params["mode"])
	require.Equal(t, []any{"approve"}, params["requestedSchema"].(map[string]any)["required"])
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", task})
	// The same token speaking for an agent is another principal: the task is not its.
	api := &testAPI{t: t, url: url, token: taskOwnerToken}
	require.Equal(t, http.StatusCreated, api.do(http.MethodPost, "/agents", map[string]any{"slug": "front-desk", "name": "Front desk", "instructions": "x"}, nil))
	asAgent := newTasksPeer(t, url, taskOwnerToken, true)
	asAgent.agent = "front-desk"
	require.Equal(t, other.fails("tasks/get", map[string]any{"taskId": never}), asAgent.fails("tasks/get", map[string]any{"taskId": rejected}))
	require.Equal(t, "input_required", owner.task(rejected)["status"])
	// The link leads a person to the call on the studio's approvals page.
	link := url + "/studio/approvals#call-" + rejectedCall
	require.Contains(t, params["message"], link)
	studio := newStudioClient(t, url)
	studio.login(taskOwnerToken)
	page, fragment, _ := strings.Cut(strings.TrimPrefix(link, url), "#")
	status, html := studio.get(page)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, html, `<tr id="`+fragment+`"`)
	decide := func(taskID string, content map[string]any) rpcErr {
		return owner.fails("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{"approval": map[string]any{"action": "accept", "content": content}}})
	}
	require.Contains(t, decide(rejected, map[string]any{"approve": false}).Message, "a rejection needs a reason")
	require.Contains(t, decide(rejected, map[string]any{}).Message, `{"approve": true | false}`)
	require.Contains(t, decide(rejected, map[string]any{"approve": "yes"}).Message, "content is")
	owner.result("tasks/update", map[string]any{"taskId": rejected, "inputResponses": map[string]any{"approval": map[string]any{"action": "accept",
		"content": map[string]any{"approve": false, "reason": "not this week"}}}})
	task = owner.task(rejected)
	require.Equal(t, "completed", task["status"], "%v", task)
	result := task["result"].(map[string]any)
	require.Equal(t, true, result["isError"])
	require.Equal(t, "rejected by owner: not this week", result["structuredContent"].(map[string]any)["error"].(map[string]any)["message"])
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", task}, wireCheck{"CallToolResultV2Schema", result})
	// Cancelled after it completed: acknowledged (SEP-2663), and nothing changes.
	owner.result("tasks/cancel", map[string]any{"taskId": rejected})
	require.Equal(t, "completed", owner.task(rejected)["status"])
	require.Equal(t, 1, receiptsOf(t, pool, rejectedCall))

	created = owner.call("os__list_reminders", map[string]any{})
	approved := created["taskId"].(string)
	approvedCall := callIDOf(t, created)
	owner.result("tasks/update", map[string]any{"taskId": approved, "inputResponses": map[string]any{"approval": map[string]any{"action": "accept",
		"content": map[string]any{"approve": true}}}})
	decision, by = approval(approvedCall)
	require.Equal(t, []string{"approved", "owner"}, []string{decision, by})
	task = owner.task(approved)
	require.Equal(t, "working", task["status"])
	require.Equal(t, "queued: waiting for an executor", task["statusMessage"], "no executor here")
	// A second answer is to a request no longer outstanding: ignored.
	owner.result("tasks/update", map[string]any{"taskId": approved, "inputResponses": map[string]any{"approval": map[string]any{"action": "accept",
		"content": map[string]any{"approve": false, "reason": "too late"}}}})
	decision, _ = approval(approvedCall)
	require.Equal(t, "approved", decision)
	// Approved and queued, it is cancelled as a queued call: by its caller, not by a read-only token.
	require.Contains(t, reader.fails("tasks/cancel", map[string]any{"taskId": approved}).Message, "Task not found")
	require.Zero(t, receiptsOf(t, pool, approvedCall))
	owner.result("tasks/cancel", map[string]any{"taskId": approved})
	require.Equal(t, "cancelled", owner.task(approved)["status"])
	require.Equal(t, 1, receiptsOf(t, pool, approvedCall))

	// Routing headers (SEP-2663: Mcp-Name carries the taskId), refused as the SDK refuses a tools/call's.
	body := mustJSONRaw(t, map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": map[string]any{"taskId": approved, "_meta": owner.meta()}})
	for _, name := range []string{"", never} {
		status, msg := owner.send(body, "tasks/get", name)
		require.Equal(t, http.StatusBadRequest, status)
		require.Equal(t, int64(-32020), msg.code(t), "Mcp-Name %q: %s", name, msg["error"])
	}
	status, msg := owner.send(body, "tasks/get", "=?base64?"+base64.StdEncoding.EncodeToString([]byte(approved))+"?=")
	require.Equal(t, http.StatusOK, status, "%s", msg["error"])

	// The extension is offered by server/discover, not by the 2025 handshake, where it is not defined.
	discover := owner.result("server/discover", nil)
	extensions := discover["capabilities"].(map[string]any)["extensions"].(map[string]any)
	require.Equal(t, map[string]any{}, extensions[mcpserver.TasksExtension])
	_, msgs := mcpPost(t, url, taskOwnerToken, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"old","version":"1"}}}`))
	var init struct {
		Capabilities struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(msgs[0]["result"], &init))
	require.Contains(t, init.Capabilities.Extensions, mcpserver.SkillsExtension)
	require.NotContains(t, init.Capabilities.Extensions, mcpserver.TasksExtension)
	requireTaskWire(t, wire)
}

// TestMCPTasksRunning: a task on a running call (held by a row lock) is working; tasks/cancel leaves a running
// call to finish (SEP-2663: cancellation is cooperative); the completed task's result is what a client without
// tasks gets for the same receipt (a repeat of the request with its key).
func TestMCPTasksRunning(t *testing.T) {
	t.Parallel()
	osTask, release := heldOSTask(t, "held for a task")

	peer := newTasksPeer(t, shared.url, testToken, true)
	key := uuid.NewString()
	created := peer.result("tools/call", map[string]any{"name": "os__complete_task", "arguments": map[string]any{"task_id": osTask},
		"_meta": map[string]any{"gem/idempotency_key": key}})
	require.Equal(t, "task", created["resultType"], "%v", created)
	taskID := created["taskId"].(string)
	callID := callIDOf(t, created)
	task := peer.waitStatus(taskID, "working")
	require.Eventually(t, func() bool { return peer.task(taskID)["statusMessage"] == "running (attempt 1)" }, 30*time.Second, 20*time.Millisecond)
	peer.result("tasks/cancel", map[string]any{"taskId": taskID})
	task = peer.task(taskID)
	require.Equal(t, "working", task["status"], "a running call is left to finish")
	require.Zero(t, receiptsOf(t, shared.pool, callID))

	release()
	task = peer.waitStatus(taskID, "completed")
	require.Equal(t, 1, receiptsOf(t, shared.pool, callID))
	result := task["result"].(map[string]any)
	require.Equal(t, "complete", result["resultType"])
	require.Equal(t, callID, result["_meta"].(map[string]any)["gem/call_id"])
	require.Equal(t, "os.complete_task succeeded", task["statusMessage"])

	// The same request repeated with its key by a client without tasks: the same answer.
	plain := newTasksPeer(t, shared.url, testToken, false)
	direct := plain.result("tools/call", map[string]any{"name": "os__complete_task", "arguments": map[string]any{"task_id": osTask},
		"_meta": map[string]any{"gem/idempotency_key": key}})
	require.Equal(t, direct["structuredContent"], result["structuredContent"])
	require.Equal(t, direct["content"], result["content"])
	require.Equal(t, direct["isError"], result["isError"])
	require.Equal(t, direct["resultType"], result["resultType"])

	// Cancelled once it completed: acknowledged, nothing changes.
	peer.result("tasks/cancel", map[string]any{"taskId": taskID})
	require.Equal(t, "completed", peer.task(taskID)["status"])
	require.Equal(t, 1, receiptsOf(t, shared.pool, callID))
	requireTaskWire(t, []wireCheck{{"CreateTaskResultV2Schema", created}, {"GetTaskResultV2Schema", task}, {"CallToolResultV2Schema", direct}})
}

// TestMCPTasksStdio: `brain mcp` serves the extension as /mcp does: a declared tools/call that does not end
// at once is a task, tasks/get follows it, tasks/cancel cancels the queued call with its one receipt.
func TestMCPTasksStdio(t *testing.T) {
	t.Parallel()
	_, pool, dbURL := taskBrain(t, nil)
	p, stop := startStdioPeer(t, dbURL, "GEM_MCP_TASK_WAIT=100ms")
	defer stop()
	declared := newTasksPeer(t, "", "", true)
	line := func(id int, method string, params map[string]any) map[string]any {
		t.Helper()
		params["_meta"] = declared.meta()
		msgs := p.exchange(t, mustJSONRaw(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}), true)
		m := requireAnswer(t, method, msgs, fmt.Sprint(id), 0)
		var res map[string]any
		require.NoError(t, json.Unmarshal(m["result"], &res))
		return res
	}
	created := line(1, "tools/call", map[string]any{"name": "os__health_check", "arguments": map[string]any{}})
	require.Equal(t, "task", created["resultType"], "%v", created)
	taskID := created["taskId"].(string)
	require.Equal(t, "working", line(2, "tasks/get", map[string]any{"taskId": taskID})["status"])
	line(3, "tasks/cancel", map[string]any{"taskId": taskID})
	require.Equal(t, "cancelled", line(4, "tasks/get", map[string]any{"taskId": taskID})["status"])
	require.Equal(t, 1, receiptsOf(t, pool, callIDOf(t, created)))

	// The stdio caller's held call links to the brain's URL (GEM_BRAIN_URL's default).
	created = line(5, "tools/call", map[string]any{"name": "os__list_reminders", "arguments": map[string]any{}})
	task := line(6, "tasks/get", map[string]any{"taskId": created["taskId"]})
	require.Equal(t, "input_required", task["status"])
	require.Contains(t, task["statusMessage"], mcpserver.BaseURLDefault+"/studio/approvals#call-"+callIDOf(t, created))
	// Without the extension declared: -32021, and the session goes on.
	msgs := p.exchange(t, []byte(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"`+taskID+`"}}`), true)
	requireAnswer(t, "undeclared", msgs, "7", -32021)
}

// TestMCPTasksConfig: GEM_MCP_TASK_WAIT sets how long a call from a client that declared tasks waits before
// it becomes one, GEM_BRAIN_URL the approval link's brain; nonsense is refused.
func TestMCPTasksConfig(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	cfg, err := ConfigFromEnv(env(map[string]string{"GEM_MCP_TASK_WAIT": "3s", "GEM_BRAIN_URL": "https://gem.example.com"}))
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, cfg.MCP.TaskWait)
	require.Equal(t, "https://gem.example.com", cfg.MCP.BaseURL)
	cfg, err = ConfigFromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, mcpserver.TaskWaitDefault, cfg.MCP.WithDefaults().TaskWait)
	require.Empty(t, cfg.MCP.BaseURL, "/mcp links to the URL its request came to")
	for _, bad := range []string{"soon", "-1s", "0s"} {
		_, err = ConfigFromEnv(env(map[string]string{"GEM_MCP_TASK_WAIT": bad}))
		require.ErrorContains(t, err, "GEM_MCP_TASK_WAIT", bad)
	}
	for _, bad := range []string{"gem.example.com", "ftp://gem.example.com", "https://"} {
		cfg, err := ConfigFromEnv(env(map[string]string{"GEM_BRAIN_URL": bad, "DATABASE_URL": "postgres://x", "GEM_BRAIN_AUTH": "off"}))
		require.NoError(t, err)
		require.ErrorContains(t, cfg.WithDefaults().validate(), "GEM_BRAIN_URL", bad)
	}
	require.ErrorContains(t, Config{DatabaseURL: "postgres://x", AuthDisabled: true, MCP: mcpserver.Config{TaskWait: time.Hour}}.WithDefaults().validate(),
		"GEM_MCP_TASK_WAIT")
}
