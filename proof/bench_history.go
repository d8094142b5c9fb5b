package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The history bench: the executor's latency and drain on empty tables, then on a database with years of
// receipts behind it and a backlog of queued calls (docs/benchmarks.md, "History").

const (
	scHistEmpty = "GEM, empty tables"
	scHistFull  = "GEM, with history"
	drHistEmpty = "GEM drain, empty tables"
	drHistFull  = "GEM drain, behind a backlog with history"
)

// historyResult is what the history bench measured besides latency (in benchResult.Latency).
type historyResult struct {
	Receipts    int     `json:"receipts"`     // calls and receipts seeded as history
	Backlog     int     `json:"backlog"`      // calls queued before the history drain
	Months      int     `json:"months"`       // months the history spans
	SeedSeconds float64 `json:"seed_seconds"` // seeding the history (COPY-free: INSERT … SELECT generate_series)
	// BytesOnDisk is the size of the calls and receipts tables (with indexes) after seeding.
	BytesOnDisk  int64        `json:"bytes_on_disk"`
	EmptyDrain   float64      `json:"empty_drain_per_second"`
	HistoryDrain float64      `json:"history_drain_per_second"`
	EmptyCalls   int          `json:"empty_drain_calls"`
	Audit        []auditQuery `json:"audit"`
}

// auditQuery is one of the audit queries the docs give, timed on the history.
type auditQuery struct {
	Name   string        `json:"name"`
	Median time.Duration `json:"median"`
	Plan   string        `json:"plan"`
}

