package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestStorageErrorsAreCoded: the storage's functions (brain/postgres and sql) return PostgreSQL's failures
// with the code their caller acts on, against a real server, so no caller translates a driver's error. The
// doors read the code once (brain.AsError).
func TestStorageErrorsAreCoded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := sqltest.NewDB(t)

	// away is a connection whose backend the server has ended (an administrator, a restart, a failover).
	away := func(t *testing.T) *pgx.Conn {
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		var ended bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, conn.PgConn().PID()).Scan(&ended))
		require.True(t, ended)
		return conn
	}
	run := func(key string, fp []byte) *brain.Run {
		return &brain.Run{ID: uuid.Must(uuid.NewV7()), Message: "hello", Mode: brain.ModeEnqueue, Status: brain.RunPlanning,
			RequestedBy: "ann", IdempotencyKey: key, Fingerprint: fp}
	}
	call := func(input string) gemsql.CallInsertParams {
		return gemsql.CallInsertParams{ToolName: "os.create_note", Input: json.RawMessage(input), IdempotencyKey: "k1", RequestedBy: "ann"}
	}
	// What a client of the brain must not learn of the database: its host, port and user.
	refusedAddr := sqltest.FreeAddr(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	secret := []string{u.Hostname(), u.Port(), u.User.Username(), refusedAddr}
	// The first run and call of the key tests.
	require.NoError(t, postgres.RunInsert(ctx, pool, run("r1", []byte{1})))
	_, err = gemsql.CallInsert(ctx, pool, call(`{"title": "a"}`))
	require.NoError(t, err)
	_, err = postgres.AgentCreate(ctx, pool, &brain.AgentParams{Slug: ptr("ann-agent"), Name: ptr("Ann's")})
	require.NoError(t, err)

	for _, tt := range []struct {
		name    string
		do      func(t *testing.T) error
		code    string
		message string
		details map[string]any
	}{
		{"a connection the server ended is the database away", func(t *testing.T) error {
			_, err := postgres.RunGet(ctx, away(t), uuid.New(), false)
			return err
		}, brain.EUNAVAILABLE, "the database cannot be reached", nil},
		{"so it is for the sql module's functions", func(t *testing.T) error {
			_, err := gemsql.CallGet(ctx, away(t), uuid.New())
			return err
		}, brain.EUNAVAILABLE, "the database cannot be reached", nil},
		{"a server that refuses connections is away", func(t *testing.T) error {
			refused, err := pgxpool.New(ctx, "postgres://gem@"+refusedAddr+"/gem?connect_timeout=2")
			require.NoError(t, err) // it connects when used
			defer refused.Close()
			_, err = postgres.AgentList(ctx, refused)
			return err
		}, brain.EUNAVAILABLE, "the database cannot be reached", nil},
		{"a NUL in text is invalid", func(t *testing.T) error {
			r := run("", nil)
			r.Message = "a\x00b"
			return postgres.RunInsert(ctx, pool, r)
		}, brain.EINVALID, "the request holds text the database cannot store: ", map[string]any{"sqlstate": "22021"}},
		{"a \\u0000 in jsonb is invalid", func(t *testing.T) error {
			return postgres.RunEventAdd(ctx, pool, uuid.New(), postgres.EventText, map[string]string{"text": "a\x00b"})
		}, brain.EINVALID, "the request holds text the database cannot store: ", map[string]any{"sqlstate": "22P05"}},
		{"a run that does not exist is not found", func(t *testing.T) error {
			_, err := postgres.RunGet(ctx, pool, uuid.New(), false)
			return err
		}, brain.ENOTFOUND, "no run ", nil},
		{"a call that does not exist is not found", func(t *testing.T) error {
			_, err := gemsql.CallGet(ctx, pool, uuid.New())
			return err
		}, brain.ENOTFOUND, "not found", nil},
		{"an agent that exists is a conflict", func(t *testing.T) error {
			_, err := postgres.AgentCreate(ctx, pool, &brain.AgentParams{Slug: ptr("ann-agent"), Name: ptr("Ann's")})
			return err
		}, brain.ECONFLICT, `agent "ann-agent" already exists`, nil},
		{"a run's key used with another request is reused", func(t *testing.T) error {
			return postgres.RunInsert(ctx, pool, run("r1", []byte{2}))
		}, brain.EKEYREUSED, "", nil},
		{"a call's key used with another input is reused", func(t *testing.T) error {
			_, err := gemsql.CallInsert(ctx, pool, call(`{"title": "b"}`))
			return err
		}, brain.EKEYREUSED, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(t)
			require.Error(t, err)
			e := brain.AsError(err)
			require.Equal(t, tt.code, e.Code, "%v", err)
			require.Equal(t, tt.code, brain.ErrorCode(err))
			require.Contains(t, e.Message, tt.message)
			if tt.details != nil {
				require.Equal(t, tt.details, e.Details)
			}
			if tt.code == brain.EUNAVAILABLE {
				// The HTTP answer (the error as JSON) names nothing of the connection; the log keeps it (Error).
				require.Equal(t, tt.message, e.Message)
				answer, err := json.Marshal(e)
				require.NoError(t, err)
				for _, s := range secret {
					require.NotContains(t, string(answer), s)
				}
			}
			// Coded where it is returned: reading it raw finds the same code.
			var be *brain.Error
			var se *gemsql.Error
			require.True(t, errors.As(err, &be) || errors.As(err, &se), "%T %v is not coded", err, err)
		})
	}

	t.Run("a run's key repeated with the same request is that run", func(t *testing.T) {
		first := run("r2", []byte{3})
		require.NoError(t, postgres.RunInsert(ctx, pool, first))
		var repeat *postgres.RepeatedRequest
		require.ErrorAs(t, postgres.RunInsert(ctx, pool, run("r2", []byte{3})), &repeat)
		require.Equal(t, first.ID, repeat.RunID)
	})
	t.Run("the caller's own cancellation is its own", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, err := postgres.RunGet(cancelled, pool, uuid.New(), false)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, brain.EINTERNAL, gemsql.ErrorCode(err))
	})
}

func ptr[T any](v T) *T { return &v }
