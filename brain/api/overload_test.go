package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// testLimiter is a limiter with its defaults filled in as New fills them.
func testLimiter(inFlight, queue int, wait time.Duration) *limiter {
	return newLimiter(AdmissionConfig{MaxInFlight: inFlight, MaxQueue: queue, QueueWait: wait}.WithDefaults(0))
}

// admitted is the outcome of an acquire made on another goroutine.
type admitted struct {
	release func()
	rej     *rejection
	err     error
}

// acquireAsync starts an acquire and returns where its outcome arrives.
func acquireAsync(ctx context.Context, l *limiter) <-chan admitted {
	ch := make(chan admitted, 1)
	go func() {
		release, rej, err := l.acquire(ctx)
		ch <- admitted{release, rej, err}
	}()
	return ch
}

// watchLine makes l report its line's changes to awaitQueued; call it before the requests awaited.
func watchLine(t *testing.T, l *limiter) {
	l.testSignals.lineChanged.Init(t)
}

// awaitQueued waits until the line, changed by a request joining or leaving it, holds n requests (watchLine).
func awaitQueued(t *testing.T, l *limiter, n int) {
	t.Helper()
	for l.testSignals.lineChanged.Wait() != n {
	}
}

func receive(t *testing.T, ch <-chan admitted) admitted {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("the acquire did not end")
		return admitted{}
	}
}

func requireWaiting(t *testing.T, ch <-chan admitted) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("admitted or refused while it should wait: %+v", a)
	default:
	}
}

// TestOverloadLimiterFIFO: slots go to the requests in line in the order they came, each as a slot frees.
func TestOverloadLimiterFIFO(t *testing.T) {
	t.Parallel()
	l := testLimiter(1, 3, time.Minute)
	watchLine(t, l)
	first, rej, err := l.acquire(context.Background())
	require.NoError(t, err)
	require.Nil(t, rej)
	var line []<-chan admitted
	for i := range 3 {
		line = append(line, acquireAsync(context.Background(), l))
		awaitQueued(t, l, i+1)
	}
	release := first
	for i, ch := range line {
		for _, later := range line[i:] {
			requireWaiting(t, later)
		}
		release()
		a := receive(t, ch)
		require.NoError(t, a.err)
		require.Nil(t, a.rej, "request %d in line is admitted", i)
		inFlight, queued, _, _ := l.stats()
		require.Equal(t, 1, inFlight, "the slot passed on, never more than one")
		require.Equal(t, 2-i, queued)
		release = a.release
	}
	release()
	release() // a second call gives back nothing more
	inFlight, queued, full, timeout := l.stats()
	require.Equal(t, [4]uint64{0, 0, 0, 0}, [4]uint64{uint64(inFlight), uint64(queued), full, timeout})
}

// TestOverloadLimiterQueueFull: beyond the line, a request is refused at once with what the limiter saw.
func TestOverloadLimiterQueueFull(t *testing.T) {
	t.Parallel()
	l := testLimiter(1, 1, time.Minute)
	watchLine(t, l)
	release, _, err := l.acquire(context.Background())
	require.NoError(t, err)
	waiting := acquireAsync(context.Background(), l)
	awaitQueued(t, l, 1)

	_, rej, err := l.acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, &rejection{reason: RejectQueueFull, retryAfter: 1, inFlight: 1, queued: 1}, rej)
	_, _, full, timeout := l.stats()
	require.Equal(t, uint64(1), full)
	require.Zero(t, timeout)

	release()
	a := receive(t, waiting)
	require.Nil(t, a.rej)
	a.release()
}

// TestOverloadLimiterNoQueue: with no line, a request that finds the slots taken is refused at once.
func TestOverloadLimiterNoQueue(t *testing.T) {
	t.Parallel()
	l := testLimiter(2, NoQueue, time.Minute)
	r1, _, _ := l.acquire(context.Background())
	r2, _, _ := l.acquire(context.Background())
	_, rej, err := l.acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, RejectQueueFull, rej.reason)
	require.Equal(t, 2, rej.inFlight)
	r1()
	r3, rej, _ := l.acquire(context.Background())
	require.Nil(t, rej)
	r2()
	r3()
}

// TestOverloadLimiterWaitTimeout: a request that waits longer than QueueWait is refused and leaves the line.
func TestOverloadLimiterWaitTimeout(t *testing.T) {
	t.Parallel()
	l := testLimiter(1, 4, 20*time.Millisecond)
	release, _, _ := l.acquire(context.Background())
	start := time.Now()
	_, rej, err := l.acquire(context.Background()) // nothing frees the slot: it can only time out
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Equal(t, RejectWaitTimeout, rej.reason)
	require.Equal(t, 1, rej.inFlight)
	require.Zero(t, rej.queued, "it left the line")
	_, queued, full, timeout := l.stats()
	require.Zero(t, queued)
	require.Zero(t, full)
	require.Equal(t, uint64(1), timeout)
	release()
	inFlight, _, _, _ := l.stats()
	require.Zero(t, inFlight)
}

