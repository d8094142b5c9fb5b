package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The telemetry scenario: what metrics and traces cost a call. The brain's one-call run (POST /brain/run,
// enqueue_and_wait, one os.create_note: HTTP, plan, enqueue, executor, handler, receipt, answer) is
// measured sequentially on three stacks (an executor and a brain, each pair on a database of its own)
// running side by side: telemetry off; metrics on, both processes' /metrics scraped every second while the
// stack is measured (far more often than Prometheus's usual 15 s, so a scrape's cost shows); metrics and
// traces on, every span exported by OTLP/HTTP to an in-process receiver that reads and discards them.
//
// The stacks take turns in blocks of calls (telemetryBlocks per repeat, in a rotating order), so the
// machine's drift over the run (other work, autovacuum, CPU frequency) falls on the three alike: on a
// shared two-core machine, measuring them one after another on fresh processes varied ±20% from run to
// run, more than what is measured.
const (
	scTelemetryOff     = "brain /brain/run, telemetry off"
	scTelemetryMetrics = "brain /brain/run, metrics on"
	scTelemetryTraces  = "brain /brain/run, metrics and traces on"
	// telemetryOverheadMax is the goal: at most 5% added to the p50.
	telemetryOverheadMax = 1.05
	telemetryScrapeEvery = time.Second
	telemetryBlocks      = 10
)

// telemetryStack is one of the scenario's three settings, running.
type telemetryStack struct {
	scenario string
	metrics  bool
	traces   bool
	dbName   string
	pool     *pgxpool.Pool
	exec     *proc
	brain    *brainProc
	// execMetrics is the executor's /metrics URL (metrics on).
	execMetrics string
}

