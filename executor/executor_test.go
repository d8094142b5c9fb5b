package executor_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func TestCallInsertedWithSQL(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	// No poll comes within the wait's minute: the call is picked up because its insert notified.
	e := b.startExecutor(t, func(c *executor.Config) { c.FetchPollInterval = 10 * time.Minute })

	start := time.Now()
	id := b.call(t, ctx, "os.create_task", `{"title": "call John", "domain": "business", "priority": "high"}`)
	r := b.waitOne(t, ctx, id)
	require.Less(t, time.Since(start), time.Minute, "picked up at once, not at a poll")

	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Nil(t, r.Error)
	var task struct {
		TaskID   uuid.UUID `json:"task_id"`
		Title    string    `json:"title"`
		Domain   string    `json:"domain"`
		Priority string    `json:"priority"`
		Status   string    `json:"status"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &task))
	require.Equal(t, "call John", task.Title)
	require.Equal(t, "business", task.Domain)
	require.Equal(t, "high", task.Priority)
	require.Equal(t, "open", task.Status)
	writes := []registry.DBWrite{{Table: "os_tasks", Op: "insert", Count: 1, IDs: []string{task.TaskID.String()}}}
	require.Equal(t, writes, r.Effects.DBWrites)
	// The summary holds the tool's receipt fields: its writes and the task's id.
	require.Len(t, r.Summary, 2, "%v", r.Summary)
	require.Equal(t, task.TaskID.String(), r.Summary["result.task_id"])
	wantWrites, err := json.Marshal(writes)
	require.NoError(t, err)
	gotWrites, err := json.Marshal(r.Summary["effects.db_writes"])
	require.NoError(t, err)
	require.JSONEq(t, string(wantWrites), string(gotWrites))
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, e.Config().ID, r.Worker)
	require.False(t, r.IdempotencyHit)
	require.Positive(t, r.DurationMS)

	// The effects, the call's status and the job's completion are all committed.
	var createdBy uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT created_by_call FROM os_tasks WHERE id = $1`, task.TaskID).Scan(&createdBy))
	require.Equal(t, id, createdBy)
	c, err := gemsql.CallGet(ctx, b.pool, id)
	require.NoError(t, err)
	require.Equal(t, registry.CallSucceeded, c.Status)
	require.Equal(t, 1, c.Attempt)
	require.Equal(t, e.Config().ID, c.Worker)
	require.NotNil(t, c.FinishedAt)
	require.Equal(t, "completed", jobState(t, b, c.JobID))
}

func jobState(t *testing.T, b *testBundle, jobID int64) string {
	t.Helper()
	var state string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT state FROM river_job WHERE id = $1`, jobID).Scan(&state))
	return state
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	r := b.waitOne(t, ctx, b.call(t, ctx, "os.create_tsak", `{"title":"x"}`))
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeUnknownTool, r.Error.Code)
	require.Contains(t, r.Error.Message, "os.create_tsak")
	require.Contains(t, decodeDetails(t, r)["did_you_mean"], "os.create_task")
	require.Equal(t, "null", string(r.Result))
}

func TestValidationErrorListsEveryViolation(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	// Every kind of mistake at once; colour is not a violation, since GEM's tools accept unknown properties.
	r := b.waitOne(t, ctx, b.call(t, ctx, "os.create_task",
		`{"domain": "work", "due_at": "tomorrow", "priority": "urgent", "context_ref": "lead 1", "colour": "red"}`))
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeValidation, r.Error.Code)
	var d struct {
		Violations []registry.Violation `json:"violations"`
	}
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	got := map[string]string{}
	for _, v := range d.Violations {
		require.NotEmpty(t, v.Message)
		require.NotEmpty(t, v.SchemaPath)
		got[v.Path] = v.Keyword
	}
	require.Equal(t, map[string]string{
		"/title":       "required",
		"/domain":      "enum",
		"/due_at":      "format",
		"/priority":    "enum",
		"/context_ref": "type",
	}, got)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_tasks`))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_idempotency_keys`))
}

func TestIdempotencyNoneRunsEveryCall(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	ids := []uuid.UUID{
		b.call(t, ctx, "os.create_note", `{"domain": "business", "title": "same", "content": "same text"}`),
		b.call(t, ctx, "os.create_note", `{"domain": "business", "title": "same", "content": "same text"}`),
	}
	rs := b.wait(t, ctx, ids...)
	for _, id := range ids {
		require.Equal(t, registry.StatusSucceeded, rs[id].Status)
		require.False(t, rs[id].IdempotencyHit)
	}
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = 'same'`))
}

