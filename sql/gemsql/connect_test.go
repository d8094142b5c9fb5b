package gemsql_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// A server that comes up while NewPool waits is reached; a late proxy stands in for a restarting server.
func TestNewPoolWaitsForTheServer(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	target, err := url.Parse(dbURL)
	require.NoError(t, err)

	// A free port: connections are refused until the proxy listens.
	addr := sqltest.FreeAddr(t)
	viaProxy := *target
	viaProxy.Host = addr

	go func() {
		time.Sleep(400 * time.Millisecond)
		pl, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("proxy: %v", err)
			return
		}
		t.Cleanup(func() { _ = pl.Close() })
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", target.Host)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c) }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()

	var retries atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: viaProxy.String(), ConnectWait: 15 * time.Second,
		OnRetry: func(error, time.Duration) { retries.Add(1) }})
	require.NoError(t, err)
	defer pool.Close()
	require.GreaterOrEqual(t, retries.Load(), int32(1), "the first attempts were refused")
	var one int
	require.NoError(t, pool.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

// Errors that waiting cannot fix end the wait at once, and ConnectWait zero tries once.
func TestNewPoolFailsFastOnPermanentErrors(t *testing.T) {
	t.Parallel()
	admin := sqltest.AdminURL(t)
	ctx := context.Background()

	start := time.Now()
	_, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: sqltest.WithDatabase(admin, "gem_no_such_database"), ConnectWait: time.Minute})
	require.ErrorContains(t, err, "gem_no_such_database")
	require.Less(t, time.Since(start), 5*time.Second)

	refused, _ := url.Parse(admin)
	refused.Host = sqltest.FreeAddr(t)
	var retries atomic.Int32
	_, err = gemsql.NewPool(ctx, gemsql.PoolConfig{URL: refused.String(), OnRetry: func(error, time.Duration) { retries.Add(1) }})
	require.ErrorContains(t, err, "error connecting to the database")
	require.Zero(t, retries.Load())
}

// DatabaseAway tells the database being away (worth waiting for) from everything else, on real errors:
// a refused connection, and a connection the server ends as a restart does.
func TestDatabaseAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, refused := pgx.Connect(ctx, "postgres://gem@"+sqltest.FreeAddr(t)+"/gem?sslmode=disable&connect_timeout=2")
	require.Error(t, refused)
	pool, url := sqltest.NewDB(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, conn.PgConn().PID())
	require.NoError(t, err)
	_, terminated := conn.Exec(ctx, `SELECT 1`)
	require.Error(t, terminated)
	_, afterwards := conn.Exec(ctx, `SELECT 1`)
	require.Error(t, afterwards)

	for _, tt := range []struct {
		err  error
		away bool
	}{
		{refused, true},
		{terminated, true}, // 57P01, as every connection gets when the server restarts
		{afterwards, true}, // the connection the driver closed
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "57P03"}), true}, // starting up or shutting down
		{&pgconn.PgError{Code: "53300"}, true},                            // too many connections
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "58030"}, true},
		{&pgconn.PgError{Code: "28P01"}, false}, // wrong password
		{&pgconn.PgError{Code: "57014"}, false}, // a statement cancelled: the caller's deadline
		{&pgconn.PgError{Code: "08P01"}, false}, // a protocol violation is a bug
		{&pgconn.PgError{Code: "23505"}, false},
		{fmt.Errorf("reading: %w", context.DeadlineExceeded), false},
		{context.Canceled, false},
		{errors.New("executor id in use"), false},
		{nil, false},
	} {
		require.Equal(t, tt.away, gemsql.DatabaseAway(tt.err), "%v", tt.err)
	}
}

// A SessionURL sends the pool's statements without named prepared statements (unless its URL picks a mode)
// and gives session connections their own URL, in pgx's default mode; without one, sessions use the pool's.
func TestSessionURL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, dbURL := sqltest.NewDB(t)
	withParam := func(u, key, value string) string {
		parsed, err := url.Parse(u)
		require.NoError(t, err)
		q := parsed.Query()
		q.Set(key, value)
		parsed.RawQuery = q.Encode()
		return parsed.String()
	}
	sessionURL := withParam(dbURL, "connect_timeout", "7")

	open := func(url, session string) (*pgxpool.Pool, error) {
		pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: url, SessionURL: session, ApplicationName: "gem-session-test"})
		if err == nil {
			t.Cleanup(pool.Close)
		}
		return pool, err
	}

	pooled, err := open(dbURL, sessionURL)
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeCacheDescribe, pooled.Config().ConnConfig.DefaultQueryExecMode)
	session := gemsql.Session(pooled)
	require.Equal(t, 7*time.Second, session.ConnConfig.ConnectTimeout)
	require.Equal(t, pgx.QueryExecModeCacheStatement, session.ConnConfig.DefaultQueryExecMode)
	conn, err := gemsql.ConnectSession(ctx, pooled, "probe")
	require.NoError(t, err)
	var name string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('application_name')`).Scan(&name))
	require.Equal(t, "gem-session-test-probe", name)
	require.NoError(t, conn.Close(ctx))

	chosen, err := open(withParam(dbURL, "default_query_exec_mode", "exec"), sessionURL)
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeExec, chosen.Config().ConnConfig.DefaultQueryExecMode)

	direct, err := open(dbURL, "")
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeCacheStatement, direct.Config().ConnConfig.DefaultQueryExecMode)
	require.Equal(t, direct.Config().ConnConfig.ConnectTimeout, gemsql.Session(direct).ConnConfig.ConnectTimeout)

	_, err = open(dbURL, "postgres://%zz")
	require.ErrorContains(t, err, "GEM_DATABASE_SESSION_URL")

	// A session URL on another database would never hear a receipt: refused at start.
	_, otherURL := sqltest.NewDB(t)
	_, err = open(dbURL, otherURL)
	require.ErrorContains(t, err, "GEM_DATABASE_SESSION_URL does not reach the database DATABASE_URL does")
}
