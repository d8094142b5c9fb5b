package telemetry_test

import (
	"context"
	"testing"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// With tracing off, the spans GEM's code starts cost nothing: no allocation, no trace context. (Not
// parallel: AllocsPerRun counts the whole process's allocations.)
func TestTracingOffCostsNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		c, span := telemetry.Start(ctx, "gem.call", attribute.String("gem.tool", "os.health_check"), attribute.Int("gem.attempt", 1))
		span.End()
		if tp, _ := telemetry.TraceContext(c); tp != "" {
			t.Fatal("a trace context without tracing")
		}
	})
	require.Zero(t, allocs)
	tel, err := telemetry.New(telemetry.Config{MetricsOff: true}, "gem-test")
	require.NoError(t, err)
	require.False(t, tel.Tracing())
	require.Nil(t, tel.Registry)
	require.Nil(t, tel.Registerer())
	require.NoError(t, tel.Register(nil), "registering on no registry does nothing")
	require.NoError(t, tel.Shutdown(ctx))
}

// The trace context a span stores with a call is the one the executor continues.
func TestTraceContextRoundTrip(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "POST /brain/run")
	ctx, child := telemetry.Start(ctx, "gem.enqueue")
	require.True(t, child.IsRecording(), "made by the parent's provider")
	traceparent, _ := telemetry.TraceContext(ctx)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, traceparent)

	remote := trace.SpanContextFromContext(telemetry.WithRemoteParent(context.Background(), traceparent, "vendor=x"))
	require.True(t, remote.IsRemote())
	require.Equal(t, span.SpanContext().TraceID(), remote.TraceID())
	require.Equal(t, child.SpanContext().SpanID(), remote.SpanID())
	require.Equal(t, "vendor=x", remote.TraceState().String())
	require.False(t, trace.SpanContextFromContext(telemetry.WithRemoteParent(context.Background(), "garbage", "")).IsValid())
}
