package main

// Review of issue 33 (durable runs): tests that show defects of the journal, the leases and the request
// keys as a client and a crash see them. Each fails on the code it was written against; see the report of
// branch wp-review33.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// reviewBrainProcess starts `brain serve` as a process of its own on dbURL whose LLM is fake (OpenAI wire
// format), with a lease of 1 s, and returns it with an API client.
func reviewBrainProcess(t *testing.T, dbURL string, fake *llmfake.Server, env ...string) (*exec.Cmd, *testAPI) {
	t.Helper()
	addr := freeAddr(t)
	p := exec.Command(brainBinary(t), "serve")
	p.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+testenv.RegistryPath(), "GEM_BRAIN_ADDR="+addr,
		"GEM_BRAIN_TOKENS=tester:"+testToken, "GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL="+fake.URL+"/v1", "GEM_LLM_API_KEY="+fakeKey,
		"GEM_LLM_MODEL=fake-model", "GEM_BRAIN_RUN_LEASE=1s", "GEM_LOG_LEVEL=warn")
	p.Env = append(p.Env, env...)
	p.Stdout, p.Stderr = os.Stderr, os.Stderr
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Process.Signal(syscall.SIGCONT); _ = p.Process.Kill(); _ = p.Wait() })
	a := &testAPI{t: t, url: "http://" + addr, token: testToken}
	require.Eventually(t, func() bool {
		resp, err := http.Get(a.url + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the brain process did not start")
	return p, a
}

// reviewBrain starts a brain in this process on dbURL whose LLM is fake (OpenAI wire format).
func reviewBrain(t *testing.T, dbURL string, fake *llmfake.Server, cfg chat.Config) (*Main, *testAPI) {
	t.Helper()
	m, err := startBrain(dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Chat = cfg
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m, &testAPI{t: t, url: m.Server.URL(), token: testToken}
}

func createTaskCall(id, title string) llmfake.Call {
	return llmfake.Call{ID: id, Name: "os__create_task",
		Arguments: fmt.Sprintf(`{"title": %q, "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`, title)}
}

func tasksTitled(t *testing.T, pool *pgxpool.Pool, title string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM os_tasks WHERE title = $1`, title).Scan(&n))
	return n
}

// TestReviewSameBrainTakesOverItsOwnLiveTurn: a brain whose lease on a turn expires while it still works on
// it (as when PostgreSQL is away longer than GEM_BRAIN_RUN_LEASE while the LLM thinks) must not take the
// turn over itself beside its live copy: before, it did, with its own id as the owner, which the fence let
// both copies write under; the resumed copy asked the LLM for step 1 again and made its call, and the live
// copy made it a second time. Now each taking has its own claim and a brain never takes a run it works on:
// one LLM request for step 1, one call, one task.
func TestReviewSameBrainTakesOverItsOwnLiveTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()

	title := "ring Cy " + uuid.NewString()[:8]
	create := llmfake.Turn{Calls: []llmfake.Call{createTaskCall("t1", title)}}
	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Blocking(create, asked, release), // the live turn's first answer, slow to come
		llmfake.Turn{Text: "Cy is on your list."},
		llmfake.Turn{Text: "Cy is on your list."}) // step 1 asked again (a second copy) gets text: counted below
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	// A long lease: renewed every 10 s, so the expiry below is not undone before the takeover loop (1 s) runs.
	_, a := reviewBrain(t, dbURL, fake, chat.Config{Lease: 30 * time.Second})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	answered := make(chan int, 1)
	go func() {
		status, _, _ := post(a, "/agents/"+agent+"/chat", map[string]any{"message": "add a task to ring Cy", "user_id": "user-1"}, nil)
		answered <- status
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the LLM was never asked")
	}
	var run uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE agent = $1`, agent).Scan(&run))
	// The brain stalled past its lease (its renewals could not reach the database): the lease is over.
	_, err = pool.Exec(ctx, `UPDATE brain_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, run)
	require.NoError(t, err)
	// Either this brain takes its own run over now and the resumed copy finishes it, or (fixed) it does not.
	resumed := assertEventually(func() bool {
		var status string
		_ = pool.QueryRow(ctx, `SELECT status FROM brain_runs WHERE id = $1`, run).Scan(&status)
		return status == brain.RunCompleted
	}, 10*time.Second)
	t.Logf("the same brain resumed its own live turn and finished it: %v; LLM requests so far: %d", resumed, len(fake.Requests()))
	once.Do(func() { close(release) })
	select {
	case status := <-answered:
		t.Logf("the client was answered %d", status)
	case <-time.After(60 * time.Second):
		t.Fatal("the client was never answered")
	}
	time.Sleep(time.Second) // anything still running writes now

	var calls, turns int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE run_id = $1`, run).Scan(&calls))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_turns WHERE run_id = $1 AND iteration = 1`, run).Scan(&turns))
	t.Logf("LLM requests: %d, step-1 answers journaled: %d, calls: %d, tasks: %d", len(fake.Requests()), turns, calls, tasksTitled(t, pool, title))
	require.Equal(t, 1, turns, "step 1's answer is journaled once")
	require.Equal(t, 1, calls, "the LLM's one tool call is made once")
	require.Equal(t, 1, tasksTitled(t, pool, title), "one task")
}

// assertEventually polls cond every 50 ms until it holds or d passes.
func assertEventually(cond func() bool, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestReviewStalledBrainEndsATakenOverTurnAgain: brain A (a process) is stalled (SIGSTOP) while it waits
// for a turn's first LLM answer; brain B takes the turn over when A's lease expires and finishes it. When A
// wakes, its LLM request fails (a provider 400): A's end of the turn is not fenced, so it writes the run
// again — failed, with A's error — over B's completed turn, and answers its client 422 for a turn that was
// answered. A retry with the key then gets A's failure, not the reply. Expected: the run stays completed
// with B's reply; A's write is refused like its journal writes.
func TestReviewStalledBrainEndsATakenOverTurnAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)

	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Blocking(llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusBadRequest, Message: "context length exceeded"}}, asked, release),
		llmfake.Turn{Text: "B answered this."})
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	procA, apiA := reviewBrainProcess(t, dbURL, fake)
	m, apiB := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	key := "stalled-" + uuid.NewString()
	body := map[string]any{"message": "hello", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	type answer struct {
		status int
		data   []byte
	}
	answeredA := make(chan answer, 1)
	go func() {
		status, data, _ := post(apiA, "/agents/"+agent+"/chat", body, header)
		answeredA <- answer{status, data}
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("brain A never asked the LLM")
	}
	require.NoError(t, procA.Process.Signal(syscall.SIGSTOP))
	var run uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE agent = $1`, agent).Scan(&run))
	require.Eventually(t, func() bool {
		var status, owner string
		_ = pool.QueryRow(ctx, `SELECT status, coalesce(owner, '') FROM brain_runs WHERE id = $1`, run).Scan(&status, &owner)
		return status == brain.RunCompleted && strings.HasPrefix(owner, m.Chat.Owner()+"#")
	}, 20*time.Second, 50*time.Millisecond, "B did not take the stalled turn over and finish it")

	// A wakes up; its LLM request is answered (a refusal).
	once.Do(func() { close(release) })
	require.NoError(t, procA.Process.Signal(syscall.SIGCONT))
	var a answer
	select {
	case a = <-answeredA:
	case <-time.After(60 * time.Second):
		t.Fatal("brain A never answered its client")
	}
	t.Logf("brain A answered its client %d: %s", a.status, a.data)

	var status, reply string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, assistant_message FROM brain_runs WHERE id = $1`, run).Scan(&status, &reply))
	t.Logf("the run after A woke: %s, %q", status, reply)
	require.Equal(t, brain.RunCompleted, status, "the turn B finished stays finished")
	require.Equal(t, "B answered this.", reply)

	st, data, err := post(apiB, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	var resp brain.ChatResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	require.Equal(t, http.StatusOK, st, "%s", data)
	require.True(t, resp.OK, "%s", data)
	require.Equal(t, "B answered this.", resp.Reply)
}

// TestReviewRunCodeCallRepeatedAfterTakeover: an agent in code mode answers with run_code; brain A (a
// process) is SIGKILLed while the program waits for its call's receipt. Before, the program ran before the
// LLM's answer was journaled: brain B, taking the turn over, asked the LLM for step 1 again and ran the
// program again, and the task was made twice. Now the answer is journaled before the program runs: B tells
// the agent the program was interrupted, with the call it made, and asks only for the next step.
func TestReviewRunCodeCallRepeatedAfterTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)

	title := "call Di " + uuid.NewString()[:8]
	program, _ := json.Marshal(map[string]string{"code": fmt.Sprintf(`const t = gem.os.create_task({domain: "business", title: %q});
