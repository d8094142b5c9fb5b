package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// studioClient is a browser-like client of the studio: a cookie jar, no redirects followed unless asked.
type studioClient struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newStudioClient(t *testing.T, base string) *studioClient {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &studioClient{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// get fetches a page and returns its status and body; it remembers the page's CSRF token.
func (s *studioClient) get(path string) (int, string) {
	s.t.Helper()
	resp, err := s.http.Get(s.base + path)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	if m := csrfInput.FindStringSubmatch(string(body)); m != nil {
		s.csrf = m[1]
	}
	return resp.StatusCode, string(body)
}

// post sends a form (the login and logout forms are plain forms).
func (s *studioClient) post(path string, form url.Values, origin string) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(form.Encode()))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := s.http.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// login logs in with a token and requires it to work.
func (s *studioClient) login(token string) {
	s.t.Helper()
	status, _ := s.get("/studio/login")
	require.Equal(s.t, http.StatusOK, status)
	resp, body := s.post("/studio/login", url.Values{"_csrf": {s.csrf}, "token": {token}, "next": {"/studio/skills"}}, s.base)
	require.Equal(s.t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(s.t, "/studio/skills", resp.Header.Get("Location"))
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "gem_studio" {
			session = c
		}
	}
	require.NotNil(s.t, session, "a session cookie is set")
	require.True(s.t, session.HttpOnly, "scripts cannot read the session")
	require.True(s.t, session.Secure, "the cookie is Secure")
	require.Equal(s.t, http.SameSiteStrictMode, session.SameSite)
	status, _ = s.get("/studio/calls") // picks up the session's CSRF token
	require.Equal(s.t, http.StatusOK, status)
}

// api calls the JSON API with the session's cookie, with or without its CSRF token.
func (s *studioClient) api(method, path string, body any, withCSRF bool, origin string) (int, map[string]any) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(s.t, err)
		r = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, s.base+path, r)
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	if withCSRF {
		req.Header.Set("X-CSRF-Token", s.csrf)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := s.http.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

// events opens the studio's live calls stream for a logged-in client and returns its events (kind, data).
func (s *studioClient) events(ctx context.Context, query string) <-chan [2]string {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/studio/calls/events"+query, nil)
	require.NoError(s.t, err)
	resp, err := s.http.Do(req)
	require.NoError(s.t, err)
	s.t.Cleanup(func() { resp.Body.Close() })
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	require.Equal(s.t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan [2]string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				out <- [2]string{event, strings.TrimPrefix(line, "data: ")}
			}
		}
		close(out)
	}()
	require.Equal(s.t, "ready", (<-out)[0])
	return out
}

// TestStudioSessions: a login with a bearer token starts a cookie session that opens the pages and the API;
// anything that may change something needs the page's CSRF token and this origin; logout, revocation and a
// bad token end or refuse the session.
func TestStudioSessions(t *testing.T) {
	t.Parallel()
	s := newStudioClient(t, shared.url)

	// Not logged in: pages send a browser to the login form, keeping where it was going.
	resp, err := s.http.Get(s.base + "/studio/skills?x=1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/studio/login?next=%2Fstudio%2Fskills%3Fx%3D1", resp.Header.Get("Location"))

	// A login form without its token (another site's form) is refused; so is a wrong bearer token.
	status, _ := s.get("/studio/login")
	require.Equal(t, http.StatusOK, status)
	resp, body := s.post("/studio/login", url.Values{"token": {testToken}}, "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body, "expired or came from another site")
	s.get("/studio/login")
	resp, body = s.post("/studio/login", url.Values{"_csrf": {s.csrf}, "token": {"not-a-token-0123456789"}}, s.base)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "That token is not valid.")
	s.get("/studio/login")
	resp, _ = s.post("/studio/login", url.Values{"_csrf": {s.csrf}, "token": {testToken}}, "https://evil.example")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a login posted from another origin is refused")
	// A redirect after login never leaves the studio.
	s.get("/studio/login")
	resp, _ = s.post("/studio/login", url.Values{"_csrf": {s.csrf}, "token": {testToken}, "next": {"//evil.example/x"}}, s.base)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/studio/calls", resp.Header.Get("Location"))

	// A caller of its own, to revoke later.
	admin := newAPI(t)
	name, own := addCaller(t, admin, []string{"read:*", "admin"}, nil)
	s = newStudioClient(t, shared.url)
	s.login(own.token)
	status, page := s.get("/studio/calls")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `<span id="caller">`+name+`</span>`)

	// The API answers the session; a change needs the CSRF token and this origin.
	status, out := s.api(http.MethodGet, "/skills", nil, false, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	skill := uniq("studio-csrf")
	status, out = s.api(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "n", "description": "d", "instructions": "i", "tools": []string{}}, false, "")
	require.Equal(t, http.StatusForbidden, status, "%v", out)
	require.Contains(t, out["errors"].([]any)[0].(map[string]any)["message"], "CSRF")
	status, out = s.api(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "n", "description": "d", "instructions": "i", "tools": []string{}}, true, "https://evil.example")
	require.Equal(t, http.StatusForbidden, status, "%v", out)
	status, out = s.api(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "n", "description": "d", "instructions": "i", "tools": []string{}}, true, s.base)
	require.Equal(t, http.StatusCreated, status, "%v", out)

	// River UI is there, behind the same login, for admins.
	status, page = s.get("/studio/river/")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "River")
	status, _ = s.get("/studio/river/api/jobs?state=completed&limit=5")
	require.Equal(t, http.StatusOK, status)

	// Revoking the caller ends its session at once for the pages and the API (within the callers' cache).
	require.Equal(t, http.StatusOK, admin.do(http.MethodDelete, "/callers/"+name, nil, nil))
	require.Eventually(t, func() bool {
		status, _ := s.api(http.MethodGet, "/skills", nil, false, "")
		return status == http.StatusUnauthorized
	}, 5*time.Second, 100*time.Millisecond)

	// Logout ends the session: the cookie no longer opens anything.
	s = newStudioClient(t, shared.url)
	s.login(testToken)
	resp, _ = s.post("/studio/logout", url.Values{"_csrf": {"wrong"}}, s.base)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "another site cannot log a user out")
	resp, _ = s.post("/studio/logout", url.Values{"_csrf": {s.csrf}}, s.base)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	status, _ = s.api(http.MethodGet, "/skills", nil, false, "")
	require.Equal(t, http.StatusUnauthorized, status)
}

