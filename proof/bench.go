package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/packs"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// benchConfig configures one `make bench` run.
type benchConfig struct {
	Calls     int             // sequential calls per repeat
	OpenCalls int             // open-loop calls per repeat
	Rate      float64         // open-loop calls per second
	Drain     int             // queued calls drained per throughput repeat
	Repeats   int             // how often each measurement is repeated
	Warmup    int             // unmeasured calls before each latency scenario
	Log       io.Writer       // progress and the children's logs (nil: progress only to Out's stderr)
	Timeout   time.Duration   // the whole run
	Only      map[string]bool // scenarios to run (river, gem, brain, mcp, code, rest, limits, telemetry, takeover, drain, scale, history); empty: all
	History   int             // calls and receipts seeded as history (the history scenario)
	Backlog   int             // calls queued behind the history for its drain
	// Baseline is a repository folder with another build in its bin/ (make build): its /brain/run and one-call
	// chat turn are measured alternating with this build's, in the same run (bench_baseline.go).
	Baseline    string
	dbPrefix    string // names of the databases made for the run (default gem_bench)
	baselineURL string // the baseline's database
}

func (c benchConfig) runs(name string) bool { return len(c.Only) == 0 || c.Only[name] }

// Scenario names, as printed.
const (
	scRiver   = "River floor"
	scGEM     = "GEM, os.health_check"
	scGEMNote = "GEM, os.create_note"
	scBrain   = "brain /brain/run"
	loadSeq   = "sequential"
	loadOpen  = "open loop"
	drNoop    = "River no-op"
	drReceipt = "River receipt per tx"
	drGEM     = "GEM executor, os.health_check"
	drGEMNote = "GEM executor, os.create_note"
)

// drainTools are the calls GEM drains: os.health_check writes only its receipt, like the River floor's
// receipt job; os.create_note also writes a note row (with its full-text index).
var drainTools = map[string]struct{ tool, input string }{
	drGEM:     {ospack.HealthCheck, `'{}'::jsonb`},
	drGEMNote: {ospack.CreateNote, `jsonb_build_object('domain', 'business', 'title', 'drain note ' || g, 'content', 'measured by make bench')`},
}

// latencyResult is one scenario under one load, repeated.
type latencyResult struct {
	Scenario string    `json:"scenario"`
	Load     string    `json:"load"`
	Runs     []summary `json:"runs"`
}

// median is the median over the runs of each percentile.
func (r latencyResult) median() summary {
	var p50, p95, p99, mx []int64
	n := 0
	for _, s := range r.Runs {
		p50, p95, p99, mx = append(p50, int64(s.P50)), append(p95, int64(s.P95)), append(p99, int64(s.P99)), append(mx, int64(s.Max))
		n += s.N
	}
	return summary{N: n, P50: time.Duration(medianOf(p50)), P95: time.Duration(medianOf(p95)),
		P99: time.Duration(medianOf(p99)), Max: time.Duration(medianOf(mx))}
}

// throughputResult is one drain scenario, repeated.
type throughputResult struct {
	Scenario string    `json:"scenario"`
	Calls    int       `json:"calls"`
	Rates    []float64 `json:"calls_per_second"`
	// WorkerCPU and MachineCPU are the CPU time per call (µs) of the worker process (River worker or GEM
	// executor) and of the whole machine (the worker, PostgreSQL, everything) during each run.
	WorkerCPU  []float64 `json:"worker_cpu_us_per_call"`
	MachineCPU []float64 `json:"machine_cpu_us_per_call"`
}

// drainRun is one drain's rate and CPU per call.
type drainRun struct {
	rate, workerCPU, machineCPU float64
}

type benchResult struct {
	Date             time.Time          `json:"date"`
	CPUs             int                `json:"cpus"`
	Postgres         string             `json:"postgres"`
	Latency          []latencyResult    `json:"latency"`
	Throughput       []throughputResult `json:"throughput"`
	ExecutorPeakRSSK int64              `json:"executor_peak_rss_kb"`
	BrainPeakRSSK    int64              `json:"brain_peak_rss_kb"`
	Limits           *limitsResult      `json:"limits,omitempty"`
	Scale            *scaleResult       `json:"scale,omitempty"`
	History          *historyResult     `json:"history,omitempty"`
	Targets          []targetResult     `json:"targets"`
}

type targetResult struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Target string `json:"target"`
	Met    bool   `json:"met"`
	// Measured is false when the run left out a scenario the target needs (-only).
	Measured bool `json:"measured"`
}

func (r *benchResult) latency(scenario, load string) summary {
	for _, l := range r.Latency {
		if l.Scenario == scenario && l.Load == load {
			return l.median()
		}
	}
	return summary{}
}

func (r *benchResult) drainRate(scenario string) float64 {
	for _, t := range r.Throughput {
		if t.Scenario == scenario {
			return medianOf(t.Rates)
		}
	}
	return 0
}