return {task: t.task_id};`, title)})
	runCode := llmfake.Turn{Calls: []llmfake.Call{{ID: "prog", Name: "run_code", Arguments: string(program)}}}
	fake := llmfake.NewOpenAI(t, fakeKey,
		runCode, // asked by A
		llmfake.Turn{Text: "Di is on your list.", Check: func(t require.TestingT, req *llmfake.Request) {
			last := req.Messages[len(req.Messages)-1]
			require.Equal(t, "tool", last.Role, "B asks for step 2: step 1 is journaled")
			require.Contains(t, last.Content, `"code":"interrupted"`)
		}})

	procA, apiA := reviewBrainProcess(t, dbURL, fake)
	tasks := uniq("tasks")
	var out map[string]any
	require.Equal(t, http.StatusCreated, apiA.do(http.MethodPost, "/skills", map[string]any{"slug": tasks, "name": tasks,
		"instructions": "Keep the task list.", "tools": []string{"os.create_task"}}, &out), "%v", out)
	coder := uniq("coder")
	require.Equal(t, http.StatusCreated, apiA.do(http.MethodPost, "/agents", map[string]any{"slug": coder, "name": "Coder", "code_mode": true}, &out), "%v", out)
	require.Equal(t, http.StatusOK, apiA.do(http.MethodPut, "/agents/"+coder+"/skills/"+tasks, nil, &out), "%v", out)

	key := "code-" + uuid.NewString()
	body := map[string]any{"message": "add a task to call Di", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	go func() { _, _, _ = post(apiA, "/agents/"+coder+"/chat", body, header) }()
	// No executor yet: the program's call waits for its receipt, and A is killed then.
	require.Eventually(t, func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE tool_name = 'os.create_task' AND input->>'title' = $1`, title).Scan(&n)
		return n == 1
	}, 30*time.Second, 50*time.Millisecond, "the program never made its call")
	require.NoError(t, procA.Process.Kill())
	_ = procA.Wait()

	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()
	_, apiB := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	st, data, err := post(apiB, "/agents/"+coder+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("the retry was answered %d: %s", st, data)
	require.Eventually(t, func() bool { return tasksTitled(t, pool, title) >= 1 }, 30*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second)

	var calls int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE tool_name = 'os.create_task' AND input->>'title' = $1`, title).Scan(&calls))
	t.Logf("LLM requests: %d, calls: %d, tasks: %d", len(fake.Requests()), calls, tasksTitled(t, pool, title))
	require.Equal(t, 1, calls, "the program's call is made once")
	require.Equal(t, 1, tasksTitled(t, pool, title), "one task")
}

// failFinishOnce makes the first end of a run (its status to completed or failed) fail as if the database
// connection were lost at that moment (57P01), as PostgreSQL going away just then does.
func failFinishOnce(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE SEQUENCE review_finish_faults;
CREATE FUNCTION review_fail_finish() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.status IN ('completed', 'failed') AND OLD.status IN ('planning', 'waiting') AND nextval('review_finish_faults') = 1 THEN
		RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER review_fail_finish BEFORE UPDATE OF status ON brain_runs FOR EACH ROW EXECUTE FUNCTION review_fail_finish();`)
	require.NoError(t, err)
}

