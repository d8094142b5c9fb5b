package api

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// MetricsPath serves the brain's metrics in Prometheus's text format (docs/observability.md).
const MetricsPath = "/metrics"

// unmatchedRoute is the route label of a request no route matched (404 or 405 from the router): the raw
// path never becomes a label.
const unmatchedRoute = "unmatched"

// httpBuckets (seconds) span a health check to a run that waits for its receipts.
var httpBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// instrument counts every request by route template and, when traces are exported, gives it a server
// span (continuing a caller's traceparent), and serves MetricsPath. With tel nil it does nothing.
func (s *Server) instrument(e *echo.Echo, tel *telemetry.Telemetry) {
	if tel == nil {
		return
	}
	o := &observer{e: e}
	if tel.Registry != nil {
		o.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gem_http_requests_total",
			Help: "HTTP requests the brain answered, by method, route template (unmatched: no route) and status code."},
			[]string{"method", "route", "code"})
		o.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gem_http_request_duration_seconds",
			Help: "How long the brain took to answer HTTP requests, by method and route template.", Buckets: httpBuckets},
			[]string{"method", "route"})
		tel.Registry.MustRegister(o.requests, o.duration)
		if s.admission != nil {
			tel.Registry.MustRegister(admissionMetrics(s.admission)...)
		}
		e.GET(MetricsPath, echo.WrapHandler(tel.Handler()), s.metricsAuth(tel))
	}
	if tel.Tracing() {
		o.tracer = tel.TracerProvider.Tracer(telemetry.Scope)
	}
	if o.requests != nil || o.tracer != nil {
		e.Use(o.middleware)
	}
}

// metricsAuth lets a scraper in: with GEM_METRICS_TOKEN, that token (which opens nothing else); any caller's
// bearer token too; anyone when the brain serves without authentication (GEM_BRAIN_AUTH=off).
func (s *Server) metricsAuth(tel *telemetry.Telemetry) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		authenticated := s.authenticate(next)
		return func(c echo.Context) error {
			if s.cfg.AuthDisabled || tel.TokenMatches(c.Request()) {
				return next(c)
			}
			return authenticated(c)
		}
	}
}

// observer is the HTTP middleware's state.
type observer struct {
	e        *echo.Echo
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	tracer   trace.Tracer

	routesOnce sync.Once
	routes     map[string]bool // "METHOD /path/:template" of every route
}

// route is the request's method and route template as labels: a template the router matched, else
// unmatched, with a method outside HTTP's own as OTHER.
func (o *observer) route(c echo.Context) (method, route string) {
	o.routesOnce.Do(func() {
		o.routes = map[string]bool{}
		for _, r := range o.e.Routes() {
			o.routes[r.Method+" "+r.Path] = true
		}
	})
	method, route = c.Request().Method, c.Path()
	if !o.routes[method+" "+route] {
		route = unmatchedRoute
		switch method {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
			http.MethodOptions, http.MethodConnect, http.MethodTrace:
		default:
			method = "OTHER"
		}
	}
	return method, route
}

// middleware is the outermost: it sees every request, routed or not, and its final status.
func (o *observer) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		method, route := o.route(c)
		var span trace.Span
		if o.tracer != nil && route != MetricsPath {
			req := c.Request()
			ctx := telemetry.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			ctx, span = o.tracer.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(route), semconv.URLPath(req.URL.Path)))
			c.SetRequest(req.WithContext(ctx))
		}
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		if o.requests != nil {
			o.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
			o.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
		}
		if span != nil {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}
		return nil
	}
}

// admissionMetrics reads the admission limiter's state at each scrape (overload.go): the requests running
// and waiting, and those refused by reason.
func admissionMetrics(l *limiter) []prometheus.Collector {
	inFlight := func() float64 { n, _, _, _ := l.stats(); return float64(n) }
	queued := func() float64 { _, n, _, _ := l.stats(); return float64(n) }
	rejected := func(reason string) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gem_admission_rejected_total",
			Help:        "Requests to the expensive routes the brain refused with 503 overloaded, by reason (queue_full, wait_timeout).",
			ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 {
			_, _, full, timeout := l.stats()
			if reason == RejectQueueFull {
				return float64(full)
			}
			return float64(timeout)
		})
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gem_admission_in_flight",
			Help: "Requests to the expensive routes (runs, calls, chats, approvals, MCP tools/call) running now."}, inFlight),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gem_admission_queued",
			Help: "Requests to the expensive routes waiting for a slot."}, queued),
		rejected(RejectQueueFull), rejected(RejectWaitTimeout),
	}
}
