package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jsonrpcIDHeader carries a request's JSON-RPC id (as sent) to the handlers, in the request's header the SDK
// hands them, so a handler's failure is logged with it. Whatever a client sends in it is replaced.
const jsonrpcIDHeader = "X-Gem-Jsonrpc-Id"

// MaxLineDefault bounds one message of `brain mcp` (a line of stdin), as the SDK's own stdio transport does.
const MaxLineDefault = mcp.DefaultMaxLineLength

// StdioTransport serves MCP over newline-delimited JSON (stdin and stdout), checking every line as /mcp
// checks a body: a line that is not a message the server takes is answered with a JSON-RPC error (-32700,
// -32600, -32601, -32602) and the session goes on, and ids are answered exactly as sent.
type StdioTransport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxLine is the longest line read, in bytes; a longer one is answered -32600 and skipped. Zero:
	// MaxLineDefault.
	MaxLine int
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxLine
	if limit <= 0 {
		limit = MaxLineDefault
	}
	c := &stdioConn{w: t.Writer, lines: make(chan lineOrErr), closed: make(chan struct{}), surrogates: map[string]json.RawMessage{}, pending: map[string]string{}}
	go c.readLines(bufio.NewReaderSize(t.Reader, 64<<10), limit)
	return c, nil
}

type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

// stdioConn is one stdio session's connection.
type stdioConn struct {
	w       io.Writer
	writeMu sync.Mutex
	lines   chan lineOrErr
	closed  chan struct{}
	once    sync.Once

	mu sync.Mutex
	// surrogates maps the surrogate ids in flight to the ids their requests were sent with; pending maps
	// those ids (as sent) back, for a notifications/cancelled naming one.
	surrogates map[string]json.RawMessage
	pending    map[string]string
}

// readLines reads stdin line by line (lines are never longer than limit in memory) until it ends or the
// connection closes. A read goroutine lets Close end a Read blocked on stdin.
func (c *stdioConn) readLines(r *bufio.Reader, limit int) {
	for {
		var line []byte
		tooLong := false
		var err error
		for {
			var chunk []byte
			chunk, err = r.ReadSlice('\n')
			if !tooLong {
				if len(line)+len(chunk) > limit {
					tooLong, line = true, nil
				} else {
					line = append(line, chunk...)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			select {
			case c.lines <- lineOrErr{line: line, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.lines <- lineOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// Read returns the next message the server takes, answering every other line itself.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l lineOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		if l.tooLong {
			if err := c.writeLine(errorAnswer(nil, &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: the line is longer than the limit"})); err != nil {
				return nil, err
			}
			continue
		}
		msg, id, rerr := checkMessage(l.line)
		if rerr != nil {
			if err := c.writeLine(errorAnswer(id, rerr)); err != nil {
				return nil, err
			}
			continue
		}
		if msg.ignore {
			continue
		}
		decoded, err := jsonrpc.DecodeMessage(msg.body)
		if err != nil { // checkMessage let through what the SDK cannot read: a fault of this file
			if err := c.writeLine(errorAnswer(msg.id, &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()})); err != nil {
				return nil, err
			}
			continue
		}
		req, ok := decoded.(*jsonrpc.Request)
		if !ok {
			continue
		}
		c.track(req, msg)
		header := http.Header{}
		if msg.id != nil {
			header.Set(jsonrpcIDHeader, string(msg.id))
		}
		req.Extra = &mcp.RequestExtra{Header: header}
		return req, nil
	}
}

// track remembers a surrogate id until its answer is written, and points a cancellation at the request it
// names.
func (c *stdioConn) track(req *jsonrpc.Request, msg *checked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if msg.surrogate != "" {
		c.surrogates[msg.surrogate] = msg.id
		c.pending[string(msg.id)] = msg.surrogate
	}
	if req.Method != "notifications/cancelled" || len(c.pending) == 0 {
		return
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	if s, ok := c.pending[string(p["requestId"])]; ok {
		p["requestId"], _ = json.Marshal(s)
		req.Params, _ = json.Marshal(p)
	}
}

// Write writes a message as one line, with a request's own id back in place of its surrogate.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		codeBareError(resp)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("error encoding a message: %w", err)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if s, ok := resp.ID.Raw().(string); ok && strings.HasPrefix(s, surrogatePrefix) {
			c.mu.Lock()
			id, found := c.surrogates[s]
			delete(c.surrogates, s)
			delete(c.pending, string(id))
			c.mu.Unlock()
			if found {
				data = restoreID(data, s, id)
			}
		}
	}
	return c.writeLine(data)
}

func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Close ends the session; stdin and stdout stay open (they are the process's).
func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: a stdio session has none.
func (c *stdioConn) SessionID() string { return "" }

// httpAnswer wraps /mcp's response writer: it puts a request's own id back in place of its surrogate, and
// turns the SDK's plain-text HTTP errors (a wrong Accept or Content-Type, an unsupported protocol version,
// an HTTP method other than POST) into JSON-RPC error objects with the request's id.
type httpAnswer struct {
	http.ResponseWriter
	id        json.RawMessage
	surrogate string
	// plain is set when the SDK began a plain-text error; its text is kept in text.
	plain  bool
	status int
	text   bytes.Buffer
}

func (w *httpAnswer) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.plain, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *httpAnswer) Write(b []byte) (int, error) {
	if w.plain {
		return w.text.Write(b)
	}
	// The SDK writes each message (an event of a stream, or a JSON body) in one Write. Its errors are coded
	// while the id is still the surrogate, which the SDK reads back unchanged.
	if _, err := w.ResponseWriter.Write(restoreID(codeBareErrors(b), w.surrogate, w.id)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush sends what was written (the SDK flushes each event of a stream).
func (w *httpAnswer) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.plain {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the brain's writer (deadlines), past the methods defined here.
func (w *httpAnswer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the JSON-RPC error a plain-text error became.
func (w *httpAnswer) finish() {
	if !w.plain {
		return
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	if w.status >= 500 {
		code = jsonrpc.CodeInternalError
	}
	writeAnswer(w.ResponseWriter, w.status, errorAnswer(w.id, &rpcError{code, strings.TrimSpace(w.text.String())}))
}

// writeAnswer writes one JSON-RPC message as an HTTP answer.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// codeBareError gives an error answer without a JSON-RPC code one: the SDK refuses some requests with a bare
// error (code 0) before any handler (one sent before initialize, initialize's params that do not decode),
// all of them a client's mistake.
func codeBareError(resp *jsonrpc.Response) bool {
	if resp.Error == nil {
		return false
	}
	var coded *jsonrpc.Error
	if errors.As(resp.Error, &coded) && coded.Code != 0 {
		return false
	}
	resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + resp.Error.Error()}
	return true
}

// bareErrorMark is in every error answer without a code, as the SDK encodes one.
var bareErrorMark = []byte(`"error":{"code":0,`)

// codeBareErrors codes the bare errors in what the SDK writes to /mcp: an event stream's data lines, or one
// JSON message.
func codeBareErrors(data []byte) []byte {
	if !bytes.Contains(data, bareErrorMark) {
		return data
	}
	recode := func(msg []byte) []byte {
		decoded, err := jsonrpc.DecodeMessage(msg)
		resp, ok := decoded.(*jsonrpc.Response)
		if err != nil || !ok || !codeBareError(resp) {
			return msg
		}
		if out, err := jsonrpc.EncodeMessage(resp); err == nil {
			return out
		}
		return msg
	}
	if data[0] == '{' {
		return recode(data)
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if payload, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			lines[i] = append([]byte("data: "), recode(payload)...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}
