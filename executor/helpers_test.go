package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	businesshandlers "github.com/gemhq/gem/packs/business/handlers"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationshandlers "github.com/gemhq/gem/packs/integrations/handlers"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary run an executor process instead of tests (for crash and signal tests).
const helperEnv = "GEM_EXECUTOR_TEST_HELPER"

// TestMain runs the tests, or the helper process; the tests fail when a goroutine outlives them (an executor,
// waiter, pool or fake provider a test started and did not stop).
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper())
	}
	goleak.VerifyTestMain(m)
}

// runHelper is an executor process with the test handlers, configured from the environment like the real
// command, that stops on SIGTERM with its drain deadline.
func runHelper() int {
	log, _ := gemlog.New(os.Stderr, "executor", "info", "")
	cfg, err := executor.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	biz := businesspack.ConfigFromEnv(os.Getenv)
	biz.TimeZone = ospack.ConfigFromEnv(os.Getenv).TimeZone // testHandlers hands biz's to the os pack
	m := &executor.Main{Config: cfg, Handlers: testHandlers(os.Getenv("GEM_TEST_OUTSIDE_LOG"), biz), Log: log}
	if err := m.Open(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), m.Executor.Config().DrainTimeout)
	defer cancel()
	if err := m.Close(closeCtx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testHandlers are the os and business packs' handlers (configured by biz, not by the environment) plus the
// handlers of testdata/test-tools.json.
// ignoring counts test.sleep handlers that ignore their context and run on after being abandoned, so a
// test can wait for them to end before the leak check.
var ignoring sync.WaitGroup

func testHandlers(outsideLog string, biz businesspack.Config) executor.Handlers {
	h := executor.Handlers{}
	// The business's time zone is the os pack's (GEM_BUSINESS_TIMEZONE): tests set it in biz.
	businesshandlers.RegisterWithOS(h, ospack.Config{TimeZone: biz.TimeZone}, biz)
	integrationshandlers.Register(h, integrationspack.Config{}, businesspack.Config{})

	writeNote := func(ctx context.Context, c *executor.Call, title string) (string, error) {
		var id string
		err := c.DB.QueryRow(ctx, `INSERT INTO os_notes (title) VALUES ($1) RETURNING id`, title).Scan(&id)
		return id, err
	}
	h.Func("test.blob", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Size int `json:"size"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		if _, err := writeNote(ctx, c, "blob "+c.ID.String()); err != nil {
			return nil, err
		}
		return map[string]any{"data": strings.Repeat("x", in.Size)}, nil
	})
	addLimitedHandlers(h, outsideLog)
	h.Func("test.secret_login", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			User     string `json:"user"`
			Password string `json:"password"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		return map[string]any{"ok": in.Password == testSecret, "user": in.User}, nil
	})
	h.Func("test.sleep", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			MS    int    `json:"ms"`
			How   string `json:"how"`
			Write bool   `json:"write"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		id := uuid.Nil.String()
		if in.Write {
			var err error
			if id, err = writeNote(ctx, c, "sleep "+c.ID.String()); err != nil {
				return nil, err
			}
		}
		d := time.Duration(in.MS) * time.Millisecond
		switch in.How {
		case "db":
			if _, err := c.DB.Exec(ctx, `SELECT pg_sleep($1)`, d.Seconds()); err != nil {
				return nil, err
			}
		case "go":
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(d):
			}
		case "ignore":
			ignoring.Add(1)
			defer ignoring.Done()
			time.Sleep(d)
		}
		return map[string]any{"note_id": id}, nil
	})
	h.Func("test.slow_db", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			MS int `json:"ms"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		id, err := writeNote(ctx, c, "slow "+c.ID.String())
		if err != nil {
			return nil, err
		}
		// Only the helper process sleeps: crash and shutdown tests interrupt it there, and the executor
		// that takes the call up then finishes it at once.
		if os.Getenv(helperEnv) == "1" {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			}
		}
		return map[string]any{"note_id": id, "attempt": c.Attempt}, nil
	})
	h.Func("test.bad_output", func(ctx context.Context, c *executor.Call) (any, error) {
		if _, err := writeNote(ctx, c, "bad output "+c.ID.String()); err != nil {
			return nil, err
		}
		return map[string]any{"unexpected": 1}, nil
	})
	h.Func("test.fail", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Kind string `json:"kind"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		id, err := writeNote(ctx, c, "fail "+c.ID.String())
		if err != nil {
			return nil, err
		}
		switch in.Kind {
		case "not_found":
			return nil, executor.NotFound("task %s does not exist", uuid.Nil)
		case "conflict":
			return nil, executor.Conflict("the inspection is locked")
		case "invalid":
			return nil, executor.Invalid("due date is in the past")
		case "error":
			return nil, errors.New("something broke")
		case "panic":
			panic("handler bug")
		case "retryable":
			return nil, executor.Retryable(errors.New("provider unavailable"))
		case "leave_rows_open":
			rows, err := c.DB.Query(ctx, `SELECT generate_series(1, 1000)`)
			if err != nil {
				return nil, err
			}
			rows.Next()
			return map[string]any{"note_id": id}, nil
		case "nul":
			return map[string]any{"note_id": id, "text": "a\x00b"}, nil
		}
		return map[string]any{"note_id": id}, nil
	})
	h.Func("test.keyed", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Key     string `json:"key"`
			Fail    bool   `json:"fail"`
			SleepMS int    `json:"sleep_ms"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		id, err := writeNote(ctx, c, "key "+in.Key)
		if err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(in.SleepMS) * time.Millisecond)
		if in.Fail {
			return nil, executor.Conflict("asked to fail")
		}
		return map[string]any{"note_id": id}, nil
	})
	h.Func("test.safe", func(ctx context.Context, c *executor.Call) (any, error) {
		id, err := writeNote(ctx, c, "safe "+c.ID.String())
		return map[string]any{"note_id": id}, err
	})
	h.Func("test.outside", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			MS int    `json:"ms"`
			To string `json:"to"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		if err := logOutside(outsideLog, c.ID); err != nil {
			return nil, err
		}
		c.RecordOutside(registry.OutsideEffect{Kind: "sms", Target: in.To, Reference: c.ID.String()})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
		}
		return map[string]any{"sent": true}, nil
	})
	h.Func("test.transient", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			FailAttempts int `json:"fail_attempts"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		if c.Attempt <= in.FailAttempts {
			return nil, executor.Retryable(fmt.Errorf("provider unavailable on attempt %d", c.Attempt))
		}
		return map[string]any{"attempt": c.Attempt}, nil
	})
	h.Add("test.not_configured", executor.Handler{
		RequiredEnv: []string{"GEM_TEST_SMS_URL"},
		Run: func(ctx context.Context, c *executor.Call) (any, error) {
			return nil, executor.NotConfigured("no SMS provider is configured", []string{"GEM_TEST_SMS_URL"},
				"Set GEM_TEST_SMS_URL to your provider's endpoint.")
		},
	})
	// xidNote writes a note and returns the id of the transaction it ran in.
	type xidOutput struct {
		NoteID string `json:"note_id"`
		XID    string `json:"xid"`
	}
	xidNote := func(ctx context.Context, c *executor.Call, _ struct{}) (xidOutput, error) {
		var out xidOutput
		err := c.DB.QueryRow(ctx, `INSERT INTO os_notes (title) VALUES ($1) RETURNING id, pg_current_xact_id()::text`,
			c.Tool.Name+" "+c.ID.String()).Scan(&out.NoteID, &out.XID)
		return out, err
	}
	h.Add("test.isolated", executor.Handler{Isolated: true, Run: executor.Typed(xidNote)})
	h.Func("test.xid", executor.Typed(xidNote))
	type typedInput struct {
		N     int    `json:"n"`
		Label string `json:"label"`
	}
	type typedOutput struct {
		N     int      `json:"n"`
		Label string   `json:"label"`
		Tags  []string `json:"tags"`
	}
	h.Func("test.typed", executor.Typed(func(ctx context.Context, c *executor.Call, in typedInput) (*typedOutput, error) {
		if in.Label == "nil" {
			return nil, nil // breaks the output schema: null is not an object
		}
		return &typedOutput{N: in.N, Label: in.Label, Tags: []string{}}, nil
	}))
	h.Func("test.no_db", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Fail bool `json:"fail"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		if in.Fail {
			return nil, executor.Conflict("asked to fail")
		}
		return map[string]any{"ok": true}, nil
	})
	h.Func("test.approve_me", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Fail bool `json:"fail"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		if in.Fail {
			return nil, executor.Conflict("asked to fail")
		}
		return map[string]any{"ok": true}, nil
	})
	h.Func("test.odd_json", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Fail bool `json:"fail"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		if in.Fail {
			return nil, executor.Conflict("refused: a\x00b")
		}
		return json.RawMessage(`{"text": "a\u0000b\ud800c\udc00d\ud83d\ude00"}`), nil
	})
	h.Func("test.settings", func(ctx context.Context, c *executor.Call) (any, error) {
		var sync, app, plans string
		err := c.DB.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('application_name'),
			current_setting('plan_cache_mode')`).Scan(&sync, &app, &plans)
		if err != nil {
			return nil, err
		}
		return map[string]any{"synchronous_commit": sync, "application_name": app, "plan_cache_mode": plans}, nil
	})
	h.Func("test.sql_error", func(ctx context.Context, c *executor.Call) (any, error) {
		var in struct {
			Kind  string `json:"kind"`
			First bool   `json:"first"`
		}
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		id := ""
		if !in.First {
			var err error
			if id, err = writeNote(ctx, c, "sql_error "+c.ID.String()); err != nil {
				return nil, err
			}
		}
		var err error
		switch in.Kind {
		case "unique":
			_, err = c.DB.Exec(ctx, `INSERT INTO os_notes (id, title) VALUES ($1, 'sql_error dup'), ($1, 'sql_error dup')`, uuid.New())
		case "div_zero":
			_, err = c.DB.Exec(ctx, `SELECT 1 / $1::integer`, 0)
		case "undefined_column":
			_, err = c.DB.Exec(ctx, `SELECT no_such_column FROM os_notes WHERE id = $1`, uuid.New())
		case "foreign_key":
			_, err = c.DB.Exec(ctx, `INSERT INTO os_tasks (title, lead_id) VALUES ('sql_error task', $1)`, uuid.New())
		case "check":
			_, err = c.DB.Exec(ctx, `INSERT INTO os_tasks (title, priority) VALUES ('sql_error task', 'whenever')`)
		case "not_null":
			_, err = c.DB.Exec(ctx, `INSERT INTO os_notes (title) VALUES (NULL)`)
		case "guard":
			_, err = c.DB.Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'inspection x is locked' USING ERRCODE = '55000'; END $$`)
		case "bad_text":
			_, err = c.DB.Exec(ctx, `SELECT $1::text::integer`, "twelve")
		case "out_of_range":
			_, err = c.DB.Exec(ctx, `SELECT $1::text::smallint`, "99999")
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"note_id": id}, nil
	})
	return h
}

// testRegistryPath writes the repository's registry plus testdata/test-tools.json to one file.
func testRegistryPath(t testing.TB) string {
	t.Helper()
	var repo, extra struct {
		Version string            `json:"version"`
		Tools   []json.RawMessage `json:"tools"`
	}
	for path, dst := range map[string]any{"../tools.registry.json": &repo, "testdata/test-tools.json": &extra} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, dst))
	}
	repo.Tools = append(repo.Tools, extra.Tools...)
	b, err := json.Marshal(repo)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

type testBundle struct {
	pool       *pgxpool.Pool
	url        string
	regPath    string
	reg        *registry.Registry
	waiter     *gemsql.ReceiptWaiter
	outsideLog string
	// business configures the business pack of executors started after it is set (providers, time zone).
	business businesspack.Config
}

func setup(t *testing.T) (context.Context, *testBundle) {
	t.Helper()
	pool, url := sqltest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := &testBundle{pool: pool, url: url, regPath: testRegistryPath(t), outsideLog: filepath.Join(t.TempDir(), "outside.log")}
	var err error
	b.reg, err = registry.Load(b.regPath)
	require.NoError(t, err)
	b.waiter = gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, b.waiter.Start(ctx))
	t.Cleanup(b.waiter.Stop)
	return ctx, b
}

// testSecretKey is the executors' GEM_SECRET_KEY in tests, and testSecret the password test.secret_login
// accepts.
const (
	testSecretKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testSecret    = "hunter2-planted-secret"
)

// startExecutor starts an in-process executor on the test database; edit changes its config.
func (b *testBundle) startExecutor(t *testing.T, edit func(*executor.Config)) *executor.Executor {
	t.Helper()
	cfg := executor.Config{DatabaseURL: b.url, ID: "test-" + uuid.NewString()[:8], SecretKey: testSecretKey}
	if edit != nil {
		edit(&cfg)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if testing.Verbose() {
		log = log.Level(zerolog.InfoLevel)
	}
	biz := b.business
	if biz.FileStore == "" {
		biz.FileStore = t.TempDir() // never the default .gem/files in the package's folder
	}
	return b.startExecutorWith(t, cfg, b.reg, testHandlers(b.outsideLog, biz), log)
}

// startExecutorWith starts an in-process executor on the test database with the registry, handlers and
// logger given.
func (b *testBundle) startExecutorWith(t *testing.T, cfg executor.Config, reg *registry.Registry, h executor.Handlers, log zerolog.Logger) *executor.Executor {
	t.Helper()
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL, cfg.ID = b.url, "test-"+uuid.NewString()[:8]
	}
	e, err := executor.New(cfg, reg, h, b.pool, log)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

// call inserts a call with plain SQL, as a person would in psql.
func (b *testBundle) call(t *testing.T, ctx context.Context, tool, input string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`, tool, input).Scan(&id))
	return id
}

// wait waits for the receipts of the calls.
func (b *testBundle) wait(t *testing.T, ctx context.Context, ids ...uuid.UUID) map[uuid.UUID]*registry.Receipt {
	t.Helper()
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := b.waiter.Wait(waitCtx, ids)
	require.NoError(t, err, "calls still without a receipt: %v", res.Pending)
	for _, r := range res.Receipts {
		requireGEMOutput(t, r) // every result of a GEM tool in these tests also keeps GEM's contract
	}
	return res.Receipts
}

func (b *testBundle) waitOne(t *testing.T, ctx context.Context, id uuid.UUID) *registry.Receipt {
	t.Helper()
	return b.wait(t, ctx, id)[id]
}

// count returns a single integer from SQL.
func (b *testBundle) count(t *testing.T, ctx context.Context, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

func (b *testBundle) outsideLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(b.outsideLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(data))
}

func decodeDetails(t *testing.T, r *registry.Receipt) map[string]any {
	t.Helper()
	require.NotNil(t, r.Error)
	var d map[string]any
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	return d
}
