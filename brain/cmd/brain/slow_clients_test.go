package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// slowBrain starts a brain of its own database (no executor: calls stay queued) with short bounds on slow
// clients.
func slowBrain(t *testing.T, limits api.ConnLimits) *Main {
	t.Helper()
	admin, err := sqltest.FindServer()
	require.NoError(t, err)
	dbURL, drop, err := sqltest.CreateDatabase(context.Background(), admin)
	require.NoError(t, err)
	m, err := startBrain(dbURL, func(c *Config) { c.Conns = limits })
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = m.Close(context.Background())
		drop()
	})
	return m
}

// trickle sends head on a connection of its own, then one more byte every 200 ms, and reads until the
// server closes the connection (or 10 s pass): what it answered and when it closed, from the end of head.
func trickle(addr, head string) (answer string, closedAfter time.Duration, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		return "", 0, err
	}
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	_ = conn.SetReadDeadline(start.Add(10 * time.Second))
	data, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(data), time.Since(start), fmt.Errorf("still open after %s", time.Since(start))
	}
	return string(data), time.Since(start), nil // EOF, or a reset: closed either way
}

// TestSlowClientsAreCut: a body or headers trickled a byte at a time are cut off at their bound (408 for
// a body, on /calls and /mcp alike), for 300 connections at once too, while a long wait after a body and
// the studio's event stream go on past every bound. (With only ReadHeaderTimeout, 1,500 trickling
// connections all stayed open.)
func TestSlowClientsAreCut(t *testing.T) {
	t.Parallel()
	limits := api.ConnLimits{HeaderTimeout: time.Second, BodyTimeout: time.Second, IdleTimeout: 2 * time.Second, MaxConnsPerClient: 1000}
	m := slowBrain(t, limits)
	addr := strings.TrimPrefix(m.Server.URL(), "http://")
	post := func(path string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: brain\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", path, testToken)
	}

	for _, path := range []string{"/calls", "/mcp", "/brain/run"} {
		answer, after, err := trickle(addr, post(path))
		require.NoError(t, err, path)
		require.True(t, strings.HasPrefix(answer, "HTTP/1.1 408 "), "%s: %q", path, answer)
		require.Contains(t, answer, `"code":"request_timeout"`, path)
		require.Contains(t, answer, "GEM_BRAIN_BODY_TIMEOUT", path)
		require.Less(t, after, limits.BodyTimeout+2*time.Second, path)
	}
	_, after, err := trickle(addr, "GET /health HTTP/1.1\r\nHost: brain\r\nX-Slow: ")
	require.NoError(t, err, "headers")
	require.Less(t, after, limits.HeaderTimeout+2*time.Second, "headers")

	// Many at once: every one is closed within the bound.
	const many = 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	var longest time.Duration
	var failures []error
	for range many {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, after, err := trickle(addr, post("/calls"))
			mu.Lock()
			defer mu.Unlock()
			longest = max(longest, after)
			if err != nil {
				failures = append(failures, err)
			}
		}()
	}
	wg.Wait()
	require.Empty(t, failures)
	t.Logf("%d connections trickling a body: the last closed %s after its headers (bound %s)", many, longest.Round(time.Millisecond), limits.BodyTimeout)
	require.Less(t, longest, limits.BodyTimeout+3*time.Second)

	// The studio's event stream outlives every bound and still delivers.
	s := newStudioClient(t, m.Server.URL())
	s.login(testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Server.URL()+"/studio/calls/events", nil)
	require.NoError(t, err)
	resp, err := s.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- e
			}
		}
		close(events)
	}()
	require.Equal(t, "ready", <-events)

	// A long wait after a body: enqueue_and_wait with no executor answers when its wait ends, past the bounds.
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}
	started := time.Now()
	run, status := a.run(map[string]any{"message": "create a task to outlast the bounds", "mode": "enqueue_and_wait",
		"limits": map[string]any{"wait_timeout_ms": 3500}})
	require.Equal(t, http.StatusOK, status, "%+v", run.Errors)
	require.Equal(t, brain.ETIMEOUT, run.Errors[0].Code)
	require.GreaterOrEqual(t, time.Since(started), 3500*time.Millisecond)

	// The stream, open all that while, delivers the receipt written now.
	_, err = m.Pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, duration_ms, attempt, worker, started_at, finished_at)
		VALUES ($1, 'os.create_task', 'succeeded', 1, 1, 'test', now(), now())`, run.Enqueued[0].CallID)
	require.NoError(t, err)
	select {
	case e, open := <-events:
		require.True(t, open, "the stream was closed")
		require.Equal(t, "call", e)
	case <-ctx.Done():
		t.Fatal("no event")
	}
}

// TestConnectionsPerClient: one address holds at most MaxConnsPerClient connections; one more is answered
// 503 overloaded and closed, and a place freed is taken again.
func TestConnectionsPerClient(t *testing.T) {
	t.Parallel()
	m := slowBrain(t, api.ConnLimits{MaxConnsPerClient: 3})
	m.Server.TestSignals.ConnCounted.Init(t)
	addr := strings.TrimPrefix(m.Server.URL(), "http://")
	var held []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, conn)
	}
	for range held {
		m.Server.TestSignals.ConnCounted.Wait() // the server has accepted and counted them
	}
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: brain\r\n\r\n")
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, _ := io.ReadAll(conn)
	conn.Close()
	require.True(t, strings.HasPrefix(string(answer), "HTTP/1.1 503 "), "%q", answer)
	require.Contains(t, string(answer), `"code":"overloaded"`)
	require.Contains(t, string(answer), "GEM_BRAIN_MAX_CONNS_PER_CLIENT")

	m.Server.TestSignals.ConnReleased.Init(t)
	held[0].Close()
	m.Server.TestSignals.ConnReleased.Wait() // the server has seen it closed and given its place back
	resp, err := http.Get(m.Server.URL() + "/no-such-route")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "served, not refused")
	for _, c := range held[1:] {
		c.Close()
	}
}
