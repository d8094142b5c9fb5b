package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	ID    int64 // 0 when the event had no id
	Event string
	Data  string
}

// readSSE parses server-sent events from r onto a channel (with the CLI's reader), closed when r ends.
func readSSE(r io.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		_ = api.ReadEvents(r, func(e api.Event) error {
			out <- sseEvent{ID: e.ID, Event: e.Kind, Data: string(e.Data)}
			return nil
		})
	}()
	return out
}

// openStream sends a request that answers a stream of events; the response's body is the caller's to close.
func openStream(t *testing.T, a *testAPI, method, path string, body any, header map[string]string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// collect reads events until the channel closes or within, whichever is first.
func collect(t *testing.T, events <-chan sseEvent, within time.Duration) []sseEvent {
	t.Helper()
	return plain(readUntil(t, events, within, nil))
}

func kinds(events []sseEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Event
	}
	return out
}

// requireSeq checks the events are numbered from first, one after another.
func requireSeq(t *testing.T, events []sseEvent, first int64) {
	t.Helper()
	for i, e := range events {
		require.Equal(t, first+int64(i), e.ID, "event %d (%s)", i, e.Event)
	}
}

// TestChatStreamsItsEvents: a chat turn asked with Accept: text/event-stream streams its journal as it is
// recorded — run started, each LLM step started and ended (with its tokens, attempt and latency), the call
// enqueued, its receipt, the answer, run ended — and ends with the turn's response. GET
// /brain/runs/{id}/events gives the same events from the database, and resumes after Last-Event-ID.
// Before, the chat answered once at the end and ignored the Accept header, and no run had events.
func TestChatStreamsItsEvents(t *testing.T) {
	t.Parallel()
	title := "stream " + uuid.NewString()[:8]
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task",
			Arguments: fmt.Sprintf(`{"title": %q, "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`, title)}}},
		llmfake.Turn{Text: "Done: it is on your list."})
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	sent := time.Now()
	resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "add a task", "user_id": "user-1"}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	stream := readSSE(resp.Body)
	first := <-stream
	t.Logf("first event %s after the request", time.Since(sent).Round(time.Microsecond))
	events := append([]sseEvent{first}, collect(t, stream, 30*time.Second)...)

	want := []string{"run_started", "llm_started", "llm_ended", "call_enqueued", "receipt", "llm_started", "text", "llm_ended", "answer", "run_ended", "response"}
	require.Equal(t, want, kinds(events))
	requireSeq(t, events[:len(events)-1], 1)
	require.Zero(t, events[len(events)-1].ID, "the response is no event of the run: a client resuming never sees it again")

	var ended map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[2].Data), &ended))
	require.EqualValues(t, 1, ended["iteration"])
	require.EqualValues(t, 1, ended["attempt"])
	require.EqualValues(t, 0, ended["retries"])
	require.Contains(t, ended, "latency_ms")
	require.Contains(t, ended["tokens"], "input_tokens")
	var call, receipt map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[3].Data), &call))
	require.Equal(t, "os.create_task", call["tool"])
	require.NoError(t, json.Unmarshal([]byte(events[4].Data), &receipt))
	require.Equal(t, call["call_id"], receipt["call_id"])
	require.Equal(t, "succeeded", receipt["status"])
	require.JSONEq(t, `{"text": "Done: it is on your list."}`, events[6].Data, "an answer that streamed within GEM_BRAIN_CHAT_TEXT_INTERVAL is one text event")
	require.JSONEq(t, `{"reply": "Done: it is on your list."}`, events[8].Data)
	require.JSONEq(t, `{"status": "completed"}`, events[9].Data)
	var final brain.ChatResponse
	require.NoError(t, json.Unmarshal([]byte(events[10].Data), &final))
	require.True(t, final.OK, "%+v", final.Errors)
	require.Equal(t, "Done: it is on your list.", final.Reply)
	var started map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[0].Data), &started))
	require.Equal(t, final.SessionID, started["session_id"])

	// The same events, read back from the database; and from after the third.
	path := "/brain/runs/" + final.RunID.String() + "/events"
	again := collect(t, readSSE(openStream(t, a, http.MethodGet, path, nil, nil).Body), 10*time.Second)
	require.Equal(t, want[:len(want)-1], kinds(again))
	for i := range again {
		require.Equal(t, events[i], again[i])
	}
	rest := collect(t, readSSE(openStream(t, a, http.MethodGet, path, nil, map[string]string{"Last-Event-ID": "3"}).Body), 10*time.Second)
	require.Equal(t, want[3:len(want)-1], kinds(rest))
	requireSeq(t, rest, 4)

	var e errorResponse
	require.Equal(t, http.StatusNotFound, a.do(http.MethodGet, "/brain/runs/"+uuid.Must(uuid.NewV7()).String()+"/events", nil, &e))
	require.Equal(t, http.StatusBadRequest, openStream(t, a, http.MethodGet, path, nil, map[string]string{"Last-Event-ID": "x"}).StatusCode)
}

