package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The authorization matrix: every route of the brain's HTTP API (and studio) and every MCP tool of GEM's
// own, as five callers — one holding nothing useful (read:db), one that reads its own and writes
// (read:*, write:db), an auditor (read:*, audit), an approver (read:*, approve) and an admin (*) — each
// cell the exact answer. Objects named "another's" belong to the configured token "tester", which none of
// the five is. docs/governance.md#the-authorization-matrix-by-route shows the same table (the test checks it).

// matrixCallers are the matrix's columns.
var matrixCallers = []struct {
	column      string
	permissions []string
}{
	{"nothing (read:db)", []string{"read:db"}},
	{"own (read:*, write:db)", []string{"read:*", "write:db"}},
	{"audit (read:*, audit)", []string{"read:*", "audit"}},
	{"approve (read:*, approve)", []string{"read:*", "approve"}},
	{"admin (*)", []string{"*"}},
}

// matrixActor is one column's caller: its API client, its studio login and its name.
type matrixActor struct {
	name   string
	api    *testAPI
	studio *studioClient
}

// matrixRow is a route (or MCP tool) and what is asked of it.
type matrixRow struct {
	method, path string // the router's method and path template; "MCP" and the tool's name for MCP tools
	what         string // what the cell asks, for people
	kind         string // read own / read all / write / approve / admin / open
	cell         func(a *matrixActor) string
	want         [5]string
}

func TestAuthorizationMatrixByRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dbURL := sqltest.NewDB(t)
	x, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(x.Stop)
	m, err := startBrain(dbURL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	base := m.Server.URL()
	admin := &testAPI{t: t, url: base, token: testToken} // "tester": the owner of "another's"
	// os.list_reminders waits for approval here (a private database: no other test is held by it).
	_, err = m.Pool.Exec(ctx, `INSERT INTO core_approval_policies (permission, expires_ms, note) VALUES ('read:reminders', 600000, 'matrix')`)
	require.NoError(t, err)

	actors := make([]*matrixActor, len(matrixCallers))
	for i, c := range matrixCallers {
		name, a := addCaller(t, admin, c.permissions, nil)
		s := newStudioClient(t, base)
		s.login(a.token)
		actors[i] = &matrixActor{name: name, api: a, studio: s}
	}

	// What the cells act on.
	theirCall := admin.call("os.health_check", map[string]any{}).Call.ID.String()
	held := func() string {
		t.Helper()
		var resp callResponse
		require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/calls", map[string]any{"tool": "os.list_reminders", "input": map[string]any{}}, &resp))
		require.NotNil(t, resp.Call)
		require.Equal(t, "awaiting_approval", string(resp.Call.Status))
		return resp.Call.ID.String()
	}
	theirHeld := held()
	theirRun := admin.runOK(map[string]any{"message": "health check", "mode": "enqueue_and_wait"}).RunID.String()
	theirKey := "matrix-" + uuid.NewString()
	admin.runOK(map[string]any{"message": "health check", "idempotency_key": theirKey})
	plan := func(a *testAPI) string {
		t.Helper()
		resp, status := a.run(map[string]any{"message": "list my tasks", "mode": "plan"})
		require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
		require.Equal(t, "planned", resp.Status)
		return resp.RunID.String()
	}
	theirPlan := plan(admin)
	var chat map[string]any
	require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/operator/chat", map[string]any{"message": "list leads"}, &chat))
	theirSession := chat["session_id"].(string)
	agent := agentWithSkills(t, admin, 2, map[string][]string{uniq("matrix"): {"os.health_check"}})
	// The agent stumbles: a call made for it (as a program of the owner's would make it, the API refusing
	// such a call before it exists) of a tool it may not use.
	var stumbled string
	require.NoError(t, m.Pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, agent, requested_by) VALUES ('os.list_tasks', '{}', $1, 'tester')
		RETURNING id`, agent).Scan(&stumbled))
	require.Eventually(t, func() bool {
		var code string
		_ = m.Pool.QueryRow(ctx, `SELECT coalesce(error_code, '') FROM core_tool_receipts WHERE call_id = $1`, stumbled).Scan(&code)
		return code == "tool_not_enabled"
	}, 15*time.Second, 50*time.Millisecond)
	skill := uniq("matrix-skill")
	require.Equal(t, http.StatusCreated, admin.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": skill, "tools": []string{"os.health_check"}}, nil))

	// Cell helpers.
	status := func(a *matrixActor, method, path string, body any) string {
		return fmt.Sprint(a.api.do(method, path, body, nil))
	}
	raw := func(a *matrixActor, method, path string, headers map[string]string) (int, string) {
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.api.token)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	// listed answers a listing's status, and whether it shows another's object ("all") or not ("own").
	listed := func(code int, body, theirs string) string {
		if code != http.StatusOK {
			return fmt.Sprint(code)
		}
		if strings.Contains(body, theirs) {
			return "200 all"
		}
		return "200 own"
	}
	apiList := func(a *matrixActor, path, theirs string) string {
		code, body := raw(a, http.MethodGet, path, nil)
		return listed(code, body, theirs)
	}
	page := func(a *matrixActor, path string) string {
		code, _ := a.studio.get(path)
		return fmt.Sprint(code)
	}
	pageList := func(a *matrixActor, path, theirs string) string {
		code, body := a.studio.get(path)
		return listed(code, body, theirs)
	}
	sessions := map[*matrixActor]*mcp.ClientSession{}
	mcpCall := func(a *matrixActor, tool string, args map[string]any) string {
		s, ok := sessions[a]
		if !ok {
			s = mcpAs(t, a.api, nil)
			sessions[a] = s
		}
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		sc, _ := res.StructuredContent.(map[string]any)
		switch {
		case !res.IsError:
			if d, ok := sc["decision"].(string); ok {
				return d
			}
			return "ok"
		case sc["status"] == "not_found", sc["status"] == "refused":
			return fmt.Sprint(sc["status"])
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if strings.Contains(text, "permission_denied") {
			return "permission_denied"
		}
		return "error: " + text
	}
	fresh := func(prefix string) string { return uniq(prefix) }

	const (
		ok200, created = "200", "201"
		forbidden      = "403"
		notFound       = "404"
	)
	all5 := func(s string) [5]string { return [5]string{s, s, s, s, s} }
	adminOnly := func(okStatus string) [5]string {
		return [5]string{forbidden, forbidden, forbidden, forbidden, okStatus}
	}
	approvers := func(okStatus string) [5]string {
		return [5]string{forbidden, forbidden, forbidden, okStatus, okStatus}
	}
	readers := [5]string{notFound, notFound, ok200, notFound, ok200}             // another's, read by audit (and admin)
	heldReaders := [5]string{notFound, notFound, ok200, ok200, ok200}            // another's held call or plan: approvers read it too
	ownOrAll := [5]string{"200 own", "200 own", "200 all", "200 own", "200 all"} // a listing

	rows := []matrixRow{
		{method: "GET", path: "/health", what: "with a token", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/health", nil) }},
		{method: "GET", path: "/", what: "a browser, to the studio", kind: "open", want: all5("303"),
			cell: func(a *matrixActor) string { code, _ := raw(a, "GET", "/", nil); return fmt.Sprint(code) }},
		{method: "GET", path: "/favicon.ico", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { code, _ := raw(a, "GET", "/favicon.ico", nil); return fmt.Sprint(code) }},
		{method: "GET", path: "/openapi.json", what: "the API's description", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { code, _ := raw(a, "GET", "/openapi.json", nil); return fmt.Sprint(code) }},
		{method: "POST", path: "/integrations/highlevel/webhook", what: "a caller's token, no signature", kind: "open (HighLevel's signature)", want: all5("401"),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/integrations/highlevel/webhook", map[string]any{})
			}},
		{method: "GET", path: "/devices/connect", what: "a caller's token (not a device's)", kind: "open (a device's token)", want: all5("401"),
			cell: func(a *matrixActor) string {
				code, _ := raw(a, "GET", "/devices/connect", nil)
				return fmt.Sprint(code)
			}},
		{method: "GET", path: "/metrics", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { code, _ := raw(a, "GET", "/metrics", nil); return fmt.Sprint(code) }},
		{method: "GET", path: "/brain/tools", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/brain/tools", nil) }},
		{method: "GET", path: "/brain/help", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/brain/help", nil) }},
		{method: "POST", path: "/brain/run", what: "health check", kind: "write", want: all5(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/brain/run", map[string]any{"message": "health check", "mode": "enqueue_and_wait"})
			}},
		{method: "POST", path: "/operator/chat", what: "a new session", kind: "write", want: all5(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/operator/chat", map[string]any{"message": "health check"})
			}},
		{method: "POST", path: "/operator/chat", what: "another's session", kind: "read own", want: all5(notFound),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/operator/chat", map[string]any{"message": "list leads", "session_id": theirSession})
			}},
		{method: "GET", path: "/brain/runs", what: "another's request key", kind: "read own (keys are each caller's)", want: all5(notFound),
			cell: func(a *matrixActor) string { return status(a, "GET", "/brain/runs?idempotency_key="+theirKey, nil) }},
		{method: "GET", path: "/brain/runs", what: "its own request key", kind: "read own", want: all5(ok200),
			cell: func(a *matrixActor) string {
				key := "matrix-" + uuid.NewString()
				a.api.runOK(map[string]any{"message": "health check", "idempotency_key": key})
				return status(a, "GET", "/brain/runs?idempotency_key="+key, nil)
			}},
		{method: "GET", path: "/brain/runs", what: "is another's run listed?", kind: "read own / read all", want: ownOrAll,
			cell: func(a *matrixActor) string { return apiList(a, "/brain/runs?status=completed&limit=500", theirRun) }},
		{method: "GET", path: "/brain/runs/:id", what: "another's run", kind: "read all", want: readers,
			cell: func(a *matrixActor) string { return status(a, "GET", "/brain/runs/"+theirRun, nil) }},
		{method: "GET", path: "/brain/runs/:id", what: "another's stored plan", kind: "read all, approve", want: heldReaders,
			cell: func(a *matrixActor) string { return status(a, "GET", "/brain/runs/"+theirPlan, nil) }},
		{method: "GET", path: "/brain/runs/:id", what: "its own run", kind: "read own", want: all5(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "GET", "/brain/runs/"+a.api.runOK(map[string]any{"message": "health check"}).RunID.String(), nil)
			}},
		{method: "GET", path: "/brain/runs/:id/events", what: "another's run's events", kind: "read all", want: readers,
			cell: func(a *matrixActor) string { return status(a, "GET", "/brain/runs/"+theirRun+"/events", nil) }},
		{method: "GET", path: "/brain/runs/:id/events", what: "its own run's events", kind: "read own", want: all5(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "GET", "/brain/runs/"+a.api.runOK(map[string]any{"message": "health check"}).RunID.String()+"/events", nil)
			}},
		{method: "POST", path: "/brain/runs/:id/approve", what: "another's plan (list my tasks)", kind: "approve", want: approvers(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/brain/runs/"+plan(admin)+"/approve", map[string]any{"wait": true})
			}},
		{method: "POST", path: "/brain/runs/:id/approve", what: "its own plan", kind: "write", want: all5(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/brain/runs/"+plan(a.api)+"/approve", map[string]any{"wait": true})
			}},
		{method: "GET", path: "/calls", what: "is another's call listed?", kind: "read own / read all", want: ownOrAll,
			cell: func(a *matrixActor) string { return apiList(a, "/calls?limit=1000", theirCall) }},
		{method: "POST", path: "/calls", what: "os.health_check", kind: "write", want: all5(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/calls", map[string]any{"tool": "os.health_check"})
			}},
		{method: "GET", path: "/calls/:id", what: "another's call", kind: "read all", want: readers,
			cell: func(a *matrixActor) string { return status(a, "GET", "/calls/"+theirCall, nil) }},
		{method: "GET", path: "/calls/:id", what: "another's call held for approval", kind: "read all, approve", want: heldReaders,
			cell: func(a *matrixActor) string { return status(a, "GET", "/calls/"+theirHeld, nil) }},
		{method: "POST", path: "/calls/:id/approve", what: "another's held call", kind: "approve", want: approvers(ok200),
			cell: func(a *matrixActor) string { return status(a, "POST", "/calls/"+held()+"/approve", map[string]any{}) }},
		{method: "POST", path: "/calls/:id/reject", what: "another's held call", kind: "approve", want: approvers(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/calls/"+held()+"/reject", map[string]any{"reason": "matrix"})
			}},
		{method: "GET", path: "/approvals", kind: "approve", want: approvers(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/approvals", nil) }},
		{method: "GET", path: "/receipts", what: "is another's receipt listed?", kind: "read own / read all", want: ownOrAll,
			cell: func(a *matrixActor) string { return apiList(a, "/receipts?limit=1000", theirCall) }},
		{method: "GET", path: "/agents", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/agents", nil) }},
		{method: "POST", path: "/agents", kind: "admin", want: adminOnly(created),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/agents", map[string]any{"slug": fresh("agent"), "name": "M", "instructions": "x"})
			}},
		{method: "GET", path: "/agents/:slug", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/agents/"+agent, nil) }},
		{method: "PATCH", path: "/agents/:slug", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "PATCH", "/agents/"+agent, map[string]any{"name": "Matrix agent"})
			}},
		{method: "DELETE", path: "/agents/:slug", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "DELETE", "/agents/"+agentWithSkills(t, admin, 1, nil), nil)
			}},
		{method: "GET", path: "/agents/:slug/skills", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/agents/"+agent+"/skills", nil) }},
		{method: "PUT", path: "/agents/:slug/skills/:skill", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "PUT", "/agents/"+agent+"/skills/"+skill, map[string]any{})
			}},
		{method: "DELETE", path: "/agents/:slug/skills/:skill", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				require.Equal(t, http.StatusOK, admin.do(http.MethodPut, "/agents/"+agent+"/skills/"+skill, map[string]any{}, nil))
				return status(a, "DELETE", "/agents/"+agent+"/skills/"+skill, nil)
			}},
		{method: "POST", path: "/agents/:slug/chat", what: "no LLM configured", kind: "write", want: all5("503"),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "u"})
			}},
		{method: "GET", path: "/skills", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/skills", nil) }},
		{method: "POST", path: "/skills", kind: "admin", want: adminOnly(created),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/skills", map[string]any{"slug": fresh("skill"), "name": "M", "tools": []string{}})
			}},
		{method: "POST", path: "/skills/import", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				slug := fresh("imported")
				return status(a, "POST", "/skills/import", map[string]any{"content": "---\nname: " + slug + "\ndescription: a matrix skill\n---\nDo it well.\n"})
			}},
		{method: "GET", path: "/skills/:slug", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/skills/"+skill, nil) }},
		{method: "PUT", path: "/skills/:slug", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "PUT", "/skills/"+skill, map[string]any{"slug": skill, "name": skill, "tools": []string{"os.health_check"}})
			}},
		{method: "PATCH", path: "/skills/:slug", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "PATCH", "/skills/"+skill, map[string]any{"description": "matrix"})
			}},
		{method: "DELETE", path: "/skills/:slug", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				slug := fresh("gone")
				require.Equal(t, http.StatusCreated, admin.do(http.MethodPost, "/skills", map[string]any{"slug": slug, "name": slug, "tools": []string{}}, nil))
				return status(a, "DELETE", "/skills/"+slug, nil)
			}},
		{method: "GET", path: "/devices", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/devices", nil) }},
		{method: "POST", path: "/devices", kind: "admin", want: adminOnly(created),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/devices", map[string]any{"name": fresh("dev")})
			}},
		{method: "GET", path: "/devices/:name", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/devices/"+matrixDevice(t, admin), nil) }},
		{method: "PATCH", path: "/devices/:name", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "PATCH", "/devices/"+matrixDevice(t, admin), map[string]any{"permissions": []string{"read:*"}})
			}},
		{method: "DELETE", path: "/devices/:name", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string { return status(a, "DELETE", "/devices/"+matrixDevice(t, admin), nil) }},
		{method: "POST", path: "/devices/:name/token", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/devices/"+matrixDevice(t, admin)+"/token", nil)
			}},
		{method: "GET", path: "/callers", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/callers", nil) }},
		{method: "POST", path: "/callers", kind: "admin", want: adminOnly(created),
			cell: func(a *matrixActor) string {
				return status(a, "POST", "/callers", map[string]any{"name": fresh("caller"), "permissions": []string{"read:db"}})
			}},
		{method: "GET", path: "/callers/:name", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string { return status(a, "GET", "/callers/tester", nil) }},
		{method: "PATCH", path: "/callers/:name", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				name, _ := addCaller(t, admin, []string{"read:db"}, nil)
				return status(a, "PATCH", "/callers/"+name, map[string]any{"note": "matrix"})
			}},
		{method: "DELETE", path: "/callers/:name", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				name, _ := addCaller(t, admin, []string{"read:db"}, nil)
				return status(a, "DELETE", "/callers/"+name, nil)
			}},
		{method: "POST", path: "/callers/:name/token", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				name, _ := addCaller(t, admin, []string{"read:db"}, nil)
				return status(a, "POST", "/callers/"+name+"/token", nil)
			}},
		{method: "POST", path: "/callers/:name/enable", what: "a revoked caller", kind: "admin", want: adminOnly(ok200),
			cell: func(a *matrixActor) string {
				name, _ := addCaller(t, admin, []string{"read:db"}, nil)
				require.Equal(t, http.StatusOK, admin.do(http.MethodDelete, "/callers/"+name, nil, nil))
				return status(a, "POST", "/callers/"+name+"/enable", nil)
			}},
		{method: "POST", path: "/mcp", what: "tools/list", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string {
				code, _ := mcpRaw(t, base, a.api.token, `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`)
				return fmt.Sprint(code)
			}},
		{method: "GET", path: "/mcp", what: "a stream (stateless: none)", kind: "open", want: all5("405"),
			cell: func(a *matrixActor) string {
				code, _ := raw(a, "GET", "/mcp", map[string]string{"Accept": "text/event-stream"})
				return fmt.Sprint(code)
			}},
		{method: "DELETE", path: "/mcp", what: "a session (stateless: none)", kind: "open", want: all5("405"),
			cell: func(a *matrixActor) string { code, _ := raw(a, "DELETE", "/mcp", nil); return fmt.Sprint(code) }},
		{method: "MCP", path: mcpserver.GetReceiptTool, what: "another's call", kind: "read all", want: [5]string{"not_found", "not_found", "ok", "not_found", "ok"},
			cell: func(a *matrixActor) string {
				return mcpCall(a, mcpserver.GetReceiptTool, map[string]any{"call_id": theirCall})
			}},
		{method: "MCP", path: mcpserver.GetReceiptTool, what: "its own call", kind: "read own", want: all5("ok"),
			cell: func(a *matrixActor) string {
				var resp callResponse
				require.Equal(t, http.StatusOK, a.api.do(http.MethodPost, "/calls", map[string]any{"tool": "os.health_check"}, &resp))
				return mcpCall(a, mcpserver.GetReceiptTool, map[string]any{"call_id": resp.Call.ID.String()})
			}},
		{method: "MCP", path: mcpserver.ApproveTool, what: "another's held call", kind: "approve",
			want: [5]string{"refused", "refused", "refused", "approved", "approved"},
			cell: func(a *matrixActor) string {
				return mcpCall(a, mcpserver.ApproveTool, map[string]any{"call_id": held(), "approve": true})
			}},
		{method: "MCP", path: "os.health_check", what: "a registry tool declaring read:db", kind: "write", want: all5("ok"),
			cell: func(a *matrixActor) string { return mcpCall(a, "os.health_check", map[string]any{}) }},
		{method: "MCP", path: "os.create_task", what: "a registry tool declaring write:db", kind: "write",
			want: [5]string{"permission_denied", "ok", "permission_denied", "permission_denied", "ok"},
			cell: func(a *matrixActor) string {
				return mcpCall(a, "os.create_task", map[string]any{"title": "matrix " + a.name, "domain": "business"})
			}},
		// The studio (each column logged in with its token).
		{method: "GET", path: "/studio", kind: "open", want: all5("303"), cell: func(a *matrixActor) string { return page(a, "/studio") }},
		{method: "GET", path: "/studio/", kind: "open", want: all5("303"), cell: func(a *matrixActor) string { return page(a, "/studio/") }},
		{method: "GET", path: "/studio/static/*", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/static/studio.css") }},
		{method: "GET", path: "/studio/login", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/login") }},
		{method: "POST", path: "/studio/login", what: "its token", kind: "open", want: all5("303"),
			cell: func(a *matrixActor) string {
				s := newStudioClient(t, base)
				s.get("/studio/login")
				resp, _ := s.post("/studio/login", url.Values{"_csrf": {s.csrf}, "token": {a.api.token}}, base)
				return fmt.Sprint(resp.StatusCode)
			}},
		{method: "POST", path: "/studio/logout", kind: "open", want: all5("303"),
			cell: func(a *matrixActor) string {
				s := newStudioClient(t, base)
				s.login(a.api.token)
				resp, _ := s.post("/studio/logout", url.Values{"_csrf": {s.csrf}}, base)
				return fmt.Sprint(resp.StatusCode)
			}},
		{method: "GET", path: "/studio/calls", what: "is another's call listed?", kind: "read own / read all", want: ownOrAll,
			cell: func(a *matrixActor) string { return pageList(a, "/studio/calls?tool=os.health_check", theirCall) }},
		{method: "GET", path: "/studio/calls/events", kind: "read own / read all", want: all5(ok200),
			cell: func(a *matrixActor) string {
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/studio/calls/events", nil)
				require.NoError(t, err)
				resp, err := a.studio.http.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				return fmt.Sprint(resp.StatusCode)
			}},
		{method: "GET", path: "/studio/calls/:id", what: "another's call", kind: "read all", want: readers,
			cell: func(a *matrixActor) string { return page(a, "/studio/calls/"+theirCall) }},
		{method: "GET", path: "/studio/calls/:id", what: "another's held call", kind: "read all, approve", want: heldReaders,
			cell: func(a *matrixActor) string { return page(a, "/studio/calls/"+theirHeld) }},
		{method: "GET", path: "/studio/runs", what: "is another's run listed?", kind: "read own / read all", want: ownOrAll,
			cell: func(a *matrixActor) string { return pageList(a, "/studio/runs?status=completed", theirRun) }},
		{method: "GET", path: "/studio/runs/:id", what: "another's run", kind: "read all", want: readers,
			cell: func(a *matrixActor) string { return page(a, "/studio/runs/"+theirRun) }},
		{method: "GET", path: "/studio/stumbles", what: "is another's stumble listed?", kind: "read own / read all", want: ownOrAll,
			cell: func(a *matrixActor) string { return pageList(a, "/studio/stumbles", agent) }},
		{method: "GET", path: "/studio/approvals", kind: "approve", want: approvers(ok200),
			cell: func(a *matrixActor) string { return page(a, "/studio/approvals") }},
		{method: "GET", path: "/studio/agents", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/agents") }},
		{method: "GET", path: "/studio/agents/:slug", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/agents/"+agent) }},
		{method: "GET", path: "/studio/skills", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/skills") }},
		{method: "GET", path: "/studio/skills/:slug", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/skills/"+skill) }},
		{method: "GET", path: "/studio/chat", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/chat") }},
		{method: "GET", path: "/studio/registry", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/registry") }},
		{method: "GET", path: "/studio/registry/:tool", kind: "open", want: all5(ok200),
			cell: func(a *matrixActor) string { return page(a, "/studio/registry/os.health_check") }},
		{method: "GET", path: "/studio/executors", kind: "open (own running calls)", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/executors") }},
		{method: "GET", path: "/studio/architecture", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/architecture") }},
		{method: "GET", path: "/studio/queue", kind: "open", want: all5(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/queue") }},
		{method: "*", path: "/studio/river", what: "GET", kind: "admin", want: adminOnly("301"), cell: func(a *matrixActor) string { return page(a, "/studio/river") }},
		{method: "*", path: "/studio/river/*", what: "GET /studio/river/", kind: "admin", want: adminOnly(ok200), cell: func(a *matrixActor) string { return page(a, "/studio/river/") }},
	}

	// Every route of the router, and every MCP tool of GEM's own, has a row.
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.method+" "+r.path] = true
	}
	for _, r := range m.Server.Routes() {
		if !covered[r.Method+" "+r.Path] && !covered["* "+r.Path] {
			t.Errorf("route %s %s has no row in the authorization matrix: add one (and to docs/governance.md)", r.Method, r.Path)
		}
	}
	tools, err := mcpAs(t, admin, nil).ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "gem.") && !covered["MCP "+tool.Name] {
			t.Errorf("MCP tool %s has no row in the authorization matrix", tool.Name)
		}
	}

	got := make([][5]string, len(rows))
	for i, r := range rows {
		for j, a := range actors {
			got[i][j] = r.cell(a)
		}
	}
	for i, r := range rows {
		assert.Equal(t, r.want, got[i], "%s %s (%s): %v", r.method, r.path, r.what, matrixCallerNames())
	}

	// docs/governance.md shows this table.
	doc, err := os.ReadFile("../../../docs/governance.md")
	require.NoError(t, err)
	table := matrixTable(rows)
	if !strings.Contains(string(doc), table) {
		t.Errorf("docs/governance.md's authorization matrix by route differs from the test's; it should read:\n%s", table)
	}
}

func matrixCallerNames() []string {
	var out []string
	for _, c := range matrixCallers {
		out = append(out, c.column)
	}
	return out
}

// matrixTable renders the matrix as docs/governance.md shows it.
func matrixTable(rows []matrixRow) string {
	var b strings.Builder
	b.WriteString("| route | asks | kind | " + strings.Join(matrixCallerNames(), " | ") + " |\n")
	b.WriteString("| --- | --- | --- |" + strings.Repeat(" --- |", len(matrixCallers)) + "\n")
	for _, r := range rows {
		route := "`" + r.method + " " + r.path + "`"
		switch r.method {
		case "MCP":
			route = "MCP `" + r.path + "`"
		case "*":
			route = "`" + r.path + "` (any method)"
		}
		what := r.what
		if what == "" {
			what = "—"
		}
		cells := slices.Clone(r.want[:])
		b.WriteString("| " + route + " | " + what + " | " + r.kind + " | " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// matrixDevice makes a device (as the admin) for a cell that reads, changes or removes one.
func matrixDevice(t *testing.T, admin *testAPI) string {
	t.Helper()
	name := uniq("dev")
	var resp map[string]any
	require.Equal(t, http.StatusCreated, admin.do(http.MethodPost, "/devices", map[string]any{"name": name}, &resp), "%v", resp)
	return name
}

// mcpRaw sends one JSON-RPC message to /mcp and returns the status and body.
func mcpRaw(t *testing.T, base, token, message string) (int, string) {
	t.Helper()
	return mcpRawURL(t, base+"/mcp", token, message)
}

// mcpRawURL sends one JSON-RPC message to an /mcp URL (with its query) and returns the status and body.
func mcpRawURL(t *testing.T, url, token, message string) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mcpRequest(t, context.Background(), url, token, message))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mcpRequest is a POST of one JSON-RPC message to an /mcp URL, as an MCP client sends it, with a bearer token.
func mcpRequest(t testing.TB, ctx context.Context, url, token, message string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(message))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}
