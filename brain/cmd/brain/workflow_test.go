package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestWorkflowThroughTheBrain runs a roofing job from lead to paid invoice in plain words, through the
// brain's rules planner and the executor, in GEM's contracts, carrying ids forward in the run context as a
// client would (GEM's results name the records they made: lead_id, inspection_id, quote_id, job_id,
// invoice_id).
func TestWorkflowThroughTheBrain(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	reg := shared.brain.Registry
	ctx := map[string]any{}
	var answer string
	step := func(message string, wantCalls int) []map[string]any {
		t.Helper()
		resp, status := a.run(map[string]any{"message": message, "mode": "enqueue_and_wait", "context": ctx})
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
	id := func(res map[string]any, key string) string {
		t.Helper()
		v, _ := res[key].(string)
		require.NotEmpty(t, v, "%s in %v", key, res)
		return v
	}

	res := step("new lead Kim Nguyen 0411 555 666 in Marrickville, referral", 1)
	ctx["lead_id"] = id(res[0], "lead_id")
	step("schedule an inspection on friday at 10am", 1)
	res = step("start an inspection at 14 Addison Rd, Marrickville", 1)
	ctx["inspection_id"] = id(res[0], "inspection_id")

	step("add measurement: roof area 180 m2\nadd measurement: pitch 22 degrees\nadd a high defect: cracked ridge capping\nchecklist: gutters fail: rusted through", 4)
	require.Contains(t, answer, "Checklist: gutters is fail.")
	step("lock the inspection", 1)
	require.Equal(t, "Inspection "+ctx["inspection_id"].(string)+" is locked.", answer)
	res = step("generate the scope summary", 1)
	require.NotEmpty(t, res[0]["scope_text"])
	require.Equal(t, res[0]["scope_text"], answer)

	res = step("create a quote from the inspection", 1)
	ctx["quote_id"] = id(res[0], "quote_id")
	if _, ok := reg.Tool("quote.add_line_item"); ok {
		step("add line item: 12 x colorbond sheets at $85.50\nadd line item: labour, 16 hours at $95", 2)
	} else {
		step("set the line items to: 12 x colorbond sheets at $85.50 and labour, 16 hours at $95", 1)
	}
	res = step("calculate totals for the quote", 1)
	// 12 × $85.50 + 16 × $95 = $2,546.00, with whatever the quote drew from the inspection; GST is 10%.
	totals := res[0]["totals"].(map[string]any)
	subtotal, total := totals["subtotal_cents"].(float64), totals["total_cents"].(float64)
	require.GreaterOrEqual(t, subtotal, float64(254600))
	require.InDelta(t, subtotal*1.1, total, 1)
	require.Regexp(t, `^Quote total \$[\d,]+\.\d\d: \$[\d,]+\.\d\d plus \$[\d,]+\.\d\d GST\.$`, answer)
	// The answer says which file the PDF is and where to find it, not a dump of the receipt.
	res = step("generate the quote pdf", 1)
	require.Contains(t, answer, "quote-Q-")
	require.Contains(t, answer, res[0]["file_ref"].(string))
	require.Contains(t, answer, "GEM_FILE_STORE")
	require.NotContains(t, answer, "effects.files_written")
	step("the quote was accepted", 1)

	res = step("create a job from the quote", 1)
	ctx["job_id"] = id(res[0], "job_id")
	step("schedule the job for monday", 1)
	step("progress update: old roof stripped, sarking down", 1)
	step("complete the job", 1)
	require.Equal(t, "Job "+ctx["job_id"].(string)+" is completed.", answer)
	res = step("generate a 10 year warranty certificate for the job", 1)
	require.NotEmpty(t, res[0]["file_ref"])

	res = step("invoice the job", 1)
	ctx["invoice_id"] = id(res[0], "invoice_id")
	step("record a payment of $1,000 on the invoice by card", 1)
	rest := int64(total) - 100000
	restText := fmt.Sprintf("$%d.%02d", rest/100, rest%100)
	step("record a payment of "+restText+" on the invoice by bank transfer", 1)
	require.Contains(t, answer, "on invoice")
	step("cash flow this month", 1)
	require.Regexp(t, `^Cash flow \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d: \$[\d,]+\.\d\d in, \$[\d,]+\.\d\d out, -?\$[\d,]+\.\d\d net\.$`, answer)

	// Paying again is refused, and the brain says why.
	resp, _ := a.run(map[string]any{"message": "record a payment of $5 on the invoice", "mode": "enqueue_and_wait", "context": ctx})
	require.False(t, resp.OK)
	require.Equal(t, brain.ECALLFAILED, resp.Errors[0].Code)
	require.Equal(t, registry.StatusFailed, resp.Receipts[0].Status)
}
