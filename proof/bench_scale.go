package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The scale scenario: the same backlog of calls drained by 1, then 2, then 4 executor processes, with the
// total number of workers held at one executor's default (1×200, 2×100, 4×50), and the committers and the
// cores split as docs/scaling.md says to split them on one machine: one executor's default committers
// between them, at least 1 each (on 2 cores 1×2, 2×1, 4×1), and the machine's CPUs through Go's GOMAXPROCS,
// at least 1 each. Four Go runtimes that each think they own both cores spin on them looking for work: with
// GOMAXPROCS left alone, four executors drained 0.81–0.93× of one's rate; split, 0.95–0.98×.
//
// Two more configurations say what the split measures. Holding the workers in all makes each executor's
// batches smaller (a committer batches the calls of its own executor, and River refills an executor's free
// workers one fetch at a time, so a quarter of the workers keeps fewer calls on hand). So one executor
// drains once more with its batches capped at the size four executors' reached in the same round
// (GEM_EXECUTOR_BATCH_MAX), and four executors drain with 200 workers each, as executors are added to a
// deployment. The configurations take turns (1, 2, 4, capped, 4 × 200,
// 1, 2, ...) so the machine's drift falls on all of them alike.
//
// Unlike the drain scenario, whose executor starts cold on a queued backlog, the executors here are started
// and registered first and the backlog is queued in one transaction: every executor hears of it at the same
// commit, and what is measured is the drain, not how long two or four processes take to start.
var scaleExecutors = []int{1, 2, scaleMost}

// scaleMost is the most executors the scenario runs: the split configuration that the capped one copies
// and the count of the executors with workers of their own.
const scaleMost = 4

// scaleShape says how a configuration of the scale scenario chooses its workers.
type scaleShape string

const (
	// scaleSplit holds the workers in all at one executor's default.
	scaleSplit scaleShape = "split"
	// scaleCapped is one executor whose batches are capped at the calls per commit that the four split
	// executors reached in the same round.
	scaleCapped scaleShape = "batches capped"
	// scaleAdded gives every executor one executor's default workers.
	scaleAdded scaleShape = "workers each"
)

// scaleTargetMin is the least drain of several executors, as a share of one executor's, that counts as "not
// slower": one executor's drain moves by a few percent between back-to-back runs on this shared machine.
const scaleTargetMin = 0.95

// scaleRun is one drain of the scale scenario.
type scaleRun struct {
	Rate float64 `json:"calls_per_second"`
	// ExecutorCPU, PostgresCPU and MachineCPU are CPU time per call (µs) during the drain: of every executor
	// process, of every process of the PostgreSQL cluster (0 when it cannot be read: a server elsewhere), and
	// of the whole machine.
	ExecutorCPU float64 `json:"executors_cpu_us_per_call"`
	PostgresCPU float64 `json:"postgres_cpu_us_per_call"`
	MachineCPU  float64 `json:"machine_cpu_us_per_call"`
	// WALEnqueue and WALDrain are the cluster's WAL bytes per call written by the backlog's INSERT and by the
	// drain (every database of the cluster: anything else running on it counts too).
	WALEnqueue float64 `json:"wal_enqueue_bytes_per_call"`
	WALDrain   float64 `json:"wal_drain_bytes_per_call"`
	// CallsPerCommit is how many receipts a committing transaction wrote, on average (receipts over their
	// distinct xmin).
	CallsPerCommit float64 `json:"calls_per_commit"`
	// BatchMax is the executors' GEM_EXECUTOR_BATCH_MAX when the configuration sets it (scaleCapped).
	BatchMax int `json:"batch_max,omitempty"`
}

// scaleConfig is one configuration of the scale scenario and its runs, one per repeat.
type scaleConfig struct {
	// Shape is how the workers are chosen.
	Shape          scaleShape `json:"shape"`
	Executors      int        `json:"executors"`
	WorkersEach    int        `json:"workers_each"`
	CommittersEach int        `json:"committers_each"`
	// ProcsEach is each executor's GOMAXPROCS.
	ProcsEach int        `json:"gomaxprocs_each"`
	Runs      []scaleRun `json:"runs"`
}

