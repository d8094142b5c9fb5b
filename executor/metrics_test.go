package executor_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// startMain starts the executor process's Main in this process, as cmd/executor does, on the test database.
func (b *testBundle) startMain(t *testing.T, edit func(*executor.Config)) *executor.Main {
	t.Helper()
	cfg := executor.Config{DatabaseURL: b.url, RegistryPath: b.regPath, ID: "test-" + uuid.NewString()[:8], SecretKey: testSecretKey,
		MetricsAddr: "127.0.0.1:0"}
	if edit != nil {
		edit(&cfg)
	}
	m := &executor.Main{Config: cfg, Handlers: testHandlers(b.outsideLog, businesspack.Config{FileStore: t.TempDir()}),
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
	require.NoError(t, m.Open(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

// TestMetrics scrapes a running executor's /metrics, as Prometheus does, after calls that succeed, fail,
// hit an idempotency key, are retried, and are rescued from a dead executor; and reads the queue's gauges.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// A call a dead executor was running: registered, holding no liveness lock.
	rescued := b.call(t, ctx, "os.health_check", `{}`)
	_, err := b.pool.Exec(ctx, `INSERT INTO core_executors (id, hostname, pid, version) VALUES ('ghost', 'gone', 1, 'test')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = '{ghost}'
		WHERE id = (SELECT job_id FROM core_tool_calls WHERE id = $1)`, rescued)
	require.NoError(t, err)
	// A call no executor takes (its job is in a queue none works) has waited 90 seconds.
	_, err = b.pool.Exec(ctx, `INSERT INTO river_job (args, kind, queue, state, scheduled_at)
		VALUES (jsonb_build_object('call_id', gen_random_uuid(), 'tool_name', 'os.health_check'), 'gem.tool_call', 'parked', 'available', now() - interval '90 seconds')`)
	require.NoError(t, err)

	m := b.startMain(t, func(c *executor.Config) { c.RescueInterval = 50 * time.Millisecond })
	url := m.MetricsURL()
	require.NotEmpty(t, url)

	before, status, err := telemetrytest.Scrape(url, "")
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.Zero(t, before.Value("gem_calls_total"), "nothing counted before the calls")

	var ids []uuid.UUID
	for range 5 {
		ids = append(ids, b.call(t, ctx, "os.health_check", `{}`))
	}
	unknown := b.call(t, ctx, "no.such_tool", `{}`)
	first := b.call(t, ctx, "test.keyed", `{"key": "metrics-k1"}`)
	b.waitOne(t, ctx, first)
	hit := b.call(t, ctx, "test.keyed", `{"key": "metrics-k1"}`)
	retried := b.call(t, ctx, "test.transient", `{"fail_attempts": 1}`)
	rs := b.wait(t, ctx, append(ids, unknown, hit, retried, rescued)...)
	require.True(t, rs[hit].IdempotencyHit)
	require.Equal(t, registry.StatusFailed, rs[unknown].Status)
	require.Equal(t, 2, rs[retried].Attempt)

	// Receipts are counted when their transaction commits, a moment after their notification.
	var f telemetrytest.Families
	require.Eventually(t, func() bool {
		f, _, err = telemetrytest.Scrape(url, "")
		return err == nil && f.Value("gem_calls_total") == 10
	}, 10*time.Second, 20*time.Millisecond, "receipts counted: %v", f.Value("gem_calls_total"))

	require.Equal(t, 6.0, f.Value("gem_calls_total", "tool", "os.health_check", "status", "succeeded"), "5 calls and the rescued one")
	require.Equal(t, 1.0, f.Value("gem_calls_total", "tool", "unknown", "status", "failed"), "an unknown tool's name is no label")
	require.Equal(t, 2.0, f.Value("gem_calls_total", "tool", "test.keyed", "status", "succeeded"))
	require.Equal(t, 1.0, f.Value("gem_idempotency_hits_total", "tool", "test.keyed"))
	require.Equal(t, 1.0, f.Value("gem_call_retries_total", "tool", "test.transient"))
	require.Equal(t, 1.0, f.Value("gem_rescued_calls_total", "outcome", "retried"))
	require.Equal(t, 6.0, f.Value("gem_call_latency_seconds", "tool", "os.health_check"))
	require.Equal(t, 6.0, f.Value("gem_handler_duration_seconds", "tool", "os.health_check"))
	require.Zero(t, f.Value("gem_handler_duration_seconds", "tool", "unknown"), "no handler ran for it")
	// The rescued call waited for the rescue: its insert → receipt latency is more than the others'.
	lat := f.Series("gem_call_latency_seconds", "tool", "os.health_check")[0].GetHistogram()
	require.Greater(t, lat.GetSampleSum(), 0.0)
	// Every call the transactions reached, the retried attempt too, is in a batch.
	batches := f.Series("gem_batch_calls")[0].GetHistogram()
	require.Equal(t, 11.0, batches.GetSampleSum())
	require.GreaterOrEqual(t, batches.GetSampleCount(), uint64(3))
	require.Zero(t, f.Value("gem_batch_failures_total"))

	// The queue, read from PostgreSQL at the scrape: the parked call waits, the others are done.
	require.Equal(t, 1.0, f.Value("gem_queue_calls", "state", "available"))
	require.Zero(t, f.Value("gem_queue_calls", "state", "running"))
	require.GreaterOrEqual(t, f.Value("gem_queue_oldest_waiting_seconds"), 90.0)
	require.Contains(t, f, "gem_queue_calls")
	require.Zero(t, f.Value("gem_queue_read_errors_total"))
	// The Go and process collectors, on the executor's own registry.
	require.Positive(t, f.Value("go_goroutines"))
	require.Contains(t, f, "process_cpu_seconds_total")

	// No label is a call id or other free text.
	uuidRe := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-`)
	for _, v := range f.AllLabelValues() {
		require.NotRegexp(t, uuidRe, v)
		require.NotContains(t, v, "no.such_tool")
	}
}

// TestMetricsToken: with GEM_METRICS_TOKEN, /metrics answers only that bearer token; with the address off,
// the executor serves nothing; a taken address it was given stops it from starting.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	const token = "scrape-token-0123456789"
	m := b.startMain(t, func(c *executor.Config) { c.Telemetry.MetricsToken = token })
	_, status, err := telemetrytest.Scrape(m.MetricsURL(), "")
	require.NoError(t, err)
	require.Equal(t, 401, status)
	_, status, err = telemetrytest.Scrape(m.MetricsURL(), "wrong-token-0123456789")
	require.NoError(t, err)
	require.Equal(t, 401, status)
	f, status, err := telemetrytest.Scrape(m.MetricsURL(), token)
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.Contains(t, f, "gem_batch_failures_total")

	off := b.startMain(t, func(c *executor.Config) { c.MetricsAddr = executor.MetricsOff })
	require.Empty(t, off.MetricsURL())

	taken := &executor.Main{Config: executor.Config{DatabaseURL: b.url, RegistryPath: b.regPath, ID: "test-taken",
		MetricsAddr: m.MetricsURL()[len("http://") : len(m.MetricsURL())-len("/metrics")]}, Log: zerolog.Nop()}
	err = taken.Open(context.Background())
	require.ErrorContains(t, err, "GEM_EXECUTOR_METRICS_ADDR")
}

// TestMetricsConfigFromEnv reads the metrics' and traces' variables.
func TestMetricsConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GEM_EXECUTOR_METRICS_ADDR": "OFF", "GEM_METRICS_TOKEN": "t0123456789abcdef",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "exec-a"}
	cfg, err := executor.ConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, executor.MetricsOff, cfg.MetricsAddr)
	require.Equal(t, "http://collector:4318/v1/traces", cfg.Telemetry.TracesEndpoint)
	require.Equal(t, "exec-a", cfg.Telemetry.ServiceName)
	require.Equal(t, executor.MetricsAddrDefault, executor.Config{}.WithDefaults().MetricsAddr)

	for _, bad := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
		{"GEM_METRICS_TOKEN": "short"},
		{"OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		_, err := executor.ConfigFromEnv(func(k string) string { return bad[k] })
		require.Error(t, err, "%v", bad)
	}
	for _, none := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
		{},
	} {
		cfg, err := executor.ConfigFromEnv(func(k string) string { return none[k] })
		require.NoError(t, err)
		require.Empty(t, cfg.Telemetry.TracesEndpoint, "%v", none)
	}
	cfg, err = executor.ConfigFromEnv(func(k string) string {
		return map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/x"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, "https://c/x", cfg.Telemetry.TracesEndpoint)
}
