package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"github.com/gemhq/gem/brain/internal/testenv"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// cliAs runs the brain CLI against a brain with a token, returning its exit code and everything it printed.
func cliAs(a *testAPI, args ...string) (int, string) {
	env := map[string]string{"GEM_BRAIN_URL": a.url, "GEM_BRAIN_TOKEN": a.token}
	var out, errOut bytes.Buffer
	code := cli(args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String() + errOut.String()
}

// mcpAs connects an MCP client to the brain with a's token (and extra headers).
func mcpAs(t *testing.T, a *testAPI, headers map[string]string) *mcp.ClientSession {
	t.Helper()
	h := withHeaders{"Authorization": "Bearer " + a.token}
	for k, v := range headers {
		h[k] = v
	}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "gem-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: a.url + "/mcp", HTTPClient: &http.Client{Transport: h}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestPlanApprovalNeedsApprove: approving another caller's stored plan needs approve, and its calls run with
// no more than the approver holds: a reader is refused (HTTP and `brain approve`), an approver lacking the
// plan's write is refused, one holding it runs the plan — the calls are the author's, approved by it, on the
// run, the calls, core_calls and the studio. An author approves its own plan without approve. The studio
// shows the button only to those who may press it.
func TestPlanApprovalNeedsApprove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newAPI(t)
	_, reader := addCaller(t, admin, []string{"read:*"}, nil)
	_, auditor := addCaller(t, admin, []string{"read:*", "audit"}, nil)
	approverName, approver := addCaller(t, admin, []string{"read:*", "approve"}, nil)
	writerName, writer := addCaller(t, admin, []string{"read:*", "write:db", "approve"}, nil)
	plan := func(a *testAPI, message string) string {
		t.Helper()
		resp, status := a.run(map[string]any{"message": message, "mode": "plan"})
		require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
		require.Equal(t, brain.RunPlanned, resp.Status, "%+v", resp.Errors)
		return resp.RunID.String()
	}
	approve := func(a *testAPI, id string, out any) int {
		t.Helper()
		return a.do(http.MethodPost, "/brain/runs/"+id+"/approve", map[string]any{"wait": true, "wait_timeout_ms": 20000}, out)
	}
	title := uniq("planned by the admin")
	id := plan(admin, "create a task to "+title)

	// A reader may not approve the admin's plan, from the API or the CLI: nothing is enqueued.
	var e errorResponse
	require.Equal(t, http.StatusForbidden, approve(reader, id, &e), "%+v", e.Errors)
	require.Equal(t, brain.EFORBIDDEN, e.Errors[0].Code)
	require.Contains(t, e.Errors[0].Message, "approve")
	code, out := cliAs(reader, "approve", id, "-wait")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "HTTP 403")
	// An approver without write:db: the calls would run with more than it holds.
	require.Equal(t, http.StatusForbidden, approve(approver, id, &e), "%+v", e.Errors)
	require.Contains(t, e.Errors[0].Message, "write:db")
	require.Contains(t, e.Errors[0].Message, approverName)
	require.Zero(t, testenv.CountCalls(t, shared.pool, id), "nothing was enqueued")
	require.Equal(t, brain.RunPlanned, testenv.RunStatus(t, shared.pool, id))

	// The studio: a reader cannot open the admin's plan; an auditor reads it without the button; an approver
	// and the author see the button.
	pageOf := func(a *testAPI) (int, string) {
		t.Helper()
		s := newStudioClient(t, a.url)
		s.login(a.token)
		return s.get("/studio/runs/" + id)
	}
	status, _ := pageOf(reader)
	require.Equal(t, http.StatusNotFound, status)
	status, body := pageOf(auditor)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, body, `id="approve-run"`)
	status, body = pageOf(approver)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="approve-run"`)
	status, body = pageOf(admin)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="approve-run"`)

	// An approver holding write:db runs it: the calls are the admin's, approved by the writer.
	var approved map[string]any
	require.Equal(t, http.StatusOK, approve(writer, id, &approved), "%v", approved)
	require.Equal(t, true, approved["ok"], "%v", approved)
	require.Equal(t, "tester", approved["requested_by"])
	require.Equal(t, writerName, approved["approved_by"])
	var run map[string]any
	require.Equal(t, http.StatusOK, admin.do(http.MethodGet, "/brain/runs/"+id, nil, &run))
	require.Equal(t, writerName, run["approved_by"])
	callID := run["enqueued"].([]any)[0].(map[string]any)["call_id"].(string)
	var call struct {
		Call map[string]any `json:"call"`
	}
	require.Equal(t, http.StatusOK, admin.do(http.MethodGet, "/calls/"+callID, nil, &call))
	require.Equal(t, "tester", call.Call["requested_by"])
	require.Equal(t, writerName, call.Call["approved_by"])
	var viewApprover string
	require.NoError(t, shared.pool.QueryRow(ctx, `SELECT approved_by FROM core_calls WHERE id = $1`, callID).Scan(&viewApprover))
	require.Equal(t, writerName, viewApprover)
	require.Equal(t, http.StatusOK, writer.do(http.MethodGet, "/calls/"+callID, nil, nil), "the approver reads the calls it approved")
	s := newStudioClient(t, admin.url)
	s.login(admin.token)
	status, body = s.get("/studio/calls/" + callID)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, writerName)
	status, body = s.get("/studio/runs/" + id)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, writerName)
	require.NotContains(t, body, `id="approve-run"`)

	// The author approves its own plan without approve (a reader's read).
	own := plan(reader, "list my tasks")
	require.Equal(t, http.StatusOK, approve(reader, own, &approved), "%v", approved)
	require.Equal(t, true, approved["ok"], "%v", approved)
	require.Equal(t, approved["requested_by"], approved["approved_by"])
}

