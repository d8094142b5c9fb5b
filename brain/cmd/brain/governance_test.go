package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// callerResponse is the body of POST /callers and its siblings.
type callerResponse struct {
	OK     bool           `json:"ok"`
	Caller *gemsql.Caller `json:"caller"`
	Token  string         `json:"token"`
	Errors []*brain.Error `json:"errors"`
}

// callResponse is the body of POST /calls.
type callResponse struct {
	OK      bool              `json:"ok"`
	Call    *gemsql.Call      `json:"call"`
	Receipt *registry.Receipt `json:"receipt"`
	Errors  []*brain.Error    `json:"errors"`
}

// addCaller makes a token caller as the admin and returns its name and an API client with its token.
func addCaller(t *testing.T, admin *testAPI, permissions []string, agents any) (string, *testAPI) {
	t.Helper()
	name := uniq("caller")
	body := map[string]any{"name": name, "permissions": permissions, "note": "made by " + t.Name()}
	if agents != nil {
		body["agents"] = agents
	}
	var resp callerResponse
	require.Equal(t, http.StatusCreated, admin.do(http.MethodPost, "/callers", body, &resp), "%+v", resp.Errors)
	require.True(t, strings.HasPrefix(resp.Token, "gem_"), resp.Token)
	require.Equal(t, permissions, resp.Caller.Permissions)
	require.True(t, resp.Caller.HasToken)
	return name, &testAPI{t: t, url: admin.url, token: resp.Token}
}

func (a *testAPI) call(tool string, input any) *callResponse {
	a.t.Helper()
	var resp callResponse
	require.Equal(a.t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": tool, "input": input, "wait_timeout_ms": 20000}, &resp),
		"%+v", resp.Errors)
	require.NotNil(a.t, resp.Receipt, "%+v", resp.Errors)
	return &resp
}

// approvalPolicy makes every call of a tool declaring permission wait for a person (only agents' calls with
// agentsOnly), on the package's shared database, until the test ends.
func approvalPolicy(t *testing.T, permission string, agentsOnly bool, expiresMS int) {
	t.Helper()
	ctx := context.Background()
	var policy int64
	require.NoError(t, shared.pool.QueryRow(ctx, `INSERT INTO core_approval_policies (permission, agents_only, expires_ms, note)
		VALUES ($1, $2, $3, $4) RETURNING id`, permission, agentsOnly, expiresMS, t.Name()).Scan(&policy))
	t.Cleanup(func() { _, _ = shared.pool.Exec(ctx, `DELETE FROM core_approval_policies WHERE id = $1`, policy) })
}

func requireDenied(t *testing.T, r *callResponse, caller string, missing ...string) {
	t.Helper()
	require.False(t, r.OK)
	require.Equal(t, registry.StatusFailed, r.Receipt.Status)
	require.Equal(t, registry.CodePermissionDenied, r.Receipt.Error.Code, r.Receipt.Error.Message)
	require.Contains(t, r.Receipt.Error.Message, `"`+caller+`"`)
	for _, m := range missing {
		require.Contains(t, r.Receipt.Error.Message, m)
	}
	require.Equal(t, caller, r.Call.RequestedBy)
}

