package main

import (
	"context"
	"encoding/json"
	"github.com/gemhq/gem/brain/internal/testenv"
	"net/http"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestOneLeadPerNumberOverHTTP: POST /calls leads.create with one number typed four ways makes one lead,
// and POST /brain/run with a number that is none is asked about (400), nothing enqueued.
func TestOneLeadPerNumberOverHTTP(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	var leadID string
	for i, typed := range []string{"0499 123 401", "+61 499 123 401", "0499123401", "(04) 9912 3401"} {
		var body struct {
			OK      bool              `json:"ok"`
			Receipt *registry.Receipt `json:"receipt"`
		}
		status := a.do(http.MethodPost, "/calls", map[string]any{"tool": "leads.create", "wait_timeout_ms": 20000,
			"input": map[string]any{"name": "Ann Lee", "suburb": "Newtown", "phone": typed}}, &body)
		require.Equal(t, http.StatusOK, status)
		require.True(t, body.OK, "%s: %+v", typed, body.Receipt)
		require.Equal(t, "+61499123401", body.Receipt.IdempotencyKey, typed)
		require.Equal(t, i > 0, body.Receipt.IdempotencyHit, typed)
		var res struct {
			LeadID string `json:"lead_id"`
		}
		require.NoError(t, json.Unmarshal(body.Receipt.Result, &res))
		if i == 0 {
			leadID = res.LeadID
		}
		require.Equal(t, leadID, res.LeadID, typed)
	}
	var n int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM leads WHERE phone_e164 = '+61499123401'`).Scan(&n))
	require.Equal(t, 1, n)

	// A number that is none: a failed receipt saying why through POST /calls, a question through /brain/run.
	var body struct {
		OK      bool              `json:"ok"`
		Receipt *registry.Receipt `json:"receipt"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "leads.create", "wait_timeout_ms": 20000,
		"input": map[string]any{"name": "Bo", "suburb": "Newtown", "phone": "0499 123 40"}}, &body))
	require.False(t, body.OK)
	require.Equal(t, registry.CodeValidation, body.Receipt.Error.Code)
	require.Contains(t, body.Receipt.Error.Message, `"0499 123 40" is not a phone number`)

	resp, status := a.run(map[string]any{"message": "new lead Bo Li 0499 123 40 in Newtown", "mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusBadRequest, status)
	missing := resp.Errors[0].Details.(map[string]any)["missing"].([]any)
	require.Equal(t, "phone", missing[0].(map[string]any)["field"])
	require.Contains(t, missing[0].(map[string]any)["question"], `"0499 123 40" is not a phone number`)
	require.Equal(t, 0, testenv.CountCalls(t, shared.pool, resp.RunID))
}