// TestAsyncRequests: "async": true (or Prefer: respond-async) on POST /brain/run, /agents/{slug}/chat and
// /operator/chat answers 202 at once with the run (and the session) and its Location; the work goes on, and
// its events tell when it ends. A retry with the request's key answers the same run. Before, async was an
// unknown property (400) and the header was ignored: the client waited for the whole turn.
func TestAsyncRequests(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	asked := make(chan struct{}, 4)
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Blocking(llmfake.Turn{Text: "Later, as promised."}, asked, release))
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	// A chat: 202 while the LLM has not answered yet.
	key := "async-" + uuid.NewString()
	body := map[string]any{"message": "take your time", "user_id": "user-1", "async": true}
	status, data, err := post(a, "/agents/"+agent+"/chat", body, map[string]string{brain.IdempotencyKeyHeader: key})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	var accepted struct {
		OK        bool      `json:"ok"`
		RunID     uuid.UUID `json:"run_id"`
		SessionID string    `json:"session_id"`
		Location  string    `json:"location"`
		Events    string    `json:"events"`
	}
	require.NoError(t, json.Unmarshal(data, &accepted))
	require.True(t, accepted.OK)
	require.NotEmpty(t, accepted.SessionID)
	require.Equal(t, "/brain/runs/"+accepted.RunID.String(), accepted.Location)
	<-asked
	run := a.getRun(accepted.RunID)
	require.Equal(t, brain.RunPlanning, run.Status, "the turn is still answering")

	// The retry, with the header this time: the same run, at once.
	delete(body, "async")
	status, data, err = post(a, "/agents/"+agent+"/chat", body, map[string]string{brain.IdempotencyKeyHeader: key, "Prefer": "respond-async"})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	var repeat map[string]any
	require.NoError(t, json.Unmarshal(data, &repeat))
	require.Equal(t, accepted.RunID.String(), repeat["run_id"])
	require.Equal(t, accepted.SessionID, repeat["session_id"])

	close(release)
	events := collect(t, readSSE(openStream(t, a, http.MethodGet, accepted.Events, nil, nil).Body), 30*time.Second)
	require.Equal(t, []string{"run_started", "llm_started", "text", "llm_ended", "answer", "run_ended"}, kinds(events))
	require.JSONEq(t, `{"reply": "Later, as promised."}`, events[4].Data)
	require.Len(t, fake.Requests(), 1, "the retry asked nothing")

	// POST /brain/run: 202 once the run and its call are recorded; its events end with the answer.
	runKey := "async-run-" + uuid.NewString()
	title := "async run " + uuid.NewString()[:8]
	runBody := map[string]any{"message": "create a task to " + title, "mode": "enqueue_and_wait", "async": true}
	status, data, err = post(a, "/brain/run", runBody, map[string]string{brain.IdempotencyKeyHeader: runKey})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	var runAccepted map[string]any
	require.NoError(t, json.Unmarshal(data, &runAccepted))
	runID := runAccepted["run_id"].(string)
	events = collect(t, readSSE(openStream(t, a, http.MethodGet, "/brain/runs/"+runID+"/events", nil, nil).Body), 30*time.Second)
	require.Equal(t, []string{"run_started", "call_enqueued", "receipt", "answer", "run_ended"}, kinds(events))
	require.Contains(t, events[2].Data, `"status": "succeeded"`)
	status, data, err = post(a, "/brain/run", runBody, map[string]string{brain.IdempotencyKeyHeader: runKey})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	require.NoError(t, json.Unmarshal(data, &runAccepted))
	require.Equal(t, runID, runAccepted["run_id"], "a retry answers the same run")
	require.Equal(t, 1, testenv.CountCalls(t, shared.pool, uuid.MustParse(runID)))

	// POST /operator/chat, answered by the rules (the shared brain has no LLM).
	rules := newAPI(t)
	status, data, err = post(rules, "/operator/chat", map[string]any{"message": "health check"}, map[string]string{"Prefer": "respond-async"})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	var op map[string]any
	require.NoError(t, json.Unmarshal(data, &op))
	require.NotEmpty(t, op["session_id"])
	events = collect(t, readSSE(openStream(t, rules, http.MethodGet, "/brain/runs/"+op["run_id"].(string)+"/events", nil, nil).Body), 30*time.Second)
	require.Equal(t, "run_ended", events[len(events)-1].Event)
}

