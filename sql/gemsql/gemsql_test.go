package gemsql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

type testBundle struct {
	pool *pgxpool.Pool
	url  string
}

func setup(t *testing.T) (context.Context, *testBundle) {
	t.Helper()
	pool, url := sqltest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, &testBundle{pool: pool, url: url}
}

// startWaiter is a started receipt waiter on the test's database, stopped when the test ends (before its
// database goes).
func startWaiter(t *testing.T, ctx context.Context, b *testBundle) *gemsql.ReceiptWaiter {
	t.Helper()
	w := gemsql.NewReceiptWaiter(b.pool, nil)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(w.Stop)
	return w
}

func (b *testBundle) count(t *testing.T, ctx context.Context, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

func (b *testBundle) stringOf(t *testing.T, ctx context.Context, sql string, args ...any) string {
	t.Helper()
	var s string
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&s))
	return s
}

func TestMigrateIsRepeatable(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// The template is migrated; migrating again applies nothing and succeeds.
	res, err := gemsql.Migrate(ctx, b.pool, nil, packs.Lines()...)
	require.NoError(t, err)
	require.Empty(t, res.River)
	require.Empty(t, res.GEM)

	status, err := gemsql.MigrationStatus(ctx, b.pool, packs.Lines()...)
	require.NoError(t, err)
	require.NotEmpty(t, status)
	for _, s := range status {
		require.Equal(t, "applied", string(s.State), s.Source.Path)
	}
}

func TestPlainSQLInsertEnqueuesAJob(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// Listen the way River's producers do: the insert must wake them, not wait for a poll.
	conn, err := pgx.Connect(ctx, b.url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `LISTEN "public.river_insert"`)
	require.NoError(t, err)

	var id uuid.UUID
	var jobID int64
	err = b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_task', '{"title":"call John"}')
		RETURNING id, job_id`).Scan(&id, &jobID)
	require.NoError(t, err)

	var kind, state, queue string
	var args []byte
	var maxAttempts int
	err = b.pool.QueryRow(ctx, `SELECT kind, state, queue, args, max_attempts FROM river_job WHERE id = $1`, jobID).
		Scan(&kind, &state, &queue, &args, &maxAttempts)
	require.NoError(t, err)
	require.Equal(t, registry.CallJobKind, kind)
	require.Equal(t, "available", state)
	require.Equal(t, "default", queue)
	require.Equal(t, 5, maxAttempts)
	var a registry.CallArgs
	require.NoError(t, json.Unmarshal(args, &a))
	require.Equal(t, registry.CallArgs{CallID: id, ToolName: "os.create_task"}, a)

	n, err := conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"queue":"default"}`, n.Payload)

	call, err := gemsql.CallGet(ctx, b.pool, id)
	require.NoError(t, err)
	require.Equal(t, registry.CallQueued, call.Status)
	require.Equal(t, jobID, call.JobID)
	require.JSONEq(t, `{"title":"call John"}`, string(call.Input))
}

