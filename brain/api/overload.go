package api

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/testsignal"
	"github.com/labstack/echo/v4"
)

// Admission control (docs/brain.md#overload). The routes that plan, enqueue calls and wait for their
// receipts — POST /brain/run, /calls, /operator/chat, /agents/:slug/chat, the approvals, MCP's tools/call —
// pass through one limiter: at most MaxInFlight of them run at once, up to MaxQueue more wait in line
// (first come, first served) for at most QueueWait, and any other gets 503 overloaded with a Retry-After.
// A request that is not admitted costs nothing but the wait, so an overloaded brain answers its clients
// quickly, in bounded time, instead of letting every request slow down without limit. Cheap reads (/health,
// GET /calls, /metrics, the studio) and long-lived streams (the devices' WebSockets, the studio's events) are
// never limited: health answers under overload and a stream never holds a slot.
//
// `brain mcp` (stdio) is not limited: it serves one client, over its own process, not this HTTP service.

// Defaults and bounds of AdmissionConfig.
const (
	// MaxQueueFactor is the default queue: this many requests per slot may wait.
	MaxQueueFactor = 4
	// QueueWaitDefault is how long a request waits in line by default.
	QueueWaitDefault = 2 * time.Second
	// QueueWaitMax is the longest wait in line that may be configured.
	QueueWaitMax = time.Minute
	// NoQueue as MaxQueue: a request that finds every slot taken is refused at once (GEM_BRAIN_MAX_QUEUE=0).
	NoQueue = -1
	// poolSizeDefault is gemsql.NewPool's pool size, for a server built without a pool.
	poolSizeDefault = 20
	// retryAfterMax caps the Retry-After the brain suggests.
	retryAfterMax = time.Minute
)

// Reasons a request is refused (the label of gem_admission_rejected_total).
const (
	RejectQueueFull   = "queue_full"
	RejectWaitTimeout = "wait_timeout"
)

// AdmissionConfig limits the expensive routes. The zero value means the defaults.
type AdmissionConfig struct {
	// Off admits every request at once, as before there was a limit (GEM_BRAIN_MAX_IN_FLIGHT=off).
	Off bool
	// MaxInFlight is how many expensive requests run at once. Defaults to MaxInFlightDefault of the
	// database pool's size: 64 with the default pool of 20 (GEM_BRAIN_MAX_IN_FLIGHT).
	MaxInFlight int
	// MaxQueue is how many more may wait for a slot. Defaults to MaxQueueFactor × MaxInFlight; NoQueue for
	// none (GEM_BRAIN_MAX_QUEUE, where 0 means none).
	MaxQueue int
	// QueueWait is how long a request waits for a slot before it is refused. Defaults to 2s, at most 1m
	// (GEM_BRAIN_QUEUE_WAIT).
	QueueWait time.Duration
}

// MaxInFlightDefault is the default MaxInFlight for a database pool of poolSize connections: 64, or three
// quarters of a larger pool. A slot is held for a request's whole life, most of which a chat spends waiting
// for its model and a run for its receipts, while it holds a connection only for its own short statements;
// so the limit bounds the work the brain has taken on, not connections, and must leave room for many chats
// at once (each turn of a real model takes seconds). Tying it to the pool's 20 would cap a brain at 15
// concurrent chats.
func MaxInFlightDefault(poolSize int) int {
	return max(inFlightFloor, poolSize-poolSize/4)
}

// inFlightFloor is the least default MaxInFlight.
const inFlightFloor = 64

// WithDefaults returns a copy with zero fields set to their defaults for a pool of poolSize connections
// (0: gemsql's default pool).
func (a AdmissionConfig) WithDefaults(poolSize int) AdmissionConfig {
	if poolSize <= 0 {
		poolSize = poolSizeDefault
	}
	if a.MaxInFlight == 0 {
		a.MaxInFlight = MaxInFlightDefault(poolSize)
	}
	if a.MaxQueue == 0 {
		a.MaxQueue = MaxQueueFactor * a.MaxInFlight
	}
	if a.QueueWait == 0 {
		a.QueueWait = QueueWaitDefault
	}
	return a
}

// Validate reports what is wrong with the configuration, naming the variables to set.
func (a AdmissionConfig) Validate() error {
	if a.Off {
		return nil
	}
	var errs []error
	if a.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("MaxInFlight must be at least 1, not %d (GEM_BRAIN_MAX_IN_FLIGHT; off switches the limit off)", a.MaxInFlight))
	}
	if a.MaxQueue < NoQueue {
		errs = append(errs, fmt.Errorf("MaxQueue must be at least 0, not %d (GEM_BRAIN_MAX_QUEUE)", a.MaxQueue))
	}
	if a.QueueWait < 0 || a.QueueWait > QueueWaitMax {
		errs = append(errs, fmt.Errorf("QueueWait must be between 0 and %s, not %s (GEM_BRAIN_QUEUE_WAIT)", QueueWaitMax, a.QueueWait))
	}
	return errors.Join(errs...)
}