// bench runs every measurement on fresh databases of c and returns the results.
func bench(ctx context.Context, cfg benchConfig, c *cluster, bins binaries) (*benchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	progress := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	res := &benchResult{Date: time.Now().UTC().Truncate(time.Second), CPUs: runtime.NumCPU()}

	prefix := cfg.dbPrefix
	if prefix == "" {
		prefix = "gem_bench"
	}
	riverURL, err := c.freshDatabase(ctx, prefix+"_river")
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.dropDatabase(context.Background(), prefix+"_river") }()
	gemURL, err := c.freshDatabase(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.dropDatabase(context.Background(), prefix) }()
	if cfg.Baseline != "" && (cfg.runs("brain") || cfg.runs("code")) {
		if cfg.baselineURL, err = c.freshDatabase(ctx, prefix+"_baseline"); err != nil {
			return nil, err
		}
		defer func() { _ = c.dropDatabase(context.Background(), prefix+"_baseline") }()
	}

	riverPool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: riverURL, ApplicationName: "gem-bench-river", MaxConns: 20})
	if err != nil {
		return nil, err
	}
	defer riverPool.Close()
	if err := riverFloorSchema(ctx, riverPool); err != nil {
		return nil, err
	}
	_ = riverPool.QueryRow(ctx, "SHOW server_version").Scan(&res.Postgres)
	gemPool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: gemURL, ApplicationName: "gem-bench", MaxConns: 20})
	if err != nil {
		return nil, err
	}
	defer gemPool.Close()
	// The open loop makes calls from many connections at once; open them before measuring.
	for _, p := range []*pgxpool.Pool{riverPool, gemPool} {
		if err := warmPool(ctx, p, 16); err != nil {
			return nil, err
		}
	}
	if _, err := gemsql.Migrate(ctx, gemPool, nil, packs.Lines()...); err != nil {
		return nil, err
	}

	// 1. The bare River floor.
	inserter, err := newRiverInserter(riverPool)
	if err != nil {
		return nil, err
	}
	if cfg.runs("river") {
		if err := benchRiverFloor(ctx, cfg, res, bins, riverURL, riverPool, inserter, progress); err != nil {
			return nil, err
		}
	}

	// 2. GEM's executor on os.create_note: validation, idempotency (mode none), a handler that writes a
	// row, and the receipt.
	var executorPeak int64
	if cfg.runs("gem") || cfg.runs("brain") || cfg.runs("mcp") || cfg.runs("code") {
		if executorPeak, err = benchGEM(ctx, cfg, res, bins, gemURL, gemPool, progress); err != nil {
			return nil, err
		}
	}

	// 3. A rest tool against a local HTTP server, next to a Go handler whose work is one statement too.
	if cfg.runs("rest") {
		if err := benchREST(ctx, cfg, res, bins, gemURL, gemPool, vacuum(gemPool, gemTables...), progress); err != nil {
			return nil, err
		}
	}

	// 4. Concurrency and rate limits across two executors, and what they cost calls without limits.
	if cfg.runs("limits") {
		if err := benchLimits(ctx, cfg, res, bins, gemURL, gemPool, vacuum(gemPool, gemTables...), progress); err != nil {
			return nil, err
		}
	}

	// 4b. A chat turn whose brain is SIGKILLed, taken over by another brain.
	if cfg.runs("takeover") {
		if err := benchTakeover(ctx, cfg, res, bins, gemURL, gemPool, progress); err != nil {
			return nil, fmt.Errorf("takeover: %w", err)
		}
	}

	// 5. What metrics and traces cost a run, against the same run with both off.
	if cfg.runs("telemetry") {
		if err := benchTelemetry(ctx, cfg, res, c, bins, prefix, progress); err != nil {
			return nil, err
		}
	}

	// 6. Throughput: queue Drain calls with no worker running, start one, time the drain.
	for _, sc := range []string{drNoop, drReceipt, drGEM, drGEMNote} {
		if !cfg.runs("drain") {
			break
		}
		tr := throughputResult{Scenario: sc, Calls: cfg.Drain}
		for rep := range cfg.Repeats {
			var run drainRun
			var peak int64
			if t, ok := drainTools[sc]; ok {
				run, peak, err = drainGEM(ctx, cfg, bins, gemURL, gemPool, rep, t.tool, t.input)
				executorPeak = max(executorPeak, peak)
			} else {
				run, err = drainRiver(ctx, cfg, bins, riverURL, riverPool, inserter, sc == drReceipt)
			}
			if err != nil {
				return nil, fmt.Errorf("%s drain: %w", sc, err)
			}
			progress("drain %s, run %d: %.0f calls/s; CPU per call: worker %.0f µs, machine %.0f µs", sc, rep+1,
				run.rate, run.workerCPU, run.machineCPU)
			tr.Rates = append(tr.Rates, run.rate)
			tr.WorkerCPU = append(tr.WorkerCPU, run.workerCPU)
			tr.MachineCPU = append(tr.MachineCPU, run.machineCPU)
		}
		res.Throughput = append(res.Throughput, tr)
	}
	// 7. Several executors: the same backlog drained by 1, 2 and 4 executors with the same workers in all.
	if cfg.runs("scale") {
		if res.Scale, err = benchScale(ctx, cfg, bins, gemURL, gemPool, progress); err != nil {
			return nil, err
		}
	}
	// 8. History: the executor on empty tables, then behind years of receipts and a backlog.
	if cfg.runs("history") && cfg.History > 0 {
		if err := benchHistory(ctx, cfg, res, c, bins, prefix, progress); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	res.ExecutorPeakRSSK = executorPeak
	res.Targets = targets(res)
	return res, nil
}

