package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestWorkflowThroughTheBrain runs a roofing job from lead to paid invoice in plain words, through the
// brain's rules planner and the executor, carrying ids forward in the run context as a client would.
func TestWorkflowThroughTheBrain(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	ctx := map[string]any{}
	var answer string
	step := func(message string, wantCalls int) []map[string]any {
		t.Helper()
		resp, status := a.run(map[string]any{"message": message, "context": ctx})
		answer = resp.AssistantMessage
		require.Equal(t, http.StatusOK, status, "%s: %+v", message, resp.Errors)
		require.True(t, resp.OK, "%s: %+v %s", message, resp.Errors, resp.AssistantMessage)
		require.Len(t, resp.Receipts, wantCalls, message)
		var results []map[string]any
		for _, r := range resp.Receipts {
			require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %s", message, r.ToolName)
			var res map[string]any
			require.NoError(t, json.Unmarshal(r.Result, &res))
			results = append(results, res)
		}
		return results
	}
	field := func(m map[string]any, path ...string) any {
		var v any = m
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}

	res := step("new lead Kim Nguyen 0411 555 666 in Marrickville, referral", 1)
	ctx["lead_id"] = field(res[0], "lead", "lead_id")
	res = step("schedule an inspection on friday at 10am", 1)
	require.Equal(t, "inspection_scheduled", res[0]["lead_stage"])
	res = step("start an inspection", 1)
	ctx["inspection_id"] = res[0]["inspection_id"]

	step("add measurement: roof area 180 m2\nadd measurement: pitch 22 degrees\nadd a high defect: cracked ridge capping", 3)
	step("submit the inspection", 1)

	res = step("create a quote from the inspection", 1)
	ctx["quote_id"] = field(res[0], "quote", "quote_id")
	step("add line item: 12 x colorbond sheets at $85.50\nadd line item: labour, 16 hours at $95", 2)
	res = step("calculate totals for the quote", 1)
	// 12 × $85.50 + 16 × $95 = $2,546.00; GST 10% = $254.60.
	require.Equal(t, float64(254600), res[0]["subtotal_cents"])
	require.Equal(t, float64(25460), res[0]["gst_cents"])
	require.Equal(t, float64(280060), res[0]["total_cents"])
	require.Equal(t, "Quote total $2,800.60: $2,546.00 plus $254.60 GST.", answer)
	step("mark the quote as sent", 1)
	step("the quote was accepted", 1)

	res = step("create a job from the quote", 1)
	ctx["job_id"] = field(res[0], "job", "job_id")
	step("schedule the job for monday", 1)
	step("complete the job", 1)

	res = step("invoice the job", 1)
	ctx["invoice_id"] = field(res[0], "invoice", "invoice_id")
	require.Equal(t, float64(280060), field(res[0], "invoice", "total_cents"))
	res = step("record a payment of $1,000 on the invoice by card", 1)
	require.Equal(t, "partially_paid", field(res[0], "invoice", "status"))
	res = step("record a payment of $1,800.60 on the invoice", 1)
	require.Equal(t, "paid", field(res[0], "invoice", "status"))
	require.Contains(t, answer, "Recorded $1,800.60 on invoice")
	require.Contains(t, answer, "it is paid with $0.00 left to pay")
	require.Equal(t, float64(0), field(res[0], "invoice", "balance_cents"))

	// Paying again is refused, and the brain says why.
	resp, _ := a.run(map[string]any{"message": "record a payment of $5 on the invoice", "context": ctx})
	require.False(t, resp.OK)
	require.Equal(t, brain.ECALLFAILED, resp.Errors[0].Code)
	require.Equal(t, registry.StatusFailed, resp.Receipts[0].Status)
}
