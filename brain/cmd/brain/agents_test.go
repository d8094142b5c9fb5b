package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

const fakeKey = "sk-fake-0123456789"

// llmBrain starts a brain on the shared database whose LLM is a fake.
func llmBrain(t *testing.T, provider string, fake *llmfake.Server, chatCfg chat.Config) *testAPI {
	t.Helper()
	return llmBrainWith(t, provider, fake, func(c *Config) { c.Chat = chatCfg })
}

// uniq makes a slug unique to the test (tests share one database).
func uniq(prefix string) string {
	return prefix + "-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
}

// agentWithSkills creates an agent and a skill per entry of skills (slug → tools), all assigned.
func agentWithSkills(t *testing.T, a *testAPI, maxIterations int, skills map[string][]string) string {
	t.Helper()
	slug := uniq("agent")
	var resp map[string]any
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{
		"slug": slug, "name": "Test agent", "instructions": "You help a roofing business.", "max_tool_iterations": maxIterations}, &resp), "%v", resp)
	for skill, tools := range skills {
		require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{
			"slug": skill, "name": skill, "description": "test skill", "instructions": "Use " + skill + " well.", "tools": tools}, &resp), "%v", resp)
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+slug+"/skills/"+skill, nil, &resp), "%v", resp)
	}
	return slug
}

func chatWith(t *testing.T, a *testAPI, agent, message, session string) (*brain.ChatResponse, int) {
	t.Helper()
	body := map[string]any{"message": message, "user_id": "user-1"}
	if session != "" {
		body["session_id"] = session
	}
	var resp brain.ChatResponse
	status := a.do(http.MethodPost, "/agents/"+agent+"/chat", body, &resp)
	return &resp, status
}

func resultOf(t require.TestingT, m llmfake.Message) map[string]any {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(m.Content), &v), m.Content)
	return v
}