// benchHistory runs the executor on an empty database and on one seeded with cfg.History receipts over
// twelve months and cfg.Backlog queued calls, in this run, and times the audit queries of the docs there.
func benchHistory(ctx context.Context, cfg benchConfig, res *benchResult, c *cluster, bins binaries, prefix string, progress func(string, ...any)) error {
	h := &historyResult{Receipts: cfg.History, Backlog: cfg.Backlog, Months: 12}
	res.History = h
	// The same backlog on both, so the ratio is the history's alone (a larger backlog drains slower by itself).
	emptyCalls := cfg.Backlog
	h.EmptyCalls = emptyCalls
	for _, withHistory := range []bool{false, true} {
		name := prefix + "_empty"
		if withHistory {
			name = prefix + "_history"
		}
		dbURL, err := c.freshDatabase(ctx, name)
		if err != nil {
			return err
		}
		err = func() error {
			defer func() { _ = c.dropDatabase(context.Background(), name) }()
			pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-bench-history", MaxConns: 20})
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := warmPool(ctx, pool, 16); err != nil {
				return err
			}
			if _, err := gemsql.Migrate(ctx, pool, nil, packs.Lines()...); err != nil {
				return err
			}
			// Nothing left to write out from what came before (the other database, the seeding): the
			// checkpointer flushing gigabytes during a measurement is not what a call costs.
			checkpoint := func() error { _, err := pool.Exec(ctx, `CHECKPOINT`); return err }
			if err := checkpoint(); err != nil {
				return err
			}
			scenario, drain, backlog := scHistEmpty, &h.EmptyDrain, emptyCalls
			if withHistory {
				scenario, drain, backlog = scHistFull, &h.HistoryDrain, cfg.Backlog
				start := time.Now()
				progress("history: seeding %d calls and receipts over %d months", cfg.History, h.Months)
				if err := seedHistory(ctx, pool, cfg.History, h.Months, progress); err != nil {
					return fmt.Errorf("seeding history: %w", err)
				}
				h.SeedSeconds = time.Since(start).Seconds()
				if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size('core_tool_calls') + pg_total_relation_size('core_tool_receipts')
					+ coalesce((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits
					            WHERE inhparent IN ('core_tool_calls'::regclass, 'core_tool_receipts'::regclass)), 0)`).Scan(&h.BytesOnDisk); err != nil {
					return err
				}
				progress("history: seeded in %.0f s, %.1f GB on disk", h.SeedSeconds, float64(h.BytesOnDisk)/1e9)
				if err := checkpoint(); err != nil {
					return err
				}
			}
			if err := historyLatency(ctx, cfg, res, bins, dbURL, pool, scenario, progress); err != nil {
				return err
			}
			if withHistory {
				if h.Audit, err = timeAuditQueries(ctx, pool); err != nil {
					return err
				}
				for _, q := range h.Audit {
					progress("history: audit query %q: %.2f ms", q.Name, ms(q.Median))
				}
			}
			rate, err := drainBacklog(ctx, cfg, bins, dbURL, pool, backlog, progress)
			*drain = rate
			if err == nil {
				progress("%s: %d calls, %.0f calls/s", map[bool]string{false: drHistEmpty, true: drHistFull}[withHistory], backlog, rate)
			}
			return err
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// historyLatency measures one executor's sequential and open-loop latency on os.health_check.
func historyLatency(ctx context.Context, cfg benchConfig, res *benchResult, bins binaries, dbURL string, pool *pgxpool.Pool,
	scenario string, progress func(string, ...any)) (err error) {
	exec, err := startExecutor(bins, dbURL, "bench-history-latency", nil, cfg.Log, pool, true)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := exec.stop(40 * time.Second); err == nil {
			err = stopErr
		}
	}()
	l, err := listen(ctx, dbURL, gemsql.ReceiptChannel)
	if err != nil {
		return err
	}
	defer l.close()
	return measureLatency(ctx, cfg, res, scenario, healthCheck(pool, l), vacuum(pool, "river_job", "core_tool_calls", "core_tool_receipts"), progress)
}

// drainBacklog queues n calls with no executor running, then starts one and returns calls per second
// from the first call's start to the last one's completion (awaitDrain).
func drainBacklog(ctx context.Context, cfg benchConfig, bins binaries, dbURL string, pool *pgxpool.Pool, n int, progress func(string, ...any)) (float64, error) {
	var before int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&before); err != nil {
		return 0, err
	}
	// In transactions of 100,000: one huge one would hold a million notifications and row locks.
	for done := 0; done < n; done += 100_000 {
		if _, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input) SELECT 'os.health_check', '{}' FROM generate_series(1, $1)`,
			min(100_000, n-done)); err != nil {
			return 0, err
		}
	}
	if err := vacuum(pool, "river_job", "core_tool_calls")(ctx); err != nil {
		return 0, err
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return 0, err
	}
	progress("history: %d calls queued; draining", n)
	machine0 := machineCPU()
	exec, err := startExecutor(bins, dbURL, "bench-history-drain", nil, cfg.Log, pool, false)
	if err != nil {
		return 0, err
	}
	defer func() { _ = exec.stop(40 * time.Second) }()
	run, err := awaitDrain(ctx, pool, before, n, exec, machine0)
	return run.rate, err
}

// seedHistory writes n calls with their receipts, spread evenly over the last `months` whole months and
// this month so far, as the executor would have: a mix of tools, one call in 33 failed, each receipt in its
// call's month. It makes the past months' partitions (a fresh database's history before partitioning is one
// empty _p_before partition, which it replaces) and writes with triggers off (session_replication_role):
// this is history, not calls to run.
func seedHistory(ctx context.Context, pool *pgxpool.Pool, n, months int, progress func(string, ...any)) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -months, 0)
	if _, err := conn.Exec(ctx, `
		DO $$
		DECLARE t text; first timestamptz := date_trunc('month', now() - interval '`+fmt.Sprint(months)+` months', 'UTC');
		        m timestamptz;
		BEGIN
		    FOREACH t IN ARRAY gem_partitioned_tables() LOOP
		        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', t, t || '_p_before');
		        EXECUTE format('DROP TABLE %I', t || '_p_before');
		    END LOOP;
		    FOR m IN SELECT generate_series(first, now(), interval '1 month') LOOP
		        PERFORM gem_ensure_month(m);
		    END LOOP;
		    FOREACH t IN ARRAY gem_partitioned_tables() LOOP
		        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (MINVALUE) TO (%L)', t || '_p_before', t, gem_uuid_v7_floor(first));
		        PERFORM gem_name_partition_keys(t || '_p_before');
		    END LOOP;
		END $$`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `RESET session_replication_role`) }()
	// Chunks of about 500,000 calls, each a stretch of time, oldest first.
	span := now.Sub(first)
	const chunk = 500_000
	for done := 0; done < n; done += chunk {
		size := min(chunk, n-done)
		from := first.Add(time.Duration(float64(span) * float64(done) / float64(n)))
		to := first.Add(time.Duration(float64(span) * float64(done+size) / float64(n)))
		step := to.Sub(from) / time.Duration(size)
		tag, err := conn.Exec(ctx, `
			WITH calls AS (
			    INSERT INTO core_tool_calls (id, tool_name, input, status, attempt, worker, requested_by, created_at, started_at,
			                                 finished_at, error_code, error)
			    SELECT encode(overlay(set_bit(set_bit(uuid_send(gen_random_uuid()), 52, 1), 53, 1)
			                          PLACING substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid,
			           tool, input, status, 1, 'bench-history', 'bench', at, at, at + interval '3 ms',
			           CASE WHEN status = 'failed' THEN 'handler_error' END, CASE WHEN status = 'failed' THEN 'seeded failure' END
			    FROM (SELECT $1::timestamptz + g * $2::bigint * interval '1 microsecond' AS at,
			                 (ARRAY['os.health_check', 'os.create_note', 'os.create_task', 'comms.send_sms', 'lead.create',
			                        'calendar.create_event', 'invoice.create', 'entity.add_interaction'])[1 + g % 8] AS tool,
			                 jsonb_build_object('title', 'history ' || g, 'n', g) AS input,
			                 CASE WHEN g % 33 = 0 THEN 'failed' ELSE 'succeeded' END AS status
			          FROM generate_series(0, $3::int - 1) g) s
			    RETURNING id, tool_name, status, worker, started_at, finished_at
			)
			INSERT INTO core_tool_receipts (call_id, tool_name, status, result, error, error_code, summary, attempt, worker,
			                                duration_ms, started_at, finished_at)
			SELECT id, tool_name, status, CASE WHEN status = 'succeeded' THEN '{"ok": true}'::jsonb END,
			       CASE WHEN status = 'failed' THEN '{"code": "handler_error", "message": "seeded failure"}'::jsonb END,
			       CASE WHEN status = 'failed' THEN 'handler_error' END, '{}'::jsonb, 1, worker, 3, started_at, finished_at
			FROM calls`, from, step.Microseconds(), size)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != int64(size) {
			return fmt.Errorf("seeded %d receipts, not %d", tag.RowsAffected(), size)
		}
		if done/chunk%4 == 3 {
			progress("history: %d of %d seeded", done+size, n)
		}
	}
	_, err = conn.Exec(ctx, `VACUUM (ANALYZE) core_tool_calls, core_tool_receipts`)
	return err
}

