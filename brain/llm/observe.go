package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
)

// SpanComplete is the span of one LLM request.
const SpanComplete = "gem.llm.complete"

// llmBuckets (seconds) span a local model's answer to a long one.
var llmBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120}

// Observed wraps c so that each request is counted in reg (gem_llm_requests_total,
// gem_llm_tokens_total, gem_llm_request_duration_seconds, by provider and model; reg nil counts nothing)
// and, when its context is traced, has a span. Models are the configured one and those agents name
// (set by admins), so the model label stays bounded.
func Observed(c Client, reg prometheus.Registerer) (Client, error) {
	o := &observed{Client: c}
	if reg == nil {
		return o, nil
	}
	o.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_llm_requests_total",
		Help: "LLM requests (each attempt of a step, retries included) by provider, model and outcome (ok, rejected, rate_limited, timeout, error)."}, []string{"provider", "model", "outcome"})
	o.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_llm_tokens_total",
		Help: "LLM tokens by provider, model and kind (input, output), as the provider reported them."}, []string{"provider", "model", "kind"})
	o.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gem_llm_request_duration_seconds",
		Help: "How long LLM requests took, by provider and model.", Buckets: llmBuckets}, []string{"provider", "model"})
	var err error
	o.requests = register(reg, o.requests, &err)
	o.tokens = register(reg, o.tokens, &err)
	o.duration = register(reg, o.duration, &err)
	if err != nil {
		return nil, fmt.Errorf("error registering the LLM's metrics: %w", err)
	}
	return o, nil
}

// register registers c on reg, or returns the collector registered already under its name (a second
// client on one registry); a failure is joined to *err.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, err *error) C {
	if e := reg.Register(c); e != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(e, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*err = errors.Join(*err, e)
	}
	return c
}

// observed is a Client that reports on each request.
type observed struct {
	Client
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// Complete asks the wrapped client, counting and tracing the request.
func (o *observed) Complete(ctx context.Context, req *Request) (*Response, error) {
	provider, model := o.Provider(), req.Model
	if model == "" {
		model = o.DefaultModel()
	}
	ctx, span := telemetry.Start(ctx, SpanComplete, attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", model), attribute.Int("gem.llm.tools", len(req.Tools)))
	start := time.Now()
	resp, err := o.Client.Complete(ctx, req)
	if resp != nil {
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens))
	}
	telemetry.End(span, err)
	if o.requests == nil {
		return resp, err
	}
	outcome := outcomeOK
	var f *failure
	switch {
	case errors.As(err, &f):
		outcome = f.outcome()
	case err != nil:
		outcome = outcomeError
	}
	o.requests.WithLabelValues(provider, model, outcome).Inc()
	o.duration.WithLabelValues(provider, model).Observe(time.Since(start).Seconds())
	if resp != nil {
		o.tokens.WithLabelValues(provider, model, "input").Add(float64(resp.Usage.InputTokens))
		o.tokens.WithLabelValues(provider, model, "output").Add(float64(resp.Usage.OutputTokens))
	}
	return resp, err
}
