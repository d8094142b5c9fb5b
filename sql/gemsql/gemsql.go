// Package gemsql is GEM's database layer shared by the brain and the executor: how the migrations are
// applied, connection pools, making calls, reading receipts, and waiting for receipts with LISTEN/NOTIFY.
//
// The core's schema is in sql/migrations/*.sql (the packs' in their folders; sql/schema.sql is all of it);
// docs/receipts.md describes the tables and views for auditing.
package gemsql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ReceiptChannel is the LISTEN channel a receipt insert notifies. The payload is the call id alone, a
// wake-up: any database login may LISTEN and NOTIFY it, so a listener reads the receipt itself, under its
// own role's row-level security.
const ReceiptChannel = "gem_receipt"

// ErrNotFound is returned when what was asked for (a call, a receipt, a caller, a device) does not exist
// (errors.Is matches it; its code is ENOTFOUND).
var ErrNotFound error = &Error{Code: ENOTFOUND, Message: "not found"}

// DBTX is what the query functions need: a pool, a connection or a transaction, so callers can combine
// them in their own transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PoolConfig configures NewPool.
type PoolConfig struct {
	// URL is the PostgreSQL connection URL (DATABASE_URL). Required.
	URL string
	// SessionURL (GEM_DATABASE_SESSION_URL) is where the connections that need a session of their own go:
	// LISTEN, session advisory locks, River's pool (see Session). Set it when URL goes through a pooler in
	// transaction mode; the pool's statements are then sent without named prepared statements (pgx's
	// cache_describe mode), unless URL chooses a default_query_exec_mode itself. Empty means URL.
	SessionURL string
	// ApplicationName shows in pg_stat_activity. Defaults to "gem".
	ApplicationName string
	// MaxConns is the pool's size. Defaults to 20.
	MaxConns int32
	// ConnectWait is how long NewPool keeps trying while the server cannot be reached or is starting up
	// (a restart, a machine booting, a container coming up before its database). Zero tries once. A server
	// that answers with an error that waiting cannot fix (a wrong password, a missing database) ends the
	// wait at once.
	ConnectWait time.Duration
	// OnRetry, when set, is told about each failed attempt before NewPool waits and tries again.
	OnRetry func(err error, wait time.Duration)
}

// ConnectWaitDefault is how long the executor and the brain wait for the database at start-up
// (GEM_DB_CONNECT_WAIT).
const ConnectWaitDefault = time.Minute

// NewPool opens a connection pool and checks that the database answers.
func NewPool(ctx context.Context, cfg PoolConfig) (*pgxpool.Pool, error) {
	if cfg.URL == "" {
		return nil, errors.New("database URL is empty (set DATABASE_URL)")
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("error parsing database URL: %w", err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	} else if pc.MaxConns < 20 {
		pc.MaxConns = 20
	}
	name := cfg.ApplicationName
	if name == "" {
		name = "gem"
	}
	if _, ok := pc.ConnConfig.RuntimeParams["application_name"]; !ok {
		pc.ConnConfig.RuntimeParams["application_name"] = name
	}
	var session *pgxpool.Config
	if cfg.SessionURL != "" && cfg.SessionURL != cfg.URL {
		if session, err = sessionConfig(cfg.SessionURL, pc); err != nil {
			return nil, err
		}
		if !strings.Contains(cfg.URL, "default_query_exec_mode") {
			// A transaction pooler runs each transaction on whichever server connection is free, where a
			// statement prepared on another is unknown (26000) or already taken (42P05).
			pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("error creating database pool: %w", err)
	}
	deadline := time.Now().Add(cfg.ConnectWait)
	pause := 100 * time.Millisecond
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = pool.Ping(pingCtx)
		cancel()
		if err == nil && session != nil {
			if err = checkSession(ctx, pool, session); err != nil {
				pool.Close()
				return nil, err
			}
			rememberSession(pool, session)
		}
		if err == nil {
			return pool, nil
		}
		// A ping that ran out of its own time (ctx still alive) is a server too busy to answer: wait too.
		away := DatabaseAway(err) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if !away || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			pool.Close()
			return nil, fmt.Errorf("error connecting to the database: %w", err)
		}
		if cfg.OnRetry != nil {
			cfg.OnRetry(err, pause)
		}
		select {
		case <-ctx.Done():
			pool.Close()
			return nil, fmt.Errorf("error connecting to the database: %w", err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}