func TestCallInsert(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `INSERT INTO core_tools (name, approval_required) VALUES ('test.held', true)`)
	require.NoError(t, err)

	run := uuid.New()
	made, err := gemsql.CallInsert(ctx, b.pool,
		gemsql.CallInsertParams{ToolName: "os.list_tasks"},
		gemsql.CallInsertParams{ToolName: "leads.create", Input: json.RawMessage(`{"name":"Ann","phone":"0400"}`), IdempotencyKey: "k1", MaxAttempts: 2, RunID: &run, Agent: "sales", RequestedBy: "test"},
		gemsql.CallInsertParams{ToolName: "test.held"},
		gemsql.CallInsertParams{ToolName: "leads.create", Input: json.RawMessage(`{"name":"Ann","phone":"0400"}`), IdempotencyKey: "k1", RequestedBy: "test"})
	require.NoError(t, err)
	require.Len(t, made, 4)
	// What each became, in order: made; held for a person's decision; a repeat of the keyed call.
	require.False(t, made[0].Awaiting)
	require.Nil(t, made[0].IdempotencyOf)
	require.True(t, made[2].Awaiting)
	require.Equal(t, &made[1].ID, made[3].IdempotencyOf)
	require.False(t, made[3].Awaiting)

	c, err := gemsql.CallGet(ctx, b.pool, made[1].ID)
	require.NoError(t, err)
	require.Equal(t, "leads.create", c.ToolName)
	require.Equal(t, "k1", c.IdempotencyKey)
	require.Equal(t, 2, c.MaxAttempts)
	require.Equal(t, &run, c.RunID)
	require.Equal(t, "sales", c.Agent)
	require.Equal(t, "test", c.RequestedBy)
	held, err := gemsql.CallGet(ctx, b.pool, made[2].ID)
	require.NoError(t, err)
	require.Equal(t, registry.CallAwaitingApproval, held.Status)

	// Jobs for the two calls that run now; none for the held call until it is approved, nor for the repeat.
	var jobs int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'gem.tool_call'`).Scan(&jobs))
	require.Equal(t, 2, jobs)

	_, err = gemsql.CallGet(ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, gemsql.ErrNotFound)
	_, err = gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{})
	require.Error(t, err)
	_, err = gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(`{"title":`)})
	require.ErrorContains(t, err, "not valid JSON")
	// A key used with another input: nothing is made.
	_, err = gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "leads.create", Input: json.RawMessage(`{"name":"Bo","phone":"0400"}`),
		IdempotencyKey: "k1", RequestedBy: "test"})
	require.Equal(t, gemsql.EKEYREUSED, gemsql.ErrorCode(err))
	var reused *gemsql.IdempotencyConflictError
	require.ErrorAs(t, err, &reused)
	require.Equal(t, made[1].ID, reused.CallID)

	// The first call's defaults: input {}, no key, 5 attempts, no run or agent.
	c, err = gemsql.CallGet(ctx, b.pool, made[0].ID)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(c.Input))
	require.Empty(t, c.IdempotencyKey)
	require.Equal(t, 5, c.MaxAttempts)
	require.Nil(t, c.RunID)
	require.Empty(t, c.Agent)
	require.Equal(t, 4, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls`))

	t.Run("QueuedOnABatch", func(t *testing.T) {
		// The queueing twin: the same statement in one round trip with others, its answer once the batch is
		// sent, and a refusal the batch's error.
		var queued []gemsql.Inserted
		batch := &pgx.Batch{}
		ids, err := gemsql.CallInsertQueue(ctx, batch, &queued, gemsql.CallInsertParams{ToolName: "test.held"},
			gemsql.CallInsertParams{ToolName: "os.list_tasks"})
		require.NoError(t, err)
		batch.Queue(`SELECT 1`)
		require.NoError(t, b.pool.SendBatch(ctx, batch).Close())
		require.Len(t, queued, 2)
		require.Equal(t, ids, []uuid.UUID{queued[0].ID, queued[1].ID})
		require.True(t, queued[0].Awaiting)
		require.False(t, queued[1].Awaiting)

		batch = &pgx.Batch{}
		_, err = gemsql.CallInsertQueue(ctx, batch, &queued, gemsql.CallInsertParams{ToolName: "leads.create",
			Input: json.RawMessage(`{"name":"Cy","phone":"0400"}`), IdempotencyKey: "k1", RequestedBy: "test"})
		require.NoError(t, err)
		err = b.pool.SendBatch(ctx, batch).Close()
		require.Equal(t, gemsql.EKEYREUSED, gemsql.ErrorCode(err))
		require.Equal(t, 6, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls`))
	})

	t.Run("ReadBack", func(t *testing.T) {
		// What the insert answered, read back for calls made before (in the order asked, a call that is gone
		// awaiting nothing), as the calls are now: approved, the held call awaits no more.
		gone := uuid.New()
		ids := []uuid.UUID{made[3].ID, gone, made[2].ID, made[0].ID}
		again, err := gemsql.CallsInserted(ctx, b.pool, ids)
		require.NoError(t, err)
		require.Equal(t, []gemsql.Inserted{made[3], {ID: gone}, made[2], made[0]}, again)
		require.Equal(t, map[uuid.UUID]bool{made[2].ID: true}, gemsql.InsertedAwaiting(again))

		_, err = gemsql.CallDecide(ctx, b.pool, made[2].ID, true, "", "")
		require.NoError(t, err)
		var queued []gemsql.Inserted
		batch := &pgx.Batch{}
		gemsql.CallsInsertedQueue(batch, []uuid.UUID{made[2].ID}, &queued)
		require.NoError(t, b.pool.SendBatch(ctx, batch).Close())
		require.Equal(t, []gemsql.Inserted{{ID: made[2].ID}}, queued)
	})
}

func TestCallListPaginates(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// Twelve calls in one statement share created_at: pages must still neither skip nor repeat.
	params := make([]gemsql.CallInsertParams, 12)
	for i := range params {
		params[i] = gemsql.CallInsertParams{ToolName: "os.list_tasks"}
	}
	_, err := gemsql.CallInsert(ctx, b.pool, params...)
	require.NoError(t, err)
	_, err = gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"})
	require.NoError(t, err)

	seen := map[uuid.UUID]bool{}
	var after *gemsql.Cursor
	for page := 0; ; page++ {
		calls, err := gemsql.CallList(ctx, b.pool, gemsql.CallListParams{ToolName: "os.list_tasks", Limit: 5, After: after})
		require.NoError(t, err)
		if len(calls) == 0 {
			break
		}
		for _, c := range calls {
			require.False(t, seen[c.ID], "call listed twice")
			seen[c.ID] = true
		}
		last := calls[len(calls)-1]
		after = &gemsql.Cursor{Time: last.CreatedAt, ID: last.ID}
		require.Less(t, page, 5)
	}
	require.Len(t, seen, 12)

	queued, err := gemsql.CallList(ctx, b.pool, gemsql.CallListParams{Status: registry.CallQueued})
	require.NoError(t, err)
	require.Len(t, queued, 13)
}

func insertReceipt(t *testing.T, ctx context.Context, db gemsql.DBTX, callID uuid.UUID, status string) {
	t.Helper()
	code := any(nil)
	errJSON := any(nil)
	if status != "succeeded" {
		code = "handler_error"
		errJSON = `{"code":"handler_error","message":"boom"}`
	}
	_, err := db.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, result, error, error_code, attempt)
		SELECT id, tool_name, $2, '{"ok":true}', $3::jsonb, $4, 1 FROM core_tool_calls WHERE id = $1`, callID, status, errJSON, code)
	require.NoError(t, err)
}

func TestReceiptSetsCallStatusAndIsUnique(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
	require.NoError(t, err)
	insertReceipt(t, ctx, b.pool, id, "failed")

	c, err := gemsql.CallGet(ctx, b.pool, id)
	require.NoError(t, err)
	require.Equal(t, registry.CallFailed, c.Status)
	require.Equal(t, "handler_error", c.ErrorCode)
	require.Equal(t, "boom", c.Error)
	require.NotNil(t, c.FinishedAt)

	r, err := gemsql.ReceiptGet(ctx, b.pool, id)
	require.NoError(t, err)
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeHandlerError, r.Error.Code)
	require.Empty(t, r.Effects.DBWrites)

	// A second receipt for the same call is refused by the database itself.
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status) VALUES ($1, 'os.health_check', 'succeeded')`, id)
	require.ErrorContains(t, err, "_one_per_call") // core_tool_receipts_p<month>_one_per_call, its partition's key
	// And a succeeded receipt cannot carry an error code, nor a failed one lack it.
	id2, _ := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status) VALUES ($1, 'os.health_check', 'failed')`, id2)
	require.ErrorContains(t, err, "core_tool_receipts_error_iff_not_succeeded")

	_, err = gemsql.ReceiptGet(ctx, b.pool, id2)
	require.ErrorIs(t, err, gemsql.ErrNotFound)
}