// TestReviewFailedFinishAnswersWithoutRunID: the database fails at the moment the brain writes a turn's end.
// The client is answered 503 with no run_id (the finding, still there): without a key it cannot
// find its turn, which another brain finishes a few seconds later. (The brain gives the database no time to
// come back here, AwayWait: the turn is left to its lease at once.)
func TestReviewFailedFinishAnswersWithoutRunID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Text: "Hello."}, llmfake.Turn{Text: "Hello."})
	_, a := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second, AwayWait: time.Millisecond})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	failFinishOnce(t, pool)

	status, data, err := post(a, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "user-1"}, nil)
	require.NoError(t, err)
	t.Logf("answered %d: %s", status, data)
	var run uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE agent = $1`, agent).Scan(&run))
	require.Contains(t, string(data), run.String(), "the answer names the turn's run, which goes on")
}

// TestReviewLimitReachedLostAfterFailedFinish: a turn that hits max_tool_iterations answers ok: false
// (tool_iterations_exhausted). When the database fails as its end is written, the turn is taken over from
// its journal, whose last message is the limit's note, an assistant message without calls: the resumed turn
// takes it for the agent's reply and ends it ok: true, without the error — which the client's retry with its
// key is answered. (AwayWait: the brain does not wait for the database to come back, so the turn is left to
// its lease.)
func TestReviewLimitReachedLostAfterFailedFinish(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Calls: []llmfake.Call{{ID: "x", Name: "no_such_tool", Arguments: `{}`}}})
	_, a := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second, AwayWait: time.Millisecond})
	agent := agentWithSkills(t, a, 1, map[string][]string{uniq("tasks"): {"os.create_task"}})
	failFinishOnce(t, pool)

	key := "limit-" + uuid.NewString()
	body := map[string]any{"message": "loop", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	status, data, err := post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("first answer %d: %s", status, data)
	status, data, err = post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("the retry %d: %s", status, data)
	var resp brain.ChatResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	require.True(t, resp.Repeated)
	require.Equal(t, brain.RunCompleted, resp.Status)
	require.False(t, resp.OK, "a turn that hit max_tool_iterations is not ok: %s", data)
	require.True(t, resp.LimitReached)
	require.NotEmpty(t, resp.Errors)
	require.Equal(t, brain.ETOOLITERATIONS, resp.Errors[0].Code)
}

// TestReviewLLMPlannerUnavailableKeepsItsKey: POST /brain/run with the LLM planner answers a provider's rate
// limit 503 with Retry-After, inviting a retry; a client that retries with its key (as it should) is answered
// the first run's failure again, "repeated", for the key's whole window (24 h): the LLM is never asked
// again. A chat turn that failed for want of the LLM gives its key up (docs/durable-runs.md); /brain/run does
// not. Expected: the retry plans again.
func TestReviewLLMPlannerUnavailableKeepsItsKey(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewAnthropic(t, fakeKey,
		llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusTooManyRequests, Message: "slow down", Header: map[string]string{"retry-after": "120"}}},
		llmfake.Turn{Text: "Nothing to do."})
	a := llmBrainWith(t, llmconfig.ProviderAnthropic, fake, func(c *Config) { c.Planner = PlannerLLM })
	key := "planner-" + uuid.NewString()
	body := map[string]any{"message": "create a task to call John tomorrow", "mode": "enqueue"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	status, data, err := post(a, "/brain/run", body, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", data)

	status, data, err = post(a, "/brain/run", body, header)
	require.NoError(t, err)
	t.Logf("the retry after the provider's Retry-After: %d %s", status, data)
	var resp brain.RunResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	require.False(t, resp.Repeated, "a request that failed for want of the LLM did no work: its retry plans again")
	require.Len(t, fake.Requests(), 2)
}

// TestReviewRepeatOfARefusedTurnIsNotItsAnswer: a chat turn the provider refused is answered 422
// llm_rejected; its retry with the key is answered 200 with the same body. docs/durable-runs.md: a retry
// gets the turn's response "exactly as it was sent"; a client that decides by status reads the retry as a
// success.
func TestReviewRepeatOfARefusedTurnIsNotItsAnswer(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusBadRequest, Message: "context length exceeded"}})
	a := llmBrainWith(t, llmconfig.ProviderOpenAI, fake, nil)
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	key := "refused-" + uuid.NewString()
	body := map[string]any{"message": "hello", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	first, data, err := post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, first, "%s", data)
	again, data, err := post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	require.Contains(t, string(data), `"repeated":true`)
	require.Equal(t, first, again, "the retry is answered as the first request was: %s", data)
}

// TestReviewReadingARunEndsALiveChatTurn: GET /brain/runs/{id} on a chat turn whose calls have their
// receipts while the LLM works on its next answer "completes" the run with the rules describer's text (the
// /brain/run path answers a waiting run from its receipts). The run is then no longer planning or waiting:
// when its brain dies, no brain takes it over, the LLM's answer is never asked again, the session keeps
// refusing messages (its turn is never given back), and the client's retry with its key is answered the
// describer's text as the agent's reply. The issue named this; it is still there.
func TestReviewReadingARunEndsALiveChatTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()

	title := "ring Ed " + uuid.NewString()[:8]
	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{createTaskCall("t1", title)}},
		llmfake.Blocking(llmfake.Turn{Text: "(lost with brain A)"}, asked, release),
		llmfake.Turn{Text: "Ed is on your list."},
		llmfake.Turn{Text: "Next message answered."})
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	procA, apiA := reviewBrainProcess(t, dbURL, fake)
	_, apiB := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	key := "read-" + uuid.NewString()
	body := map[string]any{"message": "add a task to ring Ed", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	go func() { _, _, _ = post(apiA, "/agents/"+agent+"/chat", body, header) }()
	select {
	case <-asked: // the task is made and A waits for the LLM's second answer
	case <-time.After(30 * time.Second):
		t.Fatal("brain A never asked for the second answer")
	}
	var run uuid.UUID
	var session string
	require.NoError(t, pool.QueryRow(ctx, `SELECT id, conversation_id FROM brain_runs WHERE agent = $1`, agent).Scan(&run, &session))

	// Someone looks at the run.
	var seen brain.RunResponse
	require.Equal(t, http.StatusOK, apiB.do(http.MethodGet, "/brain/runs/"+run.String(), nil, &seen))
	t.Logf("GET /brain/runs/{id} while the turn runs: status %s, %q", seen.Status, seen.AssistantMessage)

	require.NoError(t, procA.Process.Kill())
	_ = procA.Wait()
	once.Do(func() { close(release) })

	st, data, err := post(apiB, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("the client's retry: %d %s", st, data)
	ok := assertEventually(func() bool {
		var status string
		_ = pool.QueryRow(ctx, `SELECT status FROM brain_runs WHERE id = $1`, run).Scan(&status)
		var free bool
		_ = pool.QueryRow(ctx, `SELECT turn_run IS NULL FROM agent_sessions WHERE id = $1`, session).Scan(&free)
		return free
	}, 10*time.Second)
	var resp brain.ChatResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	require.True(t, ok, "the session's turn is given back within seconds of its brain's death (its run: GET said %s)", seen.Status)
	require.Equal(t, "Ed is on your list.", resp.Reply, "the retry is answered the agent's reply")
}

// TestReviewLiveTurnLosesItsSessionAfterTenMinutes: a turn still running (its brain alive, its lease
// renewed) whose session turn was taken 10 minutes ago is treated as abandoned: a new message on the session
// is admitted beside it, and the two turns interleave in one conversation. The lease says the turn is alive;
// the session's guard does not look at it. (Ten minutes are simulated by dating the session's turn back.)
func TestReviewLiveTurnLosesItsSessionAfterTenMinutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Blocking(llmfake.Turn{Text: "first answer"}, asked, release),
		llmfake.Turn{Text: "second answer"})
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	_, a := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	session := uuid.NewString()
	go func() {
		_, _, _ = post(a, "/agents/"+agent+"/chat", map[string]any{"message": "first", "user_id": "user-1", "session_id": session}, nil)
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the LLM was never asked")
	}
	defer once.Do(func() { close(release) })
	_, err := pool.Exec(ctx, `UPDATE agent_sessions SET turn_since = now() - interval '11 minutes' WHERE id = $1`, session)
	require.NoError(t, err)
	var leaseLeft float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT extract(epoch FROM lease_until - now()) FROM brain_runs WHERE conversation_id = $1`, session).Scan(&leaseLeft))
	t.Logf("the first turn's lease has %.2f s left: its brain is alive", leaseLeft)
	status, data, err := post(a, "/agents/"+agent+"/chat", map[string]any{"message": "second", "user_id": "user-1", "session_id": session}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, status, "a second message while a live turn runs is refused: %s", data)
}

