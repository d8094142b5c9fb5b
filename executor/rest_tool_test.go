package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/remote"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// The secrets the provider of these tests expects; they must never reach a receipt.
const (
	restToken    = "tok-3f9a1c7e5b2d4a68"
	restAPIKey   = "key-8c1e2f4a6b9d0e37"
	restQueryKey = "qk+7/Zx9Wm4Lp2Rt=" // needs escaping in a query
)

// restSpec is a rest tool of the test registry.
type restSpec struct {
	name       string
	impl       map[string]any
	properties map[string]any
	required   []string
	output     map[string]any
	perms      []string
	mode       string
	timeoutMS  int
}

func (s restSpec) entry() map[string]any {
	props := s.properties
	if props == nil {
		props = map[string]any{}
	}
	required := s.required
	if required == nil {
		required = []string{}
	}
	output := s.output
	if output == nil {
		output = map[string]any{"type": "object"}
	}
	perms := s.perms
	if perms == nil {
		perms = []string{"read:external"}
	}
	mode := s.mode
	if mode == "" {
		mode = "safe-retry"
	}
	timeout := s.timeoutMS
	if timeout == 0 {
		timeout = 5000
	}
	return map[string]any{
		"name": s.name, "description": "A rest tool of the tests.", "permissions": perms,
		"input_schema":   map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false},
		"output_schema":  output,
		"idempotency":    map[string]any{"mode": mode},
		"timeout_ms":     timeout,
		"receipt_fields": []string{},
		"implementation": s.impl,
	}
}

func restGet(url string) map[string]any {
	return map[string]any{"type": "rest", "method": "GET", "url": url}
}

// restSpecs are the tools of these tests, each calling a route of restPeer.
var restSpecs = []restSpec{
	{name: "ext.get_item", impl: restGet("${REST_API}/items/{id}?q={q}&limit={limit}&exact={exact}&note={note}&v=2"),
		properties: map[string]any{"id": map[string]any{}, "q": map[string]any{}, "limit": map[string]any{"type": "integer"},
			"exact": map[string]any{"type": "boolean"}, "note": map[string]any{"type": "string"}}},
	{name: "ext.create_note", perms: []string{"write:external"}, mode: "none",
		impl:       map[string]any{"type": "rest", "method": "POST", "url": "${REST_API}/notes"},
		properties: map[string]any{"title": map[string]any{"type": "string"}, "count": map[string]any{"type": "integer"}}},
	{name: "ext.create_note_from", perms: []string{"write:external"}, mode: "none",
		impl: map[string]any{"type": "rest", "method": "POST", "url": "${REST_API}/notes", "headers": map[string]any{"Content-Type": "application/vnd.notes+json"},
			"body": map[string]any{"title": "{title}", "count": "{count}", "urgent": "{urgent}", "tags": "{tags}", "meta": "{meta}",
				"label": "note {title} #{count} {tags}", "missing": "{note}", "list": []any{"{note}", "{count}"}, "fixed": 7}},
		properties: map[string]any{"title": map[string]any{"type": "string"}, "count": map[string]any{"type": "integer"},
			"urgent": map[string]any{"type": "boolean"}, "tags": map[string]any{"type": "array"}, "meta": map[string]any{"type": "object"},
			"note": map[string]any{"type": "string"}}},
	{name: "ext.whoami", impl: map[string]any{"type": "rest", "method": "GET", "url": "${REST_API}/whoami?key=${REST_QUERY_KEY}&as={as}",
		"headers": map[string]any{"Authorization": "Bearer ${REST_TOKEN}", "X-Api-Key": "${REST_API_KEY}"}},
		properties: map[string]any{"as": map[string]any{"type": "string"}}},
	{name: "ext.unset", impl: map[string]any{"type": "rest", "method": "GET", "url": "${REST_API}/whoami",
		"headers": map[string]any{"Authorization": "Bearer ${REST_UNSET_TOKEN}"}}},
	{name: "ext.wrapped", impl: map[string]any{"type": "rest", "method": "GET", "url": "${REST_API}/wrapped", "result_path": "data.items.1"}},
	{name: "ext.wrapped_missing", impl: map[string]any{"type": "rest", "method": "GET", "url": "${REST_API}/wrapped", "result_path": "data.pages"}},
	{name: "ext.text", impl: restGet("${REST_API}/text")},
	{name: "ext.empty", impl: map[string]any{"type": "rest", "method": "DELETE", "url": "${REST_API}/empty", "success_status": []any{204}}},
	{name: "ext.shape", impl: restGet("${REST_API}/shape"),
		output: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}},
	{name: "ext.huge", impl: restGet("${REST_API}/huge")},
	{name: "ext.missing", impl: restGet("${REST_API}/missing/{id}"), properties: map[string]any{"id": map[string]any{"type": "string"}}, required: []string{"id"}},
	{name: "ext.flaky", impl: restGet("${REST_API}/flaky/{token}"), properties: map[string]any{"token": map[string]any{"type": "string"}}, required: []string{"token"}},
	{name: "ext.down", impl: restGet("${REST_API}/down/{token}"), properties: map[string]any{"token": map[string]any{"type": "string"}}, required: []string{"token"}},
	{name: "ext.fragile", perms: []string{"write:external"}, mode: "none",
		impl:       map[string]any{"type": "rest", "method": "POST", "url": "${REST_API}/fragile/{token}", "body": "none"},
		properties: map[string]any{"token": map[string]any{"type": "string"}}, required: []string{"token"}},
	{name: "ext.slow", timeoutMS: 300, impl: restGet("${REST_API}/slow")},
	{name: "ext.hop", impl: restGet("${REST_API}/hop")},
	{name: "ext.away", impl: map[string]any{"type": "rest", "method": "GET", "url": "${REST_API}/away", "headers": map[string]any{"X-Api-Key": "${REST_API_KEY}"}}},
	{name: "ext.unreachable", perms: []string{"write:external"}, mode: "none",
		impl: map[string]any{"type": "rest", "method": "POST", "url": "${REST_DEAD}/notes"}},
	{name: "ext.unreachable_read", impl: restGet("${REST_DEAD}/items")},
}