func TestIdempotencySafeRetry(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	insert := func(key string) uuid.UUID {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "test.safe", IdempotencyKey: key}))
		require.NoError(t, err)
		return id
	}
	first := insert("retry-1")
	r1 := b.waitOne(t, ctx, first)
	second := insert("retry-1")
	r2 := b.waitOne(t, ctx, second)

	require.Equal(t, registry.StatusSucceeded, r2.Status)
	require.True(t, r2.IdempotencyHit)
	require.Equal(t, &first, r2.IdempotencyOf)
	require.JSONEq(t, string(r1.Result), string(r2.Result))
	require.Empty(t, r2.Effects.DBWrites, "the handler did not run")
	require.Equal(t, "retry-1", r2.IdempotencyKey)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title LIKE 'safe %'`))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_idempotency_hits WHERE original_call_id = $1`, first))

	// Without a key a safe-retry tool runs every call.
	b.wait(t, ctx, insert(""), insert(""))
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title LIKE 'safe %'`))
}

func TestIdempotencyKeyed(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	first := b.call(t, ctx, "leads.create", `{"name": "Ann Lee", "phone": "0412 345 678", "suburb": "Newtown", "source": "referral"}`)
	r1 := b.waitOne(t, ctx, first)
	require.Equal(t, registry.StatusSucceeded, r1.Status, "%+v", r1.Error)
	require.Equal(t, true, decodeResult(t, r1).get(t, "created"))

	second := b.call(t, ctx, "leads.create", `{"name": "Ann", "phone": "0412 345 678", "suburb": "Newtown"}`)
	r2 := b.waitOne(t, ctx, second)
	require.Equal(t, registry.StatusSucceeded, r2.Status)
	require.True(t, r2.IdempotencyHit)
	require.Equal(t, &first, r2.IdempotencyOf)
	require.JSONEq(t, string(r1.Result), string(r2.Result))
	require.Equal(t, "+61412345678", r2.IdempotencyKey, "the key is the number in E.164")

	// The same number typed differently is the same key (leads.create's Handler.Key).
	third := b.call(t, ctx, "leads.create", `{"name": "Ann", "phone": "0412345678", "suburb": "Newtown"}`)
	r3 := b.waitOne(t, ctx, third)
	require.True(t, r3.IdempotencyHit)
	require.Equal(t, &first, r3.IdempotencyOf)
	require.Empty(t, r3.Effects.DBWrites)

	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads`))
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts`))
}

func TestFailedCallReleasesItsKey(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	failedID := b.call(t, ctx, "test.keyed", `{"key": "k", "fail": true}`)
	r := b.waitOne(t, ctx, failedID)
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeConflict, r.Error.Code)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_idempotency_keys`))

	okID := b.call(t, ctx, "test.keyed", `{"key": "k"}`)
	r = b.waitOne(t, ctx, okID)
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.False(t, r.IdempotencyHit, "only a succeeded call holds a key")
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = 'key k'`))

	r = b.waitOne(t, ctx, b.call(t, ctx, "test.keyed", `{"key": "k", "fail": true}`))
	require.True(t, r.IdempotencyHit, "once held, the key answers even a call that would fail")
	require.Equal(t, &okID, r.IdempotencyOf)
}

// TestKeyedDuplicatesAcrossExecutors sends pairs of calls with the same key at the same instant to two
// executors: each key's handler runs once, and each call gets its own receipt.
func TestKeyedDuplicatesAcrossExecutors(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	small := func(c *executor.Config) { c.MaxWorkers = 8; c.BatchMax = 4 }
	e1 := b.startExecutor(t, small)
	e2 := b.startExecutor(t, small)

	const keys = 60
	// Each key's second call comes two or three places after its first (k0 k1 k0 k2 k1 k3 k2 …), so pairs
	// straddle a fetch or a batch and run at the same time in both executors; two adjacent calls mostly
	// shared a fetch, and batches of even size kept every pair together.
	params := make([]gemsql.CallInsertParams, 0, 2*keys)
	pairs := make([][2]int, keys)
	add := func(k, nth int) {
		pairs[k][nth] = len(params)
		params = append(params, gemsql.CallInsertParams{ToolName: "test.keyed", Input: json.RawMessage(fmt.Sprintf(`{"key": "k%d", "sleep_ms": 5}`, k))})
	}
	add(0, 0)
	for k := 1; k < keys; k++ {
		add(k, 0)
		add(k-1, 1)
	}
	add(keys-1, 1)
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	rs := b.wait(t, ctx, ids...)

	crossed := 0
	for i := range keys {
		a, c := rs[ids[pairs[i][0]]], rs[ids[pairs[i][1]]]
		require.Equal(t, registry.StatusSucceeded, a.Status)
		require.Equal(t, registry.StatusSucceeded, c.Status)
		require.True(t, a.IdempotencyHit != c.IdempotencyHit, "key k%d: exactly one call ran the handler", i)
		orig, hit := a, c
		if a.IdempotencyHit {
			orig, hit = c, a
		}
		require.Equal(t, orig.CallID, *hit.IdempotencyOf)
		require.JSONEq(t, string(orig.Result), string(hit.Result))
		if a.Worker != c.Worker {
			crossed++
		}
	}
	require.Equal(t, keys, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title LIKE 'key %'`), "one handler run per key")
	require.Equal(t, 2*keys, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts`))
	workers := b.count(t, ctx, `SELECT count(DISTINCT worker) FROM core_tool_receipts WHERE worker IN ($1, $2)`, e1.Config().ID, e2.Config().ID)
	require.Equal(t, 2, workers, "both executors worked")
	t.Logf("%d of %d pairs were split across the two executors", crossed, keys)
	require.Positive(t, crossed, "some pairs were split across the two executors")
}

func TestTimeoutCancelsAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, func(c *executor.Config) { c.AbandonGrace = 200 * time.Millisecond })

	// test.sleep has a 300ms timeout. The handlers that heed their context would sleep two minutes, past
	// the wait's own minute, so a call whose receipt waited for its handler fails the test; no wall-clock
	// bound near the timeout, which a loaded machine overruns while the executor is right (a cancel that
	// comes late breaks the batch, and its calls are retried and time out again).
	sleeps := map[string]int{"db": 120_000, "go": 120_000, "ignore": 1500, "fast": 10}
	ids := map[string]uuid.UUID{}
	for how, ms := range sleeps {
		mode := how
		if how == "fast" {
			mode = "db"
		}
		ids[how] = b.call(t, ctx, "test.sleep", fmt.Sprintf(`{"ms": %d, "how": %q, "write": true}`, ms, mode))
	}
	// The abandoned handler sleeps on after its receipt; the test ends when it does, not leaking it.
	t.Cleanup(ignoring.Wait)
	rs := b.wait(t, ctx, ids["db"], ids["go"], ids["ignore"], ids["fast"])

	for _, how := range []string{"db", "go", "ignore"} {
		r := rs[ids[how]]
		require.Equal(t, registry.StatusFailed, r.Status, how)
		require.Equal(t, registry.CodeTimeout, r.Error.Code, how)
		require.Contains(t, r.Error.Message, "300ms", how)
		require.Less(t, r.DurationMS, float64(sleeps[how]), "%s: the call did not wait for its handler", how)
		require.Empty(t, r.Effects.DBWrites, how)
		require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "sleep "+ids[how].String()), "%s: the note was rolled back", how)
	}
	require.Contains(t, rs[ids["ignore"]].Error.Message, "abandoned", "the handler that ignored its context was not waited for")
	require.Equal(t, registry.StatusSucceeded, rs[ids["fast"]].Status, "a timeout in the batch does not hurt the others")
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "sleep "+ids["fast"].String()))
}

func TestNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	noHandler := b.call(t, ctx, "test.no_handler", `{}`)
	provider := b.call(t, ctx, "test.not_configured", `{}`)
	rs := b.wait(t, ctx, noHandler, provider)

	r := rs[noHandler]
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	require.Equal(t, registry.CodeNotConfigured, r.Error.Code)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.Reason, "no handler")
	require.NotEmpty(t, d.NextSteps)

	r = rs[provider]
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Equal(t, "no SMS provider is configured", d.Reason)
	require.Equal(t, []string{"GEM_TEST_SMS_URL"}, d.RequiredEnv)
	require.Equal(t, []string{"Set GEM_TEST_SMS_URL to your provider's endpoint."}, d.NextSteps)

	c, _ := gemsql.CallGet(ctx, b.pool, provider)
	require.Equal(t, registry.CallNotConfigured, c.Status)
}

func TestOutputContractViolationRollsBack(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	id := b.call(t, ctx, "test.bad_output", `{}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeOutputContract, r.Error.Code)
	d := decodeDetails(t, r)
	require.NotEmpty(t, d["violations"])
	require.Equal(t, map[string]any{"unexpected": float64(1)}, d["result"])
	require.Empty(t, r.Effects.DBWrites)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_notes`))
}

func TestHandlerFailures(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	want := map[string]registry.ErrorCode{
		"not_found": registry.CodeNotFound,
		"conflict":  registry.CodeConflict,
		"invalid":   registry.CodeValidation,
		"error":     registry.CodeHandlerError,
		"panic":     registry.CodeHandlerError,
	}
	ids := map[string]uuid.UUID{}
	var all []uuid.UUID
	for kind := range want {
		ids[kind] = b.call(t, ctx, "test.fail", fmt.Sprintf(`{"kind": %q}`, kind))
		all = append(all, ids[kind])
	}
	ids["leave_rows_open"] = b.call(t, ctx, "test.fail", `{"kind": "leave_rows_open"}`)
	ids["nul"] = b.call(t, ctx, "test.fail", `{"kind": "nul"}`)
	all = append(all, ids["leave_rows_open"], ids["nul"])
	rs := b.wait(t, ctx, all...)
	for kind, code := range want {
		r := rs[ids[kind]]
		require.Equal(t, registry.StatusFailed, r.Status, kind)
		require.Equal(t, code, r.Error.Code, kind)
	}
	require.Contains(t, rs[ids["panic"]].Error.Message, "panicked: handler bug")
	require.Contains(t, rs[ids["error"]].Error.Message, "something broke")

	// A handler may leave a query open, and return text PostgreSQL's jsonb cannot hold: neither breaks the
	// receipt.
	require.Equal(t, registry.StatusSucceeded, rs[ids["leave_rows_open"]].Status)
	require.Equal(t, registry.StatusSucceeded, rs[ids["nul"]].Status)
	require.Contains(t, string(rs[ids["nul"]].Result), "a\ufffdb")

	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM os_notes`), "only the two successes kept their note")
}

