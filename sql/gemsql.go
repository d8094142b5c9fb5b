// Package gemsql is GEM's database layer shared by the brain and the executor (import path
// github.com/gemhq/gem/sql): the embedded migrations and how they are applied, connection pools, making
// calls, reading receipts, and waiting for receipts with LISTEN/NOTIFY.
//
// The schema is in migrations/*.sql; docs/receipts.md describes the tables and views for auditing.
package gemsql

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// ReceiptChannel is the LISTEN channel a receipt insert notifies; the payload is the call id.
const ReceiptChannel = "gem_receipt"

// ErrNotFound is returned when a call or receipt does not exist.
var ErrNotFound = errors.New("not found")

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
	// ApplicationName shows in pg_stat_activity. Defaults to "gem".
	ApplicationName string
	// MaxConns is the pool's size. Defaults to 20.
	MaxConns int32
}

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
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("error creating database pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to the database: %w", err)
	}
	return pool, nil
}
