package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/gemhq/gem/brain/internal/testenv"
	"io"
	"net/http"
	"sync"
	"testing"

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
	require.Equal(t, 1, testenv.CountCalls(t, shared.pool, first))

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
	require.Equal(t, 1, testenv.CountCalls(t, shared.pool, first.RunID))
}

// TestChatRequestKey: a chat turn that made a task, retried with its key — while it still runs, and after —
// answers the first turn (repeated) and asks the LLM nothing more, makes no second task; the same key with
// another message is refused 422.
func TestChatRequestKey(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 4), make(chan struct{})
	create := llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task", Arguments: `{"title": "ring Bea", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}}
	fake := llmfake.NewOpenAI(t, fakeKey, create, llmfake.Blocking(llmfake.Turn{Text: "Bea is on your list."}, asked, release))
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
	require.Equal(t, 1, testenv.CountCalls(t, shared.pool, first.resp.RunID))

	status, data, err = post(a, "/agents/"+agent+"/chat", map[string]any{"message": "add a task to ring Cy", "user_id": "user-1"}, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", data)
	require.Contains(t, string(data), brain.EKEYREUSED)
}
