package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
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
	id, err := gemsql.CallInsert(context.Background(), shared.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: name})
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
	id, err := gemsql.CallInsert(context.Background(), shared.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: name, Agent: other})
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
	code, out := run("callers", "add", name, "-grant", "read:db, send:*", "-agents", "office-assistant", "-note", "the front desk")
	require.Equal(t, 0, code, out)
	var added callerResponse
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &added), out)
	require.Equal(t, []string{"read:db", "send:*"}, added.Caller.Permissions)
	require.Equal(t, []string{"office-assistant"}, added.Caller.Agents)
	require.NotEmpty(t, added.Token)

	code, out = run("callers", "grant", name, "-grant", "read:*", "-agents", "*")
	require.Equal(t, 0, code, out)
	code, out = run("callers", "list", name)
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
	require.Contains(t, out, name)
	require.Contains(t, out, "revoked_at")
}