func TestReceiptWaiter(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	w := startWaiter(t, ctx, b)
	w.TestSignals.Waiting.Init(t)

	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, []gemsql.CallInsertParams{{ToolName: "a.b"}, {ToolName: "a.b"}, {ToolName: "a.b"}}...))
	require.NoError(t, err)

	// A receipt that exists before the wait starts is found at once.
	insertReceipt(t, ctx, b.pool, ids[0], "succeeded")

	done := make(chan *gemsql.WaitResult, 1)
	go func() {
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := w.Wait(waitCtx, []uuid.UUID{ids[0], ids[1], ids[0]})
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		done <- res
	}()
	require.Equal(t, 1, w.TestSignals.Waiting.Wait(), "the wait read the first receipt and waits for the second")
	select {
	case <-done:
		t.Fatal("wait returned before the second receipt existed")
	default:
	}
	// The waiter does not poll: only the receipt's notification can end this wait before its 10 s.
	insertReceipt(t, ctx, b.pool, ids[1], "succeeded")
	res := <-done
	require.Len(t, res.Receipts, 2)
	require.Empty(t, res.Pending)

	// A wait that times out says what is still pending.
	waitCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	res, err = w.Wait(waitCtx, []uuid.UUID{ids[1], ids[2]})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, []uuid.UUID{ids[2]}, res.Pending)
	require.Contains(t, res.Receipts, ids[1])

	_, err = w.WaitOne(waitCtx, ids[2])
	require.Error(t, err)
}

