package main

import (
	"net/http"
	"os"
	"os/exec"
	"syscall"

	"context"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/sqltest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestMCPTasksCancelRepeat: a tools/call repeated with its key (a client that lost the first answer) is the
// same request, and its task cancels that request: the first call, still queued, is cancelled with its one
// receipt and never runs, and both calls say cancelled.
func TestMCPTasksCancelRepeat(t *testing.T) {
	t.Parallel()
	m, pool, _ := taskBrain(t, func(c *Config) { c.MCP.TaskWait = 100 * time.Millisecond })
	owner := newTasksPeer(t, m.Server.URL(), taskOwnerToken, true)
	key := uuid.NewString()
	call := func() map[string]any {
		return owner.result("tools/call", map[string]any{"name": "os__health_check", "arguments": map[string]any{},
			"_meta": map[string]any{"gem/idempotency_key": key}})
	}
	first := call()
	require.Equal(t, "task", first["resultType"], "%v", first)
	firstCall := callIDOf(t, first)
	again := call()
	require.Equal(t, "task", again["resultType"], "%v", again)
	owner.result("tasks/cancel", map[string]any{"taskId": again["taskId"]})

	task := owner.task(again["taskId"].(string))
	require.Equal(t, "cancelled", task["status"], "the repeat's task was cancelled, and its request with it: %v", task)
	require.Equal(t, "cancelled", owner.task(first["taskId"].(string))["status"])
	require.Equal(t, 1, receiptsOf(t, pool, firstCall))
	var jobState string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT j.state::text FROM core_tool_calls c JOIN river_job j ON j.id = c.job_id
		WHERE c.id = $1`, firstCall).Scan(&jobState))
	require.Equal(t, "cancelled", jobState, "no executor may run it")
}

// TestMCPTasksCancelRaces: tasks/cancel sent many times at once, and a cancel racing an approval: each call has
// exactly one receipt, and a cancelled call's approval and job agree with it.
func TestMCPTasksCancelRaces(t *testing.T) {
	t.Parallel()
	m, pool, _ := taskBrain(t, func(c *Config) { c.MCP.TaskWait = 50 * time.Millisecond })
	ctx := context.Background()
	owner := newTasksPeer(t, m.Server.URL(), taskOwnerToken, true)
	at := func(n int, f func(i int)) {
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range n {
			done.Go(func() { start.Wait(); f(i) })
		}
		start.Done()
		done.Wait()
	}
	peer := func() *tasksPeer { return newTasksPeer(t, m.Server.URL(), taskOwnerToken, true) }

	for _, tool := range []string{"os__health_check", "os__list_reminders"} { // queued, held
		created := owner.call(tool, map[string]any{})
		taskID := created["taskId"].(string)
		at(8, func(int) { peer().result("tasks/cancel", map[string]any{"taskId": taskID}) })
		require.Equal(t, "cancelled", owner.task(taskID)["status"], tool)
		require.Equal(t, 1, receiptsOf(t, pool, callIDOf(t, created)), tool)
	}

	for range 10 {
		created := owner.call("os__list_reminders", map[string]any{})
		taskID, callID := created["taskId"].(string), callIDOf(t, created)
		at(2, func(i int) {
			if i == 0 {
				peer().result("tasks/cancel", map[string]any{"taskId": taskID})
				return
			}
			p := peer()
			_, _ = p.request("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{"approval": map[string]any{
				"action": "accept", "content": map[string]any{"approve": true}}}})
		})
		var decision string
		var receipts int
		var job *string
		require.NoError(t, pool.QueryRow(ctx, `SELECT a.decision, (SELECT count(*) FROM core_tool_receipts r WHERE r.call_id = a.call_id),
			(SELECT j.state::text FROM core_tool_calls c JOIN river_job j ON j.id = c.job_id WHERE c.id = a.call_id)
			FROM core_approvals a WHERE a.call_id = $1`, callID).Scan(&decision, &receipts, &job))
		status := owner.task(taskID)["status"]
		switch decision {
		case "cancelled":
			require.Equal(t, 1, receipts)
			require.Nil(t, job, "a cancelled held call has no job")
			require.Equal(t, "cancelled", status)
		case "approved": // the cancel came after, and cancelled the queued call
			require.Equal(t, 1, receipts)
			require.NotNil(t, job)
			require.Equal(t, "cancelled", *job)
			require.Equal(t, "cancelled", status)
		default:
			t.Fatalf("decision %q", decision)
		}
	}
}

// TestMCPTasksCancelRacesExecutor: tasks/cancel sent the moment a call becomes a task, while an executor picks
// calls up: each call has exactly one receipt, and a call whose task says cancelled never started.
func TestMCPTasksCancelRacesExecutor(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(executor.Stop)
	m, err := startBrain(dbURL, func(c *Config) { c.MCP.TaskWait = time.Millisecond })
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	// Many at once, so that some wait in the queue while others run: each is cancelled as soon as it is a task.
	var mu sync.Mutex
	tasks := map[string]string{} // taskId -> call
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			peer := newTasksPeer(t, m.Server.URL(), testToken, true)
			created := peer.call("os__health_check", map[string]any{})
			if created["resultType"] != "task" {
				return // its receipt came within the wait
			}
			peer.result("tasks/cancel", map[string]any{"taskId": created["taskId"]})
			mu.Lock()
			tasks[created["taskId"].(string)] = callIDOf(t, created)
			mu.Unlock()
		})
	}
	wg.Wait()
	peer := newTasksPeer(t, m.Server.URL(), testToken, true)
	cancelled, completed := 0, 0
	for taskID, callID := range tasks {
		var task map[string]any
		require.Eventually(t, func() bool {
			task = peer.task(taskID)
			return task["status"] != "working"
		}, 30*time.Second, 20*time.Millisecond)
		require.Equal(t, 1, receiptsOf(t, pool, callID))
		var started *time.Time
		var code *string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT c.started_at, r.error_code FROM core_calls c
			JOIN core_tool_receipts r ON r.call_id = c.id WHERE c.id = $1`, callID).Scan(&started, &code))
		switch task["status"] {
		case "cancelled":
			cancelled++
			require.Nil(t, started, "a call whose task says cancelled never started")
		case "completed":
			completed++
			require.Nil(t, code, "%v", task)
		default:
			t.Fatalf("task %v", task)
		}
	}
	t.Logf("%d cancelled, %d completed", cancelled, completed)
	t.Logf("%d cancelled, %d completed", cancelled, completed)
}

