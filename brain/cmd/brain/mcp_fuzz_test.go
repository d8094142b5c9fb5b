package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/stretchr/testify/require"
)

// FuzzMCP sends random JSON-RPC messages to a real brain's /mcp (on the package's PostgreSQL and executor) and
// to a `brain mcp` process on the same database: every method the server answers (mcpserver.Methods) and
// one it does not, with ids and params of every JSON type (missing, null, numbers, strings, arrays, objects,
// nested), malformed envelopes and bytes that are not JSON. Every message must get one JSON-RPC answer with
// its id exactly as sent (null when it had none that could be read) and a code when it is an error, or no
// answer when it is a notification; and both processes must live on (the stdio one answers a ping after
// every message; a panic in the in-process brain ends the fuzzing process). make test runs the seeds;
// make fuzz fuzzes.
func FuzzMCP(f *testing.F) {
	methods := append(mcpserver.Methods(), "nope/nope")
	for i, m := range methods {
		for _, params := range []string{"", "null", "0", `"text"`, "[1,2]", "{}", `{"a":{"b":[1,{"c":null}],"d":-1.5e300}}`} {
			f.Add(uint8(i), strconv.Itoa(i+1), params, uint8(0))
		}
		f.Add(uint8(i), "", "{}", uint8(0)) // a notification
		if m == "tools/call" {
			for _, p := range []string{`{"name":"os.health_check","arguments":{}}`, `{"name":"os.health_check","arguments":null}`,
				`{"name":"os.create_note","arguments":{"text":5}}`, `{"name":"gem.get_receipt","arguments":{"call_id":"01900000-0000-7000-8000-000000000000"}}`,
				`{"name":"gem.approve","arguments":{"call_id":"01900000-0000-7000-8000-000000000000","approve":false}}`,
				`{"name":"nope.nope","arguments":{}}`, `{"name":7}`, `{"name":"os.health_check","_meta":{"gem/device":7,"progressToken":"p"}}`} {
				f.Add(uint8(i), `"call"`, p, uint8(0))
			}
		}
	}
	for _, id := range []string{"9007199254740993", "-0", "1.5", "1e3", "99999999999999999999", "null", "true", `"a\u0041"`, "[1]", "{}"} {
		f.Add(uint8(0), id, "", uint8(0))
	}
	for form := range uint8(fuzzForms) {
		f.Add(uint8(3), "7", `{"uri":"skill://nope/SKILL.md"}`, form)
	}
	f.Add(uint8(0), "1", `{"jsonrpc":"2.0","id":1,"method":"ping"`, uint8(formRaw)) // cut short
	f.Add(uint8(0), "1", "\x00\xff", uint8(formRaw))
	f.Add(uint8(0), "1", "", uint8(formRaw))     // an empty body (HTTP) or a blank line (stdio)
	f.Add(uint8(0), "1", " \t ", uint8(formRaw)) // only whitespace
	f.Add(uint8(0), "1", `{"jsonrpc":"2.0","id":1,"result":{}}`, uint8(formRaw))

	// A brain of its own, whose tools/call answers pending after 3s (a fuzzed call may wait for nothing).
	brain, err := startBrain(shared.dbURL, func(c *Config) { c.MCP.CallWait = 3 * time.Second })
	require.NoError(f, err)
	f.Cleanup(func() { _ = brain.Close(context.Background()) })
	web := brain.Server.URL()
	peer, stop := startStdioPeer(f, shared.dbURL, "GEM_MCP_CALL_WAIT=3s")
	f.Cleanup(stop)
	// Within the fuzzing engine's 10 s for an input, so a missing answer fails with the message, not as a hang.
	const wait = 8 * time.Second
	peer.wait = wait
	f.Fuzz(func(t *testing.T, method uint8, id, params string, form uint8) {
		body := fuzzMessage(methods[int(method)%len(methods)], id, params, form%fuzzForms)

		status, msgs := mcpPostWithin(t, web, testToken, body, wait)
		answered, wantID := expectedAnswer(body)
		require.Less(t, status, 500, "HTTP %q", body)
		requireFuzzAnswer(t, "HTTP", body, msgs, answered, wantID)
		if !answered {
			require.Equal(t, http.StatusAccepted, status, "HTTP %q: a notification is accepted", body)
		}

		line := bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\n"), []byte(" ")), []byte("\r"), []byte(" ")) // stdio: a message per line
		answered, wantID = expectedAnswer(line)
		if len(bytes.TrimSpace(line)) == 0 {
			answered = false // a blank line is no message (an empty body is: HTTP answers -32700)
		}
		requireFuzzAnswer(t, "stdio", line, peer.exchange(t, line, answered), answered, wantID)
	})
}

