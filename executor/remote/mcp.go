package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

const (
	// stdioTerminateGrace is how long closing a stdio server waits for it to exit on its own once its stdin
	// is closed, before SIGTERM (and as long again before SIGKILL). Many servers only exit on a signal.
	stdioTerminateGrace = time.Second
	// connectTimeout bounds starting a server and the MCP handshake.
	connectTimeout = time.Minute
	// stdioWaitDelay bounds how long closing waits for a server's output pipes once it has exited, so a
	// grandchild holding them open cannot hold up the executor.
	stdioWaitDelay = time.Second
	// httpStreamRetries is how often a broken response stream of an HTTP server is resumed before the
	// session counts as lost. One: a blip is survived, a dead server fails the call promptly.
	httpStreamRetries = 1
	// maxResultText bounds the text a result or an error message takes from a remote's content.
	maxResultText = 1 << 20
	// maxErrorText bounds the remote's text in a failed receipt's message.
	maxErrorText = 2000
	// maxEmbeddedText bounds the text of one embedded resource kept in a result.
	maxEmbeddedText = 64 << 10
	// codeRejectedByTransport is the JSON-RPC code the SDK gives a request its transport could not deliver
	// (the HTTP request failed, or the server answered with an error status): not an answer from the tool.
	codeRejectedByTransport = -32005
)

// inheritedEnv are the executor's variables a stdio server gets besides its own "env": enough to run a
// program, none of the executor's secrets (DATABASE_URL, provider keys).
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "LANG", "LC_ALL", "TZ"}

// errPoolClosed refuses calls that arrive after the executor closed its MCP connections.
var errPoolClosed = errors.New("the executor's MCP connections are closed")

// mcpPool holds one client session per MCP server of the registry, opened on the first call of one of its
// tools and shared by every later call: an MCP session multiplexes requests, so concurrent calls need no
// more. A session that ends (the process died, the connection broke) is dropped, and the next call opens
// a new one.
type mcpPool struct {
	reg    *registry.Registry
	opts   Options
	client *mcp.Client
	// ctx bounds the pool's connects; close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[string]*mcpConn
	closed bool
	// closing tracks connects and closes running in the background, so close waits for them too.
	closing sync.WaitGroup

	// files keeps the binary payloads of results (see payloads), and base64MinBytes is EnvBase64MinBytes.
	files          *filestore.Store
	base64MinBytes int
}

func newMCPPool(reg *registry.Registry, opts Options) *mcpPool {
	log := opts.Log
	client := mcp.NewClient(&mcp.Implementation{Name: "gem-executor", Version: executor.Version}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: a call's input is all a remote tool gets.
		Capabilities: &mcp.ClientCapabilities{},
		Logger:       slog.New(zerolog.NewSlogHandler(log)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	return &mcpPool{reg: reg, opts: opts, client: client, ctx: ctx, cancel: cancel, conns: map[string]*mcpConn{},
		files: filestore.FromEnv(opts.Getenv), base64MinBytes: Base64MinBytesDefault}
}

// conn returns the pool's entry for a server.
func (p *mcpPool) conn(server *registry.MCPServer) *mcpConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[server.Name]
	if !ok {
		c = &mcpConn{pool: p, server: server, log: p.opts.Log.With().Str("mcp_server", server.Name).Logger()}
		p.conns[server.Name] = c
	}
	return c
}

// handler is the executor.Handler of an mcp tool: each call is one tools/call on the tool's server.
func (p *mcpPool) handler(t *registry.Tool) executor.Handler {
	server, _ := p.reg.MCPServer(t.Implementation.Server) // the registry check makes sure it is there
	conn := p.conn(server)
	output := compileOutputSchema(t.OutputSchema)
	return executor.Handler{
		Run: func(ctx context.Context, c *executor.Call) (any, error) {
			return conn.call(ctx, c, &payloads{store: p.files, call: c, tool: t.Implementation.RemoteTool, schema: output, guessMin: p.base64MinBytes})
		},
		RequiredEnv: ServerEnvRefs(server),
		// A call waits on another process: it must not hold up other calls' commits.
		Isolated: true,
	}
}

// close ends every session and stops every stdio server. Calls that come later fail.
func (p *mcpPool) close() {
	p.mu.Lock()
	p.closed = true
	p.cancel() // connects under way give up
	var sessions []*mcpSession
	for _, c := range p.conns {
		if c.sess != nil {
			sessions = append(sessions, c.sess)
			c.sess = nil
		}
	}
	p.mu.Unlock()
	if len(sessions) == 0 {
		p.closing.Wait()
		return
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.close)
	}
	wg.Wait()
	p.closing.Wait()
	p.opts.Log.Info().Int("sessions", len(sessions)).Dur("took", time.Since(start)).Msg("MCP connections closed")
}

