package chat_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

const (
	fakeKey = "sk-fake-0123456789"
	// requester is the caller the tests' chats are made for; it holds every permission, as the brain's
	// configured token does.
	requester = "tester"
)

type testBundle struct {
	pool   *pgxpool.Pool
	reg    *registry.Registry
	waiter *gemsql.ReceiptWaiter
	chat   *chat.Chat
}

// setup is a chat as the brain builds it (the repository's registry, a receipt waiter, a listener on runs'
// ends) on the shared database, whose LLM is fake, a fake of provider.
func setup(t *testing.T, provider string, fake *llmfake.Server, cfg chat.Config) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, sharedDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, gemsql.CallerEnsure(ctx, pool, requester, gemsql.CallerToken, []string{"*"}, "the chat's tests"))
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	waiter := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, waiter.Start(ctx))
	t.Cleanup(waiter.Stop)
	ended := gemsql.NewListener(pool, "run listener", []string{postgres.RunEndedChannel, postgres.RunEventChannel}, nil)
	require.NoError(t, ended.Start(ctx))
	t.Cleanup(ended.Stop)
	base := fake.URL + "/v1"
	if provider == llmconfig.ProviderAnthropic {
		base = fake.URL
	}
	client, err := llm.New(llmconfig.Config{Provider: provider, BaseURL: base, APIKey: fakeKey, Model: "fake-model"}, nil)
	require.NoError(t, err)
	c := chat.New(client, reg, pool, waiter, ended, cfg)
	log := zerolog.Nop()
	c.Start(ctx, &log)
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	return &testBundle{pool: pool, reg: reg, waiter: waiter, chat: c}
}

// chatWith sends message to agent as user-1, in session (a new one for "").
func (b *testBundle) chatWith(agent, message, session string) (*brain.ChatResponse, error) {
	return b.chat.Chat(context.Background(), agent, &brain.ChatParams{Message: message, UserID: "user-1", SessionID: session}, requester)
}

// getRun reads a run as its requester does.
func (b *testBundle) getRun(t *testing.T, id uuid.UUID) *brain.RunResponse {
	t.Helper()
	resp, err := run.NewService(b.reg, nil, b.pool, b.waiter).GetRun(context.Background(), id, brain.Reader{Name: requester, All: true, Approver: true})
	require.NoError(t, err)
	return resp
}

// receipt waits up to d for a call's receipt.
func (b *testBundle) receipt(t *testing.T, id uuid.UUID, d time.Duration) *registry.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := b.waiter.WaitOne(ctx, id)
	require.NoError(t, err)
	return r
}

// uniq makes a slug unique to the test (tests share one database).
func uniq(prefix string) string {
	return prefix + "-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
}

// agentWithSkills creates an agent and a skill per entry of skills (slug → tools), all assigned.
func agentWithSkills(t *testing.T, b *testBundle, maxIterations int, skills map[string][]string) string {
	t.Helper()
	ctx := context.Background()
	slug, name, instructions := uniq("agent"), "Test agent", "You help a roofing business."
	_, err := postgres.AgentCreate(ctx, b.pool, &brain.AgentParams{Slug: &slug, Name: &name, Instructions: &instructions, MaxToolIterations: &maxIterations})
	require.NoError(t, err)
	for skill, tools := range skills {
		description, instructions := "test skill", "Use "+skill+" well."
		params := &brain.SkillParams{Slug: &skill, Name: &skill, Description: &description, Instructions: &instructions, Tools: tools}
		_, err := params.Check(b.reg, "", brain.SkillCreate)
		require.NoError(t, err)
		_, err = postgres.SkillSave(ctx, b.pool, skill, params, brain.SkillCreate)
		require.NoError(t, err)
		require.NoError(t, postgres.Assign(ctx, b.pool, slug, skill, &brain.AssignmentParams{}))
	}
	return slug
}

func resultOf(t require.TestingT, m llmfake.Message) map[string]any {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(m.Content), &v), m.Content)
	return v
}

