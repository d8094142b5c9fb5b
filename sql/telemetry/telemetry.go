// Package telemetry is what the brain and the executor share to report on themselves
// (docs/observability.md): a Prometheus registry per process with the Go and process collectors, the
// /metrics handler, the queue's depth read from PostgreSQL at scrape time, and OpenTelemetry tracing,
// exported by OTLP/HTTP when the standard OTEL_* variables configure it and a no-op that costs nothing
// otherwise. The W3C trace context that carries a trace across the queue is in trace.go.
package telemetry

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Defaults of Config and the variables ConfigFromEnv reads.
const (
	// TracesEndpointDefault is where spans go when OTEL_TRACES_EXPORTER=otlp names no endpoint (the
	// OpenTelemetry specification's default for OTLP/HTTP).
	TracesEndpointDefault = "http://localhost:4318/v1/traces"

	// EnvMetricsToken is the bearer token /metrics requires when set.
	EnvMetricsToken = "GEM_METRICS_TOKEN"
	// The OpenTelemetry variables GEM reads itself. The exporter and the SDK read the others
	// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION,
	// OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_RESOURCE_ATTRIBUTES,
	// OTEL_BSP_*) as the specification says.
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
	EnvTracesExporter     = "OTEL_TRACES_EXPORTER"
	EnvEndpoint           = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint     = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol           = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol     = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName        = "OTEL_SERVICE_NAME"
	EnvTracesSampler      = "OTEL_TRACES_SAMPLER"
	EnvTracesSamplerArg   = "OTEL_TRACES_SAMPLER_ARG"
	EnvExporterHeaders    = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
)

const (
	metricsTokenMinLength = 16
	tracesPath            = "/v1/traces"
	protocolHTTPProtobuf  = "http/protobuf"
	protocolHTTPJSON      = "http/json"
)

// Config configures a process's telemetry. The zero value counts metrics, serves them without a token and
// traces nothing.
type Config struct {
	// ServiceName is the service.name of the process's spans. Defaults to the name the process gives New:
	// gem-brain or gem-executor (OTEL_SERVICE_NAME).
	ServiceName string

	// TracesEndpoint is the OTLP/HTTP URL spans are exported to; empty exports none, and tracing is a
	// no-op that costs nothing. ConfigFromEnv reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is),
	// else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended), else, when OTEL_TRACES_EXPORTER=otlp,
	// http://localhost:4318/v1/traces; OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true leave it empty.
	// Defaults to empty.
	TracesEndpoint string

	// TracesJSON sends spans as JSON rather than protobuf (OTEL_EXPORTER_OTLP_PROTOCOL=http/json).
	// Defaults to false: http/protobuf.
	TracesJSON bool

	// MetricsOff counts and serves no metrics. Each process has its own switch (the brain's
	// GEM_BRAIN_METRICS=off, the executor's GEM_EXECUTOR_METRICS_ADDR=off). Defaults to false.
	MetricsOff bool

	// MetricsToken, when set, is the bearer token /metrics requires (at least 16 characters); it opens
	// nothing else (GEM_METRICS_TOKEN). Defaults to none.
	MetricsToken string
}