// ServerEnvRefs returns the environment variables an MCP server's entry names as ${NAME} (in its env, URL
// and headers), sorted: what the executor needs set to reach it.
func ServerEnvRefs(s *registry.MCPServer) []string {
	var names []string
	add := func(v string) {
		for _, n := range registry.EnvRefs(v) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, v := range s.Env {
		add(v)
	}
	add(s.URL)
	for _, v := range s.Headers {
		add(v)
	}
	sort.Strings(names)
	return names
}

// mcpConn is the pool's entry for one server: its current session, if any.
type mcpConn struct {
	pool   *mcpPool
	server *registry.MCPServer
	log    zerolog.Logger
	// sess is the open session (nil: none); guarded by pool.mu.
	sess *mcpSession
	// dialing is the connect under way (nil: none), which every call that needs a session waits for;
	// guarded by pool.mu.
	dialing *dial
}

// dial is one connect, shared by the calls waiting for it.
type dial struct {
	done chan struct{}
	sess *mcpSession
	err  error
}

// mcpSession is one client session with a server.
type mcpSession struct {
	cs *mcp.ClientSession
	// done is closed once the session has ended (the process exited, the connection broke, or close).
	done chan struct{}
	// refused: an HTTP server answered a request of this session with 400 or 404, which is what servers do
	// with a session they no longer know (they restarted). The request was not run.
	refused atomic.Bool
	// pid is a stdio server's process id (0 for HTTP), for logs and process-group cleanup.
	pid int
}

func (s *mcpSession) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// close ends the session; for a stdio server, it closes its stdin, waits, and then signals it and
// whatever it started (its process group).
func (s *mcpSession) close() {
	_ = s.cs.Close()
	if s.pid > 0 {
		killProcessGroup(s.pid)
	}
}

// call runs one call as a tools/call on the server. See docs/mcp-tools.md for how outcomes map to
// receipts.
func (c *mcpConn) call(ctx context.Context, call *executor.Call, files *payloads) (any, error) {
	t := call.Tool
	params := &mcp.CallToolParams{Name: t.Implementation.RemoteTool, Arguments: call.Input}
	refused := &httpRefusal{}
	ctx = context.WithValue(ctx, httpRefusalKey{}, refused)
	for try := 1; ; try++ {
		s, err := c.session(ctx)
		if err != nil {
			return nil, c.connectError(ctx, t, err)
		}
		res, err := s.cs.CallTool(ctx, params)
		if err == nil {
			if t.HasOutsideEffects() && !res.IsError {
				call.RecordOutside(registry.OutsideEffect{Kind: "mcp", Target: c.server.Name + "/" + t.Implementation.RemoteTool})
			}
			return toolResult(c.server.Name, t, res, files)
		}
		if ctx.Err() != nil {
			// The executor turns the expired deadline into a timeout receipt; the SDK has told the server
			// the request is cancelled.
			return nil, ctx.Err()
		}
		var rpcErr *jsonrpc.Error
		answered := errors.As(err, &rpcErr) && rpcErr.Code != codeRejectedByTransport
		if answered && (!s.refused.Load() || try > 1) {
			// The server answered: it refused the call (unknown tool, invalid arguments), or refused a fresh
			// session too.
			if s.refused.Load() {
				c.drop(s, err)
			}
			return nil, &executor.Error{Code: registry.CodeRemoteError,
				Message: fmt.Sprintf("MCP server %s refused tools/call of %s: %s (JSON-RPC error %d)", c.server.Name, t.Implementation.RemoteTool, clip(rpcErr.Message, maxErrorText), rpcErr.Code),
				Details: map[string]any{"server": c.server.Name, "tool": t.Implementation.RemoteTool, "rpc_code": rpcErr.Code, "rpc_message": clip(rpcErr.Message, maxErrorText)}}
		}
		c.drop(s, err)
		sent := !notSent(err, s)
		if !sent && try == 1 {
			continue // the request never left: a new session may take it
		}
		return nil, c.lostError(t, err, sent, refused)
	}
}

// httpRefusalKey keys, in a tools/call's context, where sessionTransport notes an HTTP server's refusal.
type httpRefusalKey struct{}

// httpRefusal is the last error status an HTTP server answered a call's requests with, and its Retry-After:
// the SDK's error says only the status's text.
type httpRefusal struct {
	mu         sync.Mutex
	status     int
	retryAfter string
}

func (r *httpRefusal) note(resp *http.Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
}

// addTo adds the refusal, if any, to a receipt's error details, and returns its status (0: none).
func (r *httpRefusal) addTo(details map[string]any) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != 0 {
		details["status"] = r.status
	}
	if r.retryAfter != "" {
		details["retry_after"] = r.retryAfter
	}
	return r.status
}

