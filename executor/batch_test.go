package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// batched is the config of an executor whose calls share transactions: one committer, which takes every
// call waiting.
func batched(c *executor.Config) {
	c.Committers = 1
	c.BatchMax = 1000
}

// receiptTransactions returns the calls whose receipts each transaction wrote, in the order it wrote them:
// a transaction's receipts share its xmin, and their identity ids follow the order of the executor's INSERT
// (the order the calls ran in).
func receiptTransactions(t *testing.T, ctx context.Context, b *testBundle) [][]uuid.UUID {
	t.Helper()
	rows, err := b.pool.Query(ctx, `SELECT xmin::text, call_id FROM core_tool_receipts ORDER BY xmin::text::bigint, id`)
	require.NoError(t, err)
	defer rows.Close()
	var (
		txs  [][]uuid.UUID
		last string
	)
	for rows.Next() {
		var (
			xmin string
			id   uuid.UUID
		)
		require.NoError(t, rows.Scan(&xmin, &id))
		if len(txs) == 0 || xmin != last {
			txs = append(txs, nil)
			last = xmin
		}
		txs[len(txs)-1] = append(txs[len(txs)-1], id)
	}
	require.NoError(t, rows.Err())
	return txs
}

// noteCreators maps every note's id to the call that created it.
func noteCreators(t *testing.T, ctx context.Context, b *testBundle) map[string]uuid.UUID {
	t.Helper()
	rows, err := b.pool.Query(ctx, `SELECT id::text, created_by_call FROM os_notes`)
	require.NoError(t, err)
	defer rows.Close()
	creators := map[string]uuid.UUID{}
	for rows.Next() {
		var (
			id string
			by *uuid.UUID
		)
		require.NoError(t, rows.Scan(&id, &by))
		require.NotNil(t, by, "note %s has no created_by_call", id)
		creators[id] = *by
	}
	require.NoError(t, rows.Err())
	return creators
}