// TestCallersReadTheirOwn: a caller reads its own calls, receipts and runs — by id, in listings, over MCP,
// in the studio's pages and live stream — and another caller's are not found; a caller holding audit reads
// everyone's.
func TestCallersReadTheirOwn(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	readerName, reader := addCaller(t, admin, []string{"read:*"}, nil)
	_, auditor := addCaller(t, admin, []string{"read:*", "audit"}, nil)
	mine := reader.call("os.health_check", map[string]any{})
	theirs := admin.call("os.health_check", map[string]any{})
	mineID, theirsID := mine.Call.ID.String(), theirs.Call.ID.String()

	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/calls/"+mineID, nil, nil))
	var e errorResponse
	require.Equal(t, http.StatusNotFound, reader.do(http.MethodGet, "/calls/"+theirsID, nil, &e))
	require.Equal(t, brain.ENOTFOUND, e.Errors[0].Code)
	require.Equal(t, http.StatusNotFound, reader.do(http.MethodGet, "/calls/"+theirsID+"?wait=1s", nil, &e))
	require.Equal(t, http.StatusOK, auditor.do(http.MethodGet, "/calls/"+theirsID, nil, nil))

	type listed struct {
		Calls []struct {
			ID          string `json:"id"`
			RequestedBy string `json:"requested_by"`
		} `json:"calls"`
		Receipts []struct {
			CallID string `json:"call_id"`
		} `json:"receipts"`
	}
	var list listed
	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/calls?tool=os.health_check&limit=1000", nil, &list))
	ids := map[string]bool{}
	for _, c := range list.Calls {
		require.Equal(t, readerName, c.RequestedBy, "a caller lists its own calls")
		ids[c.ID] = true
	}
	require.True(t, ids[mineID])
	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/calls?caller=tester", nil, &list))
	require.Empty(t, list.Calls)
	require.Equal(t, http.StatusOK, auditor.do(http.MethodGet, "/calls?caller=tester&tool=os.health_check", nil, &list))
	require.NotEmpty(t, list.Calls)
	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/receipts?tool=os.health_check&limit=1000", nil, &list))
	ids = map[string]bool{}
	for _, r := range list.Receipts {
		ids[r.CallID] = true
	}
	require.True(t, ids[mineID])
	require.False(t, ids[theirsID], "another caller's receipt is not listed")
	require.Equal(t, http.StatusOK, auditor.do(http.MethodGet, "/receipts?tool=os.health_check&limit=1000", nil, &list))
	require.NotEmpty(t, list.Receipts)

	// Runs.
	adminRun := admin.runOK(map[string]any{"message": "health check", "mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusNotFound, reader.do(http.MethodGet, "/brain/runs/"+adminRun.RunID.String(), nil, &e))
	require.Equal(t, http.StatusOK, auditor.do(http.MethodGet, "/brain/runs/"+adminRun.RunID.String(), nil, nil))
	ownRun := reader.runOK(map[string]any{"message": "health check", "mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/brain/runs/"+ownRun.RunID.String(), nil, nil))

	// MCP: gem.get_receipt answers a caller's own calls only.
	s := mcpAs(t, reader, nil)
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": theirsID}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "not_found", res.StructuredContent.(map[string]any)["status"])
	res, err = s.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": mineID}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	res, err = mcpAs(t, auditor, nil).CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": theirsID}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)

	// The studio: pages and the live stream.
	st := newStudioClient(t, reader.url)
	st.login(reader.token)
	status, body := st.get("/studio/calls?tool=os.health_check")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, mineID)
	require.NotContains(t, body, theirsID)
	status, _ = st.get("/studio/calls/" + theirsID)
	require.Equal(t, http.StatusNotFound, status)
	status, body = st.get("/studio/runs")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, ownRun.RunID.String())
	require.NotContains(t, body, adminRun.RunID.String())
	status, _ = st.get("/studio/runs/" + adminRun.RunID.String())
	require.Equal(t, http.StatusNotFound, status)
	status, body = st.get("/studio/executors")
	require.Equal(t, http.StatusOK, status)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := st.events(ctx, "?tool=os.health_check")
	other := admin.call("os.health_check", map[string]any{})
	own := reader.call("os.health_check", map[string]any{})
	awaitCallEvent(t, ctx, events, own.Call.ID.String(), func(c map[string]any) {
		require.NotEqual(t, other.Call.ID.String(), c["id"], "another caller's call came on the stream")
		require.Equal(t, readerName, c["requested_by"])
	})
}

