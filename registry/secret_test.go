package registry

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func secretTool(t *testing.T, name string) *Tool {
	t.Helper()
	m := tool(name)
	m["idempotency"] = map[string]any{"mode": "none"}
	m["input_schema"] = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"phone":    map[string]any{"type": "string"},
			"password": map[string]any{"type": "string", "writeOnly": true, "format": "email"},
			"account":  map[string]any{"type": "object", "properties": map[string]any{"pin": map[string]any{"type": "integer", "x-gem-secret": true}}},
			"cards":    map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"cvv": map[string]any{"type": "string", "writeOnly": true}}}},
		},
	}
	r, err := Parse(registryDoc(m))
	require.NoError(t, err)
	tl, _ := r.Tool(name)
	return tl
}

func TestSecretsSealOpenRedact(t *testing.T) {
	t.Parallel()
	tl := secretTool(t, "vault.login")
	require.ElementsMatch(t, [][]string{{"password"}, {"account", "pin"}, {"cards", "*", "cvv"}}, tl.SecretPaths())

	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	s, err := NewSecrets(key)
	require.NoError(t, err)
	input := []byte(`{"phone": "+1555", "password": "hunter2-planted", "account": {"pin": 4321}, "cards": [{"cvv": "123"}, {"cvv": "456"}]}`)

	sealed, err := s.Seal(tl, input)
	require.NoError(t, err)
	for _, clear := range []string{"hunter2-planted", "4321", `"123"`, `"456"`} {
		require.NotContains(t, string(sealed), clear)
	}
	require.Contains(t, string(sealed), `"phone":"+1555"`)
	require.Contains(t, string(sealed), SecretEnvelopeField)
	again, err := s.Seal(tl, sealed)
	require.NoError(t, err)
	require.Equal(t, string(sealed), string(again), "sealing twice changes nothing")

	clear, hadClear, err := s.Open(tl, sealed)
	require.NoError(t, err)
	require.False(t, hadClear)
	require.JSONEq(t, string(input), string(clear))
	_, hadClear, err = s.Open(tl, input)
	require.NoError(t, err)
	require.True(t, hadClear, "a clear secret (an SQL insert) is reported, to be sealed")

	red := Redact(tl, sealed)
	require.JSONEq(t, `{"phone": "+1555", "password": "[secret]", "account": {"pin": "[secret]"}, "cards": [{"cvv": "[secret]"}, {"cvv": "[secret]"}]}`, string(red))
	require.JSONEq(t, string(red), string(Redact(tl, input)))

	// An envelope moved to another tool, or altered, does not open.
	other := secretTool(t, "vault.other")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(sealed, &doc))
	moved, _ := json.Marshal(map[string]any{"password": doc["password"]})
	_, _, err = s.Open(other, moved)
	var se *SecretError
	require.ErrorAs(t, err, &se)
	require.Contains(t, err.Error(), "sealed for another tool or property")

	// Rotation: the new key seals, the previous one still opens.
	newKey := strings.Repeat("ab", 32)
	rotated, err := NewSecrets(newKey, key)
	require.NoError(t, err)
	clear, _, err = rotated.Open(tl, sealed)
	require.NoError(t, err)
	require.JSONEq(t, string(input), string(clear))
	stranger, err := NewSecrets(newKey)
	require.NoError(t, err)
	_, _, err = stranger.Open(tl, sealed)
	require.ErrorContains(t, err, "sealed with key "+s.KeyID())

	// Without a key a clear secret is refused, not stored.
	_, err = (*Secrets)(nil).Seal(tl, input)
	require.ErrorIs(t, err, ErrNoSecretKey)
	out, err := (*Secrets)(nil).Seal(tl, []byte(`{"phone": "+1"}`))
	require.NoError(t, err)
	require.Equal(t, `{"phone": "+1"}`, string(out))

	// A format violation quotes its value; on a secret it is hidden.
	vs := []Violation{{Path: "/password", Keyword: "format", Message: `"hunter2-planted" is not valid "email"`}, {Path: "/phone", Keyword: "type", Message: "x"}}
	RedactViolations(tl, vs)
	require.NotContains(t, vs[0].Message, "hunter2")
	require.Equal(t, "x", vs[1].Message)
}

func TestSecretKeysAndChecks(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "short", strings.Repeat("z", 64), base64.StdEncoding.EncodeToString([]byte("16 bytes only!!!"))} {
		_, err := NewSecrets(bad)
		require.Error(t, err, bad)
	}
	keyed := tool("vault.keyed")
	keyed["idempotency"] = map[string]any{"mode": "keyed", "key_field": "phone"}
	keyed["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"phone": map[string]any{"type": "string", "writeOnly": true}},
		"required": []string{"phone"}}
	_, err := Parse(registryDoc(keyed))
	require.ErrorContains(t, err, "a secret property; its key would be stored in clear")
	limited := tool("vault.limited")
	limited["idempotency"] = map[string]any{"mode": "none"}
	limited["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"phone": map[string]any{"type": "string", "x-gem-secret": true}}}
	limited["limits"] = map[string]any{"rate": map[string]any{"max": 1, "per_ms": 1000, "key": "input.phone"}}
	_, err = Parse(registryDoc(limited))
	require.ErrorContains(t, err, "a secret property; its value would be stored in clear")
}
