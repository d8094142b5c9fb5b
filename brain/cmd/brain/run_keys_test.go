package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// post sends a JSON request from any goroutine (it never calls t), with extra headers.
func post(a *testAPI, path string, body any, header map[string]string) (int, []byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, a.url+path, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// TestRunRequestKey: POST /brain/run takes a request's key from the Idempotency-Key header or the body's
// idempotency_key (the run service makes a keyed request once: brain/run's TestRunRequestKey); a retry with
// it answers the first run, repeated; the same key with another message is 422 naming the run; GET
// /brain/runs?idempotency_key= finds the run. Before, the key was an unknown property (400) and every retry
// made another task.
func TestRunRequestKey(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	key := "run-key-" + uuid.NewString()
	title := "retry-safe " + uuid.NewString()[:8]
	body := map[string]any{"message": "create a task to " + title, "mode": "enqueue_and_wait"}

	status, out, err := post(a, "/brain/run", body, map[string]string{brain.IdempotencyKeyHeader: key})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "%s", out)
	var made brain.RunResponse
	require.NoError(t, json.Unmarshal(out, &made))
	require.True(t, made.OK, "%+v", made.Errors)
	require.False(t, made.Repeated)
	first := made.RunID

	// Later, in the body: the same run, its receipts as GET /brain/runs/{id} gives them.
	again, status := a.run(map[string]any{"message": body["message"], "mode": "enqueue_and_wait", "idempotency_key": key})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, first, again.RunID)
	require.True(t, again.Repeated)
	require.Len(t, again.Receipts, 1)
	require.Equal(t, 1, countCalls(t, shared.pool, first))

	var e errorResponse
	require.Equal(t, http.StatusUnprocessableEntity, a.do(http.MethodPost, "/brain/run",
		map[string]any{"message": "create a task to something else", "mode": "enqueue_and_wait", "idempotency_key": key}, &e))
	require.Equal(t, brain.EKEYREUSED, e.Errors[0].Code)
	require.Equal(t, first.String(), e.Errors[0].Details.(map[string]any)["run_id"])

	var found brain.RunResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/runs?idempotency_key="+key, nil, &found))
	require.Equal(t, first, found.RunID)
	require.Equal(t, http.StatusNotFound, a.do(http.MethodGet, "/brain/runs?idempotency_key=never-sent-"+uuid.NewString(), nil, &e))
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodGet, "/brain/runs?idempotency_key=", nil, &e))
}

// TestOperatorChatRequestKey: a retried POST /operator/chat (rules, no LLM) with its key answers the first
// request's run and session and makes no second task, even without the session_id the first was given.
func TestOperatorChatRequestKey(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	key := "op-key-" + uuid.NewString()
	title := "operator retry " + uuid.NewString()[:8]
	var first, second brain.OperatorChatResponse
	body := map[string]any{"message": "create a task to " + title, "idempotency_key": key}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/operator/chat", body, &first))
	require.True(t, first.OK, "%+v", first.Errors)
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/operator/chat", body, &second))
	require.Equal(t, first.RunID, second.RunID)
	require.Equal(t, first.SessionID, second.SessionID)
	require.Equal(t, 1, countCalls(t, shared.pool, first.RunID))
}

// blockingTurn is a scripted LLM answer that waits for release before it is sent, and says when it is asked.
func blockingTurn(turn llmfake.Turn, asked chan<- struct{}, release <-chan struct{}) llmfake.Turn {
	check := turn.Check
	turn.Check = func(t require.TestingT, req *llmfake.Request) {
		asked <- struct{}{}
		<-release
		if check != nil {
			check(t, req)
		}
	}
	return turn
}