// auditQueries are the audit queries of docs/receipts.md and the brain's lists, with $1 a call id from the
// history. Each must stay fast however long the history.
var auditQueries = []struct{ name, sql string }{
	{"a call's receipt", `SELECT status, result, effects, error FROM core_tool_receipts WHERE call_id = $1`},
	{"a call's live status (core_calls)", `SELECT status, attempt, worker FROM core_calls WHERE id = $1`},
	{"what wrote to os_tasks today", `SELECT call_id, effects->'db_writes' FROM core_tool_receipts
		WHERE effects->'db_writes' @> '[{"table": "os_tasks"}]' AND finished_at > now() - interval '1 day' AND $1::uuid IS NOT NULL`},
	{"GET /calls (newest 50)", `SELECT * FROM core_calls WHERE $1::uuid IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 50`},
	{"GET /calls?tool= (newest 50)", `SELECT * FROM core_calls WHERE tool_name = 'os.create_note' AND $1::uuid IS NOT NULL
		ORDER BY created_at DESC, id DESC LIMIT 50`},
	{"GET /receipts (newest 50)", `SELECT * FROM core_tool_receipts WHERE $1::uuid IS NOT NULL ORDER BY finished_at DESC LIMIT 50`},
	{"core_recent_failures", `SELECT * FROM core_recent_failures WHERE $1::uuid IS NOT NULL`},
	{"core_idempotency_hits (newest 50)", `SELECT * FROM core_idempotency_hits WHERE $1::uuid IS NOT NULL LIMIT 50`},
	{"core_tool_stats", `SELECT * FROM core_tool_stats WHERE $1::uuid IS NOT NULL`},
	{"core_queue_depth", `SELECT * FROM core_queue_depth WHERE $1::uuid IS NOT NULL`},
	{"core_pending_approvals", `SELECT * FROM core_pending_approvals WHERE $1::uuid IS NOT NULL`},
}

