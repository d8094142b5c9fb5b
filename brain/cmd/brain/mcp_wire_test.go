package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// The MCP server as a hostile client meets it: raw bodies to /mcp and raw lines to `brain mcp`, each
// answered with a JSON-RPC message carrying its id exactly as sent (or null when it had none that could be
// read), or with nothing for a notification; and the process lives on.

// rpcMessage is one JSON-RPC message as it came, member by member.
type rpcMessage map[string]json.RawMessage

// code is an error answer's code (0 for a result).
func (m rpcMessage) code(t testing.TB) int64 {
	t.Helper()
	if m["error"] == nil {
		return 0
	}
	var e struct {
		Code    *int64  `json:"code"`
		Message *string `json:"message"`
	}
	require.NoError(t, json.Unmarshal(m["error"], &e), "%s", m["error"])
	require.NotNil(t, e.Code, "an error without a code: %s", m["error"])
	require.NotNil(t, e.Message, "an error without a message: %s", m["error"])
	require.NotEmpty(t, *e.Message, "an error without a message: %s", m["error"])
	return *e.Code
}

// mcpPost posts one raw body to a brain's /mcp with a token, as an MCP client does, and returns the HTTP
// status and the JSON-RPC messages answered (a stream's events, or a JSON body).
func mcpPost(t testing.TB, url, token string, body []byte) (int, []rpcMessage) {
	t.Helper()
	return mcpPostWithin(t, url, token, body, time.Minute)
}

// mcpPostWithin is mcpPost, failing when the answer takes longer than wait.
func mcpPostWithin(t testing.TB, url, token string, body []byte, wait time.Duration) (int, []rpcMessage) {
	t.Helper()
	client := &http.Client{Timeout: wait}
	resp, err := client.Do(mcpRequest(t, context.Background(), url+"/mcp", token, string(body)))
	require.NoError(t, err, "body %q: the brain did not answer", body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, rpcMessages(t, resp.Header.Get("Content-Type"), data)
}

// rpcMessages reads the JSON-RPC messages of an HTTP answer: a text/event-stream's data, or one JSON body
// (which must be a JSON-RPC message too: /mcp answers nothing else).
func rpcMessages(t testing.TB, contentType string, data []byte) []rpcMessage {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	var out []rpcMessage
	if strings.HasPrefix(contentType, "text/event-stream") {
		for _, line := range strings.Split(string(data), "\n") {
			if payload, ok := strings.CutPrefix(line, "data: "); ok && payload != "" {
				var m rpcMessage
				require.NoError(t, json.Unmarshal([]byte(payload), &m), "an event that is not a JSON-RPC message: %q", payload)
				out = append(out, m)
			}
		}
		return out
	}
	require.True(t, strings.HasPrefix(contentType, "application/json"), "an answer of type %q, not JSON-RPC: %s", contentType, data)
	var m rpcMessage
	require.NoError(t, json.Unmarshal(data, &m), "an answer that is not a JSON-RPC message: %s", data)
	return append(out, m)
}

// stdioPeer is a `brain mcp` process and raw lines to and from it.
type stdioPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *sqltest.SyncBuffer
	pings  atomic.Int64
	// wait bounds how long exchange waits for the answers (a minute unless set).
	wait time.Duration
}