// requireOwnNote checks the receipt of a succeeded os.create_note call: it lists exactly one write, the
// insert of the note the call created, in its effects and in its summary.
func requireOwnNote(t *testing.T, r *registry.Receipt, creators map[string]uuid.UUID, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, registry.StatusSucceeded, r.Status, msgAndArgs...)
	var res struct {
		NoteID string `json:"note_id"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &res))
	want := []registry.DBWrite{{Table: "os_notes", Op: "insert", Count: 1, IDs: []string{res.NoteID}}}
	require.Equal(t, want, r.Effects.DBWrites, msgAndArgs...)
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(r.Summary["effects.db_writes"])
	require.NoError(t, err)
	require.JSONEq(t, string(wantJSON), string(gotJSON), msgAndArgs...)
	require.Equal(t, r.CallID, creators[res.NoteID], msgAndArgs...)
	require.Equal(t, 1, r.Attempt, msgAndArgs...)
}

// TestBatchWritesAroundStatementlessCalls commits writing calls together with calls that send no statement
// of their own (stopped by the precheck, or run by a handler that does not use the database): every
// writing call's receipt lists exactly its own write, whether the next call of its transaction sent no
// statement or it was the transaction's last call (whose writes the receipts' INSERT collects).
func TestBatchWritesAroundStatementlessCalls(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	pattern := []string{"note", "no_db", "note", "note", "invalid", "note", "no_db_fail", "note", "no_handler", "note", "note"}
	var (
		kinds  []string
		params []gemsql.CallInsertParams
	)
	for i := range 330 {
		kind := pattern[i%len(pattern)]
		p := gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(fmt.Sprintf(`{"domain": "business", "title": "note %d", "content": "batched"}`, i))}
		switch kind {
		case "no_db":
			p = gemsql.CallInsertParams{ToolName: "test.no_db"}
		case "no_db_fail":
			p = gemsql.CallInsertParams{ToolName: "test.no_db", Input: json.RawMessage(`{"fail": true}`)}
		case "invalid":
			p = gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(`{"domain": "business", "content": "no title"}`)}
		case "no_handler":
			p = gemsql.CallInsertParams{ToolName: "test.no_handler"}
		}
		kinds, params = append(kinds, kind), append(params, p)
	}
	// The calls wait for the executor, so it finds many at once.
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	creators := noteCreators(t, ctx, b)
	kindOf := map[uuid.UUID]string{}
	notes := 0
	for i, id := range ids {
		kindOf[id] = kinds[i]
		r := rs[id]
		switch kinds[i] {
		case "note":
			notes++
			requireOwnNote(t, r, creators, "call %d", i)
		case "no_db":
			require.Equal(t, registry.StatusSucceeded, r.Status, "call %d", i)
			require.Empty(t, r.Effects.DBWrites, "call %d", i)
		case "no_db_fail":
			require.Equal(t, registry.StatusFailed, r.Status, "call %d", i)
			require.Equal(t, registry.CodeConflict, r.Error.Code, "call %d", i)
			require.Empty(t, r.Effects.DBWrites, "call %d", i)
		case "invalid":
			require.Equal(t, registry.CodeValidation, r.Error.Code, "call %d", i)
			require.Empty(t, r.Effects.DBWrites, "call %d", i)
		case "no_handler":
			require.Equal(t, registry.StatusNotConfigured, r.Status, "call %d", i)
			require.Empty(t, r.Effects.DBWrites, "call %d", i)
		}
	}
	require.Len(t, creators, notes)

	// The cases the test is about happened: writing calls followed, in their transaction, by each kind of
	// statement-less call, and writing calls that ended a shared transaction.
	followedBy := map[string]int{}
	lastOfShared, shared := 0, 0
	for _, tx := range receiptTransactions(t, ctx, b) {
		if len(tx) == 1 {
			continue
		}
		shared++
		for j, id := range tx {
			if kindOf[id] != "note" {
				continue
			}
			if j == len(tx)-1 {
				lastOfShared++
			} else if next := kindOf[tx[j+1]]; next != "note" {
				followedBy[next]++
			}
		}
	}
	t.Logf("shared transactions: %d; writing call last of one: %d; writing call followed by: %v", shared, lastOfShared, followedBy)
	require.Positive(t, lastOfShared, "no shared transaction ended with a writing call")
	for _, kind := range []string{"no_db", "no_db_fail", "invalid", "no_handler"} {
		require.Positive(t, followedBy[kind], "no writing call was followed by a %s call in its transaction", kind)
	}
}

// TestBatchKeyedDuplicatesInOneTransaction runs two calls with the same key in one transaction: the
// second is answered from the first, whose receipt is not written yet.
func TestBatchKeyedDuplicatesInOneTransaction(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// leads.create is keyed by phone.
	const pairs = 20
	var params []gemsql.CallInsertParams
	for i := range pairs {
		input := json.RawMessage(fmt.Sprintf(`{"name": "Lead %d", "phone": "0413 %03d %03d", "suburb": "Newtown"}`, i, i, i))
		params = append(params, gemsql.CallInsertParams{ToolName: "leads.create", Input: input}, gemsql.CallInsertParams{ToolName: "leads.create", Input: input})
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	txOf := map[uuid.UUID]int{}
	for n, tx := range receiptTransactions(t, ctx, b) {
		for _, id := range tx {
			txOf[id] = n
		}
	}
	together := 0
	for i := range pairs {
		a, c := rs[ids[2*i]], rs[ids[2*i+1]]
		require.Equal(t, registry.StatusSucceeded, a.Status, "pair %d: %+v", i, a.Error)
		require.Equal(t, registry.StatusSucceeded, c.Status, "pair %d: %+v", i, c.Error)
		require.True(t, a.IdempotencyHit != c.IdempotencyHit, "pair %d: exactly one call ran the handler", i)
		orig, hit := a, c
		if a.IdempotencyHit {
			orig, hit = c, a
		}
		require.NotNil(t, hit.IdempotencyOf, "pair %d", i)
		require.Equal(t, orig.CallID, *hit.IdempotencyOf, "pair %d", i)
		require.JSONEq(t, string(orig.Result), string(hit.Result), "pair %d", i)
		require.Empty(t, hit.Effects.DBWrites, "pair %d", i)
		require.Len(t, orig.Effects.DBWrites, 1, "pair %d", i)
		require.Equal(t, "leads", orig.Effects.DBWrites[0].Table, "pair %d", i)
		require.Equal(t, 1, orig.Attempt, "pair %d", i)
		require.Equal(t, 1, hit.Attempt, "pair %d: the hit was answered, not retried", i)
		phone := fmt.Sprintf("0413 %03d %03d", i, i)
		require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads WHERE phone = $1`, phone), "pair %d", i)
		var keyHolder uuid.UUID
		key := fmt.Sprintf("+61413%03d%03d", i, i) // the number in E.164
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT call_id FROM core_idempotency_keys WHERE tool_name = 'leads.create' AND key = $1`, key).Scan(&keyHolder))
		require.Equal(t, orig.CallID, keyHolder, "pair %d", i)
		if txOf[orig.CallID] == txOf[hit.CallID] {
			together++
		}
	}
	require.Equal(t, pairs, b.count(t, ctx, `SELECT count(*) FROM leads`))
	t.Logf("pairs in one transaction: %d of %d", together, pairs)
	require.Positive(t, together, "no pair shared a transaction")
}

// insertTwinJobs gives each call a second River job naming it.
func insertTwinJobs(t *testing.T, ctx context.Context, b *testBundle, ids []uuid.UUID) {
	t.Helper()
	for _, id := range ids {
		_, err := b.pool.Exec(ctx, `INSERT INTO river_job (args, kind)
			SELECT jsonb_build_object('call_id', id, 'tool_name', tool_name), 'gem.tool_call' FROM core_tool_calls WHERE id = $1`, id)
		require.NoError(t, err)
	}
	_, err := b.pool.Exec(ctx, `SELECT pg_notify('public.river_insert', '{"queue": "default"}')`)
	require.NoError(t, err)
}

// requireJobsCompleted waits until every job naming the call is completed, and checks there are want.
func requireJobsCompleted(t *testing.T, ctx context.Context, b *testBundle, id uuid.UUID, want int) {
	t.Helper()
	const q = `SELECT count(*), count(*) FILTER (WHERE state = 'completed') FROM river_job WHERE args ->> 'call_id' = $1`
	require.Eventually(t, func() bool {
		var all, completed int
		err := b.pool.QueryRow(ctx, q, id.String()).Scan(&all, &completed)
		return err == nil && all == want && completed == want
	}, 10*time.Second, 10*time.Millisecond, "call %s: not all of its %d jobs completed", id, want)
}

// TestBatchTwoJobsForOneCall gives calls a second River job each, both waiting when the executor starts
// (so the two often land in one batch): each call runs once and has one receipt, and both jobs complete.
func TestBatchTwoJobsForOneCall(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	var params []gemsql.CallInsertParams
	for i := range 30 {
		params = append(params, gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(fmt.Sprintf(`{"domain": "business", "title": "twin %d", "content": "twice queued"}`, i))})
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	insertTwinJobs(t, ctx, b, ids)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	creators := noteCreators(t, ctx, b)
	for i, id := range ids {
		requireOwnNote(t, rs[id], creators, "call %d", i)
		requireJobsCompleted(t, ctx, b, id, 2)
		require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE created_by_call = $1`, id), "call %d ran once", i)
		require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE call_id = $1`, id), "call %d", i)
	}
	require.Len(t, creators, len(ids))
}

// TestTwoJobsForOneCallInConcurrentTransactions runs a call's second job while its first is still in its
// handler, on another committer: the second job's transaction waits for the call's row lock, then finds
// the receipt and only completes its job; the handler runs once.
func TestTwoJobsForOneCallInConcurrentTransactions(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, func(c *executor.Config) { c.Committers = 2 })

	// The test holds a lock that stops the handler's insert, so the call stays in its handler (holding its
	// row lock) until the second job's transaction waits for that row.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `LOCK TABLE os_notes IN SHARE MODE`)
	require.NoError(t, err)

	id := b.call(t, ctx, "os.create_note", `{"domain": "business", "title": "twin", "content": "twice queued"}`)
	waitForLockWait := func(query string) {
		t.Helper()
		require.Eventually(t, func() bool {
			var n int
			err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND application_name = 'gem-executor-calls' AND wait_event_type = 'Lock' AND query LIKE $1`, "%"+query+"%").Scan(&n)
			return err == nil && n == 1
		}, 10*time.Second, time.Millisecond, "no call connection waits in %q", query)
	}
	waitForLockWait("INSERT INTO os_notes")
	insertTwinJobs(t, ctx, b, []uuid.UUID{id})
	waitForLockWait("FOR NO KEY UPDATE OF c")
	require.NoError(t, tx.Commit(ctx))

	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	requireJobsCompleted(t, ctx, b, id, 2)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE created_by_call = $1`, id), "the handler ran once")
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts WHERE call_id = $1`, id))
	requireOwnNote(t, r, noteCreators(t, ctx, b))
}