// tableStorage is a table's rows and size (pg_total_relation_size: heap, indexes, TOAST; of every partition
// of a partitioned table) after the scale scenario's drains.
type tableStorage struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// scaleResult is what the scale scenario measured.
type scaleResult struct {
	Tool         string         `json:"tool"`
	Calls        int            `json:"calls"`
	TotalWorkers int            `json:"total_workers"`
	Configs      []scaleConfig  `json:"configs"`
	Storage      []tableStorage `json:"storage"`
}

// config is the configuration of the given shape and number of executors, nil if the run had none.
func (r *scaleResult) config(shape scaleShape, executors int) *scaleConfig {
	for i := range r.Configs {
		c := &r.Configs[i]
		if c.Executors == executors && c.Shape == shape {
			return c
		}
	}
	return nil
}

// ratio is the median over the repeats of each repeat's drain rate of c over the rate of one executor with
// its default workers (the runs of a repeat are minutes apart at most), and the two medians of the rates.
func (r *scaleResult) ratio(c *scaleConfig) (ratio, rate, rate1 float64, measured bool) {
	one := r.config(scaleSplit, 1)
	if one == nil || c == nil || len(one.Runs) == 0 || len(one.Runs) != len(c.Runs) {
		return 0, 0, 0, false
	}
	var ratios, rates, rates1 []float64
	for i := range one.Runs {
		ratios = append(ratios, c.Runs[i].Rate/one.Runs[i].Rate)
		rates, rates1 = append(rates, c.Runs[i].Rate), append(rates1, one.Runs[i].Rate)
	}
	return medianOf(ratios), medianOf(rates), medianOf(rates1), true
}

// scaleTargets are the scale scenario's rows of the targets table: several executors never drain slower
// than one, with the workers in all held (the measure) and with their own workers each.
func scaleTargets(r *benchResult) []targetResult {
	s := r.Scale
	if s == nil {
		s = &scaleResult{TotalWorkers: executor.MaxWorkersDefault}
	}
	var out []targetResult
	add := func(shape scaleShape, n int, name string) {
		ratio, rate, rate1, measured := s.ratio(s.config(shape, n))
		out = append(out, targetResult{
			Name:     name,
			Value:    fmt.Sprintf("%.2f× (%.0f vs %.0f calls/s)", ratio, rate, rate1),
			Target:   fmt.Sprintf("≥ %.2f× (never slower, within this machine's noise)", scaleTargetMin),
			Met:      ratio >= scaleTargetMin,
			Measured: measured,
		})
	}
	for _, n := range scaleExecutors[1:] {
		add(scaleSplit, n, fmt.Sprintf("several executors: %d executors' drain / 1 executor's (same %d workers in all)", n, s.TotalWorkers))
	}
	add(scaleAdded, scaleMost, fmt.Sprintf("several executors: %d executors' drain / 1 executor's (%d workers each)", scaleMost, s.TotalWorkers))
	return out
}