// testTwoIterations is the same conversation against either provider: the LLM asks for two tools at once,
// gets both receipts back as tool results, and answers in text.
func testTwoIterations(t *testing.T, provider string) {
	crm, tasks := uniq("crm"), uniq("tasks")
	fake := func() *llmfake.Server {
		newFake := llmfake.NewOpenAI
		if provider == llmconfig.ProviderAnthropic {
			newFake = llmfake.NewAnthropic
		}
		return newFake(t, fakeKey,
			llmfake.Turn{
				Calls: []llmfake.Call{
					{ID: "call_lead", Name: "leads__create", Arguments: `{"name": "Dana Fox", "phone": "0455 123 987", "email": null, "suburb": "Leichhardt", "source": "referral", "notes": null}`},
					{ID: "call_task", Name: "os__create_task", Arguments: `{"title": "Book an inspection for Dana", "domain": "business", "description": null, "priority": "high", "due_at": null, "context_ref": null}`},
				},
				Check: func(t require.TestingT, req *llmfake.Request) {
					require.Contains(t, req.System, "You help a roofing business.")
					require.Contains(t, req.System, "Use "+crm+" well.")
					require.ElementsMatch(t, []string{"leads__create", "leads__list_by_stage", "os__create_task"}, req.ToolNames(), "only the agent's tools are offered")
					require.Equal(t, "new lead Dana Fox 0455 123 987, and a task to book her inspection", req.Messages[len(req.Messages)-1].Content)
				},
			},
			llmfake.Turn{
				Text: "Dana Fox is recorded and a high-priority task is set to book her inspection.",
				Check: func(t require.TestingT, req *llmfake.Request) {
					results := req.ToolResults()
					require.Len(t, results, 2, "both calls answered")
					lead := resultOf(t, results["call_lead"])
					require.Equal(t, "succeeded", lead["status"])
					require.NotEmpty(t, lead["result"].(map[string]any)["lead_id"])
					task := resultOf(t, results["call_task"])
					require.Equal(t, "succeeded", task["status"])
					require.NotEmpty(t, task["result"].(map[string]any)["task_id"])
					require.False(t, results["call_task"].IsError)
				},
			},
		)
	}()
	a := llmBrain(t, provider, fake, chat.Config{})
	agent := agentWithSkills(t, a, 5, map[string][]string{crm: {"leads.create", "leads.list_by_stage"}, tasks: {"os.create_task"}})

	resp, status := chatWith(t, a, agent, "new lead Dana Fox 0455 123 987, and a task to book her inspection", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, "Dana Fox is recorded and a high-priority task is set to book her inspection.", resp.Reply)
	require.Equal(t, 2, resp.Iterations)
	require.False(t, resp.LimitReached)
	require.Len(t, resp.ToolCalls, 2)
	for _, tc := range resp.ToolCalls {
		require.Equal(t, "succeeded", tc.Status, tc.Tool)
		require.NotNil(t, tc.CallID)
		c, err := gemsql.CallGet(context.Background(), shared.pool, *tc.CallID)
		require.NoError(t, err)
		require.Equal(t, agent, c.Agent, "the call carries its agent")
		require.Equal(t, "user-1", c.UserID)
		require.Equal(t, &resp.RunID, c.RunID)
	}
	require.Equal(t, 0, fake.Remaining())

	// Every LLM turn is recorded with the run, and the run with its calls.
	var turns int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM brain_turns WHERE run_id = $1`, resp.RunID).Scan(&turns))
	require.Equal(t, 2, turns)
	require.Equal(t, brain.RunCompleted, runStatus(t, shared.pool, resp.RunID))
	require.Equal(t, 2, countCalls(t, shared.pool, resp.RunID))

	// The session keeps the run's messages in order: the question, the assistant's calls, their results in
	// the order asked (each with its GEM call), the answer.
	rows, err := shared.pool.Query(context.Background(), `SELECT role || ':' || coalesce(tool_call_id, '') || ':' ||
			(tool_calls IS NOT NULL) || ':' || (call_id IS NOT NULL)
		FROM agent_messages WHERE run_id = $1 ORDER BY id`, resp.RunID)
	require.NoError(t, err)
	msgs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"user::false:false", "assistant::true:false", "tool:call_lead:false:true", "tool:call_task:false:true",
		"assistant::false:false"}, msgs)
}

func TestChatOpenAITwoIterations(t *testing.T) {
	t.Parallel()
	testTwoIterations(t, llmconfig.ProviderOpenAI)
}

func TestChatAnthropicTwoIterations(t *testing.T) {
	t.Parallel()
	testTwoIterations(t, llmconfig.ProviderAnthropic)
}

func TestChatIterationLimit(t *testing.T) {
	t.Parallel()
	listing := llmfake.Turn{Text: "Let me look again.", Calls: []llmfake.Call{{ID: "c", Name: "os__list_tasks", Arguments: `{"status": null, "domain": null, "limit": null}`}}}
	first, second := listing, listing
	first.Calls = []llmfake.Call{{ID: "c1", Name: "os__list_tasks", Arguments: first.Calls[0].Arguments}}
	second.Calls = []llmfake.Call{{ID: "c2", Name: "os__list_tasks", Arguments: second.Calls[0].Arguments}}
	fake := llmfake.NewOpenAI(t, fakeKey, first, second)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 2, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

	resp, status := chatWith(t, a, agent, "keep checking my tasks", "")
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.LimitReached)
	require.False(t, resp.OK, "an agent stopped by its limit did not finish")
	require.Len(t, resp.Errors, 1)
	require.Equal(t, brain.ETOOLITERATIONS, resp.Errors[0].Code)
	require.False(t, getRunOK(t, a, resp.RunID), "GET /brain/runs/{id} says so too")
	require.Equal(t, 2, resp.Iterations)
	require.Len(t, fake.Requests(), 2, "no third LLM request after the limit")
	require.Contains(t, resp.Reply, "I stopped after 2 rounds of tool calls")
	require.Contains(t, resp.Reply, "Let me look again.")
	require.Len(t, resp.ToolCalls, 2)
}

// getRunOK is GET /brain/runs/{id}'s ok.
func getRunOK(t *testing.T, a *testAPI, id uuid.UUID) bool {
	t.Helper()
	var run struct {
		OK bool `json:"ok"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/runs/"+id.String(), nil, &run))
	return run.OK
}

