// Package telemetrytest is what tests and make bench use to look at GEM's telemetry from outside, as an
// operator's tools do: a real OTLP/HTTP receiver that decodes the spans processes export, and a scrape of
// /metrics parsed as Prometheus parses it.
package telemetrytest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span a receiver got, with the service.name of the process that sent it.
type Span struct {
	Service      string
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Attributes   map[string]string
}

// Receiver is an OTLP/HTTP traces endpoint (POST /v1/traces, protobuf, gzip or not): what a collector is to
// a process exporting with OTEL_EXPORTER_OTLP_ENDPOINT=URL.
type Receiver struct {
	// URL is the base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	srv     *httptest.Server
	keep    bool
	mu      sync.Mutex
	spans   []Span
	exports int
}

// NewReceiver starts a receiver. With keep it decodes and keeps every span; without, it reads and discards
// what it gets (for measuring what exporting costs the processes, not what keeping costs the receiver).
func NewReceiver(keep bool) *Receiver {
	r := &Receiver{keep: keep}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "POST /v1/traces only", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	if !r.keep {
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					v := kv.GetValue()
					switch {
					case v.GetStringValue() != "":
						attrs[kv.GetKey()] = v.GetStringValue()
					default:
						attrs[kv.GetKey()] = fmt.Sprint(v.GetValue())
					}
				}
				got = append(got, Span{Service: service, Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
					SpanID: hex.EncodeToString(s.GetSpanId()), ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Attributes: attrs})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.exports++
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Await waits up to within for the spans matching ok, and returns every span received.
func (r *Receiver) Await(within time.Duration, ok func([]Span) bool) ([]Span, bool) {
	deadline := time.Now().Add(within)
	for {
		spans := r.Spans()
		if ok(spans) {
			return spans, true
		}
		if time.Now().After(deadline) {
			return spans, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Families is a scrape of /metrics, by metric name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (a /metrics URL) with the bearer token given ("" for none) and parses the answer as
// Prometheus does. It returns the status when it is not 200.
func Scrape(url, token string) (Families, int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, resp.StatusCode, nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("error parsing %s: %w", url, err)
	}
	return fams, resp.StatusCode, nil
}

// Value is the value of the series of metric name whose labels include those given as name, value pairs:
// a counter's or gauge's value, a histogram's count. It is 0 when there is none, and the sum when several
// match.
func (f Families) Value(name string, labels ...string) float64 {
	var sum float64
	for _, m := range f.Series(name, labels...) {
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// Series returns the series of metric name whose labels include those given as name, value pairs.
func (f Families) Series(name string, labels ...string) []*dto.Metric {
	fam, ok := f[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
next:
	for _, m := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// LabelValues returns every value label takes in metric name's series, sorted.
func (f Families) LabelValues(name, label string) []string {
	seen := map[string]bool{}
	for _, m := range f.Series(name) {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				seen[l.GetValue()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// AllLabelValues returns every label value of every series scraped (to check that none is unbounded).
func (f Families) AllLabelValues() []string {
	var out []string
	for _, fam := range f {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}