// benchScale drains cfg.Drain os.create_note calls with 1, 2 and 4 executors, cfg.Repeats times each in
// turns. The tool is os.create_note, whose work is one INSERT whatever the queue holds: os.health_check reads
// the queue, and a plan of its count that read every finished job (60 ms a call after five drains) once
// measured that plan instead of the executors (docs/benchmarks.md).
func benchScale(ctx context.Context, cfg benchConfig, bins binaries, dbURL string, pool *pgxpool.Pool,
	progress func(string, ...any)) (*scaleResult, error) {
	t := drainTools[drGEMNote]
	committers := executor.CommittersDefault()
	res := &scaleResult{Tool: t.tool, Calls: cfg.Drain, TotalWorkers: executor.MaxWorkersDefault}
	for _, n := range scaleExecutors {
		res.Configs = append(res.Configs, scaleConfig{Shape: scaleSplit, Executors: n, WorkersEach: res.TotalWorkers / n,
			CommittersEach: max(1, committers/n), ProcsEach: max(1, runtime.NumCPU()/n)})
	}
	res.Configs = append(res.Configs,
		scaleConfig{Shape: scaleCapped, Executors: 1, WorkersEach: res.TotalWorkers, CommittersEach: committers, ProcsEach: runtime.NumCPU()},
		scaleConfig{Shape: scaleAdded, Executors: scaleMost, WorkersEach: res.TotalWorkers, CommittersEach: max(1, committers/scaleMost),
			ProcsEach: max(1, runtime.NumCPU()/scaleMost)})
	postmaster := postmasterPID(ctx, pool)
	if postmaster == 0 {
		progress("several executors: PostgreSQL's processes are not on this machine; its CPU is not measured")
	}
	for rep := range cfg.Repeats {
		for i := range res.Configs {
			c := &res.Configs[i]
			batchMax := 0
			if c.Shape == scaleCapped {
				// The split four executors ran just before, in this round.
				split := res.config(scaleSplit, scaleMost).Runs
				batchMax = max(1, int(math.Round(split[len(split)-1].CallsPerCommit)))
			}
			run, err := scaleDrain(ctx, cfg, bins, dbURL, pool, postmaster, *c, batchMax, rep, t.tool, t.input)
			if err != nil {
				return nil, fmt.Errorf("several executors (%d, %s): %w", c.Executors, c.Shape, err)
			}
			progress("several executors: %d × %d workers (%s), %d committers and GOMAXPROCS %d each%s, run %d: %.0f calls/s; CPU per call: executors %.0f µs, "+
				"PostgreSQL %.0f µs, machine %.0f µs; WAL per call: enqueue %.0f B, drain %.0f B; %.1f calls per commit", c.Executors, c.WorkersEach, c.Shape,
				c.CommittersEach, c.ProcsEach, run.batchNote(), rep+1, run.Rate, run.ExecutorCPU, run.PostgresCPU, run.MachineCPU, run.WALEnqueue, run.WALDrain,
				run.CallsPerCommit)
			c.Runs = append(c.Runs, run)
		}
	}
	for _, table := range []string{"core_tool_calls", "core_tool_receipts", "river_job", "os_notes"} {
		s := tableStorage{Table: table}
		// The table names are constants of this file. A partitioned table's size is its partitions'.
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+table+`),
			(SELECT coalesce(sum(pg_total_relation_size(relid)), pg_total_relation_size($1::regclass))::bigint FROM pg_partition_tree($1::regclass))`, table).Scan(&s.Rows, &s.Bytes); err != nil {
			return nil, err
		}
		res.Storage = append(res.Storage, s)
	}
	return res, nil
}

// batchNote is ", batches ≤ n" for a run whose batches were capped, "" otherwise.
func (r scaleRun) batchNote() string {
	if r.BatchMax == 0 {
		return ""
	}
	return fmt.Sprintf(", batches ≤ %d", r.BatchMax)
}

