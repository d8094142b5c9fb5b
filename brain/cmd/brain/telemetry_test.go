package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestMetricsEndpoint scrapes the brain's /metrics and its executor's, as Prometheus does, after a run, an
// agent's chat (an LLM request), a 404 under a route, unknown routes and methods.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	execAddr := sqltest.FreeAddr(t)
	e, err := testenv.StartExecutor(dbURL, "GEM_EXECUTOR_METRICS_ADDR="+execAddr)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	const metricsToken = "metrics-scraper-0123456789"
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Text: "You have no tasks."})
	m, err := startBrain(dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Telemetry.MetricsToken = metricsToken
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}
	metricsURL := m.Server.URL() + "/metrics"

	var run brain.RunResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/brain/run",
		map[string]any{"message": "create a task to call John tomorrow", "mode": "enqueue_and_wait"}, &run))
	require.True(t, run.OK, "%+v", run.Errors)
	missing := uuid.NewString()
	require.Equal(t, http.StatusNotFound, a.do(http.MethodGet, "/calls/"+missing, nil, nil))
	require.Equal(t, http.StatusNotFound, a.do(http.MethodGet, "/no/such/"+missing, nil, nil))
	require.Equal(t, http.StatusNotFound, a.do("BREW", "/coffee/"+missing, nil, nil))
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})
	answer, status := chatWith(t, a, agent, "what is on my list?", "")
	require.Equal(t, http.StatusOK, status, "%+v", answer)

	// Who may scrape: GEM_METRICS_TOKEN (which opens nothing else), or a caller's token; nobody else.
	_, status, err = telemetrytest.Scrape(metricsURL, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status)
	_, status, err = telemetrytest.Scrape(metricsURL, "not-a-token-0123456789")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status)
	_, status, err = telemetrytest.Scrape(metricsURL, testToken)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	scraper := &testAPI{t: t, url: m.Server.URL(), token: metricsToken}
	require.Equal(t, http.StatusUnauthorized, scraper.do(http.MethodGet, "/calls", nil, nil), "the metrics token opens /metrics alone")

	f, status, err := telemetrytest.Scrape(metricsURL, metricsToken)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	// Requests by route template; the raw path of a request no route matched is never a label.
	require.Equal(t, 1.0, f.Value("gem_http_requests_total", "method", "POST", "route", "/brain/run", "code", "200"))
	require.Equal(t, 1.0, f.Value("gem_http_requests_total", "method", "GET", "route", "/calls/:id", "code", "404"))
	require.Equal(t, 1.0, f.Value("gem_http_requests_total", "method", "GET", "route", "unmatched", "code", "404"))
	require.Equal(t, 1.0, f.Value("gem_http_requests_total", "method", "OTHER", "route", "unmatched"))
	require.Equal(t, 1.0, f.Value("gem_http_requests_total", "route", "/agents/:slug/chat", "code", "200"))
	require.Equal(t, 2.0, f.Value("gem_http_requests_total", "route", "/metrics", "code", "401"))
	require.Equal(t, 1.0, f.Value("gem_http_request_duration_seconds", "method", "POST", "route", "/brain/run"))
	for _, v := range f.AllLabelValues() {
		require.NotContains(t, v, missing)
		require.NotContains(t, v, "/no/such")
		require.NotContains(t, v, "BREW")
	}
	// The agent's LLM request: provider, model, tokens as the provider reported them, latency.
	require.Equal(t, 1.0, f.Value("gem_llm_requests_total", "provider", "openai", "model", "fake-model", "outcome", "ok"))
	require.Equal(t, 12.0, f.Value("gem_llm_tokens_total", "provider", "openai", "model", "fake-model", "kind", "output"))
	require.Positive(t, f.Value("gem_llm_tokens_total", "kind", "input"))
	require.Equal(t, 1.0, f.Value("gem_llm_request_duration_seconds", "provider", "openai", "model", "fake-model"))
	// The queue (read from PostgreSQL), the hub's devices, the Go and process collectors.
	require.Contains(t, f.LabelValues("gem_queue_calls", "state"), "available")
	require.Zero(t, f.Value("gem_queue_calls", "state", "running"))
	require.Contains(t, f, "gem_devices_connected")
	require.Zero(t, f.Value("gem_devices_connected"))
	require.Positive(t, f.Value("go_goroutines"))
	require.Contains(t, f, "process_resident_memory_bytes")

	// The executor's own /metrics: the run's call and the chat's.
	ef, status, err := telemetrytest.Scrape("http://"+execAddr+"/metrics", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Eventually(t, func() bool {
		ef, _, err = telemetrytest.Scrape("http://"+execAddr+"/metrics", "")
		return err == nil && ef.Value("gem_calls_total", "tool", "os.create_task", "status", "succeeded") == 1
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 1.0, ef.Value("gem_call_latency_seconds", "tool", "os.create_task"))

	// docs/observability.md lists every metric the two serve, and the Grafana dashboard uses only those.
	doc, err := os.ReadFile("../../../docs/observability.md")
	require.NoError(t, err)
	for _, fams := range []telemetrytest.Families{f, ef} {
		for name := range fams {
			if strings.HasPrefix(name, "gem_") {
				require.Contains(t, string(doc), "| `"+name+"` |", "docs/observability.md lists %s", name)
			}
		}
	}
	dash, err := os.ReadFile("../../../docs/grafana/gem-dashboard.json")
	require.NoError(t, err)
	require.True(t, json.Valid(dash))
	for _, name := range regexp.MustCompile(`gem_[a-z_]+`).FindAllString(string(dash), -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		require.Contains(t, string(doc), "| `"+name+"` |", "the dashboard's %s is documented", name)
	}
}

// TestMetricsOff: GEM_BRAIN_METRICS=off serves no /metrics (and counts nothing).
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	cfg, err := ConfigFromEnv(func(k string) string { return map[string]string{"GEM_BRAIN_METRICS": "off"}[k] })
	require.NoError(t, err)
	require.True(t, cfg.Telemetry.MetricsOff)
	m, err := startBrain(shared.dbURL, func(c *Config) { c.Telemetry = cfg.Telemetry })
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_, status, err := telemetrytest.Scrape(m.Server.URL()+"/metrics", testToken)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, status)
	_, err = ConfigFromEnv(func(k string) string { return map[string]string{"GEM_BRAIN_METRICS": "maybe"}[k] })
	require.ErrorContains(t, err, "GEM_BRAIN_METRICS")
}

