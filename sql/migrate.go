package gemsql

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateLockKey is the advisory lock that serialises migrations, so processes started together (an
// executor and a brain, two executors) do not migrate at the same time.
const migrateLockKey = 0x67656d5f6d696772 // "gem_migr"

// gooseTable is the table in which goose records GEM's applied migrations.
const gooseTable = "gem_schema_migrations"

// MigrateResult says what Migrate applied.
type MigrateResult struct {
	// River lists the River migration versions applied.
	River []int
	// GEM lists the GEM migration files applied.
	GEM []string
}

// Migrate brings the database up to date: River's migrations (rivermigrate), then GEM's embedded migrations
// (goose), under one advisory lock. It is safe to run at every start.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (*MigrateResult, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg, ok := separateSession(pool); ok {
		// Migrations hold a session advisory lock and run DDL: behind a transaction pooler, both go to the
		// session URL.
		cfg.MaxConns, cfg.MinConns = 2, 0
		session, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("error connecting to migrate: %w", err)
		}
		defer session.Close()
		pool = session
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error acquiring a connection to migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLockKey)); err != nil {
		return nil, fmt.Errorf("error taking the migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLockKey))
	}()

	res := &MigrateResult{}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("error creating River migrator: %w", err)
	}
	riverRes, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("error applying River migrations: %w", err)
	}
	for _, v := range riverRes.Versions {
		res.River = append(res.River, v.Version)
	}

	provider, err := gooseProvider(pool, logger)
	if err != nil {
		return nil, err
	}
	defer provider.Close()
	applied, err := provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("error applying GEM migrations: %w", err)
	}
	for _, r := range applied {
		res.GEM = append(res.GEM, r.Source.Path)
	}
	// The months ahead, as executors make them hourly: a database migrated and not yet served takes calls.
	if _, err := EnsureMonths(ctx, pool, time.Now()); err != nil {
		return res, err
	}
	return res, nil
}

// MigrationStatus reports GEM's migrations and whether each is applied.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) ([]*goose.MigrationStatus, error) {
	provider, err := gooseProvider(pool, nil)
	if err != nil {
		return nil, err
	}
	defer provider.Close()
	return provider.Status(ctx)
}

// Migrations returns the embedded migration files (for tests that need a fingerprint of the schema).
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationsFS, "migrations")
	return sub
}

func gooseProvider(pool *pgxpool.Pool, logger *slog.Logger) (*goose.Provider, error) {
	db := stdlib.OpenDBFromPool(pool)
	opts := []goose.ProviderOption{goose.WithTableName(gooseTable), goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, Migrations(), opts...)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("error creating migration provider: %w", err)
	}
	return provider, nil
}