func TestTransientErrorsAreRetried(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	retried := b.call(t, ctx, "test.transient", `{"fail_attempts": 1}`)
	exhausted, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "test.transient", Input: json.RawMessage(`{"fail_attempts": 5}`), MaxAttempts: 1}))
	require.NoError(t, err)
	rs := b.wait(t, ctx, retried, exhausted)

	r := rs[retried]
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, float64(2), r.Summary["result.attempt"])

	r = rs[exhausted]
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeRetriesExhausted, r.Error.Code)
	require.Contains(t, r.Error.Message, "provider unavailable on attempt 1")
}

func TestIsolatedHandler(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// Isolated and batched calls waiting together for one committer that takes every call waiting: the
	// batched calls share transactions, each isolated call runs in one of its own. Each handler returns the
	// id of the transaction it ran in.
	var params []gemsql.CallInsertParams
	for i := range 40 {
		tool := "test.xid"
		if i%4 == 0 {
			tool = "test.isolated"
		}
		params = append(params, gemsql.CallInsertParams{ToolName: tool})
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	calls := map[string][]string{} // transaction id → the tools of the calls that ran in it
	for i, id := range ids {
		r := rs[id]
		require.Equal(t, registry.StatusSucceeded, r.Status, "call %d: %v", i, r.Error)
		require.Len(t, r.Effects.DBWrites, 1)
		var out struct {
			XID string `json:"xid"`
		}
		require.NoError(t, json.Unmarshal(r.Result, &out))
		require.NotEmpty(t, out.XID)
		calls[out.XID] = append(calls[out.XID], params[i].ToolName)
	}
	shared := 0
	for xid, tools := range calls {
		if slices.Contains(tools, "test.isolated") {
			require.Equal(t, []string{"test.isolated"}, tools, "transaction %s: an isolated call shares it", xid)
		} else if len(tools) > 1 {
			shared++
		}
	}
	require.Positive(t, shared, "batched calls share transactions (or the test shows nothing): %v", calls)
}

// TestBatchKeepsEachCallApart runs many calls that commit together: each ends with its own receipt, and a
// failing call's effects are rolled back without touching the others'.
func TestBatchKeepsEachCallApart(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, func(c *executor.Config) { c.Committers = 1 })

	var params []gemsql.CallInsertParams
	for i := range 150 {
		switch i % 3 {
		case 0:
			params = append(params, gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(fmt.Sprintf(`{"domain": "business", "title": "ok %d", "content": "batched"}`, i))})
		case 1:
			params = append(params, gemsql.CallInsertParams{ToolName: "test.bad_output"})
		case 2:
			params = append(params, gemsql.CallInsertParams{ToolName: "test.fail", Input: json.RawMessage(`{"kind": "conflict"}`)})
		}
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	rs := b.wait(t, ctx, ids...)
	for i, id := range ids {
		if i%3 == 0 {
			require.Equal(t, registry.StatusSucceeded, rs[id].Status)
			require.Len(t, rs[id].Effects.DBWrites, 1, "each receipt lists only its own writes")
		} else {
			require.Equal(t, registry.StatusFailed, rs[id].Status)
		}
	}
	require.Equal(t, 50, b.count(t, ctx, `SELECT count(*) FROM os_notes`))
	require.Equal(t, 50, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title LIKE 'ok %'`))
	require.Equal(t, 150, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts`))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`))
}

func TestMissingCallCancelsJob(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	var jobID int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO river_job (args, kind) VALUES ($1, 'gem.tool_call') RETURNING id`,
		fmt.Sprintf(`{"call_id": %q, "tool_name": "os.health_check"}`, uuid.New())).Scan(&jobID))
	_, err := b.pool.Exec(ctx, `SELECT pg_notify('public.river_insert', '{"queue": "default"}')`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return jobState(t, b, jobID) == "cancelled" }, 10*time.Second, 20*time.Millisecond)
}