// TestChatOneTurnAtATime: fifty messages sent at the same instant to one session. Exactly one turn runs;
// the 49 others are refused 409 naming its run, while it runs — none is admitted beside it, so no LLM
// request sees another client's message. Before, the session's guard was a check of other runs followed by
// an insert, which requests arriving together all passed.
func TestChatOneTurnAtATime(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 64), make(chan struct{})
	fake := llmfake.NewOpenAI(t, fakeKey, blockingTurn(llmfake.Turn{Text: "One at a time."}, asked, release))
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the brain closes: a failed test must not leave it blocked
	agent := agentWithSkills(t, a, 3, nil)
	session := "one-turn-" + uuid.NewString()

	const n = 50
	type answer struct {
		status int
		resp   brain.ChatResponse
		err    errorResponse
		fail   error
	}
	answers := make(chan answer, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			var an answer
			var out []byte
			an.status, out, an.fail = post(a, "/agents/"+agent+"/chat", map[string]any{"message": "hello", "user_id": "user-1", "session_id": session}, nil)
			if an.fail == nil && an.status == http.StatusOK {
				an.fail = json.Unmarshal(out, &an.resp)
			} else if an.fail == nil {
				an.fail = json.Unmarshal(out, &an.err)
			}
			answers <- an
		}()
	}
	close(start)
	var refused []answer
	for range n - 1 {
		select {
		case an := <-answers:
			require.NoError(t, an.fail)
			require.Equal(t, http.StatusConflict, an.status, "a second turn was admitted beside the first: %+v %+v", an.resp, an.err.Errors)
			refused = append(refused, an)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d requests were answered while the turn ran", len(refused), n-1)
		}
	}
	once.Do(func() { close(release) })
	admitted := <-answers
	require.NoError(t, admitted.fail)
	require.Equal(t, http.StatusOK, admitted.status, "%+v", admitted.err)
	require.Equal(t, "One at a time.", admitted.resp.Reply)
	for _, an := range refused {
		require.Equal(t, brain.ECONFLICT, an.err.Errors[0].Code)
		require.Equal(t, admitted.resp.RunID.String(), an.err.Errors[0].Details.(map[string]any)["run_id"], "the refusal names the running turn")
	}
	require.Len(t, fake.Requests(), 1, "one LLM request, with one user message")
	require.Len(t, asked, 1)

	// The turn over, the session takes the next message.
	fake.Push(llmfake.Turn{Text: "Next."})
	next, status := chatWith(t, a, agent, "and now?", session)
	require.Equal(t, http.StatusOK, status, "%+v", next.Errors)
	require.Equal(t, "Next.", next.Reply)
}