// TestOverloadLimiterClientGone: a request whose client goes away leaves the line at once, and the slot a
// release frees goes to the next in line, not to it.
func TestOverloadLimiterClientGone(t *testing.T) {
	t.Parallel()
	l := testLimiter(1, 4, time.Minute)
	watchLine(t, l)
	release, _, _ := l.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	gone := acquireAsync(ctx, l)
	awaitQueued(t, l, 1)
	next := acquireAsync(context.Background(), l)
	awaitQueued(t, l, 2)

	cancel()
	a := receive(t, gone)
	require.ErrorIs(t, a.err, context.Canceled)
	require.Nil(t, a.rej)
	awaitQueued(t, l, 1)
	_, _, full, timeout := l.stats()
	require.Zero(t, full+timeout, "a client that left is not a refusal")

	release()
	b := receive(t, next)
	require.Nil(t, b.rej)
	b.release()
	inFlight, queued, _, _ := l.stats()
	require.Zero(t, inFlight)
	require.Zero(t, queued)
}

// TestOverloadRetryAfter: Retry-After is the line before a new request and itself, shared among the slots,
// at the recent mean service time; at least 1 second, at most a minute.
func TestOverloadRetryAfter(t *testing.T) {
	t.Parallel()
	l := testLimiter(2, 3, time.Minute)
	require.Equal(t, 1, l.rejectLocked(RejectQueueFull).retryAfter, "no history yet: 1s")

	l.release(3*time.Second, true) // as if a request had held a slot for 3s
	l.inFlight = 1                 // (release took one back)
	for range 3 {
		l.line.PushBack(&waiting{ready: make(chan struct{})})
	}
	require.Equal(t, 6, l.rejectLocked(RejectQueueFull).retryAfter, "(3 in line + 1) × 3s / 2 slots")
	l.release(11*time.Second, true) // the mean moves an eighth of the way: 4s; the slot goes to the first in line
	require.Equal(t, 4*time.Second, l.service)
	require.Equal(t, 6, l.rejectLocked(RejectWaitTimeout).retryAfter, "(2 + 1) × 4s / 2")
	l.service = time.Hour
	require.Equal(t, 60, l.rejectLocked(RejectWaitTimeout).retryAfter, "at most a minute")
	l.service = 1100 * time.Millisecond
	l.line.Init()
	require.Equal(t, 1, l.rejectLocked(RejectWaitTimeout).retryAfter, "whole seconds, rounded up: 0.55s → 1")
	l.service = 2100 * time.Millisecond
	require.Equal(t, 2, l.rejectLocked(RejectWaitTimeout).retryAfter, "1.05s → 2")
}

// TestOverloadLimiterNeverOverAdmits: many requests coming, waiting, giving up and leaving at once; never more
// than MaxInFlight run together, and nothing is left held or in line.
func TestOverloadLimiterNeverOverAdmits(t *testing.T) {
	t.Parallel()
	const slots = 3
	l := testLimiter(slots, 8, 5*time.Millisecond)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%7 == 0 {
				go cancel()
			}
			release, rej, err := l.acquire(ctx)
			if err != nil || rej != nil {
				return
			}
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Duration(i%3) * time.Millisecond) // work of varying length
			running.Add(-1)
			release()
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most.Load(), int32(slots))
	inFlight, queued, _, _ := l.stats()
	require.Zero(t, inFlight)
	require.Zero(t, queued)
}