// benchRiverFloor measures the bare River floor's latency.
func benchRiverFloor(ctx context.Context, cfg benchConfig, res *benchResult, bins binaries, riverURL string,
	riverPool *pgxpool.Pool, inserter *riverInserter, progress func(string, ...any)) error {
	progress("River floor: a River worker that writes a receipt row and completes its job in one transaction")
	worker, err := startProc("river-worker", bins.self, nil, []string{roleEnv + "=river-worker", "DATABASE_URL=" + riverURL}, cfg.Log)
	if err != nil {
		return err
	}
	if err := worker.awaitReady(30 * time.Second); err != nil {
		return err
	}
	riverListener, err := listen(ctx, riverURL, "bench_receipt")
	if err != nil {
		worker.kill()
		return err
	}
	riverCall := func(ctx context.Context, i int) (time.Time, error) {
		id, err := inserter.insertReceipt(ctx, i)
		if err != nil {
			return time.Time{}, err
		}
		return riverListener.wait(ctx, id)
	}
	err = measureLatency(ctx, cfg, res, scRiver, riverCall, vacuum(riverPool, riverFloorTables...), progress)
	riverListener.close()
	if stopErr := worker.stop(15 * time.Second); err == nil {
		err = stopErr
	}
	return err
}

// benchGEM measures GEM's executor and the brain in front of it, and returns the executor's peak RSS.
func benchGEM(ctx context.Context, cfg benchConfig, res *benchResult, bins binaries, gemURL string,
	gemPool *pgxpool.Pool, progress func(string, ...any)) (peakKB int64, err error) {
	progress("GEM executor: plain INSERT INTO core_tool_calls, receipt observed by LISTEN gem_receipt")
	exec, err := startExecutor(bins, gemURL, "bench-executor-1", nil, cfg.Log, gemPool, true)
	if err != nil {
		return 0, err
	}
	defer func() {
		if stopErr := exec.stop(40 * time.Second); err == nil {
			err = stopErr
		}
		peakKB = exec.peakRSS()
	}()
	gemListener, err := listen(ctx, gemURL, gemsql.ReceiptChannel)
	if err != nil {
		return 0, err
	}
	gemCall := func(tool string, input func(i int) map[string]any) func(context.Context, int) (time.Time, error) {
		return func(ctx context.Context, i int) (time.Time, error) {
			return insertAndWait(ctx, gemPool, gemListener, tool, input(i))
		}
	}
	settle := vacuum(gemPool, gemTables...)
	if cfg.runs("gem") {
		// os.health_check writes only its receipt, like the River floor's job; os.create_note also writes a
		// note row with its full-text index, as most tools write something.
		err = measureLatency(ctx, cfg, res, scGEM, gemCall(ospack.HealthCheck, func(int) map[string]any { return map[string]any{} }), settle, progress)
		if err == nil {
			err = measureLatency(ctx, cfg, res, scGEMNote, gemCall(ospack.CreateNote, func(i int) map[string]any {
				return map[string]any{"domain": "business", "title": fmt.Sprintf("bench note %d", i), "content": "measured by make bench"}
			}), settle, progress)
		}
	}
	gemListener.close()
	if err != nil || !(cfg.runs("brain") || cfg.runs("mcp") || cfg.runs("code")) {
		return 0, err
	}

	// 3. The brain, over HTTP, planning one call with its rules planner and waiting for the receipt.
	progress("brain: POST /brain/run in enqueue_and_wait mode, one os.create_note call")
	// The brain's LLM is a local fake that answers at once (code mode's runs); the rules planner plans /brain/run.
	llm, err := startFakeLLM(fakeLLMKey, benchLLMCalls)
	if err != nil {
		return 0, err
	}
	defer llm.close()
	brain, err := startBrain(bins, gemURL, []string{"GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL=" + llm.url, "GEM_LLM_API_KEY=" + fakeLLMKey,
		"GEM_LLM_MODEL=bench-fake"}, cfg.Log)
	if err != nil {
		return 0, err
	}
	var base *baselineStack
	if cfg.baselineURL != "" {
		progress("the baseline build (%s): its own executor and brain, on a database of its own", cfg.Baseline)
		if base, err = startBaseline(ctx, cfg, bins, cfg.baselineURL, llm.url); err != nil {
			_ = brain.stop(15 * time.Second)
			return 0, err
		}
		defer base.stop()
	}
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	brainCallOn := func(b *brainProc) func(ctx context.Context, i int) (time.Time, error) {
		return func(ctx context.Context, i int) (time.Time, error) {
			return brainRun(ctx, httpClient, b, fmt.Sprintf("note that bench call %d went through the brain", i))
		}
	}
	if cfg.runs("brain") {
		if base != nil {
			progress("brain: /brain/run, alternating call by call with the baseline build's")
			err = measureInterleaved(ctx, cfg, res, []latencyScenario{{scBrain, brainCallOn(brain)}, {scBrainBaseline, brainCallOn(base.brain)}},
				both(settle, base), progress)
		} else {
			err = measureLatency(ctx, cfg, res, scBrain, brainCallOn(brain), settle, progress)
		}
	}
	if err == nil && cfg.runs("mcp") {
		err = benchMCP(ctx, cfg, res, brain, settle, progress)
	}
	if err == nil && cfg.runs("code") {
		err = benchCode(ctx, cfg, res, brain, base, settle, progress)
	}
	if stopErr := brain.stop(15 * time.Second); err == nil {
		err = stopErr
	}
	res.BrainPeakRSSK = brain.peakRSS()
	return 0, err
}

