package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary play the bare River worker, as the proof binary does.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "river-worker" {
		os.Exit(runRiverWorker(os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func testBinaries(t *testing.T) binaries {
	t.Helper()
	bins, cleanup, err := findBinaries("")
	t.Cleanup(cleanup)
	require.NoError(t, err)
	return bins
}

// A smaller chaos run: 1,000 calls, an executor killed every second, PostgreSQL restarted, the brain in
// front, two devices of which one is killed every 1.5 s, eight sessions chatting through two brains per LLM
// provider of which one is killed every 2 s. It must find no violation.
func TestChaos(t *testing.T) {
	bins := testBinaries(t)
	cfg := chaosConfig{Calls: 1000, Rate: 100, Executors: 2, KillEvery: time.Second, RestartPG: true, Brain: true,
		Devices: 2, KillDeviceEvery: 1500 * time.Millisecond, ChatSessions: 8, ChatBrains: 2, KillBrainEvery: 2 * time.Second,
		PGDir: defaultChaosDir(bins.root) + "-test", SettleTime: 2 * time.Minute, Seed: uint64(time.Now().UnixNano())}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := chaos(ctx, cfg, bins, &out)
	require.NoError(t, err, out.String())
	rep.print(&out)
	t.Log("\n" + out.String())
	require.Empty(t, rep.Violations)

	counts := map[string]string{}
	for _, c := range rep.Counts {
		counts[c[0]] = c[1]
	}
	require.Equal(t, "1", counts["PostgreSQL restarts"])
	require.Equal(t, "0", counts["calls without a receipt"])
	require.NotEqual(t, "0", counts["executors SIGKILLed"])
	require.NotEqual(t, "0", counts["keyed idempotency hits"], "the run has duplicated keyed calls")
	require.NotEqual(t, "0", counts["receipts succeeded"])
	var deviceCalls, deviceSucceeded, devicesKilled, devicesStarted int
	_, err = fmt.Sscanf(counts["device calls / succeeded"], "%d / %d", &deviceCalls, &deviceSucceeded)
	require.NoError(t, err, counts["device calls / succeeded"])
	_, err = fmt.Sscanf(counts["devices SIGKILLed / started"], "%d / %d", &devicesKilled, &devicesStarted)
	require.NoError(t, err, counts["devices SIGKILLed / started"])
	require.Positive(t, deviceSucceeded, "device calls succeeded through the kills")
	require.Positive(t, devicesKilled, "devices were killed")
	require.Equal(t, "0", counts["device effects that happened twice"])
	// Only a call killed during its SMS send may fail (outcome_unknown); executor deaths and the restart
	// must not fail healthy calls.
	require.Equal(t, "0", counts["receipts failed: other codes"])

	var turns, answered int
	_, err = fmt.Sscanf(counts["chat: turns sent / answered 200 (by provider)"], "%d / %d", &turns, &answered)
	require.NoError(t, err, counts["chat: turns sent / answered 200 (by provider)"])
	require.Positive(t, answered, "chat turns were answered")
	require.Equal(t, turns, answered)
	require.NotEqual(t, "0", counts["chat: brains SIGKILLed (and restarted)"])
	var inFlight, inFlightOK int
	_, err = fmt.Sscanf(counts["chat: turns in flight while PostgreSQL was down / answered ok"], "%d / %d", &inFlight, &inFlightOK)
	require.NoError(t, err, counts["chat: turns in flight while PostgreSQL was down / answered ok"])
	require.Positive(t, inFlight, "the restart came while turns were in flight")
	require.Equal(t, "0", counts["chat: steps asked after their answer was journaled"])
	require.Equal(t, "0", counts["chat: sessions interleaving turns"])
}

// The checks catch what they claim to: on a database where calls were lost, left without a receipt, wrote
// their note twice, sent an SMS twice or failed after sending, each is reported.
func TestChaosChecksFindViolations(t *testing.T) {
	pool, _ := sqltest.NewDB(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	noReceipt, twiceNoted, smsTwice, smsFailed, lost := newID(), newID(), newID(), newID(), newID()
	exec(`INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, 'os.create_note', '{"title": "a"}')`, noReceipt)
	exec(`INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, 'os.create_note', '{"title": "b"}')`, twiceNoted)
	exec(`INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, 'comms.send_sms', '{"to": "+61411111111", "message": "chaos x", "context_ref": {"type": "personal", "id": "x"}}')`, smsTwice)
	exec(`INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, 'comms.send_sms', '{"to": "+61411111112", "message": "chaos y", "context_ref": {"type": "personal", "id": "y"}}')`, smsFailed)
	exec(`INSERT INTO os_notes (title, created_by_call) VALUES ('b', $1), ('b', $1)`, twiceNoted)
	exec(`INSERT INTO core_tool_receipts (call_id, tool_name, status, result) VALUES ($1, 'os.create_note', 'succeeded', '{}')`, twiceNoted)
	exec(`INSERT INTO core_tool_receipts (call_id, tool_name, status, result) VALUES ($1, 'comms.send_sms', 'succeeded', '{}')`, smsTwice)
	exec(`INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code) VALUES ($1, 'comms.send_sms', 'failed', '{"code": "provider_error", "message": "no"}', 'provider_error')`, smsFailed)

	calls := []chaosCall{{id: noReceipt}, {id: twiceNoted}, {id: smsTwice}, {id: smsFailed}, {id: lost}}
	rep := &chaosReport{}
	require.NoError(t, checkChaos(ctx, pool, calls, map[string]int{"chaos x": 2, "chaos y": 1}, rep))
	all := strings.Join(rep.Violations, "\n")
	for _, want := range []string{
		"1 calls of the run are not in core_tool_calls",
		"1 calls have no receipt",
		"1 calls are still queued or running",
		"4 River jobs are left unfinished",
		"1 a none-mode call wrote its note twice",
		"1 a succeeded note call has no note or several",
		"1 none-mode SMS calls sent their message more than once",
		"1 SMS calls failed with a definite error although their message went out",
	} {
		require.Contains(t, all, want)
	}
}

// A bench with a baseline build (here this one again, as another build's folder holds it: bin/ and its
// registry) measures its /brain/run and one-call chat turn alternating with this build's, in the same run,
// and compares them in two targets. A folder without a build is refused before anything runs.
func TestBenchBaseline(t *testing.T) {
	bins := testBinaries(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	var stderr bytes.Buffer
	require.Equal(t, 2, benchCommand(context.Background(), []string{"-baseline", dir}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), "make build")
	for from, to := range map[string]string{bins.executor: "bin/executor", bins.brain: "bin/brain", filepath.Join(bins.root, "tools.registry.json"): "tools.registry.json"} {
		require.NoError(t, os.Symlink(from, filepath.Join(dir, to)))
	}

	c, err := benchCluster(bins.root)
	require.NoError(t, err)
	cfg := benchConfig{Calls: 20, OpenCalls: 20, Rate: 100, Drain: 100, Repeats: 1, Warmup: 5, Timeout: 5 * time.Minute,
		Only: map[string]bool{"brain": true, "code": true}, Baseline: dir, dbPrefix: "gem_bench_baseline_test"}
	res, err := bench(context.Background(), cfg, c, bins)
	require.NoError(t, err)
	for _, sc := range []string{scBrain, scBrainBaseline, scAgent1, scAgent1Baseline} {
		require.Positive(t, res.latency(sc, loadSeq).N, sc)
	}
	var compared []string
	for _, tr := range res.Targets {
		if strings.Contains(tr.Name, "the baseline build's") {
			require.True(t, tr.Measured, tr.Name)
			compared = append(compared, tr.Name)
		}
	}
	require.Len(t, compared, 2, "/brain/run and the chat turn, each against the baseline")
}

// A short bench runs every scenario end to end and prints the table with every target.
func TestBenchSmoke(t *testing.T) {
	bins := testBinaries(t)
	c, err := benchCluster(bins.root)
	require.NoError(t, err)
	cfg := benchConfig{Calls: 40, OpenCalls: 40, Rate: 100, Drain: 400, Repeats: 1, Warmup: 10, Timeout: 5 * time.Minute,
		History: 3000, Backlog: 300, dbPrefix: "gem_bench_test"}
	res, err := bench(context.Background(), cfg, c, bins)
	require.NoError(t, err)
	require.Len(t, res.Latency, 40, "17 scenarios, each sequential and open loop, the limits scenario's two sequential rows, the telemetry scenario's three and the takeover's one")
	for _, l := range res.Latency {
		m := l.median()
		switch l.Scenario {
		case scHealthBusy:
			require.Greater(t, m.N, 0, "calls are made until the limited calls are done")
		case scTakeover:
			require.Equal(t, takeoverSamples, m.N, "each sample starts a brain and kills it")
		default:
			require.Equal(t, 40, m.N, l.Scenario)
		}
		require.Greater(t, m.P50, time.Duration(0), l.Scenario)
		require.LessOrEqual(t, m.P50, m.P99, l.Scenario)
	}
	require.Len(t, res.Throughput, 4)
	for _, tr := range res.Throughput {
		require.Len(t, tr.Rates, 1)
		require.Greater(t, tr.Rates[0], 0.0, tr.Scenario)
		require.Greater(t, tr.WorkerCPU[0], 0.0, tr.Scenario)
		require.Greater(t, tr.MachineCPU[0], 0.0, tr.Scenario)
	}
	require.Greater(t, res.ExecutorPeakRSSK, int64(1000))
	require.Greater(t, res.BrainPeakRSSK, int64(1000))
	require.Len(t, res.Targets, 23)
	for _, tg := range res.Targets {
		require.True(t, tg.Measured, tg.Name)
	}
	// The scale scenario's control drains with its batches capped at the calls per commit the split four
	// executors reached just before it, and the cap holds.
	sc := res.Scale
	require.NotNil(t, sc)
	require.Len(t, sc.Configs, 5)
	for _, conf := range sc.Configs {
		require.Len(t, conf.Runs, 1, conf.Shape)
		require.Greater(t, conf.Runs[0].Rate, 0.0, conf.Shape)
	}
	split4, capped, added := sc.config(scaleSplit, 4), sc.config(scaleCapped, 1), sc.config(scaleAdded, 4)
	require.Equal(t, executor.MaxWorkersDefault/4, split4.WorkersEach)
	require.Equal(t, max(1, int(math.Round(split4.Runs[0].CallsPerCommit))), capped.Runs[0].BatchMax)
	require.LessOrEqual(t, capped.Runs[0].CallsPerCommit, float64(capped.Runs[0].BatchMax))
	require.Zero(t, split4.Runs[0].BatchMax)
	require.Equal(t, executor.MaxWorkersDefault, added.WorkersEach)
	require.NotNil(t, res.Limits)
	require.Equal(t, limitCalls, res.Limits.Succeeded)
	require.LessOrEqual(t, res.Limits.MaxConcurrent, limitConcurrency)
	// make bench's target is limitRate on a quiet machine. Here, beside other test packages on two cores, a
	// request can reach the service tens of milliseconds after the guard let it start (more than the
	// windows' 25 ms margin), so a tenth more is allowed; without the rate limit about twice limitRate would
	// arrive (concurrency 2 of 20 ms requests).
	require.LessOrEqual(t, res.Limits.MaxInWindow, limitRate+limitRate/10)
	h := res.History
	require.NotNil(t, h)
	require.Equal(t, 3000, h.Receipts)
	require.Greater(t, h.EmptyDrain, 0.0)
	require.Greater(t, h.HistoryDrain, 0.0)
	require.Len(t, h.Audit, len(auditQueries))
	for _, q := range h.Audit {
		require.Greater(t, q.Median, time.Duration(0), q.Name)
		require.Contains(t, q.Plan, "Execution Time", q.Name)
	}

	var out bytes.Buffer
	printBench(&out, cfg, res)
	for _, want := range []string{scRiver, scGEM, scGEMNote, scBrain, scBrainHealth, scMCP, scMCPSDK, scCode5, scRuns5, scAgent1, scAgent5, scAgentStream, scREST, scRESTGo, scDevice, scHealthAlone, scHealthBusy,
		drNoop, drReceipt, drGEM, drGEMNote, "peak RSS", "GEM / River floor p50", "MCP tools/call / POST /brain/run", "device relay",
		"limits: most calls at once", "agent loop: a turn with 5 parallel tool calls / with 1", "streamed chat turn: first event p50", "limits: most starts in any second", scTelemetryOff, scTelemetryMetrics, scTelemetryTraces,
		"telemetry overhead, brain run p50: Prometheus on", "telemetry overhead, brain run p50: Prometheus and OTLP traces on",
		scHistEmpty, scHistFull, "several executors: 2 executors' drain / 1 executor's", "(200 workers each)", "batches capped", "history: drain of 300 queued calls with 3,000 receipts", "history: slowest audit query", "core_recent_failures"} {
		require.True(t, strings.Contains(out.String(), want), "the table lacks %q:\n%s", want, out.String())
	}
}

// A run that leaves scenarios out says which targets it did not measure instead of judging them.
func TestTargetsNotMeasured(t *testing.T) {
	t.Parallel()
	res := &benchResult{Latency: []latencyResult{{Scenario: scRiver, Load: loadSeq, Runs: []summary{{N: 10, P50: 3 * time.Millisecond, P99: 6 * time.Millisecond}}}}}
	res.Targets = targets(res)
	var out bytes.Buffer
	printBench(&out, benchConfig{Repeats: 1}, res)
	for _, tg := range res.Targets {
		require.False(t, tg.Measured, tg.Name)
	}
	require.NotContains(t, out.String(), "MISSED")
	require.NotContains(t, out.String(), " met")
	require.Equal(t, 23, strings.Count(out.String(), "not measured"), out.String())
	// Sections of scenarios left out are not printed empty, and the scale targets name the workers the
	// scenario would have split.
	require.NotContains(t, out.String(), "throughput:")
	require.NotContains(t, out.String(), "peak RSS")
	require.Contains(t, out.String(), fmt.Sprintf("(same %d workers in all)", executor.MaxWorkersDefault))
	require.Contains(t, out.String(), "history: drain of 1M queued calls with 10M receipts / 1M calls on empty tables")

	// Without the River floor, a scenario's ratios to it are not printed as infinities.
	noFloor := &benchResult{Latency: []latencyResult{{Scenario: scGEM, Load: loadSeq, Runs: []summary{{N: 10, P50: 3 * time.Millisecond, P99: 6 * time.Millisecond}}}}}
	noFloor.Targets = targets(noFloor)
	out.Reset()
	printBench(&out, benchConfig{Repeats: 1}, noFloor)
	require.NotContains(t, out.String(), "Inf")
	var gemRow string
	for line := range strings.Lines(out.String()) {
		if strings.Contains(line, scGEM) && strings.Contains(line, loadSeq) {
			gemRow = line
		}
	}
	require.Regexp(t, `—\s+—\s*$`, gemRow, "the ratios of %s to a floor that did not run", scGEM)

	// With GEM measured too, the latency targets are judged.
	res.Latency = append(res.Latency, latencyResult{Scenario: scGEM, Load: loadSeq, Runs: []summary{{N: 10, P50: 4 * time.Millisecond, P99: 7 * time.Millisecond}}})
	res.Targets = targets(res)
	require.True(t, res.Targets[0].Measured)
	require.False(t, res.Targets[0].Met, "4 ms is over 3 ms")
	require.True(t, res.Targets[2].Measured)
	require.False(t, res.Targets[2].Met, "4/3 is over 1.3")
	require.True(t, res.Targets[3].Met, "7/6 is within 1.3")
}

// Compared scenarios' sequential calls take turns call by call, so a drift of the machine weighs on each
// alike; each scenario gets its own latencies, and an error names the scenario that failed.
func TestSequentialInTurns(t *testing.T) {
	t.Parallel()
	var order []string
	scenario := func(name string, took time.Duration) latencyScenario {
		return latencyScenario{name: name, call: func(_ context.Context, i int) (time.Time, error) {
			order = append(order, fmt.Sprintf("%s%d", name, i))
			return time.Now().Add(took), nil
		}}
	}
	n := 0
	lat, err := sequentialInTurns(context.Background(), 3, []latencyScenario{scenario("a", time.Second), scenario("b", time.Hour)}, &n)
	require.NoError(t, err)
	require.Equal(t, []string{"a0", "b1", "a2", "b3", "a4", "b5"}, order)
	require.Equal(t, 6, n)
	require.Len(t, lat, 2)
	require.Len(t, lat[0], 3)
	for i := range 3 {
		require.Less(t, lat[0][i], time.Minute, "a's latencies are a's")
		require.Greater(t, lat[1][i], time.Minute, "b's latencies are b's")
	}

	failing := latencyScenario{name: "c", call: func(context.Context, int) (time.Time, error) { return time.Now(), fmt.Errorf("refused") }}
	_, err = sequentialInTurns(context.Background(), 3, []latencyScenario{scenario("a", 0), failing}, &n)
	require.ErrorContains(t, err, "c sequential, call 7: refused")
}

// The devices' check catches what it claims to: an effect made twice, a succeeded call no device answered,
// and a call that ended before a device ran it whose effect happened anyway.
func TestChaosDeviceChecksFindViolations(t *testing.T) {
	pool, _ := sqltest.NewDB(t)
	ctx := context.Background()
	lab := &labService{hits: map[string]int{"effect/twice": 2, "effect/unavailable": 1}}
	receipt := func(tool, key, status, code string) {
		t.Helper()
		id := uuid.Must(uuid.NewV7())
		_, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, $2, jsonb_build_object('key', $3::text))`, id, tool, key)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, result, error, error_code)
			VALUES ($1, $2, $3, CASE WHEN $3 = 'succeeded' THEN '{}'::jsonb END,
				CASE WHEN $3 <> 'succeeded' THEN jsonb_build_object('code', $4::text, 'message', 'x') END, nullif($4, ''))`, id, tool, status, code)
		require.NoError(t, err)
	}
	receipt("lab.effect", "twice", "succeeded", "")
	receipt("lab.whoami", "unanswered", "succeeded", "")
	receipt("lab.effect", "unavailable", "failed", "device_unavailable")
	receipt("lab.effect", "honest", "failed", "outcome_unknown")

	rep := &chaosReport{}
	require.NoError(t, (&chaosFleet{rig: &deviceRig{lab: lab}}).check(ctx, pool, rep))
	all := strings.Join(rep.Violations, "\n")
	for _, want := range []string{
		"1 device calls of mode none made their outside effect more than once",
		"1 succeeded device calls were never answered by a device",
		"1 device calls ended before a device ran them, yet their effect happened",
	} {
		require.Contains(t, all, want)
	}
	require.Len(t, rep.Violations, 3, all)
}

// newID is a call id as GEM makes them: a UUIDv7 (history is partitioned by it, docs/retention.md).
func newID() uuid.UUID { return uuid.Must(uuid.NewV7()) }