// limiter admits requests: MaxInFlight slots, a line of at most MaxQueue waiting for one, served in order.
type limiter struct {
	cfg AdmissionConfig // with its defaults

	mu       sync.Mutex
	inFlight int
	// line holds the *waiting requests, the first in line at the front. A slot freed while someone waits
	// passes straight to the first in line, so inFlight < MaxInFlight only when nobody waits.
	line list.List
	// service is the recent mean time a request held its slot (a moving average), for Retry-After.
	service time.Duration
	// rejected counts the requests refused, by reason.
	rejectedFull, rejectedTimeout uint64

	testSignals limiterTestSignals
}

// limiterTestSignals are the limiter's events a test waits for; they do nothing unless a test inits them.
type limiterTestSignals struct {
	// lineChanged is the line's length after a request joined or left it: the limiter's own, or the
	// server's (ServerTestSignals.LineChanged) when the limiter is a server's.
	lineChanged *testsignal.Signal[int]
	// slotFreed is the server's signal (ServerTestSignals.SlotFreed), when the limiter is a server's.
	slotFreed *testsignal.Signal[struct{}]
}

// waiting is a request in line; ready is closed when a slot is handed to it.
type waiting struct{ ready chan struct{} }

// rejection is why a request was not admitted, and what the 503 says.
type rejection struct {
	reason     string
	retryAfter int // whole seconds, at least 1
	inFlight   int
	queued     int
}

func newLimiter(cfg AdmissionConfig) *limiter {
	if cfg.MaxQueue == NoQueue {
		cfg.MaxQueue = 0
	}
	return &limiter{cfg: cfg, testSignals: limiterTestSignals{lineChanged: new(testsignal.Signal[int])}}
}