// session returns the open session, or waits for one to open. The connect runs in the background, bounded
// by connectTimeout and not by the call: a call that gives up (its timeout) leaves the server starting for the
// next call.
func (c *mcpConn) session(ctx context.Context) (*mcpSession, error) {
	p := c.pool
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if s := c.sess; s != nil {
		if s.alive() {
			p.mu.Unlock()
			return s, nil
		}
		c.forget(s, errors.New("the session ended"))
	}
	d := c.dialing
	if d == nil {
		d = &dial{done: make(chan struct{})}
		c.dialing = d
		p.closing.Add(1)
		go c.dial(d)
	}
	p.mu.Unlock()
	select {
	case <-d.done:
		return d.sess, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dial connects, makes the session the server's, and wakes the calls waiting for it.
func (c *mcpConn) dial(d *dial) {
	p := c.pool
	defer p.closing.Done()
	ctx, cancel := context.WithTimeout(p.ctx, connectTimeout)
	defer cancel()
	s, err := c.connect(ctx)
	if err != nil {
		c.log.Warn().Err(err).Msg("MCP server could not be connected")
	}
	p.mu.Lock()
	c.dialing = nil
	if err == nil && p.closed {
		err = errPoolClosed
		defer s.close()
		s = nil
	}
	if err == nil {
		c.sess = s
	}
	d.sess, d.err = s, err
	close(d.done)
	p.mu.Unlock()
}

// drop forgets a session that failed and closes it in the background (a stdio server is reaped, and
// killed if it still runs). The next call opens a new session.
func (c *mcpConn) drop(s *mcpSession, cause error) {
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	c.forget(s, cause)
}

// forget is drop with pool.mu held.
func (c *mcpConn) forget(s *mcpSession, cause error) {
	if c.sess != s {
		return // dropped already
	}
	c.sess = nil
	p := c.pool
	p.closing.Add(1)
	c.identify(c.log.Warn().Err(cause), s).Msg("MCP session lost; the next call reconnects")
	go func() {
		defer p.closing.Done()
		s.close()
	}()
}

// missingEnvError is a server setting naming variables that are not set.
type missingEnvError struct {
	server string
	names  []string
}

func (e *missingEnvError) Error() string {
	return fmt.Sprintf("MCP server %s needs %s, which the executor's environment does not set", e.server, strings.Join(e.names, ", "))
}

// connect opens a session with the server: it starts a stdio server's command, or opens a streamable-HTTP
// session. ctx bounds the handshake only; the session outlives it.
func (c *mcpConn) connect(ctx context.Context) (*mcpSession, error) {
	start := time.Now()
	s := &mcpSession{done: make(chan struct{})}
	transport, cmd, err := c.pool.transport(c.server, s, c.log)
	if err != nil {
		return nil, err
	}
	cs, err := c.pool.client.Connect(ctx, transport, nil)
	if err != nil {
		if cmd != nil && cmd.Process != nil {
			// The handshake failed: stop and reap the server (a no-op if the SDK has already).
			killProcessGroup(cmd.Process.Pid)
			_ = cmd.Wait()
		}
		return nil, err
	}
	s.cs = cs
	if cmd != nil {
		s.pid = cmd.Process.Pid
	}
	go func() {
		err := cs.Wait()
		close(s.done)
		// Reap a server that died at once, not at the next call.
		c.drop(s, fmt.Errorf("the session ended: %v", err))
	}()
	c.identify(c.log.Info().Str("transport", c.server.Transport()), s).Dur("took", time.Since(start)).Msg("MCP server connected")
	return s, nil
}

// identify adds to a log line what tells the session's server apart: a stdio server's process id, an HTTP
// server's URL as the registry writes it (its ${ENV} references unexpanded: they may hold secrets).
func (c *mcpConn) identify(ev *zerolog.Event, s *mcpSession) *zerolog.Event {
	if s.pid > 0 {
		return ev.Int("pid", s.pid)
	}
	return ev.Str("url", c.server.URL)
}

// transport builds the transport for one session with server, its ${ENV} references expanded. For a
// stdio server it also returns the command (started by Connect).
func (p *mcpPool) transport(server *registry.MCPServer, s *mcpSession, log zerolog.Logger) (mcp.Transport, *exec.Cmd, error) {
	var missing []string
	expand := func(v string) string {
		out, miss := registry.ExpandEnv(v, p.opts.Getenv)
		for _, m := range miss {
			if !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
		return out
	}
	if server.Transport() == "stdio" {
		var env []string
		for _, name := range inheritedEnv {
			if v := p.opts.Getenv(name); v != "" {
				env = append(env, name+"="+v)
			}
		}
		for k, v := range server.Env {
			env = append(env, k+"="+expand(v))
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, nil, &missingEnvError{server: server.Name, names: missing}
		}
		cmd := exec.Command(server.Command, server.Args...)
		cmd.Env = env
		cmd.Dir = server.Dir
		cmd.Stderr = &stderrLog{log: log}
		cmd.WaitDelay = stdioWaitDelay
		setProcessGroup(cmd)
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: stdioTerminateGrace}, cmd, nil
	}
	endpoint := expand(server.URL)
	headers := make(http.Header, len(server.Headers))
	for k, v := range server.Headers {
		headers.Set(k, expand(v))
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, nil, &missingEnvError{server: server.Name, names: missing}
	}
	base := http.DefaultTransport
	if p.opts.HTTPClient != nil && p.opts.HTTPClient.Transport != nil {
		base = p.opts.HTTPClient.Transport
	}
	return &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: &sessionTransport{base: base, headers: headers, session: s}},
		// Server-initiated messages (list changes, logs) are of no use to the executor: no standing GET.
		DisableStandaloneSSE: true,
		MaxRetries:           httpStreamRetries,
	}, nil, nil
}

