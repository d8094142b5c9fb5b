package gemsql

import (
	"context"
	"errors"
	"fmt"
	"github.com/gemhq/gem/sql/legacy"
	"github.com/gemhq/gem/sql/migrations"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateLockKey is the advisory lock that serialises migrations, so processes started together (an
// executor and a brain, two executors) do not migrate at the same time.
const migrateLockKey = 0x67656d5f6d696772 // "gem_migr"

// legacyTable is the goose table of the migrations made before the lines began (sql/legacy/migrations): a
// database that has it was made by them.
const legacyTable = "gem_schema_migrations"

// A Line is a migration line (as River keeps its own): goose migrations applied in order and recorded in a
// table of their own. The core's is CoreLine; each tool pack has one (packs.Lines), run after the core's.
type Line struct {
	// Name names the line in logs and in MigrateResult ("core", "os", ...).
	Name string
	// Table is the goose table that records the line's applied migrations.
	Table string
	// Files are the line's migrations (NNNNN_name.sql, goose's format).
	Files fs.FS
	// FromLegacy is the last of the line's migrations that only restates what the legacy migrations made:
	// a database the legacy migrations made records up to it as applied without running it. Zero for a
	// line that began after them.
	FromLegacy int64
}

// CoreLine is the core's migration line: calls, receipts, callers, devices, approvals, limits, the brain's
// runs and sessions, agents and skills.
func CoreLine() Line {
	return Line{Name: "core", Table: "gem_core_migrations", Files: Migrations(), FromLegacy: 1}
}

// MigrateResult says what Migrate applied.
type MigrateResult struct {
	// River lists the River migration versions applied.
	River []int
	// GEM lists the GEM migration files applied, each as LINE/FILE.
	GEM []string
}

// Migrate brings the database up to date under one advisory lock: River's migrations (rivermigrate), then the
// core's line, then lines in order (the packs'). A database the legacy migrations made is first brought to
// their end and adopts the lines (adoptLines). It is safe to run at every start.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, lines ...Line) (*MigrateResult, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, separate := separateSession(pool)
	if !separate && pool.Config().MaxConns < 2 {
		// The lock's connection is held while River's migrator and goose take another: a pool of one would
		// wait for itself forever.
		cfg, separate = pool.Config(), true
	}
	if separate {
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

	all := append([]Line{CoreLine()}, lines...)
	// A database the legacy migrations made records at least their first. Their table with none applied is a
	// legacy binary's start that failed (on a database the lines made, its first migration cannot run): it
	// made nothing.
	legacy, err := latestVersion(ctx, pool, legacyTable)
	if err != nil {
		return nil, err
	}
	if legacy >= 1 {
		applied, err := upLine(ctx, pool, logger, Line{Name: "legacy", Table: legacyTable, Files: LegacyMigrations()})
		res.GEM = append(res.GEM, applied...)
		if err != nil {
			return res, err
		}
		if err := adoptLines(ctx, pool, all); err != nil {
			return res, err
		}
	}
	for _, line := range all {
		applied, err := upLine(ctx, pool, logger, line)
		res.GEM = append(res.GEM, applied...)
		if err != nil {
			return res, err
		}
	}
	// The months ahead, as executors make them hourly: a database migrated and not yet served takes calls.
	if _, err := EnsureMonths(ctx, pool, time.Now()); err != nil {
		return res, err
	}
	return res, nil
}

// MigrationStatus reports the core's migrations and those of lines, and whether each is applied.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool, lines ...Line) ([]*goose.MigrationStatus, error) {
	var all []*goose.MigrationStatus
	for _, line := range append([]Line{CoreLine()}, lines...) {
		provider, err := gooseProvider(pool, nil, line)
		if err != nil {
			return nil, err
		}
		status, err := provider.Status(ctx)
		_ = provider.Close()
		if err != nil {
			return nil, fmt.Errorf("error reading the %s line's migrations: %w", line.Name, err)
		}
		all = append(all, status...)
	}
	return all, nil
}

// Migrations returns the core line's migration files.
func Migrations() fs.FS {
	return migrations.FS
}

// LegacyMigrations returns the migrations made before the lines began: frozen, run only to bring a database
// they made to their end.
func LegacyMigrations() fs.FS {
	sub, _ := fs.Sub(legacy.Migrations, "migrations")
	return sub
}

// upLine applies a line's pending migrations and returns them as LINE/FILE.
func upLine(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, line Line) ([]string, error) {
	provider, err := gooseProvider(pool, logger, line)
	if err != nil {
		return nil, err
	}
	defer provider.Close()
	applied, err := provider.Up(ctx)
	var names []string
	for _, r := range applied {
		names = append(names, line.Name+"/"+r.Source.Path)
	}
	if err != nil {
		return names, fmt.Errorf("error applying the %s line's migrations: %w", line.Name, err)
	}
	return names, nil
}

// adoptLines records, for each line the legacy migrations made (FromLegacy above 0), its migrations up to
// FromLegacy as applied without running them: the legacy migrations, which made this database, already made
// what they make. A line's table may already exist, at any version (a start stopped part way); each line is
// brought to FromLegacy from where it stands, all in one transaction. A line that began after them
// (FromLegacy 0) is left to run from its first migration.
func adoptLines(ctx context.Context, pool *pgxpool.Pool, lines []Line) (err error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("error adopting the migration lines: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	for _, line := range lines {
		if line.FromLegacy == 0 {
			continue
		}
		store, err := database.NewStore(goose.DialectPostgres, line.Table)
		if err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, line.Table).Scan(&exists); err != nil {
			return fmt.Errorf("error reading whether %s exists: %w", line.Table, err)
		}
		next := int64(0) // goose's own table starts at version 0
		if !exists {
			err = store.CreateVersionTable(ctx, tx)
		} else {
			var latest int64
			latest, err = store.GetLatestVersion(ctx, tx)
			if errors.Is(err, database.ErrVersionNotFound) {
				latest, err = -1, nil
			}
			next = latest + 1
		}
		for v := next; err == nil && v <= line.FromLegacy; v++ {
			err = store.Insert(ctx, tx, database.InsertRequest{Version: v})
		}
		if err != nil {
			return fmt.Errorf("error recording the %s line's migrations as made by the legacy migrations: %w", line.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("error adopting the migration lines: %w", err)
	}
	return nil
}

// latestVersion is the last migration a goose table records: 0 when it records none or does not exist.
func latestVersion(ctx context.Context, pool *pgxpool.Pool, table string) (int64, error) {
	exists, err := tableExists(ctx, pool, table)
	if err != nil || !exists {
		return 0, err
	}
	store, err := database.NewStore(goose.DialectPostgres, table)
	if err != nil {
		return 0, err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	v, err := store.GetLatestVersion(ctx, db)
	if errors.Is(err, database.ErrVersionNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("error reading %s: %w", table, err)
	}
	return v, nil
}

func tableExists(ctx context.Context, pool *pgxpool.Pool, table string) (bool, error) {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return false, fmt.Errorf("error reading whether %s exists: %w", table, err)
	}
	return exists, nil
}

func gooseProvider(pool *pgxpool.Pool, logger *slog.Logger, line Line) (*goose.Provider, error) {
	db := stdlib.OpenDBFromPool(pool)
	opts := []goose.ProviderOption{goose.WithTableName(line.Table), goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger.With("line", line.Name)))
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, line.Files, opts...)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("error creating the %s line's migration provider: %w", line.Name, err)
	}
	return provider, nil
}
