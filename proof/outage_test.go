package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// PostgreSQL stopped for 4 s at the worst moments of a chat turn and of a /brain/run, on a cluster of the
// test's own, under real brains and an executor (none is killed) and a scripted LLM whose answers the test
// holds and lets go. Each scenario is checked as a user sees it: the client's first answer is the finished
// turn or 503 with the turn's run_id and a Retry-After (never a 500, never a 503 without the run once there
// is one); the run ends, completed, within the lease and a few seconds of the server's return, with one
// final answer, the LLM's; the client's retry with its key answers that run, repeated; one task; no run
// left planning or waiting; every LLM answer in brain_turns (but one a 503 gave up); the session takes the
// next message.

// outageFor is how long the server stays down.
const outageFor = 4 * time.Second

// outageLease is the brains' GEM_BRAIN_RUN_LEASE: shorter than the outage, so every lease lapses while the
// server is down.
const outageLease = 2 * time.Second

// heldAnswers holds the first request for chosen LLM steps at the scripted LLM until the test lets it go.
type heldAnswers struct {
	mu    sync.Mutex
	steps map[string]*heldAnswer
}

// heldAnswer is one held step: asked is closed when its request comes, and the answer goes once release is
// closed.
type heldAnswer struct {
	asked, release chan struct{}
	taken          bool
}

// hold holds the first request for step of the turn tagged tag.
func (h *heldAnswers) hold(tag string, step int) *heldAnswer {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := &heldAnswer{asked: make(chan struct{}), release: make(chan struct{})}
	h.steps[fmt.Sprintf("%s/%d", tag, step)] = a
	return a
}

// wait is the scripted LLM's hook: it holds a held step's first request until its release.
func (h *heldAnswers) wait(tag string, step int) {
	h.mu.Lock()
	a := h.steps[fmt.Sprintf("%s/%d", tag, step)]
	first := a != nil && !a.taken
	if first {
		a.taken = true
	}
	h.mu.Unlock()
	if first {
		close(a.asked)
		<-a.release
	}
}

// outageScript answers a turn's first step with one task, its second with text; a later turn of the
// session answers in text at once.
func outageScript(tag string, step int) (string, []scriptedCall, time.Duration) {
	if step > 0 || !strings.HasSuffix(tag, "t01]") {
		return outageReply(tag), nil, 0
	}
	h := sha256.Sum256([]byte(tag))
	return "", []scriptedCall{{id: "call_" + hex.EncodeToString(h[:10]), tool: "os.create_task", tag: tag + " s0 c0",
		args: map[string]any{"title": outageTask(tag), "domain": "business", "priority": "normal", "description": nil, "due_at": nil, "context_ref": nil}}}, 0
}

func outageReply(tag string) string { return "Done " + tag + ": the call back is on your list." }
func outageTask(tag string) string  { return "outage task " + tag }

// outageRig is two brains and an executor on a private cluster the test stops, and the scripted LLM.
type outageRig struct {
	t    *testing.T
	ctx  context.Context
	c    *cluster
	pool *pgxpool.Pool
	// waits waits for the database to come back (GEM_BRAIN_DB_AWAY_WAIT 30s), OpenAI's wire format, through
	// cutter; twin is another brain of its provider, which could take its turns over; brief waits 1 s, then
	// answers 503 and leaves its turn to its lease, Anthropic's wire format. A brain takes over only its own
	// provider's turns for a minute.
	waits, twin, brief *brainProc
	exec               *proc
	llm                *scriptedLLM
	held               *heldAnswers
	client             *http.Client
	// cutter is between the brain that waits and the server.
	cutter *commitCutter
}

