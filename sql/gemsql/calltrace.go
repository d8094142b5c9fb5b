package gemsql

import (
	"context"

	"github.com/gemhq/gem/sql/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// SpanEnqueue is the span of an insert of calls; the calls carry its trace context to the executor.
const SpanEnqueue = "gem.enqueue"

// StartEnqueue starts the span of an insert of calls when ctx is traced (a no-op otherwise), and returns
// the function that ends it with the insert's error. The calls inserted under it carry its trace context.
func StartEnqueue(ctx context.Context, params []CallInsertParams) (context.Context, func(error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(error) {}
	}
	tools := make([]string, len(params))
	for i, p := range params {
		tools[i] = p.ToolName
	}
	ctx, span := telemetry.Start(ctx, SpanEnqueue, attribute.Int("gem.calls", len(params)), attribute.StringSlice("gem.tools", tools))
	return ctx, func(err error) { telemetry.End(span, err) }
}
