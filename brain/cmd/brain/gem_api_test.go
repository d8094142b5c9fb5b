package main

import (
	"context"
	"encoding/json"
	"github.com/gemhq/gem/brain/internal/testenv"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// GEM's clients call the brain's HTTP API as they called GEM's: these tests read the raw JSON, by GEM's
// field names.

// rawRun posts /brain/run and returns the status and the raw JSON answer.
func rawRun(t *testing.T, a *testAPI, body any) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	status := a.do(http.MethodPost, "/brain/run", body, &out)
	return status, out
}

func TestRunSpeaksGEM(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	// enqueue_and_wait: every GEM field, with GEM's names.
	status, out := rawRun(t, a, map[string]any{"message": "health check", "mode": "enqueue_and_wait", "conversation_id": nil,
		"context": map[string]any{"lead_id": uuid.NewString()}, "limits": map[string]any{"max_tool_calls": 5, "wait_timeout_ms": 20000}})
	require.Equal(t, http.StatusOK, status, "%v", out)
	for _, k := range []string{"ok", "run_id", "decision", "planned_tool_calls", "enqueued", "receipts", "assistant_message", "next_actions", "errors"} {
		require.Contains(t, out, k)
	}
	require.Equal(t, true, out["ok"], "%v", out)
	decision := out["decision"].(map[string]any)
	require.Equal(t, "enqueue_and_wait", decision["mode_used"])
	require.NotEmpty(t, decision["reason"])
	planned := out["planned_tool_calls"].([]any)[0].(map[string]any)
	require.Equal(t, "os.health_check", planned["tool_name"])
	require.Equal(t, map[string]any{}, planned["input"])
	require.Contains(t, planned, "idempotency_key")
	require.Nil(t, planned["idempotency_key"])
	enqueued := out["enqueued"].([]any)[0].(map[string]any)
	require.Equal(t, "os.health_check", enqueued["tool_name"])
	require.NoError(t, uuid.Validate(enqueued["call_id"].(string)))
	receipt := out["receipts"].([]any)[0].(map[string]any)
	require.Equal(t, enqueued["call_id"], receipt["call_id"])
	require.Equal(t, "os.health_check", receipt["tool_name"])
	require.Equal(t, "succeeded", receipt["status"])
	require.Equal(t, []any{}, out["errors"])

	// enqueue: the calls and their tools, at once.
	status, out = rawRun(t, a, map[string]any{"message": "health check\nlist my tasks", "mode": "enqueue"})
	require.Equal(t, http.StatusOK, status, "%v", out)
	require.Equal(t, "enqueue", out["decision"].(map[string]any)["mode_used"])
	var tools []any
	for _, e := range out["enqueued"].([]any) {
		tools = append(tools, e.(map[string]any)["tool_name"])
	}
	require.Equal(t, []any{"os.health_check", "os.list_tasks"}, tools)
	require.Equal(t, []any{}, out["receipts"])

	// A request without a mode is answered, as GEM does by default: nothing runs.
	status, out = rawRun(t, a, map[string]any{"message": "create a task to call the default-mode client"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "answer", out["decision"].(map[string]any)["mode_used"])
	require.Equal(t, []any{}, out["enqueued"])
	require.Contains(t, out["assistant_message"], "I would run")
	runID, _ := uuid.Parse(out["run_id"].(string))
	require.Equal(t, 0, testenv.CountCalls(t, shared.pool, runID))
}

// TestModesBehaveLikeGEMs walks each mode: answer (a plan said, or a question answered), plan (stored for
// approval), enqueue (ids at once), enqueue_and_wait (receipts), and a message with nothing to run, which
// is answered whatever the mode.
func TestModesBehaveLikeGEMs(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	resp := a.runOK(map[string]any{"message": "list my tasks", "mode": "answer"})
	require.Equal(t, brain.ModeAnswer, resp.Decision.Mode)
	require.Contains(t, resp.AssistantMessage, "I would run:\n1. os.list_tasks")
	require.Empty(t, resp.Enqueued)

	resp, _ = a.run(map[string]any{"message": "list my tasks", "mode": "plan"})
	require.True(t, resp.OK)
	require.Equal(t, brain.ModePlan, resp.Decision.Mode)
	require.Equal(t, brain.RunPlanned, resp.Status)
	require.Contains(t, resp.NextActions[0], "/approve")
	require.Equal(t, 0, testenv.CountCalls(t, shared.pool, resp.RunID))

	// Questions are answered in any mode, and nothing runs.
	for _, mode := range []string{"answer", "plan", "enqueue", "enqueue_and_wait"} {
		resp, status := a.run(map[string]any{"message": "what is leads.create?", "mode": mode})
		require.Equal(t, http.StatusOK, status, mode)
		require.True(t, resp.OK, "%s: %+v", mode, resp.Errors)
		require.Equal(t, brain.ModeAnswer, resp.Decision.Mode, mode)
		require.Equal(t, brain.RunCompleted, resp.Status)
		require.Contains(t, resp.AssistantMessage, "It needs: name, phone, suburb.")
		require.Empty(t, resp.PlannedToolCalls)
		require.Equal(t, 0, testenv.CountCalls(t, shared.pool, resp.RunID), mode)
	}
	resp, _ = a.run(map[string]any{"message": "help", "mode": "enqueue_and_wait"})
	require.True(t, resp.OK)
	require.Contains(t, resp.AssistantMessage, "answer (the default)")
	require.Contains(t, resp.AssistantMessage, "integrations")

	// Nothing understood: answered with what the brain can do, whatever the mode; no_plan says so.
	for _, mode := range []string{"answer", "enqueue"} {
		resp, _ = a.run(map[string]any{"message": "juggle three flaming torches", "mode": mode})
		require.False(t, resp.OK)
		require.Equal(t, brain.ModeAnswer, resp.Decision.Mode)
		require.Equal(t, brain.ENOPLAN, resp.Errors[0].Code)
		require.Contains(t, resp.AssistantMessage, `Say "help"`)
	}
}

// TestRunHostileInput: wrong types, unknown modes and out-of-range limits are a 400 naming each problem,
// never a 500, and record nothing.
func TestRunHostileInput(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tt := range []struct {
		name  string
		body  any
		paths []string
	}{
		{"message a number", `{"message": 42}`, []string{"/message"}},
		{"message null", `{"message": null}`, []string{"/message"}},
		{"no message", `{"mode": "answer"}`, []string{"/message"}},
		{"unknown mode", `{"message": "health", "mode": "yolo"}`, []string{"/mode"}},
		{"mode a number", `{"message": "health", "mode": 3}`, []string{"/mode"}},
		{"mode in capitals", `{"message": "health", "mode": "ANSWER"}`, []string{"/mode"}},
		{"conversation id a number", `{"message": "health", "conversation_id": 7}`, []string{"/conversation_id"}},
		{"context a string", `{"message": "health", "context": "lead 1"}`, []string{"/context"}},
		{"context an array", `{"message": "health", "context": ["a"]}`, []string{"/context"}},
		{"context lead_id a number", `{"message": "health", "context": {"lead_id": 5}}`, []string{"/context/lead_id"}},
		{"context job_id not a uuid", `{"message": "health", "context": {"job_id": "J-1"}}`, []string{"/context/job_id"}},
		{"context quote_id null", `{"message": "health", "context": {"quote_id": null}}`, []string{"/context/quote_id"}},
		{"context value an object", `{"message": "health", "context": {"note": {"a": 1}}}`, []string{"/context/note"}},
		{"limits a string", `{"message": "health", "limits": "lots"}`, []string{"/limits"}},
		{"huge max_tool_calls", `{"message": "health", "limits": {"max_tool_calls": 1000000000000}}`, []string{"/limits/max_tool_calls"}},
		{"max_tool_calls zero", `{"message": "health", "limits": {"max_tool_calls": 0}}`, []string{"/limits/max_tool_calls"}},
		{"max_tool_calls a fraction", `{"message": "health", "limits": {"max_tool_calls": 1.5}}`, []string{"/limits/max_tool_calls"}},
		{"max_tool_calls a string", `{"message": "health", "limits": {"max_tool_calls": "10"}}`, []string{"/limits/max_tool_calls"}},
		{"huge wait", `{"message": "health", "limits": {"wait_timeout_ms": 1e300}}`, []string{"/limits/wait_timeout_ms"}},
		{"negative wait", `{"message": "health", "limits": {"wait_timeout_ms": -1}}`, []string{"/limits/wait_timeout_ms"}},
		{"unknown limit", `{"message": "health", "limits": {"max_cost": 1}}`, []string{"/limits"}},
		{"several at once", `{"message": 1, "mode": "x", "limits": {"max_tool_calls": 99}}`, []string{"/message", "/mode", "/limits/max_tool_calls"}},
		{"body null", `null`, []string{""}},
		{"body a string", `"health check"`, []string{""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &testAPI{t: t, url: a.url, token: a.token}
			var e errorResponse
			require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/brain/run", tt.body, &e))
			require.False(t, e.OK)
			require.Equal(t, brain.EINVALID, e.Errors[0].Code)
			details, _ := e.Errors[0].Details.(map[string]any)
			violations, _ := details["violations"].([]any)
			var paths []string
			for _, v := range violations {
				paths = append(paths, v.(map[string]any)["path"].(string))
			}
			for _, p := range tt.paths {
				require.Contains(t, paths, p, "%+v", e.Errors[0])
			}
		})
	}
	// GEM's null conversation id is fine.
	resp, status := a.run(map[string]any{"message": "health check", "mode": "answer", "conversation_id": nil})
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
}

func TestBrainHelp(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	var help struct {
		OK      bool   `json:"ok"`
		Help    string `json:"help"`
		Planner string `json:"planner"`
		Modes   []struct {
			Mode    string `json:"mode"`
			Default bool   `json:"default"`
			Does    string `json:"does"`
		} `json:"modes"`
		Domains []struct {
			Domain string `json:"domain"`
			Rules  []struct {
				Rule     string   `json:"rule"`
				Tool     string   `json:"tool"`
				Examples []string `json:"examples"`
			} `json:"rules"`
			Tools []struct {
				Name        string   `json:"name"`
				Description string   `json:"description"`
				Required    []string `json:"required"`
			} `json:"tools"`
		} `json:"domains"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/help", nil, &help))
	require.True(t, help.OK)
	require.Equal(t, "rules", help.Planner)
	require.Contains(t, help.Help, "create a task")
	var modes []string
	for _, m := range help.Modes {
		modes = append(modes, m.Mode)
		require.NotEmpty(t, m.Does)
		require.Equal(t, m.Mode == "answer", m.Default, m.Mode)
	}
	require.Equal(t, []string{"answer", "plan", "enqueue", "enqueue_and_wait"}, modes)
	tools := 0
	domains := map[string]bool{}
	for _, d := range help.Domains {
		domains[d.Domain] = true
		tools += len(d.Tools)
		for _, r := range d.Rules {
			require.NotEmpty(t, r.Examples, r.Rule)
			require.True(t, strings.HasPrefix(r.Tool, d.Domain+"."), r.Tool)
		}
	}
	require.Equal(t, shared.brain.Registry.Len(), tools, "every registry tool, by domain")
	for _, d := range []string{"os", "leads", "inspection", "quote", "job", "invoice", "integrations"} {
		require.True(t, domains[d], d)
	}
	require.Equal(t, "os", help.Domains[0].Domain)

	// Text for curl: ?format=text, or Accept: text/plain.
	get := func(path, accept string) (int, string, string) {
		req, err := http.NewRequest(http.MethodGet, shared.url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testToken)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	for _, tt := range []struct{ path, accept string }{{"/brain/help?format=text", ""}, {"/brain/help", "text/plain"}, {"/brain/help", "text/plain, application/json;q=0.5"}} {
		status, ct, body := get(tt.path, tt.accept)
		require.Equal(t, http.StatusOK, status)
		require.True(t, strings.HasPrefix(ct, "text/plain"), ct)
		require.Equal(t, help.Help, body)
	}
	status, ct, _ := get("/brain/help", "application/json, text/plain")
	require.Equal(t, http.StatusOK, status)
	require.True(t, strings.HasPrefix(ct, "application/json"), ct)
	status, _, body := get("/brain/help?format=xml", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "format must be json or text")

	var e errorResponse
	require.Equal(t, http.StatusUnauthorized, (&testAPI{t: t, url: shared.url}).do(http.MethodGet, "/brain/help", nil, &e))
}

// operatorChat posts /operator/chat.
func operatorChat(t *testing.T, a *testAPI, body any) (int, *brain.OperatorChatResponse, map[string]any) {
	t.Helper()
	var raw json.RawMessage
	status := a.do(http.MethodPost, "/operator/chat", body, &raw)
	var resp brain.OperatorChatResponse
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &resp))
	require.NoError(t, json.Unmarshal(raw, &m))
	return status, &resp, m
}

// TestOperatorChatWithoutLLM: with no LLM the rules planner answers in mode enqueue_and_wait, and a session
// carries the ids its calls made from one message to the next.
func TestOperatorChatWithoutLLM(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	status, resp, raw := operatorChat(t, a, map[string]any{"message": "create a task to phone the operator-chat supplier"})
	require.Equal(t, http.StatusOK, status, "%v", raw)
	for _, k := range []string{"ok", "response", "session_id", "mode", "tool_results"} {
		require.Contains(t, raw, k)
	}
	require.True(t, resp.OK, "%+v", resp)
	require.Equal(t, brain.OperatorModeRules, resp.Mode)
	require.Contains(t, resp.FallbackReason, "no LLM is configured")
	require.NoError(t, uuid.Validate(resp.SessionID), "a new session")
	require.Contains(t, resp.Response, "Created task “phone the operator-chat supplier”")
	require.Equal(t, 1, resp.ToolResults.Executed)
	require.Equal(t, 1, resp.ToolResults.Succeeded)
	require.Equal(t, "os.create_task", resp.ToolResults.Calls[0].ToolName)
	session := resp.SessionID

	// The same session: "the task" is the one just made.
	status, resp, _ = operatorChat(t, a, map[string]any{"message": "defer the task to friday", "session_id": session})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, session, resp.SessionID)
	run := a.getRun(resp.RunID)
	require.Equal(t, "os.defer_task", run.PlannedToolCalls[0].Tool)
	var input map[string]any
	require.NoError(t, json.Unmarshal(run.PlannedToolCalls[0].Input, &input))
	require.NoError(t, uuid.Validate(input["task_id"].(string)), "the task id came from the session: %v", input)

	// Questions, things not understood and things missing are replies, not failures of the endpoint.
	status, resp, raw = operatorChat(t, a, map[string]any{"message": "help", "session_id": session})
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.OK)
	require.Contains(t, resp.Response, "What I understand")
	require.Nil(t, raw["tool_results"], "no calls: null, as GEM has it")
	status, resp, _ = operatorChat(t, a, map[string]any{"message": "juggle three flaming torches", "session_id": nil})
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.OK)
	require.Contains(t, resp.Response, "I did not understand that")
	require.NotEqual(t, session, resp.SessionID, "no session id: a new session")
	status, resp, _ = operatorChat(t, a, map[string]any{"message": "new lead Bob Lee 0412 345 678"})
	require.Equal(t, http.StatusOK, status)
	require.False(t, resp.OK)
	require.Contains(t, resp.Response, "which suburb is Bob Lee in?")

	// Bad requests are 400, never 500.
	for _, body := range []any{`{}`, `{"message": ""}`, `{"message": 5}`, `{"message": "hi", "session_id": 5}`, `{"message": "hi", "session_id": ""}`,
		`{"message": "hi", "extra": true}`, `[]`, `{"message": "a\u0000b"}`} {
		var e errorResponse
		require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/operator/chat", body, &e), "%v", body)
		require.Equal(t, brain.EINVALID, e.Errors[0].Code)
	}
}

// TestOperatorChatWithLLM: with an LLM the default agent answers (mode agent), and the session goes on; a
// missing default agent falls back to the rules planner.
func TestOperatorChatWithLLM(t *testing.T) {
	t.Parallel()
	tasks := uniq("tasks")
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task", Arguments: `{"title": "ring the operator", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}},
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Equal(t, "add a task to ring the operator", req.Messages[len(req.Messages)-1].Content)
			}},
		llmfake.Turn{Text: "Done: the task is on your list."},
		llmfake.Turn{Text: "You asked me to add a task.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Equal(t, "add a task to ring the operator", req.Messages[0].Content, "the session's history comes back")
		}},
	)
	// The default agent is the test's own (office-assistant has every tool; this one has few).
	setup := newAPI(t)
	agent := agentWithSkills(t, setup, 3, map[string][]string{tasks: {"os.create_task"}})
	m, err := startBrain(shared.dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Chat = chat.Config{}
		c.DefaultAgent = agent
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}

	status, resp, raw := operatorChat(t, a, map[string]any{"message": "add a task to ring the operator"})
	require.Equal(t, http.StatusOK, status, "%v", raw)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, brain.OperatorModeAgent, resp.Mode)
	require.Equal(t, agent, resp.Agent)
	require.Equal(t, "Done: the task is on your list.", resp.Response)
	require.Equal(t, 1, resp.ToolResults.Executed)
	require.Equal(t, 1, resp.ToolResults.Succeeded)
	require.Equal(t, "os.create_task", resp.ToolResults.Calls[0].ToolName)

	status, resp2, _ := operatorChat(t, a, map[string]any{"message": "what did I ask?", "session_id": resp.SessionID})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, resp.SessionID, resp2.SessionID)
	require.Equal(t, "You asked me to add a task.", resp2.Response)
	require.Nil(t, resp2.ToolResults)
	require.Equal(t, 0, fake.Remaining())

	// A default agent that does not exist: the rules planner answers, and says why.
	m2, err := startBrain(shared.dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.DefaultAgent = uniq("nobody")
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m2.Close(context.Background()) })
	status, resp, _ = operatorChat(t, &testAPI{t: t, url: m2.Server.URL(), token: testToken}, map[string]any{"message": "health check"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, brain.OperatorModeRules, resp.Mode)
	require.Contains(t, resp.FallbackReason, "does not exist")
	require.Equal(t, 1, resp.ToolResults.Executed)
}

