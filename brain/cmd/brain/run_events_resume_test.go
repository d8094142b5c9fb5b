package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// Clients of a run's events through a brain's death and PostgreSQL's absence.

// dbCut is a TCP proxy between a brain and PostgreSQL that a test cuts — every connection closed, new ones
// refused — and restores, as a restart of the server looks to the brain.
type dbCut struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func newDBCut(t *testing.T, dbURL string) (*dbCut, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	p := &dbCut{addr: sqltest.FreeAddr(t), target: u.Host, conns: map[net.Conn]bool{}}
	require.NoError(t, p.restore())
	t.Cleanup(p.cut)
	u.Host = p.addr
	return p, u.String()
}

func (p *dbCut) restore() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
			go func() { _, _ = io.Copy(c, s); s.Close(); c.Close() }()
		}
	}()
	return nil
}

func (p *dbCut) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// eventLines are the events `brain run --follow` and `brain chat` print ("  N kind {data}"): ids and kinds.
func eventLines(out string) (ids []int64, kinds []string) {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && strings.HasPrefix(f[2], "{") {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				ids, kinds = append(ids, n), append(kinds, f[1])
			}
		}
	}
	return ids, kinds
}

func requireOnceEach(t *testing.T, ids []int64, out string) {
	t.Helper()
	for i, id := range ids {
		require.Equal(t, int64(i+1), id, "events are printed once each, in order:\n%s", out)
	}
}

// TestFollowRunThroughDatabaseOutage: `brain run --follow` follows a run whose call waits for a person's
// approval; PostgreSQL goes away for 3 s (every connection of the brain cut, new ones refused) and comes
// back; the call is approved. The command prints every event once, in order, through the outage, and the
// answer. Before, the stream ended with the outage, the reconnection was answered 503, and FollowRun gave
// up: the command failed ("the brain answered 503") while the run went on.
func TestFollowRunThroughDatabaseOutage(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()
	_, err = pool.Exec(t.Context(), `INSERT INTO core_approval_policies (permission, expires_ms, note) VALUES ('read:db', 600000, 'outage test')`)
	require.NoError(t, err)
	cut, viaCut := newDBCut(t, dbURL)
	m, err := startBrain(viaCut, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}

	env := map[string]string{"GEM_BRAIN_URL": a.url, "GEM_BRAIN_TOKEN": testToken}
	var out, errOut bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli([]string{"run", "--follow", "-t", "60s", "-m", "list urgent tasks"}, func(k string) string { return env[k] }, &out, &errOut)
	}()
	var call string
	require.Eventually(t, func() bool {
		return pool.QueryRow(t.Context(), `SELECT call_id::text FROM core_approvals WHERE decision IS NULL`).Scan(&call) == nil
	}, 30*time.Second, 50*time.Millisecond, "the call never waited for approval")

	cut.cut()
	time.Sleep(3 * time.Second)
	require.NoError(t, cut.restore())
	var decided map[string]any
	require.Eventually(t, func() bool {
		return a.do(http.MethodPost, "/calls/"+call+"/approve", map[string]any{"reason": "after the outage"}, &decided) == http.StatusOK
	}, 20*time.Second, 200*time.Millisecond, "%v", decided)

	select {
	case code := <-exited:
		require.Equal(t, 0, code, "%s\n%s", out.String(), errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("brain run --follow did not end:\n%s\n%s", out.String(), errOut.String())
	}
	ids, printed := eventLines(out.String())
	require.Equal(t, []string{"run_started", "call_enqueued", "call_awaiting_approval", "receipt", "answer", "run_ended"}, printed, out.String())
	requireOnceEach(t, ids, out.String())
}

// balancer is a load balancer in front of brains: a request goes to the first brain not known to be down;
// one that cannot be reached is answered 502 and marked down (a passive health check).
type balancer struct {
	mu       sync.Mutex
	backends []*url.URL
	down     map[string]bool
	url      string
}

func newBalancer(t *testing.T, urls ...string) *balancer {
	t.Helper()
	b := &balancer{down: map[string]bool{}}
	for _, u := range urls {
		parsed, err := url.Parse(u)
		require.NoError(t, err)
		b.backends = append(b.backends, parsed)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(b.pick()) },
		Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			var op *net.OpError
			if errors.As(err, &op) && errors.Is(err, syscall.ECONNREFUSED) {
				b.mu.Lock()
				b.down[r.URL.Host] = true
				b.mu.Unlock()
			}
			return resp, err
		}),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