// warmPool opens n connections of pool and returns them to it.
func warmPool(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// The tables the River floor's and GEM's scenarios churn.
var (
	riverFloorTables = []string{"river_job", "bench_receipts"}
	gemTables        = []string{"river_job", "core_tool_calls", "core_tool_receipts", "os_notes", "brain_runs"}
)

// vacuum returns a settle step for measureLatency and the drains: VACUUM (ANALYZE) of the tables a scenario
// churns, so each repeat starts from tables as autovacuum keeps them instead of with the dead rows of the
// repeats before (which slowed each repeat of the River floor more than the last: 3.6, 5.6, 6.4 ms).
func vacuum(pool *pgxpool.Pool, tables ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(tables, ", ")); err != nil {
			return fmt.Errorf("error vacuuming %s: %w", strings.Join(tables, ", "), err)
		}
		return nil
	}
}

// sequential makes count calls one after another, numbering them from *n, and returns their latencies.
func sequential(ctx context.Context, count int, call func(context.Context, int) (time.Time, error), n *int) ([]time.Duration, error) {
	lat, err := sequentialInTurns(ctx, count, []latencyScenario{{call: call}}, n)
	if err != nil {
		return nil, err
	}
	return lat[0], nil
}

// sequentialInTurns makes count calls of each scenario one after another, the scenarios taking turns call
// by call, numbering them from *n, and returns each scenario's latencies.
func sequentialInTurns(ctx context.Context, count int, scenarios []latencyScenario, n *int) ([][]time.Duration, error) {
	lat := make([][]time.Duration, len(scenarios))
	for i := range lat {
		lat[i] = make([]time.Duration, 0, count)
	}
	for range count {
		for i, sc := range scenarios {
			start := time.Now()
			end, err := callWithTimeout(ctx, sc.call, *n, start)
			if err != nil {
				if sc.name != "" {
					return nil, fmt.Errorf("%s sequential, call %d: %w", sc.name, *n, err)
				}
				return nil, fmt.Errorf("call %d: %w", *n, err)
			}
			*n++
			lat[i] = append(lat[i], end.Sub(start))
		}
	}
	return lat, nil
}

// measureLatency runs the sequential and open-loop loads of one scenario, Repeats times each. settle runs
// before the warm-up and before each repeat (see vacuum).
func measureLatency(ctx context.Context, cfg benchConfig, res *benchResult, scenario string,
	call func(context.Context, int) (time.Time, error), settle func(context.Context) error, progress func(string, ...any)) error {
	return measureInterleaved(ctx, cfg, res, []latencyScenario{{scenario, call}}, settle, progress)
}

// latencyScenario is a scenario's name and one call of it.
type latencyScenario struct {
	name string
	call func(context.Context, int) (time.Time, error)
}

// measureInterleaved is measureLatency for scenarios compared with each other: in each repeat their
// sequential calls take turns call by call, then each has its open loop, so a drift of the machine during
// the run weighs on all of them alike (a shared machine's speed moves within seconds, the time one
// scenario's 200 sequential calls took when they ran as a block).
func measureInterleaved(ctx context.Context, cfg benchConfig, res *benchResult, scenarios []latencyScenario,
	settle func(context.Context) error, progress func(string, ...any)) error {
	if err := settle(ctx); err != nil {
		return err
	}
	n := 0
	seq := make([]latencyResult, len(scenarios))
	open := make([]latencyResult, len(scenarios))
	for i, sc := range scenarios {
		// Warm up both load shapes: the open loop spreads calls over more connections (and their caches).
		if _, err := sequential(ctx, cfg.Warmup, sc.call, &n); err != nil {
			return fmt.Errorf("%s warm-up: %w", sc.name, err)
		}
		if _, err := openLoop(ctx, cfg.Warmup, cfg.Rate, sc.call, &n); err != nil {
			return fmt.Errorf("%s warm-up: %w", sc.name, err)
		}
		seq[i] = latencyResult{Scenario: sc.name, Load: loadSeq}
		open[i] = latencyResult{Scenario: sc.name, Load: loadOpen}
	}
	for rep := range cfg.Repeats {
		if rep > 0 {
			if err := settle(ctx); err != nil {
				return err
			}
		}
		lat, err := sequentialInTurns(ctx, cfg.Calls, scenarios, &n)
		if err != nil {
			return err
		}
		for i, sc := range scenarios {
			s := summarize(lat[i])
			seq[i].Runs = append(seq[i].Runs, s)
			progress("%s sequential, run %d: p50 %.2f ms, p99 %.2f ms", sc.name, rep+1, ms(s.P50), ms(s.P99))
		}
		for i, sc := range scenarios {
			if i > 0 {
				if err := settle(ctx); err != nil {
					return err
				}
			}
			lat, err := openLoop(ctx, cfg.OpenCalls, cfg.Rate, sc.call, &n)
			if err != nil {
				return fmt.Errorf("%s open loop: %w", sc.name, err)
			}
			s := summarize(lat)
			open[i].Runs = append(open[i].Runs, s)
			progress("%s open loop %.0f/s, run %d: p50 %.2f ms, p99 %.2f ms", sc.name, cfg.Rate, rep+1, ms(s.P50), ms(s.P99))
		}
	}
	for i := range scenarios {
		res.Latency = append(res.Latency, seq[i], open[i])
	}
	return nil
}

