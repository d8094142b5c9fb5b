package gemsql

import (
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// benchNoticePayload is a receipt NOTIFY payload as gem_receipt_inserted builds it (jsonb as text: keys
// ordered by length, ", " and ": " separators; timestamps of the row as +00:00, those of the handler's result
// as Go encoded them) for a succeeded os.create_task call.
const benchNoticePayload = `{"tool": "os.create_task", "error": null, "result": {"title": "Call John about the roof", ` +
	`"due_at": "2026-11-23T09:00:00.123456Z", "status": "open", "lead_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", ` +
	`"task_id": "2f1e6c1a-7d4b-4c8e-9a0f-3b5d7e9f1a2c", "priority": "urgent", "created_at": "2026-11-22T10:00:00.125456Z", ` +
	`"updated_at": "2026-11-22T10:00:00.125456Z", "description": "He asked for a call back before Friday.", "completed_at": null}, ` +
	`"status": "succeeded", "worker": "executor-7f3a", "attempt": 1, "call_id": "8c1d3e5f-7a9b-4c2d-8e0f-1a3b5c7d9e2f", ` +
	`"effects": {"db_writes": [{"op": "insert", "ids": ["2f1e6c1a-7d4b-4c8e-9a0f-3b5d7e9f1a2c"], "count": 1, "table": "os_tasks"}]}, ` +
	`"summary": {"result.task_id": "2f1e6c1a-7d4b-4c8e-9a0f-3b5d7e9f1a2c", "result.priority": "urgent"}, ` +
	`"started_at": "2026-11-22T10:00:00.123456+00:00", "duration_ms": 4.217, "finished_at": "2026-11-22T10:00:00.127673+00:00", ` +
	`"idempotency_of": null, "idempotency_hit": false, "idempotency_key": null}`

// BenchmarkParseNotice decodes receipt notifications as the receipt waiter does for every receipt: the
// whole receipt, and the call id alone (a receipt too large for a notification).
func BenchmarkParseNotice(b *testing.B) {
	callID := uuid.MustParse("8c1d3e5f-7a9b-4c2d-8e0f-1a3b5c7d9e2f")

	b.Run("receipt", func(b *testing.B) {
		nt, ok := parseNotice(benchNoticePayload)
		require.True(b, ok)
		require.Equal(b, callID, nt.id)
		r := nt.receipt
		require.NotNil(b, r)
		require.Equal(b, callID, r.CallID)
		require.Equal(b, "os.create_task", r.ToolName)
		require.Equal(b, registry.StatusSucceeded, r.Status)
		require.Nil(b, r.Error)
		require.Equal(b, []registry.DBWrite{{Table: "os_tasks", Op: "insert", Count: 1,
			IDs: []string{"2f1e6c1a-7d4b-4c8e-9a0f-3b5d7e9f1a2c"}}}, r.Effects.DBWrites)
		require.Equal(b, "urgent", r.Summary["result.priority"])
		require.Contains(b, string(r.Result), `"priority": "urgent"`)
		require.Equal(b, 1, r.Attempt)
		require.InDelta(b, 4.217, r.DurationMS, 1e-9)
		require.Equal(b, "2026-11-22T10:00:00.127673Z", r.FinishedAt.UTC().Format("2006-01-02T15:04:05.999999Z07:00"))

		b.ReportAllocs()
		b.SetBytes(int64(len(benchNoticePayload)))
		for b.Loop() {
			if _, ok := parseNotice(benchNoticePayload); !ok {
				b.Fatal("the payload did not parse")
			}
		}
	})

	b.Run("call_id", func(b *testing.B) {
		payload := callID.String()
		nt, ok := parseNotice(payload)
		require.True(b, ok)
		require.Equal(b, callID, nt.id)
		require.Nil(b, nt.receipt)

		b.ReportAllocs()
		for b.Loop() {
			if _, ok := parseNotice(payload); !ok {
				b.Fatal("the payload did not parse")
			}
		}
	})
}