// TestChatRequestKey: a chat turn that made a task, retried with its key — while it still runs, and after —
// answers the first turn (repeated) and asks the LLM nothing more, makes no second task; the same key with
// another message is refused 422.
func TestChatRequestKey(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 4), make(chan struct{})
	create := llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task", Arguments: `{"title": "ring Bea", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}}
	fake := llmfake.NewOpenAI(t, fakeKey, create, blockingTurn(llmfake.Turn{Text: "Bea is on your list."}, asked, release))
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	a.brain.Chat.TestSignals.RepeatWaits.Init(t)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	key := "chat-key-" + uuid.NewString()
	body := map[string]any{"message": "add a task to ring Bea", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}

	type answer struct {
		status int
		resp   brain.ChatResponse
		fail   error
	}
	send := func(out chan<- answer) {
		var an answer
		var data []byte
		an.status, data, an.fail = post(a, "/agents/"+agent+"/chat", body, header)
		if an.fail == nil {
			an.fail = json.Unmarshal(data, &an.resp)
		}
		out <- an
	}
	firstC, retryC := make(chan answer, 1), make(chan answer, 1)
	go send(firstC)
	<-asked // the first turn made its task and waits for its final answer

	// Meanwhile the run is shown as it is: waiting on its brain, with its journaled step; reading it does
	// not "complete" it with a made-up answer. Before, GET /brain/runs/{id} answered a chat run whose
	// receipts were in from the rules' describer, and marked it completed.
	var runID string
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT id FROM brain_runs WHERE idempotency_key = $1`, key).Scan(&runID))
	var during brain.RunResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/runs/"+runID, nil, &during))
	require.Equal(t, brain.RunWaiting, during.Status)
	require.Empty(t, during.AssistantMessage)
	require.NotEmpty(t, during.Owner)
	require.NotNil(t, during.LeaseUntil)
	require.Len(t, during.Steps, 1)
	require.Equal(t, 1, during.Steps[0].ToolCalls)
	require.Len(t, during.Receipts, 1)
	studio := newStudioClient(t, a.url)
	studio.login(testToken)
	status, page := studio.get("/studio/runs/" + runID)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `id="run-owner">`+during.Owner+`<`, "the studio shows which brain answers the turn")
	require.Contains(t, page, `id="run-lease"`)
	require.Contains(t, page, `id="run-steps"`)

	go send(retryC)
	require.Equal(t, runID, a.brain.Chat.TestSignals.RepeatWaits.Wait().String(), "the retry waits for the first turn, not making its own")
	once.Do(func() { close(release) })
	first, retry := <-firstC, <-retryC
	require.NoError(t, first.fail)
	require.NoError(t, retry.fail)
	require.Equal(t, http.StatusOK, first.status, "%+v", first.resp.Errors)
	require.Equal(t, http.StatusOK, retry.status, "%+v", retry.resp.Errors)
	require.False(t, first.resp.Repeated)
	require.True(t, retry.resp.Repeated)
	require.Equal(t, first.resp.RunID, retry.resp.RunID)
	require.Equal(t, first.resp.SessionID, retry.resp.SessionID)
	require.Equal(t, "Bea is on your list.", retry.resp.Reply)
	require.Equal(t, first.resp.ToolCalls, retry.resp.ToolCalls)

	// After: the same answer again, from the run's record.
	var later brain.ChatResponse
	status, data, err := post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, json.Unmarshal(data, &later))
	require.Equal(t, first.resp.RunID, later.RunID)
	require.Equal(t, "Bea is on your list.", later.Reply)

	require.Len(t, fake.Requests(), 2, "the LLM was asked for the first turn only")
	var after brain.RunResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/runs/"+runID, nil, &after))
	require.Equal(t, brain.RunCompleted, after.Status)
	require.Equal(t, "Bea is on your list.", after.AssistantMessage, "the agent's reply, not a describer's")
	require.Empty(t, after.Owner)
	require.Len(t, after.Steps, 2)
	require.Equal(t, 1, countCalls(t, shared.pool, first.resp.RunID))

	status, data, err = post(a, "/agents/"+agent+"/chat", map[string]any{"message": "add a task to ring Cy", "user_id": "user-1"}, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", data)
	require.Contains(t, string(data), brain.EKEYREUSED)
}

// TestChatIfBusyEnqueue: two messages sent while a turn runs, with "if_busy": "enqueue", wait behind it
// instead of being refused, and run after it, in the order they came: each LLM request sees the turns
// before it whole, never two user messages in a row. Before, if_busy was an unknown property (400).
func TestChatIfBusyEnqueue(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 4), make(chan struct{})
	roles := func(req *llmfake.Request) []string {
		out := []string{}
		for _, m := range req.Messages {
			out = append(out, m.Role+":"+m.Content)
		}
		return out
	}
	fake := llmfake.NewOpenAI(t, fakeKey,
		blockingTurn(llmfake.Turn{Text: "first"}, asked, release),
		llmfake.Turn{Text: "second", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Equal(t, []string{"user:one", "assistant:first", "user:two"}, roles(req))
		}},
		llmfake.Turn{Text: "third", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Equal(t, []string{"user:one", "assistant:first", "user:two", "assistant:second", "user:three"}, roles(req))
		}})
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	agent := agentWithSkills(t, a, 3, nil)
	session := "queue-" + uuid.NewString()

	type answer struct {
		status int
		resp   brain.ChatResponse
		fail   error
	}
	send := func(message string, ifBusy string, out chan<- answer) {
		body := map[string]any{"message": message, "user_id": "user-1", "session_id": session}
		if ifBusy != "" {
			body["if_busy"] = ifBusy
		}
		var an answer
		var data []byte
		an.status, data, an.fail = post(a, "/agents/"+agent+"/chat", body, nil)
		if an.fail == nil {
			an.fail = json.Unmarshal(data, &an.resp)
		}
		out <- an
	}
	queued := func(n int) {
		require.Eventually(t, func() bool {
			var got int
			require.NoError(t, shared.pool.QueryRow(context.Background(),
				`SELECT count(*) FROM brain_runs WHERE conversation_id = $1 AND status = 'queued'`, session).Scan(&got))
			return got == n
		}, 10*time.Second, 10*time.Millisecond)
	}
	one, two, three := make(chan answer, 1), make(chan answer, 1), make(chan answer, 1)
	go send("one", "", one)
	<-asked
	go send("two", "enqueue", two)
	queued(1)
	go send("three", "enqueue", three)
	queued(2)
	var refused errorResponse
	require.Equal(t, http.StatusConflict, a.do(http.MethodPost, "/agents/"+agent+"/chat",
		map[string]any{"message": "four", "user_id": "user-1", "session_id": session}, &refused), "without if_busy a busy session still refuses")
	once.Do(func() { close(release) })

	for i, ch := range []chan answer{one, two, three} {
		an := <-ch
		require.NoError(t, an.fail)
		require.Equal(t, http.StatusOK, an.status, "message %d: %+v", i+1, an.resp)
		require.True(t, an.resp.OK, "message %d: %+v", i+1, an.resp.Errors)
		require.Equal(t, []string{"first", "second", "third"}[i], an.resp.Reply)
		require.Equal(t, brain.RunCompleted, an.resp.Status)
	}
	require.Zero(t, fake.Remaining())
}
