package gemsql

import (
	"context"
	"fmt"

	"github.com/gemhq/gem/sql/telemetry"
)

// QueueStats are the queue's live numbers the studio's architecture page shows: its depth (as the metrics
// report it), the receipts of the last minute, and the processes that run calls.
type QueueStats struct {
	telemetry.QueueDepth
	// ReceiptsLastMinute are the receipts written in the last 60 seconds (core_tool_receipts_finished_at).
	ReceiptsLastMinute int64 `json:"receipts_last_minute"`
	// ExecutorsAlive and DevicesConnected are the processes that run calls.
	ExecutorsAlive   int64 `json:"executors_alive"`
	DevicesConnected int64 `json:"devices_connected"`
}

// QueueStatsGet reads the queue's live numbers.
func QueueStatsGet(ctx context.Context, db DBTX) (*QueueStats, error) {
	depth, err := telemetry.ReadQueueDepth(ctx, db)
	if err != nil {
		return nil, Coded(err)
	}
	q := QueueStats{QueueDepth: *depth}
	err = db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM core_tool_receipts WHERE finished_at > now() - interval '1 minute'),
		(SELECT count(*) FROM (`+executorListSQL+`) x WHERE x.alive),
		(SELECT count(*) FROM core_devices_status WHERE connected AND alive)`).Scan(&q.ReceiptsLastMinute, &q.ExecutorsAlive, &q.DevicesConnected)
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading queue stats: %w", err))
	}
	return &q, nil
}
