package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// freeAddr is a local address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// brainProcess starts a brain in a process of its own (one a test can SIGKILL) on dbURL, its LLM provider at
// base, with a 1 s lease and env added to its environment, and waits until it answers.
func brainProcess(t *testing.T, dbURL, provider, base string, env ...string) (*exec.Cmd, *testAPI) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(brainBinary(t), "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+testenv.RegistryPath(), "GEM_BRAIN_ADDR="+addr,
		"GEM_BRAIN_TOKENS=tester:"+testToken, "GEM_LLM_PROVIDER="+provider, "GEM_LLM_BASE_URL="+base, "GEM_LLM_API_KEY="+fakeKey,
		"GEM_LLM_MODEL=fake-model", "GEM_BRAIN_RUN_LEASE=1s", "GEM_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	api := &testAPI{t: t, url: "http://" + addr, token: testToken}
	require.Eventually(t, func() bool {
		resp, err := http.Get(api.url + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the brain process did not start")
	return cmd, api
}

// twoBrains starts brain A, a process of its own (to be SIGKILLed), and brain B in this process, on one
// database and one fake LLM (OpenAI's wire format at llmURL), both with a 1 s lease; with searchAbove > 0,
// both give agents with more tools than that search_tools and describe_tool.
func twoBrains(t *testing.T, dbURL, llmURL string, searchAbove int) (a *exec.Cmd, apiA *testAPI, b *Main, apiB *testAPI) {
	t.Helper()
	var env []string
	if searchAbove > 0 {
		env = append(env, fmt.Sprintf("GEM_BRAIN_TOOL_SEARCH_THRESHOLD=%d", searchAbove))
	}
	a, apiA = brainProcess(t, dbURL, llmconfig.ProviderOpenAI, llmURL+"/v1", env...)
	b, err := startBrain(dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: llmURL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Chat = chat.Config{Lease: time.Second, ToolSearchThreshold: searchAbove}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return a, apiA, b, &testAPI{t: t, url: b.Server.URL(), token: testToken}
}

// killableBrains is a database with its executor and two brains on it (twoBrains: A a process a test kills
// or stops, B in the test's process), whose LLM answers turns in order; a turn made with hold waits for the
// test's release, and says when it is asked.
type killableBrains struct {
	pool       *pgxpool.Pool
	fake       *llmfake.Server
	a          *exec.Cmd
	apiA, apiB *testAPI
	b          *Main
	asked      chan struct{}
	release    func()
}

// newKillableBrains starts them (searchAbove as twoBrains takes it).
func newKillableBrains(t *testing.T, searchAbove int, turns func(hold func(llmfake.Turn) llmfake.Turn) []llmfake.Turn) *killableBrains {
	t.Helper()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(executor.Stop)
	held := make(chan struct{})
	var once sync.Once
	k := &killableBrains{pool: pool, asked: make(chan struct{}, 4), release: func() { once.Do(func() { close(held) }) }}
	k.fake = llmfake.NewOpenAI(t, fakeKey, turns(func(turn llmfake.Turn) llmfake.Turn { return llmfake.Blocking(turn, k.asked, held) })...)
	t.Cleanup(k.release) // before the fake's own cleanup, which waits for its handlers
	k.a, k.apiA, k.b, k.apiB = twoBrains(t, dbURL, k.fake.URL, searchAbove)
	return k
}

// awaitAsked waits until a brain's request is held by the LLM.
func (k *killableBrains) awaitAsked(t *testing.T) {
	t.Helper()
	select {
	case <-k.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("no brain asked the LLM for the held answer")
	}
}

// healthCheckTurns are an LLM's answers to a turn that checks GEM's health: the call, then a held answer
// (its brain to die meanwhile), then the reply.
func healthCheckTurns(hold func(llmfake.Turn) llmfake.Turn) []llmfake.Turn {
	return []llmfake.Turn{
		{Calls: []llmfake.Call{{ID: "h1", Name: "os__health_check", Arguments: `{}`}}},
		hold(llmfake.Turn{Text: "(never delivered: its brain is dead)"}),
		{Text: "All healthy."},
	}
}

// TestChatTurnSurvivesItsBrain: brain A answers a chat turn whose first LLM answer made a task; A is
// SIGKILLed while it waits for the LLM's second answer. Brain B takes the run over when A's lease expires
// and finishes it from the journal: the first answer is not asked of the LLM again and the task is not made
// again, the reply is the LLM's, and the session takes the next message. The client's retry with its key,
// sent to B, answers the turn B finished. Before, the run stayed planning forever, the session answered 409
// for 10 minutes, and the retry made a second task.
func TestChatTurnSurvivesItsBrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()

	asked, release := make(chan struct{}, 4), make(chan struct{})
	title := "ring Bea " + uuid.NewString()[:8]
	create := llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task",
		Arguments: fmt.Sprintf(`{"title": %q, "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`, title)}}}
	fake := llmfake.NewOpenAI(t, fakeKey, create,
		llmfake.Blocking(llmfake.Turn{Text: "(never delivered: its brain is dead)"}, asked, release),
		llmfake.Turn{Text: "Bea is on your list.", Check: func(t require.TestingT, req *llmfake.Request) {
			roles := []string{}
			for _, m := range req.Messages {
				roles = append(roles, m.Role)
			}
			require.Equal(t, []string{"user", "assistant", "tool"}, roles, "the resumed turn sends the journal: the message, the answer, its result")
			require.Contains(t, req.Messages[2].Content, `"status":"succeeded"`)
		}})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	a, apiA, m, apiB := twoBrains(t, dbURL, fake.URL, 0)
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	key := "survive-" + uuid.NewString()
	body := map[string]any{"message": "add a task to ring Bea", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	lost := make(chan error, 1)
	go func() {
		_, _, err := post(apiA, "/agents/"+agent+"/chat", body, header)
		lost <- err
	}()
	select {
	case <-asked: // A journaled the first answer, its task was made, and A waits for the second answer
	case <-time.After(30 * time.Second):
		t.Fatal("brain A never asked for the second answer")
	}
	require.NoError(t, a.Process.Kill())
	killed := time.Now()
	_ = a.Wait()
	once.Do(func() { close(release) })
	require.Error(t, <-lost, "the client's connection to A is gone")

	// The retry goes to B: the same turn, finished by B.
	status, data, err := post(apiB, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "%s", data)
	var resp brain.ChatResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	t.Logf("the retry was answered %s after A was killed (lease 1s)", time.Since(killed).Round(time.Millisecond))
	require.True(t, resp.Repeated)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, brain.RunCompleted, resp.Status)
	require.Equal(t, "Bea is on your list.", resp.Reply, "the reply is the LLM's")
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, "succeeded", resp.ToolCalls[0].Status)

	require.Len(t, fake.Requests(), 3, "the first answer was journaled: asked once; the second, lost with A, asked again by B")
	var tasks, calls int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM os_tasks WHERE title = $1`, title).Scan(&tasks))
	require.Equal(t, 1, tasks, "the task was made once")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE run_id = $1`, resp.RunID).Scan(&calls))
	require.Equal(t, 1, calls)
	var owner string
	require.NoError(t, pool.QueryRow(ctx, `SELECT owner FROM brain_runs WHERE id = $1`, resp.RunID).Scan(&owner))
	require.True(t, strings.HasPrefix(owner, m.Chat.Owner()+"#"), "B owns the run it finished: %s", owner)

	// The session is free for the next message.
	fake.Push(llmfake.Turn{Text: "Anything else?"})
	next, status := chatWith(t, apiB, agent, "thanks", resp.SessionID)
	require.Equal(t, http.StatusOK, status, "%+v", next.Errors)
	require.Equal(t, "Anything else?", next.Reply)
}