// TestChatRefusalsGoBackToTheLLM checks that malformed arguments, schema violations and tools the agent may
// not use become tool errors the LLM sees, nothing is enqueued for them, and the loop goes on.
func TestChatRefusalsGoBackToTheLLM(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{
			{ID: "bad_json", Name: "os__create_task", Arguments: `{"title": "unterminated`},
			{ID: "bad_input", Name: "os__create_task", Arguments: `{"title": "", "domain": null, "priority": "whenever", "description": null, "due_at": null, "context_ref": null}`},
			{ID: "not_enabled", Name: "os__create_note", Arguments: `{"domain": "business", "title": "secret", "content": "x"}`},
			{ID: "unknown", Name: "rockets__launch", Arguments: `{}`},
			{ID: "good", Name: "os__create_task", Arguments: `{"title": "call the supplier", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`},
		}},
		llmfake.Turn{Text: "One task created; the others failed.", Check: func(t require.TestingT, req *llmfake.Request) {
			results := req.ToolResults()
			require.Len(t, results, 5)
			want := map[string]string{"bad_json": "validation_error", "bad_input": "validation_error", "not_enabled": "tool_not_enabled", "unknown": "unknown_tool"}
			for id, code := range want {
				r := resultOf(t, results[id])
				require.Equal(t, "failed", r["status"], id)
				require.Equal(t, code, r["error"].(map[string]any)["code"], id)
			}
			bad := resultOf(t, results["bad_input"])["error"].(map[string]any)
			require.Len(t, bad["details"].(map[string]any)["violations"], 2, "every violation is fed back")
			require.Equal(t, "succeeded", resultOf(t, results["good"])["status"])
		}},
	)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})

	resp, status := chatWith(t, a, agent, "do several things", "")
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, 2, resp.Iterations)
	statuses := map[string]string{}
	for _, tc := range resp.ToolCalls {
		statuses[tc.Tool] += tc.Status + " "
	}
	require.Equal(t, "invalid_arguments invalid_arguments succeeded ", statuses["os.create_task"])
	require.Equal(t, 1, countCalls(t, shared.pool, resp.RunID), "only the good call was enqueued")

	// The executor refuses the disabled tool too, whoever makes the call for the agent.
	id, err := insertedID(gemsql.CallInsert(context.Background(), shared.pool, gemsql.CallInsertParams{ToolName: "os.create_note",
		Input: json.RawMessage(`{"domain": "business", "title": "sneaky", "content": "x"}`), Agent: agent, UserID: "user-1"}))
	require.NoError(t, err)
	var body struct {
		Receipt *registry.Receipt `json:"receipt"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls/"+id.String()+"?wait=10s", nil, &body))
	require.Equal(t, registry.CodeToolNotEnabled, body.Receipt.Error.Code)
}

func TestChatHistoryIsReused(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task", Arguments: `{"title": "ring Ann", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}},
		llmfake.Turn{Text: "Done, Ann is on your list."},
		llmfake.Turn{Text: "You asked me to add a task to ring Ann.", Check: func(t require.TestingT, req *llmfake.Request) {
			roles := []string{}
			for _, m := range req.Messages {
				roles = append(roles, m.Role)
			}
			require.Equal(t, []string{"user", "assistant", "tool", "assistant", "user"}, roles, "the first exchange, tool call included, comes back")
			require.Equal(t, "add a task to ring Ann", req.Messages[0].Content)
			require.Equal(t, "t1", req.Messages[2].ToolCallID)
			require.Equal(t, "what did I ask you?", req.Messages[4].Content)
		}},
	)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	first, _ := chatWith(t, a, agent, "add a task to ring Ann", "")
	require.True(t, first.OK, "%+v", first.Errors)
	require.NotEmpty(t, first.SessionID)
	second, status := chatWith(t, a, agent, "what did I ask you?", first.SessionID)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "You asked me to add a task to ring Ann.", second.Reply)
	require.Equal(t, first.SessionID, second.SessionID)

	// A session belongs to its caller, agent and user: to another agent it does not exist.
	other := agentWithSkills(t, a, 3, nil)
	var e errorResponse
	require.Equal(t, http.StatusNotFound, a.do(http.MethodPost, "/agents/"+other+"/chat", map[string]any{"message": "hi", "user_id": "user-1", "session_id": first.SessionID}, &e))
}