// startStdioPeer starts `brain mcp` (with env added) on a database and opens an MCP session (initialize);
// the process is stopped when stop is called.
func startStdioPeer(t testing.TB, dbURL string, env ...string) (p *stdioPeer, stop func()) {
	t.Helper()
	cmd := exec.Command(brainBinary(t), "mcp")
	cmd.Env = append(append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+testenv.RegistryPath(), "GEM_LOG_LEVEL=warn"), env...)
	p = &stdioPeer{cmd: cmd, lines: make(chan []byte, 64), stderr: &sqltest.SyncBuffer{}, wait: time.Minute}
	cmd.Stderr = p.stderr
	var err error
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	init := p.exchange(t, []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gem-test","version":"1"}}}`), true)
	requireAnswer(t, "initialize", init, `"init"`, 0)
	require.Empty(t, p.exchange(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false))
	return p, func() {
		_ = p.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// exchange writes one raw line and returns every message answered before a ping sent after it was answered
// (and the answer to the line, when it came after the ping's): a line with an id is answered once, and
// the process must still answer the ping.
func (p *stdioPeer) exchange(t testing.TB, line []byte, wantAnswer bool) []rpcMessage {
	t.Helper()
	ping := fmt.Sprintf(`"ping-%d"`, p.pings.Add(1))
	_, err := p.stdin.Write(append(append(append([]byte{}, line...), '\n'), []byte(`{"jsonrpc":"2.0","id":`+ping+`,"method":"ping"}`+"\n")...))
	require.NoError(t, err, "line %q: brain mcp no longer reads (stderr: %s)", line, p.stderr.String())
	var out []rpcMessage
	pinged := false
	deadline := time.After(p.wait)
	for !pinged || (wantAnswer && len(out) == 0) {
		select {
		case raw, ok := <-p.lines:
			require.True(t, ok, "line %q: brain mcp ended (stderr: %s)", line, p.stderr.String())
			var m rpcMessage
			require.NoError(t, json.Unmarshal(raw, &m), "line %q: brain mcp wrote a line that is not JSON-RPC: %q", line, raw)
			if string(m["id"]) == ping {
				require.Equal(t, `{}`, string(m["result"]), "the ping's answer")
				pinged = true
				continue
			}
			if m["method"] != nil { // a notification from the server (progress, a log message)
				continue
			}
			out = append(out, m)
		case <-deadline:
			t.Fatalf("line %q: no answer within %s (stderr: %s)", line, p.wait, p.stderr.String())
		}
	}
	return out
}

// requireAnswer checks the single JSON-RPC answer to a message: its id exactly as wanted and its error code
// (0: a result).
func requireAnswer(t testing.TB, what string, msgs []rpcMessage, id string, code int64) rpcMessage {
	t.Helper()
	require.Len(t, msgs, 1, "%s: one answer", what)
	m := msgs[0]
	require.Equal(t, `"2.0"`, string(m["jsonrpc"]), "%s: %v", what, m)
	require.Equal(t, id, string(m["id"]), "%s: the id as sent", what)
	require.Equal(t, code, m.code(t), "%s: %s", what, m["error"])
	if code == 0 {
		require.NotNil(t, m["result"], "%s: %v", what, m)
	}
	return m
}

// readOnlyToken is a token of a caller holding only read:*.
func readOnlyToken(t *testing.T) string {
	_, reader := addCaller(t, newAPI(t), []string{"read:*"}, nil)
	return reader.token
}

// TestMCPSkillsWithoutParams: skills/list and skills/get without params, or with params null, by a read-only
// caller over /mcp and `brain mcp`: the list answers, the get is refused -32602, and both processes live
// on (this request stopped the brain: a nil params panicked in the SDK's handler goroutine).
func TestMCPSkillsWithoutParams(t *testing.T) {
	t.Parallel()
	token := readOnlyToken(t)
	requests := []struct {
		body string
		code int64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"skills/list"}`, 0},
		{`{"jsonrpc":"2.0","id":2,"method":"skills/list","params":null}`, 0},
		{`{"jsonrpc":"2.0","id":3,"method":"skills/get"}`, -32602},
		{`{"jsonrpc":"2.0","id":4,"method":"skills/get","params":null}`, -32602},
		{`{"jsonrpc":"2.0","id":5,"method":"skills/get","params":{}}`, -32602},
	}
	for i, r := range requests {
		_, msgs := mcpPost(t, shared.url, token, []byte(r.body))
		m := requireAnswer(t, "HTTP "+r.body, msgs, fmt.Sprint(i+1), r.code)
		if r.code == 0 {
			require.Contains(t, string(m["result"]), `"skills":[`)
		}
	}
	var health map[string]any
	require.Equal(t, http.StatusOK, newAPI(t).do(http.MethodGet, "/health", nil, &health), "the brain lives")

	peer, stop := startStdioPeer(t, shared.dbURL)
	defer stop()
	for i, r := range requests {
		m := requireAnswer(t, "stdio "+r.body, peer.exchange(t, []byte(r.body), true), fmt.Sprint(i+1), r.code)
		if r.code == 0 {
			require.Contains(t, string(m["result"]), `"skills":[`)
		}
	}
}

// noAnswer stands for no answer at all where an error code is expected (JSON-RPC's codes are negative).
const noAnswer = 1

// wireCases are raw messages and their answers: the id exactly as sent (null when it could not be read or is
// not one MCP allows), the error code (0: a result; noAnswer: none at all) and /mcp's HTTP status.
var wireCases = []struct {
	body   string
	id     string
	code   int64
	status int
}{
	{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, `9007199254740993`, 0, http.StatusOK},
	{`{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}`, `-9223372036854775808`, 0, http.StatusOK},
	{`{"jsonrpc":"2.0","id":-0,"method":"ping"}`, `-0`, 0, http.StatusOK},
	{`{"jsonrpc":"2.0","id":"a\u0041\/é","method":"ping"}`, `"a\u0041\/é"`, 0, http.StatusOK},
	{`{"jsonrpc":"2.0","id":9007199254740995,"method":"tools/call","params":{"name":"gem.get_receipt","arguments":{"call_id":"01900000-0000-7000-8000-000000000000"}}}`,
		`9007199254740995`, 0, http.StatusOK},
	{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `null`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, `null`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}`, `null`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, `null`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, `null`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, `7`, -32600, http.StatusBadRequest},
	{`{"id":8,"method":"ping"}`, `8`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":9,"method":"nope/nope"}`, `9`, -32601, http.StatusOK},
	{`{"jsonrpc":"2.0","id":10,"method":"tools/call"}`, `10`, -32602, http.StatusOK},
	{`{"jsonrpc":"2.0","id":11,"method":"tools/list","params":[1]}`, `11`, -32602, http.StatusOK},
	{`{"jsonrpc":"2.0","id":12,"method":"notifications/initialized"}`, `12`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":16,"method":"initialize","params":{"protocolVersion":5}}`, `16`, -32600, http.StatusOK}, // the SDK's bare error, coded
	// A URI with a DEL: the SDK's not-found error quoted it as \x7f, which is not JSON, and nothing was answered.
	{`{"jsonrpc":"2.0","id":17,"method":"resources/read","params":{"uri":"skill:\u007f"}}`, `17`, -32602, http.StatusOK},
	{`{"jsonrpc":"2.0","id":18,"method":"resources/read","params":{"uri":"skill://x/\u007f"}}`, `18`, -32602, http.StatusOK},
	{`{"jsonrpc":"2.0","id":13,"method":7}`, `13`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","id":14}`, `14`, -32600, http.StatusBadRequest},
	{`{`, `null`, -32700, http.StatusBadRequest},
	{`nope`, `null`, -32700, http.StatusBadRequest},
	{`"x"`, `null`, -32600, http.StatusBadRequest},
	{`[]`, `null`, -32600, http.StatusBadRequest},
	{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `null`, -32600, http.StatusBadRequest},
	{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``, noAnswer, http.StatusAccepted},
	{`{"jsonrpc":"2.0","method":"nope/nope","params":7}`, ``, noAnswer, http.StatusAccepted},
	{`{"jsonrpc":"2.0","id":15,"result":{}}`, ``, noAnswer, http.StatusAccepted},
}

// TestMCPWireErrors: every raw message to /mcp and to `brain mcp` gets a JSON-RPC answer with its id exactly as
// sent (/mcp answered plain-text errors, and changed 9007199254740993 to …992 and 1.5 to 1), a notification
// none; a line `brain mcp` cannot read is answered -32700 and the session goes on (it ended it).
func TestMCPWireErrors(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases {
		status, msgs := mcpPost(t, shared.url, testToken, []byte(c.body))
		require.Equal(t, c.status, status, "HTTP %s", c.body)
		if c.code == noAnswer {
			require.Empty(t, msgs, "HTTP %s: a notification is not answered", c.body)
			continue
		}
		requireAnswer(t, "HTTP "+c.body, msgs, c.id, c.code)
	}

	// What the SDK refused before reading the message: a JSON-RPC error too, with the message's id.
	for _, tt := range []struct {
		method, contentType string
		status              int
		id                  string
	}{
		{http.MethodPost, "text/plain", http.StatusUnsupportedMediaType, `"x"`},
		{http.MethodGet, "application/json", http.StatusMethodNotAllowed, `null`}, // a GET's body is not read
	} {
		req, err := http.NewRequest(tt.method, shared.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"x","method":"ping"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", tt.contentType)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, tt.status, resp.StatusCode, "%s %s: %s", tt.method, tt.contentType, data)
		requireAnswer(t, tt.method+" "+tt.contentType, rpcMessages(t, resp.Header.Get("Content-Type"), data), tt.id, -32600)
	}

	peer, stop := startStdioPeer(t, shared.dbURL)
	defer stop()
	for _, c := range wireCases {
		msgs := peer.exchange(t, []byte(c.body), c.code != noAnswer)
		if c.code == noAnswer {
			require.Empty(t, msgs, "stdio %s: a notification is not answered", c.body)
			continue
		}
		requireAnswer(t, "stdio "+c.body, msgs, c.id, c.code)
	}
}