// TestRunEventsAcrossBrainRestart: a client follows a chat turn's events from brain A; A is SIGKILLed while
// it waits for the LLM's second answer, and the stream breaks. The client reconnects to brain B with
// Last-Event-ID: B, which took the turn over, streams the rest from the database — the takeover, the second
// LLM step, the answer, run ended — with no event lost or repeated. Before, there were no events to follow.
func TestRunEventsAcrossBrainRestart(t *testing.T) {
	t.Parallel()
	k := newKillableBrains(t, 0, healthCheckTurns)
	a, apiA, m, apiB := k.a, k.apiA, k.b, k.apiB
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("health"): {"os.health_check"}})

	status, data, err := post(apiA, "/agents/"+agent+"/chat", map[string]any{"message": "is all well?", "user_id": "user-1", "async": true}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	var accepted struct {
		RunID  uuid.UUID `json:"run_id"`
		Events string    `json:"events"`
	}
	require.NoError(t, json.Unmarshal(data, &accepted))

	// From A, until A asks for the second answer.
	fromA := readSSE(openStream(t, apiA, http.MethodGet, accepted.Events, nil, nil).Body)
	var seen []sseEvent
	for len(seen) == 0 || seen[len(seen)-1].Event != "llm_started" || len(seen) < 6 {
		select {
		case e, ok := <-fromA:
			require.True(t, ok, "A's stream ended early: %v", kinds(seen))
			seen = append(seen, e)
		case <-time.After(30 * time.Second):
			t.Fatalf("A's stream stalled: %v", kinds(seen))
		}
	}
	k.awaitAsked(t)
	require.NoError(t, a.Process.Kill())
	_ = a.Wait()
	k.release()
	for range fromA { // A's stream breaks with A
	}
	require.Equal(t, []string{"run_started", "llm_started", "llm_ended", "call_enqueued", "receipt", "llm_started"}, kinds(seen))

	// The rest from B, after the last event the client saw.
	last := seen[len(seen)-1].ID
	rest := collect(t, readSSE(openStream(t, apiB, http.MethodGet, accepted.Events, nil,
		map[string]string{"Last-Event-ID": strconv.FormatInt(last, 10)}).Body), 30*time.Second)
	require.Equal(t, []string{"run_resumed", "llm_started", "text", "llm_ended", "answer", "run_ended"}, kinds(rest))
	requireSeq(t, append(seen, rest...), 1)
	require.JSONEq(t, `{"reply": "All healthy."}`, rest[4].Data)
	require.JSONEq(t, `{"owner": "`+m.Chat.Owner()+`"}`, rest[0].Data)
}

