package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/gemhq/gem/brain/internal/testenv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// llmBrainWith starts a brain on the shared database whose LLM is a fake of provider, with edit (if any)
// applied to its configuration.
func llmBrainWith(t *testing.T, provider string, fake *llmfake.Server, edit func(*Config)) *testAPI {
	t.Helper()
	return llmBrainOn(t, shared.dbURL, provider, fake, edit)
}

// llmBrainOn is llmBrainWith on the database at dbURL (a test's own, when it counts what the database holds).
func llmBrainOn(t *testing.T, dbURL, provider string, fake *llmfake.Server, edit func(*Config)) *testAPI {
	t.Helper()
	base := fake.URL + "/v1"
	if provider == llmconfig.ProviderAnthropic {
		base = fake.URL
	}
	m, err := startBrain(dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: provider, BaseURL: base, APIKey: fakeKey, Model: "fake-model"}
		if edit != nil {
			edit(c)
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return &testAPI{t: t, url: m.Server.URL(), token: testToken, brain: m}
}

// newFake starts a fake of provider answering turns.
func newFake(t *testing.T, provider string, turns ...llmfake.Turn) *llmfake.Server {
	if provider == llmconfig.ProviderAnthropic {
		return llmfake.NewAnthropic(t, fakeKey, turns...)
	}
	return llmfake.NewOpenAI(t, fakeKey, turns...)
}

// chatAnswer is one chat request's answer, its Retry-After and how long it took; a client gives up after
// a minute (the faults below must end well before).
type chatAnswer struct {
	status     int
	retryAfter string
	took       time.Duration
	resp       brain.ChatResponse
}

func chatTimed(t *testing.T, a *testAPI, agent, message string) *chatAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"message": message, "user_id": "user-1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+"/agents/"+agent+"/chat", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the chat did not answer within a minute")
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := &chatAnswer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), took: time.Since(start)}
	require.NoError(t, json.Unmarshal(data, &out.resp), "%s", data)
	return out
}

// turnRows are a run's brain_turns rows: iteration, attempt, and the error code of each ("" when none).
func turnRows(t *testing.T, runID uuid.UUID) []string {
	t.Helper()
	rows, err := shared.pool.Query(context.Background(), `SELECT iteration || '.' || attempt || ':' || coalesce(error ->> 'code', '')
		FROM brain_turns WHERE run_id = $1 ORDER BY id`, runID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// TestLLMRejectedIs422: a provider's 400 ("context length exceeded") is the client's 422 llm_rejected
// with the provider's message, asked once (sending it again fails again), on both wire formats.
func TestLLMRejectedIs422(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			const msg = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens."
			fake := newFake(t, provider, llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusBadRequest, Message: msg}})
			a := llmBrainWith(t, provider, fake, nil)
			agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

			got := chatTimed(t, a, agent, "summarise everything")
			require.Equal(t, http.StatusUnprocessableEntity, got.status, "%+v", got.resp)
			require.False(t, got.resp.OK)
			require.Len(t, got.resp.Errors, 1)
			require.Equal(t, brain.ELLMREJECTED, got.resp.Errors[0].Code)
			require.Contains(t, got.resp.Errors[0].Message, msg, "the provider's message reaches the client")
			require.Len(t, fake.Requests(), 1, "a rejected request is not sent again")
			require.Equal(t, []string{"1.1:" + brain.ELLMREJECTED}, turnRows(t, got.resp.RunID))
			require.Equal(t, brain.RunFailed, testenv.RunStatus(t, shared.pool, got.resp.RunID))
		})
	}
}