func benchTelemetry(ctx context.Context, cfg benchConfig, res *benchResult, c *cluster, bins binaries, prefix string,
	progress func(string, ...any)) (err error) {
	progress("telemetry: POST /brain/run on three stacks taking turns: telemetry off; metrics on (scraped every %s); metrics and traces on (exported by OTLP/HTTP)",
		telemetryScrapeEvery)
	receiver := telemetrytest.NewReceiver(false)
	defer receiver.Close()
	stacks := []*telemetryStack{
		{scenario: scTelemetryOff},
		{scenario: scTelemetryMetrics, metrics: true},
		{scenario: scTelemetryTraces, metrics: true, traces: true},
	}
	defer func() {
		for _, s := range stacks {
			if stopErr := s.stop(); err == nil {
				err = stopErr
			}
			if s.dbName != "" {
				_ = c.dropDatabase(context.Background(), s.dbName)
			}
		}
	}()
	for i, s := range stacks {
		s.dbName = fmt.Sprintf("%s_telemetry_%d", prefix, i)
		if err := s.start(ctx, cfg, c, bins, receiver.URL); err != nil {
			return fmt.Errorf("%s: %w", s.scenario, err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second}
	calls := func(s *telemetryStack) func(context.Context, int) (time.Time, error) {
		return func(ctx context.Context, i int) (time.Time, error) {
			return brainRun(ctx, client, s.brain, fmt.Sprintf("note that telemetry bench call %d went through the brain", i))
		}
	}
	n := 0
	for _, s := range stacks {
		if _, err := sequential(ctx, cfg.Warmup, calls(s), &n); err != nil {
			return fmt.Errorf("%s warm-up: %w", s.scenario, err)
		}
	}
	results := make([]latencyResult, len(stacks))
	for i, s := range stacks {
		results[i] = latencyResult{Scenario: s.scenario, Load: loadSeq}
	}
	block := max(cfg.Calls/telemetryBlocks, 1)
	for rep := range cfg.Repeats {
		for _, s := range stacks {
			if err := vacuum(s.pool, gemTables...)(ctx); err != nil {
				return err
			}
		}
		lat := make([][]time.Duration, len(stacks))
		cpu0 := make([]time.Duration, len(stacks))
		for i, s := range stacks {
			cpu0[i] = s.cpuTime()
		}
		for b := range telemetryBlocks {
			for k := range stacks {
				i := (k + b + rep) % len(stacks)
				s := stacks[i]
				stopScraping := func() {}
				if s.metrics {
					stopScraping = scrapeEvery(telemetryScrapeEvery, client,
						[]scrapeTarget{{s.brain.url + "/metrics", s.brain.token}, {s.execMetrics, ""}})
				}
				l, err := sequential(ctx, block, calls(s), &n)
				stopScraping()
				if err != nil {
					return fmt.Errorf("%s: %w", s.scenario, err)
				}
				lat[i] = append(lat[i], l...)
			}
		}
		for i, s := range stacks {
			sum := summarize(lat[i])
			results[i].Runs = append(results[i].Runs, sum)
			// The stack's processes' CPU over the whole repeat (their idle time while the others ran too, alike
			// for the three), per call of theirs.
			perCall := float64((s.cpuTime() - cpu0[i]).Microseconds()) / float64(len(lat[i]))
			progress("%s, run %d: p50 %.2f ms, p99 %.2f ms; brain and executor CPU %.0f µs per call", s.scenario, rep+1,
				ms(sum.P50), ms(sum.P99), perCall)
		}
	}
	res.Latency = append(res.Latency, results...)
	return nil
}

// start makes the stack's database and starts its executor and brain, set as its mode says.
func (s *telemetryStack) start(ctx context.Context, cfg benchConfig, c *cluster, bins binaries, otlpURL string) error {
	dbURL, err := c.freshDatabase(ctx, s.dbName)
	if err != nil {
		return err
	}
	if s.pool, err = gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-bench-telemetry", MaxConns: 4}); err != nil {
		return err
	}
	if _, err := gemsql.Migrate(ctx, s.pool, nil, packs.Lines()...); err != nil {
		return err
	}
	execEnv, brainEnv := []string{"GEM_EXECUTOR_METRICS_ADDR=off"}, []string{"GEM_BRAIN_METRICS=off"}
	if s.metrics {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		s.execMetrics = "http://" + addr + "/metrics"
		execEnv, brainEnv = []string{"GEM_EXECUTOR_METRICS_ADDR=" + addr}, []string{"GEM_BRAIN_METRICS=on"}
	}
	if s.traces {
		execEnv = append(execEnv, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlpURL)
		brainEnv = append(brainEnv, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlpURL)
	}
	if s.exec, err = startExecutor(bins, dbURL, "bench-executor-"+s.dbName, execEnv, cfg.Log, s.pool, true); err != nil {
		return err
	}
	s.brain, err = startBrain(bins, dbURL, brainEnv, cfg.Log)
	return err
}

// cpuTime is the CPU time the stack's brain and executor have used.
func (s *telemetryStack) cpuTime() time.Duration { return s.brain.cpuTime() + s.exec.cpuTime() }

// stop stops the stack's brain and executor and closes its pool.
func (s *telemetryStack) stop() error {
	var err error
	if s.brain != nil {
		err = s.brain.stop(15 * time.Second)
	}
	if s.exec != nil {
		if stopErr := s.exec.stop(40 * time.Second); err == nil {
			err = stopErr
		}
	}
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// scrapeTarget is a /metrics URL and the bearer token it needs ("" for none).
type scrapeTarget struct{ url, token string }

// scrapeEvery GETs every target each period, as Prometheus would, until the returned function is called.
func scrapeEvery(period time.Duration, client *http.Client, targets []scrapeTarget) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for _, target := range targets {
				req, err := http.NewRequest(http.MethodGet, target.url, nil)
				if err != nil {
					continue
				}
				if target.token != "" {
					req.Header.Set("Authorization", "Bearer "+target.token)
				}
				if resp, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// freeLoopbackAddr returns a loopback address whose port was free a moment ago.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// telemetryOverhead compares a telemetry setting with telemetry off: the median over the repeats of each
// repeat's p50 ratio (the three stacks of a repeat take turns, so each repeat is a pair measured under the
// same conditions), the two settings' medians, and whether both were measured.
func telemetryOverhead(r *benchResult, scenario string) (ratio float64, on, off summary, measured bool) {
	var onRuns, offRuns []summary
	for _, l := range r.Latency {
		switch {
		case l.Load != loadSeq:
		case l.Scenario == scenario:
			onRuns, on = l.Runs, l.median()
		case l.Scenario == scTelemetryOff:
			offRuns, off = l.Runs, l.median()
		}
	}
	if len(onRuns) == 0 || len(onRuns) != len(offRuns) {
		return 0, on, off, false
	}
	ratios := make([]float64, len(onRuns))
	for i := range onRuns {
		ratios[i] = float64(onRuns[i].P50) / float64(offRuns[i].P50)
	}
	return medianOf(ratios), on, off, true
}