// restPeer is the HTTP provider of the tests' rest tools. It records every request it gets.
type restPeer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
	// bodies are the request bodies, by index in got.
	bodies [][]byte
	// attempts counts the requests per route and token (flaky, down and fragile routes).
	attempts map[string]int
	// elsewhere is another host, which a redirect must not reach; dead is the URL of a closed server.
	elsewhere *httptest.Server
	elseHits  int
	dead      string
	// slowCancelled is closed when the client gives up a request to the slow route.
	slowCancelled chan struct{}
	slowOnce      sync.Once
}

func newRESTPeer(t *testing.T) *restPeer {
	p := &restPeer{attempts: map[string]int{}, slowCancelled: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	p.elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.elseHits++
		p.mu.Unlock()
	}))
	t.Cleanup(p.elsewhere.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	p.dead = dead.URL
	dead.Close()
	return p
}

func (p *restPeer) getenv(name string) string {
	return map[string]string{"REST_API": p.srv.URL, "REST_DEAD": p.dead, "REST_TOKEN": restToken, "REST_API_KEY": restAPIKey, "REST_QUERY_KEY": restQueryKey}[name]
}

// requests returns the requests received whose escaped path starts with prefix, and their bodies.
func (p *restPeer) requests(prefix string) ([]*http.Request, [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rs []*http.Request
	var bodies [][]byte
	for i, r := range p.got {
		if strings.HasPrefix(r.URL.EscapedPath(), prefix) {
			rs, bodies = append(rs, r), append(bodies, p.bodies[i])
		}
	}
	return rs, bodies
}

func (p *restPeer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	p.mu.Lock()
	p.got, p.bodies = append(p.got, r), append(p.bodies, body)
	key := strings.Join(segs, "/")
	p.attempts[key]++
	n := p.attempts[key]
	p.mu.Unlock()

	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch segs[0] {
	case "items":
		unescaped, _ := url.PathUnescape(strings.Join(segs[1:], "/"))
		reply(http.StatusOK, map[string]any{"id": unescaped, "query": r.URL.Query()})
	case "notes":
		reply(http.StatusCreated, map[string]any{"id": "n-1", "received": json.RawMessage(body)})
	case "whoami":
		if r.Header.Get("Authorization") != "Bearer "+restToken {
			// A careless provider repeats what it was sent.
			reply(http.StatusUnauthorized, map[string]any{"error": map[string]any{"message": "bad token: " + r.Header.Get("Authorization")}})
			return
		}
		if r.URL.Query().Get("as") == "denied" {
			reply(http.StatusForbidden, map[string]any{"message": fmt.Sprintf("key %s (query key %s) may not act for denied", r.Header.Get("X-Api-Key"), r.URL.Query().Get("key"))})
			return
		}
		// And an echo service repeats it in its answer.
		reply(http.StatusOK, map[string]any{"headers": r.Header, "query": r.URL.Query(), "raw_query": r.URL.RawQuery})
	case "wrapped":
		reply(http.StatusOK, map[string]any{"data": map[string]any{"items": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}}})
	case "text":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "plain hello\n")
	case "empty":
		w.WriteHeader(http.StatusNoContent)
	case "shape":
		reply(http.StatusOK, map[string]any{"unexpected": 1})
	case "huge":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"blob": "`+strings.Repeat("a", remote.MaxResponseBytes)+`"}`)
	case "missing":
		reply(http.StatusNotFound, map[string]any{"error": map[string]any{"message": "no item " + segs[1], "type": "not_found"}})
	case "flaky":
		if n == 1 {
			reply(http.StatusServiceUnavailable, map[string]any{"message": "warming up"})
			return
		}
		reply(http.StatusOK, map[string]any{"attempts": n})
	case "down":
		w.Header().Set("Retry-After", "30")
		reply(http.StatusServiceUnavailable, map[string]any{"detail": "down for maintenance"})
	case "fragile":
		http.Error(w, "upstream exploded", http.StatusBadGateway)
	case "hop":
		http.Redirect(w, r, "/text", http.StatusFound)
	case "away":
		http.Redirect(w, r, p.elsewhere.URL+"/collect", http.StatusFound)
	case "slow":
		select {
		case <-r.Context().Done():
			p.slowOnce.Do(func() { close(p.slowCancelled) })
		case <-time.After(5 * time.Second):
		}
		reply(http.StatusOK, map[string]any{})
	default:
		http.NotFound(w, r)
	}
}

// restSetup starts the provider and an executor whose only handlers are the rest tools' handlers, made by
// remote.Register from the test registry.
func restSetup(t *testing.T) (context.Context, *testBundle, *restPeer) {
	t.Helper()
	ctx, b := setup(t)
	peer := newRESTPeer(t)
	tools := make([]any, len(restSpecs))
	for i, s := range restSpecs {
		tools[i] = s.entry()
	}
	doc, err := json.Marshal(map[string]any{"version": "rest-test", "tools": tools})
	require.NoError(t, err)
	reg, err := registry.Parse(doc)
	require.NoError(t, err)
	h := executor.Handlers{}
	closeRemote, err := remote.Register(ctx, reg, h, remote.Options{Getenv: peer.getenv})
	require.NoError(t, err)
	t.Cleanup(closeRemote)
	require.Len(t, h, len(restSpecs))
	require.True(t, h["ext.get_item"].Isolated, "a rest handler waits on the network: it runs in a transaction of its own")
	require.Equal(t, []string{"REST_API", "REST_API_KEY", "REST_QUERY_KEY", "REST_TOKEN"}, h["ext.whoami"].RequiredEnv)
	b.startExecutorWith(t, executor.Config{}, reg, h, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	return ctx, b, peer
}

func restResult(t *testing.T, r *registry.Receipt) map[string]any {
	t.Helper()
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Result, &m))
	return m
}

func TestRESTPathAndQueryEscaping(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	ok := b.call(t, ctx, "ext.get_item", `{"id": "a/b? c", "q": "x&y=z é ${REST_TOKEN}", "limit": 5, "exact": true}`)
	number := b.call(t, ctx, "ext.get_item", `{"id": 12345678901234567890, "q": 2.50}`)
	rs := b.wait(t, ctx, ok, number)

	reqs, _ := peer.requests("/items/")
	require.Len(t, reqs, 2)
	byPath := map[string]*http.Request{}
	for _, r := range reqs {
		byPath[r.URL.EscapedPath()] = r
	}
	r := byPath["/items/a%2Fb%3F%20c"]
	require.NotNil(t, r, "the path value is one escaped segment; got %v", byPath)
	require.Equal(t, http.MethodGet, r.Method)
	q := r.URL.Query()
	require.Equal(t, "x&y=z é ${REST_TOKEN}", q.Get("q"), "a query value arrives whole; ${…} in input is text, never the environment")
	require.Equal(t, "5", q.Get("limit"))
	require.Equal(t, "true", q.Get("exact"))
	require.Equal(t, "2", q.Get("v"), "literal pairs are kept")
	require.NotContains(t, q, "note", "a pair whose field is absent is left out")
	require.Empty(t, r.Body, "GET sends no body")
	require.Equal(t, "application/json", r.Header.Get("Accept"))
	require.Contains(t, r.Header.Get("User-Agent"), "GEM")

	res := restResult(t, rs[ok])
	require.Equal(t, "a/b? c", res["id"], "the result is the provider's JSON")
	n := byPath["/items/12345678901234567890"]
	require.NotNil(t, n, "numbers are printed as JSON writes them, with every digit; got %v", byPath)
	require.Equal(t, "2.50", n.URL.Query().Get("q"))

	// Values a URL cannot hold are refused before anything is sent, naming the field.
	for input, field := range map[string]string{
		`{"id": {"a": 1}}`:        "id",
		`{"q": "x"}`:              "id",
		`{"id": null}`:            "id",
		`{"id": ".."}`:            "id",
		`{"id": ""}`:              "id",
		`{"id": "x", "q": [1,2]}`: "q",
	} {
		r := b.waitOne(t, ctx, b.call(t, ctx, "ext.get_item", input))
		require.Equal(t, registry.StatusFailed, r.Status, input)
		require.Equal(t, registry.CodeValidation, r.Error.Code, input)
		require.Equal(t, field, decodeDetails(t, r)["field"], "%s: %s", input, r.Error.Message)
	}
	reqs, _ = peer.requests("/items/")
	require.Len(t, reqs, 2, "refused calls send nothing")
}

func TestRESTBodies(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	input := b.waitOne(t, ctx, b.call(t, ctx, "ext.create_note", `{"title": "Fix roof", "count": 3}`))
	reqs, bodies := peer.requests("/notes")
	require.Len(t, reqs, 1)
	require.Equal(t, http.MethodPost, reqs[0].Method)
	require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
	require.JSONEq(t, `{"title": "Fix roof", "count": 3}`, string(bodies[0]), "the body is the call's input")
	res := restResult(t, input)
	require.Equal(t, "n-1", res["id"])
	// A tool with outside effects records the request, with no value read from the environment.
	require.Equal(t, []registry.OutsideEffect{{Kind: "http", Target: "POST ${REST_API}/notes", Reference: "HTTP 201"}}, input.Effects.Outside)

	tmpl := b.waitOne(t, ctx, b.call(t, ctx, "ext.create_note_from",
		`{"title": "Fix roof", "count": 3, "urgent": false, "tags": ["a", "b"], "meta": {"by": "ann", "n": 1.50}}`))
	restResult(t, tmpl)
	reqs, bodies = peer.requests("/notes")
	require.Len(t, reqs, 2)
	require.Equal(t, "application/vnd.notes+json", reqs[1].Header.Get("Content-Type"), "the registry's headers win over the defaults")
	require.JSONEq(t, `{"title": "Fix roof", "count": 3, "urgent": false, "tags": ["a", "b"], "meta": {"by": "ann", "n": 1.50},
		"label": "note Fix roof #3 [\"a\",\"b\"]", "list": [null, 3], "fixed": 7}`, string(bodies[1]),
		`"{field}" keeps the value's JSON type, an absent one leaves its key out (null in a list); other strings get text`)
	require.Contains(t, string(bodies[1]), `"n":1.50`, "numbers travel as written")
}