// scaleDrain starts c.Executors executors (with GEM_EXECUTOR_BATCH_MAX=batchMax unless 0), queues cfg.Drain
// calls in one transaction once they are all registered, and measures the drain.
func scaleDrain(ctx context.Context, cfg benchConfig, bins binaries, dbURL string, pool *pgxpool.Pool, postmaster int,
	c scaleConfig, batchMax, rep int, tool, input string) (run scaleRun, err error) {
	if err := vacuum(pool, gemTables...)(ctx); err != nil {
		return run, err
	}
	var before int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&before); err != nil {
		return run, err
	}
	env := []string{"GEM_EXECUTOR_MAX_WORKERS=" + strconv.Itoa(c.WorkersEach), "GEM_EXECUTOR_COMMITTERS=" + strconv.Itoa(c.CommittersEach),
		"GOMAXPROCS=" + strconv.Itoa(c.ProcsEach), "GEM_EXECUTOR_METRICS_ADDR=off"}
	if batchMax > 0 {
		env = append(env, "GEM_EXECUTOR_BATCH_MAX="+strconv.Itoa(batchMax))
	}
	var execs []*proc
	defer func() {
		// Stop them together: each drains its running calls (none are left) and deregisters.
		errs := make(chan error, len(execs))
		for _, p := range execs {
			go func() { errs <- p.stop(40 * time.Second) }()
		}
		for range execs {
			if stopErr := <-errs; err == nil {
				err = stopErr
			}
		}
	}()
	for i := range c.Executors {
		p, err := startExecutor(bins, dbURL, fmt.Sprintf("bench-scale-%dx%d-%s-%d-%d", c.Executors, c.WorkersEach,
			strings.ReplaceAll(string(c.Shape), " ", "-"), rep, i+1), env, cfg.Log, pool, false)
		if err != nil {
			return run, err
		}
		execs = append(execs, p)
	}
	for _, p := range execs {
		err := p.awaitCondition(60*time.Second, func() (bool, error) {
			var ok bool
			err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM core_executors WHERE id = $1 AND stopped_at IS NULL)`, p.name).Scan(&ok)
			return ok, err
		})
		if err != nil {
			return run, err
		}
	}
	// Registration comes just before River's client starts: give every client a moment to listen and fetch.
	select {
	case <-ctx.Done():
		return run, ctx.Err()
	case <-time.After(time.Second):
	}

	// The backlog in one transaction, so every executor hears of it at its commit; the WAL position is read
	// before the commit, while nothing else of this database writes.
	var wal0, wal1 string
	tx, err := pool.Begin(ctx)
	if err != nil {
		return run, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&wal0); err != nil {
		return run, err
	}
	// tool and input are constants of this file and bench.go, not user input.
	if _, err := tx.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input) SELECT $2, `+input+`
		FROM generate_series(1, $1) g`, cfg.Drain, tool); err != nil {
		return run, err
	}
	if err := tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&wal1); err != nil {
		return run, err
	}
	// Statistics that know of the backlog, as autovacuum's would on a server that has one. Without them the
	// first backlog on fresh tables drained at ~200 calls/s until autoanalyze came by (see docs/benchmarks.md).
	if _, err := tx.Exec(ctx, `ANALYZE river_job, core_tool_calls`); err != nil {
		return run, err
	}
	if err := tx.Commit(ctx); err != nil {
		return run, err
	}
	machine0, pg0, exec0 := machineCPU(), clusterCPU(postmaster), cpuOf(execs)

	d, err := awaitDrain(ctx, pool, before, cfg.Drain, execs[0], machine0)
	if err != nil {
		return run, err
	}
	pg1, exec1 := clusterCPU(postmaster), cpuOf(execs)
	for _, p := range execs {
		if p.exited() {
			return run, fmt.Errorf("%s exited during the drain (%v):\n%s", p.name, p.err, p.tail())
		}
	}
	var enqueue, drain float64
	if err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn), pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $2::pg_lsn)`,
		wal0, wal1).Scan(&enqueue, &drain); err != nil {
		return run, err
	}
	perCall := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(cfg.Drain) }
	run = scaleRun{Rate: d.rate, ExecutorCPU: perCall(exec1 - exec0), MachineCPU: d.machineCPU,
		WALEnqueue: enqueue / float64(cfg.Drain), WALDrain: drain / float64(cfg.Drain)}
	if postmaster != 0 {
		run.PostgresCPU = perCall(pg1 - pg0)
	}
	// Every drained call has its receipt (the job completes in the receipt's transaction); and how many
	// receipts each transaction committed.
	var missing, receipts, commits int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE r.call_id IS NULL), count(r.call_id), count(DISTINCT r.xmin::text)
		FROM river_job j LEFT JOIN core_tool_receipts r ON r.call_id = (j.args->>'call_id')::uuid AND r.status = 'succeeded'
		WHERE j.id > $1`, before).Scan(&missing, &receipts, &commits); err != nil {
		return run, err
	}
	if missing > 0 {
		return run, fmt.Errorf("%d drained calls have no succeeded receipt", missing)
	}
	run.CallsPerCommit = float64(receipts) / float64(max(commits, 1))
	run.BatchMax = batchMax
	return run, nil
}

// cpuOf is the CPU time the processes have used.
func cpuOf(ps []*proc) time.Duration {
	var sum time.Duration
	for _, p := range ps {
		sum += p.cpuTime()
	}
	return sum
}

// postmasterPID is the PID of the PostgreSQL server that pool reaches, when it runs on this machine (the
// parent of this connection's backend, a process named postgres); 0 otherwise.
func postmasterPID(ctx context.Context, pool *pgxpool.Pool) int {
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	fields := procStat(backend)
	if len(fields) < 2 || !isPostgres(backend) {
		return 0
	}
	parent, _ := strconv.Atoi(fields[1])
	if !isPostgres(parent) {
		return 0
	}
	return parent
}

