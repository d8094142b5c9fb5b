// Package metrics holds the executor's Prometheus collectors (docs/observability.md). Every label is
// bounded: the engine gives tool names from the registry (or a device's contract), anything else as
// "unknown"; no call id, input or caller's text is ever a label. A call's spans are the engine's.
package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets (seconds) span a call that commits in a millisecond to one that waits minutes.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// Metrics are the executor's instruments; a nil *Metrics counts nothing (metrics off, or an executor
// built without a registry).
type Metrics struct {
	calls         *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	handler       *prometheus.HistogramVec
	hits          *prometheus.CounterVec
	retries       *prometheus.CounterVec
	rescued       *prometheus.CounterVec
	batchCalls    prometheus.Histogram
	batchFailures prometheus.Counter
}

// New registers the executor's metrics on reg (nil: none). Registering twice on one registry (Main
// retrying a start) reuses what is there.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_calls_total",
			Help: "Receipts the executor wrote, by tool and status (succeeded, failed, not_configured)."}, []string{"tool", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gem_call_latency_seconds",
			Help:    "From the call's insert (core_tool_calls.created_at, the database's clock) to its receipt's commit, by tool.",
			Buckets: latencyBuckets}, []string{"tool"}),
		handler: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gem_handler_duration_seconds",
			Help: "How long tool handlers ran, by tool.", Buckets: latencyBuckets}, []string{"tool"}),
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_idempotency_hits_total",
			Help: "Calls answered from an earlier call's receipt (their idempotency key was held), by tool."}, []string{"tool"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_call_retries_total",
			Help: "Attempts that ended in a transient failure River retries (their transaction kept nothing), by tool."}, []string{"tool"}),
		rescued: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_rescued_calls_total",
			Help: "Running calls of dead executors this executor took up: retried (available again) or discarded (attempts spent)."},
			[]string{"outcome"}),
		batchCalls: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gem_batch_calls",
			Help:    "Calls per committed transaction (a lone call is a batch of one); its _count is the batches committed.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 8)}),
		batchFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "gem_batch_failures_total",
			Help: "Transactions that did not commit: every call they reached is retried."}),
	}
	var err error
	register := func(c prometheus.Collector) prometheus.Collector {
		if e := reg.Register(c); e != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(e, &are) {
				return are.ExistingCollector
			}
			err = errors.Join(err, e)
		}
		return c
	}
	m.calls = register(m.calls).(*prometheus.CounterVec)
	m.latency = register(m.latency).(*prometheus.HistogramVec)
	m.handler = register(m.handler).(*prometheus.HistogramVec)
	m.hits = register(m.hits).(*prometheus.CounterVec)
	m.retries = register(m.retries).(*prometheus.CounterVec)
	m.rescued = register(m.rescued).(*prometheus.CounterVec)
	m.batchCalls = register(m.batchCalls).(prometheus.Histogram)
	m.batchFailures = register(m.batchFailures).(prometheus.Counter)
	if err != nil {
		return nil, fmt.Errorf("error registering the executor's metrics: %w", err)
	}
	return m, nil
}

// ObserveHandler records how long a handler ran.
func (m *Metrics) ObserveHandler(tool string, d time.Duration) {
	if m != nil {
		m.handler.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// ObserveRescue counts the calls one pass of liveness rescue took up.
func (m *Metrics) ObserveRescue(retried, discarded int) {
	if m == nil {
		return
	}
	if retried > 0 {
		m.rescued.WithLabelValues("retried").Add(float64(retried))
	}
	if discarded > 0 {
		m.rescued.WithLabelValues("discarded").Add(float64(discarded))
	}
}

// BatchFailed counts a transaction that did not commit (each call it reached is Retried).
func (m *Metrics) BatchFailed() {
	if m != nil {
		m.batchFailures.Inc()
	}
}

// BatchCommitted records how many calls a committed transaction reached (none: nothing to record).
func (m *Metrics) BatchCommitted(calls int) {
	if m != nil && calls > 0 {
		m.batchCalls.Observe(float64(calls))
	}
}

// Receipt counts a committed receipt: its status, the latency from the call's insert (0: unknown) and
// whether an earlier call's receipt answered it.
func (m *Metrics) Receipt(tool, status string, latency time.Duration, hit bool) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(tool, status).Inc()
	if latency != 0 {
		m.latency.WithLabelValues(tool).Observe(latency.Seconds())
	}
	if hit {
		m.hits.WithLabelValues(tool).Inc()
	}
}

// Retried counts an attempt that ended in a transient failure River retries.
func (m *Metrics) Retried(tool string) {
	if m != nil {
		m.retries.WithLabelValues(tool).Inc()
	}
}