// sessionTransport adds a server's headers to every request of a session and notices when the server
// refuses the session.
type sessionTransport struct {
	base    http.RoundTripper
	headers http.Header
	session *mcpSession
}

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header[k] = v
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && req.Header.Get("Mcp-Session-Id") != "" &&
		(resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest) {
		t.session.refused.Store(true)
	}
	if refusal, ok := req.Context().Value(httpRefusalKey{}).(*httpRefusal); ok && err == nil && resp.StatusCode >= 400 {
		refusal.note(resp)
	}
	return resp, err
}

// notSent reports whether a failed tools/call certainly never reached the server: the connection was
// already closed, the process gone (a write to its stdin failed), the server unreachable, or the server
// refused the session. The SDK wraps the POST's own dial error; a failed resumption of a response stream
// (the request was sent) reaches us as text only, so it does not count.
func notSent(err error, s *mcpSession) bool {
	var opErr *net.OpError
	return s.refused.Load() ||
		errors.Is(err, mcp.ErrConnectionClosed) ||
		errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		(errors.As(err, &opErr) && opErr.Op == "dial")
}

// connectError is the outcome of a call whose session could not be opened: nothing was sent.
func (c *mcpConn) connectError(ctx context.Context, t *registry.Tool, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var me *missingEnvError
	if errors.As(err, &me) {
		return executor.NotConfigured(me.Error(), me.names,
			fmt.Sprintf("Set %s in the executor's environment (mcp_servers.%s names it).", strings.Join(me.names, ", "), me.server))
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		reason := fmt.Sprintf("MCP server %s cannot be started: %v", c.server.Name, err)
		return executor.NotConfigured(reason, nil,
			fmt.Sprintf("Install %s on the executor's machine, or fix mcp_servers.%s.command (and dir).", c.server.Command, c.server.Name))
	}
	if errors.Is(err, errPoolClosed) {
		return executor.Retryable(err) // the executor is stopping: another one takes the call
	}
	cause := fmt.Errorf("could not connect to MCP server %s: %w", c.server.Name, err)
	if t.RunsAtMostOnce() {
		// Nothing was sent, but a retry of such a call would end outcome_unknown: say what happened now.
		return &executor.Error{Code: registry.CodeRemoteError, Message: cause.Error() + "; the call was not sent",
			Details: map[string]any{"server": c.server.Name, "tool": t.Implementation.RemoteTool, "sent": false}}
	}
	return executor.Retryable(cause)
}

