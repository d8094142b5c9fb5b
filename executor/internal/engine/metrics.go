package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The spans of a call and what the engine reports to its metrics (package metrics, docs/observability.md).
// Every label is bounded: tool names come from the registry (or a device's contract), anything else is
// "unknown"; no call id, input or caller's text is ever a label.

// unknownTool is the tool label of a call naming no tool the executor knows.
const unknownTool = "unknown"

// Span names of a call in the executor: one gem.call per transaction a call takes part in (the first from
// the moment River hands the job over), a child of the span that inserted the call, with its checks, its
// handler and its receipt (ended when the receipt commits).
const (
	SpanCall     = "gem.call"
	SpanValidate = "gem.validate"
	SpanHandler  = "gem.handler"
	SpanReceipt  = "gem.receipt"
)

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
			m.BatchFailed()
			for _, p := range b.ran {
				m.Retried(e.toolLabel(b.tx.attemptOf(p), p.args.ToolName))
			}
		} else {
			m.BatchCommitted(len(b.ran))
			for _, r := range b.tx.receipts {
				var latency time.Duration
				if !r.a.createdAt.IsZero() {
					latency = committed.Sub(r.a.createdAt)
				}
				m.Receipt(e.toolLabel(r.a, r.a.toolName), string(r.d.status), latency, r.d.hit)
			}
			for _, a := range b.retried {
				m.Retried(e.toolLabel(a, a.toolName))
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
func (a *attempt) startSpan(s step) {
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
			attribute.Int("gem.attempt", a.job.Attempt), attribute.Int64("gem.job_id", a.job.ID), attribute.String("gem.phase", s.String())))
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