// recordWriters pins the database's default of setting to value, and records, with a trigger (trigger is
// its timing and table, as "AFTER UPDATE ON river_job"), the setting in effect in every session that fires
// it. The function it returns reads them: application_name → the values seen.
func recordWriters(t *testing.T, ctx context.Context, b *testBundle, setting, value, trigger string) func() map[string][]string {
	t.Helper()
	// setting, value and trigger are constants of the tests.
	_, err := b.pool.Exec(ctx, fmt.Sprintf(`
		DO $$ BEGIN EXECUTE format('ALTER DATABASE %%I SET %[1]s = %[2]s', current_database()); END $$;
		CREATE TABLE test_writers (application_name text, value text, PRIMARY KEY (application_name, value));
		CREATE FUNCTION test_record_writer() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
			INSERT INTO test_writers VALUES (current_setting('application_name'), current_setting('%[1]s'))
			ON CONFLICT DO NOTHING;
			RETURN NEW;
		END $f$;
		CREATE TRIGGER test_record_writer %[3]s FOR EACH ROW EXECUTE FUNCTION test_record_writer();`, setting, value, trigger))
	require.NoError(t, err)
	return func() map[string][]string {
		rows, err := b.pool.Query(ctx, `SELECT application_name, value FROM test_writers ORDER BY 1, 2`)
		require.NoError(t, err)
		writers := map[string][]string{}
		for rows.Next() {
			var app, v string
			require.NoError(t, rows.Scan(&app, &v))
			writers[app] = append(writers[app], v)
		}
		require.NoError(t, rows.Err())
		return writers
	}
}