// lostError is the outcome of a call whose session broke, or whose HTTP server refused it (refused: its
// status and Retry-After, kept in the receipt). A call that may have reached the server is retried only when
// the tool may run twice.
func (c *mcpConn) lostError(t *registry.Tool, err error, sent bool, refused *httpRefusal) error {
	repeatable := !t.RunsAtMostOnce() && (!sent || t.Idempotency.Mode == registry.ModeSafeRetry || t.Idempotency.Mode == registry.ModeKeyed)
	cause := fmt.Errorf("the connection to MCP server %s was lost during tools/call of %s: %w", c.server.Name, t.Implementation.RemoteTool, err)
	details := map[string]any{"server": c.server.Name, "tool": t.Implementation.RemoteTool, "sent": sent}
	if status := refused.addTo(details); status != 0 {
		cause = fmt.Errorf("MCP server %s answered tools/call of %s with HTTP %d: %w", c.server.Name, t.Implementation.RemoteTool, status, err)
	}
	if repeatable {
		return executor.RetryableWith(cause, details)
	}
	msg := cause.Error() + "; the call was not sent"
	if sent {
		msg = cause.Error() + "; it may or may not have run on the server, and is not retried because the tool may not run twice"
	}
	return &executor.Error{Code: registry.CodeRemoteError, Message: msg, Details: details}
}

