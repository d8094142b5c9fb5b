package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The bare River floor: what a River user writes without GEM. Two job kinds: a no-op, and one that inserts
// a receipt row, notifies and completes its job in one transaction (River's documented JobCompleteTx).
// It runs with the same River settings as GEM's executor (see riverConfig).

type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "bench.noop" }

type receiptArgs struct {
	N int `json:"n"`
}

func (receiptArgs) Kind() string { return "bench.receipt" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

type receiptWorker struct {
	river.WorkerDefaults[receiptArgs]
	pool *pgxpool.Pool
}

func (w *receiptWorker) Work(ctx context.Context, job *river.Job[receiptArgs]) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `WITH r AS (INSERT INTO bench_receipts (job_id, status, result) VALUES ($1, 'succeeded', $2))
		SELECT pg_notify('bench_receipt', $1::text)`, job.ID, fmt.Sprintf(`{"n": %d}`, job.Args.N)); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// riverFloorSchema migrates a database for the bare River floor: River's tables and a receipts table.
func riverFloorSchema(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("error applying River's migrations: %w", err)
	}
	_, err = pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_receipts (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		job_id bigint NOT NULL UNIQUE,
		status text NOT NULL,
		result jsonb NOT NULL,
		created_at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	return err
}

// riverConfig is the River configuration both the floor worker and the floor's inserting client use:
// GEM's executor's own settings, so the difference measured is GEM's work.
func riverConfig(workers *river.Workers) *river.Config {
	cfg := &river.Config{
		// The insert notification of an insert-only client is rate-limited by FetchCooldown too.
		FetchCooldown:     executor.FetchCooldownDefault,
		FetchPollInterval: executor.FetchPollIntervalDefault,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if workers != nil {
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: executor.MaxWorkersDefault}}
	}
	return cfg
}

// runRiverWorker is the hidden role "river-worker": a River client working both bench kinds on
// DATABASE_URL until SIGTERM. It prints "ready" once started.
func runRiverWorker(stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Two pools, as GEM's executor has: River's own commits do not wait for the disk (what River does there is
	// redone if a crash loses it), the receipts' transactions do.
	pc, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	pc.MinConns = min(4, pc.MaxConns) // as GEM's executor keeps its connections warm
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer pool.Close()
	rc := pc.Copy()
	rc.MinConns = 3
	rc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	riverPool, err := pgxpool.NewWithConfig(ctx, rc)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer riverPool.Close()
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	river.AddWorker(workers, &receiptWorker{pool: pool})
	client, err := river.NewClient(riverpgxv5.New(riverPool), riverConfig(workers))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := client.Start(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// riverInserter inserts bench jobs like a River user's application: an insert-only client.
type riverInserter struct {
	client *river.Client[pgx.Tx]
}

func newRiverInserter(pool *pgxpool.Pool) (*riverInserter, error) {
	client, err := river.NewClient(riverpgxv5.New(pool), riverConfig(nil))
	if err != nil {
		return nil, err
	}
	return &riverInserter{client: client}, nil
}

// insertReceipt inserts one receipt job and returns its id.
func (r *riverInserter) insertReceipt(ctx context.Context, n int) (string, error) {
	res, err := r.client.Insert(ctx, receiptArgs{N: n}, nil)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(res.Job.ID), nil
}

// insertMany queues n jobs of one kind.
func (r *riverInserter) insertMany(ctx context.Context, n int, receipt bool) error {
	const chunk = 2000
	for done := 0; done < n; done += chunk {
		var params []river.InsertManyParams
		for i := done; i < min(done+chunk, n); i++ {
			if receipt {
				params = append(params, river.InsertManyParams{Args: receiptArgs{N: i}})
			} else {
				params = append(params, river.InsertManyParams{Args: noopArgs{N: i}})
			}
		}
		if _, err := r.client.InsertManyFast(ctx, params); err != nil {
			return err
		}
	}
	return nil
}