// TestCallersHTTP: an admin makes a caller with some permissions; the caller's calls run or are refused by
// the executor by what it holds; it cannot manage callers or agents; its grants change and it is revoked.
func TestCallersHTTP(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	name, reader := addCaller(t, admin, []string{"read:*"}, nil)

	r := reader.call("os.health_check", map[string]any{})
	require.True(t, r.OK, "%+v", r.Receipt.Error)
	require.Equal(t, name, r.Call.RequestedBy)
	task := map[string]any{"title": "not for readers", "domain": "business"}
	requireDenied(t, reader.call("os.create_task", task), name, "write:db", "os.create_task")

	// Managing who may do what needs admin.
	var e errorResponse
	require.Equal(t, http.StatusForbidden, reader.do(http.MethodPost, "/callers", map[string]any{"name": uniq("x"), "permissions": []string{"*"}}, &e))
	require.Equal(t, brain.EFORBIDDEN, e.Errors[0].Code)
	require.Contains(t, e.Errors[0].Message, "admin")
	require.Equal(t, http.StatusForbidden, reader.do(http.MethodPatch, "/callers/"+name, map[string]any{"permissions": []string{"*"}}, &e))
	require.Equal(t, http.StatusForbidden, reader.do(http.MethodPost, "/agents", map[string]any{"slug": uniq("a"), "name": "A", "instructions": "x"}, &e))
	require.Equal(t, http.StatusForbidden, reader.do(http.MethodPost, "/devices", map[string]any{"name": uniq("d")}, &e))
	require.Equal(t, http.StatusForbidden, reader.do(http.MethodGet, "/callers", nil, &e))
	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/agents", nil, nil), "reading is for every caller")

	// Granted write:db, it may; a queued call is judged when it runs, by the grants of then.
	var resp callerResponse
	require.Equal(t, http.StatusOK, admin.do(http.MethodPatch, "/callers/"+name, map[string]any{"permissions": []string{"read:*", "write:db"}}, &resp), "%+v", resp.Errors)
	require.Equal(t, []string{"read:*", "write:db"}, resp.Caller.Permissions)
	require.Equal(t, "made by "+t.Name(), resp.Caller.Note, "what the patch leaves out stays")
	r = reader.call("os.create_task", task)
	require.True(t, r.OK, "%+v", r.Receipt.Error)

	// Bad grants and names are refused with the field; a name taken is a conflict.
	require.Equal(t, http.StatusBadRequest, admin.do(http.MethodPost, "/callers", map[string]any{"name": uniq("x"), "permissions": []string{"Send SMS"}}, &e))
	require.Contains(t, e.Errors[0].Message, "Send SMS")
	require.Equal(t, http.StatusBadRequest, admin.do(http.MethodPost, "/callers", map[string]any{"name": "<b>x</b>", "permissions": []string{}}, &e))
	require.Equal(t, http.StatusConflict, admin.do(http.MethodPost, "/callers", map[string]any{"name": name, "permissions": []string{}}, &e))
	require.Equal(t, http.StatusNotFound, admin.do(http.MethodPatch, "/callers/"+uniq("nobody"), map[string]any{"note": "x"}, &e))

	// A new token: the old one stops working, the new one works.
	require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/callers/"+name+"/token", nil, &resp), "%+v", resp.Errors)
	old := reader.token
	reader.token = resp.Token
	require.Equal(t, http.StatusOK, reader.do(http.MethodGet, "/calls?limit=1", nil, nil))
	stale := &testAPI{t: t, url: admin.url, token: old}
	require.Eventually(t, func() bool { return stale.do(http.MethodGet, "/calls?limit=1", nil, nil) == http.StatusUnauthorized },
		5*time.Second, 100*time.Millisecond)

	// Revoked: its token stops authenticating and its calls are refused (a call inserted for it by SQL too).
	require.Equal(t, http.StatusConflict, admin.do(http.MethodDelete, "/callers/tester", nil, &e), "a caller may not revoke itself")
	require.Equal(t, http.StatusOK, admin.do(http.MethodDelete, "/callers/"+name, nil, nil))
	require.Eventually(t, func() bool { return reader.do(http.MethodGet, "/calls?limit=1", nil, &e) == http.StatusUnauthorized },
		5*time.Second, 100*time.Millisecond)
	require.Contains(t, e.Errors[0].Message, "revoked")
	id, err := insertedID(gemsql.CallInsert(context.Background(), shared.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: name}))
	require.NoError(t, err)
	var got callResponse
	require.Equal(t, http.StatusOK, admin.do(http.MethodGet, "/calls/"+id.String()+"?wait=20s", nil, &got))
	require.Equal(t, registry.CodePermissionDenied, got.Receipt.Error.Code)
	require.Contains(t, got.Receipt.Error.Message, "revoked")
}