// TestLLMPlannerSpeaksGEM: with GEM_BRAIN_PLANNER=llm, text without tool calls answers the message (mode
// answer, ok), and tool calls are planned in GEM's contract like the rules planner's.
func TestLLMPlannerSpeaksGEM(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Text: "GST in Australia is 10%; quotes add it to the subtotal."},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "n", Name: "os__create_note", Arguments: `{"domain": "personal", "title": "Gym", "content": "renew the gym membership", "entity_refs": null}`}}},
	)
	m, err := startBrain(shared.dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Planner = PlannerLLM
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}

	resp := a.runOK(map[string]any{"message": "how much is GST?", "mode": "enqueue_and_wait"})
	require.Equal(t, brain.ModeAnswer, resp.Decision.Mode)
	require.Equal(t, "llm", resp.Decision.Planner)
	require.Equal(t, "GST in Australia is 10%; quotes add it to the subtotal.", resp.AssistantMessage)
	require.Empty(t, resp.Enqueued)

	resp, _ = a.run(map[string]any{"message": "note to renew the gym membership", "mode": "answer"})
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, "os.create_note", resp.PlannedToolCalls[0].Tool)
	require.JSONEq(t, `{"domain": "personal", "title": "Gym", "content": "renew the gym membership"}`, string(resp.PlannedToolCalls[0].Input))
}