func TestReceiptWaiterReconnects(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	w := startWaiter(t, ctx, b)
	w.TestSignals.Waiting.Init(t)

	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.b"}))
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		waitCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		_, err := w.WaitOne(waitCtx, id)
		got <- err
	}()
	require.Equal(t, 1, w.TestSignals.Waiting.Wait(), "the wait found no receipt and listens")

	// The listener's connection is ended and cannot come back (the database takes no new connection), and
	// the receipt is written meanwhile: its notification is lost. Everything here goes through one
	// connection taken before.
	admin, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer admin.Release()
	var db string
	require.NoError(t, admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db))
	server, err := pgx.Connect(ctx, sqltest.AdminURL(t)) // a database may not close itself to connections
	require.NoError(t, err)
	defer server.Close(context.Background())
	_, err = server.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS false`)
	require.NoError(t, err)
	var ended int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE '%receipt-listener'`).Scan(&ended))
	require.Equal(t, 1, ended, "the listener's connection was ended")
	insertReceipt(t, ctx, admin, id, "succeeded")
	select {
	case err := <-got:
		t.Fatalf("the waiter answered (%v) while its listener could not reconnect: the test did not lose the notification", err)
	case <-time.After(300 * time.Millisecond):
	}

	// Back: the waiter reconnects and finds the receipt by reading, since nothing will notify it again.
	_, err = server.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS true`)
	require.NoError(t, err)
	require.NoError(t, <-got)
}

func TestSafetyNetReceipts(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	tests := []struct {
		name     string
		finish   string
		wantCode registry.ErrorCode
	}{
		{"discarded", `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, registry.CodeJobDiscarded},
		{"cancelled", `UPDATE river_job SET state = 'cancelled', finalized_at = now() WHERE id = $1`, registry.CodeJobCancelled},
		{"completed without receipt", `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, registry.CodeJobCompletedWithoutReceipt},
		{"deleted", `DELETE FROM river_job WHERE id = $1`, registry.CodeJobDeleted},
	}
	for _, tt := range tests {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
		require.NoError(t, err)
		c, _ := gemsql.CallGet(ctx, b.pool, id)
		_, err = b.pool.Exec(ctx, tt.finish, c.JobID)
		require.NoError(t, err, tt.name)
		r, err := gemsql.ReceiptGet(ctx, b.pool, id)
		require.NoError(t, err, tt.name)
		require.Equal(t, registry.StatusFailed, r.Status, tt.name)
		require.Equal(t, tt.wantCode, r.Error.Code, tt.name)
		c, _ = gemsql.CallGet(ctx, b.pool, id)
		require.Equal(t, registry.CallFailed, c.Status, tt.name)
	}

	// A call that may have acted — it had started effects outside the database, or a device was handed it —
	// ends outcome_unknown, whatever ended its job, and says what ended it.
	for _, acted := range []struct{ name, setup, says string }{
		{"outside effects", `UPDATE core_tool_calls SET outside_token = gen_random_uuid(), outside_attempt = 1 WHERE id = $1`, "started effects outside"},
		{"device attempt", `INSERT INTO core_device_attempts (call_id, device, state, timeout_ms, sent_at) VALUES ($1, 'laptop', 'sent', 1000, now())`, "device laptop was handed it"},
	} {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, acted.setup, id)
		require.NoError(t, err, acted.name)
		c, _ := gemsql.CallGet(ctx, b.pool, id)
		_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, c.JobID)
		require.NoError(t, err, acted.name)
		r, err := gemsql.ReceiptGet(ctx, b.pool, id)
		require.NoError(t, err, acted.name)
		require.Equal(t, registry.CodeOutcomeUnknown, r.Error.Code, acted.name)
		require.Contains(t, r.Error.Message, acted.says)
		var details map[string]any
		require.NoError(t, json.Unmarshal(r.Error.Details, &details))
		require.Equal(t, "job_discarded", details["ended_by"], acted.name)
	}
	// A device attempt that was never handed out (unsent) does not count.
	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO core_device_attempts (call_id, device, state, timeout_ms) VALUES ($1, 'laptop', 'unsent', 1000)`, id)
	require.NoError(t, err)
	c, _ := gemsql.CallGet(ctx, b.pool, id)
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, c.JobID)
	require.NoError(t, err)
	r, _ := gemsql.ReceiptGet(ctx, b.pool, id)
	require.Equal(t, registry.CodeJobDiscarded, r.Error.Code)

	// A job that ends after its receipt exists gets no second receipt.
	id, _ = insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
	insertReceipt(t, ctx, b.pool, id, "succeeded")
	c, _ = gemsql.CallGet(ctx, b.pool, id)
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, c.JobID)
	require.NoError(t, err)
	r, _ = gemsql.ReceiptGet(ctx, b.pool, id)
	require.Equal(t, registry.StatusSucceeded, r.Status)

	// The executor completes jobs in the transaction that writes their receipts and says so
	// (gem.jobs_receipted); the trigger then does not look for a receipt.
	id, _ = insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
	c, _ = gemsql.CallGet(ctx, b.pool, id)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT set_config('gem.jobs_receipted', 'on', true)`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, c.JobID)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = gemsql.ReceiptGet(ctx, b.pool, id)
	require.ErrorIs(t, err, gemsql.ErrNotFound)

	// A malformed job of GEM's kind does not break River's statements.
	_, err = b.pool.Exec(ctx, `INSERT INTO river_job (args, kind) VALUES ('{"call_id":"nope"}', 'gem.tool_call')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'running' WHERE args->>'call_id' = 'nope'`)
	require.NoError(t, err)
}

// The safety net's receipt ends the call's open device attempt in its transaction: abandoned, so no hub
// hands it out (a queued one) and the hub tells the device running it (a sent one) to cancel; the hubs and
// any executor still waiting are told. `make chaos` found sent attempts left open for good after the safety
// net had written their calls' receipts.
func TestSafetyNetEndsDeviceAttempts(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `LISTEN `+gemsql.DeviceDispatchChannel)
	require.NoError(t, err)

	for _, tt := range []struct {
		state    string
		wantCode registry.ErrorCode
	}{
		{gemsql.AttemptSent, registry.CodeOutcomeUnknown}, // it may be running on the device
		{gemsql.AttemptQueued, registry.CodeJobDiscarded}, // never handed over, and now never will be
	} {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `INSERT INTO core_device_attempts (call_id, device, state, timeout_ms) VALUES ($1, 'laptop', $2, 1000)`, id, tt.state)
		require.NoError(t, err)
		c, _ := gemsql.CallGet(ctx, b.pool, id)
		_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, c.JobID)
		require.NoError(t, err)

		r, err := gemsql.ReceiptGet(ctx, b.pool, id)
		require.NoError(t, err, tt.state)
		require.Equal(t, tt.wantCode, r.Error.Code, tt.state)
		require.Equal(t, gemsql.AttemptAbandoned, b.stringOf(t, ctx, `SELECT state FROM core_device_attempts WHERE call_id = $1`, id), tt.state)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		require.NoError(t, err, "the hubs are told, %s", tt.state)
		require.Equal(t, "laptop", n.Payload)
	}
	require.Zero(t, b.count(t, ctx, `SELECT count(*) FROM core_device_attempts WHERE state IN ('queued', 'sent')`))
}

// A device registering again with no running calls named (a fresh process: the list is empty, or NULL)
// ends every attempt it had been sent.
func TestDeviceAttemptsEndWithNoneKept(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	var ids []int64
	for range 3 {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
		require.NoError(t, err)
		var att int64
		require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_device_attempts (call_id, device, state, timeout_ms, sent_at)
			VALUES ($1, 'laptop', 'sent', 1000, now()) RETURNING id`, id).Scan(&att))
		ids = append(ids, att)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT gem_device_attempts_end('laptop', true, $1)`, []int64{ids[0]}).Scan(&n))
	require.Equal(t, 2, n, "the one kept stays sent")
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT gem_device_attempts_end('laptop', true, NULL)`).Scan(&n))
	require.Equal(t, 1, n, "a NULL list keeps nothing")
	require.Zero(t, b.count(t, ctx, `SELECT count(*) FROM core_device_attempts WHERE state IN ('queued', 'sent')`))
}