// TestCLIFollowsRuns: `brain run --follow` answers at once and prints the run's events as they come, then
// its answer; `brain chat AGENT MESSAGE` prints the turn's events, then the agent's reply. Before, neither
// existed (unknown flag, unknown command).
func TestCLIFollowsRuns(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "h1", Name: "os__health_check", Arguments: `{}`}}, Check: func(t require.TestingT, req *llmfake.Request) {
			last := req.Messages[len(req.Messages)-1]
			require.Equal(t, "is everything running?", last.Content, "the flags after the message are flags, not words of it")
		}},
		llmfake.Turn{Text: "Everything is running."})
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("health"): {"os.health_check"}})
	env := map[string]string{"GEM_BRAIN_URL": a.url, "GEM_BRAIN_TOKEN": testToken}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli(args, func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// eventKinds are the kinds of the event lines printed ("  N kind {data}"), in order.
	eventKinds := func(out string) []string {
		var kinds []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && strings.HasPrefix(f[2], "{") {
				if _, err := strconv.Atoi(f[0]); err == nil {
					kinds = append(kinds, f[1])
				}
			}
		}
		return kinds
	}

	title := "follow " + uuid.NewString()[:8]
	code, out, errOut := run("run", "--follow", "-m", "create a task to "+title)
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, []string{"run_started", "call_enqueued", "receipt", "answer", "run_ended"}, eventKinds(out), out)
	require.Contains(t, out, "ok (HTTP 200)")
	require.Contains(t, out, "os.create_task")
	require.Contains(t, out, "Created task")

	code, out, errOut = run("chat", agent, "is", "everything", "running?", "-user", "cli-tester")
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, []string{"run_started", "llm_started", "llm_ended", "call_enqueued", "receipt", "llm_started", "llm_ended", "answer", "run_ended"},
		eventKinds(out), out)
	require.Contains(t, out, "Everything is running.")
	require.Regexp(t, `(?s)llm_started .*\n      │ Everything is running\.\n +\d+ llm_ended .*ok  run [0-9a-f-]{36}  session [0-9a-f-]{36}  completed`, out,
		"the text the model wrote is printed as it comes, under its llm_started")

	code, out, _ = run("chat", "no-such-agent", "hello")
	require.Equal(t, 1, code)
	require.Contains(t, out, "HTTP 404")

	// brain run's message may be its remaining words, its flags after them.
	code, out, errOut = run("run", "list", "urgent", "tasks", "-M", "plan", "-json")
	require.Equal(t, 0, code, out+errOut)
	var planned brain.RunResponse
	require.NoError(t, json.Unmarshal([]byte(out), &planned), out)
	require.Equal(t, brain.RunPlanned, planned.Status, "-M after the words is the mode: %s", out)
	require.Len(t, planned.PlannedToolCalls, 1, "the words are the message: %s", out)
	require.Equal(t, "os.list_tasks", planned.PlannedToolCalls[0].Tool)
	require.Empty(t, planned.Enqueued)
}

// TestRunEventsHeldCall: a turn whose call waits for a person's approval tells it in its events
// (call_awaiting_approval, after call_enqueued), and no receipt until it is decided.
func TestRunEventsHeldCall(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()
	_, err = pool.Exec(t.Context(), `INSERT INTO core_approval_policies (permission, expires_ms, note) VALUES ('read:reminders', 600000, 'events test')`)
	require.NoError(t, err)
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "r1", Name: "os__list_reminders", Arguments: `{}`}}},
		llmfake.Turn{Text: "It waits for your approval."})
	a := llmBrainWith(t, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.DatabaseURL = dbURL }) // its own database: the policy holds no other test
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("reminders"): {"os.list_reminders"}})

	resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "my reminders?", "user_id": "user-1"}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := collect(t, readSSE(resp.Body), 30*time.Second)
	require.Equal(t, []string{"run_started", "llm_started", "llm_ended", "call_enqueued", "call_awaiting_approval", "llm_started", "text", "llm_ended",
		"answer", "run_ended", "response"}, kinds(events))
	require.Equal(t, events[3].Data, events[4].Data, "the same call")
	require.Contains(t, events[4].Data, `"tool": "os.list_reminders"`)
}