func newOutageRig(t *testing.T) *outageRig {
	bins := testBinaries(t)
	ctx := context.Background()
	c, dbURL, pool, logs := restartableDB(t, ctx, bins, "outage")
	g := &outageRig{t: t, ctx: ctx, c: c, pool: pool, held: &heldAnswers{steps: map[string]*heldAnswer{}},
		client: &http.Client{Timeout: 2 * time.Minute}}
	llm, err := startScriptedLLM(randomHex(16))
	require.NoError(t, err)
	llm.script, llm.hold = outageScript, g.held.wait
	g.llm = llm
	// Held answers are let go before the LLM closes, and the processes are killed before the cluster stops.
	t.Cleanup(llm.close)
	t.Cleanup(g.releaseAll)
	wait := "GEM_DB_CONNECT_WAIT=2m"
	g.exec, err = startExecutor(bins, dbURL, "outage-1", []string{wait, "GEM_EXECUTOR_METRICS_ADDR=off"}, logs, pool, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.exec.cmd.Process.Signal(syscall.SIGCONT); g.exec.kill() })
	cutter, brainDB := startCommitCutter(t, dbURL)
	g.cutter = cutter
	token := randomHex(24) // one caller on both brains
	env := []string{wait, "GEM_BRAIN_RUN_LEASE=" + outageLease.String(), "GEM_LLM_API_KEY=" + llm.key, "GEM_LLM_MODEL=outage-model"}
	g.waits, err = startBrainAs(bins, brainDB, "brain-waits", token,
		append([]string{"GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL=" + llm.baseURL("openai")}, env...), logs)
	require.NoError(t, err)
	t.Cleanup(g.waits.kill)
	g.twin, err = startBrainAs(bins, dbURL, "brain-twin", token,
		append([]string{"GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL=" + llm.baseURL("openai")}, env...), logs)
	require.NoError(t, err)
	t.Cleanup(g.twin.kill)
	g.brief, err = startBrainAs(bins, dbURL, "brain-brief", token,
		append([]string{"GEM_LLM_PROVIDER=anthropic", "GEM_LLM_BASE_URL=" + llm.baseURL("anthropic"), "GEM_BRAIN_DB_AWAY_WAIT=1s"}, env...), logs)
	require.NoError(t, err)
	t.Cleanup(g.brief.kill)

	g.must(http.MethodPost, "/skills", map[string]any{"slug": "outage-tasks", "name": "Tasks", "description": "The task list.",
		"instructions": "Record what the customer asks for.", "tools": []string{"os.create_task"}})
	g.must(http.MethodPost, "/agents", map[string]any{"slug": "outage", "name": "Outage", "instructions": "You help a roofing business.", "max_tool_iterations": 3})
	g.must(http.MethodPut, "/agents/outage/skills/outage-tasks", nil)
	return g
}

func (g *outageRig) releaseAll() {
	g.held.mu.Lock()
	defer g.held.mu.Unlock()
	for _, a := range g.held.steps {
		select {
		case <-a.release:
		default:
			close(a.release)
		}
	}
}

// request sends a request to brain b, and answers on the channel (a connection error as status 0).
func (g *outageRig) request(b *brainProc, method, path string, body any, header map[string]string) <-chan apiAnswer {
	out := make(chan apiAnswer, 1)
	go func() {
		a, err := apiRequest(g.ctx, g.client, b.url, b.token, method, path, body, header)
		if err != nil {
			a = apiAnswer{body: []byte(err.Error())}
		}
		out <- a
	}()
	return out
}

// must makes a request that must succeed.
func (g *outageRig) must(method, path string, body any) {
	g.t.Helper()
	a := <-g.request(g.waits, method, path, body, nil)
	require.Less(g.t, a.status, 300, "%s %s: %s", method, path, a.body)
}

// chat sends a turn's message (tag) to the session through brain b with a request key.
func (g *outageRig) chat(b *brainProc, tag, session, key string) <-chan apiAnswer {
	return g.request(b, http.MethodPost, "/agents/outage/chat",
		map[string]any{"message": tag + " ring Mrs Lee back about her gutters", "user_id": "outage-user", "session_id": session},
		map[string]string{"Idempotency-Key": key})
}

// outage stops the server, calls during (while it is down), and starts it again outageFor after it
// stopped; it returns when the server is back.
func (g *outageRig) outage(during func()) time.Time {
	g.t.Helper()
	require.NoError(g.t, g.c.down())
	down := time.Now()
	during()
	time.Sleep(time.Until(down.Add(outageFor)))
	require.NoError(g.t, g.c.up())
	g.t.Logf("PostgreSQL was down for %s", time.Since(down).Round(time.Millisecond))
	return time.Now()
}