// TestLLMRetryAfterIsBounded: a provider's Retry-After: 300 is longer than GEM_LLM_RETRY_AFTER_MAX, so the
// step ends at once with 503 and the provider's Retry-After, on both wire formats; a Retry-After within the
// bound but past the step's deadline (GEM_LLM_STEP_TIMEOUT) ends it too.
func TestLLMRetryAfterIsBounded(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			fake := newFake(t, provider,
				llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusTooManyRequests, Message: "slow down", Header: map[string]string{"Retry-After": "300"}}},
				llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusServiceUnavailable, Message: "busy", Header: map[string]string{"Retry-After": "8"}}})
			a := llmBrainWith(t, provider, fake, func(c *Config) {
				c.LLM.Timeout, c.LLM.StepTimeout, c.LLM.RetryAfterMax = 5*time.Second, 6*time.Second, 10*time.Second
			})
			agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

			got := chatTimed(t, a, agent, "what is on my list?")
			require.Equal(t, http.StatusServiceUnavailable, got.status, "%+v", got.resp)
			require.Equal(t, "300", got.retryAfter, "the provider's Retry-After is passed on")
			require.Equal(t, brain.EUNAVAILABLE, got.resp.Errors[0].Code)
			require.Contains(t, got.resp.Errors[0].Message, "GEM_LLM_RETRY_AFTER_MAX")
			require.Less(t, got.took, 30*time.Second, "the step does not wait out the provider's 300 s")
			require.Len(t, fake.Requests(), 1)

			// 8 s is within the bound, but more than the step's 6 s deadline leaves.
			got = chatTimed(t, a, agent, "what is on my list now?")
			require.Equal(t, http.StatusServiceUnavailable, got.status, "%+v", got.resp)
			require.Equal(t, "8", got.retryAfter)
			require.Contains(t, got.resp.Errors[0].Message, "GEM_LLM_STEP_TIMEOUT")
			require.Less(t, got.took, 6*time.Second, "the step ends at once rather than sleeping")
			require.Len(t, fake.Requests(), 2)
		})
	}
}

// TestLLMRetriesAreRecorded: a 429 with a short Retry-After (retry-after-ms on OpenAI, an HTTP date on
// Anthropic) and a 529/500 are retried by the brain, and every attempt is a brain_turns row and a request
// in /metrics.
func TestLLMRetriesAreRecorded(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			rateLimited := &llmfake.Failure{Status: http.StatusTooManyRequests, Message: "slow down", Header: map[string]string{"retry-after-ms": "200"}}
			overloaded := &llmfake.Failure{Status: http.StatusInternalServerError, Message: "try again"}
			if provider == llmconfig.ProviderAnthropic {
				rateLimited.Header = map[string]string{"Retry-After": time.Now().Add(time.Second).UTC().Format(http.TimeFormat)}
				overloaded.Status = 529
			}
			fake := newFake(t, provider, llmfake.Turn{Fail: rateLimited}, llmfake.Turn{Fail: overloaded}, llmfake.Turn{Text: "You have no tasks."})
			a := llmBrainWith(t, provider, fake, func(c *Config) { c.LLM.RetryAfterMax = 5 * time.Second })
			agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

			got := chatTimed(t, a, agent, "what is on my list?")
			require.Equal(t, http.StatusOK, got.status, "%+v", got.resp)
			require.True(t, got.resp.OK, "%+v", got.resp.Errors)
			require.Equal(t, "You have no tasks.", got.resp.Reply)
			require.Len(t, fake.Requests(), 3)
			require.Equal(t, []string{"1.1:" + brain.EUNAVAILABLE, "1.2:" + brain.EUNAVAILABLE, "1.3:"}, turnRows(t, got.resp.RunID),
				"one row per attempt, retries included")

			f, status, err := telemetrytest.Scrape(a.url+"/metrics", testToken)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			for outcome, n := range map[string]float64{"rate_limited": 1, "error": 1, "ok": 1} {
				require.Equal(t, n, f.Value("gem_llm_requests_total", "provider", provider, "model", "fake-model", "outcome", outcome), outcome)
			}
		})
	}
}