// TestOverloadDefaults: the defaults follow the database pool, and nonsense is refused.
func TestOverloadDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, AdmissionConfig{MaxInFlight: 64, MaxQueue: 256, QueueWait: 2 * time.Second}, AdmissionConfig{}.WithDefaults(20))
	require.Equal(t, AdmissionConfig{MaxInFlight: 64, MaxQueue: 256, QueueWait: 2 * time.Second}, AdmissionConfig{}.WithDefaults(0), "gemsql's pool of 20")
	require.Equal(t, AdmissionConfig{MaxInFlight: 150, MaxQueue: 600, QueueWait: 2 * time.Second}, AdmissionConfig{}.WithDefaults(200), "three quarters of a large pool")
	require.Equal(t, 64, AdmissionConfig{}.WithDefaults(1).MaxInFlight, "a small pool: still 64")
	require.Equal(t, 75, AdmissionConfig{}.WithDefaults(100).MaxInFlight)
	require.Equal(t, AdmissionConfig{MaxInFlight: 3, MaxQueue: NoQueue, QueueWait: time.Second},
		AdmissionConfig{MaxInFlight: 3, MaxQueue: NoQueue, QueueWait: time.Second}.WithDefaults(20))
	require.Zero(t, newLimiter(AdmissionConfig{MaxInFlight: 3, MaxQueue: NoQueue}.WithDefaults(20)).cfg.MaxQueue)
	require.NoError(t, AdmissionConfig{}.Validate())
	require.NoError(t, AdmissionConfig{Off: true, MaxInFlight: -5}.Validate())
	err := AdmissionConfig{MaxInFlight: -1, MaxQueue: -2, QueueWait: time.Hour}.Validate()
	require.ErrorContains(t, err, "GEM_BRAIN_MAX_IN_FLIGHT")
	require.ErrorContains(t, err, "GEM_BRAIN_MAX_QUEUE")
	require.ErrorContains(t, err, "GEM_BRAIN_QUEUE_WAIT")
}

// overloadServer is an echo service with the brain's error handler and a limiter, whose route /hold holds
// its slot until released, and /mcp hands the body it got to got.
type overloadServer struct {
	*httptest.Server
	l       *limiter
	entered chan struct{}
	release chan struct{}
	got     chan string
}

func newOverloadServer(t *testing.T, inFlight, queue int, wait time.Duration) *overloadServer {
	t.Helper()
	s := &Server{cfg: Config{}.WithDefaults(), admission: testLimiter(inFlight, queue, wait)}
	o := &overloadServer{l: s.admission, entered: make(chan struct{}, 16), release: make(chan struct{}), got: make(chan string, 16)}
	e := echo.New()
	e.HTTPErrorHandler = s.handleError
	e.POST("/hold", func(c echo.Context) error {
		o.entered <- struct{}{}
		<-o.release
		return c.JSON(http.StatusOK, map[string]any{"ok": true})
	}, s.admit)
	e.GET("/cheap", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{"ok": true}) })
	e.Match([]string{http.MethodGet, http.MethodPost}, "/mcp", func(c echo.Context) error {
		body, _ := io.ReadAll(c.Request().Body)
		o.got <- string(body)
		return c.JSON(http.StatusOK, map[string]any{"ok": true})
	}, s.admitToolCalls)
	o.Server = httptest.NewServer(e)
	t.Cleanup(o.Close)
	return o
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