// TestMCPTasksBrainKilled: a brain SIGKILLed after a tools/call became a task: another brain on the database
// reads the task, and its result is the call's receipt.
func TestMCPTasksBrainKilled(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	addr := freeAddr(t)
	cmd := exec.Command(brainBinary(t), "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+testenv.RegistryPath(), "GEM_BRAIN_ADDR="+addr,
		"GEM_BRAIN_TOKENS=tester:"+testToken, "GEM_MCP_TASK_WAIT=1ms", "GEM_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the brain process did not start")
	a := newTasksPeer(t, "http://"+addr, testToken, true)
	created := a.call("os__health_check", map[string]any{}) // no executor yet: it stays queued
	require.Equal(t, "task", created["resultType"], "%v", created)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(executor.Stop)
	b, err := startBrain(dbURL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	peer := newTasksPeer(t, b.Server.URL(), testToken, true)
	task := peer.waitStatus(created["taskId"].(string), "completed")
	callID := callIDOf(t, created)
	require.Equal(t, 1, receiptsOf(t, pool, callID))
	plain := newTasksPeer(t, b.Server.URL(), testToken, false)
	direct := plain.result("tools/call", map[string]any{"name": "gem__get_receipt", "arguments": map[string]any{"call_id": callID}})
	result := task["result"].(map[string]any)
	require.NotEqual(t, true, result["isError"], "%v", result)
	require.Equal(t, direct["structuredContent"].(map[string]any)["result"], result["structuredContent"], "%v / %v", direct, result)
}