// TestLiveCallStatus checks core_calls: a call shows its job's state (running, attempt, worker) until its
// receipt, while its row keeps status queued (River's fetch writes no call rows).
func TestLiveCallStatus(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check"}))
	require.NoError(t, err)
	c, _ := gemsql.CallGet(ctx, b.pool, id)
	require.Equal(t, registry.CallQueued, c.Status)

	// What River's fetch does: running, attempt and attempted_by.
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = array_append(attempted_by, 'executor-a') WHERE id = $1`, c.JobID)
	require.NoError(t, err)
	c, _ = gemsql.CallGet(ctx, b.pool, id)
	require.Equal(t, registry.CallRunning, c.Status)
	require.Equal(t, 1, c.Attempt)
	require.Equal(t, "executor-a", c.Worker)
	require.NotNil(t, c.StartedAt)
	require.Equal(t, "queued", b.stringOf(t, ctx, `SELECT status FROM core_tool_calls WHERE id = $1`, id))
	running, err := gemsql.CallList(ctx, b.pool, gemsql.CallListParams{Status: registry.CallRunning})
	require.NoError(t, err)
	require.Len(t, running, 1)
	require.Equal(t, id, running[0].ID)

	// A retry puts it back in the queue.
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'retryable' WHERE id = $1`, c.JobID)
	require.NoError(t, err)
	c, _ = gemsql.CallGet(ctx, b.pool, id)
	require.Equal(t, registry.CallQueued, c.Status)
	require.Equal(t, 1, c.Attempt)

	// The receipt's status is final, whatever the job does next.
	insertReceipt(t, ctx, b.pool, id, "succeeded")
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 2 WHERE id = $1`, c.JobID)
	require.NoError(t, err)
	c, _ = gemsql.CallGet(ctx, b.pool, id)
	require.Equal(t, registry.CallSucceeded, c.Status)
	require.Equal(t, "succeeded", b.stringOf(t, ctx, `SELECT status FROM core_tool_calls WHERE id = $1`, id))
}

func TestWriteCapture(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)

	// Outside a call nothing is captured.
	_, err = tx.Exec(ctx, `INSERT INTO os_tasks (title) VALUES ('not captured')`)
	require.NoError(t, err)

	callID := uuid.New()
	_, err = tx.Exec(ctx, `SELECT set_config('gem.call_id', $1, true)`, callID.String())
	require.NoError(t, err)
	var taskID, noteID uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `INSERT INTO os_tasks (title) VALUES ('a') RETURNING id`).Scan(&taskID))
	_, err = tx.Exec(ctx, `INSERT INTO os_tasks (title) VALUES ('b'), ('c')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE os_tasks SET priority = 'high' WHERE id = $1`, taskID)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `INSERT INTO os_notes (title) VALUES ('n') RETURNING id`).Scan(&noteID))

	// A savepoint rolled back takes its writes out of the count.
	_, err = tx.Exec(ctx, `SAVEPOINT s`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `DELETE FROM os_notes WHERE id = $1`, noteID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`)
	require.NoError(t, err)

	var createdBy uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `SELECT created_by_call FROM os_tasks WHERE id = $1`, taskID).Scan(&createdBy))
	require.Equal(t, callID, createdBy)

	var writes []registry.DBWrite
	require.NoError(t, tx.QueryRow(ctx, `SELECT gem_collect_writes()`).Scan(&writes))
	require.Len(t, writes, 3)
	require.Equal(t, "os_tasks", writes[0].Table)
	require.Equal(t, "insert", writes[0].Op)
	require.Equal(t, 3, writes[0].Count)
	require.Len(t, writes[0].IDs, 3)
	require.Equal(t, taskID.String(), writes[0].IDs[0])
	require.Equal(t, registry.DBWrite{Table: "os_tasks", Op: "update", Count: 1, IDs: []string{taskID.String()}}, writes[1])
	require.Equal(t, registry.DBWrite{Table: "os_notes", Op: "insert", Count: 1, IDs: []string{noteID.String()}}, writes[2])

	// Collecting resets, so the next call in the same transaction starts from nothing.
	require.NoError(t, tx.QueryRow(ctx, `SELECT gem_collect_writes()`).Scan(&writes))
	require.Empty(t, writes)

	// Ids are capped, counts are exact.
	_, err = tx.Exec(ctx, `INSERT INTO os_tasks (title) SELECT 't' || g FROM generate_series(1, 250) g`)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `SELECT gem_collect_writes()`).Scan(&writes))
	require.Len(t, writes, 1)
	require.Equal(t, 250, writes[0].Count)
	require.Len(t, writes[0].IDs, registry.DBWriteIDsMax)
}

