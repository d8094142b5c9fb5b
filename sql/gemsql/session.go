package gemsql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/google/uuid"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sessions maps a pool opened with a SessionURL to the configuration of its session connections. The key
// is weak and the entry goes with its pool, so tests that open many pools do not keep them.
var sessions sync.Map // weak.Pointer[pgxpool.Pool] → *pgxpool.Config

func rememberSession(pool *pgxpool.Pool, cfg *pgxpool.Config) {
	key := weak.Make(pool)
	sessions.Store(key, cfg)
	runtime.AddCleanup(pool, func(k weak.Pointer[pgxpool.Pool]) { sessions.Delete(k) }, key)
}

// sessionConfig parses the session URL into a pool configuration that keeps the statement pool's
// application name and sizes, and pgx's default statement mode (a session may prepare statements).
func sessionConfig(url string, statements *pgxpool.Config) (*pgxpool.Config, error) {
	sc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error parsing the session database URL (GEM_DATABASE_SESSION_URL): %w", err)
	}
	sc.MaxConns, sc.MinConns = statements.MaxConns, statements.MinConns
	if _, ok := sc.ConnConfig.RuntimeParams["application_name"]; !ok {
		sc.ConnConfig.RuntimeParams["application_name"] = statements.ConnConfig.RuntimeParams["application_name"]
	}
	return sc, nil
}

// checkSession makes sure the session URL reaches the database the pool does: a notification sent through
// the pool must reach a LISTEN on the session URL, or receipts would never be heard.
func checkSession(ctx context.Context, pool *pgxpool.Pool, session *pgxpool.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a notification arrives in milliseconds
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, session.ConnConfig)
	if err != nil {
		return fmt.Errorf("error connecting to the session database URL (GEM_DATABASE_SESSION_URL): %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	channel := "gem_session_check_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("error listening on the session database URL (GEM_DATABASE_SESSION_URL): %w", err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, '')", channel); err != nil {
		return fmt.Errorf("error notifying through the database URL: %w", err)
	}
	if _, err := conn.WaitForNotification(ctx); err != nil {
		return fmt.Errorf("GEM_DATABASE_SESSION_URL does not reach the database DATABASE_URL does: a notification sent "+
			"through DATABASE_URL did not arrive through it (%w); point it at that database directly or through a "+
			"session-mode pool, not a transaction-mode one", err)
	}
	return nil
}

// Session returns a copy of the configuration for connections that must keep one server session for their
// life: a LISTEN, a session advisory lock, River's pool (its notifier LISTENs, and it sets
// synchronous_commit at connect). It is pool's own configuration unless pool was opened with a SessionURL.
func Session(pool *pgxpool.Pool) *pgxpool.Config {
	if cfg, ok := separateSession(pool); ok {
		return cfg
	}
	return pool.Config()
}

// separateSession returns a copy of pool's session configuration when it has one apart from its own.
func separateSession(pool *pgxpool.Pool) (*pgxpool.Config, bool) {
	if cfg, ok := sessions.Load(weak.Make(pool)); ok {
		return cfg.(*pgxpool.Config).Copy(), true
	}
	return nil, false
}

// ConnectSession opens one connection with pool's session configuration, named application_name-suffix
// in pg_stat_activity.
func ConnectSession(ctx context.Context, pool *pgxpool.Pool, suffix string) (*pgx.Conn, error) {
	cfg := Session(pool).ConnConfig
	if suffix != "" {
		cfg.RuntimeParams["application_name"] += "-" + suffix
	}
	return pgx.ConnectConfig(ctx, cfg)
}