// TestPoolsSynchronousCommit checks the executor's two pools: River's commits without waiting for the disk,
// the calls' keeps the database's setting (here on).
func TestPoolsSynchronousCommit(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// Pin the database's default, and record the settings of every session that changes a job: River's
	// fetch and the executor's completions.
	writers := recordWriters(t, ctx, b, "synchronous_commit", "on", "AFTER UPDATE ON river_job")
	b.startExecutor(t, nil)

	r := b.waitOne(t, ctx, b.call(t, ctx, "test.settings", `{}`))
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.JSONEq(t, `{"synchronous_commit": "on", "application_name": "gem-executor-calls", "plan_cache_mode": "auto"}`, string(r.Result))

	require.Equal(t, map[string][]string{
		"gem-executor-river": {"off"}, // River's fetch
		"gem-executor-calls": {"on"},  // the completion of the job with its receipt
	}, writers())
}

// TestBatchPlans checks that the executor's own statements on the partitioned calls and receipts run under
// generic plans (planned once per connection, not on every execution), and that a handler's statements keep
// the database's own setting, pinned here to something other than PostgreSQL's default.
func TestBatchPlans(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	writers := recordWriters(t, ctx, b, "plan_cache_mode", "force_custom_plan", "BEFORE INSERT ON core_tool_receipts")
	b.startExecutor(t, batched)

	var ids []uuid.UUID
	for range 8 {
		ids = append(ids, b.call(t, ctx, "test.settings", `{}`))
	}
	for id, r := range b.wait(t, ctx, ids...) {
		require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %+v", id, r.Error)
		require.JSONEq(t, `{"synchronous_commit": "on", "application_name": "gem-executor-calls", "plan_cache_mode": "force_custom_plan"}`,
			string(r.Result))
	}

	// The receipts' INSERT, in the executor's transaction, under generic plans.
	require.Equal(t, map[string][]string{"gem-executor-calls": {"force_generic_plan"}}, writers())
}

