package main

// Hostile-client tests of the brain's HTTP surface (POST /brain/run, POST /operator/chat, the HighLevel
// webhook, GET /brain/help): bad bytes, wrong types, content types and sizes. Some of these pin behaviour
// that held in a hostile review; the chat message limit reproduced a problem found then (fixed since).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/stretchr/testify/require"
)

// hostilePost sends raw bytes with a content type and returns the status and body; it fails on a hang.
func hostilePost(t *testing.T, url, path, contentType string, body []byte, header http.Header) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "%s: no answer", path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

// TestHostileBodiesNeverFiveHundred (HOLDS): every malformed body to /brain/run and /operator/chat is
// answered quickly with a 4xx JSON error naming the problem (or a 200 reply), never a 500 or a hang.
func TestHostileBodiesNeverFiveHundred(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	auth := http.Header{"Authorization": {"Bearer " + a.token}}
	big := []byte(`{"message":"` + strings.Repeat("a", 1100000) + `"}`)
	cases := []struct {
		name, ctype string
		body        []byte
		want        int
	}{
		{"invalid UTF-8", "application/json", []byte("{\"message\":\"call \xff\xfe John\",\"mode\":\"enqueue_and_wait\"}"), 400},
		{"raw NUL", "application/json", []byte("{\"message\":\"note that a\x00b\",\"mode\":\"enqueue_and_wait\"}"), 400},
		{"escaped NUL", "application/json", []byte(`{"message":"note that a\u0000b","mode":"enqueue_and_wait"}`), 400},
		{"lone surrogate", "application/json", []byte(`{"message":"note that a\ud800b","mode":"enqueue_and_wait"}`), 400},
		{"NUL in context key", "application/json", []byte(`{"message":"list tasks","context":{"a\u0000":"x"}}`), 400},
		{"message a number", "application/json", []byte(`{"message":12}`), 400},
		{"mode an array", "application/json", []byte(`{"message":"list tasks","mode":["x"]}`), 400},
		{"context a string", "application/json", []byte(`{"message":"list tasks","context":"x"}`), 400},
		{"null", "application/json", []byte(`null`), 400},
		{"array", "application/json", []byte(`[]`), 400},
		{"empty", "application/json", nil, 400},
		{"two documents", "application/json", []byte(`{"message":"list tasks"}{"x":1}`), 400},
		{"xml", "application/xml", []byte(`<a/>`), 400},
		{"deep nesting", "application/json", []byte(`{"message":"list tasks","context":{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}`), 400},
		{"over 1 MB", "application/json", big, 413},
	}
	for _, path := range []string{"/brain/run", "/operator/chat"} {
		for _, c := range cases {
			start := time.Now()
			status, raw := hostilePost(t, a.url, path, c.ctype, c.body, auth)
			require.Less(t, time.Since(start), 5*time.Second, "%s %s", path, c.name)
			if path == "/operator/chat" && (c.name == "mode an array" || c.name == "context a string") {
				require.Equal(t, 400, status, "%s %s: %s", path, c.name, raw)
				continue
			}
			require.Equal(t, c.want, status, "%s %s: %s", path, c.name, raw)
			var e errorResponse
			require.NoError(t, json.Unmarshal(raw, &e), "%s %s: %s", path, c.name, raw)
			require.False(t, e.OK)
			require.NotEmpty(t, e.Errors, "%s %s", path, c.name)
		}
	}
}

