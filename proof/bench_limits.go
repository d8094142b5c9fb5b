package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gemhq/gem/sql/gemsql"
)

// The limits scenario: a rest tool with concurrency 2 and 50 calls per second, against a local HTTP server
// that takes 20 ms per request and counts what reaches it, worked by two executors; and os.health_check's
// latency alone and while the limited calls wait, in the same run.
const (
	limitConcurrency = 2
	limitRate        = 50
	limitWindow      = time.Second
	limitCalls       = 250
	limitServeTime   = 20 * time.Millisecond
	scHealthAlone    = "GEM, os.health_check (limits scenario: alone)"
	scHealthBusy     = "GEM, os.health_check (while limited calls wait)"
)

const limitedBenchTool = `{
	"name": "bench.limited",
	"description": "Asks a local HTTP service that takes 20 ms per request; at most 2 at once and 50 per second (make bench's limits).",
	"input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false},
	"output_schema": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}},
	"permissions": ["read:external"],
	"idempotency": {"mode": "safe-retry"},
	"timeout_ms": 5000,
	"limits": {"concurrency": {"max": 2}, "rate": {"max": 50, "per_ms": 1000}, "max_wait_ms": 120000},
	"implementation": {"type": "rest", "method": "POST", "url": "${GEM_BENCH_LIMITED_URL}/work"}
}`

// limitsResult is what the limits scenario measured.
type limitsResult struct {
	Calls            int     `json:"calls"`
	Executors        int     `json:"executors"`
	Succeeded        int     `json:"succeeded"`
	Seconds          float64 `json:"seconds"`
	MaxConcurrent    int     `json:"max_concurrent"`
	MaxInWindow      int     `json:"max_starts_in_window"`
	ConcurrencyBound int     `json:"concurrency_bound"`
	RateBound        int     `json:"rate_bound"`
	WaitP50MS        float64 `json:"limit_wait_p50_ms"`
	WaitMaxMS        float64 `json:"limit_wait_max_ms"`
	// SnoozesAvg and SnoozesMax count the times a call was put back to wait.
	SnoozesAvg float64 `json:"snoozes_avg"`
	SnoozesMax int     `json:"snoozes_max"`
}

// limitedServer serves POST /work in limitServeTime, and records the requests in flight and their starts.
type limitedServer struct {
	mu       sync.Mutex
	inFlight int
	most     int
	starts   []time.Time
}

func (s *limitedServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.starts = append(s.starts, time.Now())
	s.mu.Unlock()
	time.Sleep(limitServeTime)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok": true}`))
}