// TestTakeoverStaysWithItsProvider: brain A (Anthropic, a process of its own) is SIGKILLed while it waits
// for a turn's second LLM answer. Brain B, whose LLM is OpenAI, does not take the turn over — it would ask
// its own provider to continue a conversation begun on another's wire — but brain C, Anthropic, does, and
// the client's retry gets the reply from the Anthropic script. Before, any brain took any turn over: B took
// it within a second and asked OpenAI.
func TestTakeoverStaysWithItsProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()

	asked, release := make(chan struct{}, 4), make(chan struct{})
	title := "ring Cal " + uuid.NewString()[:8]
	anthropic := llmfake.NewAnthropic(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task",
			Arguments: fmt.Sprintf(`{"title": %q, "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`, title)}}},
		llmfake.Blocking(llmfake.Turn{Text: "(never delivered: its brain is dead)"}, asked, release),
		llmfake.Turn{Text: "Cal is on your list."})
	openai := llmfake.NewOpenAI(t, fakeKey) // no script: a request is a failure of the test
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	a, apiA := brainProcess(t, dbURL, llmconfig.ProviderAnthropic, anthropic.URL)

	inProcess := func(provider, base string) *Main {
		m, err := startBrain(dbURL, func(c *Config) {
			c.LLM = llmconfig.Config{Provider: provider, BaseURL: base, APIKey: fakeKey, Model: "fake-model"}
			c.Chat = chat.Config{Lease: time.Second}
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close(ctx) })
		return m
	}
	b := inProcess(llmconfig.ProviderOpenAI, openai.URL+"/v1")
	apiB := &testAPI{t: t, url: b.Server.URL(), token: testToken}
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	key := "provider-" + uuid.NewString()
	body := map[string]any{"message": "add a task to ring Cal", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	lost := make(chan error, 1)
	go func() {
		_, _, err := post(apiA, "/agents/"+agent+"/chat", body, header)
		lost <- err
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("brain A never asked for the second answer")
	}
	require.NoError(t, a.Process.Kill())
	_ = a.Wait()
	once.Do(func() { close(release) })
	require.Error(t, <-lost)

	// A's lease (1 s) ends; B looks for runs to take over every second, and must leave this one.
	var runID uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE idempotency_key = $1`, key).Scan(&runID))
	time.Sleep(3500 * time.Millisecond)
	var owner, status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT owner, status FROM brain_runs WHERE id = $1`, runID).Scan(&owner, &status))
	require.False(t, strings.HasPrefix(owner, b.Chat.Owner()+"#"), "an OpenAI brain took over a turn begun on Anthropic: %s", owner)
	require.Contains(t, []string{brain.RunPlanning, brain.RunWaiting}, status)
	require.Empty(t, openai.Requests())

	// An Anthropic brain takes it over and finishes it; the retry, to it, gets the reply.
	c := inProcess(llmconfig.ProviderAnthropic, anthropic.URL)
	apiC := &testAPI{t: t, url: c.Server.URL(), token: testToken}
	code, data, err := post(apiC, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", data)
	var resp brain.ChatResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	require.Equal(t, runID, resp.RunID)
	require.Equal(t, "Cal is on your list.", resp.Reply)
	require.NoError(t, pool.QueryRow(ctx, `SELECT owner FROM brain_runs WHERE id = $1`, runID).Scan(&owner))
	require.True(t, strings.HasPrefix(owner, c.Chat.Owner()+"#"), owner)
	require.Empty(t, openai.Requests())
}