// TestHostileWebhookSignedGarbage (HOLDS): deliveries that verify but carry bad bytes, wrong types or odd
// shapes are a 400 or an ignored 200, never a 500; unsigned ones a 401; over the limit a 413.
func TestHostileWebhookSignedGarbage(t *testing.T) {
	signer, keys := newWebhookSigner(t)
	env := map[string]string{api.EnvHighLevelWebhookPublicKeys: keys}
	m, err := startBrain(shared.dbURL, func(c *Config) {
		fromEnv, err := ConfigFromEnv(func(k string) string { return env[k] })
		require.NoError(t, err)
		c.HighLevel = fromEnv.HighLevel
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	url := m.Server.URL()
	bodies := map[string][]byte{
		"invalid UTF-8":      []byte("{\"type\":\"ContactCreate\",\"firstName\":\"\xff\",\"phone\":\"0412345678\"}"),
		"raw NUL":            []byte("{\"type\":\"ContactCreate\",\"firstName\":\"a\x00\",\"phone\":\"0412345678\"}"),
		"escaped NUL":        []byte(`{"type":"NoteCreate","body":"a\u0000b","contactId":"c1"}`),
		"lone surrogate":     []byte(`{"type":"TaskCreate","title":"a\ud800","contactId":"c1"}`),
		"type a number":      []byte(`{"type":5}`),
		"no type":            []byte(`{"id":"x"}`),
		"phone an object":    []byte(`{"type":"ContactCreate","phone":{"a":1},"firstName":"X"}`),
		"dates out of range": []byte(`{"type":"AppointmentCreate","appointment":{"startTime":"9999-12-31T23:59:60Z","endTime":"0000-01-01T00:00:00Z","title":"x"}}`),
		"deep nesting":       []byte(`{"type":"NoteCreate","body":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`),
		"not JSON":           []byte(`type=ContactCreate`),
	}
	for name, body := range bodies {
		status, raw := hostilePost(t, url, api.HighLevelWebhookPath, "application/json", body,
			http.Header{"X-GHL-Signature": {signer.ghl(body)}})
		require.Contains(t, []int{200, 400}, status, "%s: %s", name, raw)
	}
	status, _ := hostilePost(t, url, api.HighLevelWebhookPath, "application/json", []byte(`{"type":"ContactCreate"}`), nil)
	require.Equal(t, 401, status)
	huge := []byte(`{"type":"NoteCreate","body":"` + strings.Repeat("a", 1100000) + `"}`)
	status, _ = hostilePost(t, url, api.HighLevelWebhookPath, "application/json", huge,
		http.Header{"X-GHL-Signature": {signer.ghl(huge)}})
	require.Equal(t, 413, status)
}

// helpWith gets /brain/help with an Accept header and says whether the answer was JSON.
func helpWith(t *testing.T, a *testAPI, method, accept string) (int, bool) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+"/brain/help", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, json.Valid(raw) && len(raw) > 0
}

// TestHostileHelpOddAccept (HOLDS): odd, huge or unknown Accept headers get JSON, never an error.
func TestHostileHelpOddAccept(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, accept := range []string{"*/*", "text/html", "application/xml", ",,,;;;q=abc", strings.Repeat("a", 7000), "image/*;q=1"} {
		status, isJSON := helpWith(t, a, http.MethodGet, accept)
		require.Equal(t, 200, status, accept)
		require.True(t, isJSON, accept)
	}
	for _, accept := range []string{"text/plain", "TEXT/PLAIN", "text/plain; charset=ebcdic"} {
		status, isJSON := helpWith(t, a, http.MethodGet, accept)
		require.Equal(t, 200, status, accept)
		require.False(t, isJSON, accept)
	}
}

// TestHostileChatMessageLimit: /brain/run refuses a message over 10,000 characters (400, maxLength),
// but /operator/chat takes a 20,000-character one, plans it and answers 200, echoing the whole message back
// in errors[0].details.message. The same text limit is expected on both.
func TestHostileChatMessageLimit(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	auth := http.Header{"Authorization": {"Bearer " + a.token}}
	body := []byte(`{"message":"` + strings.Repeat("a", 20000) + `"}`)
	status, raw := hostilePost(t, a.url, "/brain/run", "application/json", body, auth)
	require.Equal(t, 400, status, "%.200s", raw)
	status, raw = hostilePost(t, a.url, "/operator/chat", "application/json", body, auth)
	require.Equal(t, 400, status, "%.200s", raw)
}