// TestQueuedTurnAnswersAsyncAndStreams: a message queued behind the running turn (if_busy "enqueue") with
// "async": true answers 202 at once with its run, queued; one asked with Accept: text/event-stream streams
// the queued run from its start — run_started (queued), then its steps once a brain starts it — and ends
// with its response. Before, both waited, silent, for the turn ahead of them (the async one for the whole
// repeat wait), since a queued turn never told the request its run.
func TestQueuedTurnAnswersAsyncAndStreams(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 4), make(chan struct{})
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Blocking(llmfake.Turn{Text: "first"}, asked, release),
		llmfake.Turn{Text: "second"},
		llmfake.Turn{Text: "third"})
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	agent := agentWithSkills(t, a, 3, nil)
	session := "queued-live-" + uuid.NewString()
	body := func(message string, extra map[string]any) map[string]any {
		b := map[string]any{"message": message, "user_id": "user-1", "session_id": session, "if_busy": "enqueue"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}

	first := make(chan int, 1)
	go func() {
		status, _, err := post(a, "/agents/"+agent+"/chat", map[string]any{"message": "one", "user_id": "user-1", "session_id": session}, nil)
		require.NoError(t, err)
		first <- status
	}()
	<-asked

	// Async: 202 at once, the run queued.
	answered := make(chan struct{})
	var accepted brain.ChatResponse
	go func() {
		defer close(answered)
		status, data, err := post(a, "/agents/"+agent+"/chat", body("two", map[string]any{"async": true}), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, status, "%s", data)
		require.NoError(t, json.Unmarshal(data, &accepted))
	}()
	select {
	case <-answered:
	case <-time.After(5 * time.Second):
		t.Fatal("an async message queued behind a running turn did not answer at once")
	}
	require.NotEqual(t, uuid.Nil, accepted.RunID)
	var status string
	require.NoError(t, shared.pool.QueryRow(t.Context(), `SELECT status FROM brain_runs WHERE id = $1`, accepted.RunID).Scan(&status))
	require.Equal(t, brain.RunQueued, status)

	// Streamed: the queued run's first event comes while the turn ahead still runs.
	resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", body("three", nil), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stream := readSSE(resp.Body)
	var started sseEvent
	select {
	case started = <-stream:
	case <-time.After(5 * time.Second):
		t.Fatal("a streamed message queued behind a running turn sent no event while it waited")
	}
	require.Equal(t, "run_started", started.Event)
	require.JSONEq(t, fmt.Sprintf(`{"mode": "chat", "agent": %q, "session_id": %q, "status": "queued"}`, agent, session), started.Data)

	once.Do(func() { close(release) })
	require.Equal(t, http.StatusOK, <-first)
	events := collect(t, stream, 30*time.Second)
	require.Equal(t, []string{"llm_started", "text", "llm_ended", "answer", "run_ended", "response"}, kinds(events))
	var final brain.ChatResponse
	require.NoError(t, json.Unmarshal([]byte(events[len(events)-1].Data), &final))
	require.Equal(t, "third", final.Reply)
	require.Equal(t, brain.RunCompleted, final.Status)

	// The async one ran too, before it.
	var reply string
	require.NoError(t, shared.pool.QueryRow(t.Context(), `SELECT status, assistant_message FROM brain_runs WHERE id = $1`, accepted.RunID).Scan(&status, &reply))
	require.Equal(t, brain.RunCompleted, status)
	require.Equal(t, "second", reply)
}