// toolResult turns a tools/call result into the call's result: the structured content if any, else
// {"text": ..., "content": [...]} (see contentResult), with the binary payloads in files (see payloads).
// isError is a failed receipt, which keeps no file.
func toolResult(server string, t *registry.Tool, res *mcp.CallToolResult, files *payloads) (any, error) {
	if res.IsError {
		failed := *files
		failed.call = nil
		out, err := contentResult(res.Content, &failed)
		if err != nil {
			return nil, err
		}
		text, _ := out["text"].(string)
		if text == "" {
			text = "(no text)"
		}
		details := map[string]any{"server": server, "tool": t.Implementation.RemoteTool}
		if content, ok := out["content"]; ok {
			details["content"] = content
		}
		if res.StructuredContent != nil {
			if details["structured_content"], err = failed.structured(res.StructuredContent); err != nil {
				return nil, err
			}
		}
		return nil, &executor.Error{Code: registry.CodeRemoteError, Details: details,
			Message: fmt.Sprintf("MCP tool %s of server %s failed: %s", t.Implementation.RemoteTool, server, clip(text, maxErrorText))}
	}
	if res.StructuredContent != nil {
		// The content blocks are the structured content's text version, and not the result; files among
		// them are kept all the same (effects.files_written lists them).
		if _, err := contentResult(res.Content, files); err != nil {
			return nil, err
		}
		return files.structured(res.StructuredContent)
	}
	return contentResult(res.Content, files)
}

// contentResult is a result without structured content: {"text": the text blocks joined by newlines}, and
// when there are other blocks, "content": a summary of each (type, MIME type, size, URI), with the text of
// embedded text resources up to maxEmbeddedText. The data of an image, audio or blob resource goes to the
// file store (files), and its summary gives its ref; base64 is never copied into a result.
func contentResult(content []mcp.Content, files *payloads) (map[string]any, error) {
	var texts []string
	var others []map[string]any
	for i, block := range content {
		name := fmt.Sprintf("%s-content-%d", files.tool, i)
		switch b := block.(type) {
		case *mcp.TextContent:
			texts = append(texts, b.Text)
		case *mcp.ImageContent:
			item := map[string]any{}
			if err := files.contentBlock("image", b.MIMEType, name, b.Data, item); err != nil {
				return nil, err
			}
			others = append(others, item)
		case *mcp.AudioContent:
			item := map[string]any{}
			if err := files.contentBlock("audio", b.MIMEType, name, b.Data, item); err != nil {
				return nil, err
			}
			others = append(others, item)
		case *mcp.ResourceLink:
			link := map[string]any{"type": "resource_link", "uri": b.URI, "name": b.Name}
			if b.MIMEType != "" {
				link["mimeType"] = b.MIMEType
			}
			if b.Description != "" {
				link["description"] = b.Description
			}
			others = append(others, link)
		case *mcp.EmbeddedResource:
			item := map[string]any{"type": "resource"}
			if r := b.Resource; r != nil {
				item["uri"] = r.URI
				if r.MIMEType != "" {
					item["mimeType"] = r.MIMEType
				}
				if r.Blob != nil {
					if n := uriName(r.URI); n != "" {
						name = n
					}
					if err := files.contentBlock("resource", r.MIMEType, name, r.Blob, item); err != nil {
						return nil, err
					}
				} else {
					item["bytes"] = len(r.Text)
					item["text"] = clip(r.Text, maxEmbeddedText)
				}
			}
			others = append(others, item)
		default:
			kind := "unknown"
			if raw, err := json.Marshal(block); err == nil {
				var head struct {
					Type string `json:"type"`
				}
				if json.Unmarshal(raw, &head) == nil && head.Type != "" {
					kind = head.Type
				}
			}
			others = append(others, map[string]any{"type": kind})
		}
	}
	out := map[string]any{"text": clip(strings.Join(texts, "\n"), maxResultText)}
	if len(others) > 0 {
		out["content"] = others
	}
	return out, nil
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (truncated)"
}

// stderrLog logs a stdio server's standard error, a line at a time, at debug level.
type stderrLog struct {
	log     zerolog.Logger
	partial []byte
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.emit(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 64<<10 {
		w.emit(w.partial)
		w.partial = nil
	}
	return len(p), nil
}

func (w *stderrLog) emit(line []byte) {
	w.log.Debug().Str("stderr", clip(string(line), 1000)).Msg("MCP server output")
}