// acquire takes a slot, waiting in line for at most QueueWait when every slot is taken. It returns the
// function that gives the slot back (call it once), or a rejection, or ctx's error when the client went away
// while it waited (it has then left the line).
func (l *limiter) acquire(ctx context.Context) (release func(), rej *rejection, err error) {
	l.mu.Lock()
	if l.inFlight < l.cfg.MaxInFlight && l.line.Len() == 0 {
		l.inFlight++
		l.mu.Unlock()
		return l.releaser(), nil, nil
	}
	if l.line.Len() >= l.cfg.MaxQueue {
		l.rejectedFull++
		rej = l.rejectLocked(RejectQueueFull)
		l.mu.Unlock()
		return nil, rej, nil
	}
	w := &waiting{ready: make(chan struct{})}
	el := l.line.PushBack(w)
	l.testSignals.lineChanged.Signal(l.line.Len())
	l.mu.Unlock()

	timer := time.NewTimer(l.cfg.QueueWait)
	defer timer.Stop()
	select {
	case <-w.ready:
		return l.releaser(), nil, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	l.mu.Lock()
	select {
	case <-w.ready:
		// A slot was handed over at the moment the wait ended: it is this request's.
		l.mu.Unlock()
		if ctx.Err() != nil {
			l.release(0, false)
			return nil, nil, ctx.Err()
		}
		return l.releaser(), nil, nil
	default:
	}
	l.line.Remove(el)
	l.testSignals.lineChanged.Signal(l.line.Len())
	if ctx.Err() != nil {
		l.mu.Unlock()
		return nil, nil, ctx.Err()
	}
	l.rejectedTimeout++
	rej = l.rejectLocked(RejectWaitTimeout)
	l.mu.Unlock()
	return nil, rej, nil
}

// releaser returns the function that gives back a slot taken now, measuring how long it was held.
func (l *limiter) releaser() func() {
	start := time.Now()
	var once sync.Once
	return func() { once.Do(func() { l.release(time.Since(start), true) }) }
}

// release gives a slot back: to the first in line, else to the pool of free slots. A slot that served a
// request (served) updates the mean service time.
func (l *limiter) release(held time.Duration, served bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if served {
		if l.service == 0 {
			l.service = held
		} else {
			l.service += (held - l.service) / 8
		}
	}
	if front := l.line.Front(); front != nil {
		l.line.Remove(front)
		l.testSignals.lineChanged.Signal(l.line.Len())
		close(front.Value.(*waiting).ready)
		return
	}
	l.inFlight--
	if l.testSignals.slotFreed != nil {
		l.testSignals.slotFreed.Signal(struct{}{})
	}
}

// rejectLocked describes a refusal, with the time after which a slot is likely free for a new request: the
// requests in line before it and itself, shared among the slots, each taking the recent mean service time
// (at least 1 second, at most a minute).
func (l *limiter) rejectLocked(reason string) *rejection {
	queued := l.line.Len()
	wait := float64(l.service) * float64(queued+1) / float64(l.cfg.MaxInFlight)
	secs := int(math.Ceil(min(wait, float64(retryAfterMax)) / float64(time.Second)))
	return &rejection{reason: reason, retryAfter: max(secs, 1), inFlight: l.inFlight, queued: queued}
}

// stats reads the gauges and counters (for /metrics).
func (l *limiter) stats() (inFlight, queued int, rejectedFull, rejectedTimeout uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight, l.line.Len(), l.rejectedFull, l.rejectedTimeout
}

// admit is the middleware of the expensive routes; without a limiter (GEM_BRAIN_MAX_IN_FLIGHT=off) it
// passes every request. Put it after authentication, so a request without a valid token never holds a
// slot or a place in line.
func (s *Server) admit(next echo.HandlerFunc) echo.HandlerFunc {
	if s.admission == nil {
		return next
	}
	return func(c echo.Context) error {
		// The body is read first: a client that trickles its body holds no slot, and net/http notices a
		// client that goes away (ending the request's context, so it leaves the line) only once the body
		// has been read.
		if _, err := bufferBody(c.Request()); err != nil {
			return err
		}
		release, rej, err := s.admission.acquire(c.Request().Context())
		if err != nil {
			return err // the client went away while it waited
		}
		if rej != nil {
			return s.overloaded(c, rej)
		}
		defer release()
		return next(c)
	}
}

// overloaded answers a refused request: 503 overloaded, Retry-After, and what the limiter saw.
func (s *Server) overloaded(c echo.Context, rej *rejection) error {
	cfg := s.admission.cfg
	c.Response().Header().Set("Retry-After", strconv.Itoa(rej.retryAfter))
	msg := fmt.Sprintf("the brain is overloaded: %d requests are running and %d waiting, the most it takes; retry after %ds",
		rej.inFlight, rej.queued, rej.retryAfter)
	if rej.reason == RejectWaitTimeout {
		msg = fmt.Sprintf("the brain is overloaded: no slot came free within %s (%d requests running, %d waiting); retry after %ds",
			cfg.QueueWait, rej.inFlight, rej.queued, rej.retryAfter)
	}
	return &brain.Error{Code: brain.EOVERLOADED, Message: msg, Details: map[string]any{
		"reason": rej.reason, "in_flight": rej.inFlight, "queued": rej.queued, "limit": cfg.MaxInFlight,
		"max_queue": cfg.MaxQueue, "queue_wait_ms": cfg.QueueWait.Milliseconds(), "retry_after_s": rej.retryAfter}}
}

// admitToolCalls admits the MCP requests that call a tool (tools/call: a registry tool enqueues a call and
// waits for its receipt; gem.get_receipt and gem.approve wait too) like the other expensive routes. The rest
// of MCP passes: initialize, tools/list, the skills catalog and notifications are cheap, and GET (a stream)
// and DELETE hold nothing. It reads the body (already bounded by GEM_BRAIN_MAX_BODY) to see the method, and
// hands it on unchanged.
func (s *Server) admitToolCalls(next echo.HandlerFunc) echo.HandlerFunc {
	if s.admission == nil {
		return next
	}
	admitted := s.admit(next)
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodPost {
			return next(c)
		}
		body, err := bufferBody(req)
		if err != nil {
			return err
		}
		if !callsTool(body) {
			return next(c)
		}
		return admitted(c)
	}
}

// bufferBody reads the request's body (bounded by GEM_BRAIN_MAX_BODY: over it, the error is a 413) and
// puts it back, for the handler to read as if nothing had.
func bufferBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// callsTool says whether a JSON-RPC message (or a batch of them) is a tools/call. Anything it cannot read
// is left to the MCP server to refuse.
func callsTool(body []byte) bool {
	type message struct {
		Method string `json:"method"`
	}
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) > 0 && body[0] == '[' {
		var batch []message
		_ = json.Unmarshal(body, &batch)
		return slices.ContainsFunc(batch, func(m message) bool { return m.Method == "tools/call" })
	}
	var m message
	return json.Unmarshal(body, &m) == nil && m.Method == "tools/call"
}