// requireOverloaded checks a 503 overloaded answer: Retry-After in whole seconds and the API's error body.
func requireOverloaded(t *testing.T, resp *http.Response, data []byte, reason string) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", data)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	var body struct {
		OK     bool           `json:"ok"`
		Errors []*brain.Error `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(data, &body), "%s", data)
	require.False(t, body.OK)
	require.Len(t, body.Errors, 1)
	require.Equal(t, brain.EOVERLOADED, body.Errors[0].Code)
	details := body.Errors[0].Details.(map[string]any)
	require.Equal(t, reason, details["reason"])
	return details
}

// TestOverloadMiddleware: the expensive route answers 503 overloaded with Retry-After beyond the line, and
// after waiting too long; a cheap route answers meanwhile.
func TestOverloadMiddleware(t *testing.T) {
	t.Parallel()
	o := newOverloadServer(t, 1, 1, 50*time.Millisecond)
	held := make(chan int, 1)
	go func() { resp, _ := post(t, o.URL+"/hold", "{}"); held <- resp.StatusCode }()
	<-o.entered

	// Alone in line, nothing frees the slot: it waits QueueWait, then 503.
	resp, data := post(t, o.URL+"/hold", "{}")
	details := requireOverloaded(t, resp, data, RejectWaitTimeout)
	require.Equal(t, map[string]any{"reason": "wait_timeout", "in_flight": 1.0, "queued": 0.0, "limit": 1.0, "max_queue": 1.0,
		"queue_wait_ms": 50.0, "retry_after_s": 1.0}, details)

	resp, data = getURL(t, o.URL+"/cheap")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", data)
	close(o.release)
	require.Equal(t, http.StatusOK, <-held)
	inFlight, queued, full, timeout := o.l.stats()
	require.Equal(t, [4]uint64{0, 0, 0, 1}, [4]uint64{uint64(inFlight), uint64(queued), full, timeout})

	// One in line (whose client goes away), the next is refused at once; the one in line leaves the line.
	o = newOverloadServer(t, 1, 1, time.Minute)
	watchLine(t, o.l)
	go func() { resp, _ := post(t, o.URL+"/hold", "{}"); held <- resp.StatusCode }()
	<-o.entered
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.URL+"/hold", strings.NewReader("{}"))
	queuedDone := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		queuedDone <- err
	}()
	awaitQueued(t, o.l, 1)
	resp, data = post(t, o.URL+"/hold", "{}")
	details = requireOverloaded(t, resp, data, RejectQueueFull)
	require.Equal(t, 1.0, details["in_flight"])
	require.Equal(t, 1.0, details["queued"])
	cancel()
	require.Error(t, <-queuedDone)
	awaitQueued(t, o.l, 0)
	close(o.release)
	require.Equal(t, http.StatusOK, <-held)
	inFlight, queued, full, timeout = o.l.stats()
	require.Equal(t, [4]uint64{0, 0, 1, 0}, [4]uint64{uint64(inFlight), uint64(queued), full, timeout})
	select {
	case <-o.entered:
		t.Fatal("the request whose client went away ran")
	default:
	}
}

func getURL(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

// TestOverloadMCP: MCP's tools/call is admitted like the other expensive routes; the rest of MCP is not, and
// the MCP server gets the body unchanged.
func TestOverloadMCP(t *testing.T) {
	t.Parallel()
	o := newOverloadServer(t, 1, NoQueue, time.Minute)
	call := `{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "os.health_check", "arguments": {}}}`
	list := `{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}`

	// Free: a tools/call passes, body intact.
	resp, _ := post(t, o.URL+"/mcp", call)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, call, <-o.got)

	// Saturated: tools/call (alone or in a batch) is refused; tools/list, GET and garbage pass.
	held := make(chan int, 1)
	go func() { resp, _ := post(t, o.URL+"/hold", "{}"); held <- resp.StatusCode }()
	<-o.entered
	resp, data := post(t, o.URL+"/mcp", call)
	requireOverloaded(t, resp, data, RejectQueueFull)
	resp, data = post(t, o.URL+"/mcp", "["+list+", "+call+"]")
	requireOverloaded(t, resp, data, RejectQueueFull)
	for _, body := range []string{list, `{"jsonrpc": "2.0", "method": "notifications/initialized"}`, `not json`} {
		resp, _ = post(t, o.URL+"/mcp", body)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, body, <-o.got)
	}
	resp, _ = getURL(t, o.URL+"/mcp")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	<-o.got
	close(o.release)
	require.Equal(t, http.StatusOK, <-held)
}

func TestOverloadCallsTool(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`: true,
		" \n\t[{\"method\":\"ping\"},{\"method\":\"tools/call\"}]":   true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`:             false,
		`[{"method":"ping"}]`: false,
		`{"method": 5}`:       false,
		``:                    false,
		`{"jsonrpc":"2.0","id":1,"result":{"content":"tools/call"}}`:     false,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`: false,
	} {
		require.Equal(t, want, callsTool([]byte(body)), body)
	}
}

// TestOverloadOff: with the limit off nothing is limited.
func TestOverloadOff(t *testing.T) {
	t.Parallel()
	s := &Server{}
	called := false
	h := s.admit(func(echo.Context) error { called = true; return errors.New("reached") })
	require.EqualError(t, h(nil), "reached")
	require.True(t, called)
	require.EqualError(t, s.admitToolCalls(func(echo.Context) error { return errors.New("reached too") })(nil), "reached too")
}

// A 503 (overloaded, no LLM) is logged as a warning: refusing is the brain working as designed, and alerts
// on error lines must not fire by the thousand under overload. A 500 is an error.
func TestRequestLogLevels(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{cfg: Config{}.WithDefaults(), log: zerolog.New(&logs)}
	e := echo.New()
	e.HTTPErrorHandler = s.handleError
	e.Use(s.logRequests)
	e.GET("/busy", func(echo.Context) error { return brain.Errorf(brain.EOVERLOADED, "too many requests at once") })
	e.GET("/broken", func(echo.Context) error { return errors.New("a bug") })
	e.GET("/fine", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{"ok": true}) })
	srv := httptest.NewServer(e)
	defer srv.Close()

	want := map[string]struct {
		status int
		level  string
	}{"/busy": {http.StatusServiceUnavailable, "warn"}, "/broken": {http.StatusInternalServerError, "error"}, "/fine": {http.StatusOK, "info"}}
	for path, w := range want {
		logs.Reset()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, w.status, resp.StatusCode, path)
		var line struct {
			Level  string `json:"level"`
			Status int    `json:"status"`
		}
		// The request's line is the last (a 500 logs its error before it).
		lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
		require.NoError(t, json.Unmarshal(lines[len(lines)-1], &line), "%s", logs.String())
		require.Equal(t, w.status, line.Status, path)
		require.Equal(t, w.level, line.Level, path)
	}
}
