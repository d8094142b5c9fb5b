package executor_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// insertKeyed inserts a call with a client's key by plain SQL, as a person in psql would.
func (b *testBundle) insertKeyed(t *testing.T, ctx context.Context, tool, input, key string) (uuid.UUID, error) {
	t.Helper()
	var id uuid.UUID
	err := b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, idempotency_key) VALUES ($1, $2, $3) RETURNING id`,
		tool, input, key).Scan(&id)
	return id, err
}

// TestRequestKeySQL: a key sent with a call by plain SQL means "this request, once" for a tool whose mode
// is none: the second insert never runs and its receipt repeats the first's; another input with the same
// key is refused at the insert (GI001) and nothing is made; a failed first call is repeated as failed.
func TestRequestKeySQL(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	note := `{"domain": "business", "title": "paid once", "content": "a retried request"}`
	first, err := b.insertKeyed(t, ctx, "os.create_note", note, "req-1")
	require.NoError(t, err)
	r1 := b.waitOne(t, ctx, first)
	require.Equal(t, registry.StatusSucceeded, r1.Status, "%+v", r1.Error)
	require.False(t, r1.IdempotencyHit)

	// The same input, keys in another order and spacing: the same request.
	second, err := b.insertKeyed(t, ctx, "os.create_note", `{"title":"paid once","content":"a retried request","domain":"business"}`, "req-1")
	require.NoError(t, err)
	r2 := b.waitOne(t, ctx, second)
	require.Equal(t, registry.StatusSucceeded, r2.Status)
	require.True(t, r2.IdempotencyHit)
	require.Equal(t, first, *r2.IdempotencyOf)
	require.JSONEq(t, string(r1.Result), string(r2.Result))
	require.Empty(t, r2.Effects.DBWrites)
	require.Equal(t, "req-1", r2.IdempotencyKey)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls WHERE id = $1 AND job_id IS NOT NULL`, second), "no job")
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = 'paid once'`))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_idempotency_hits WHERE original_call_id = $1`, first))

	// Another input with the same key: refused, nothing inserted.
	_, err = b.insertKeyed(t, ctx, "os.create_note", `{"domain": "business", "title": "paid twice?", "content": "x"}`, "req-1")
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, "GI001", pgErr.Code)
	require.Contains(t, pgErr.Message, first.String())
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls WHERE input->>'title' = 'paid twice?'`))
	// Through gemsql, the refusal is typed.
	_, err = gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.create_note",
		Input: []byte(`{"domain": "business", "title": "paid twice?", "content": "x"}`), IdempotencyKey: "req-1"})
	var reused *gemsql.IdempotencyConflictError
	require.ErrorAs(t, err, &reused)
	require.Equal(t, first, reused.CallID)

	// The same key for another tool, or from another caller, is another request.
	other, err := b.insertKeyed(t, ctx, "os.create_task", `{"domain": "business", "title": "paid once"}`, "req-1")
	require.NoError(t, err)
	require.False(t, b.waitOne(t, ctx, other).IdempotencyHit)
	otherCaller, err := gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.create_note", Input: []byte(note),
		IdempotencyKey: "req-1", RequestedBy: "someone-else"})
	require.NoError(t, err)
	require.Nil(t, otherCaller[0].IdempotencyOf, "a key is its caller's")
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls WHERE idempotency_key = 'req-1' AND job_id IS NOT NULL AND requested_by = 'someone-else'`))

	// A first call that failed (here: its input is invalid) is repeated as failed, not run again.
	bad, err := b.insertKeyed(t, ctx, "os.create_note", `{"domain": "diary"}`, "req-2")
	require.NoError(t, err)
	rb := b.waitOne(t, ctx, bad)
	require.Equal(t, registry.CodeValidation, rb.Error.Code)
	badAgain, err := b.insertKeyed(t, ctx, "os.create_note", `{"domain": "diary"}`, "req-2")
	require.NoError(t, err)
	rba := b.waitOne(t, ctx, badAgain)
	require.True(t, rba.IdempotencyHit)
	require.Equal(t, registry.StatusFailed, rba.Status)
	require.Equal(t, registry.CodeValidation, rba.Error.Code)
	require.Equal(t, rb.Error.Message, rba.Error.Message)
}