// TestCallerAgents: a caller limited to some agents may not chat with, or speak over MCP for, another.
func TestCallerAgents(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	mine := agentWithSkills(t, admin, 2, nil)
	other := agentWithSkills(t, admin, 2, nil)
	name, limited := addCaller(t, admin, []string{"*"}, []string{mine})

	var e errorResponse
	require.Equal(t, http.StatusForbidden, limited.do(http.MethodPost, "/agents/"+other+"/chat", map[string]any{"message": "hi"}, &e))
	require.Equal(t, brain.EFORBIDDEN, e.Errors[0].Code)
	require.Contains(t, e.Errors[0].Message, other)

	req, err := http.NewRequest(http.MethodPost, limited.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+limited.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-GEM-Agent", other)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// A call made in its name for another agent, by SQL, is refused by the executor.
	id, err := insertedID(gemsql.CallInsert(context.Background(), shared.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: name, Agent: other}))
	require.NoError(t, err)
	var got callResponse
	require.Equal(t, http.StatusOK, admin.do(http.MethodGet, "/calls/"+id.String()+"?wait=20s", nil, &got))
	require.Equal(t, registry.CodePermissionDenied, got.Receipt.Error.Code)
	require.Contains(t, got.Receipt.Error.Message, "may not act as agent")

	// Any agent again (agents: null).
	var resp callerResponse
	require.Equal(t, http.StatusOK, admin.do(http.MethodPatch, "/callers/"+name, map[string]any{"agents": nil}, &resp), "%+v", resp.Errors)
	require.Nil(t, resp.Caller.Agents)
}