// TestTriggerErrorCodesAreKnown checks that the codes the SQL triggers write are registry error codes.
func TestTriggerErrorCodesAreKnown(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	var src string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT string_agg(prosrc, ' ') FROM pg_proc WHERE proname IN ('gem_job_finished', 'gem_job_deleted')`).Scan(&src))
	known := map[registry.ErrorCode]bool{}
	for _, c := range registry.ErrorCodes {
		known[c] = true
	}
	for _, code := range []registry.ErrorCode{registry.CodeJobDiscarded, registry.CodeJobCancelled, registry.CodeJobDeleted, registry.CodeJobCompletedWithoutReceipt} {
		require.True(t, known[code])
		require.Contains(t, src, "'"+string(code)+"'")
	}
}

// TestReceiptWaiterPayloads: a notification carries the call id alone, whatever the receipt's size, and the
// waiter returns the receipt as read from the table.
func TestReceiptWaiterPayloads(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	w := startWaiter(t, ctx, b)
	w.TestSignals.Waiting.Init(t)
	conn, err := pgx.Connect(ctx, b.url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `LISTEN gem_receipt`)
	require.NoError(t, err)

	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, []gemsql.CallInsertParams{{ToolName: "a.b"}, {ToolName: "a.b"}}...))
	require.NoError(t, err)
	small, large := ids[0], ids[1]
	got := make(chan *gemsql.WaitResult, 1)
	go func() {
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, _ := w.Wait(waitCtx, ids)
		got <- res
	}()
	require.Equal(t, 2, w.TestSignals.Waiting.Wait(), "the wait found no receipt and listens")
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, result, effects, summary, idempotency_key, attempt, worker, duration_ms)
		VALUES ($1, 'a.b', 'succeeded', '{"n": 1.5, "s": "x"}', '{"db_writes": [{"table": "t", "op": "insert", "count": 1, "ids": ["1"]}]}', '{"result.n": 1.5}', 'k', 2, 'w1', 3.25),
		       ($2, 'a.b', 'succeeded', $3, '{"db_writes": []}', NULL, NULL, 1, 'w1', 1)`,
		small, large, fmt.Sprintf(`{"blob": %q}`, strings.Repeat("x", 9000)))
	require.NoError(t, err)
	res := <-got
	require.Empty(t, res.Pending)

	for _, id := range ids {
		fromTable, err := gemsql.ReceiptGet(ctx, b.pool, id)
		require.NoError(t, err)
		require.Equal(t, fromTable, res.Receipts[id])
	}
	heard := map[string]bool{}
	listenCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range ids {
		n, err := conn.WaitForNotification(listenCtx)
		require.NoError(t, err)
		heard[n.Payload] = true
	}
	require.Equal(t, map[string]bool{small.String(): true, large.String(): true}, heard, "each notification is a call id")
	require.Equal(t, 3.25, res.Receipts[small].DurationMS)
	require.Equal(t, []registry.DBWrite{{Table: "t", Op: "insert", Count: 1, IDs: []string{"1"}}}, res.Receipts[small].Effects.DBWrites)
}

