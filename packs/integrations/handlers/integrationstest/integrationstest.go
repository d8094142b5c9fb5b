// Package integrationstest holds fakes of the providers the integrations pack calls, each speaking the
// provider's documented wire format on a loopback port: HighLevel (LeadConnector API v2), Google (OAuth
// token endpoint, Drive v3 files.list, Analytics Data API runReport, Google Ads searchStream), Meta's
// Marketing API insights, Twilio's Account resource and an SMTP server. Each checks credentials as the real
// one does, keeps what it was sent, and can be told to fail the next requests (Fail) to test refusals,
// rate limits and retries.
package integrationstest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// failure is an injected answer for the next requests whose path starts with prefix.
type failure struct {
	method, prefix string
	status         int
	body           string
	header         http.Header
	left           int
}

// faults holds the failures a fake has been told to answer with.
type faults struct {
	mu   sync.Mutex
	list []*failure
}

// add answers the next n requests matching method (empty for any) and path prefix with status and body.
func (f *faults) add(method, prefix string, n, status int, body string, header http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, &failure{method: method, prefix: prefix, status: status, body: body, header: header, left: n})
}

// serve answers r with an injected failure if one matches, and reports whether it did.
func (f *faults) serve(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	var hit *failure
	for _, fl := range f.list {
		if fl.left > 0 && (fl.method == "" || fl.method == r.Method) && strings.HasPrefix(r.URL.Path, fl.prefix) {
			fl.left--
			hit = fl
			break
		}
	}
	f.mu.Unlock()
	if hit == nil {
		return false
	}
	for k, vs := range hit.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(hit.status)
	_, _ = w.Write([]byte(hit.body))
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomDigits(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}