// callMade waits until the task of the turn tagged tag has its call.
func (g *outageRig) callMade(title string) {
	g.t.Helper()
	require.Eventually(g.t, func() bool {
		var n int
		_ = g.pool.QueryRow(g.ctx, `SELECT count(*) FROM core_tool_calls WHERE tool_name = 'os.create_task' AND input->>'title' = $1`, title).Scan(&n)
		return n == 1
	}, 30*time.Second, 20*time.Millisecond, "the task's call was never made")
}

// asked waits for a held step's request.
func (g *outageRig) asked(a *heldAnswer) {
	g.t.Helper()
	select {
	case <-a.asked:
	case <-time.After(30 * time.Second):
		g.t.Fatal("the LLM was never asked for the held step")
	}
}

// namedRun is the run an answer names: its run_id, or its error's.
func namedRun(body []byte) uuid.UUID {
	var out struct {
		RunID  uuid.UUID `json:"run_id"`
		Errors []struct {
			Details struct {
				RunID uuid.UUID `json:"run_id"`
			} `json:"details"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(body, &out)
	for _, e := range out.Errors {
		if out.RunID == uuid.Nil {
			out.RunID = e.Details.RunID
		}
	}
	return out.RunID
}

// checkFirstAnswer checks the client's first answer: done (200), or 503 naming the run with a Retry-After;
// want is the one expected. It returns the run.
func (g *outageRig) checkFirstAnswer(first apiAnswer, key string, want int) uuid.UUID {
	g.t.Helper()
	g.t.Logf("the first answer: %d %.400s", first.status, first.body)
	var runs []uuid.UUID
	rows, err := g.pool.Query(g.ctx, `SELECT id FROM brain_runs WHERE idempotency_key = $1`, key)
	require.NoError(g.t, err)
	for rows.Next() {
		var id uuid.UUID
		require.NoError(g.t, rows.Scan(&id))
		runs = append(runs, id)
	}
	require.NoError(g.t, rows.Err())
	require.Len(g.t, runs, 1, "one run for the request's key")
	switch first.status {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		secs, err := strconv.Atoi(first.header.Get("Retry-After"))
		require.NoError(g.t, err, "a 503 says when to try again")
		require.Positive(g.t, secs)
	default:
		g.t.Fatalf("the first answer is the finished turn or 503 with its run, not %d: %s", first.status, first.body)
	}
	require.Equal(g.t, runs[0], namedRun(first.body), "the answer names the request's run")
	require.Equal(g.t, want, first.status, "%s", first.body)
	return runs[0]
}

// awaitEnd waits for the run to end, within the lease and a few seconds of the server's return.
func (g *outageRig) awaitEnd(run uuid.UUID, back time.Time) string {
	g.t.Helper()
	var status string
	bound := outageLease + 10*time.Second
	for {
		err := g.pool.QueryRow(g.ctx, `SELECT status FROM brain_runs WHERE id = $1`, run).Scan(&status)
		if err == nil && (status == "completed" || status == "failed") {
			break
		}
		if time.Since(back) > bound {
			g.t.Fatalf("run %s is still %s %s after the server came back", run, status, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Logf("run %s %s %s after the server came back", run, status, time.Since(back).Round(time.Millisecond))
	return status
}

// checkNoOpenRun: no run is left planning, waiting or queued.
func (g *outageRig) checkNoOpenRun() {
	g.t.Helper()
	var open int
	require.NoError(g.t, g.pool.QueryRow(g.ctx, `SELECT count(*) FROM brain_runs WHERE status IN ('planning', 'waiting', 'queued', 'enqueued')`).Scan(&open))
	require.Zero(g.t, open, "no run is left open")
}

// checkTasks: the turn's one task, made by one call that succeeded.
func (g *outageRig) checkTasks(title string) {
	g.t.Helper()
	var tasks, calls, succeeded int
	require.NoError(g.t, g.pool.QueryRow(g.ctx, `SELECT count(*) FROM os_tasks WHERE title = $1`, title).Scan(&tasks))
	require.NoError(g.t, g.pool.QueryRow(g.ctx, `SELECT count(*), count(*) FILTER (WHERE r.status = 'succeeded') FROM core_tool_calls c
		LEFT JOIN core_tool_receipts r ON r.call_id = c.id WHERE c.input->>'title' = $1`, title).Scan(&calls, &succeeded))
	require.Equal(g.t, 1, tasks, "one task")
	require.Equal(g.t, 1, calls, "one call")
	require.Equal(g.t, 1, succeeded, "its receipt says it succeeded")
}

// checkTurn checks a chat turn through brain b and an outage, from its first answer (want its status) to the
// session's next message.
func (g *outageRig) checkTurn(b *brainProc, tag, session, key string, first apiAnswer, want int, back time.Time) {
	g.t.Helper()
	run := g.checkFirstAnswer(first, key, want)
	require.Equal(g.t, "completed", g.awaitEnd(run, back))
	if first.status == http.StatusOK {
		var a chatAnswer
		require.NoError(g.t, json.Unmarshal(first.body, &a))
		require.True(g.t, a.OK, "%s", first.body)
		require.Equal(g.t, outageReply(tag), a.Reply)
	}

	var reply string
	var finals, answers int
	require.NoError(g.t, g.pool.QueryRow(g.ctx, `SELECT assistant_message,
			(SELECT count(*) FROM agent_messages m WHERE m.run_id = r.id AND m.role = 'assistant' AND coalesce(jsonb_array_length(m.tool_calls), 0) = 0),
			(SELECT count(*) FROM brain_turns t WHERE t.run_id = r.id AND t.response IS NOT NULL)
		FROM brain_runs r WHERE id = $1`, run).Scan(&reply, &finals, &answers))
	require.Equal(g.t, outageReply(tag), reply, "the run's answer is the LLM's")
	require.Equal(g.t, 1, finals, "one final answer")
	g.checkTasks(outageTask(tag))
	g.checkNoOpenRun()
	requests, given := g.llmRequests(tag), 0
	if first.status == http.StatusServiceUnavailable {
		given = 1 // the answer the brain held when it gave the turn up to its lease, asked again by its taker
	}
	g.t.Logf("LLM requests for the turn: %d (steps asked: %v); answers in brain_turns: %d", requests, g.llmSteps(tag), answers)
	require.Equal(g.t, requests-given, answers, "every LLM answer is in brain_turns")

	// The client's retry with its key answers the run, repeated.
	again := <-g.chat(b, tag, session, key)
	require.Equal(g.t, http.StatusOK, again.status, "%s", again.body)
	var a chatAnswer
	require.NoError(g.t, json.Unmarshal(again.body, &a))
	require.True(g.t, a.Repeated, "%s", again.body)
	require.Equal(g.t, run, a.RunID)
	require.True(g.t, a.OK, "%s", again.body)
	require.Equal(g.t, outageReply(tag), a.Reply)
	g.checkTasks(outageTask(tag))

	// The session takes the next message.
	next := strings.Replace(tag, "t01]", "t02]", 1)
	answer := <-g.chat(b, next, session, key+"-next")
	require.Equal(g.t, http.StatusOK, answer.status, "%s", answer.body)
	require.NoError(g.t, json.Unmarshal(answer.body, &a))
	require.Equal(g.t, outageReply(next), a.Reply)
}

// llmSteps is how often each step of the turn tagged tag was asked.
func (g *outageRig) llmSteps(tag string) map[int]int {
	g.llm.mu.Lock()
	defer g.llm.mu.Unlock()
	steps := map[int]int{}
	for _, s := range g.llm.steps {
		if s.tag == tag {
			steps[s.step] = len(s.asked)
		}
	}
	return steps
}

// llmRequests is how many requests the scripted LLM answered for the turn tagged tag.
func (g *outageRig) llmRequests(tag string) int {
	n := 0
	for _, asked := range g.llmSteps(tag) {
		n += asked
	}
	return n
}

// commitCutter is a TCP proxy to PostgreSQL that, once armed, lets the next COMMIT a client sends through and
// cuts that connection before the server's answer gets back: the transaction commits and its client cannot
// know it did, as when the connection is lost at that moment.
type commitCutter struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cuts   atomic.Int64
}

// startCommitCutter proxies to dbURL's server and returns the proxy and dbURL through it.
func startCommitCutter(t *testing.T, dbURL string) (*commitCutter, string) {
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &commitCutter{ln: ln, target: u.Host}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(client)
		}
	}()
	u.Host = ln.Addr().String()
	return p, u.String()
}

// serve passes one connection through, reading what the client sends message by message (the startup
// message has no type byte; sslmode=disable sends no SSL request).
func (p *commitCutter) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	var cut atomic.Bool // a COMMIT went through: the server's next bytes are its answer, never delivered
	closeBoth := func() { _ = client.Close(); _ = server.Close() }
	go func() {
		defer closeBoth()
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if cut.Load() {
				p.cuts.Add(1)
				return
			}
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer closeBoth()
	r := bufio.NewReader(client)
	startup := true
	for {
		var head []byte
		if startup {
			head = make([]byte, 4)
		} else {
			head = make([]byte, 5)
		}
		if _, err := io.ReadFull(r, head); err != nil {
			return
		}
		size := int(binary.BigEndian.Uint32(head[len(head)-4:])) - 4
		body := make([]byte, max(size, 0))
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		commit := !startup && head[0] == 'Q' && strings.EqualFold(strings.TrimSpace(strings.TrimRight(string(body), "\x00")), "commit")
		if commit && p.armed.CompareAndSwap(true, false) {
			cut.Store(true)
		}
		startup = false
		if _, err := server.Write(append(head, body...)); err != nil {
			return
		}
	}
}

// TestChatTurnThroughADatabaseOutage: the worst moments of a chat turn and a /brain/run for the database to
// go away, one after another on one cluster, executor and pair of brains.
func TestChatTurnThroughADatabaseOutage(t *testing.T) {
	// In parallel: its PostgreSQL is a private cluster of its own, and it mostly waits on restarts and leases.
	t.Parallel()
	g := newOutageRig(t)
	// turn sends a turn's first message to brain b, holds its LLM step hold (when >= 0) and, once the LLM is
	// asked for it, calls outage; the turn's checks follow, its first answer expected with status want.
	turn := func(t *testing.T, b *brainProc, n, hold, want int, outage func(held *heldAnswer) time.Time) {
		g.t = t
		tag, session, key := fmt.Sprintf("[chaos s%02d t01]", n), fmt.Sprintf("outage-s%02d", n), "outage-"+uuid.NewString()
		var held *heldAnswer
		if hold >= 0 {
			held = g.held.hold(tag, hold)
		}
		first := g.chat(b, tag, session, key)
		if held != nil {
			g.asked(held)
		}
		back := outage(held)
		g.checkTurn(b, tag, session, key, <-first, want, back)
	}
	release := func(held *heldAnswer) func() { return func() { close(held.release) } }

	// 1. The LLM's answer asking for the task arrives while the server is down.
	t.Run("tool call answer while down", func(t *testing.T) {
		turn(t, g.waits, 1, 0, http.StatusOK, func(held *heldAnswer) time.Time { return g.outage(release(held)) })
	})

	// 2a. The server goes down once the task's call is enqueued, while the brain waits for its receipt.
	t.Run("down while waiting for the receipt", func(t *testing.T) {
		require.NoError(t, g.exec.cmd.Process.Signal(syscall.SIGSTOP)) // the call waits in the queue
		turn(t, g.waits, 2, -1, http.StatusOK, func(*heldAnswer) time.Time {
			g.callMade(outageTask("[chaos s02 t01]"))
			return g.outage(func() { require.NoError(t, g.exec.cmd.Process.Signal(syscall.SIGCONT)) })
		})
	})

	// 2a'. The same, and the turn's brain comes back to the database 1.2 s after it (paused): its lease
	// lapsed while nobody could renew it, and the other brain of its provider, back at once, must not take the
	// turn from its live brain (it would ask the LLM again for the step the first brain asks).
	t.Run("its brain back later than the other", func(t *testing.T) {
		require.NoError(t, g.exec.cmd.Process.Signal(syscall.SIGSTOP))
		turn(t, g.waits, 8, -1, http.StatusOK, func(*heldAnswer) time.Time {
			g.callMade(outageTask("[chaos s08 t01]"))
			back := g.outage(func() { require.NoError(t, g.exec.cmd.Process.Signal(syscall.SIGCONT)) })
			require.NoError(t, g.waits.cmd.Process.Signal(syscall.SIGSTOP))
			time.Sleep(1200 * time.Millisecond)
			require.NoError(t, g.waits.cmd.Process.Signal(syscall.SIGCONT))
			return back
		})
		var owner string
		require.NoError(t, g.pool.QueryRow(g.ctx, `SELECT owner FROM brain_runs WHERE conversation_id = 'outage-s08' ORDER BY id LIMIT 1`).Scan(&owner))
		require.Contains(t, owner, fmt.Sprintf("/%d/", g.waits.cmd.Process.Pid), "the turn stayed with its brain")
	})

	// 2b. The server goes down while the brain waits for the LLM's final answer, which comes once it is back.
	t.Run("down while waiting for the final answer", func(t *testing.T) {
		turn(t, g.waits, 3, 1, http.StatusOK, func(held *heldAnswer) time.Time {
			back := g.outage(func() {})
			close(held.release)
			return back
		})
	})

	// 3. The final answer arrives, and is to be written, while the server is down.
	t.Run("final answer while down", func(t *testing.T) {
		turn(t, g.waits, 4, 1, http.StatusOK, func(held *heldAnswer) time.Time { return g.outage(release(held)) })
	})

	// 3b. The connection is lost just as the step with the task commits: the brain cannot know the step is
	// journaled, and writes it once the database answers again — only if it is not.
	t.Run("step committed, its answer lost", func(t *testing.T) {
		turn(t, g.waits, 5, 0, http.StatusOK, func(held *heldAnswer) time.Time {
			g.cutter.armed.Store(true)
			close(held.release)
			require.Eventually(t, func() bool { return g.cutter.cuts.Load() == 1 }, 30*time.Second, 10*time.Millisecond, "the step's commit was never cut")
			return time.Now()
		})
	})

	// 1 and 3 again on a brain that waits 1 s for the database: it answers 503 with the run and leaves the
	// turn to its lease; once the server is back, it takes the turn over and finishes it from its journal.
	t.Run("longer than the brain waits: tool call answer while down", func(t *testing.T) {
		turn(t, g.brief, 6, 0, http.StatusServiceUnavailable, func(held *heldAnswer) time.Time { return g.outage(release(held)) })
	})
	t.Run("longer than the brain waits: final answer while down", func(t *testing.T) {
		turn(t, g.brief, 7, 1, http.StatusServiceUnavailable, func(held *heldAnswer) time.Time { return g.outage(release(held)) })
	})

	// 4. A /brain/run (enqueue_and_wait, one task) loses the server between the enqueue and the receipt.
	t.Run("brain run down before the receipt", func(t *testing.T) {
		g.t = t
		title := "ring the outage customer " + strings.Map(func(r rune) rune { return 'a' + r%26 }, uuid.NewString()[:6])
		key := "outage-run-" + uuid.NewString()
		body := map[string]any{"message": "create task: " + title, "mode": "enqueue_and_wait"}
		header := map[string]string{"Idempotency-Key": key}
		require.NoError(t, g.exec.cmd.Process.Signal(syscall.SIGSTOP))
		answered := g.request(g.waits, http.MethodPost, "/brain/run", body, header)
		g.callMade(title)
		back := g.outage(func() { require.NoError(t, g.exec.cmd.Process.Signal(syscall.SIGCONT)) })
		run := g.checkFirstAnswer(<-answered, key, http.StatusOK)
		require.Equal(t, "completed", g.awaitEnd(run, back))
		g.checkTasks(title)
		g.checkNoOpenRun()

		again := <-g.request(g.waits, http.MethodPost, "/brain/run", body, header)
		require.Equal(t, http.StatusOK, again.status, "%s", again.body)
		var out struct {
			OK       bool      `json:"ok"`
			RunID    uuid.UUID `json:"run_id"`
			Status   string    `json:"status"`
			Repeated bool      `json:"repeated"`
			Receipts []struct {
				Status string `json:"status"`
			} `json:"receipts"`
		}
		require.NoError(t, json.Unmarshal(again.body, &out))
		require.True(t, out.Repeated, "%s", again.body)
		require.Equal(t, run, out.RunID)
		require.True(t, out.OK, "%s", again.body)
		require.Equal(t, "completed", out.Status)
		require.Len(t, out.Receipts, 1)
		require.Equal(t, "succeeded", out.Receipts[0].Status)
		g.checkTasks(title)
	})
}
