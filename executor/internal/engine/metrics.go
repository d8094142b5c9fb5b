package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Metrics and spans of the executor (docs/observability.md). Every label is bounded: tool names come from
// the registry (or a device's contract), anything else is "unknown"; no call id, input or caller's text is
// ever a label.

const (
	// unknownTool is the tool label of a call naming no tool the executor knows.
	unknownTool = "unknown"
)

// Span names of a call in the executor: one gem.call per transaction a call takes part in (the first from
// the moment River hands the job over), a child of the span that inserted the call, with its checks, its
// handler and its receipt (ended when the receipt commits).
const (
	SpanCall     = "gem.call"
	SpanValidate = "gem.validate"
	SpanHandler  = "gem.handler"
	SpanReceipt  = "gem.receipt"
)

// latencyBuckets (seconds) span a call that commits in a millisecond to one that waits minutes.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// metrics are the executor's instruments; a nil *metrics counts nothing (metrics off, or an executor
// built without a registry).
type metrics struct {
	calls         *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	handler       *prometheus.HistogramVec
	hits          *prometheus.CounterVec
	retries       *prometheus.CounterVec
	rescued       *prometheus.CounterVec
	batchCalls    prometheus.Histogram
	batchFailures prometheus.Counter
}

// newMetrics registers the executor's metrics on reg (nil: none). Registering twice on one registry (Main
// retrying a start) reuses what is there.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
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

// toolLabel is a call's tool as a label: its registry (or device) tool's name, else "unknown".
func (e *Executor) toolLabel(a *attempt, name string) string {
	if a != nil && a.tool != nil {
		return a.tool.Name
	}
	if t, ok := e.reg.Tool(name); ok {
		return t.Name
	}
	return unknownTool
}

// observeHandler records how long a handler ran.
func (m *metrics) observeHandler(tool string, d time.Duration) {
	if m != nil {
		m.handler.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// observeRescue counts the calls one pass of liveness rescue took up.
func (m *metrics) observeRescue(retried, discarded int) {
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

// batchEnd is what runBatch reports of one transaction once it has committed or failed.
type batchEnd struct {
	tx *batchTx
	// ran are the calls the transaction reached; retried those it reached whose attempt River retries.
	ran     []*pending
	retried []*attempt
	err     error
}

// observeBatch records a transaction's metrics and ends its calls' spans, once it has committed (err nil)
// or failed (nothing kept; every call it reached is retried).
func (e *Executor) observeBatch(b batchEnd) {
	committed := time.Now()
	if m := e.metrics; m != nil {
		if b.err != nil {
			m.batchFailures.Inc()
			for _, p := range b.ran {
				m.retries.WithLabelValues(e.toolLabel(b.tx.attemptOf(p), p.args.ToolName)).Inc()
			}
		} else {
			if len(b.ran) > 0 {
				m.batchCalls.Observe(float64(len(b.ran)))
			}
			for _, r := range b.tx.receipts {
				tool := e.toolLabel(r.a, r.a.toolName)
				m.calls.WithLabelValues(tool, string(r.d.status)).Inc()
				if !r.a.createdAt.IsZero() {
					m.latency.WithLabelValues(tool).Observe(committed.Sub(r.a.createdAt).Seconds())
				}
				if r.d.hit {
					m.hits.WithLabelValues(tool).Inc()
				}
			}
			for _, a := range b.retried {
				m.retries.WithLabelValues(e.toolLabel(a, a.toolName)).Inc()
			}
		}
	}
	if b.tx != nil && e.tracer != nil {
		for _, a := range b.retried {
			if a.span != nil {
				a.span.SetStatus(codes.Error, "transient failure: River retries the call")
			}
		}
		b.tx.endSpans(len(b.ran), b.err)
	}
}

// attemptOf is the transaction's attempt at p (nil before it was loaded).
func (t *batchTx) attemptOf(p *pending) *attempt {
	if t == nil {
		return nil
	}
	for _, a := range t.attempts {
		if a.p == p {
			return a
		}
	}
	return nil
}

// startSpan starts the attempt's gem.call span (tracing on only), continuing the trace its job carries. The
// first span of a job's run starts when River handed the job over, so it shows the wait for a committer.
func (a *attempt) startSpan(ph phase) {
	if a.e.tracer == nil {
		return
	}
	start := a.p.since
	if start.IsZero() {
		start = time.Now()
	}
	a.p.since = time.Time{}
	a.traceCtx, a.span = a.e.tracer.Start(a.p.ctx, SpanCall, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("gem.call_id", a.args.CallID.String()), attribute.String("gem.tool", a.args.ToolName),
			attribute.Int("gem.attempt", a.job.Attempt), attribute.Int64("gem.job_id", a.job.ID), attribute.String("gem.phase", ph.String())))
}

// child starts a span under the attempt's gem.call span; a no-op when the attempt is not traced.
func (a *attempt) child(name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if a.span == nil {
		return a.ctx, trace.SpanFromContext(context.Background())
	}
	return telemetry.Start(a.traceCtx, name, attrs...)
}

// endSpans ends the spans of the calls the transaction reached: their receipts' spans, then their own.
func (t *batchTx) endSpans(batchSize int, err error) {
	for _, r := range t.receipts {
		if r.a.receiptSpan != nil {
			r.a.receiptSpan.SetAttributes(attribute.Int("gem.batch_calls", batchSize))
			telemetry.End(r.a.receiptSpan, err)
		}
	}
	for _, a := range t.attempts {
		if a.span == nil {
			continue
		}
		if a.draft != nil {
			a.span.SetAttributes(attribute.String("gem.status", string(a.draft.status)), attribute.Bool("gem.idempotency_hit", a.draft.hit))
			if a.draft.err != nil {
				a.span.SetAttributes(attribute.String("gem.error_code", string(a.draft.err.Code)))
				a.span.SetStatus(codes.Error, string(a.draft.err.Code))
			}
		}
		telemetry.End(a.span, err)
	}
}

// startReceiptSpan starts the span of a call's receipt, from the moment it is drafted to its commit.
func (a *attempt) startReceiptSpan(d *receiptDraft) {
	a.draft = d
	if a.span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("gem.status", string(d.status))}
	if d.err != nil {
		attrs = append(attrs, attribute.String("gem.error_code", string(d.err.Code)))
	}
	_, a.receiptSpan = telemetry.Start(a.traceCtx, SpanReceipt, attrs...)
}

// String names a phase in spans.
func (p phase) String() string {
	switch p {
	case phasePrepare:
		return "prepare"
	case phaseHandOff:
		return "hand_off"
	default:
		return "run"
	}
}

// riverMiddleware is what River's client runs around every job when tracing is on: the trace context the
// call's insert stored in the job's metadata (see gemsql.CallInsertParams.TraceParent) becomes the remote
// parent of the call's spans: one trace from the brain's request to the receipt. A job without one (a call
// typed in psql) starts a trace of its own. (otelriver's middleware would add a river.work span around the
// same work: measured on make bench's two cores, each span a call costs shows in its latency, and gem.call
// carries what it would: the job's id and attempt.)
func riverMiddleware() []rivertype.Middleware {
	return []rivertype.Middleware{
		river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
			var meta struct {
				TraceParent string `json:"traceparent"`
				TraceState  string `json:"tracestate"`
			}
			if len(job.Metadata) > 2 && json.Unmarshal(job.Metadata, &meta) == nil {
				ctx = telemetry.WithRemoteParent(ctx, meta.TraceParent, meta.TraceState)
			}
			return doInner(ctx)
		}),
	}
}
