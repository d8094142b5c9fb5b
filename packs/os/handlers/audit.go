package oshandlers

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// searchAuditLog reads receipts, newest first. query matches tool names, call inputs and errors (any part,
// ignoring case); event_type is a receipt status (succeeded, failed, not_configured), an error code
// (not_found, conflict, ...), a tool domain (os, leads, integrations.highlevel, ...), idempotency_hit or
// rolled_back. Pages are cut by receipt id: pass a page's next_before_id as before_id to get the next one.
func searchAuditLog(ctx context.Context, c *executor.Call, in ospack.AuditLogSearchInput) (*ospack.AuditLogSearchOutput, error) {
	if in.Since != nil && in.Until != nil && in.Until.Before(*in.Since) {
		return nil, executor.InvalidField("until", "is before since")
	}
	var callID *uuid.UUID
	if s := strings.TrimSpace(in.CallID); s != "" {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, executor.InvalidField("call_id", "%q is not a call id (a UUID)", in.CallID)
		}
		callID = &id
	}
	limit := executor.LimitOr(in.Limit, 50)
	eventType := strings.TrimSpace(in.EventType)
	// One row more than the page tells whether another page follows.
	items, err := executor.QueryList(ctx, c.DB, func(r pgx.Row) (ospack.AuditItem, error) {
		var e ospack.AuditItem
		var writes []byte
		err := r.Scan(&e.ReceiptID, &e.CallID, &e.Tool, &e.Status, &e.ErrorCode, &e.ErrorMessage, &e.IdempotencyHit,
			&e.Attempt, &e.DurationMS, &e.FinishedAt, &e.RequestedBy, &e.Agent, &e.RunID, &e.Summary, &writes,
			&e.OutsideEffects, &e.RolledBackBy)
		if err == nil {
			err = json.Unmarshal(writes, &e.DBWrites)
		}
		return e, err
	}, `SELECT r.id, r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message',
			r.idempotency_hit, r.attempt, r.duration_ms, r.finished_at, c.requested_by, c.agent, c.run_id,
			coalesce(r.summary, '{}'),
			(SELECT coalesce(jsonb_agg(jsonb_build_object('table', w ->> 'table', 'op', w ->> 'op', 'count', (w ->> 'count')::int)), '[]')
			 FROM jsonb_array_elements(coalesce(r.effects -> 'db_writes', '[]')) w),
			jsonb_array_length(coalesce(r.effects -> 'outside', '[]')) + jsonb_array_length(coalesce(r.effects -> 'files_written', '[]')) > 0,
			rb.created_by_call
		FROM core_tool_receipts r
		JOIN core_tool_calls c ON c.id = r.call_id
		LEFT JOIN core_rollbacks rb ON rb.call_id = r.call_id
		WHERE ($1 = '' OR r.tool_name ILIKE $8 OR c.input::text ILIKE $8 OR coalesce(r.error::text, '') ILIKE $8)
		  AND ($2 = '' OR r.status = $2 OR r.error_code = $2 OR r.tool_name LIKE $9
		       OR ($2 = 'idempotency_hit' AND r.idempotency_hit) OR ($2 = 'rolled_back' AND rb.id IS NOT NULL))
		  AND ($3::uuid IS NULL OR r.call_id = $3)
		  AND ($4::timestamptz IS NULL OR r.finished_at >= $4)
		  AND ($5::timestamptz IS NULL OR r.finished_at < $5)
		  AND ($6::bigint IS NULL OR r.id < $6)
		  AND ($10 = '' OR r.tool_name = $10)
		ORDER BY r.id DESC LIMIT $7`,
		in.Query, eventType, callID, in.Since, in.Until, in.BeforeID, limit+1, executor.LikeContains(in.Query),
		executor.LikeEscape(eventType)+".%", strings.TrimSpace(in.Tool))
	if err != nil {
		return nil, err
	}
	out := &ospack.AuditLogSearchOutput{Items: items}
	if len(items) > limit {
		out.Items = items[:limit]
		out.NextBeforeID = &out.Items[limit-1].ReceiptID
	}
	for i := range out.Items {
		e := &out.Items[i]
		e.Undoable = e.Status == "succeeded" && !e.IdempotencyHit && len(e.DBWrites) > 0 && !e.OutsideEffects &&
			e.RolledBackBy == nil && !toolHasOutsideEffects(c, e.Tool)
	}
	out.Count = len(out.Items)
	return out, nil
}

// toolHasOutsideEffects reports whether the registry says a tool's calls reach outside the database (a
// tool no longer in the registry is judged by its receipts alone).
func toolHasOutsideEffects(c *executor.Call, name string) bool {
	if c.Registry == nil {
		return false
	}
	t, ok := c.Registry.Tool(name)
	return ok && t.HasOutsideEffects()
}