// TestChatMetaTools gives an agent more tools than the threshold: it sees search_tools and describe_tool,
// finds a tool, describes it (which makes it callable), and calls it.
func TestChatMetaTools(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "create a task", "limit": null}`}},
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Equal(t, []string{"search_tools", "describe_tool"}, req.ToolNames())
			}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d", Name: "describe_tool", Arguments: `{"name": "os__create_task"}`}},
			Check: func(t require.TestingT, req *llmfake.Request) {
				found := resultOf(t, req.ToolResults()["s"])["result"].(map[string]any)["tools"].([]any)
				require.Equal(t, "os__create_task", found[0].(map[string]any)["name"], "the best match comes first")
			}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c", Name: "os__create_task", Arguments: `{"title": "found by search", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}},
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Equal(t, []string{"search_tools", "describe_tool", "os__create_task"}, req.ToolNames())
				described := resultOf(t, req.ToolResults()["d"])["result"].(map[string]any)
				require.Contains(t, described, "input_schema")
			}},
		llmfake.Turn{Text: "Created."},
	)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{ToolSearchThreshold: 3})
	agent := agentWithSkills(t, a, 5, map[string][]string{uniq("many"): {"os.create_task", "os.list_tasks", "os.create_note", "os.search_notes", "leads.create"}})

	resp, status := chatWith(t, a, agent, "make a task", "")
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, 4, resp.Iterations)
	require.Equal(t, 1, countCalls(t, shared.pool, resp.RunID), "meta-tools are answered by the brain, not enqueued")
}

func TestChatWithoutLLM(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	agent := agentWithSkills(t, a, 3, nil)
	var e errorResponse
	require.Equal(t, http.StatusServiceUnavailable, a.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "u"}, &e))
	require.Equal(t, brain.ENOLLM, e.Errors[0].Code)
	require.Contains(t, e.Errors[0].Message, "GEM_LLM_MODEL")

	require.Equal(t, http.StatusNotFound, a.do(http.MethodPost, "/agents/"+uniq("nobody")+"/chat", map[string]any{"message": "hi", "user_id": "u"}, &e))
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hi"}, &e), "user_id is required")
}

func TestAgentsAndSkillsCRUD(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	var body map[string]any
	var e errorResponse

	// Validation: every problem of an agent is reported; a skill naming unknown tools is refused with them.
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/agents", map[string]any{"slug": "Bad Slug", "name": "", "temperature": 3}, &e))
	require.Len(t, e.Errors[0].Details.(map[string]any)["violations"], 3)
	skill := uniq("crm")
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "CRM",
		"tools": []string{"leads.create", "leads.teleport", "crm.magic"}}, &e))
	require.Contains(t, e.Errors[0].Message, "leads.teleport, crm.magic")

	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "CRM", "tools": []string{"leads.create"}}, &body))
	require.Equal(t, http.StatusConflict, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "again"}, &e))

	agent := uniq("sales")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "Sales", "model": "gpt-x", "temperature": 0.2}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+skill, map[string]any{"priority": 5, "allowed_users": []string{"ann"}}, &body))
	require.Equal(t, http.StatusNotFound, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+uniq("nope"), nil, &e))

	var got struct {
		Agent  brain.Agent        `json:"agent"`
		Skills []brain.Assignment `json:"skills"`
		Tools  []string           `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent+"?user_id=ann", nil, &got))
	require.Equal(t, "gpt-x", *got.Agent.Model)
	require.Equal(t, []string{"leads.create"}, got.Tools)
	require.True(t, got.Skills[0].Available)
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent+"?user_id=bob", nil, &got))
	require.Empty(t, got.Tools, "bob is not an allowed user")

	var sk struct {
		Skill brain.Skill `json:"skill"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/skills/"+skill, nil, &sk))
	require.Equal(t, 1, sk.Skill.AgentCount)

	require.Equal(t, http.StatusOK, a.do(http.MethodPatch, "/agents/"+agent, map[string]any{"enabled": false, "model": nil}, &got))
	require.False(t, got.Agent.Enabled)
	require.Nil(t, got.Agent.Model)
	require.Equal(t, http.StatusOK, a.do(http.MethodDelete, "/agents/"+agent+"/skills/"+skill, nil, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodDelete, "/agents/"+agent, nil, &body))
	require.Equal(t, http.StatusNotFound, a.do(http.MethodGet, "/agents/"+agent, nil, &e))
	require.Equal(t, http.StatusOK, a.do(http.MethodDelete, "/skills/"+skill, nil, &body))
}