// A fuzzing worker talks to its coordinator over file descriptors 3 and 4, which it inherited without
// close-on-exec: every process it starts (the package's executor, brain mcp) would hold them open, and the
// coordinator waited forever for a worker that had ended. They are closed on exec before TestMain starts any.
func init() {
	if slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		syscall.CloseOnExec(3)
		syscall.CloseOnExec(4)
	}
}

// The shapes of a fuzzed message.
const (
	formMessage   = iota // {"jsonrpc": "2.0", "id", "method", "params"}, each left out when empty
	formNullParam        // params null when left out
	formVersion          // "jsonrpc": "1.0"
	formRaw              // params is the whole body
	formMethod           // method is the id's JSON (any type), id 1
	formBatch            // the message in an array
	formNested           // params inside the fields handlers read (name, arguments, uri, _meta, cursor)
	fuzzForms
)

// fuzzJSON is text as a JSON value: itself when it is JSON, else a JSON string of it.
func fuzzJSON(text string) json.RawMessage {
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	b, _ := json.Marshal(text)
	return b
}

// fuzzMessage builds the body of one fuzzed message.
func fuzzMessage(method, id, params string, form uint8) []byte {
	if form == formRaw {
		return []byte(params)
	}
	m := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`)}
	m["method"], _ = json.Marshal(method)
	if id != "" {
		m["id"] = fuzzJSON(id)
	}
	switch {
	case params != "":
		m["params"] = fuzzJSON(params)
	case form == formNullParam:
		m["params"] = json.RawMessage("null")
	}
	switch form {
	case formVersion:
		m["jsonrpc"] = json.RawMessage(`"1.0"`)
	case formMethod:
		m["method"], m["id"] = fuzzJSON(id), json.RawMessage("1")
	case formNested:
		p := fuzzJSON(params)
		m["params"], _ = json.Marshal(map[string]json.RawMessage{"name": p, "arguments": p, "uri": p, "_meta": p, "cursor": p, "level": p})
	}
	body, _ := json.Marshal(m)
	if form == formBatch {
		return append(append([]byte("["), body...), ']')
	}
	return body
}

// fuzzIntegerID is an id MCP allows as a number.
var fuzzIntegerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// expectedAnswer is what a message must get, by JSON-RPC 2.0 and MCP (ids are strings or integers, never
// null): no answer for a notification or a response, else one answer with the message's id, or null
// when its id could not be read or is not one MCP allows.
func expectedAnswer(body []byte) (answered bool, id string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return true, "null"
	}
	rawID, hasID := m["id"]
	if hasID {
		var s string
		_, err := strconv.ParseInt(string(rawID), 10, 64)
		if json.Unmarshal(rawID, &s) != nil && !(fuzzIntegerID.Match(rawID) && err == nil) {
			return true, "null"
		}
		id = string(rawID)
	} else {
		id = "null"
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return true, id
	}
	rawMethod, hasMethod := m["method"]
	if !hasMethod {
		_, result := m["result"]
		_, failure := m["error"]
		return !(hasID && result != failure), id
	}
	var method string
	if json.Unmarshal(rawMethod, &method) != nil {
		return true, id
	}
	return hasID, id
}

// requireFuzzAnswer checks what a message got: one JSON-RPC answer with the id wanted and a result or an
// error with a code and a message, or nothing.
func requireFuzzAnswer(t *testing.T, transport string, body []byte, msgs []rpcMessage, answered bool, id string) {
	t.Helper()
	var answers []rpcMessage
	for _, m := range msgs {
		if m["method"] == nil { // notifications (progress) may come before the answer
			answers = append(answers, m)
		}
	}
	if !answered {
		require.Empty(t, answers, "%s %q: a notification gets no answer", transport, body)
		return
	}
	require.Len(t, answers, 1, "%s %q: one answer", transport, body)
	a := answers[0]
	require.Equal(t, `"2.0"`, string(a["jsonrpc"]), "%s %q", transport, body)
	require.Equal(t, id, string(a["id"]), "%s %q: the id as sent", transport, body)
	require.True(t, (a["result"] == nil) != (a["error"] == nil), "%s %q: a result or an error: %v", transport, body, a)
	if a["error"] != nil {
		require.NotZero(t, a.code(t), "%s %q: an error with a code: %s", transport, body, a["error"])
	}
}
