package business

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerAudit(h executor.Handlers) {
	h.Func("os.audit_log_search", executor.Typed(searchAuditLog))
}

type auditEntry struct {
	ReceiptID      int64           `json:"receipt_id"`
	CallID         uuid.UUID       `json:"call_id"`
	Tool           string          `json:"tool"`
	Status         string          `json:"status"`
	ErrorCode      *string         `json:"error_code"`
	ErrorMessage   *string         `json:"error_message"`
	IdempotencyHit bool            `json:"idempotency_hit"`
	Attempt        int             `json:"attempt"`
	DurationMS     float64         `json:"duration_ms"`
	FinishedAt     time.Time       `json:"finished_at"`
	RequestedBy    *string         `json:"requested_by"`
	Agent          *string         `json:"agent"`
	Summary        json.RawMessage `json:"summary"`
}

type searchAuditLogInput struct {
	Tool      string     `json:"tool"`
	Domain    string     `json:"domain"`
	Status    string     `json:"status"`
	ErrorCode string     `json:"error_code"`
	CallID    *uuid.UUID `json:"call_id"`
	Since     *time.Time `json:"since"`
	Until     *time.Time `json:"until"`
	BeforeID  *int64     `json:"before_id"`
	Limit     int        `json:"limit"`
}

// searchAuditLog reads receipts, newest first, filtered by tool (or domain), status, error code, call and
// time range. Pages are cut by receipt id: pass a page's next_before_id as before_id to get the next one.
func searchAuditLog(ctx context.Context, c *executor.Call, in searchAuditLogInput) (any, error) {
	if in.Since != nil && in.Until != nil && in.Until.Before(*in.Since) {
		return nil, executor.Invalid("until is before since")
	}
	limit := limitOr(in.Limit, 50)
	// One row more than the page tells whether another page follows.
	entries, err := queryList(ctx, c, func(r pgx.Row) (auditEntry, error) {
		var e auditEntry
		err := r.Scan(&e.ReceiptID, &e.CallID, &e.Tool, &e.Status, &e.ErrorCode, &e.ErrorMessage, &e.IdempotencyHit,
			&e.Attempt, &e.DurationMS, &e.FinishedAt, &e.RequestedBy, &e.Agent, &e.Summary)
		return e, err
	}, `SELECT r.id, r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message',
			r.idempotency_hit, r.attempt, r.duration_ms, r.finished_at, c.requested_by, c.agent, coalesce(r.summary, '{}')
		FROM core_tool_receipts r JOIN core_tool_calls c ON c.id = r.call_id
		WHERE ($1 = '' OR r.tool_name = $1)
		  AND ($2 = '' OR r.tool_name LIKE $10)
		  AND ($3 = '' OR r.status = $3)
		  AND ($4 = '' OR r.error_code = $4)
		  AND ($5::uuid IS NULL OR r.call_id = $5)
		  AND ($6::timestamptz IS NULL OR r.finished_at >= $6)
		  AND ($7::timestamptz IS NULL OR r.finished_at < $7)
		  AND ($8::bigint IS NULL OR r.id < $8)
		ORDER BY r.id DESC LIMIT $9`,
		in.Tool, in.Domain, in.Status, in.ErrorCode, in.CallID, in.Since, in.Until, in.BeforeID, limit+1, likeEscape(in.Domain)+".%")
	if err != nil {
		return nil, err
	}
	var next *int64
	if len(entries) > limit {
		entries = entries[:limit]
		next = &entries[limit-1].ReceiptID
	}
	return map[string]any{"receipts": entries, "count": len(entries), "next_before_id": next}, nil
}