// timeAuditQueries runs each audit query five times on a call from the middle of the history and keeps the
// median and the plan of the last run. With GEM_BENCH_PLANS set, the plans are written to that file too.
func timeAuditQueries(ctx context.Context, pool *pgxpool.Pool) ([]auditQuery, error) {
	var id uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id FROM core_tool_calls WHERE id >= gem_uuid_v7_floor(now() - interval '6 months') ORDER BY id LIMIT 1`).Scan(&id); err != nil {
		return nil, err
	}
	var out []auditQuery
	var plans strings.Builder
	for _, q := range auditQueries {
		var runs []time.Duration
		var plan []string
		for range 5 {
			rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) `+q.sql, id)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			plan = lines
			runs = append(runs, executionTime(lines))
		}
		slices.Sort(runs)
		out = append(out, auditQuery{Name: q.name, Median: runs[len(runs)/2], Plan: strings.Join(plan, "\n")})
		fmt.Fprintf(&plans, "-- %s\n%s\n\n%s\n\n", q.name, strings.TrimSpace(q.sql), strings.Join(plan, "\n"))
	}
	if path := os.Getenv("GEM_BENCH_PLANS"); path != "" {
		if err := os.WriteFile(filepath.Clean(path), []byte(plans.String()), 0o644); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// executionTime reads "Execution Time: 1.234 ms" from an EXPLAIN ANALYZE.
func executionTime(plan []string) time.Duration {
	for _, l := range plan {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Execution Time: "); ok {
			var f float64
			if _, err := fmt.Sscanf(v, "%f ms", &f); err == nil {
				return time.Duration(f * float64(time.Millisecond))
			}
		}
	}
	return 0
}

// Goals of the history bench (docs/benchmarks.md).
const (
	historyLatencyMax = 1.2 // p50 with history / p50 on empty tables
	historyDrainMin   = 0.8 // drain behind the backlog with history / drain on empty tables
	auditQueryMax     = 100 * time.Millisecond

	historyDefault = 10_000_000 // calls and receipts seeded, unless -history says otherwise
	backlogDefault = 1_000_000  // calls queued behind them, unless -backlog says otherwise
)

// historyTargets compare the runs with history against those on empty tables.
func historyTargets(r *benchResult) []targetResult {
	h := r.History
	if h == nil { // left out of this run: name what a default run measures
		h = &historyResult{Receipts: historyDefault, Backlog: backlogDefault, EmptyCalls: backlogDefault}
	}
	empty, full := r.latency(scHistEmpty, loadSeq), r.latency(scHistFull, loadSeq)
	ratio := float64(full.P50) / float64(empty.P50)
	drain := h.HistoryDrain / h.EmptyDrain
	var slowest auditQuery
	for _, q := range h.Audit {
		if q.Median >= slowest.Median {
			slowest = q
		}
	}
	return []targetResult{
		{fmt.Sprintf("history: insert → receipt p50 with %s receipts / empty tables", countText(h.Receipts)),
			fmt.Sprintf("%.2f× (%.2f vs %.2f ms)", ratio, ms(full.P50), ms(empty.P50)), fmt.Sprintf("≤ %.1f×", historyLatencyMax),
			ratio <= historyLatencyMax, empty.N > 0 && full.N > 0},
		{fmt.Sprintf("history: drain of %s queued calls with %s receipts / %s calls on empty tables", countText(h.Backlog), countText(h.Receipts), countText(h.EmptyCalls)),
			fmt.Sprintf("%.2f× (%.0f vs %.0f calls/s)", drain, h.HistoryDrain, h.EmptyDrain), fmt.Sprintf("≥ %.1f×", historyDrainMin),
			drain >= historyDrainMin, h.HistoryDrain > 0 && h.EmptyDrain > 0},
		{fmt.Sprintf("history: slowest audit query of the docs with %s receipts", countText(h.Receipts)),
			fmt.Sprintf("%.2f ms (%s)", ms(slowest.Median), slowest.Name), fmt.Sprintf("≤ %.0f ms", ms(auditQueryMax)),
			slowest.Median <= auditQueryMax, len(h.Audit) > 0},
	}
}

// countText prints 10000000 as 10M and 2000 as 2,000.
func countText(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000:
		return fmt.Sprintf("%d,%03d", n/1000, n%1000)
	}
	return fmt.Sprint(n)
}

// printHistory prints what the history bench measured besides its latency rows.
func printHistory(w io.Writer, h *historyResult) {
	if h == nil {
		return
	}
	fmt.Fprintf(w, "\nhistory: %s calls and receipts over %d months seeded in %.0f s (%.2f GB with indexes); drains: %s calls on empty tables %.0f/s, "+
		"%s queued behind the history %.0f/s\n", countText(h.Receipts), h.Months, h.SeedSeconds, float64(h.BytesOnDisk)/1e9,
		countText(h.EmptyCalls), h.EmptyDrain, countText(h.Backlog), h.HistoryDrain)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "audit query (docs/receipts.md, the brain's lists)\tmedian of 5, ms\t")
	for _, q := range h.Audit {
		fmt.Fprintf(tw, "%s\t%.2f\t\n", q.Name, ms(q.Median))
	}
	_ = tw.Flush()
}