// TestToolCallsPerAnswerAreCapped: one answer asking for 1,000 tool calls makes
// GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN of them; the others go back to the model refused, with nothing enqueued.
func TestToolCallsPerAnswerAreCapped(t *testing.T) {
	t.Parallel()
	const asked, limit = 1000, 4
	calls := make([]llmfake.Call, asked)
	for i := range calls {
		calls[i] = llmfake.Call{ID: fmt.Sprintf("call_%d", i), Name: "os__list_tasks", Arguments: `{"status": null, "domain": null, "limit": 1}`}
	}
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Calls: calls}, llmfake.Turn{Text: "Done.",
		Check: func(t require.TestingT, req *llmfake.Request) {
			results := req.ToolResults()
			require.Len(t, results, asked, "every call is answered")
			for i, c := range calls {
				r := resultOf(t, results[c.ID])
				if i < limit {
					require.Equal(t, "succeeded", r["status"], c.ID)
					continue
				}
				require.Equal(t, "failed", r["status"], c.ID)
				require.Equal(t, brain.ChatCallTooMany, r["error"].(map[string]any)["code"], c.ID)
			}
		}})
	a := llmBrainWith(t, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{MaxToolCallsPerAnswer: limit} })
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

	got := chatTimed(t, a, agent, "list my tasks a thousand times")
	require.Equal(t, http.StatusOK, got.status, "%+v", got.resp.Errors)
	require.True(t, got.resp.OK, "%+v", got.resp.Errors)
	require.Equal(t, limit, testenv.CountCalls(t, shared.pool, got.resp.RunID), "only the first calls are enqueued")
	var enqueued int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM core_tool_calls WHERE run_id = $1`, got.resp.RunID).Scan(&enqueued))
	require.Equal(t, limit, enqueued)
	tooMany := 0
	for _, tc := range got.resp.ToolCalls {
		if tc.Status == brain.ChatCallTooMany {
			tooMany++
			require.Nil(t, tc.CallID)
		}
	}
	require.Equal(t, asked-limit, tooMany)
	require.Equal(t, 0, fake.Remaining())
}

// TestOversizedAnswersAreBounded: a 300 KB answer is kept, recorded and sent back cut to a bound, saying so.
func TestOversizedAnswersAreBounded(t *testing.T) {
	t.Parallel()
	const bound = 64 << 10
	huge := strings.Repeat("Ünïcödé roofing report. ", 300<<10/len("Ünïcödé roofing report. "))
	hugeArgs := `{"status": null, "domain": null, "limit": 1, "padding": "` + strings.Repeat("x", 300<<10) + `"}`
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "huge", Name: "os__list_tasks", Arguments: hugeArgs}}},
		llmfake.Turn{Text: huge, Check: func(t require.TestingT, req *llmfake.Request) {
			r := resultOf(t, req.ToolResults()["huge"])
			require.Equal(t, "validation_error", r["error"].(map[string]any)["code"])
			require.Contains(t, r["error"].(map[string]any)["message"], "more than the 65536 one call may have", "arguments over the bound are refused unread")
		}})
	a := llmBrainWith(t, llmconfig.ProviderOpenAI, fake, nil)
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

	got := chatTimed(t, a, agent, "write me everything")
	require.Zero(t, testenv.CountCalls(t, shared.pool, got.resp.RunID))
	require.Equal(t, http.StatusOK, got.status, "%+v", got.resp.Errors)
	require.LessOrEqual(t, len(got.resp.Reply), bound)
	require.Contains(t, got.resp.Reply, fmt.Sprintf("the answer was %d bytes", len(huge)))
	require.True(t, strings.HasPrefix(huge, strings.SplitN(got.resp.Reply, "\n\n[GEM:", 2)[0]), "the kept part is the answer's start, whole characters")
	var stored, recorded int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT max(octet_length(content) + coalesce(octet_length(tool_calls::text), 0))
		FROM agent_messages WHERE run_id = $1`, got.resp.RunID).Scan(&stored))
	require.LessOrEqual(t, stored, bound)
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT max(octet_length(response::text)) FROM brain_turns WHERE run_id = $1`, got.resp.RunID).Scan(&recorded))
	require.LessOrEqual(t, recorded, bound+1024)
}

// TestLLMPlannerFaults: POST /brain/run with the llm planner answers a provider's refusal 422 llm_rejected
// and its rate limit 503 with the provider's Retry-After, as chat does.
func TestLLMPlannerFaults(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewAnthropic(t, fakeKey,
		llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusRequestEntityTooLarge, Message: "request exceeds the maximum size"}},
		llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusTooManyRequests, Message: "slow down", Header: map[string]string{"retry-after": "120"}}})
	a := llmBrainWith(t, llmconfig.ProviderAnthropic, fake, func(c *Config) { c.Planner = PlannerLLM })

	resp, status := a.run(map[string]any{"message": "create a task to call John tomorrow", "mode": "enqueue"})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%+v", resp.Errors)
	require.Equal(t, brain.ELLMREJECTED, resp.Errors[0].Code)
	require.Contains(t, resp.Errors[0].Message, "request exceeds the maximum size")

	body := strings.NewReader(`{"message": "create a task to call John tomorrow", "mode": "enqueue"}`)
	req, err := http.NewRequest(http.MethodPost, a.url+"/brain/run", body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "120", res.Header.Get("Retry-After"))
	require.Len(t, fake.Requests(), 2, "neither is retried: a refusal fails again, 120 s is over GEM_LLM_RETRY_AFTER_MAX")
}
