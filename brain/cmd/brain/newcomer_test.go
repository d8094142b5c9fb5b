package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// cliOn runs the CLI against the shared brain with the test token.
func cliOn(url string, args ...string) (code int, stdout, stderr string) {
	env := map[string]string{"GEM_BRAIN_URL": url, "GEM_BRAIN_TOKEN": testToken}
	var out, errOut bytes.Buffer
	code = cli(args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestCLIListings: brain tools, brain calls and brain runs print aligned columns, filter by the HTTP API's
// parameters, and print the API's JSON with -json; a bad filter is the API's 400, named.
func TestCLIListings(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	title := "listed " + uuid.NewString()[:8]
	run := a.runOK(map[string]any{"message": "create a task to " + title, "mode": "enqueue_and_wait"})
	callID := run.Enqueued[0].CallID.String()

	code, out, errOut := cliOn(shared.url, "tools", "create", "a", "task", "-limit", "3")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `^SCORE +TOOL +IDEMPOTENCY +PERMISSIONS +DESCRIPTION$`, lines[0])
	require.Contains(t, out, "os.create_task")
	col := strings.Index(lines[0], "TOOL")
	for _, l := range lines[1:] {
		require.True(t, l[col-1] == ' ' && l[col] != ' ', "the tool column starts where its header does:\n%s", out)
	}
	code, out, _ = cliOn(shared.url, "tools", "-json", "create a task")
	require.Equal(t, 0, code, out)
	var tools struct {
		Matches []struct{ Name string } `json:"matches"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &tools), out)
	require.NotEmpty(t, tools.Matches)
	code, out, _ = cliOn(shared.url, "tools")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "tools (registry ")

	code, out, errOut = cliOn(shared.url, "calls", "-tool", "os.create_task", "-limit", "200")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^CREATED +STATUS +TOOL +CALL +CALLER +AGENT +DEVICE\n`, out)
	require.Regexp(t, `\n20\d\d-\d\d-\d\d \d\d:\d\d:\d\d +succeeded +os.create_task +`+callID+` +tester +- +-\n`, out)
	require.NotContains(t, out, "os.create_note")
	code, out, _ = cliOn(shared.url, "calls", "-tool", "os.create_task", "-status", "succeeded", "-json")
	require.Equal(t, 0, code, out)
	var calls struct {
		Calls []struct{ ID, Tool, Status string } `json:"calls"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &calls), out)
	require.NotEmpty(t, calls.Calls)
	for _, c := range calls.Calls {
		require.Equal(t, "os.create_task", c.Tool)
		require.Equal(t, "succeeded", c.Status)
	}
	code, out, _ = cliOn(shared.url, "calls", "-status", "done")
	require.Equal(t, 1, code)
	require.Contains(t, out, "brain calls: HTTP 400 invalid: status must be one of")

	code, out, errOut = cliOn(shared.url, "runs", "-mode", "enqueue_and_wait", "-caller", "tester", "-limit", "500")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^CREATED +STATUS +MODE +CALLS +RUN +CALLER +AGENT +MESSAGE\n`, out)
	require.Regexp(t, `completed +enqueue_and_wait +1 +`+run.RunID.String()+` +tester +- +create a task to `+title, out)
	code, out, _ = cliOn(shared.url, "runs", "-status", "planned", "-json")
	require.Equal(t, 0, code, out)
	var runs struct {
		Runs []struct{ Status string } `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &runs), out)
	for _, r := range runs.Runs {
		require.Equal(t, "planned", r.Status)
	}
	code, out, _ = cliOn(shared.url, "runs", run.RunID.String())
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ok (HTTP 200)  run "+run.RunID.String()+"  completed")
	require.Contains(t, out, callID)
	code, out, _ = cliOn(shared.url, "runs", "-status", "sleeping")
	require.Equal(t, 1, code)
	require.Contains(t, out, "HTTP 400 invalid: status must be one of created, queued")
}

// TestCLIJSONEverywhere: every client command takes -json and then prints the API's answer as JSON.
func TestCLIJSONEverywhere(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	planned := a.runOK(map[string]any{"message": "create a task to approve as JSON", "mode": "plan"})
	for _, args := range [][]string{
		{"run", "-M", "answer", "-m", "list my tasks", "-json"},
		{"call", "os.create_note", `{"domain": "business", "title": "json", "content": "everywhere"}`, "-json"},
		{"calls", "-limit", "2", "-json"},
		{"runs", "-limit", "2", "-json"},
		{"runs", planned.RunID.String(), "-json"},
		{"tools", "-json"},
		{"approve", planned.RunID.String(), "-json"},
		{"approvals", "-json"},
		{"callers", "-json"},
		{"devices", "-json"},
		{"version", "-json"},
	} {
		t.Run(strings.Join(args[:1], " "), func(t *testing.T) {
			code, out, errOut := cliOn(shared.url, args...)
			require.Equal(t, 0, code, "%v\n%s%s", args, out, errOut)
			require.True(t, json.Valid([]byte(out)), "%v printed what is not JSON:\n%s", args, out)
		})
	}
}

// TestCLIUnknownCommand: a typo gets the nearest command, not the whole help; nothing near gets a pointer
// to brain help.
func TestCLIUnknownCommand(t *testing.T) {
	t.Parallel()
	for typo, want := range map[string]string{"tool": "brain tools", "recipt": "brain receipt", "cals": "brain call", "aprove": "brain approve", "--verison": "brain version"} {
		code, out, errOut := cliOn("http://127.0.0.1:1", typo)
		require.Equal(t, 2, code)
		require.Empty(t, out)
		require.Contains(t, errOut, "did you mean "+want+"?", typo)
		require.Less(t, strings.Count(errOut, "\n"), 4, "a suggestion, not the help:\n%s", errOut)
	}
	code, _, errOut := cliOn("http://127.0.0.1:1", "xyzzy")
	require.Equal(t, 2, code)
	require.NotContains(t, errOut, "did you mean")
	require.Contains(t, errOut, `unknown command "xyzzy"`)
	require.Contains(t, errOut, "brain help lists every command")
	code, _, errOut = cliOn("http://127.0.0.1:1", "callers", "revok", "x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "did you mean brain callers revoke?")
}

// TestCLIBrainUnreachable: when nothing answers at the brain's address, every command says what to check, at
// once: the commands that send their request again while a brain cannot answer (run, call, chat) do not wait
// for one that is not running (before, run and call waited out their 45 s, chat its 10 minutes).
func TestCLIBrainUnreachable(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"runs"}, {"run", "-m", "list my tasks"}, {"call", "os.health_check"}, {"chat", "office", "hello"},
		{"receipt", uuid.NewString()}, {"callers"}} {
		start := time.Now()
		code, _, errOut := cliOn("http://127.0.0.1:1", args...)
		require.Less(t, time.Since(start), 20*time.Second, "%v said so at once", args)
		require.Equal(t, 1, code, args)
		for _, want := range []string{"connection refused", "nothing answers at 127.0.0.1:1", "make run", "GEM_BRAIN_URL", "GEM_BRAIN_TOKEN"} {
			require.Contains(t, errOut, want, "%v", args)
		}
	}
}

// TestHomeAndFavicon: GET / takes a browser to the studio; the icon is served where browsers look for it and
// where the studio's pages link it; the login page says where make run put the token.
func TestHomeAndFavicon(t *testing.T) {
	t.Parallel()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(shared.url + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/studio", resp.Header.Get("Location"))

	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(shared.url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(body)
	}
	resp, body := get("/favicon.ico")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(body, "<svg"), body)
	resp, body = get("/studio/login")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<link rel="icon" href="/studio/static/favicon.svg"`)
	require.Contains(t, body, "<code>make run</code>? It wrote a token to <code>.gem/brain-token</code>")
	resp, _ = get("/studio/static/favicon.svg")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
}
