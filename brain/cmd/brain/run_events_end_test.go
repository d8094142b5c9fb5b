package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

// TestNoEventAfterTheEndFromABrainFencedOut: brain A asks the LLM and stalls (SIGSTOP) past its lease; brain
// B takes the turn over and ends it. A wakes to its LLM's answer — a refusal — and records the attempt, as
// every attempt is (brain_turns: the tokens were asked for). The run's events still end with its one
// run_ended: the fenced-out brain's attempt is in brain_turns, not an llm_ended after the end. Before, its
// llm_ended came after run_ended (those writes are not under the run's fence), so a client resuming after
// run_ended, or reading the table, saw the run go on after it had ended.
func TestNoEventAfterTheEndFromABrainFencedOut(t *testing.T) {
	t.Parallel()
	k := newKillableBrains(t, 0, func(hold func(llmfake.Turn) llmfake.Turn) []llmfake.Turn {
		return []llmfake.Turn{
			hold(llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusBadRequest, Message: "the stalled brain's request is refused"}}),
			{Text: "Done, by the brain that took over."},
		}
	})
	a, apiA, apiB, pool := k.a, k.apiA, k.apiB, k.pool
	t.Cleanup(func() { _ = a.Process.Signal(syscall.SIGCONT) })
	agent := agentWithSkills(t, apiB, 3, nil)

	status, data, err := post(apiA, "/agents/"+agent+"/chat", map[string]any{"message": "hello", "user_id": "user-1", "async": true}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
	var accepted struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(data, &accepted))
	runID := accepted.RunID
	k.awaitAsked(t)
	require.NoError(t, a.Process.Signal(syscall.SIGSTOP))
	require.Eventually(t, func() bool {
		var st string
		return pool.QueryRow(t.Context(), `SELECT status FROM brain_runs WHERE id = $1`, runID).Scan(&st) == nil && st == "completed"
	}, 30*time.Second, 50*time.Millisecond, "brain B did not end the turn")

	k.release()
	require.NoError(t, a.Process.Signal(syscall.SIGCONT))
	require.Eventually(t, func() bool {
		var n int
		return pool.QueryRow(t.Context(), `SELECT count(*) FROM brain_turns WHERE run_id = $1 AND error IS NOT NULL`, runID).Scan(&n) == nil && n == 1
	}, 30*time.Second, 50*time.Millisecond, "brain A did not record its refused attempt")
	time.Sleep(500 * time.Millisecond) // its event, if any, is written with the attempt

	rows, err := pool.Query(t.Context(), `SELECT kind FROM brain_run_events WHERE run_id = $1 ORDER BY seq`, runID)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		got = append(got, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, "run_ended", got[len(got)-1], "the last event: %v", got)
	require.Equal(t, 1, strings.Count(strings.Join(got, " "), "run_ended"), "%v", got)
}

// TestRunEndedNamesCallsStillRunning: a turn that answers while one of its calls still runs (its wait ended
// first) ends its events with run_ended naming that call (pending_calls): its receipt is no event of this
// stream, which ends there, and the client knows which calls to follow (GET /calls/{id}?wait=). Before,
// run_ended said only the status, and the call's receipt never came to a client that streamed the turn.
func TestRunEndedNamesCallsStillRunning(t *testing.T) {
	t.Parallel()
	create := llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task",
		Arguments: `{"title": "ring Lee", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}}
	fake := llmfake.NewOpenAI(t, fakeKey, create, llmfake.Turn{Text: "It is being made."})
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{WaitTimeout: time.Nanosecond})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "add a task to ring Lee", "user_id": "user-1"}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Regexp(t, `^/brain/runs/[0-9a-f-]{36}/events$`, resp.Header.Get("Content-Location"))
	events := collect(t, readSSE(resp.Body), 30*time.Second)
	var final struct {
		ToolCalls []struct {
			CallID string `json:"call_id"`
			Status string `json:"status"`
		} `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[len(events)-1].Data), &final))
	var pending []string
	for _, c := range final.ToolCalls {
		if c.Status == "pending" {
			pending = append(pending, c.CallID)
		}
	}
	require.NotEmpty(t, pending, "the call was still running when the turn answered")
	ended := events[len(events)-2]
	require.Equal(t, "run_ended", ended.Event)
	var data struct {
		Status       string   `json:"status"`
		PendingCalls []string `json:"pending_calls"`
	}
	require.NoError(t, json.Unmarshal([]byte(ended.Data), &data))
	require.Equal(t, "completed", data.Status)
	require.Equal(t, pending, data.PendingCalls)
}