// TestReviewTakenOverTurnOfADeletedAgentNeverEnds: brain A is killed during a turn; the agent is deleted
// before another brain takes the turn over (its session goes with it, ON DELETE CASCADE). Resume fails (the
// agent is not found) and leaves the run as it was: it is taken over again after each lease, forever (a
// warning a second), never ended, and a client's retry with its key is answered 202 after a minute, every
// time. Expected: a turn that cannot go on is ended failed (Resume has finishResumed for that).
func TestReviewTakenOverTurnOfADeletedAgentNeverEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Blocking(llmfake.Turn{Text: "(lost)"}, asked, release),
		llmfake.Turn{Text: "late"}, llmfake.Turn{Text: "late"})
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	procA, apiA := reviewBrainProcess(t, dbURL, fake)
	agent := agentWithSkills(t, apiA, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	go func() {
		_, _, _ = post(apiA, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "user-1"}, nil)
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the LLM was never asked")
	}
	var run uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE agent = $1`, agent).Scan(&run))
	var out map[string]any
	status := apiA.do(http.MethodDelete, "/agents/"+agent, nil, &out)
	t.Logf("DELETE /agents/%s: %d %v", agent, status, out)
	require.NoError(t, procA.Process.Kill())
	_ = procA.Wait()
	once.Do(func() { close(release) })

	_, _ = reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	ended := assertEventually(func() bool {
		var s string
		_ = pool.QueryRow(ctx, `SELECT status FROM brain_runs WHERE id = $1`, run).Scan(&s)
		return s == brain.RunCompleted || s == brain.RunFailed
	}, 10*time.Second)
	var s, owner string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, coalesce(owner, '') FROM brain_runs WHERE id = $1`, run).Scan(&s, &owner))
	t.Logf("10 s after: status %s, owner %s", s, owner)
	require.True(t, ended, "a taken-over turn that cannot go on ends (failed); it is %s", s)
}