// openLoop makes calls on a fixed schedule whether or not earlier ones are done, and measures each from
// its scheduled start, so a stall counts against every call it delays (no coordinated omission).
func openLoop(ctx context.Context, calls int, rate float64, call func(context.Context, int) (time.Time, error), n *int) ([]time.Duration, error) {
	period := time.Duration(float64(time.Second) / rate)
	lat := make([]time.Duration, calls)
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	begin := time.Now().Add(10 * time.Millisecond)
	for i := range calls {
		at := begin.Add(time.Duration(i) * period)
		time.Sleep(time.Until(at))
		wg.Add(1)
		go func(i, k int) {
			defer wg.Done()
			end, err := callWithTimeout(ctx, call, k, at)
			if err != nil {
				errs <- err
				return
			}
			lat[i] = end.Sub(at)
			if traceSlowCalls && lat[i] > 50*time.Millisecond {
				fmt.Fprintf(os.Stderr, "slow call %d at %s (+%s): %s\n", i, at.UTC().Format("15:04:05.000"), at.Sub(begin).Round(time.Millisecond), lat[i].Round(time.Millisecond))
			}
		}(i, *n)
		*n++
	}
	wg.Wait()
	close(errs)
	return lat, <-errs
}

// traceSlowCalls prints every open-loop call slower than 50 ms (GEM_PROOF_TRACE=1), to find stalls.
var traceSlowCalls = os.Getenv("GEM_PROOF_TRACE") != ""

// callWithTimeout makes one call; a call that takes 10 s is an error, not a data point.
func callWithTimeout(ctx context.Context, call func(context.Context, int) (time.Time, error), i int, start time.Time) (time.Time, error) {
	ctx, cancel := context.WithDeadline(ctx, start.Add(10*time.Second))
	defer cancel()
	return call(ctx, i)
}

// brainRun posts one enqueue_and_wait run and checks that it succeeded.
func brainRun(ctx context.Context, client *http.Client, b *brainProc, message string) (time.Time, error) {
	body, _ := json.Marshal(map[string]any{"message": message, "mode": "enqueue_and_wait"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/brain/run", bytes.NewReader(body))
	if err != nil {
		return time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := client.Do(req)
	if err != nil {
		return time.Time{}, err
	}
	defer resp.Body.Close()
	var out struct {
		OK       bool              `json:"ok"`
		Receipts []json.RawMessage `json:"receipts"`
	}
	data, err := io.ReadAll(resp.Body)
	end := time.Now()
	if err != nil {
		return end, err
	}
	if err := json.Unmarshal(data, &out); err != nil || resp.StatusCode != http.StatusOK || !out.OK || len(out.Receipts) != 1 {
		return end, fmt.Errorf("brain run failed (%s): %.300s", resp.Status, data)
	}
	return end, nil
}

// drainRiver queues n bench jobs, starts a bare River worker and returns jobs per second from the first
// job's start to the moment all are completed.
func drainRiver(ctx context.Context, cfg benchConfig, bins binaries, dbURL string, pool *pgxpool.Pool, ins *riverInserter, receipt bool) (drainRun, error) {
	if err := vacuum(pool, riverFloorTables...)(ctx); err != nil {
		return drainRun{}, err
	}
	var before int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&before); err != nil {
		return drainRun{}, err
	}
	if err := ins.insertMany(ctx, cfg.Drain, receipt); err != nil {
		return drainRun{}, err
	}
	machine0 := machineCPU()
	worker, err := startProc("river-worker", bins.self, nil, []string{roleEnv + "=river-worker", "DATABASE_URL=" + dbURL}, cfg.Log)
	if err != nil {
		return drainRun{}, err
	}
	defer func() { _ = worker.stop(15 * time.Second) }()
	return awaitDrain(ctx, pool, before, cfg.Drain, worker, machine0)
}

// drainGEM queues n calls with no executor running, starts one and returns the drain's rate and CPU and the
// executor's peak RSS.
func drainGEM(ctx context.Context, cfg benchConfig, bins binaries, dbURL string, pool *pgxpool.Pool, rep int, tool, input string) (drainRun, int64, error) {
	if err := vacuum(pool, gemTables...)(ctx); err != nil {
		return drainRun{}, 0, err
	}
	var before int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&before); err != nil {
		return drainRun{}, 0, err
	}
	// tool and input are constants of this file, not user input.
	if _, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input) SELECT $2, `+input+`
		FROM generate_series(1, $1) g`, cfg.Drain, tool); err != nil {
		return drainRun{}, 0, err
	}
	machine0 := machineCPU()
	exec, err := startExecutor(bins, dbURL, fmt.Sprintf("bench-executor-drain-%s-%d", tool, rep), nil, cfg.Log, pool, false)
	if err != nil {
		return drainRun{}, 0, err
	}
	run, err := awaitDrain(ctx, pool, before, cfg.Drain, exec, machine0)
	if stopErr := exec.stop(40 * time.Second); err == nil {
		err = stopErr
	}
	peak := exec.peakRSS()
	if err == nil {
		// Every drained call has its receipt (the job completes in the receipt's transaction).
		var missing int
		err = pool.QueryRow(ctx, `SELECT count(*) FROM river_job j WHERE j.id > $1
			AND NOT EXISTS (SELECT 1 FROM core_tool_receipts r WHERE r.call_id = (j.args->>'call_id')::uuid AND r.status = 'succeeded')`,
			before).Scan(&missing)
		if err == nil && missing > 0 {
			err = fmt.Errorf("%d drained calls have no succeeded receipt", missing)
		}
	}
	return run, peak, err
}

// insertAndWait makes a call with a plain INSERT, as any SQL client may, and returns when l (listening on
// gem_receipt) heard its receipt.
func insertAndWait(ctx context.Context, pool *pgxpool.Pool, l *listener, tool string, input any) (time.Time, error) {
	id := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, $2, $3)`, id, tool, input); err != nil {
		return time.Time{}, err
	}
	return l.wait(ctx, id.String())
}