func TestSkillDependencies(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	base, crm, extra := uniq("base"), uniq("crm"), uniq("extra")
	var body map[string]any
	var e errorResponse
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": base, "name": "Base", "tools": []string{"os.health_check"}}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": crm, "name": "CRM", "tools": []string{"leads.create"}, "requires": []string{base}}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": extra, "name": "Extra", "tools": []string{"os.list_tasks"}, "requires": []string{crm}}, &body))

	// A cycle is refused when it is written, naming the loop.
	require.Equal(t, http.StatusConflict, a.do(http.MethodPatch, "/skills/"+base, map[string]any{"requires": []string{extra}}, &e))
	require.Contains(t, e.Errors[0].Message, "cycle")
	require.Contains(t, e.Errors[0].Message, base)
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPatch, "/skills/"+base, map[string]any{"requires": []string{uniq("ghost")}}, &e))

	// A skill is available only when what it requires is: without base, crm and extra give nothing.
	agent := uniq("agent")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "A"}, &body))
	for _, s := range []string{crm, extra} {
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+s, nil, &body))
	}
	var got struct {
		Tools []string `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent, nil, &got))
	require.Empty(t, got.Tools)
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+base, map[string]any{"enabled": false}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent, nil, &got))
	require.Empty(t, got.Tools, "a disabled requirement is not available either")
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+base, map[string]any{"enabled": true}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent, nil, &got))
	require.Equal(t, []string{"leads.create", "os.health_check", "os.list_tasks"}, got.Tools)
}

func TestSkillImport(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	content, err := os.ReadFile("testdata/skills/quoting-helper/SKILL.md")
	require.NoError(t, err)
	var body struct {
		Skill brain.Skill `json:"skill"`
		Notes []string    `json:"notes"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "testdata/skills/quoting-helper/SKILL.md", "content": string(content)}, &body))
	require.Equal(t, "quoting-helper", body.Skill.Slug)
	require.Equal(t, "Helps turn inspections into quotes. Use when the user asks to price a job or draft a quote.", body.Skill.Description)
	require.True(t, strings.HasPrefix(body.Skill.Instructions, "# Quoting"))
	// gem-tools lists three tools; allowed-tools narrows them to two and names one the registry lacks.
	require.Equal(t, []string{"quote.create_from_inspection", "quote.calculate_totals"}, body.Skill.Tools)
	require.Equal(t, "quoting", body.Skill.Category)
	require.ElementsMatch(t, []string{
		"quote.mark_sent: left out, allowed-tools does not list it",
		"quote.teleport: left out, allowed-tools does not list it",
	}, body.Notes)
	require.Equal(t, "Apache-2.0", body.Skill.Metadata["license"])

	// A skill written for another product: its allowed-tools name nothing in the registry, so it gives no tools.
	content, err = os.ReadFile("testdata/skills/pdf-notes/SKILL.md")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "pdf-notes", "content": string(content)}, &body))
	require.Empty(t, body.Skill.Tools)
	require.Contains(t, body.Notes, "Read: left out, not a tool in the registry")

	var e errorResponse
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "x", "content": "no front matter"}, &e))
	require.Contains(t, e.Errors[0].Message, "front matter")
}

// TestToolExport exports every registry tool: names map back exactly, every strict schema obeys strict
// mode's rules, and arguments an LLM gives in strict mode (nulls for what it leaves out) become input the
// executor's schema accepts.
func TestToolExport(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	ts := llm.NewToolSet(reg.Tools())
	require.Equal(t, reg.Len(), ts.Len())

	strict := 0
	for _, def := range ts.Defs() {
		tool, ok := ts.Tool(def.Name)
		require.True(t, ok, def.Name)
		fn, _ := ts.Function(tool.Name)
		require.Equal(t, def.Name, fn, "the mapping is exact both ways")
		require.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, def.Name)
		require.Equal(t, registry.PortableName(tool.Name), def.Name, "the name /mcp lists it by")
		require.Equal(t, tool.Name, registry.DottedName(def.Name), "and it reads back by rule")
		if !def.Strict {
			t.Logf("%s is exported without strict mode (its schema has a free-form object or a map)", tool.Name)
			continue
		}
		strict++
		require.Empty(t, llm.StrictProblems(def.Parameters), tool.Name)

		// An LLM in strict mode sends every property; optional ones it does not use are null.
		args := map[string]any{}
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		for name := range schema.Properties {
			args[name] = nil
		}
		raw, _ := json.Marshal(args)
		input, err := llm.InputFromArguments(tool, string(raw))
		require.NoError(t, err)
		// Nulls the registry does not allow were dropped, so what is left to complain about is what is
		// missing (required, minProperties, ...), never a null of the wrong type.
		if err := tool.ValidateInput(input); err != nil {
			var ve *registry.ValidationError
			require.ErrorAs(t, err, &ve)
			for _, v := range ve.Violations {
				require.NotContains(t, []string{"type", "enum", "format", "const"}, v.Keyword, "%s: %s", tool.Name, err)
			}
		}
	}
	require.Greater(t, strict, reg.Len()*3/4, "most tools are strict")

	// Long or clashing names are refused when the registry loads, each named: no function name needs a hash.
	long := strings.Repeat("x", 70)
	_, err = registry.Parse([]byte(fmt.Sprintf(`{"version": "1", "tools": [
		{"name": "a.%s", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000},
		{"name": "a__b.c", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000},
		{"name": "a.b__c", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`, long)))
	require.ErrorContains(t, err, "tool a."+long+": field name is longer than model APIs accept")
	require.ErrorContains(t, err, `tool a__b.c: field name is exported as "a__b__c"`)
	require.ErrorContains(t, err, `tool a.b__c: field name is exported as "a__b__c"`)
}