func isPostgres(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.TrimSpace(string(comm)) == "postgres"
}

// procStat is /proc/<pid>/stat's fields after the command name (state, ppid, ...), nil if it cannot be read.
func procStat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// clusterCPU is the CPU time (user + system) of a PostgreSQL cluster: its postmaster, every live child
// (backends, WAL writer, checkpointer, autovacuum, ...) and the children that have ended, which the
// postmaster has reaped (cutime, cstime); 0 for postmaster 0.
func clusterCPU(postmaster int) time.Duration {
	if postmaster == 0 {
		return 0
	}
	ticks := func(fields []string) int64 {
		var sum int64
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			if i < len(fields) {
				v, _ := strconv.ParseInt(fields[i], 10, 64)
				sum += v
			}
		}
		return sum
	}
	total := ticks(procStat(postmaster))
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	parent := strconv.Itoa(postmaster)
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if f := procStat(pid); len(f) > 1 && f[1] == parent {
			total += ticks(f)
		}
	}
	return time.Duration(total) * clockTick
}

// printScale writes the scale scenario's table.
func printScale(w io.Writer, s *scaleResult) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nseveral executors: %d queued %s calls drained by 1, 2 and 4 executors with %d workers in all (split), by 1 executor "+
		"whose batches are capped at the calls per commit of the split 4 in the same round (batches capped), and by 4 executors with %d workers "+
		"each (workers each), taking turns; medians of %d runs (each run's rate in brackets); the ratio is the median of each round's ratio "+
		"to 1 executor\n\n", s.Calls, s.Tool, s.TotalWorkers, s.TotalWorkers, len(s.Configs[0].Runs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "executors\tconfiguration\tworkers each\tcommitters each\tGOMAXPROCS each\tbatch max\tcalls/s\truns\t× 1 executor\tCPU µs per call: executors\tPostgreSQL\tmachine\tWAL B per call: enqueue\tdrain\tcalls per commit\t")
	for _, c := range s.Configs {
		var rates, execCPU, pgCPU, machine, walIn, walDrain, perCommit []float64
		var caps []string
		for _, r := range c.Runs {
			if r.BatchMax > 0 {
				caps = append(caps, strconv.Itoa(r.BatchMax))
			}
			rates, execCPU, pgCPU = append(rates, r.Rate), append(execCPU, r.ExecutorCPU), append(pgCPU, r.PostgresCPU)
			machine, walIn, walDrain = append(machine, r.MachineCPU), append(walIn, r.WALEnqueue), append(walDrain, r.WALDrain)
			perCommit = append(perCommit, r.CallsPerCommit)
		}
		var runs []string
		for _, v := range rates {
			runs = append(runs, fmt.Sprintf("%.0f", v))
		}
		x, _, _, _ := s.ratio(&c)
		batchMax := "default"
		if len(caps) > 0 {
			batchMax = strings.Join(caps, " ")
		}
		pg := "—"
		if medianOf(pgCPU) > 0 {
			pg = fmt.Sprintf("%.0f", medianOf(pgCPU))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%s\t%.0f\t(%s)\t%.2f\t%.0f\t%s\t%.0f\t%.0f\t%.0f\t%.1f\t\n", c.Executors, c.Shape, c.WorkersEach, c.CommittersEach,
			c.ProcsEach, batchMax, medianOf(rates), strings.Join(runs, " "), x, medianOf(execCPU), pg, medianOf(machine), medianOf(walIn),
			medianOf(walDrain), medianOf(perCommit))
	}
	_ = tw.Flush()
	var parts []string
	for _, t := range s.Storage {
		perRow := 0.0
		if t.Rows > 0 {
			perRow = float64(t.Bytes) / float64(t.Rows)
		}
		parts = append(parts, fmt.Sprintf("%s %d rows, %.1f MiB (%.0f B a row)", t.Table, t.Rows, float64(t.Bytes)/(1<<20), perRow))
	}
	fmt.Fprintf(w, "storage after the drains (pg_total_relation_size): %s\n", strings.Join(parts, "; "))
}
