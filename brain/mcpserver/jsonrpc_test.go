package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// newTestServer is an MCP server over the repository's registry with no database: enough for what never
// reads one (ping, tools/list, a tool added by the test).
func newTestServer(t *testing.T, log zerolog.Logger) *Server {
	t.Helper()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	s, err := New(&Params{Registry: reg, Log: log})
	require.NoError(t, err)
	return s
}

// TestMethodsAreTheSDKs: the envelope check's method table says what the SDK itself does: each call method
// is one the SDK answers (not -32601) and needs params exactly when the SDK refuses it without; each
// notification is refused with an id; a method not in the table is not the SDK's either.
func TestMethodsAreTheSDKs(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, serverSide, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
		InitializeParams: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, InitializedParams: &mcp.InitializedParams{}}})
	require.NoError(t, err)
	defer ss.Close()
	conn, err := clientSide.Connect(ctx)
	require.NoError(t, err)
	defer conn.Close()

	ask := func(method string, withID bool) *jsonrpc.Response {
		t.Helper()
		req := &jsonrpc.Request{Method: method}
		if withID {
			req.ID, _ = jsonrpc.MakeID("q-" + method)
		}
		require.NoError(t, conn.Write(ctx, req))
		// A notification is never answered: a ping after it says when the server has read it.
		ping, _ := jsonrpc.MakeID("ping")
		require.NoError(t, conn.Write(ctx, &jsonrpc.Request{ID: ping, Method: "ping"}))
		var answer *jsonrpc.Response
		pinged := false
		for !pinged || (withID && answer == nil) {
			msg, err := conn.Read(ctx)
			require.NoError(t, err)
			if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == ping {
				pinged = true
			} else if ok {
				answer = resp
			}
		}
		return answer
	}
	errorOf := func(r *jsonrpc.Response) *jsonrpc.Error {
		if r == nil || r.Error == nil {
			return nil
		}
		e, ok := r.Error.(*jsonrpc.Error)
		require.True(t, ok, "%T %v", r.Error, r.Error)
		return e
	}
	for _, method := range Methods() {
		kind := serverMethods[method]
		if kind.notification {
			// Not a call: refused with an id ("unexpected id"; notifications/cancelled is the connection's own).
			require.NotNil(t, errorOf(ask(method, true)), "%s with an id", method)
			continue
		}
		if method == "subscriptions/listen" && !kind.needsParams {
			t.Fatalf("subscriptions/listen without params would park until cancelled")
		}
		e := errorOf(ask(method, true))
		if e != nil && method != "server/discover" { // the SDK serves it from protocol 2026-07-28 on
			require.NotEqual(t, int64(jsonrpc.CodeMethodNotFound), e.Code, "%s: %s", method, e.Message)
		}
		// The SDK's own refusal, or a handler's -32602 (skills/get).
		missing := e != nil && (strings.Contains(e.Message, `missing required "params"`) || e.Code == jsonrpc.CodeInvalidParams)
		require.Equal(t, kind.needsParams, missing, "%s: the SDK refuses it without params: %v", method, e)
	}
	e := errorOf(ask("nope/nope", true))
	require.NotNil(t, e)
	require.Equal(t, int64(jsonrpc.CodeMethodNotFound), e.Code)
}

// panicTool is a tool whose handler panics, as a bug would.
const panicTool = "test.panic"

func addPanicTool(s *Server) {
	s.mcp.AddTool(&mcp.Tool{Name: panicTool, InputSchema: json.RawMessage(`{"type": "object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("a deliberate fault") })
}

// TestHandlerPanicIsAnswered: a handler that panics is answered with a JSON-RPC internal error, over HTTP
// and stdio, logged with the request's id and its stack, and the server answers the next request (a panic
// in the SDK's handler goroutine ended the process).
func TestHandlerPanicIsAnswered(t *testing.T) {
	t.Parallel()
	var logs sqltest.SyncBuffer
	s := newTestServer(t, zerolog.New(&logs))
	addPanicTool(s)
	call := `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"` + panicTool + `","arguments":{}}}`

	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeMCP(w, r, "tester", registry.Grants{"*"}, nil)
	}))
	defer web.Close()
	post := func(body string) map[string]json.RawMessage {
		req, err := http.NewRequest(http.MethodPost, web.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			if payload, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(payload), &m))
				return m
			}
		}
		t.Fatalf("no message in %q", data)
		return nil
	}
	m := post(call)
	require.Equal(t, "77", string(m["id"]))
	require.Contains(t, string(m["error"]), `"code":-32603`)
	require.Contains(t, string(m["error"]), "tools/call")
	require.Equal(t, "{}", string(post(`{"jsonrpc":"2.0","id":78,"method":"ping"}`)["result"]), "the server answers on")
	require.Contains(t, logs.String(), "a deliberate fault")
	require.Contains(t, logs.String(), `"jsonrpc_id":"77"`)
	require.Contains(t, logs.String(), "jsonrpc_test.go", "the stack")

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, &StdioTransport{Reader: stdinR, Writer: stdoutW}, Caller{Name: "stdio"}) }()
	out := bufio.NewReader(stdoutR)
	send := func(line string) map[string]json.RawMessage {
		_, err := io.WriteString(stdinW, line+"\n")
		require.NoError(t, err)
		if strings.Contains(line, "notifications/") {
			return nil
		}
		answer, err := out.ReadBytes('\n')
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(answer, &m), "%s", answer)
		return m
	}
	require.NotNil(t, send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)["result"])
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	m = send(strings.Replace(call, `"id":77`, `"id":"stdio-77"`, 1))
	require.Equal(t, `"stdio-77"`, string(m["id"]))
	require.Contains(t, string(m["error"]), `"code":-32603`)
	require.Contains(t, string(send(`not json`)["error"]), `"code":-32700`, "a malformed line is answered")
	require.Equal(t, "{}", string(send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)["result"]), "the session goes on")
	require.Contains(t, logs.String(), `"jsonrpc_id":"\"stdio-77\""`)
	require.NoError(t, stdinW.Close())
	select {
	case err := <-done:
		require.True(t, err == nil || errors.Is(err, io.EOF), "the session ended with %v", err)
	case <-ctx.Done():
		t.Fatal("the session did not end with stdin")
	}
}
