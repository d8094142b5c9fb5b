package gemsql_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// bigDocument is a JSON object of about n bytes as text.
func bigDocument(n int) json.RawMessage {
	return json.RawMessage(`{"text": "` + strings.Repeat("x", n) + `"}`)
}

// jsonBytes is the size of a JSON document as PostgreSQL's jsonb prints it (what the Truncated marker counts).
func (b *testBundle) jsonBytes(t *testing.T, doc json.RawMessage) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT octet_length($1::jsonb::text)`, string(doc)).Scan(&n))
	return n
}

func TestCallListTruncatesLargeInputs(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	big := bigDocument(100_000)
	bigID, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.big", Input: big}))
	require.NoError(t, err)
	smallID, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.small", Input: json.RawMessage(`{"n": 1}`)}))
	require.NoError(t, err)

	inputs := func(max int) map[uuid.UUID]json.RawMessage {
		calls, err := gemsql.CallList(ctx, b.pool, gemsql.CallListParams{MaxInputBytes: max})
		require.NoError(t, err)
		require.Len(t, calls, 2)
		out := map[uuid.UUID]json.RawMessage{}
		for _, c := range calls {
			require.Equal(t, map[uuid.UUID]string{bigID: "a.big", smallID: "a.small"}[c.ID], c.ToolName, "other columns stay in place")
			out[c.ID] = c.Input
		}
		return out
	}

	got := inputs(8192)
	var marker gemsql.Truncated
	require.NoError(t, json.Unmarshal(got[bigID], &marker))
	require.Equal(t, gemsql.Truncated{Truncated: true, Bytes: b.jsonBytes(t, big)}, marker)
	require.Greater(t, marker.Bytes, 100_000)
	require.JSONEq(t, `{"n": 1}`, string(got[smallID]), "an input under the bound is whole")

	got = inputs(0)
	require.JSONEq(t, string(big), string(got[bigID]), "MaxInputBytes 0 lists the whole input")
	require.JSONEq(t, `{"n": 1}`, string(got[smallID]))

	// CallGet always reads the whole input.
	c, err := gemsql.CallGet(ctx, b.pool, bigID)
	require.NoError(t, err)
	require.JSONEq(t, string(big), string(c.Input))
}

func TestReceiptListTruncatesLargeResultsAndErrorDetails(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	big := bigDocument(100_000)
	var ids []uuid.UUID
	for range 4 {
		id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.b"}))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	bigResult, bigDetails, noDetails, nullResult := ids[0], ids[1], ids[2], ids[3]
	insert := func(id uuid.UUID, status string, result, errJSON, code any) {
		t.Helper()
		_, err := b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, result, error, error_code)
			VALUES ($1, 'a.b', $2, $3::jsonb, $4::jsonb, $5)`, id, status, result, errJSON, code)
		require.NoError(t, err)
	}
	insert(bigResult, "succeeded", string(big), nil, nil)
	insert(bigDetails, "failed", nil, `{"code": "handler_error", "message": "boom", "details": `+string(big)+`}`, "handler_error")
	insert(noDetails, "failed", nil, `{"code": "handler_error", "message": "boom"}`, "handler_error")
	insert(nullResult, "succeeded", nil, nil, nil)

	receipts := func(max int) map[uuid.UUID]*registry.Receipt {
		list, err := gemsql.ReceiptList(ctx, b.pool, gemsql.ReceiptListParams{MaxResultBytes: max})
		require.NoError(t, err)
		require.Len(t, list, 4)
		out := map[uuid.UUID]*registry.Receipt{}
		for _, r := range list {
			require.Equal(t, "a.b", r.ToolName, "other columns stay in place")
			out[r.CallID] = r
		}
		return out
	}
	marker := func(doc json.RawMessage) string {
		m, err := json.Marshal(gemsql.Truncated{Truncated: true, Bytes: b.jsonBytes(t, doc)})
		require.NoError(t, err)
		return string(m)
	}

	got := receipts(8192)
	require.JSONEq(t, marker(big), string(got[bigResult].Result))
	require.JSONEq(t, marker(big), string(got[bigDetails].Error.Details), "an error's large details become the marker")
	require.Equal(t, registry.ErrorCode("handler_error"), got[bigDetails].Error.Code, "the error's code and message stay")
	require.Equal(t, "boom", got[bigDetails].Error.Message)
	require.Equal(t, &registry.CallError{Code: "handler_error", Message: "boom"}, got[noDetails].Error, "an error without details is whole")
	require.Nil(t, got[bigResult].Error, "a NULL error stays NULL")
	require.Equal(t, "null", string(got[nullResult].Result), "a NULL result stays NULL")

	got = receipts(0)
	require.JSONEq(t, string(big), string(got[bigResult].Result), "MaxResultBytes 0 lists the whole result")
	require.JSONEq(t, string(big), string(got[bigDetails].Error.Details))
	require.Equal(t, "null", string(got[nullResult].Result))
}

// TestListsCutLongMessagesAndSummaries: an error message is cut to the bound (in the receipt and in its call's
// row), and a large summary becomes the marker, so no column of a listing carries a large document.
func TestListsCutLongMessagesAndSummaries(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "a.b"}))
	require.NoError(t, err)
	long := strings.Repeat("é", 50_000) // 100,000 bytes
	errJSON, err := json.Marshal(registry.CallError{Code: "validation_error", Message: long})
	require.NoError(t, err)
	summary := bigDocument(100_000)
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, summary)
		VALUES ($1, 'a.b', 'failed', $2::jsonb, 'validation_error', $3::jsonb)`, id, string(errJSON), string(summary))
	require.NoError(t, err)

	list, err := gemsql.ReceiptList(ctx, b.pool, gemsql.ReceiptListParams{MaxResultBytes: 8192})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, registry.ErrorCode("validation_error"), list[0].Error.Code)
	require.Equal(t, strings.Repeat("é", 8192), list[0].Error.Message, "the message keeps its first 8192 characters")
	require.Equal(t, map[string]any{"truncated": true, "bytes": float64(b.jsonBytes(t, summary))}, list[0].Summary)

	calls, err := gemsql.CallList(ctx, b.pool, gemsql.CallListParams{MaxInputBytes: 8192})
	require.NoError(t, err)
	require.Len(t, calls, 1)
	require.Equal(t, strings.Repeat("é", 8192), calls[0].Error, "the call's error is cut too")

	whole, err := gemsql.ReceiptList(ctx, b.pool, gemsql.ReceiptListParams{})
	require.NoError(t, err)
	require.Equal(t, long, whole[0].Error.Message)
	c, err := gemsql.CallGet(ctx, b.pool, id)
	require.NoError(t, err)
	require.Equal(t, long, c.Error)
}