// TestTraceAcrossTheQueue exports the brain's and the executor's spans to an OTLP/HTTP receiver and checks
// that one trace, continuing the caller's traceparent, runs from the brain's HTTP request through the queue
// to the executor's handler and receipt, every span linked to its parent.
func TestTraceAcrossTheQueue(t *testing.T) {
	t.Parallel()
	recv := telemetrytest.NewReceiver(true)
	t.Cleanup(recv.Close)
	pool, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	m, err := startBrain(dbURL, func(c *Config) { c.Telemetry.TracesEndpoint = recv.URL + "/v1/traces" })
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close(context.Background())
		}
	})

	// The caller traces too: its traceparent is the parent of the brain's span.
	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequest(http.MethodPost, m.Server.URL()+"/brain/run",
		strings.NewReader(`{"message": "create a task to trace the gutters tomorrow", "mode": "enqueue_and_wait"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("traceparent", fmt.Sprintf("00-%s-%s-01", traceID, callerSpan))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())

	// The call row carries the trace context the executor continued.
	var traceparent string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT traceparent FROM core_tool_calls WHERE tool_name = 'os.create_task'`).Scan(&traceparent))
	require.Regexp(t, regexp.MustCompile(`^00-`+traceID+`-[0-9a-f]{16}-01$`), traceparent)

	// Stopping both exports what they still hold.
	closed = true
	require.NoError(t, m.Close(context.Background()))
	e.Stop()
	spans, ok := recv.Await(15*time.Second, func(spans []telemetrytest.Span) bool {
		names := map[string]bool{}
		for _, s := range spans {
			names[s.Service+" "+s.Name] = true
		}
		return names["gem-brain POST /brain/run"] && names["gem-executor gem.receipt"]
	})
	require.True(t, ok, "spans received: %+v", spans)

	byID := map[string]telemetrytest.Span{}
	named := map[string]telemetrytest.Span{}
	for _, s := range spans {
		require.Equal(t, traceID, s.TraceID, "every span is in the caller's trace: %+v", s)
		byID[s.SpanID] = s
		named[s.Service+" "+s.Name] = s
	}
	// From the handler up to the caller: each span's parent is the one expected, in the process expected.
	chain := []string{"gem-executor gem.handler", "gem-executor gem.call", "gem-brain gem.enqueue", "gem-brain POST /brain/run"}
	for i := 0; i+1 < len(chain); i++ {
		child, ok := named[chain[i]]
		require.True(t, ok, "no span %s in %+v", chain[i], spans)
		parent, ok := byID[child.ParentSpanID]
		require.True(t, ok, "the parent of %s was not received", chain[i])
		require.Equal(t, chain[i+1], parent.Service+" "+parent.Name)
	}
	require.Equal(t, callerSpan, named["gem-brain POST /brain/run"].ParentSpanID)
	require.Equal(t, "/brain/run", named["gem-brain POST /brain/run"].Attributes["http.route"])
	require.Equal(t, "os.create_task", named["gem-executor gem.call"].Attributes["gem.tool"])
	require.Equal(t, "succeeded", named["gem-executor gem.call"].Attributes["gem.status"])
	for _, s := range []string{"gem-executor gem.validate", "gem-executor gem.receipt"} {
		require.Equal(t, named["gem-executor gem.call"].SpanID, named[s].ParentSpanID, s)
	}
	for _, s := range []string{"gem-brain gem.plan", "gem-brain gem.answer"} {
		require.Equal(t, named["gem-brain POST /brain/run"].SpanID, named[s].ParentSpanID, s)
	}
}