// TestResumedTurnKeepsItsSearch: brain A, whose agent searches for its tools, is SIGKILLed after a turn's
// steps searched (and described a tool), while it waits for the LLM's next answer; brain B resumes the turn
// from its journal, and the LLM answers with no call. B counts the turn as brain_tool_stumbles reads the
// journal: a search that ended with no call, under the tool it described, or no stumble at all when its last
// search answered that no tool fits. Before, the resumed turn had forgotten that it searched and B counted
// nothing, while the page listed the run.
func TestResumedTurnKeepsItsSearch(t *testing.T) {
	t.Parallel()
	search := func(id, query string) llmfake.Turn {
		return llmfake.Turn{Calls: []llmfake.Call{{ID: id, Name: "search_tools", Arguments: fmt.Sprintf(`{"query": %q, "limit": null}`, query)}}}
	}
	for _, c := range []struct {
		name    string
		steps   []llmfake.Turn
		tool    string // the metric's tool label of the stumble; "" for none
		message string
	}{
		{name: "described, then no call", message: "remind me to ring the supplier", tool: "os.create_task", steps: []llmfake.Turn{
			search("s1", "add a task"),
			{Calls: []llmfake.Call{{ID: "d1", Name: "describe_tool", Arguments: `{"name": "os__create_task"}`}}},
		}},
		{name: "searched, then no call", message: "remind me to ring the supplier", tool: chat.StumbleToolNone, steps: []llmfake.Turn{
			search("s1", "add a task"),
		}},
		{name: "told no tool fits", message: "book us a table at the Royal on Friday", steps: []llmfake.Turn{
			search("s1", "add a task"),
			search("s2", "reserve a table for 6 at the Royal Hotel Friday night"),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			k := newKillableBrains(t, 3, func(hold func(llmfake.Turn) llmfake.Turn) []llmfake.Turn {
				return append(slices.Clone(c.steps), hold(llmfake.Turn{Text: "(never delivered: its brain is dead)"}), llmfake.Turn{Text: "Which supplier?"})
			})
			agent := agentWithSkills(t, k.apiB, 6, map[string][]string{uniq("many"): {"os.create_task", "os.list_tasks", "os.create_note", "os.search_notes"}})

			body := map[string]any{"message": c.message, "user_id": "user-1"}
			header := map[string]string{brain.IdempotencyKeyHeader: "resumed-search-" + uuid.NewString()}
			lost := make(chan error, 1)
			go func() {
				_, _, err := post(k.apiA, "/agents/"+agent+"/chat", body, header)
				lost <- err
			}()
			k.awaitAsked(t) // A journaled the searches and waits for the next answer
			require.NoError(t, k.a.Process.Kill())
			_ = k.a.Wait()
			k.release()
			require.Error(t, <-lost)

			status, data, err := post(k.apiB, "/agents/"+agent+"/chat", body, header)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status, "%s", data)
			var resp brain.ChatResponse
			require.NoError(t, json.Unmarshal(data, &resp))
			require.True(t, resp.Repeated, "the retry answers the turn B resumed")
			require.Equal(t, brain.RunCompleted, resp.Status)
			require.Equal(t, "Which supplier?", resp.Reply)
			require.Zero(t, k.fake.Remaining())

			var runs []uuid.UUID
			require.NoError(t, k.pool.QueryRow(t.Context(), `SELECT coalesce(array_agg(run_id), '{}') FROM brain_tool_attempts
				WHERE agent = $1 AND reason = 'search_no_call'`, agent).Scan(&runs))
			f, code, err := telemetrytest.Scrape(k.apiB.url+"/metrics", testToken)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
			counted := f.Value(chat.MetricToolStumbles, "agent", agent, "reason", chat.StumbleSearchNoCall)
			if c.tool == "" {
				require.Empty(t, runs, "told no tool fits: no stumble on the page")
				require.Zero(t, counted, "nor in the metric")
				return
			}
			require.Equal(t, []uuid.UUID{resp.RunID}, runs, "the page lists the resumed run")
			require.Equal(t, 1.0, counted, "the metric counts it, as the page does")
			require.Equal(t, 1.0, f.Value(chat.MetricToolStumbles, "tool", c.tool, "agent", agent, "reason", chat.StumbleSearchNoCall))
		})
	}
}