// TestReceiptWaiterSubscribe: a subscription made before its calls exist hears of their receipts without
// reading the table first, so it sees only receipts committed after it was made.
func TestReceiptWaiterSubscribe(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	w := startWaiter(t, ctx, b)

	id := uuid.Must(uuid.NewV7())
	sub := w.Subscribe([]uuid.UUID{id, id})
	defer sub.Close()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = gemsql.CallInsert(ctx, tx, gemsql.CallInsertParams{ID: id, ToolName: "a.b"})
	require.NoError(t, err)
	insertReceipt(t, ctx, tx, id, "succeeded")
	require.NoError(t, tx.Commit(ctx))

	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := sub.Wait(waitCtx)
	require.NoError(t, err)
	require.Contains(t, res.Receipts, id)
	require.Empty(t, res.Pending)

	// A receipt committed before the subscription is not read: the subscription only listens.
	late := w.Subscribe([]uuid.UUID{id})
	defer late.Close()
	shortCtx, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	res, err = late.Wait(shortCtx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, []uuid.UUID{id}, res.Pending)
}

// TestReceiptWaiterSurvivesHostileNotifications: any database login can NOTIFY gem_receipt with anything.
// Payloads that are not call ids are ignored; a receipt made up as JSON is never taken for the call's
// receipt, and a bare id of the awaited call before it has a receipt finds none and keeps the wait going:
// the waiter still returns the call's real receipt.
func TestReceiptWaiterSurvivesHostileNotifications(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	w := startWaiter(t, ctx, b)

	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.b"}))
	require.NoError(t, err)
	sub := w.Subscribe([]uuid.UUID{id})
	defer sub.Close()
	hostile := []string{"", "{", "}", "null", "[]", `{"call_id": 5}`, `{"call_id": "not-a-uuid"}`, id.String() + "x",
		fmt.Sprintf(`{"call_id": %q, "status": {"no": "string"}}`, id),
		fmt.Sprintf(`{"call_id": %q, "status": "succeeded", "started_at": "yesterday"}`, id),
		fmt.Sprintf(`{"call_id": %q, "effects": {"db_writes": "many"}}`, id),
		fmt.Sprintf(`{"call_id": %q, "tool": "a.b", "status": "succeeded", "result": {"forged": true}, "effects": {"db_writes": []}}`, id),
		id.String(), strings.ToUpper(id.String()), // before the receipt: a read that finds none
		strings.Repeat("[", 3900) + strings.Repeat("]", 3900)}
	for _, p := range hostile {
		_, err := b.pool.Exec(ctx, `SELECT pg_notify('gem_receipt', $1)`, p)
		require.NoError(t, err)
	}
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, result) VALUES ($1, 'a.b', 'succeeded', '{"ok": true}')`, id)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := sub.Wait(waitCtx)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok": true}`, string(res.Receipts[id].Result), "the real receipt, not a hostile one")
}

