package remote

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

func testREST(t *testing.T, im registry.Implementation, env map[string]string) *restTool {
	t.Helper()
	tool := &registry.Tool{Name: "ext.test", Implementation: &im, Idempotency: registry.Idempotency{Mode: registry.ModeSafeRetry}}
	return newRESTTool(tool, Options{Getenv: func(k string) string { return env[k] }, HTTPClient: &http.Client{}})
}

func buildFor(t *testing.T, r *restTool, input string) (*request, error) {
	t.Helper()
	env, err := r.readEnv()
	require.NoError(t, err)
	v, ok := decodeJSON([]byte(input))
	require.True(t, ok)
	return r.build(v.(map[string]any), json.RawMessage(input), env)
}

// The registry check refuses a field where it could choose the host; the handler refuses such a URL too,
// for a registry written before that check or a base URL read from the environment.
func TestRESTInputCannotChangeHost(t *testing.T) {
	t.Parallel()
	r := testREST(t, registry.Implementation{Type: "rest", Method: "GET", URL: "${API}{path}"}, map[string]string{"API": "https://api.example.com"})
	for _, path := range []string{"@evil.example", ".evil.example", ":8443"} {
		_, err := buildFor(t, r, `{"path": "`+path+`"}`)
		var he *executor.Error
		require.ErrorAs(t, err, &he, path)
		require.Equal(t, registry.CodeValidation, he.Code, path)
		require.Contains(t, he.Message, "to another host", path)
	}
	slash := testREST(t, registry.Implementation{Type: "rest", Method: "GET", URL: "${API}/{path}"}, map[string]string{"API": "https://api.example.com"})
	req, err := buildFor(t, slash, `{"path": "@evil.example"}`)
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/@evil.example", req.url, "after a slash the same value is only a path")

	bad := testREST(t, registry.Implementation{Type: "rest", Method: "GET", URL: "${API}/items"}, map[string]string{"API": "api.example.com"})
	_, err = buildFor(t, bad, `{}`)
	var he *executor.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, registry.CodeNotConfigured, he.Code, "a base URL without a scheme is the executor's configuration, not the input")
}

func TestRESTSecretsAreEveryEnvValueButTheBase(t *testing.T) {
	t.Parallel()
	r := testREST(t, registry.Implementation{Type: "rest", Method: "GET", URL: "${API}/hooks/${HOOK_PATH}?key=${KEY}",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Literal": "{not_a_field}"}},
		map[string]string{"API": "https://api.example.com", "HOOK_PATH": "T000/B000/XXXX", "KEY": "a b&c", "TOKEN": "t0k3n-secret"})
	req, err := buildFor(t, r, `{}`)
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/hooks/T000/B000/XXXX?key=a+b%26c", req.url)
	require.ElementsMatch(t, []string{"T000/B000/XXXX", "a b&c", "t0k3n-secret"}, req.secrets)
	require.Equal(t, "{not_a_field}", req.headers.Get("X-Literal"), "headers take no input")
	require.Equal(t, []string{"API", "HOOK_PATH", "KEY", "TOKEN"}, r.env)

	red := newRedactor(req.secrets)
	require.Equal(t, "x [redacted] and [redacted], a b&c", red.text("x T000/B000/XXXX and t0k3n-secret, a b&c"),
		"values under 8 characters are not searched for")
	require.Equal(t, map[string]any{"[redacted]": []any{"Bearer [redacted]"}}, red.value(map[string]any{"t0k3n-secret": []any{"Bearer t0k3n-secret"}}))
}

func TestRESTBodyTemplate(t *testing.T) {
	t.Parallel()
	input := map[string]any{"n": json.Number("12345678901234567890"), "s": "x", "o": map[string]any{"a": true}, "z": nil}
	tmpl, _ := decodeJSON([]byte(`{"n": "{n}", "s": "{s}", "text": "{s}-{n}-{o}-{z}-{absent}", "gone": "{absent}", "null": "{z}",
		"list": ["{absent}", "{o}"], "keep": {"{s}": 1}, "env": "${NOT_READ}"}`))
	v, _ := fillBody(tmpl, input)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 12345678901234567890, "s": "x", "text": "x-12345678901234567890-{\"a\":true}--", "null": null,
		"list": [null, {"a": true}], "keep": {"{s}": 1}, "env": "${NOT_READ}"}`, string(b), "object keys are not templates")

	whole, _ := decodeJSON([]byte(`"{o}"`))
	v, ok := fillBody(whole, input)
	require.True(t, ok)
	require.Equal(t, map[string]any{"a": true}, v, "a whole-body field sends that value as the body")
}

func TestRESTProviderMessage(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"error": "invalid_grant", "error_description": "expired"}`: "invalid_grant",
		`{"error": {"message": "no such user", "code": 40}}`:         "no such user",
		`{"message": "Bad credentials"}`:                             "Bad credentials",
		`{"detail": "Not found."}`:                                   "Not found.",
		`{"type": "about:blank", "title": "Forbidden"}`:              "Forbidden",
		`{"errors": [{"message": "title is required"}]}`:             "title is required",
		`{"errors": ["first", "second"]}`:                            "first",
		`{"code": 7}`:                                                `{"code":7}`,
		`"just a string"`:                                            "just a string",
	} {
		v, ok := decodeJSON([]byte(body))
		require.True(t, ok, body)
		require.Equal(t, want, providerMessage(v), body)
	}
	long := providerMessage(strings.Repeat("é", 600))
	require.Equal(t, maxMessageRunes+1, len([]rune(long)), "truncated to %d characters and an ellipsis", maxMessageRunes)
}

func TestRESTLookupPath(t *testing.T) {
	t.Parallel()
	v, _ := decodeJSON([]byte(`{"data": {"items": [{"id": "a"}, {"id": "b"}], "n": 1}}`))
	got, missing := lookupPath(v, "data.items.1.id")
	require.Empty(t, missing)
	require.Equal(t, "b", got)
	for path, want := range map[string]string{"data.pages": "data.pages", "data.items.2": "data.items.2", "data.n.x": "data.n.x", "data.items.x": "data.items.x"} {
		_, missing := lookupPath(v, path)
		require.Equal(t, want, missing, path)
	}
}