// TestReviewJournalFaultKeepsTheKeyOfATurnThatMadeNothing: the database fails as the brain journals an LLM
// answer with its call (the transaction that would make the call is lost), and is back when the turn's end
// is written. The turn made no call, yet it keeps its key: the calls it meant to make were counted before
// the journal's transaction, not after it. docs/durable-runs.md: "A chat turn that failed before making any
// call because the LLM or the database was unavailable gives its key up, so the client's retry tries
// again". The retry was answered the failure, repeated, for 24 h; the run's planned calls named call ids
// that did not exist. Now a journal write that finds the database away does not end the turn: it is written
// again once the database answers (here at once), with the LLM's answer the brain holds — never asked again
// — and the client gets the finished turn, which its retry with the key is answered too: one task, the
// calls the run names exist. (A database away for longer answers 503 with the run and leaves the turn to
// its lease: TestChatTurnThroughADatabaseOutage in proof.)
func TestReviewJournalFaultKeepsTheKeyOfATurnThatMadeNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()
	title := "ring Flo " + uuid.NewString()[:8]
	create := llmfake.Turn{Calls: []llmfake.Call{createTaskCall("t1", title)}}
	fake := llmfake.NewOpenAI(t, fakeKey, create, llmfake.Turn{Text: "Flo is on your list."})
	_, a := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	_, err = pool.Exec(ctx, `CREATE SEQUENCE review_call_faults;
CREATE FUNCTION review_fail_call() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('review_call_faults') = 1 THEN
		RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER review_fail_call BEFORE INSERT ON core_tool_calls FOR EACH ROW EXECUTE FUNCTION review_fail_call();`)
	require.NoError(t, err)

	key := "journal-" + uuid.NewString()
	body := map[string]any{"message": "add a task to ring Flo", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	status, data, err := post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("first answer %d: %s", status, data)
	require.Equal(t, http.StatusOK, status, "the step was written again: %s", data)
	var faults int
	require.NoError(t, pool.QueryRow(ctx, `SELECT last_value FROM review_call_faults`).Scan(&faults))
	require.Equal(t, 2, faults, "the call's insert failed once, then was made")

	status, data, err = post(a, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("the retry %d: %s", status, data)
	var resp brain.ChatResponse
	require.NoError(t, json.Unmarshal(data, &resp))
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.Repeated, "the key was kept: %s", data)
	require.Equal(t, brain.RunCompleted, resp.Status, "the turn went on, not failed")
	require.Equal(t, "Flo is on your list.", resp.Reply)
	require.Len(t, fake.Requests(), 2, "the answer the brain held was journaled, not asked again")
	require.Equal(t, 1, tasksTitled(t, pool, title))
	var missing int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_runs r, unnest(r.call_ids) AS c(id)
		WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM core_tool_calls k WHERE k.id = c.id)`, resp.RunID).Scan(&missing))
	require.Zero(t, missing, "every call the run names exists")
}

// TestReviewStalledBrainGivesUpTheKeyOfATakenOverTurn: brain A (a process) is stalled (SIGSTOP) while it
// waits for a turn's first LLM answer; brain B takes the turn over and finishes it, making its task. When A
// wakes, the provider answers it 429 (Retry-After beyond GEM_LLM_RETRY_AFTER_MAX): A, having made no call
// itself, ends the turn "without work" — unfenced — and gives the request's key up. The client's retry with
// its key then starts a new turn, and the task is made a second time. Expected: one task; the retry answers
// B's turn.
func TestReviewStalledBrainGivesUpTheKeyOfATakenOverTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer executor.Stop()

	title := "ring Hal " + uuid.NewString()[:8]
	create := llmfake.Turn{Calls: []llmfake.Call{createTaskCall("t1", title)}}
	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Blocking(llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusTooManyRequests, Message: "slow down",
			Header: map[string]string{"retry-after": "120"}}}, asked, release), // A's, once A is taken over
		create, llmfake.Turn{Text: "Hal is on your list."}, // B's turn
		create, llmfake.Turn{Text: "Hal is on your list."}) // a new turn, if the retry makes one
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	procA, apiA := reviewBrainProcess(t, dbURL, fake)
	m, apiB := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	agent := agentWithSkills(t, apiB, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	key := "stalled-key-" + uuid.NewString()
	body := map[string]any{"message": "add a task to ring Hal", "user_id": "user-1"}
	header := map[string]string{brain.IdempotencyKeyHeader: key}
	answeredA := make(chan int, 1)
	go func() {
		status, _, _ := post(apiA, "/agents/"+agent+"/chat", body, header)
		answeredA <- status
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("brain A never asked the LLM")
	}
	require.NoError(t, procA.Process.Signal(syscall.SIGSTOP))
	var run uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE agent = $1`, agent).Scan(&run))
	require.Eventually(t, func() bool {
		var status, owner string
		_ = pool.QueryRow(ctx, `SELECT status, coalesce(owner, '') FROM brain_runs WHERE id = $1`, run).Scan(&status, &owner)
		return status == brain.RunCompleted && strings.HasPrefix(owner, m.Chat.Owner()+"#")
	}, 30*time.Second, 50*time.Millisecond, "B did not take the stalled turn over and finish it")
	require.Equal(t, 1, tasksTitled(t, pool, title))

	once.Do(func() { close(release) })
	require.NoError(t, procA.Process.Signal(syscall.SIGCONT))
	select {
	case status := <-answeredA:
		t.Logf("brain A answered its client %d", status)
	case <-time.After(60 * time.Second):
		t.Fatal("brain A never answered its client")
	}
	var keys int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_request_keys WHERE run_id = $1`, run).Scan(&keys))
	t.Logf("the key rows of B's finished turn after A woke: %d", keys)

	status, data, err := post(apiB, "/agents/"+agent+"/chat", body, header)
	require.NoError(t, err)
	t.Logf("the client's retry: %d %s", status, data)
	require.Eventually(t, func() bool { return tasksTitled(t, pool, title) >= 1 }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second)
	require.Equal(t, 1, tasksTitled(t, pool, title), "the retry with the key does not make the task again")
}

// TestReviewSIGTERMHandsATurnOverAtOnce: docs/scaling.md says "A brain shut down (SIGTERM) hands its turns
// over at once"; the issue asks that SIGTERM hand runs over "instead of abandoning them after 30 s". A brain
// whose turn waits for its LLM keeps it through the HTTP server's whole drain (30 s) and hands it over only
// then: the turn stands still for 30 s.
func TestReviewSIGTERMHandsATurnOverAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)
	asked, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Blocking(llmfake.Turn{Text: "(A's, too late)"}, asked, release),
		llmfake.Turn{Text: "B answered."})
	// Released before the fake's cleanup, which waits for its handlers (cleanups run last first).
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	procA, apiA := reviewBrainProcess(t, dbURL, fake)
	m, _ := reviewBrain(t, dbURL, fake, chat.Config{Lease: time.Second})
	agent := agentWithSkills(t, apiA, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	go func() {
		_, _, _ = post(apiA, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "user-1"}, nil)
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the LLM was never asked")
	}
	var run uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM brain_runs WHERE agent = $1`, agent).Scan(&run))
	require.NoError(t, procA.Process.Signal(syscall.SIGTERM))
	termed := time.Now()
	taken := func() bool {
		var owner string
		_ = pool.QueryRow(ctx, `SELECT coalesce(owner, '') FROM brain_runs WHERE id = $1`, run).Scan(&owner)
		return strings.HasPrefix(owner, m.Chat.Owner()+"#")
	}
	handed := assertEventually(taken, 5*time.Second)
	if !handed {
		later := assertEventually(taken, 40*time.Second)
		t.Logf("taken over by B %s after SIGTERM (%v)", time.Since(termed).Round(100*time.Millisecond), later)
	}
	require.True(t, handed, "a brain shut down hands its turn over at once (within a lease)")
}