// TestCallersMCP: over MCP, a call the caller may not make is an error result naming permission_denied.
func TestCallersMCP(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	name, reader := addCaller(t, admin, []string{"read:db"}, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "gem-test", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: reader.url + "/mcp",
		HTTPClient: &http.Client{Transport: withHeaders{"Authorization": "Bearer " + reader.token}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.create_note", Arguments: map[string]any{"domain": "personal", "title": "no", "content": "x"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, string(registry.CodePermissionDenied))
	require.Contains(t, text, "write:db")
	require.Equal(t, name, callOf(t, res.Meta).RequestedBy)

	res, err = s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.health_check"})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
}

// TestCallersCLI: brain callers adds, lists, narrows and revokes callers.
func TestCallersCLI(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	env := map[string]string{"GEM_BRAIN_URL": admin.url, "GEM_BRAIN_TOKEN": admin.token}
	getenv := func(k string) string { return env[k] }
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := cli(args, getenv, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	name := uniq("cli")
	code, out := run("callers", "add", name, "-grant", "read:db, send:*", "-agents", "office-assistant", "-note", "the front desk", "-json")
	require.Equal(t, 0, code, out)
	var added callerResponse
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &added), out)
	require.Equal(t, []string{"read:db", "send:*"}, added.Caller.Permissions)
	require.Equal(t, []string{"office-assistant"}, added.Caller.Agents)
	require.NotEmpty(t, added.Token)

	code, out = run("callers", "grant", name, "-grant", "read:*", "-agents", "*")
	require.Equal(t, 0, code, out)
	code, out = run("callers", "list", name, "-json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"read:*"`)
	require.Contains(t, out, "the front desk")
	require.NotContains(t, out, "office-assistant")

	code, out = run("callers", "add", uniq("cli"))
	require.Equal(t, 2, code, "add without -grant is a usage error: %s", out)
	code, out = run("callers", "add", uniq("cli"), "-grant", "Send SMS")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Send SMS")

	code, out = run("callers", "revoke", name)
	require.Equal(t, 0, code, out)
	code, out = run("callers", "list")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(name)+` +token +read:\* +- +true +20\d\d-`, out, "the revoked caller's row, revoked at")
	code, out = run("callers", "list", "-json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "revoked_at")
}

// TestApprovalsHTTP: a call a policy holds for approval answers awaiting_approval at once; only a caller
// holding approve lists and decides it; approved it runs, rejected its receipt says why; a second decision is
// a conflict. The CLI does the same.
func TestApprovalsHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// os.list_reminders is the only tool declaring read:reminders, and no other test calls it.
	approvalPolicy(t, "read:reminders", false, 60000)

	admin := newAPI(t)
	approverName, approver := addCaller(t, admin, []string{"approve", "read:*"}, nil)
	_, asker := addCaller(t, admin, []string{"read:*"}, nil)

	ask := func() *callResponse {
		t.Helper()
		var resp callResponse
		start := time.Now()
		require.Equal(t, http.StatusOK, asker.do(http.MethodPost, "/calls", map[string]any{"tool": "os.list_reminders", "input": map[string]any{},
			"wait_timeout_ms": 20000}, &resp))
		require.Less(t, time.Since(start), 10*time.Second, "a call awaiting approval is answered at once, not after the wait")
		require.False(t, resp.OK)
		require.Equal(t, brain.EAWAITING, resp.Errors[0].Code)
		require.Contains(t, resp.Errors[0].Message, "/approve")
		require.Equal(t, registry.CallAwaitingApproval, resp.Call.Status)
		require.Nil(t, resp.Receipt)
		return &resp
	}
	first := ask()
	id := first.Call.ID.String()

	var e errorResponse
	require.Equal(t, http.StatusForbidden, asker.do(http.MethodGet, "/approvals", nil, &e))
	require.Equal(t, http.StatusForbidden, asker.do(http.MethodPost, "/calls/"+id+"/approve", nil, &e))
	var pending struct {
		Approvals []*gemsql.PendingApproval `json:"approvals"`
	}
	require.Equal(t, http.StatusOK, approver.do(http.MethodGet, "/approvals", nil, &pending))
	found := false
	for _, p := range pending.Approvals {
		if p.CallID == first.Call.ID {
			found = true
			require.Equal(t, "os.list_reminders", p.Tool)
			require.Contains(t, p.RequiredBy, "read:reminders")
		}
	}
	require.True(t, found, "the call is listed")

	require.Equal(t, http.StatusBadRequest, approver.do(http.MethodPost, "/calls/"+id+"/reject", map[string]any{}, &e), "a rejection needs a reason")
	var decided struct {
		Call     *gemsql.Call     `json:"call"`
		Approval *gemsql.Approval `json:"approval"`
	}
	require.Equal(t, http.StatusOK, approver.do(http.MethodPost, "/calls/"+id+"/approve", map[string]any{"reason": "fine"}, &decided))
	require.Equal(t, "approved", decided.Approval.Decision)
	require.Equal(t, approverName, decided.Approval.DecidedBy)
	var got callResponse
	require.Equal(t, http.StatusOK, asker.do(http.MethodGet, "/calls/"+id+"?wait=20s", nil, &got))
	require.Equal(t, registry.StatusSucceeded, got.Receipt.Status, "%+v", got.Receipt.Error)
	require.Equal(t, http.StatusConflict, approver.do(http.MethodPost, "/calls/"+id+"/reject", map[string]any{"reason": "late"}, &e))
	require.Contains(t, e.Errors[0].Message, "already approved by "+approverName)

	second := ask()
	require.Equal(t, http.StatusOK, approver.do(http.MethodPost, "/calls/"+second.Call.ID.String()+"/reject", map[string]any{"reason": "not now"}, &decided))
	require.Equal(t, http.StatusOK, asker.do(http.MethodGet, "/calls/"+second.Call.ID.String()+"?wait=20s", nil, &got))
	require.Equal(t, registry.CodeRejected, got.Receipt.Error.Code)
	require.Equal(t, "rejected by "+approverName+": not now", got.Receipt.Error.Message)

	// Calls that need no decision, or do not exist.
	plain := asker.call("os.health_check", map[string]any{})
	require.Equal(t, http.StatusConflict, approver.do(http.MethodPost, "/calls/"+plain.Call.ID.String()+"/approve", nil, &e))
	require.Equal(t, http.StatusNotFound, approver.do(http.MethodPost, "/calls/"+uuid.NewString()+"/approve", nil, &e))

	// Over MCP: the call answers awaiting_approval (not an error), gem.get_receipt says so too, and gem.approve
	// decides it for a caller holding approve, never for one without it or for a session speaking for an agent.
	mcpSession := func(token string, headers map[string]string) *mcp.ClientSession {
		h := withHeaders{"Authorization": "Bearer " + token}
		for k, v := range headers {
			h[k] = v
		}
		s, err := mcp.NewClient(&mcp.Implementation{Name: "gem-test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: admin.url + "/mcp", HTTPClient: &http.Client{Transport: h}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	askerMCP, approverMCP := mcpSession(asker.token, nil), mcpSession(approver.token, nil)
	res, err := askerMCP.CallTool(ctx, &mcp.CallToolParams{Name: "os.list_reminders", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	waiting := res.StructuredContent.(map[string]any)
	require.Equal(t, "awaiting_approval", waiting["status"])
	mcpCall := waiting["call_id"].(string)
	res, err = askerMCP.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": mcpCall}})
	require.NoError(t, err)
	require.Equal(t, "awaiting_approval", res.StructuredContent.(map[string]any)["status"])
	res, err = askerMCP.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ApproveTool, Arguments: map[string]any{"call_id": mcpCall, "approve": true}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "lacks permission approve")
	agentSession := mcpSession(approver.token, map[string]string{"X-GEM-Agent": "office-assistant"})
	res, err = agentSession.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ApproveTool, Arguments: map[string]any{"call_id": mcpCall, "approve": true}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "an agent may not decide approvals")
	res, err = approverMCP.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ApproveTool, Arguments: map[string]any{"call_id": mcpCall, "approve": true, "reason": "via MCP"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "approved", res.StructuredContent.(map[string]any)["decision"])
	res, err = askerMCP.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": mcpCall}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "succeeded", res.StructuredContent.(map[string]any)["status"])

	// The CLI.
	env := map[string]string{"GEM_BRAIN_URL": approver.url, "GEM_BRAIN_TOKEN": approver.token}
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := cli(args, func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	third := ask()
	code, out := run("approvals")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, third.Call.ID.String())
	code, out = run("approvals", "reject", third.Call.ID.String())
	require.Equal(t, 2, code, "a rejection needs -reason: %s", out)
	code, out = run("approvals", "approve", third.Call.ID.String(), "-reason", "ok by me", "-json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"approved"`)
	code, out = run("approvals", "approve", third.Call.ID.String())
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "already approved")
}

// TestAssignmentSettingsAPI: an assignment's call settings are set, shown and checked by the API.
func TestAssignmentSettingsAPI(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	skill := uniq("tasks")
	agent := agentWithSkills(t, a, 2, map[string][]string{skill: {"os.create_task"}})
	var resp struct {
		Skills []brain.Assignment `json:"skills"`
		Errors []*brain.Error     `json:"errors"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+skill,
		map[string]any{"call_timeout_ms": 2000, "call_max_attempts": 1, "call_priority": 2}, &resp), "%+v", resp.Errors)
	require.Len(t, resp.Skills, 1)
	require.Equal(t, 2000, *resp.Skills[0].CallTimeoutMS)
	require.Equal(t, 1, *resp.Skills[0].CallMaxAttempts)
	require.Equal(t, 2, *resp.Skills[0].CallPriority)
	var e errorResponse
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+skill, map[string]any{"call_priority": 9}, &e))
	require.Contains(t, fmt.Sprint(e.Errors[0].Details), "/call_priority")
	// Put again without them: the tool's own settings apply.
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+skill, map[string]any{}, &resp))
	require.Nil(t, resp.Skills[0].CallTimeoutMS)
}

// insertedID is the id of the one call gemsql.CallInsert made: id, err := insertedID(gemsql.CallInsert(...)).
func insertedID(made []gemsql.Inserted, err error) (uuid.UUID, error) {
	if err != nil {
		return uuid.Nil, err
	}
	return made[0].ID, nil
}