func TestBusinessToolsNotFound(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	missing := uuid.New()
	inputs := map[string]string{
		"os.update_task":     fmt.Sprintf(`{"task_id": %q, "patch": {"title": "x"}}`, missing),
		"os.complete_task":   fmt.Sprintf(`{"task_id": %q}`, missing),
		"leads.update_stage": fmt.Sprintf(`{"lead_id": %q, "stage": "contacted"}`, missing),
		"os.create_task":     fmt.Sprintf(`{"title": "for a lead", "domain": "business", "context_ref": {"type": "lead", "id": %q}}`, missing),
	}
	for tool, input := range inputs {
		r := b.waitOne(t, ctx, b.call(t, ctx, tool, input))
		require.Equal(t, registry.StatusFailed, r.Status, tool)
		require.Equal(t, registry.CodeNotFound, r.Error.Code, tool)
		require.True(t, strings.Contains(r.Error.Message, missing.String()), "%s: %s", tool, r.Error.Message)
	}
}

// TestToolNotEnabledForAgent checks that a call made for an agent may only use the tools its enabled,
// available skills give it for that user, whatever asked for the call.
func TestToolNotEnabledForAgent(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	_, err := b.pool.Exec(ctx, `
		INSERT INTO agents (slug, name) VALUES ('sales', 'Sales');
		INSERT INTO skills (slug, name, tools) VALUES ('notes', 'Notes', '{os.create_note}'), ('tasks', 'Tasks', '{os.create_task}'),
			('vip', 'VIP', '{os.list_tasks}');
		INSERT INTO agent_skills (agent_id, skill_id, enabled, allowed_users)
		SELECT a.id, s.id, s.slug <> 'tasks', CASE WHEN s.slug = 'vip' THEN '{ann}'::text[] END
		FROM agents a, skills s WHERE a.slug = 'sales' AND s.slug IN ('notes', 'tasks', 'vip')`)
	require.NoError(t, err)

	call := func(tool, input, user string) *registry.Receipt {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: tool, Input: json.RawMessage(input), Agent: "sales", UserID: user}))
		require.NoError(t, err)
		return b.waitOne(t, ctx, id)
	}
	require.Equal(t, registry.StatusSucceeded, call("os.create_note", `{"domain": "business", "title": "ok", "content": "from sales"}`, "bob").Status)

	r := call("os.create_task", `{"title": "disabled skill", "domain": "business"}`, "bob")
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeToolNotEnabled, r.Error.Code)

	r = call("leads.list_by_stage", `{}`, "bob")
	require.Equal(t, registry.CodeToolNotEnabled, r.Error.Code, "no skill has the tool")

	require.Equal(t, registry.CodeToolNotEnabled, call("os.list_tasks", `{}`, "bob").Error.Code, "bob is not an allowed user")
	require.Equal(t, registry.StatusSucceeded, call("os.list_tasks", `{}`, "ann").Status)

	// Without an agent the same call runs.
	r = b.waitOne(t, ctx, b.call(t, ctx, "os.create_task", `{"title": "no agent", "domain": "business"}`))
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE title = 'disabled skill'`))
}

// TestCallLogCarriesRunID checks that the executor's log lines about a call carry the call's run_id when
// the call has one, with its id, tool and attempt.
func TestCallLogCarriesRunID(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	var logs sqltest.SyncBuffer
	b.startExecutorWith(t, executor.Config{}, b.reg, testHandlers(b.outsideLog, b.business), zerolog.New(&logs).Level(zerolog.WarnLevel))

	run := uuid.New()
	withRun, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "test.fail", Input: json.RawMessage(`{"kind": "conflict"}`), RunID: &run}))
	require.NoError(t, err)
	without, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "test.fail", Input: json.RawMessage(`{"kind": "invalid"}`)}))
	require.NoError(t, err)
	b.wait(t, ctx, withRun, without)

	lines := map[uuid.UUID]map[string]any{} // call id → its "call finished" line (a failed call logs a warning)
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		if l["message"] == "call finished" {
			id, err := uuid.Parse(l["call_id"].(string))
			require.NoError(t, err)
			lines[id] = l
		}
	}
	require.Contains(t, lines, withRun, logs.String())
	require.Equal(t, run.String(), lines[withRun]["run_id"])
	require.Equal(t, "test.fail", lines[withRun]["tool"])
	require.EqualValues(t, 1, lines[withRun]["attempt"])
	require.Contains(t, lines, without, logs.String())
	require.NotContains(t, lines[without], "run_id")
}