func (b *balancer) pick() *url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.backends {
		if !b.down[u.Host] {
			return u
		}
	}
	return b.backends[0]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStreamsResumeOnAnotherBrain: two brains behind a load balancer; `brain chat` streams a turn from brain
// A while FollowRun follows the same run. A is SIGKILLed while it waits for the LLM's second answer: the
// balancer answers 502 for it once, then sends everything to B, which takes the turn over. Both clients go
// on from the last event they saw: each event once, in order, and the chat prints the reply. Before, the
// streamed chat could not be resumed (no key, and no run id before its last event) — `brain chat` failed
// with "the stream ended without the turn's response" — and FollowRun gave up on the balancer's 502.
func TestStreamsResumeOnAnotherBrain(t *testing.T) {
	t.Parallel()
	k := newKillableBrains(t, 0, healthCheckTurns)
	a, apiA, apiB, pool := k.a, k.apiA, k.apiB, k.pool
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("health"): {"os.health_check"}})
	lb := newBalancer(t, apiA.url, apiB.url)

	env := map[string]string{"GEM_BRAIN_URL": lb.url, "GEM_BRAIN_TOKEN": testToken}
	var out, errOut bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli([]string{"chat", agent, "is", "all", "well?"}, func(k string) string { return env[k] }, &out, &errOut)
	}()
	k.awaitAsked(t)
	var runID string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT id::text FROM brain_runs WHERE agent = $1`, agent).Scan(&runID))
	followed := make(chan []api.Event, 1)
	ready := make(chan struct{})
	go func() {
		var got []api.Event
		client := &api.Client{BaseURL: lb.url, Token: testToken}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		err := client.FollowRun(ctx, runID, 0, func(e api.Event) error {
			got = append(got, e)
			if e.Kind == "llm_started" && len(got) == 6 {
				close(ready)
			}
			return nil
		})
		if err != nil {
			got = append(got, api.Event{Kind: "error: " + err.Error()})
		}
		followed <- got
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("FollowRun did not catch up with the run")
	}

	require.NoError(t, a.Process.Kill())
	_ = a.Wait()
	k.release()

	select {
	case code := <-exited:
		require.Equal(t, 0, code, "%s\n%s", out.String(), errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("brain chat did not end:\n%s\n%s", out.String(), errOut.String())
	}
	// The taker's answer is streamed: its text comes as text events between its llm_started and llm_ended.
	want := []string{"run_started", "llm_started", "llm_ended", "call_enqueued", "receipt", "llm_started", "run_resumed", "llm_started", "text", "llm_ended", "answer", "run_ended"}
	got := <-followed
	var kindsGot []string
	var notText []api.Event
	for i, e := range got {
		if e.Kind != "text" || len(kindsGot) == 0 || kindsGot[len(kindsGot)-1] != "text" { // text may come in more than one event
			kindsGot = append(kindsGot, e.Kind)
		}
		require.Equal(t, int64(i+1), e.ID, "FollowRun: each event once, in order: %v", kindsGot)
		if e.Kind != "text" {
			notText = append(notText, e)
		}
	}
	require.Equal(t, want, kindsGot)

	// brain chat prints each event on a line of its own, but text, which it prints as the model's words:
	// the same events as FollowRun's, each once, in order.
	ids, printed := eventLines(out.String())
	require.Len(t, printed, len(notText), out.String())
	for i, e := range notText {
		require.Equal(t, e.ID, ids[i], "events are printed once each, in order:\n%s", out.String())
		require.Equal(t, e.Kind, printed[i], out.String())
	}
	require.Contains(t, out.String(), textIndent+"All healthy.")
}

// TestChatCLIAnswersAtOnceWithoutAnLLM: `brain chat`, which sends its message again while a brain cannot
// answer for a moment (503), is answered at once by a brain that has no LLM (503 llm_not_configured): that
// brain will not have one a moment later.
func TestChatCLIAnswersAtOnceWithoutAnLLM(t *testing.T) {
	t.Parallel()
	a := newAPI(t) // the shared brain has no LLM
	agent := agentWithSkills(t, a, 3, nil)
	env := map[string]string{"GEM_BRAIN_URL": a.url, "GEM_BRAIN_TOKEN": testToken}
	var out, errOut bytes.Buffer
	start := time.Now()
	code := cli([]string{"chat", agent, "hello"}, func(k string) string { return env[k] }, &out, &errOut)
	require.Equal(t, 1, code, "%s\n%s", out.String(), errOut.String())
	require.Contains(t, out.String(), "HTTP 503")
	require.Contains(t, out.String(), "llm_not_configured")
	require.Less(t, time.Since(start), 5*time.Second)
}