// TestChatSessionsBelongToTheirCaller: a session of POST /operator/chat or of an agent belongs to the caller
// that started it: another caller that names it (to go on with it or to resume it) is told there is no
// such session, and nothing of it is used; the owner goes on as before.
func TestChatSessionsBelongToTheirCaller(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	readerName, reader := addCaller(t, admin, []string{"*"}, nil)

	// The rules planner's conversations (no LLM on the shared brain).
	var started map[string]any
	require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/operator/chat", map[string]any{"message": "new lead Ann Lee 0412 345 678 in Newtown"}, &started), "%v", started)
	session := started["session_id"].(string)
	var e errorResponse
	require.Equal(t, http.StatusNotFound, reader.do(http.MethodPost, "/operator/chat", map[string]any{"message": "schedule an inspection friday at 10am",
		"session_id": session}, &e), "%+v", e.Errors)
	require.Equal(t, brain.ENOTFOUND, e.Errors[0].Code)
	var n int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM brain_runs WHERE conversation_id = $1 AND requested_by = $2`,
		session, readerName).Scan(&n))
	require.Zero(t, n, "nothing was run in the admin's session")
	var again map[string]any
	require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/operator/chat", map[string]any{"message": "list leads", "session_id": session}, &again), "%v", again)

	// An agent's session (the LLM loop), for the same user id: the second caller may not go on or resume.
	var told string
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Text: "Hello."},
		llmfake.Turn{Text: "Welcome back.", Check: func(t require.TestingT, req *llmfake.Request) {
			for _, m := range req.Messages {
				told += m.Content + "\n"
			}
		}},
	)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 2, nil)
	_, other := addCaller(t, a, []string{"*"}, nil)
	resp, status := chatWith(t, a, agent, "hi, I am the admin", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	status = other.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "what did the admin say?", "user_id": "user-1",
		"session_id": resp.SessionID}, &e)
	require.Equal(t, http.StatusNotFound, status, "%+v", e.Errors)
	status = other.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"resume": true, "user_id": "user-1", "session_id": resp.SessionID}, &e)
	require.Equal(t, http.StatusNotFound, status, "%+v", e.Errors)
	resp, status = chatWith(t, a, agent, "me again", resp.SessionID)
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	require.Equal(t, "Welcome back.", resp.Reply)
	require.Contains(t, told, "hi, I am the admin")
	require.NotContains(t, told, "what did the admin say?", "the other caller's message never joined the session")
}

// TestAgentLimitedCallerNamesNoAgent: a caller limited to some agents makes every call for one of them: with
// one agent, its calls are that agent's and checked against its tools (a tool it lacks is refused at the
// door); with several and none named, the brain asks which; over MCP the session is its agent's; and a call
// inserted by SQL in its name for no agent is refused by the executor.
func TestAgentLimitedCallerNamesNoAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newAPI(t)
	mine := agentWithSkills(t, admin, 2, map[string][]string{uniq("health"): {"os.health_check"}})
	other := agentWithSkills(t, admin, 2, nil)
	name, limited := addCaller(t, admin, []string{"*"}, []string{mine})

	r := limited.call("os.health_check", map[string]any{})
	require.True(t, r.OK, "%+v", r.Receipt.Error)
	require.Equal(t, mine, r.Call.Agent, "the call is its only agent's")
	var e errorResponse
	task := map[string]any{"tool": "os.create_task", "input": map[string]any{"title": "escaping the limit", "domain": "business"}, "wait_timeout_ms": 20000}
	require.Equal(t, http.StatusForbidden, limited.do(http.MethodPost, "/calls", task, &e), "%+v", e.Errors)
	require.Contains(t, e.Errors[0].Message, mine)
	require.Contains(t, e.Errors[0].Message, "os.create_task")

	// A run without an agent is its agent's too: a plan with a tool the agent lacks enqueues nothing.
	resp, status := limited.run(map[string]any{"message": "create a task to escape the limit", "mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusForbidden, status, "%+v", resp.Errors)
	require.Zero(t, testenv.CountCalls(t, shared.pool, resp.RunID))

	// Two agents and none named: which one?
	_, two := addCaller(t, admin, []string{"*"}, []string{mine, other})
	require.Equal(t, http.StatusBadRequest, two.do(http.MethodPost, "/calls", map[string]any{"tool": "os.health_check"}, &e), "%+v", e.Errors)
	require.Contains(t, e.Errors[0].Message, mine)
	require.Contains(t, e.Errors[0].Message, other)
	var named callResponse
	require.Equal(t, http.StatusOK, two.do(http.MethodPost, "/calls", map[string]any{"tool": "os.health_check", "agent": mine, "wait_timeout_ms": 20000}, &named), "%+v", named.Errors)
	require.Equal(t, mine, named.Call.Agent)

	// MCP without X-GEM-Agent: its agent's tools, its agent's calls.
	s := mcpAs(t, limited, nil)
	tools, err := s.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "os__health_check")
	require.NotContains(t, names, "os__create_task")
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "os.health_check"})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, mine, callOf(t, res.Meta).Agent)
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "os.create_task", Arguments: map[string]any{"title": "escaping by MCP", "domain": "business"}})
	require.NoError(t, err)
	require.True(t, res.IsError, "%v", res.Content)

	// SQL: the executor refuses a call in its name for no agent.
	id, err := insertedID(gemsql.CallInsert(ctx, shared.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: name}))
	require.NoError(t, err)
	var got callResponse
	require.Equal(t, http.StatusOK, admin.do(http.MethodGet, "/calls/"+id.String()+"?wait=20s", nil, &got))
	require.Equal(t, registry.CodePermissionDenied, got.Receipt.Error.Code, got.Receipt.Error.Message)
	require.Contains(t, got.Receipt.Error.Message, mine)
}

// TestRevokedTokenStaysDead: changing a revoked caller's grants (HTTP, CLI, SQL) leaves it revoked; enabling
// it answers a new token, and the old one never authenticates again.
func TestRevokedTokenStaysDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newAPI(t)
	name, c := addCaller(t, admin, []string{"read:*"}, nil)
	require.Equal(t, http.StatusOK, c.do(http.MethodGet, "/calls?limit=1", nil, nil))
	require.Equal(t, http.StatusOK, admin.do(http.MethodDelete, "/callers/"+name, nil, nil))
	require.Eventually(t, func() bool { return c.do(http.MethodGet, "/calls?limit=1", nil, nil) == http.StatusUnauthorized },
		5*time.Second, 100*time.Millisecond)

	var resp struct {
		Caller *gemsql.Caller `json:"caller"`
		Token  string         `json:"token"`
		Errors []*brain.Error `json:"errors"`
	}
	require.Equal(t, http.StatusOK, admin.do(http.MethodPatch, "/callers/"+name, map[string]any{"permissions": []string{"read:*", "write:db"}}, &resp), "%+v", resp.Errors)
	require.NotNil(t, resp.Caller.RevokedAt, "granting does not lift the revocation")
	code, out := cliAs(admin, "callers", "grant", name, "-grant", "read:*")
	require.Equal(t, 0, code, out)
	_, err := shared.pool.Exec(ctx, `SELECT gem_caller_grant($1, '{read:*}')`, name)
	require.NoError(t, err)
	require.Never(t, func() bool { return c.do(http.MethodGet, "/calls?limit=1", nil, nil) != http.StatusUnauthorized },
		3*time.Second, 200*time.Millisecond, "the revoked token works again")

	// Enabling answers a new token; the old one stays dead.
	resp.Caller = nil
	require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/callers/"+name+"/enable", nil, &resp), "%+v", resp.Errors)
	require.Nil(t, resp.Caller.RevokedAt)
	require.True(t, strings.HasPrefix(resp.Token, "gem_"), resp.Token)
	fresh := &testAPI{t: t, url: admin.url, token: resp.Token}
	require.Equal(t, http.StatusOK, fresh.do(http.MethodGet, "/calls?limit=1", nil, nil))
	require.Never(t, func() bool { return c.do(http.MethodGet, "/calls?limit=1", nil, nil) != http.StatusUnauthorized },
		3*time.Second, 200*time.Millisecond, "the old token works again")

	// The CLI: revoke, enable.
	require.Equal(t, http.StatusOK, admin.do(http.MethodDelete, "/callers/"+name, nil, nil))
	code, out = cliAs(admin, "callers", "enable", name)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "token: gem_")
	require.Eventually(t, func() bool { return fresh.do(http.MethodGet, "/calls?limit=1", nil, nil) == http.StatusUnauthorized },
		5*time.Second, 100*time.Millisecond, "the token before the last enable stops working")

	// Enabling a caller that is not revoked, or one whose token is in the brain's configuration, is a conflict.
	var e errorResponse
	require.Equal(t, http.StatusConflict, admin.do(http.MethodPost, "/callers/"+name+"/enable", nil, &e), "%+v", e.Errors)
	require.Equal(t, http.StatusConflict, admin.do(http.MethodPost, "/callers/tester/enable", nil, &e), "%+v", e.Errors)
	require.Equal(t, http.StatusNotFound, admin.do(http.MethodPost, "/callers/"+uniq("nobody")+"/enable", nil, &e))
}

// TestCallerNamesReserved: POST /callers refuses GEM's own callers' names, an SQL caller without a role, and
// a name that differs from an existing caller's only in case.
func TestCallerNamesReserved(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	name, _ := addCaller(t, admin, []string{"read:db"}, nil)
	for _, n := range []string{"anonymous", "stdio", "highlevel-webhook", "sql:", "TESTER", strings.ToUpper(name)} {
		var e errorResponse
		require.Equal(t, http.StatusBadRequest, admin.do(http.MethodPost, "/callers", map[string]any{"name": n, "permissions": []string{"read:db"}}, &e), n)
		require.Equal(t, brain.EINVALID, e.Errors[0].Code, n)
	}
	for _, n := range []string{"sql:", "TESTER", strings.ToUpper(name)} {
		require.Equal(t, http.StatusNotFound, admin.do(http.MethodGet, "/callers/"+url.PathEscape(n), nil, nil), n)
	}
}

// TestHealthHidesExecutors: without a token /health says how many executors are alive, not which; with one
// it lists those alive or gone recently, not every executor ever started.
func TestHealthHidesExecutors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := uniq("long-gone")
	_, err := shared.pool.Exec(ctx, `INSERT INTO core_executors (id, hostname, pid, version, started_at, dead_at)
		VALUES ($1, 'secret-host-' || $1, 4242, 'v0', now() - interval '30 days', now() - interval '29 days')`, old)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = shared.pool.Exec(context.Background(), `DELETE FROM core_executors WHERE id = $1`, old) })

	var anon map[string]any
	noToken := &testAPI{t: t, url: shared.url}
	require.Equal(t, http.StatusOK, noToken.do(http.MethodGet, "/health", nil, &anon))
	executors := anon["executors"].(map[string]any)
	require.GreaterOrEqual(t, executors["alive"], 1.0)
	require.NotContains(t, executors, "list")
	raw, _ := json.Marshal(anon)
	require.NotContains(t, string(raw), "hostname")
	require.NotContains(t, string(raw), "secret-host-")

	var authed struct {
		Executors struct {
			Alive int `json:"alive"`
			List  []struct {
				ID    string `json:"id"`
				Alive bool   `json:"alive"`
			} `json:"list"`
		} `json:"executors"`
	}
	require.Equal(t, http.StatusOK, newAPI(t).do(http.MethodGet, "/health", nil, &authed))
	require.NotEmpty(t, authed.Executors.List)
	for _, x := range authed.Executors.List {
		require.NotEqual(t, old, x.ID, "an executor gone a month ago is not listed")
	}
}

// TestFailedAuthenticationsThrottled: a client sending token after unknown token is answered 429 with
// Retry-After once it has failed too often (each failure cost a database lookup), and so is its next studio
// login; a caller whose token is good goes on being served.
func TestFailedAuthenticationsThrottled(t *testing.T) {
	t.Parallel()
	m, err := startBrain(shared.dbURL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	good := &testAPI{t: t, url: m.Server.URL(), token: testToken}
	require.Equal(t, http.StatusOK, good.do(http.MethodGet, "/calls?limit=1", nil, nil))

	// 100 made-up tokens at once (an answer over the budget is held up to a second, so they go together).
	type answer struct {
		status     int
		retryAfter string
	}
	answers := make(chan answer, 100)
	for range 100 {
		go func() {
			var raw [24]byte
			_, _ = rand.Read(raw[:])
			req, _ := http.NewRequest(http.MethodGet, good.url+"/calls?limit=1", nil)
			req.Header.Set("Authorization", "Bearer gem_"+hex.EncodeToString(raw[:]))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{status: -1}
				return
			}
			resp.Body.Close()
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}
	throttled := 0
	var retryAfter string
	for range 100 {
		a := <-answers
		switch a.status {
		case http.StatusTooManyRequests:
			throttled++
			retryAfter = a.retryAfter
		case http.StatusUnauthorized:
		default:
			t.Fatalf("a random token got %d", a.status)
		}
	}
	require.Greater(t, throttled, 50, "most of 100 random tokens at once are throttled")
	require.NotEmpty(t, retryAfter)
	require.Equal(t, http.StatusOK, good.do(http.MethodGet, "/calls?limit=1", nil, nil), "a good token is still served")

	// Studio logins with made-up tokens draw on the same budget: a run of them is refused 429.
	s := newStudioClient(t, good.url)
	status, _ := s.get("/studio/login")
	require.Equal(t, http.StatusOK, status)
	for i := 0; ; i++ {
		require.Less(t, i, 40, "no studio login was throttled")
		resp, body := s.post("/studio/login", url.Values{"_csrf": {s.csrf}, "token": {"gem_" + uuid.NewString()}}, good.url)
		if resp.StatusCode == http.StatusTooManyRequests {
			require.Contains(t, body, "Too many")
			break
		}
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	}
}
