package executor

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// BenchmarkReceiptsEncode encodes a batch's receipts for receiptsInsertSQL (os.create_note calls with their
// results, db_writes and receipt fields), the executor's per-call encoding work at commit.
func BenchmarkReceiptsEncode(b *testing.B) {
	reg, err := registry.Load("../tools.registry.json")
	require.NoError(b, err)
	tool, ok := reg.Tool("os.create_note")
	require.True(b, ok)
	for _, n := range []int{1, 64} {
		receipts := make([]receiptRow, n)
		for i := range receipts {
			id := uuid.New()
			result, _ := json.Marshal(map[string]any{"note_id": id, "title": fmt.Sprintf("note %d", i), "kind": "business",
				"tags": []string{"bench"}, "created_at": time.Now()})
			writes, _ := json.Marshal([]registry.DBWrite{{Table: "os_notes", Op: "insert", Count: 1, IDs: []string{id.String()}}})
			receipts[i] = receiptRow{
				a: &attempt{args: registry.CallArgs{CallID: uuid.New(), ToolName: tool.Name}, job: &rivertype.JobRow{Attempt: 1},
					started: time.Now(), tool: tool, callRow: callRow{toolName: tool.Name}},
				d: &receiptDraft{status: registry.StatusSucceeded, result: result, dbWrites: writes, durationMS: 1.25},
			}
		}
		doc, err := encodeReceipts(receipts, nil)
		require.NoError(b, err)
		var decoded []map[string]any
		require.NoError(b, json.Unmarshal([]byte(doc), &decoded))
		require.Len(b, decoded, n)
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := encodeReceipts(receipts, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
