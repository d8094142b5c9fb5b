package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// benchReceipts returns n receipts of os.create_note calls with their results, db_writes and receipt fields.
func benchReceipts(tb testing.TB, n int) []receiptRow {
	reg, err := registry.Load("../../../tools.registry.json")
	require.NoError(tb, err)
	tool, ok := reg.Tool("os.create_note")
	require.True(tb, ok)
	receipts := make([]receiptRow, n)
	for i := range receipts {
		id := uuid.New()
		result, _ := json.Marshal(map[string]any{"note_id": id, "domain": "business", "title": fmt.Sprintf("note %d", i),
			"entity_refs": []any{}, "tags": []string{"bench"}, "created_at": time.Now()})
		writes, _ := json.Marshal([]registry.DBWrite{{Table: "os_notes", Op: "insert", Count: 1, IDs: []string{id.String()}}})
		receipts[i] = receiptRow{
			a: &attempt{args: registry.CallArgs{CallID: uuid.New(), ToolName: tool.Name}, job: &rivertype.JobRow{Attempt: 1},
				started: time.Now(), tool: tool, callRow: callRow{toolName: tool.Name}},
			d: &receiptDraft{status: registry.StatusSucceeded, result: result, dbWrites: writes, durationMS: 1.25},
		}
	}
	return receipts
}

// BenchmarkReceiptsEncode encodes a batch's receipts for receiptsInsertSQL (os.create_note calls with their
// results, db_writes and receipt fields), the executor's per-call encoding work at commit.
func BenchmarkReceiptsEncode(b *testing.B) {
	for _, n := range []int{1, 64} {
		receipts := benchReceipts(b, n)
		docs, err := encodeReceipts(receipts, nil, receiptsChunkBytes)
		require.NoError(b, err)
		require.Len(b, docs, 1)
		var decoded []map[string]any
		require.NoError(b, json.Unmarshal([]byte(docs[0]), &decoded))
		require.Len(b, decoded, n)
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(docs[0])))
			for b.Loop() {
				if _, err := encodeReceipts(receipts, nil, receiptsChunkBytes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Receipts too large for one parameter are split into several INSERTs, in order, each a JSON array of
// whole receipts; the last succeeded call's row alone is marked to collect its writes.
func TestEncodeReceiptsChunks(t *testing.T) {
	t.Parallel()
	receipts := benchReceipts(t, 10)
	big := strings.Repeat("x", 3000)
	receipts[4].d.result = json.RawMessage(fmt.Sprintf(`{"blob": %q}`, big))
	one, err := encodeReceipts(receipts[:1], nil, 1<<20)
	require.NoError(t, err)
	size := len(one[0])

	docs, err := encodeReceipts(receipts, receipts[7].d, 3*size)
	require.NoError(t, err)
	require.Greater(t, len(docs), 3)
	var ids []string
	for _, doc := range docs {
		var rows []struct {
			CallID  string `json:"call_id"`
			Collect bool   `json:"collect"`
		}
		require.NoError(t, json.Unmarshal([]byte(doc), &rows), doc)
		require.NotEmpty(t, rows)
		if len(rows) > 1 {
			require.LessOrEqual(t, len(doc), 3*size, "only a receipt alone may exceed the bound")
		}
		for _, r := range rows {
			ids = append(ids, r.CallID)
			require.Equal(t, r.CallID == receipts[7].a.args.CallID.String(), r.Collect)
		}
	}
	require.Len(t, ids, len(receipts))
	for i, r := range receipts {
		require.Equal(t, r.a.args.CallID.String(), ids[i], "receipts keep their order")
	}
}