// maxInWindow is the most starts that fall in any window of length d.
func maxInWindow(starts []time.Time, d time.Duration) int {
	starts = slices.SortedFunc(slices.Values(starts), time.Time.Compare)
	most, j := 0, 0
	for i := range starts {
		for starts[i].Sub(starts[j]) >= d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

func benchLimits(ctx context.Context, cfg benchConfig, res *benchResult, bins binaries, gemURL string, gemPool *pgxpool.Pool,
	settle func(context.Context) error, progress func(string, ...any)) (err error) {
	regPath, err := registryWith(bins, limitedBenchTool)
	if err != nil {
		return err
	}
	defer os.Remove(regPath)
	srv := &limitedServer{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /work", srv.serve)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	defer hs.Close()

	progress("limits: a rest tool with concurrency %d and %d calls/s, two executors", limitConcurrency, limitRate)
	env := []string{"GEM_REGISTRY=" + regPath, "GEM_BENCH_LIMITED_URL=http://" + l.Addr().String()}
	var execs []*proc
	defer func() {
		for _, e := range execs {
			if stopErr := e.stop(40 * time.Second); err == nil {
				err = stopErr
			}
		}
	}()
	for i := range 2 {
		e, err := startExecutor(bins, gemURL, fmt.Sprintf("bench-executor-limits-%d", i+1), env, cfg.Log, gemPool, true)
		if err != nil {
			return err
		}
		execs = append(execs, e)
	}
	listener, err := listen(ctx, gemURL, gemsql.ReceiptChannel)
	if err != nil {
		return err
	}
	defer listener.close()
	health := healthCheck(gemPool, listener)
	if err := measureSequential(ctx, cfg, res, scHealthAlone, health, settle, progress); err != nil {
		return err
	}

	// The limited calls, all queued at once: they take turns for about limitCalls / limitRate seconds.
	start := time.Now()
	var first int64
	if err := gemPool.QueryRow(ctx, `WITH ins AS (INSERT INTO core_tool_calls (tool_name, input)
		SELECT 'bench.limited', jsonb_build_object('n', g) FROM generate_series(1, $1) g RETURNING 1) SELECT count(*) FROM ins`,
		limitCalls).Scan(&first); err != nil {
		return err
	}
	// os.health_check's latency while they wait (and snooze, and wake) beside it, until the last has its
	// receipt.
	busy := latencyResult{Scenario: scHealthBusy, Load: loadSeq}
	var lat []time.Duration
	for n := 0; ; n++ {
		if n%20 == 0 {
			var done int
			if err := gemPool.QueryRow(ctx, `SELECT count(*) FROM core_tool_receipts WHERE tool_name = 'bench.limited'`).Scan(&done); err != nil {
				return err
			}
			if done == limitCalls {
				break
			}
			if time.Since(start) > 3*time.Minute {
				return fmt.Errorf("limits: %d of %d limited calls have a receipt after 3 minutes", done, limitCalls)
			}
		}
		t0 := time.Now()
		end, err := callWithTimeout(ctx, health, n, t0)
		if err != nil {
			return fmt.Errorf("%s call %d: %w", scHealthBusy, n, err)
		}
		lat = append(lat, end.Sub(t0))
	}
	busy.Runs = append(busy.Runs, summarize(lat))
	res.Latency = append(res.Latency, busy)
	progress("%s: p50 %.2f ms, p99 %.2f ms over %d calls", scHealthBusy, ms(busy.Runs[0].P50), ms(busy.Runs[0].P99), len(lat))
	took := time.Since(start)
	lr := limitsResult{Calls: limitCalls, Executors: len(execs), Seconds: took.Seconds(),
		ConcurrencyBound: limitConcurrency, RateBound: limitRate}
	if err := gemPool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'succeeded'),
			coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY limit_wait_ms), 0), coalesce(max(limit_wait_ms), 0)
		FROM core_tool_receipts WHERE tool_name = 'bench.limited'`).Scan(&lr.Succeeded, &lr.WaitP50MS, &lr.WaitMaxMS); err != nil {
		return err
	}
	if err := gemPool.QueryRow(ctx, `SELECT coalesce(avg(n), 0), coalesce(max(n), 0) FROM (
			SELECT coalesce((j.metadata ->> 'snoozes')::int, 0) AS n FROM core_tool_calls c JOIN river_job j ON j.id = c.job_id
			WHERE c.tool_name = 'bench.limited') s`).Scan(&lr.SnoozesAvg, &lr.SnoozesMax); err != nil {
		return err
	}
	srv.mu.Lock()
	lr.MaxConcurrent, lr.MaxInWindow = srv.most, maxInWindow(srv.starts, limitWindow)
	srv.mu.Unlock()
	if lr.Succeeded != limitCalls {
		b, _ := json.Marshal(lr)
		return fmt.Errorf("limits: not every limited call succeeded: %s", b)
	}
	res.Limits = &lr
	progress("limits: %d calls in %.1f s (%.1f/s); at once at most %d (bound %d); in any second at most %d (bound %d); waited p50 %.0f ms; put back to wait %.1f times per call (at most %d)",
		lr.Calls, lr.Seconds, float64(lr.Calls)/lr.Seconds, lr.MaxConcurrent, lr.ConcurrencyBound, lr.MaxInWindow, lr.RateBound, lr.WaitP50MS,
		lr.SnoozesAvg, lr.SnoozesMax)
	return nil
}

// measureSequential measures a scenario's sequential calls only, Repeats times (settle before each).
func measureSequential(ctx context.Context, cfg benchConfig, res *benchResult, scenario string,
	call func(context.Context, int) (time.Time, error), settle func(context.Context) error, progress func(string, ...any)) error {
	seq := latencyResult{Scenario: scenario, Load: loadSeq}
	n := 0
	if _, err := sequential(ctx, cfg.Warmup, call, &n); err != nil {
		return fmt.Errorf("%s warm-up: %w", scenario, err)
	}
	for rep := range cfg.Repeats {
		if err := settle(ctx); err != nil {
			return err
		}
		lat, err := sequential(ctx, cfg.Calls, call, &n)
		if err != nil {
			return fmt.Errorf("%s: %w", scenario, err)
		}
		s := summarize(lat)
		seq.Runs = append(seq.Runs, s)
		progress("%s, run %d: p50 %.2f ms, p99 %.2f ms", scenario, rep+1, ms(s.P50), ms(s.P99))
	}
	res.Latency = append(res.Latency, seq)
	return nil
}