// ConfigFromEnv reads the OpenTelemetry variables that decide whether and where spans go, and
// GEM_METRICS_TOKEN, through getenv (os.Getenv in production).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{ServiceName: strings.TrimSpace(getenv(EnvServiceName)), MetricsToken: getenv(EnvMetricsToken)}
	var errs []error
	protocol := strings.TrimSpace(getenv(EnvTracesProtocol))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv(EnvProtocol))
	}
	switch protocol {
	case "", protocolHTTPProtobuf:
	case protocolHTTPJSON:
		c.TracesJSON = true
	default:
		errs = append(errs, fmt.Errorf("%s: %q is not supported: GEM exports OTLP over HTTP (http/protobuf, port 4318, or http/json)", EnvProtocol, protocol))
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv(EnvTracesExporter)))
	switch exporter {
	case "", "otlp", "none":
	default:
		errs = append(errs, fmt.Errorf("%s: %q is not supported (otlp or none)", EnvTracesExporter, exporter))
	}
	disabled := strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true")
	if !disabled && exporter != "none" {
		switch {
		case getenv(EnvTracesEndpoint) != "":
			c.TracesEndpoint = strings.TrimSpace(getenv(EnvTracesEndpoint))
		case getenv(EnvEndpoint) != "":
			c.TracesEndpoint = strings.TrimRight(strings.TrimSpace(getenv(EnvEndpoint)), "/") + tracesPath
		case exporter == "otlp":
			c.TracesEndpoint = TracesEndpointDefault
		}
	}
	if c.TracesEndpoint != "" {
		if u, err := url.Parse(c.TracesEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not an http:// or https:// URL", EnvEndpoint, c.TracesEndpoint))
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < metricsTokenMinLength {
		errs = append(errs, fmt.Errorf("%s is shorter than %d characters", EnvMetricsToken, metricsTokenMinLength))
	}
	return c, errors.Join(errs...)
}

// Telemetry is one process's metrics registry and tracer provider. Build it with New and Shutdown it last.
type Telemetry struct {
	// Registry holds the process's metrics; nil when metrics are off. Each process (and each test's
	// process) has its own, never Prometheus's global one.
	Registry *prometheus.Registry
	// TracerProvider makes the process's spans: the SDK's, exporting by OTLP/HTTP, or a no-op one.
	TracerProvider trace.TracerProvider

	cfg Config
	sdk *sdktrace.TracerProvider
}

// New builds a process's telemetry; service names it when cfg does not (gem-brain, gem-executor).
func New(cfg Config, service string) (*Telemetry, error) {
	if cfg.ServiceName == "" {
		cfg.ServiceName = service
	}
	t := &Telemetry{cfg: cfg, TracerProvider: noop.NewTracerProvider()}
	if !cfg.MetricsOff {
		t.Registry = prometheus.NewRegistry()
		t.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if cfg.TracesEndpoint == "" {
		return t, nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.TracesEndpoint)}
	if cfg.TracesJSON {
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	}
	// The exporter reads the OTLP variables GEM does not (headers, timeout, compression, certificates).
	exporter, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating the OTLP trace exporter: %w", err)
	}
	// WithResource merges OTEL_RESOURCE_ATTRIBUTES in; the sampler comes from OTEL_TRACES_SAMPLER (default
	// parentbased_always_on), as the specification says.
	t.sdk = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(cfg.ServiceName))),
	)
	t.TracerProvider = t.sdk
	return t, nil
}

// Tracing reports whether spans are exported.
func (t *Telemetry) Tracing() bool { return t.sdk != nil }

// ServiceName is the service.name of the process's spans.
func (t *Telemetry) ServiceName() string { return t.cfg.ServiceName }

// Register registers collectors on the process's registry; it does nothing when metrics are off.
func (t *Telemetry) Register(cs ...prometheus.Collector) error {
	if t.Registry == nil {
		return nil
	}
	for _, c := range cs {
		if err := t.Registry.Register(c); err != nil {
			return fmt.Errorf("error registering metrics: %w", err)
		}
	}
	return nil
}

// Registerer is where the process's own metrics go: its registry, or nil when metrics are off.
func (t *Telemetry) Registerer() prometheus.Registerer {
	if t.Registry == nil {
		return nil
	}
	return t.Registry
}

// Handler serves the registry in Prometheus's text format (or OpenMetrics, when the scraper asks), to
// anyone: put it behind RequireToken or the server's own authentication. It answers 404 when metrics are
// off.
func (t *Telemetry) Handler() http.Handler {
	if t.Registry == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{Registry: t.Registry, EnableOpenMetrics: true})
}

// RequireToken answers 401 to a request without `Authorization: Bearer <MetricsToken>` and passes the
// others to h; without a MetricsToken it is h.
func (t *Telemetry) RequireToken(h http.Handler) http.Handler {
	if t.cfg.MetricsToken == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.TokenMatches(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gem-metrics"`)
			http.Error(w, "unauthorized: send Authorization: Bearer $GEM_METRICS_TOKEN", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TokenMatches reports whether the request carries the MetricsToken as its bearer token (false when none
// is configured).
func (t *Telemetry) TokenMatches(r *http.Request) bool {
	if t.cfg.MetricsToken == "" {
		return false
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(t.cfg.MetricsToken)) == 1
}

// Shutdown exports the spans still buffered and stops the exporter, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("error flushing spans: %w", err)
	}
	return nil
}