func insertedID(made []gemsql.Inserted, err error) (uuid.UUID, error) {
	if err != nil {
		return uuid.Nil, err
	}
	return made[0].ID, nil
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
	b := setup(t, provider, fake, chat.Config{})
	agent := agentWithSkills(t, b, 5, map[string][]string{crm: {"leads.create", "leads.list_by_stage"}, tasks: {"os.create_task"}})

	resp, err := b.chatWith(agent, "new lead Dana Fox 0455 123 987, and a task to book her inspection", "")
	require.NoError(t, err)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, "Dana Fox is recorded and a high-priority task is set to book her inspection.", resp.Reply)
	require.Equal(t, 2, resp.Iterations)
	require.False(t, resp.LimitReached)
	require.Len(t, resp.ToolCalls, 2)
	for _, tc := range resp.ToolCalls {
		require.Equal(t, "succeeded", tc.Status, tc.Tool)
		require.NotNil(t, tc.CallID)
		c, err := gemsql.CallGet(context.Background(), b.pool, *tc.CallID)
		require.NoError(t, err)
		require.Equal(t, agent, c.Agent, "the call carries its agent")
		require.Equal(t, "user-1", c.UserID)
		require.Equal(t, &resp.RunID, c.RunID)
	}
	require.Equal(t, 0, fake.Remaining())

	// Every LLM turn is recorded with the run, and the run with its calls.
	var turns int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM brain_turns WHERE run_id = $1`, resp.RunID).Scan(&turns))
	require.Equal(t, 2, turns)
	require.Equal(t, brain.RunCompleted, testenv.RunStatus(t, b.pool, resp.RunID))
	require.Equal(t, 2, testenv.CountCalls(t, b.pool, resp.RunID))

	// The session keeps the run's messages in order: the question, the assistant's calls, their results in
	// the order asked (each with its GEM call), the answer.
	rows, err := b.pool.Query(context.Background(), `SELECT role || ':' || coalesce(tool_call_id, '') || ':' ||
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
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, b, 2, map[string][]string{uniq("tasks"): {"os.list_tasks"}})

	resp, err := b.chatWith(agent, "keep checking my tasks", "")
	require.NoError(t, err)
	require.True(t, resp.LimitReached)
	require.False(t, resp.OK, "an agent stopped by its limit did not finish")
	require.Len(t, resp.Errors, 1)
	require.Equal(t, brain.ETOOLITERATIONS, resp.Errors[0].Code)
	require.False(t, b.getRun(t, resp.RunID).OK, "the run read back says so too")
	require.Equal(t, 2, resp.Iterations)
	require.Len(t, fake.Requests(), 2, "no third LLM request after the limit")
	require.Contains(t, resp.Reply, "I stopped after 2 rounds of tool calls")
	require.Contains(t, resp.Reply, "Let me look again.")
	require.Len(t, resp.ToolCalls, 2)
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
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, b, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})

	resp, err := b.chatWith(agent, "do several things", "")
	require.NoError(t, err)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, 2, resp.Iterations)
	statuses := map[string]string{}
	for _, tc := range resp.ToolCalls {
		statuses[tc.Tool] += tc.Status + " "
	}
	require.Equal(t, "invalid_arguments invalid_arguments succeeded ", statuses["os.create_task"])
	require.Equal(t, 1, testenv.CountCalls(t, b.pool, resp.RunID), "only the good call was enqueued")

	// The executor refuses the disabled tool too, whoever makes the call for the agent.
	id, err := insertedID(gemsql.CallInsert(context.Background(), b.pool, gemsql.CallInsertParams{ToolName: "os.create_note",
		Input: json.RawMessage(`{"domain": "business", "title": "sneaky", "content": "x"}`), Agent: agent, UserID: "user-1"}))
	require.NoError(t, err)
	require.Equal(t, registry.CodeToolNotEnabled, b.receipt(t, id, 10*time.Second).Error.Code)
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
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, b, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	first, err := b.chatWith(agent, "add a task to ring Ann", "")
	require.NoError(t, err)
	require.True(t, first.OK, "%+v", first.Errors)
	require.NotEmpty(t, first.SessionID)
	second, err := b.chatWith(agent, "what did I ask you?", first.SessionID)
	require.NoError(t, err)
	require.Equal(t, "You asked me to add a task to ring Ann.", second.Reply)
	require.Equal(t, first.SessionID, second.SessionID)

	// A session belongs to its caller, agent and user: to another agent it does not exist.
	other := agentWithSkills(t, b, 3, nil)
	_, err = b.chatWith(other, "hi", first.SessionID)
	require.Equal(t, brain.ENOTFOUND, brain.ErrorCode(err), "%v", err)
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
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{ToolSearchThreshold: 3})
	agent := agentWithSkills(t, b, 5, map[string][]string{uniq("many"): {"os.create_task", "os.list_tasks", "os.create_note", "os.search_notes", "leads.create"}})

	resp, err := b.chatWith(agent, "make a task", "")
	require.NoError(t, err)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, 4, resp.Iterations)
	require.Equal(t, 1, testenv.CountCalls(t, b.pool, resp.RunID), "meta-tools are answered by the brain, not enqueued")
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
	b := setup(t, provider, fake, chat.Config{})
	agent := agentWithSkills(t, b, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})

	resp, err := b.chatWith(agent, "make a task", "")
	require.NoError(t, err)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, "done\uFFFD.", resp.Reply)
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, "succeeded", resp.ToolCalls[0].Status)
	var stored int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM os_tasks WHERE title = $1`, title+"\uFFFD").Scan(&stored))
	require.Equal(t, 1, stored)
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM agent_messages m JOIN brain_runs r ON r.id = m.run_id
		WHERE r.id = $1 AND m.role = 'assistant' AND m.content LIKE '%' || chr(65533) || '%'`, resp.RunID).Scan(&stored))
	require.Equal(t, 2, stored, "the assistant's two messages are stored, repaired")
}
