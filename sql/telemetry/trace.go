package telemetry

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of GEM's own spans.
const Scope = "github.com/gemhq/gem"

// Start starts a span named name, a child of ctx's span and made by the tracer provider that made it. When
// ctx carries no span (tracing is off, or this path is not traced) it returns ctx and a no-op span at once:
// the code that calls it need not know whether tracing is on, and pays nothing when it is off.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, parent
	}
	// A copy escapes, not attrs: a caller's attributes stay on its stack when tracing is off.
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithAttributes(slices.Clone(attrs)...))
}

// propagator is the W3C Trace Context format: traceparent and tracestate.
var propagator = propagation.TraceContext{}

// TraceContext returns the W3C trace context of ctx's span (traceparent and tracestate; "" when ctx has no
// valid span). The brain stores it with each call it makes (core_tool_calls.traceparent), the call's insert
// trigger copies it into the River job's metadata, and the executor continues the trace from there.
func TraceContext(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	return carrier["traceparent"], carrier["tracestate"]
}

// WithRemoteParent returns ctx carrying the span context a W3C traceparent (and tracestate) names, as the
// remote parent of the spans started from it; ctx as it is when traceparent is empty or invalid.
func WithRemoteParent(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		carrier["tracestate"] = tracestate
	}
	return propagator.Extract(ctx, carrier)
}

// Extract returns ctx carrying the trace context of an incoming HTTP request's headers (traceparent,
// tracestate), if any.
func Extract(ctx context.Context, header propagation.HeaderCarrier) context.Context {
	return propagator.Extract(ctx, header)
}

// End ends span, marking it failed with err when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
