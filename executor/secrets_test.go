package executor_test

import (
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestSecretInputs: a secret input reaches the handler in clear and is stored sealed, whether it came sealed
// (the brain) or in clear (plain SQL, sealed by the executor in the call's transaction); a validation error
// does not quote it; and an executor without GEM_SECRET_KEY refuses the call and removes the secret.
func TestSecretInputs(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	tool, _ := b.reg.Tool("test.secret_login")
	secrets, err := registry.NewSecrets(testSecretKey)
	require.NoError(t, err)

	stored := func(id any) string {
		var s string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT input::text FROM core_tool_calls WHERE id = $1`, id).Scan(&s))
		return s
	}
	everywhere := func(id any) {
		t.Helper()
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM core_calls c JOIN core_tool_receipts r ON r.call_id = c.id
			WHERE c.id = $1 AND (c.input::text || r::text) LIKE '%' || $2 || '%'`, id, testSecret).Scan(&n))
		require.Zero(t, n, "the secret is in the call's view or its receipt")
	}

	// Plain SQL, in clear: run with the clear value, then stored sealed.
	id := b.call(t, ctx, "test.secret_login", `{"user": "ann", "password": "`+testSecret+`"}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.JSONEq(t, `{"ok": true, "user": "ann"}`, string(r.Result), "the handler had the clear value")
	require.NotContains(t, stored(id), testSecret)
	require.Contains(t, stored(id), registry.SecretEnvelopeField)
	require.Contains(t, stored(id), `"user": "ann"`)
	everywhere(id)

	// Sealed (as the brain stores it): opened for the handler.
	sealed, err := secrets.Seal(tool, []byte(`{"user": "bo", "password": "`+testSecret+`"}`))
	require.NoError(t, err)
	id = b.call(t, ctx, "test.secret_login", string(sealed))
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.JSONEq(t, `{"ok": true, "user": "bo"}`, string(r.Result))

	// A secret that breaks its schema: the violation names the property and the keyword, not the value.
	bad := "NOT-allowed-" + testSecret
	id = b.call(t, ctx, "test.secret_login", `{"user": "cy", "password": "`+bad+`"}`)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodeValidation, r.Error.Code)
	require.Contains(t, r.Error.Message, "/password")
	require.NotContains(t, r.Error.Message+string(r.Error.Details), bad)
	require.NotContains(t, stored(id), bad, "sealed although the call failed")

	// An envelope sealed with another key is not opened: not_configured, saying what to set.
	other, err := registry.NewSecrets(strings.Repeat("9", 64))
	require.NoError(t, err)
	foreign, err := other.Seal(tool, []byte(`{"user": "di", "password": "`+testSecret+`"}`))
	require.NoError(t, err)
	id = b.call(t, ctx, "test.secret_login", string(foreign))
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	require.Contains(t, r.Error.Message, "sealed with key "+other.KeyID())
}

// TestSecretInputsWithoutKey: an executor without GEM_SECRET_KEY does not run a call whose secret came in
// clear, and removes the secret from storage.
func TestSecretInputsWithoutKey(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, func(c *executor.Config) { c.SecretKey = "" })
	id := b.call(t, ctx, "test.secret_login", `{"user": "ann", "password": "`+testSecret+`"}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	require.Contains(t, r.Error.Message, "GEM_SECRET_KEY is not set")
	var input string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT input::text FROM core_tool_calls WHERE id = $1`, id).Scan(&input))
	require.NotContains(t, input, testSecret)
	require.Contains(t, input, registry.SecretRedacted)
}