// TestRunKeyClaim: gem_run_key_claim, which a brain run's insert calls through its trigger, claims a request
// key for a run once per caller: the same request again is GI002 naming the first run, another request GI001,
// another caller's key is another key, the same run may claim its key twice, and past the window the key is
// free again.
func TestRunKeyClaim(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	fp, other := []byte("request-1"), []byte("request-2")
	insert := func(caller, key string, fp []byte) (uuid.UUID, error) {
		id := uuid.Must(uuid.NewV7())
		_, err := conn.Exec(ctx, `INSERT INTO brain_runs (id, message, mode, status, requested_by, idempotency_key, request_fingerprint)
			VALUES ($1, 'm', 'enqueue', 'enqueued', $2, $3, $4)`, id, caller, key, fp)
		return id, err
	}
	code := func(err error) string {
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		return pgErr.Code
	}
	key := "k-" + uuid.NewString()
	first, err := insert("ann", key, fp)
	require.NoError(t, err)

	_, err = insert("ann", key, fp)
	require.Equal(t, "GI002", code(err))
	require.Contains(t, err.(*pgconn.PgError).Detail, first.String())
	_, err = insert("ann", key, other)
	require.Equal(t, "GI001", code(err))
	_, err = insert("bob", key, other)
	require.NoError(t, err, "keys are each caller's")
	_, err = conn.Exec(ctx, `SELECT gem_run_key_claim('ann', $1, $2, $3)`, key, fp, first)
	require.NoError(t, err, "the run holding the key claims it again")
	var runs int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM brain_runs WHERE idempotency_key = $1`, key).Scan(&runs))
	require.Equal(t, 2, runs, "a refused insert writes nothing")

	_, err = conn.Exec(ctx, `SET gem.idempotency_window = '100 milliseconds'`)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	later, err := insert("ann", key, other)
	require.NoError(t, err, "past its window the key is free")
	var holder uuid.UUID
	require.NoError(t, conn.QueryRow(ctx, `SELECT run_id FROM brain_request_keys WHERE requested_by = 'ann' AND key = $1`, key).Scan(&holder))
	require.Equal(t, later, holder)
	_, err = conn.Exec(ctx, `RESET gem.idempotency_window`)
	require.NoError(t, err)
}

// insertedID is the id of the one call gemsql.CallInsert made: id, err := insertedID(gemsql.CallInsert(...)).
func insertedID(made []gemsql.Inserted, err error) (uuid.UUID, error) {
	if err != nil {
		return uuid.Nil, err
	}
	return made[0].ID, nil
}

// insertedIDs are the ids of the calls gemsql.CallInsert made, in order.
func insertedIDs(made []gemsql.Inserted, err error) ([]uuid.UUID, error) {
	return gemsql.InsertedIDs(made), err
}