// healthCheck is a sequential call of os.health_check through insertAndWait.
func healthCheck(pool *pgxpool.Pool, l *listener) func(context.Context, int) (time.Time, error) {
	return func(ctx context.Context, _ int) (time.Time, error) {
		return insertAndWait(ctx, pool, l, ospack.HealthCheck, map[string]any{})
	}
}

// awaitDrain waits until the n jobs after id before are finished and returns jobs per second, from the
// first job's start to the observation that the last was finished, and the CPU time per job of p and of
// the machine (whose busy time was machine0 when p started). An executor deletes completed jobs 10 minutes
// after they finish (GEM_EXECUTOR_COMPLETED_JOB_RETENTION), so a long drain's first jobs are gone by its
// end: the first start is read while they are there, and the drain fails only on jobs that were discarded or
// cancelled.
func awaitDrain(ctx context.Context, pool *pgxpool.Pool, before int64, n int, p *proc, machine0 time.Duration) (drainRun, error) {
	// A millisecond a job, at least 5 minutes: the history bench drains a million.
	wait := max(5*time.Minute, time.Duration(n)*time.Millisecond)
	deadline := time.Now().Add(wait)
	var first *time.Time
	for {
		if first == nil {
			// The first jobs fetched are the lowest ids (River fetches by priority, then scheduled_at, then id).
			if err := pool.QueryRow(ctx, `SELECT min(attempted_at) FROM (SELECT attempted_at FROM river_job WHERE id > $1
				ORDER BY id LIMIT 1000) f`, before).Scan(&first); err != nil {
				return drainRun{}, err
			}
		}
		// Whether any job is left, through River's fetching index: cheap however many are done, so the
		// poll takes no CPU from the drain it measures (counting the completed jobs took ~40 ms a time).
		var left bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job
			WHERE state IN ('available', 'running', 'retryable', 'scheduled') AND id > $1)`, before).Scan(&left); err != nil {
			return drainRun{}, err
		}
		now := time.Now()
		if !left && first != nil {
			machine, worker := machineCPU()-machine0, p.cpuTime()
			var lost int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE id > $1 AND state IN ('discarded', 'cancelled')`,
				before).Scan(&lost); err != nil {
				return drainRun{}, err
			}
			if lost > 0 {
				return drainRun{}, fmt.Errorf("the drain ended with %d of %d jobs discarded or cancelled", lost, n)
			}
			perCall := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
			return drainRun{rate: float64(n) / now.Sub(*first).Seconds(), workerCPU: perCall(worker), machineCPU: perCall(machine)}, nil
		}
		if p.exited() {
			return drainRun{}, fmt.Errorf("%s exited during the drain (%v):\n%s", p.name, p.err, p.tail())
		}
		if now.After(deadline) {
			return drainRun{}, fmt.Errorf("%d jobs were not finished after %s", n, wait)
		}
		select {
		case <-ctx.Done():
			return drainRun{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// targets compares the results with the goals in docs/benchmarks.md.
func targets(r *benchResult) []targetResult {
	river, gem, brain := r.latency(scRiver, loadSeq), r.latency(scGEM, loadSeq), r.latency(scBrain, loadSeq)
	note := r.latency(scGEMNote, loadSeq)
	ratio50, ratio99 := float64(gem.P50)/float64(river.P50), float64(gem.P99)/float64(river.P99)
	perTx, gemRate := r.drainRate(drReceipt), r.drainRate(drGEM)
	haveRiver, haveGEM, haveNote, haveBrain := river.N > 0, gem.N > 0, note.N > 0, brain.N > 0
	mcpCall, brainHealth := r.latency(scMCP, loadSeq), r.latency(scBrainHealth, loadSeq)
	mcpRatio := float64(mcpCall.P50) / float64(brainHealth.P50)
	relayed, direct := r.latency(scDevice, loadSeq), r.latency(scREST, loadSeq)
	added := relayed.P50 - direct.P50
	alone, busy := r.latency(scHealthAlone, loadSeq), r.latency(scHealthBusy, loadSeq)
	lim := r.Limits
	if lim == nil {
		lim = &limitsResult{}
	}
	metricsRatio, metricsOn, telemetryOff, haveMetrics := telemetryOverhead(r, scTelemetryMetrics)
	tracesRatio, tracesOn, _, haveTraces := telemetryOverhead(r, scTelemetryTraces)
	agent1, agent5 := r.latency(scAgent1, loadSeq), r.latency(scAgent5, loadSeq)
	agentRatio := float64(agent5.P50) / float64(agent1.P50)
	firstEvent := r.latency(scAgentStream, loadSeq)
	takeover := r.latency(scTakeover, loadSeq)
	return append([]targetResult{
		{"GEM insert → receipt p50", fmt.Sprintf("%.2f ms", ms(gem.P50)), "≤ 3 ms", gem.P50 <= 3*time.Millisecond, haveGEM},
		{"GEM insert → receipt p99", fmt.Sprintf("%.2f ms", ms(gem.P99)), "≤ 6 ms", gem.P99 <= 6*time.Millisecond, haveGEM},
		{"GEM / River floor p50", fmt.Sprintf("%.2f×", ratio50), "≤ 1.3×", ratio50 <= 1.3, haveGEM && haveRiver},
		{"GEM / River floor p99", fmt.Sprintf("%.2f×", ratio99), "≤ 1.3×", ratio99 <= 1.3, haveGEM && haveRiver},
		{"GEM os.create_note p50 (a tool that writes)", fmt.Sprintf("%.2f ms (%.2f× River)", ms(note.P50), float64(note.P50)/float64(river.P50)),
			"≤ 3 ms", note.P50 <= 3*time.Millisecond, haveNote && haveRiver},
		{"brain one-call run p50", fmt.Sprintf("%.2f ms", ms(brain.P50)), "≤ 5 ms", brain.P50 <= 5*time.Millisecond, haveBrain},
		{"MCP tools/call / POST /brain/run p50 (os.health_check)", fmt.Sprintf("%.2f× (%.2f vs %.2f ms)", mcpRatio, ms(mcpCall.P50), ms(brainHealth.P50)),
			"≤ 1.2×", mcpRatio <= 1.2, mcpCall.N > 0 && brainHealth.N > 0},
		{"device relay: p50 added to the same rest tool", fmt.Sprintf("%.2f ms (%.2f vs %.2f ms)", ms(added), ms(relayed.P50), ms(direct.P50)),
			"≤ 2 ms", added <= 2*time.Millisecond, relayed.N > 0 && direct.N > 0},
		{"limits: most calls at once (concurrency 2, two executors)", fmt.Sprintf("%d", lim.MaxConcurrent), "≤ 2",
			lim.MaxConcurrent <= limitConcurrency, r.Limits != nil},
		{"limits: most starts in any second (rate 50/s)", fmt.Sprintf("%d (%.1f calls/s overall)", lim.MaxInWindow, float64(lim.Calls)/max(lim.Seconds, 1e-9)), "≤ 50",
			lim.MaxInWindow <= limitRate, r.Limits != nil},
		{"limits: os.health_check p50 beside 250 waiting limited calls / alone", fmt.Sprintf("%.2f× (%.2f vs %.2f ms)", float64(busy.P50)/float64(alone.P50), ms(busy.P50), ms(alone.P50)),
			"≤ 1.5×", float64(busy.P50) <= 1.5*float64(alone.P50), alone.N > 0 && busy.N > 0},
		{"telemetry overhead, brain run p50: Prometheus on / all off", fmt.Sprintf("%.3f× (%.2f vs %.2f ms)", metricsRatio, ms(metricsOn.P50), ms(telemetryOff.P50)),
			fmt.Sprintf("≤ %.2f×", telemetryOverheadMax), metricsRatio <= telemetryOverheadMax, haveMetrics},
		{"telemetry overhead, brain run p50: Prometheus and OTLP traces on / all off", fmt.Sprintf("%.3f× (%.2f vs %.2f ms)", tracesRatio, ms(tracesOn.P50), ms(telemetryOff.P50)),
			fmt.Sprintf("≤ %.2f×", telemetryOverheadMax), tracesRatio <= telemetryOverheadMax, haveTraces},
		{"agent loop: a turn with 5 parallel tool calls / with 1 p50", fmt.Sprintf("%.2f× (%.2f vs %.2f ms)", agentRatio, ms(agent5.P50), ms(agent1.P50)),
			"≤ 1.5×", agentRatio <= 1.5, agent1.N > 0 && agent5.N > 0},
		{"streamed chat turn: first event p50", fmt.Sprintf("%.2f ms (the whole turn unstreamed: %.2f ms)", ms(firstEvent.P50), ms(agent1.P50)),
			"≤ 50 ms", firstEvent.P50 <= 50*time.Millisecond, firstEvent.N > 0},
		{"chat turn taken over: brain SIGKILL → turn's end p50", fmt.Sprintf("%.0f ms (lease %s)", ms(takeover.P50), takeoverLease),
			"≤ lease + 1 s", takeover.P50 <= takeoverLease+time.Second, takeover.N > 0},
		{"GEM drain / River receipt per tx", fmt.Sprintf("%.2f× (%.0f vs %.0f calls/s)", gemRate/perTx, gemRate, perTx), "≥ 3×",
			gemRate >= 3*perTx, gemRate > 0 && perTx > 0},
	}, append(append(scaleTargets(r), historyTargets(r)...), baselineTargets(r)...)...)
}

// printBench writes the results as tables.
func printBench(w io.Writer, cfg benchConfig, r *benchResult) {
	fmt.Fprintf(w, "\nGEM benchmark, %s, %d CPUs, PostgreSQL %s\n", r.Date.Format(time.DateOnly), r.CPUs, r.Postgres)
	printLatency(w, cfg, r)
	printThroughput(w, cfg, r.Throughput)
	printScale(w, r.Scale)
	printHistory(w, r.History)
	if l := r.Limits; l != nil {
		fmt.Fprintf(w, "\nlimits: %d calls of a rest tool with concurrency %d and %d/s on %d executors, queued at once: %.1f s (%.1f/s); "+
			"the service saw at most %d at once and %d in any second; waited p50 %.0f ms, max %.0f ms; put back to wait %.1f times per call (at most %d)\n",
			l.Calls, l.ConcurrencyBound, l.RateBound, l.Executors, l.Seconds, float64(l.Calls)/l.Seconds, l.MaxConcurrent, l.MaxInWindow,
			l.WaitP50MS, l.WaitMaxMS, l.SnoozesAvg, l.SnoozesMax)
	}
	if r.ExecutorPeakRSSK > 0 || r.BrainPeakRSSK > 0 {
		fmt.Fprintf(w, "\nmemory: executor peak RSS %.1f MiB, brain peak RSS %.1f MiB\n", float64(r.ExecutorPeakRSSK)/1024, float64(r.BrainPeakRSSK)/1024)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tmeasured\tgoal\t\t")
	for _, t := range r.Targets {
		verdict := "met"
		switch {
		case !t.Measured:
			verdict, t.Value = "not measured", "—"
		case !t.Met:
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", t.Name, t.Value, t.Target, verdict)
	}
	_ = tw.Flush()
}

// printLatency writes the latency table: every scenario's percentiles and its ratios to River's floor.
func printLatency(w io.Writer, cfg benchConfig, r *benchResult) {
	if len(r.Latency) == 0 {
		return
	}
	fmt.Fprintf(w, "latency: call made → receipt observed (ms); median over %d runs of %d sequential calls, and of %d calls at %.0f/s\n\n",
		cfg.Repeats, cfg.Calls, cfg.OpenCalls, cfg.Rate)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tload\tp50\tp95\tp99\tmax\tp50 per run\t× River p50\t× River p99\t")
	for _, l := range r.Latency {
		m := l.median()
		var runs []string
		for _, s := range l.Runs {
			runs = append(runs, fmt.Sprintf("%.2f", ms(s.P50)))
		}
		floor := r.latency(scRiver, l.Load)
		ratio50, ratio99 := "—", "—" // the floor was left out of this run
		if floor.N > 0 {
			ratio50, ratio99 = fmt.Sprintf("%.2f", float64(m.P50)/float64(floor.P50)), fmt.Sprintf("%.2f", float64(m.P99)/float64(floor.P99))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t\n", l.Scenario, l.Load, ms(m.P50), ms(m.P95), ms(m.P99), ms(m.Max),
			strings.Join(runs, " "), ratio50, ratio99)
	}
	_ = tw.Flush()
}

// printThroughput writes the drains' table: calls per second and CPU per call.
func printThroughput(w io.Writer, cfg benchConfig, rows []throughputResult) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nthroughput: calls per second to drain %d queued calls\n\n", cfg.Drain)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmedian\truns\tCPU µs per call: worker\tmachine\t")
	for _, t := range rows {
		var runs []string
		for _, v := range t.Rates {
			runs = append(runs, fmt.Sprintf("%.0f", v))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.0f\t%.0f\t\n", t.Scenario, medianOf(t.Rates), strings.Join(runs, " "),
			medianOf(t.WorkerCPU), medianOf(t.MachineCPU))
	}
	_ = tw.Flush()
}
