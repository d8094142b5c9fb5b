package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// expense is an input of finance.add_expense (idempotency mode none: without a key, every call records
// one), told apart from other tests' by its notes.
func expense(notes string, cents int) map[string]any {
	return map[string]any{"amount_cents": cents, "incurred_on": "2026-11-30", "category": "materials", "notes": notes}
}

func countExpenses(t *testing.T, notes string) int {
	t.Helper()
	var n int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM expenses WHERE notes = $1`, notes).Scan(&n))
	return n
}

// postCall sends POST /calls with the headers given and decodes the answer.
func postCall(t *testing.T, token string, body map[string]any, headers map[string]string) (int, callResponse) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, shared.url+"/calls", bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out callResponse
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

// TestRequestKeyHTTP: a key a client sends with POST /calls means "this request, once" for a tool whose
// mode is none (a retried expense is recorded once), by the Idempotency-Key header or the body's field; the
// same key with another input is refused 422 and nothing is made; another caller's same key is its own.
func TestRequestKeyHTTP(t *testing.T) {
	t.Parallel()
	notes := "expense " + uuid.NewString()
	in := expense(notes, 12345)
	key := uuid.NewString()
	body := map[string]any{"tool": "finance.add_expense", "input": in, "wait_timeout_ms": 20000}

	status, first := postCall(t, testToken, body, map[string]string{"Idempotency-Key": `"` + key + `"`})
	require.Equal(t, http.StatusOK, status, "%+v", first.Errors)
	require.True(t, first.OK, "%+v", first.Errors)
	require.False(t, first.Receipt.IdempotencyHit)
	require.Equal(t, key, first.Call.IdempotencyKey)

	// The retry: same key (bare in the header this time), same input.
	status, again := postCall(t, testToken, body, map[string]string{"Idempotency-Key": key})
	require.Equal(t, http.StatusOK, status, "%+v", again.Errors)
	require.True(t, again.OK)
	require.True(t, again.Receipt.IdempotencyHit, "the retry repeats the first call's receipt")
	require.Equal(t, first.Call.ID, *again.Receipt.IdempotencyOf)
	require.Equal(t, first.Call.ID, *again.Call.IdempotencyOf)
	require.JSONEq(t, string(first.Receipt.Result), string(again.Receipt.Result))
	require.Zero(t, again.Call.JobID, "a repeated request never gets a job")

	// The body's field is the same key.
	withField := map[string]any{"tool": "finance.add_expense", "input": in, "wait_timeout_ms": 20000, "idempotency_key": key}
	status, third := postCall(t, testToken, withField, nil)
	require.Equal(t, http.StatusOK, status)
	require.True(t, third.Receipt.IdempotencyHit)
	require.Equal(t, 1, countExpenses(t, notes), "one expense however often it was sent")

	// The same key with another amount: refused, nothing made.
	var refused callResponse
	other := map[string]any{"tool": "finance.add_expense", "input": expense(notes, 99999), "wait_timeout_ms": 20000}
	status, refused = postCall(t, testToken, other, map[string]string{"Idempotency-Key": key})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, brain.EKEYREUSED, refused.Errors[0].Code)
	require.Contains(t, refused.Errors[0].Message, first.Call.ID.String())
	require.Equal(t, 1, countExpenses(t, notes))

	// Header and field that disagree: 400, nothing made.
	status, refused = postCall(t, testToken, withField, map[string]string{"Idempotency-Key": "another-key"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, brain.EINVALID, refused.Errors[0].Code)
	require.Contains(t, refused.Errors[0].Message, "differ")

	// Another caller's key is its own: the same key and input run for it.
	_, other2 := addCaller(t, newAPI(t), []string{"*"}, nil)
	status, theirs := postCall(t, other2.token, body, map[string]string{"Idempotency-Key": key})
	require.Equal(t, http.StatusOK, status, "%+v", theirs.Errors)
	require.False(t, theirs.Receipt.IdempotencyHit)
	require.Equal(t, 2, countExpenses(t, notes))
}

// TestRequestKeyConcurrent: twenty identical requests sent at once with one key make one expense; every
// answer is its receipt.
func TestRequestKeyConcurrent(t *testing.T) {
	t.Parallel()
	notes := "expense " + uuid.NewString()
	body := map[string]any{"tool": "finance.add_expense", "input": expense(notes, 500), "wait_timeout_ms": 20000}
	key := uuid.NewString()
	var wg sync.WaitGroup
	answers := make([]callResponse, 20)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, resp := postCall(t, testToken, body, map[string]string{"Idempotency-Key": key})
			require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
			answers[i] = resp
		}()
	}
	wg.Wait()
	ran := 0
	for _, a := range answers {
		require.NotNil(t, a.Receipt)
		require.Equal(t, registry.StatusSucceeded, a.Receipt.Status)
		if !a.Receipt.IdempotencyHit {
			ran++
		}
	}
	require.Equal(t, 1, ran)
	require.Equal(t, 1, countExpenses(t, notes))
}

// TestRequestKeyCLI: brain call -key twice records one expense; the second answer is the first's receipt.
func TestRequestKeyCLI(t *testing.T) {
	t.Parallel()
	notes := "expense " + uuid.NewString()
	input, err := json.Marshal(expense(notes, 4200))
	require.NoError(t, err)
	env := map[string]string{"GEM_BRAIN_URL": shared.url, "GEM_BRAIN_TOKEN": testToken}
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := cli(args, func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	key := uuid.NewString()
	code, out := run("call", "finance.add_expense", string(input), "-key", key)
	require.Equal(t, 0, code, out)
	code, out = run("call", "finance.add_expense", string(input), "-key", key)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "(idempotency hit: the result of call ")
	require.Equal(t, 1, countExpenses(t, notes))
}

// TestRequestKeyMCP: tools/call with _meta's gem/idempotency_key, or the Idempotency-Key header on /mcp,
// runs the tool once; other arguments with the same key are refused, nothing made.
func TestRequestKeyMCP(t *testing.T) {
	t.Parallel()
	notes := "expense " + uuid.NewString()
	key := uuid.NewString()
	s := session(t, shared.url+"/mcp", map[string]string{"Authorization": "Bearer " + testToken}, nil)
	call := func(args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "finance.add_expense", Arguments: args, Meta: meta})
		require.NoError(t, err)
		return res
	}
	first := call(expense(notes, 700), mcp.Meta{"gem/idempotency_key": key})
	require.False(t, first.IsError, "%+v", first.Content)
	again := call(expense(notes, 700), mcp.Meta{"gem/idempotency_key": key})
	require.False(t, again.IsError, "%+v", again.Content)
	require.Equal(t, 1, countExpenses(t, notes))
	receipt := again.StructuredContent.(map[string]any)
	require.Equal(t, first.Meta["gem/call_id"], receiptOf(t, shared.url, again.Meta["gem/call_id"]).IdempotencyOf.String(), "%v", receipt)

	refused := call(expense(notes, 701), mcp.Meta{"gem/idempotency_key": key})
	require.True(t, refused.IsError)
	require.Contains(t, refused.Content[0].(*mcp.TextContent).Text, "different input")
	require.Equal(t, 1, countExpenses(t, notes))

	// Over HTTP the header carries the key as well.
	byHeader := session(t, shared.url+"/mcp", map[string]string{"Authorization": "Bearer " + testToken, "Idempotency-Key": key}, nil)
	res, err := byHeader.CallTool(context.Background(), &mcp.CallToolParams{Name: "finance.add_expense", Arguments: expense(notes, 700)})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Equal(t, 1, countExpenses(t, notes))
}

// receiptOf reads a call's receipt over the API.
func receiptOf(t *testing.T, url string, callID any) *registry.Receipt {
	t.Helper()
	var resp callResponse
	a := &testAPI{t: t, url: url, token: testToken}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls/"+callID.(string)+"?wait=10s", nil, &resp))
	require.NotNil(t, resp.Receipt)
	return resp.Receipt
}

// TestRequestKeyApproval: a repeated request whose first call waits for approval waits with it (it asks no
// approval of its own), and ends as the first one does once that is decided.
func TestRequestKeyApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// invoice.list_overdue is the only tool declaring read:invoices, and no other test here calls it.
	approvalPolicy(t, "read:invoices", false, 600000)

	key := uuid.NewString()
	body := map[string]any{"tool": "invoice.list_overdue", "input": map[string]any{}, "wait_timeout_ms": 20000}
	status, first := postCall(t, testToken, body, map[string]string{"Idempotency-Key": key})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, brain.EAWAITING, first.Errors[0].Code)
	start := time.Now()
	status, again := postCall(t, testToken, body, map[string]string{"Idempotency-Key": key})
	require.Equal(t, http.StatusOK, status)
	require.Less(t, time.Since(start), 10*time.Second, "answered at once, not after the wait")
	require.Equal(t, brain.EAWAITING, again.Errors[0].Code, "%+v", again.Errors)
	require.Contains(t, again.Errors[0].Message, first.Call.ID.String())
	require.Equal(t, first.Call.ID, *again.Call.IdempotencyOf)
	var approvals int
	require.NoError(t, shared.pool.QueryRow(ctx, `SELECT count(*) FROM core_approvals WHERE call_id IN ($1, $2)`,
		first.Call.ID, again.Call.ID).Scan(&approvals))
	require.Equal(t, 1, approvals, "the repeat asks no approval of its own")

	var decided map[string]any
	a := newAPI(t)
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls/"+first.Call.ID.String()+"/reject", map[string]any{"reason": "not now"}, &decided))
	r := receiptOf(t, shared.url, again.Call.ID.String())
	require.True(t, r.IdempotencyHit)
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeRejected, r.Error.Code, "the repeat ends as the first did")
}
