package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/testsignal"
	"github.com/labstack/echo/v4"
)

// Defaults of ConnLimits.
const (
	// HeaderTimeoutDefault bounds reading a request's headers.
	HeaderTimeoutDefault = 10 * time.Second
	// BodyTimeoutDefault bounds reading a request's body: 1 MiB (the largest, GEM_BRAIN_MAX_BODY) at 35 KB/s.
	BodyTimeoutDefault = 30 * time.Second
	// IdleTimeoutDefault closes a kept-alive connection that sends no new request.
	IdleTimeoutDefault = 2 * time.Minute
	// MaxConnsPerClientDefault bounds the connections open at once from one client address.
	MaxConnsPerClientDefault = 256
)

// ConnLimits bound what a client's connections may hold of the brain while it sends: a connection trickling
// its headers or body (one byte every few seconds) is closed once its bound passes, and one address cannot
// open connections without end. Responses are not bounded: SSE streams (/mcp, the studio's live view) and
// long waits (enqueue_and_wait) go on as long as they need.
type ConnLimits struct {
	// HeaderTimeout bounds reading a request's headers. Defaults to HeaderTimeoutDefault
	// (GEM_BRAIN_HEADER_TIMEOUT).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, read whole before the handler runs: a body still coming
	// when it passes is answered 408 request_timeout and the connection closed. Defaults to
	// BodyTimeoutDefault (GEM_BRAIN_BODY_TIMEOUT).
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request for this long. Defaults to
	// IdleTimeoutDefault (GEM_BRAIN_IDLE_TIMEOUT).
	IdleTimeout time.Duration
	// MaxConnsPerClient bounds the connections open at once from one client IP address; a connection
	// beyond it is answered 503 overloaded and closed. Defaults to MaxConnsPerClientDefault; NoConnLimit turns
	// it off (behind a proxy every client has the proxy's address) (GEM_BRAIN_MAX_CONNS_PER_CLIENT).
	MaxConnsPerClient int
}

// NoConnLimit as MaxConnsPerClient puts no bound on one address's connections.
const NoConnLimit = -1

// WithDefaults returns the limits with zero fields set to their defaults.
func (l ConnLimits) WithDefaults() ConnLimits {
	if l.HeaderTimeout == 0 {
		l.HeaderTimeout = HeaderTimeoutDefault
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = BodyTimeoutDefault
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = IdleTimeoutDefault
	}
	if l.MaxConnsPerClient == 0 {
		l.MaxConnsPerClient = MaxConnsPerClientDefault
	}
	return l
}

// Validate reports a negative bound (after WithDefaults).
func (l ConnLimits) Validate() error {
	if l.HeaderTimeout < 0 || l.BodyTimeout < 0 || l.IdleTimeout < 0 {
		return errors.New("the header, body and idle timeouts must be positive (GEM_BRAIN_HEADER_TIMEOUT, GEM_BRAIN_BODY_TIMEOUT, GEM_BRAIN_IDLE_TIMEOUT)")
	}
	if l.MaxConnsPerClient < NoConnLimit {
		return fmt.Errorf("MaxConnsPerClient must be positive, or NoConnLimit, not %d (GEM_BRAIN_MAX_CONNS_PER_CLIENT)", l.MaxConnsPerClient)
	}
	return nil
}

// readBodyWithin reads a request's body whole, within the read deadline limit, before the handler runs, and
// then lifts the deadline: a slow body cannot hold a handler (or its admission slot) while it trickles in,
// and once read nothing bounds how long the response may take. Requests without a body pass as they are.
func readBodyWithin(limit time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Body == nil || req.Body == http.NoBody {
				return next(c)
			}
			rc := http.NewResponseController(c.Response())
			if err := rc.SetReadDeadline(time.Now().Add(limit)); err != nil {
				return next(c) // not a connection that has deadlines (a test recorder)
			}
			// On an error the deadline stays: what is left of the body is then not read after the answer either.
			body, err := io.ReadAll(req.Body)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				c.Response().Header().Set("Connection", "close")
				return brain.Errorf(brain.EREQUESTTIMEOUT, "the request body did not arrive within %s (GEM_BRAIN_BODY_TIMEOUT)", limit)
			case err != nil:
				return err // too large (BodyLimit's 413), or the client went away
			}
			_ = rc.SetReadDeadline(time.Time{})
			req.Body = io.NopCloser(bytes.NewReader(body))
			return next(c)
		}
	}
}

// perClientListener accepts at most max connections open at once from one client IP address; it answers
// one more with a 503 and closes it.
type perClientListener struct {
	net.Listener
	max int

	mu   sync.Mutex
	open map[string]int

	// counted and released are told of each connection counted, and given back.
	counted, released *testsignal.Signal[string]
}

// limitPerClient wraps ln; max NoConnLimit returns ln. counted and released are told of each connection
// counted, and given back.
func limitPerClient(ln net.Listener, max int, counted, released *testsignal.Signal[string]) net.Listener {
	if max == NoConnLimit {
		return ln
	}
	return &perClientListener{Listener: ln, max: max, open: map[string]int{}, counted: counted, released: released}
}

func (l *perClientListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := conn.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			go refuseConn(conn, l.max)
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		l.counted.Signal(host)
		return &countedConn{Conn: conn, release: sync.OnceFunc(func() { l.release(host) })}, nil
	}
}

func (l *perClientListener) release(host string) {
	l.mu.Lock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
	l.mu.Unlock()
	l.released.Signal(host)
}

// countedConn gives its place back when closed.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// refuseConn answers a connection over its address's limit 503 overloaded, without reading its request,
// and closes it once the client has had a moment to read the answer.
func refuseConn(conn net.Conn, max int) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	body := fmt.Sprintf(`{"ok":false,"errors":[{"code":%q,"message":"this address has %d connections open to the brain, the most it may (GEM_BRAIN_MAX_CONNS_PER_CLIENT): close some or reuse them"}]}`,
		brain.EOVERLOADED, max)
	_, err := fmt.Fprintf(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		len(body), body)
	if err != nil {
		return
	}
	// Closing with the request unread would reset the connection, and the client might lose the answer:
	// end the sending side and drain what the client still sends until it closes (or the deadline).
	if tc, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}
