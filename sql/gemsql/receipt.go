package gemsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

const receiptColumns = `call_id, tool_name, status, result, effects, error, summary, coalesce(idempotency_key, ''),
	idempotency_hit, idempotency_of, attempt, coalesce(worker, ''), duration_ms, started_at, finished_at,
	coalesce(device, ''), coalesce(devices_tried, '{}'), limit_wait_ms`

func scanReceipt(row pgx.Row) (*registry.Receipt, error) {
	var (
		r                    registry.Receipt
		effects, errJSON, sm []byte
	)
	err := row.Scan(&r.CallID, &r.ToolName, &r.Status, &r.Result, &effects, &errJSON, &sm, &r.IdempotencyKey,
		&r.IdempotencyHit, &r.IdempotencyOf, &r.Attempt, &r.Worker, &r.DurationMS, &r.StartedAt, &r.FinishedAt,
		&r.Device, &r.DevicesTried, &r.LimitWaitMS)
	if err != nil {
		return nil, err
	}
	if len(effects) > 0 {
		if err := json.Unmarshal(effects, &r.Effects); err != nil {
			return nil, fmt.Errorf("error decoding receipt effects: %w", err)
		}
	}
	if r.Effects.DBWrites == nil {
		r.Effects.DBWrites = []registry.DBWrite{}
	}
	if len(r.Result) == 0 {
		r.Result = json.RawMessage("null")
	}
	if len(r.DevicesTried) == 0 {
		r.DevicesTried = nil
	}
	if len(errJSON) > 0 {
		r.Error = &registry.CallError{}
		if err := json.Unmarshal(errJSON, r.Error); err != nil {
			return nil, fmt.Errorf("error decoding receipt error: %w", err)
		}
	}
	if len(sm) > 0 {
		if err := json.Unmarshal(sm, &r.Summary); err != nil {
			return nil, fmt.Errorf("error decoding receipt summary: %w", err)
		}
	}
	return &r, nil
}

// ReceiptGet returns the receipt of a call, or ErrNotFound while the call has none.
func ReceiptGet(ctx context.Context, db DBTX, callID uuid.UUID) (*registry.Receipt, error) {
	r, err := scanReceipt(db.QueryRow(ctx, `SELECT `+receiptColumns+` FROM core_tool_receipts WHERE call_id = $1`, callID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error getting receipt: %w", err))
	}
	return r, nil
}

// ReceiptsGet returns the receipts that exist for the given calls, keyed by call id.
func ReceiptsGet(ctx context.Context, db DBTX, callIDs []uuid.UUID) (map[uuid.UUID]*registry.Receipt, error) {
	out := make(map[uuid.UUID]*registry.Receipt, len(callIDs))
	if len(callIDs) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `SELECT `+receiptColumns+` FROM core_tool_receipts WHERE call_id = ANY($1)`, callIDs)
	if err != nil {
		return nil, Coded(fmt.Errorf("error getting receipts: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, Coded(fmt.Errorf("error reading receipt: %w", err))
		}
		out[r.CallID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, Coded(fmt.Errorf("error getting receipts: %w", err))
	}
	return out, nil
}

// ReceiptListParams filter ReceiptList. Zero values do not filter.
type ReceiptListParams struct {
	ToolName string
	Status   registry.ReceiptStatus
	// ErrorCode keeps receipts with this error code.
	ErrorCode registry.ErrorCode
	// Since keeps receipts finished at or after it.
	Since time.Time
	// Viewer, when not empty, keeps only the receipts of calls that caller made or approved (CallListParams).
	Viewer string
	// After continues a listing after the last row of the previous page (finished_at, call id).
	After *Cursor
	// Limit caps the rows returned. Defaults to 50; at most 1000.
	Limit int
	// MaxResultBytes replaces a result, an error's details and a summary larger than this many bytes (as
	// JSON text) with a Truncated marker, and cuts an error's message to this many characters, in PostgreSQL,
	// so a listing never carries a large document. Defaults to 0: whole.
	MaxResultBytes int
}

// truncatedError is a select expression for a receipt's error over max bytes: details over max become the
// Truncated marker and the message keeps its first max characters; the code stays. A NULL error stays NULL.
func truncatedError(max int) string {
	return fmt.Sprintf(`CASE WHEN octet_length(error::text) <= %[1]d THEN error ELSE
		error || jsonb_build_object('message', left(error->>'message', %[1]d))
		|| CASE WHEN octet_length((error->'details')::text) > %[1]d
			THEN jsonb_build_object('details', jsonb_build_object('truncated', true, 'bytes', octet_length((error->'details')::text)))
			ELSE '{}'::jsonb END
		END`, max)
}

// ReceiptList returns receipts, most recently finished first.
func ReceiptList(ctx context.Context, db DBTX, p ReceiptListParams) ([]*registry.Receipt, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	columns := receiptColumns
	if p.MaxResultBytes > 0 {
		columns = strings.Replace(receiptColumns, "status, result, effects, error, summary,", "status, "+truncatedJSON("result", p.MaxResultBytes)+
			", effects, "+truncatedError(p.MaxResultBytes)+", "+truncatedJSON("summary", p.MaxResultBytes)+",", 1)
	}
	rows, err := db.Query(ctx, `SELECT `+columns+` FROM core_tool_receipts
		WHERE ($1 = '' OR tool_name = $1) AND ($2 = '' OR status = $2) AND ($3 = '' OR error_code = $3)
		  AND ($4::timestamptz IS NULL OR finished_at >= $4)
		  AND ($5::timestamptz IS NULL OR (finished_at, call_id) < ($5, $6::uuid))
		  AND ($8 = '' OR EXISTS (SELECT 1 FROM core_tool_calls c WHERE c.id = call_id AND (c.requested_by = $8 OR c.approved_by = $8)))
		ORDER BY finished_at DESC, call_id DESC LIMIT $7`,
		p.ToolName, string(p.Status), string(p.ErrorCode), nullTime(p.Since), p.After.time(), p.After.id(), limit, p.Viewer)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing receipts: %w", err))
	}
	defer rows.Close()
	var out []*registry.Receipt
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, Coded(fmt.Errorf("error reading receipt: %w", err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, Coded(fmt.Errorf("error listing receipts: %w", err))
	}
	return out, nil
}