// TestRequestKeyWindow: a key holds for gem.idempotency_window (24 hours unless set); past it, the same key
// is a new request. A setting that is not an interval is refused by name.
func TestRequestKeyWindow(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	insert := func(input string) (uuid.UUID, error) {
		var id uuid.UUID
		err := conn.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, idempotency_key) VALUES ('os.create_note', $1, 'w') RETURNING id`, input).Scan(&id)
		return id, err
	}
	note := `{"domain": "business", "title": "windowed", "content": "x"}`
	first, err := insert(note)
	require.NoError(t, err)
	b.waitOne(t, ctx, first)

	_, err = conn.Exec(ctx, `SET gem.idempotency_window = '200 milliseconds'`)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	// Past the window even another input may take the key.
	later, err := insert(`{"domain": "business", "title": "windowed", "content": "another day"}`)
	require.NoError(t, err)
	r := b.waitOne(t, ctx, later)
	require.False(t, r.IdempotencyHit)
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = 'windowed'`))

	_, err = conn.Exec(ctx, `SET gem.idempotency_window = 'a while'`)
	require.NoError(t, err)
	_, err = insert(note)
	require.ErrorContains(t, err, "gem.idempotency_window is 'a while', which is not an interval")
	_, err = conn.Exec(ctx, `RESET gem.idempotency_window`)
	require.NoError(t, err)
}

// TestRequestKeySecrets: a secret input is no part of what makes two requests the same (it is sealed with a
// new nonce each time, and never hashed): the same user and password with one key run once, whether the
// password arrived in clear by SQL or sealed.
func TestRequestKeySecrets(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	tool, _ := b.reg.Tool("test.secret_login")
	input := `{"user": "ann", "password": "` + testSecret + `"}`
	first, err := b.insertKeyed(t, ctx, "test.secret_login", input, "login-1")
	require.NoError(t, err)
	require.Equal(t, registry.StatusSucceeded, b.waitOne(t, ctx, first).Status)
	secrets, err := registry.NewSecrets(testSecretKey)
	require.NoError(t, err)
	sealed, err := secrets.Seal(tool, []byte(input))
	require.NoError(t, err)
	again, err := b.insertKeyed(t, ctx, "test.secret_login", string(sealed), "login-1")
	require.NoError(t, err)
	require.True(t, b.waitOne(t, ctx, again).IdempotencyHit)
	var fingerprints int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM core_request_keys WHERE fingerprint = sha256(convert_to($1::jsonb::text, 'UTF8'))`,
		input).Scan(&fingerprints))
	require.Zero(t, fingerprints, "the fingerprint is not a hash of the clear password")
}

// TestRequestKeyConcurrentInserts: fifty inserts of one request at the same moment, on fifty connections,
// run it once; every call ends with one receipt.
func TestRequestKeyConcurrentInserts(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	ids := make([]uuid.UUID, 50)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id, err := b.insertKeyed(t, ctx, "os.create_note", `{"domain": "business", "title": "at once", "content": "x"}`, "burst")
			require.NoError(t, err)
			ids[i] = id
		}()
	}
	close(start)
	wg.Wait()
	rs := b.wait(t, ctx, ids...)
	hits := 0
	for _, r := range rs {
		require.Equal(t, registry.StatusSucceeded, r.Status)
		if r.IdempotencyHit {
			hits++
		}
	}
	require.Equal(t, 49, hits)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = 'at once'`))
	require.Equal(t, 50, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts`))
}

// TestRequestKeyAcrossACrash: a message (outside effects, mode none) is retried with its key while the first
// call runs, and the executor running it is SIGKILLed. The first call ends outcome_unknown, and the retry
// repeats that, never sending again: the message went out once.
func TestRequestKeyAcrossACrash(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	h := b.startHelper(t)

	input := `{"ms": 60000, "to": "+61400000001"}`
	first, err := b.insertKeyed(t, ctx, "test.outside", input, "sms-1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(b.outsideLines(t)) == 1 }, 20*time.Second, 10*time.Millisecond)
	retry, err := b.insertKeyed(t, ctx, "test.outside", input, "sms-1")
	require.NoError(t, err)

	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, h.wait(t, 10*time.Second))
	b.startExecutor(t, nil)
	rs := b.wait(t, ctx, first, retry)
	require.Equal(t, registry.CodeOutcomeUnknown, rs[first].Error.Code)
	require.True(t, rs[retry].IdempotencyHit)
	require.Equal(t, registry.CodeOutcomeUnknown, rs[retry].Error.Code, "the retry says what the first call says")

	late, err := b.insertKeyed(t, ctx, "test.outside", input, "sms-1")
	require.NoError(t, err)
	require.True(t, b.waitOne(t, ctx, late).IdempotencyHit)
	require.Equal(t, []string{first.String()}, b.outsideLines(t), "the message was sent once")
}
