package executor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gemhq/gem/executor/internal/engine"
)

// Defaults of the metrics listener.
const (
	// MetricsAddrDefault is where the executor serves /metrics unless GEM_EXECUTOR_METRICS_ADDR says
	// otherwise (9464 is the port OpenTelemetry's Prometheus exporters use).
	MetricsAddrDefault = "127.0.0.1:9464"
	// MetricsOff, as MetricsAddr, counts and serves no metrics.
	MetricsOff = "off"
)

// Span names of a call in the executor: one gem.call per transaction a call takes part in (the first from
// the moment River hands the job over), a child of the span that inserted the call, with its checks, its
// handler and its receipt (ended when the receipt commits).
const (
	SpanCall     = engine.SpanCall
	SpanValidate = engine.SpanValidate
	SpanHandler  = engine.SpanHandler
	SpanReceipt  = engine.SpanReceipt
)

// metricsServer serves /metrics for Main.
type metricsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// listenMetrics binds addr (errors come back at once); serve starts answering.
func listenMetrics(addr string) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("error listening for /metrics on %s (GEM_EXECUTOR_METRICS_ADDR): %w", addr, err)
	}
	return &metricsServer{ln: ln, done: make(chan struct{})}, nil
}

func (s *metricsServer) serve(h http.Handler) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(s.ln)
	}()
}

// url is the listener's /metrics URL.
func (s *metricsServer) url() string { return "http://" + s.ln.Addr().String() + "/metrics" }

func (s *metricsServer) close(ctx context.Context) {
	if s.srv == nil {
		_ = s.ln.Close()
		return
	}
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
