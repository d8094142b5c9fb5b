package executor_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestPermissions: the executor refuses a call whose caller lacks a permission its tool declares, is not
// known, is revoked, or may not act as the call's agent; and runs the others.
func TestPermissions(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant('reader', '{read:*}'), gem_caller_grant('ops', '{*}', '{ops-agent}'),
		gem_caller_grant('gone', '{*}')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE core_callers SET revoked_at = now() WHERE name = 'gone'`)
	require.NoError(t, err)

	call := func(tool, input, caller, agent string) *registry.Receipt {
		t.Helper()
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: tool, Input: []byte(input), RequestedBy: caller, Agent: agent}))
		require.NoError(t, err)
		return b.waitOne(t, ctx, id)
	}

	// A read is allowed; a write names what is missing, and writes nothing.
	r := call("os.health_check", `{}`, "reader", "")
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	d := requireDenied(t, call("os.create_task", `{"title": "not for readers", "domain": "business"}`, "reader", ""), `"reader"`, "write:db", "os.create_task")
	require.Equal(t, []any{"write:db"}, d["missing"])
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE title = 'not for readers'`))

	// Unknown and revoked callers are refused, whatever the tool.
	requireDenied(t, call("os.health_check", `{}`, "nobody", ""), `"nobody"`, "not known")
	requireDenied(t, call("os.health_check", `{}`, "gone", ""), `"gone"`, "revoked")

	// A caller limited to some agents may not act as another.
	requireDenied(t, call("os.health_check", `{}`, "ops", "office-assistant"), `may not act as agent "office-assistant"`)

	// A call inserted by hand without a caller is the migrating role's, which may do everything.
	id := b.call(t, ctx, "os.create_task", `{"title": "by hand", "domain": "business"}`)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var caller string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT requested_by FROM core_calls WHERE id = $1`, id).Scan(&caller))
	require.True(t, strings.HasPrefix(caller, "sql:"), caller)
}

// TestSQLCallerRole: a login role given gem_caller inserts calls and reads calls, receipts and the audit
// views, and nothing else; its calls carry its own caller whatever they claim, and run with that caller's
// grants.
func TestSQLCallerRole(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	role := "gem_t_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	conn := b.connectAs(t, ctx, role, "gem_caller")

	insert := func(tool, input, claimed string) uuid.UUID {
		t.Helper()
		var id uuid.UUID
		require.NoError(t, conn.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, requested_by) VALUES ($1, $2, $3) RETURNING id`,
			tool, input, claimed).Scan(&id))
		return id
	}

	// Claiming the migrating role's caller does not work: the call is the role's own, which has no grants yet.
	id := insert("os.health_check", `{}`, "sql:gem")
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodePermissionDenied, r.Error.Code, r.Error.Message)
	require.Contains(t, r.Error.Message, `"sql:`+role+`"`)

	// Granted, it runs; and it reads its receipt through the views.
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant($1, '{read:db}')`, "sql:"+role)
	require.NoError(t, err)
	id = insert("os.health_check", `{}`, "")
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var status, caller string
	require.NoError(t, conn.QueryRow(ctx, `SELECT c.status, c.requested_by FROM core_calls c JOIN core_tool_receipts r ON r.call_id = c.id WHERE c.id = $1`, id).Scan(&status, &caller))
	require.Equal(t, "succeeded", status)
	require.Equal(t, "sql:"+role, caller)
	// A temporary table named as River's does not divert the call's job: the insert trigger looks in GEM's
	// schema only.
	_, err = conn.Exec(ctx, `CREATE TEMP TABLE river_job (id bigserial, args jsonb, kind text, max_attempts int, queue text, priority int, state text)`)
	require.NoError(t, err)
	r = b.waitOne(t, ctx, insert("os.health_check", `{}`, ""))
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	_, err = conn.Exec(ctx, `DROP TABLE pg_temp.river_job`)
	require.NoError(t, err)

	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM core_recent_failures WHERE requested_by = $1`, "sql:"+role).Scan(&n))
	require.Equal(t, 1, n)

	// Nothing else: River's table, a domain table, changing a call, granting itself.
	for _, stmt := range []string{
		`SELECT count(*) FROM river_job`,
		`SELECT count(*) FROM os_tasks`,
		`INSERT INTO os_tasks (title) VALUES ('sneaked')`,
		`UPDATE core_tool_calls SET status = 'succeeded' WHERE id = '` + id.String() + `'`,
		`DELETE FROM core_tool_receipts`,
		`INSERT INTO core_tool_calls (tool_name, status) VALUES ('os.health_check', 'succeeded')`,
		`SELECT gem_caller_grant('sql:` + role + `', '{*}')`,
		`UPDATE core_callers SET permissions = '{*}'`,
		`SELECT token_sha256 FROM core_callers`,
	} {
		_, err := conn.Exec(ctx, stmt)
		require.Error(t, err, stmt)
		require.Contains(t, err.Error(), "permission denied", stmt)
	}
}

// TestSizeLimits: an input over its tool's bound is refused input_too_large, and one over every tool's
// bound is never read into the executor; a result over its bound fails its call (its effects rolled back)
// and not the other calls of its batch.
func TestSizeLimits(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, func(c *executor.Config) { c.MaxInputBytes = 1 << 20 }) // test.blob says 2 KiB itself

	small := b.call(t, ctx, "test.blob", `{"size": 10}`)
	r := b.waitOne(t, ctx, small)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)

	// Over test.blob's own bound (2,048 bytes), under the executor's: read, then refused before the handler.
	id := b.call(t, ctx, "test.blob", `{"size": 1, "text": "`+strings.Repeat("a", 3000)+`"}`)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodeInputTooLarge, r.Error.Code, r.Error.Message)
	d := decodeDetails(t, r)
	require.EqualValues(t, 2048, d["max_bytes"])
	require.Greater(t, d["bytes"], float64(3000))

	// 50 MB by SQL, for a tool with the executor's bound: refused without being read. The executor is in
	// this process, so what it allocated while the call ran shows in the process's counters.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input)
		VALUES ('os.create_note', jsonb_build_object('domain', 'personal', 'title', 'huge', 'content', repeat('x', 50000000)))
		RETURNING id`).Scan(&id))
	r = b.waitOne(t, ctx, id)
	runtime.ReadMemStats(&after)
	require.Equal(t, registry.CodeInputTooLarge, r.Error.Code, r.Error.Message)
	require.Contains(t, r.Error.Message, "it was not read")
	d = decodeDetails(t, r)
	require.EqualValues(t, 1<<20, d["max_bytes"])
	require.Greater(t, d["bytes"], float64(50_000_000))
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "the executor allocated as if it had read the input")

	// Results: 5,000 bytes is over test.blob's 4 KiB; the note it wrote is rolled back. Calls of the same
	// batch are not touched.
	ids := []uuid.UUID{b.call(t, ctx, "test.blob", `{"size": 5000}`), b.call(t, ctx, "test.blob", `{"size": 100}`), b.call(t, ctx, "os.health_check", `{}`)}
	got := b.wait(t, ctx, ids...)
	require.Equal(t, registry.CodeResultTooLarge, got[ids[0]].Error.Code, got[ids[0]].Error.Message)
	require.EqualValues(t, 4096, decodeDetails(t, got[ids[0]])["max_bytes"])
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "blob "+ids[0].String()))
	require.Equal(t, registry.StatusSucceeded, got[ids[1]].Status, "%+v", got[ids[1]].Error)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "blob "+ids[1].String()))
	require.Equal(t, registry.StatusSucceeded, got[ids[2]].Status)
}