func TestRESTSecretsStayOutOfReceipts(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	echo := b.call(t, ctx, "ext.whoami", `{"as": "ann"}`)
	denied := b.call(t, ctx, "ext.whoami", `{"as": "denied"}`)
	rs := b.wait(t, ctx, echo, denied)

	// The provider got every secret, in place.
	reqs, _ := peer.requests("/whoami")
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.Equal(t, "Bearer "+restToken, r.Header.Get("Authorization"))
		require.Equal(t, restAPIKey, r.Header.Get("X-Api-Key"))
		require.Equal(t, restQueryKey, r.URL.Query().Get("key"), "an environment value in a query is escaped")
	}

	// It repeated them in its answer and in its error; the receipts show neither.
	res := restResult(t, rs[echo])
	headers := res["headers"].(map[string]any)
	require.Equal(t, []any{"Bearer [redacted]"}, headers["Authorization"])
	require.Equal(t, []any{"[redacted]"}, headers["X-Api-Key"])
	require.Equal(t, []any{"[redacted]"}, res["query"].(map[string]any)["key"])
	require.Contains(t, res["raw_query"], "key=[redacted]")

	r := rs[denied]
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Contains(t, r.Error.Message, "key [redacted] (query key [redacted]) may not act for denied")
	d := decodeDetails(t, r)
	require.Equal(t, float64(403), d["status"])
	require.Equal(t, "GET", d["method"])
	require.Equal(t, "${REST_API}/whoami?key=${REST_QUERY_KEY}&as={as}", d["url"], "the URL as the registry writes it")

	var receipts, calls, jobs string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT string_agg(r::text, ' ') FROM core_tool_receipts r`).Scan(&receipts))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT string_agg(c::text, ' ') FROM core_tool_calls c`).Scan(&calls))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT string_agg(j::text, ' ') FROM river_job j`).Scan(&jobs))
	require.Contains(t, receipts, "[redacted]", "the check below reads the receipts")
	for _, secret := range []string{restToken, restAPIKey, restQueryKey, url.QueryEscape(restQueryKey)} {
		for table, text := range map[string]string{"core_tool_receipts": receipts, "core_tool_calls": calls, "river_job": jobs} {
			require.NotContains(t, text, secret, "%s holds a secret", table)
		}
	}
}

func TestRESTResponses(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	ids := map[string]uuid.UUID{}
	for _, tool := range []string{"ext.wrapped", "ext.wrapped_missing", "ext.text", "ext.empty", "ext.shape", "ext.huge", "ext.hop", "ext.away"} {
		ids[tool] = b.call(t, ctx, tool, `{}`)
	}
	idList := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		idList = append(idList, id)
	}
	rs := b.wait(t, ctx, idList...)

	require.Equal(t, map[string]any{"id": "b"}, restResult(t, rs[ids["ext.wrapped"]]), "result_path picks data.items[1]")
	require.Equal(t, map[string]any{"text": "plain hello\n"}, restResult(t, rs[ids["ext.text"]]), "a body that is not JSON is text")
	require.Equal(t, map[string]any{}, restResult(t, rs[ids["ext.empty"]]), "an empty body is {}")

	r := rs[ids["ext.wrapped_missing"]]
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Contains(t, r.Error.Message, `the response has no "data.pages"`)

	r = rs[ids["ext.shape"]]
	require.Equal(t, registry.CodeOutputContract, r.Error.Code, "the response must fit the tool's output schema")

	r = rs[ids["ext.huge"]]
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Contains(t, r.Error.Message, "a body over 8 MiB")
	require.Less(t, len(r.Error.Details), 1000, "none of the body reaches the receipt")

	// Redirects are followed on the provider's own host only: the tool's headers never go elsewhere.
	require.Equal(t, map[string]any{"text": "plain hello\n"}, restResult(t, rs[ids["ext.hop"]]))
	r = rs[ids["ext.away"]]
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Contains(t, r.Error.Message, "HTTP 302")
	require.Equal(t, peer.elsewhere.URL+"/collect", decodeDetails(t, r)["location"])
	peer.mu.Lock()
	defer peer.mu.Unlock()
	require.Zero(t, peer.elseHits, "the other host got no request")
}

func TestRESTProviderErrors(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	missing := b.call(t, ctx, "ext.missing", `{"id": "42"}`)
	fragile := b.call(t, ctx, "ext.fragile", `{"token": "f1"}`)
	down, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "ext.down", Input: json.RawMessage(`{"token": "d1"}`), MaxAttempts: 1}))
	require.NoError(t, err)
	unset := b.call(t, ctx, "ext.unset", `{}`)
	unreachable := b.call(t, ctx, "ext.unreachable", `{}`)
	unreachableRead, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "ext.unreachable_read", MaxAttempts: 1}))
	require.NoError(t, err)
	rs := b.wait(t, ctx, missing, fragile, down, unset, unreachable, unreachableRead)

	// A 4xx is a failed receipt with the provider's own message.
	r := rs[missing]
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Equal(t, "GET ${REST_API}/missing/{id} answered HTTP 404: no item 42", r.Error.Message)
	d := decodeDetails(t, r)
	require.Equal(t, float64(404), d["status"])
	require.Equal(t, "no item 42", d["message"])
	require.Equal(t, map[string]any{"error": map[string]any{"message": "no item 42", "type": "not_found"}}, d["response"])

	// A 5xx of a tool that may not run twice (a POST with outside effects, mode none) is not retried.
	r = rs[fragile]
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Equal(t, 1, r.Attempt)
	require.Contains(t, r.Error.Message, "HTTP 502: upstream exploded; not retried")
	reqs, _ := peer.requests("/fragile/f1")
	require.Len(t, reqs, 1, "one request, never a second")
	require.Empty(t, reqs[0].Header.Get("Content-Type"), `body "none" sends nothing`)

	// A 5xx of a safe-retry tool is transient: with no attempt left it ends retries_exhausted with the
	// provider's message.
	r = rs[down]
	require.Equal(t, registry.CodeRetriesExhausted, r.Error.Code)
	require.Contains(t, r.Error.Message, "GET ${REST_API}/down/{token} answered HTTP 503: down for maintenance")
	d = decodeDetails(t, r)
	require.Equal(t, float64(http.StatusServiceUnavailable), d["status"], "the provider's status and Retry-After are kept: %v", d)
	require.Equal(t, "30", d["retry_after"])

	// A missing secret stops the call before any request.
	r = rs[unset]
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	d = decodeDetails(t, r)
	require.Equal(t, []any{"REST_UNSET_TOKEN"}, d["required_env"])
	require.NotEmpty(t, d["next_steps"])
	reqs, _ = peer.requests("/whoami")
	require.Empty(t, reqs)

	// A provider that cannot be reached: a failed receipt for a tool that may not run twice, a retry for
	// one that may (here with no attempt left).
	r = rs[unreachable]
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.Contains(t, r.Error.Message, "POST ${REST_DEAD}/notes could not be completed")
	require.Contains(t, r.Error.Message, "not retried")
	r = rs[unreachableRead]
	require.Equal(t, registry.CodeRetriesExhausted, r.Error.Code)
	require.Contains(t, r.Error.Message, "GET ${REST_DEAD}/items could not be completed")
}

func TestRESTTransientRetried(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	r := b.waitOne(t, ctx, b.call(t, ctx, "ext.flaky", `{"token": "t1"}`))
	require.Equal(t, map[string]any{"attempts": float64(2)}, restResult(t, r), "the 503 was retried under River's backoff")
	require.Equal(t, 2, r.Attempt)
	reqs, _ := peer.requests("/flaky/t1")
	require.Len(t, reqs, 2)
}

func TestRESTTimeout(t *testing.T) {
	t.Parallel()
	ctx, b, peer := restSetup(t)

	start := time.Now()
	r := b.waitOne(t, ctx, b.call(t, ctx, "ext.slow", `{}`))
	require.Equal(t, registry.CodeTimeout, r.Error.Code, "%+v", r.Error)
	require.Contains(t, r.Error.Message, "it was cancelled", "the handler stopped with its context, it was not abandoned")
	select {
	case <-peer.slowCancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the provider never saw the request cancelled")
	}
	require.Less(t, time.Since(start), 3*time.Second, "the request is cancelled at the tool's 300 ms, not the server's 5 s")
	reqs, _ := peer.requests("/slow")
	require.Len(t, reqs, 1, "a timeout is not retried")
}

// TestRESTToolsDoc keeps docs/rest-tools.md true: its two registry entries, run by a real executor against a
// help desk served here, send the requests and end with the receipts the page shows.
func TestRESTToolsDoc(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/rest-tools.md")
	require.NoError(t, err)
	doc := string(raw)
	entries := fences(doc, "json")
	require.Len(t, entries, 2, "the page shows two registry entries")
	reg, err := registry.Parse([]byte(`{"version": "doc", "tools": [` + entries[0] + `,` + entries[1] + `]}`))
	require.NoError(t, err)

	const token = "hd-5e8b1f0c9a7d2e4b"
	var (
		mu      sync.Mutex
		created [][]byte
		seen    []string
	)
	desk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer "+token:
			w.WriteHeader(http.StatusUnauthorized)
		case r.Method == http.MethodGet && r.URL.Path == "/v2/tickets/T-1042":
			_, _ = io.WriteString(w, `{"ticket": {"id": "T-1042", "status": "open", "subject": "Leaking gutter", "assignee": null}}`)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error": "ticket T-9999 not found"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v2/tickets":
			mu.Lock()
			created = append(created, body)
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"ticket": {"id": "T-1043", "status": "new"}}`)
		}
	}))
	t.Cleanup(desk.Close)
	env := map[string]string{"HELPDESK_API": desk.URL, "HELPDESK_TOKEN": token}

	ctx, b := setup(t)
	h := executor.Handlers{}
	closeRemote, err := remote.Register(ctx, reg, h, remote.Options{Getenv: func(k string) string { return env[k] }})
	require.NoError(t, err)
	t.Cleanup(closeRemote)
	b.startExecutorWith(t, executor.Config{}, reg, h, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))

	found := b.call(t, ctx, "helpdesk.get_ticket", `{"ticket_id": "T-1042"}`)
	unknown := b.call(t, ctx, "helpdesk.get_ticket", `{"ticket_id": "T-9999"}`)
	opened := b.call(t, ctx, "helpdesk.create_ticket", `{"subject": "Leaking gutter", "body": "Water over the back door", "tags": ["roof"]}`)
	rs := b.wait(t, ctx, found, unknown, opened)
	mu.Lock()
	defer mu.Unlock()

	r := rs[found]
	require.Equal(t, map[string]any{"id": "T-1042", "status": "open", "subject": "Leaking gutter", "assignee": nil}, restResult(t, r))
	require.Equal(t, map[string]any{"result.id": "T-1042", "result.status": "open"}, r.Summary)
	require.Contains(t, seen, "GET /v2/tickets/T-1042", "no fields pair: the input has no fields")
	require.Empty(t, r.Effects.Outside, "a read has no outside effects")

	r = rs[unknown]
	require.Equal(t, registry.CodeRemoteError, r.Error.Code)
	require.True(t, strings.Contains(doc, "message: "+r.Error.Message), "the page shows the message %q", r.Error.Message)
	require.Equal(t, map[string]any{"status": float64(404), "message": "ticket T-9999 not found", "method": "GET",
		"url": "${HELPDESK_API}/v2/tickets/{ticket_id}?fields={fields}", "response": map[string]any{"error": "ticket T-9999 not found"}}, decodeDetails(t, r))

	r = rs[opened]
	require.Equal(t, map[string]any{"id": "T-1043", "status": "new"}, restResult(t, r))
	require.Equal(t, []registry.OutsideEffect{{Kind: "http", Target: "POST ${HELPDESK_API}/v2/tickets", Reference: "HTTP 201"}}, r.Effects.Outside)
	require.True(t, strings.Contains(doc, `"target": "POST ${HELPDESK_API}/v2/tickets", "reference": "HTTP 201"`), "the page shows the outside effect")
	var shown string
	for _, block := range fences(doc, "text") {
		if strings.HasPrefix(block, `{"ticket"`) {
			shown = block
		}
	}
	require.NotEmpty(t, shown, "the page shows the body the help desk receives")
	require.Len(t, created, 1)
	require.JSONEq(t, shown, string(created[0]))
}