// TestStudioSessionExpires: a session ends at its TTL.
func TestStudioSessionExpires(t *testing.T) {
	t.Parallel()
	s := newStudioClient(t, shared.url)
	s.login(testToken)
	_, err := shared.pool.Exec(context.Background(), `UPDATE brain_studio_sessions SET expires_at = now() - interval '1 second'
		WHERE csrf_token = $1`, s.csrf)
	require.NoError(t, err)
	resp, err := s.http.Get(s.base + "/studio/calls")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/studio/login")
	status, _ := s.api(http.MethodGet, "/skills", nil, false, "")
	require.Equal(t, http.StatusUnauthorized, status)
}

// TestStudioEscapes: what users and tools write is shown as text on every page, never as markup.
func TestStudioEscapes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	skill := uniq("studio-xss")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": evil,
		"description": evil, "instructions": evil, "tools": []string{"os.create_note"}, "category": evil}, nil))
	var call callResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.create_note",
		"input": map[string]any{"domain": "business", "title": evil, "content": evil}, "wait_timeout_ms": 10000}, &call))
	require.True(t, call.OK, "%+v", call.Errors)

	s := newStudioClient(t, shared.url)
	s.login(testToken)
	for _, page := range []string{"/studio/skills", "/studio/skills/" + skill, "/studio/calls/" + call.Call.ID.String(),
		"/studio/agents", "/studio/registry"} {
		status, body := s.get(page)
		require.Equal(t, http.StatusOK, status, page)
		require.NotContains(t, body, "<script>alert", page)
		require.NotContains(t, body, "<img src=x", page)
		if !strings.Contains(page, "agents") && !strings.Contains(page, "registry") {
			require.Contains(t, body, "&lt;script&gt;alert(", page, "the text is shown, escaped")
		}
	}
	// The pages forbid inline scripts, so even a missed escape would not run.
	resp, err := s.http.Get(s.base + "/studio/skills")
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
}

// TestStudioLiveCalls: the calls page's event stream delivers each receipt as it is written, filtered as
// the page is.
func TestStudioLiveCalls(t *testing.T) {
	t.Parallel()
	s := newStudioClient(t, shared.url)
	s.login(testToken)
	agentless := "studio-live-" + uniq("c")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := s.events(ctx, "?tool=os.create_note&status=succeeded")

	a := newAPI(t)
	var other, ok callResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.health_check", "input": map[string]any{}, "wait_timeout_ms": 10000}, &other))
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.create_note",
		"input": map[string]any{"domain": "business", "title": agentless, "content": "live"}, "wait_timeout_ms": 10000}, &ok))
	require.True(t, ok.OK)
	c := awaitCallEvent(t, ctx, events, ok.Call.ID.String(), func(c map[string]any) {
		require.Equal(t, "os.create_note", c["tool"], "the filter keeps out other tools")
		require.Equal(t, "succeeded", c["status"])
	})
	require.Equal(t, "tester", c["requested_by"])
	requireCallFilters(t, a, ok.Call.ID.String())
}

// awaitCallEvent reads a live stream's call events until the one of call id, which it returns; check sees
// each call event before (and that one).
func awaitCallEvent(t *testing.T, ctx context.Context, events <-chan [2]string, id string, check func(map[string]any)) map[string]any {
	t.Helper()
	for {
		select {
		case ev, open := <-events:
			require.True(t, open, "the stream ended early")
			if ev[0] != "call" {
				continue
			}
			var c map[string]any
			require.NoError(t, json.Unmarshal([]byte(ev[1]), &c))
			check(c)
			if c["id"] == id {
				return c
			}
		case <-ctx.Done():
			t.Fatalf("the receipt of call %s never came on the stream", id)
		}
	}
}

// requireCallFilters: GET /calls filters by caller, agent and device as the studio's list does.
func requireCallFilters(t *testing.T, a *testAPI, id string) {
	t.Helper()
	var list struct {
		Calls []struct {
			ID          string `json:"id"`
			RequestedBy string `json:"requested_by"`
		} `json:"calls"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls?tool=os.create_note&caller=tester&limit=1000", nil, &list))
	found := false
	for _, c := range list.Calls {
		require.Equal(t, "tester", c.RequestedBy)
		found = found || c.ID == id
	}
	require.True(t, found, "the call is listed under its caller")
	for _, q := range []string{"caller=nobody-at-all", "agent=no-such-agent", "device=no-such-device"} {
		require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls?"+q, nil, &list))
		require.Empty(t, list.Calls, q)
	}
	var e errorResponse
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodGet, "/calls?status=done", nil, &e))
}