// TestBatchHandlerStatementFails runs handlers whose statement fails (the transaction is aborted until
// their savepoint is rolled back) among writing calls: each failing call's effects are rolled back and it
// gets a failed receipt with the SQLSTATE (conflict for a unique violation, handler_error for a bug), and
// the calls around it in its transaction keep their own writes, on their first attempt.
func TestBatchHandlerStatementFails(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	type failing struct {
		input, sqlstate string
		code            registry.ErrorCode
	}
	fails := []failing{
		{`{"kind": "unique"}`, "23505", registry.CodeConflict},
		{`{"kind": "unique", "first": true}`, "23505", registry.CodeConflict},
		{`{"kind": "div_zero"}`, "22012", registry.CodeHandlerError},
		{`{"kind": "div_zero", "first": true}`, "22012", registry.CodeHandlerError},
		{`{"kind": "undefined_column"}`, "42703", registry.CodeHandlerError},
	}
	var (
		params []gemsql.CallInsertParams
		want   []failing // how each call fails; the zero value for a writing call
	)
	for i := range 10 * len(fails) {
		params = append(params, gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(fmt.Sprintf(`{"domain": "business", "title": "note %d", "content": "between failures"}`, i))})
		want = append(want, failing{})
		f := fails[i%len(fails)]
		params = append(params, gemsql.CallInsertParams{ToolName: "test.sql_error", Input: json.RawMessage(f.input)})
		want = append(want, f)
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	creators := noteCreators(t, ctx, b)
	failed := map[uuid.UUID]bool{}
	for i, id := range ids {
		r := rs[id]
		if want[i].sqlstate == "" {
			requireOwnNote(t, r, creators, "call %d", i)
			continue
		}
		failed[id] = true
		require.Equal(t, registry.StatusFailed, r.Status, "call %d (%s)", i, params[i].Input)
		require.Equal(t, want[i].code, r.Error.Code, "call %d (%s): %s", i, params[i].Input, r.Error.Message)
		d := decodeDetails(t, r)
		require.Equal(t, want[i].sqlstate, d["sqlstate"], "call %d (%s)", i, params[i].Input)
		if want[i].sqlstate == "23505" {
			require.Equal(t, "os_notes_pkey", d["constraint"], "call %d", i)
		}
		require.Empty(t, r.Effects.DBWrites, "call %d", i)
		require.Equal(t, 1, r.Attempt, "call %d", i)
	}
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title LIKE 'sql_error %'`), "the failing calls' writes were rolled back")
	require.Len(t, creators, len(ids)/2)

	// The failing calls had writing calls before and after them in their transactions.
	surrounded := 0
	for _, tx := range receiptTransactions(t, ctx, b) {
		for j := 1; j < len(tx)-1; j++ {
			if failed[tx[j]] && !failed[tx[j-1]] && !failed[tx[j+1]] {
				surrounded++
			}
		}
	}
	t.Logf("failing calls between two writing calls of their transaction: %d of %d", surrounded, len(failed))
	require.Positive(t, surrounded)
}

// TestBatchHandlerFirstStatementFailsToPrepare runs a handler whose first statement fails when PostgreSQL
// parses it (an undefined column): like any failing statement it gives the call a handler_error receipt,
// and the calls sharing its transaction are not affected.
func TestBatchHandlerFirstStatementFailsToPrepare(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	params := []gemsql.CallInsertParams{
		{ToolName: "os.create_note", Input: json.RawMessage(`{"domain": "business", "title": "before", "content": "first"}`)},
		// One attempt: a call that broke its transaction is not retried for long.
		{ToolName: "test.sql_error", Input: json.RawMessage(`{"kind": "undefined_column", "first": true}`), MaxAttempts: 1},
		{ToolName: "os.create_note", Input: json.RawMessage(`{"domain": "business", "title": "after", "content": "last"}`)},
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	r := rs[ids[1]]
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeHandlerError, r.Error.Code, "%s", r.Error.Message)
	require.Equal(t, "42703", decodeDetails(t, r)["sqlstate"])
	require.Equal(t, 1, r.Attempt)

	creators := noteCreators(t, ctx, b)
	requireOwnNote(t, rs[ids[0]], creators, "the call before")
	requireOwnNote(t, rs[ids[2]], creators, "the call after")
}

// TestBatchOddJSON: a result and an error message holding what PostgreSQL's jsonb refuses (NUL, lone UTF-16
// surrogates) are stored with U+FFFD in their place, and the calls sharing their transaction are unaffected:
// every call ends on its first attempt.
func TestBatchOddJSON(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	var params []gemsql.CallInsertParams
	for i := range 30 {
		switch i % 3 {
		case 0:
			params = append(params, gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(fmt.Sprintf(`{"domain": "business", "title": "odd %d", "content": "plain"}`, i))})
		case 1:
			params = append(params, gemsql.CallInsertParams{ToolName: "test.odd_json"})
		case 2:
			params = append(params, gemsql.CallInsertParams{ToolName: "test.odd_json", Input: json.RawMessage(`{"fail": true}`)})
		}
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	b.startExecutor(t, batched)
	rs := b.wait(t, ctx, ids...)

	creators := noteCreators(t, ctx, b)
	for i, id := range ids {
		r := rs[id]
		require.Equal(t, 1, r.Attempt, "call %d ended on its first attempt", i)
		switch i % 3 {
		case 0:
			requireOwnNote(t, r, creators, "call %d", i)
		case 1:
			require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
			var res struct {
				Text string `json:"text"`
			}
			require.NoError(t, json.Unmarshal(r.Result, &res))
			require.Equal(t, "a\uFFFDb\uFFFDc\uFFFDd😀", res.Text)
			require.Equal(t, res.Text, r.Summary["result.text"])
		case 2:
			require.Equal(t, registry.StatusFailed, r.Status)
			require.Equal(t, registry.CodeConflict, r.Error.Code)
			require.Equal(t, "refused: a\uFFFDb", r.Error.Message)
		}
	}
	txs := receiptTransactions(t, ctx, b)
	require.Less(t, len(txs), len(ids), "calls shared transactions")
}