// TestBuiltinSkills checks the skills the migrations install: every tool they name is in the registry, the
// office assistant gets the business tools through them, and built-in skills cannot be deleted.
func TestBuiltinSkills(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	reg := shared.brain.Registry

	var list struct {
		Skills []brain.Skill `json:"skills"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/skills", nil, &list))
	builtin := map[string]brain.Skill{}
	for _, s := range list.Skills {
		if s.IsBuiltin {
			builtin[s.Slug] = s
			require.NotEmpty(t, s.Instructions, s.Slug)
			for _, tool := range s.Tools {
				_, ok := reg.Tool(tool)
				require.True(t, ok, "built-in skill %s names %s, which the registry lacks", s.Slug, tool)
			}
		}
	}
	for _, slug := range []string{"memory", "lore", "sentiment", "crm", "inspections", "quoting", "jobs", "invoicing", "comms", "notes-tasks"} {
		require.Contains(t, builtin, slug)
	}
	require.Equal(t, []string{"inspections"}, builtin["quoting"].Requires)

	var got struct {
		Tools []string `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/office-assistant", nil, &got))
	for _, tool := range []string{"leads.create", "inspection.submit", "quote.calculate_totals", "invoice.add_payment", "memory.recall", "lore.query"} {
		require.Contains(t, got.Tools, tool)
	}
	require.NotContains(t, got.Tools, "image.generate", "the assistant does not generate images")

	var e errorResponse
	require.Equal(t, http.StatusConflict, a.do(http.MethodDelete, "/skills/memory", nil, &e))
	require.Contains(t, e.Errors[0].Message, "built in")
}

// TestChatModelNUL checks that a model answering with U+0000, which PostgreSQL cannot store, in its text and
// in a tool call's arguments does not fail the person's request: the NUL becomes U+FFFD, the call is made
// and the turn, its messages and its reply are stored.
func TestChatModelNUL(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			testModelNUL(t, provider)
		})
	}
}

func testModelNUL(t *testing.T, provider string) {
	title := "nul " + uniq("task")
	newFake := llmfake.NewOpenAI
	if provider == llmconfig.ProviderAnthropic {
		newFake = llmfake.NewAnthropic
	}
	fake := newFake(t, fakeKey,
		llmfake.Turn{Text: "let me\u0000 see", Calls: []llmfake.Call{{ID: "nul", Name: "os__create_task",
			Arguments: `{"title": "` + title + `\u0000", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}},
		llmfake.Turn{Text: "done\u0000."},
	)
	a := llmBrain(t, provider, fake, chat.Config{})
	agent := agentWithSkills(t, a, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})

	resp, status := chatWith(t, a, agent, "make a task", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, "done\uFFFD.", resp.Reply)
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, "succeeded", resp.ToolCalls[0].Status)
	var stored int
	require.NoError(t, shared.pool.QueryRow(t.Context(), `SELECT count(*) FROM os_tasks WHERE title = $1`, title+"\uFFFD").Scan(&stored))
	require.Equal(t, 1, stored)
	require.NoError(t, shared.pool.QueryRow(t.Context(), `SELECT count(*) FROM agent_messages m JOIN brain_runs r ON r.id = m.run_id
		WHERE r.id = $1 AND m.role = 'assistant' AND m.content LIKE '%' || chr(65533) || '%'`, resp.RunID).Scan(&stored))
	require.Equal(t, 2, stored, "the assistant's two messages are stored, repaired")
}
