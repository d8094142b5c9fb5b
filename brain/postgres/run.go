// Package postgres holds every SQL statement of the brain's own tables: runs, agents, skills, chat sessions
// and LLM turns. Functions take the database handle first (a pool, a connection or a transaction), so
// callers compose them in their own transactions. Errors come back coded (see coded): a *brain.Error, or
// the storage's *gemsql.Error (the database away, text it cannot store), which brain.AsError reads; the
// rest is internal.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func jsonOrEmpty(v any, empty string) []byte {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return []byte(empty)
	}
	return b
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

const insertRunSQL = `INSERT INTO brain_runs (id, message, mode, conversation_id, context, limits, status, decision,
		planned_calls, call_ids, receipts, assistant_message, next_actions, errors, agent, requested_by, idempotency_key,
		request_fingerprint, owner, lease_until, completed_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, now() + $20::interval,
		CASE WHEN $7 IN ('completed', 'failed') THEN now() END)
	RETURNING created_at, updated_at, completed_at`

// insertRunArgs are a run's insert's arguments; a run with an owner holds it for lease (a chat turn's).
func insertRunArgs(r *brain.Run, lease time.Duration) []any {
	var leaseArg any // NULL: no lease
	if r.Owner != "" {
		leaseArg = lease
	}
	ids := r.CallIDs
	if ids == nil {
		ids = []uuid.UUID{}
	}
	return []any{r.ID, r.Message, string(r.Mode), nullIfEmpty(r.ConversationID), jsonOrEmpty(r.Context, "{}"), jsonOrEmpty(r.Limits, "{}"),
		r.Status, jsonOrEmpty(r.Decision, "null"), jsonOrEmpty(r.PlannedCalls, "[]"), ids, receiptsJSON(r.Receipts),
		nullIfEmpty(r.AssistantMessage), jsonOrEmpty(r.NextActions, "[]"), jsonOrEmpty(r.Errors, "[]"),
		nullIfEmpty(r.Agent), nullIfEmpty(r.RequestedBy), nullIfEmpty(r.IdempotencyKey), r.Fingerprint, nullIfEmpty(r.Owner), leaseArg}
}

// RunInsert records a run.
func RunInsert(ctx context.Context, db gemsql.DBTX, r *brain.Run) error {
	return RunInsertLeased(ctx, db, r, 0)
}

// RunInsertLeased records a run that r.Owner (a claim: NewClaim) holds for lease, in the insert.
func RunInsertLeased(ctx context.Context, db gemsql.DBTX, r *brain.Run, lease time.Duration) error {
	err := db.QueryRow(ctx, insertRunSQL, insertRunArgs(r, lease)...).Scan(&r.CreatedAt, &r.UpdatedAt, &r.CompletedAt)
	if err != nil {
		return coded(fmt.Errorf("error recording run: %w", err))
	}
	return nil
}

// RunInsertLeasedQueue queues RunInsertLeased's insert on b.
func RunInsertLeasedQueue(b *pgx.Batch, r *brain.Run, lease time.Duration) {
	b.Queue(insertRunSQL, insertRunArgs(r, lease)...).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&r.CreatedAt, &r.UpdatedAt, &r.CompletedAt); err != nil {
			return coded(fmt.Errorf("error recording run: %w", err))
		}
		return nil
	})
}

// RunInsertQueue queues a run's insert on a batch, to go with other statements in one round trip.
func RunInsertQueue(b *pgx.Batch, r *brain.Run) {
	b.Queue(insertRunSQL, insertRunArgs(r, 0)...).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&r.CreatedAt, &r.UpdatedAt, &r.CompletedAt); err != nil {
			return coded(fmt.Errorf("error recording run: %w", err))
		}
		return nil
	})
}

func receiptsJSON(rs []brain.CompactReceipt) []byte {
	if rs == nil {
		return nil
	}
	return jsonOrEmpty(rs, "[]")
}

// updateRunSQL writes what changes after a run is recorded: its status, calls and answer.
const updateRunSQL = `UPDATE brain_runs SET status = $2, call_ids = $3, planned_calls = $4, receipts = $5,
		assistant_message = $6, next_actions = $7, errors = $8, approved_by = coalesce($9, approved_by), updated_at = now(),
		completed_at = CASE WHEN $2 IN ('completed', 'failed') THEN coalesce(completed_at, now()) END
	WHERE id = $1 RETURNING updated_at, completed_at`

// RunUpdateArgs are the arguments of a run's update, taken while the run is not changing (see RunUpdateAnswer).
func RunUpdateArgs(r *brain.Run) []any {
	ids := r.CallIDs
	if ids == nil {
		ids = []uuid.UUID{}
	}
	return []any{r.ID, r.Status, ids, jsonOrEmpty(r.PlannedCalls, "[]"), receiptsJSON(r.Receipts), nullIfEmpty(r.AssistantMessage),
		jsonOrEmpty(r.NextActions, "[]"), jsonOrEmpty(r.Errors, "[]"), nullIfEmpty(r.ApprovedBy)}
}

// RunUpdate writes what changes after a run is recorded: its status, calls and answer.
func RunUpdate(ctx context.Context, db gemsql.DBTX, r *brain.Run) error {
	if err := db.QueryRow(ctx, updateRunSQL, RunUpdateArgs(r)...).Scan(&r.UpdatedAt, &r.CompletedAt); err != nil {
		return coded(fmt.Errorf("error updating run: %w", err))
	}
	return nil
}

// RunUpdateAnswer records a run's answer (args from RunUpdateArgs), which is derived from its calls'
// receipts: its commit does not wait for the disk, since a crash that lost it leaves the run waiting, and GET
// /brain/runs/{id} derives the answer again (a flush is ~0.5 ms of every enqueue_and_wait run). One round
// trip.
func RunUpdateAnswer(ctx context.Context, pool *pgxpool.Pool, args []any) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	// The receipts it answers from, as events (once per call), before the answer's own: a run that ends has
	// its trigger add them with its answer and run_ended (00056), one that still waits has them added here.
	if status, _ := args[1].(string); status != brain.RunCompleted && status != brain.RunFailed {
		b.Queue(`SELECT gem_run_receipts_settled($1, $2)`, args[0], args[2])
	}
	b.Queue(updateRunSQL, args...)
	b.Queue("COMMIT")
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		return coded(fmt.Errorf("error updating run: %w", err))
	}
	return nil
}

// RunGet loads a run; forUpdate locks it for the caller's transaction.
func RunGet(ctx context.Context, db gemsql.DBTX, id uuid.UUID, forUpdate bool) (*brain.Run, error) {
	q := `SELECT id, message, mode, coalesce(conversation_id, ''), context, limits, status, decision, planned_calls,
			call_ids, receipts, coalesce(assistant_message, ''), next_actions, errors, coalesce(agent, ''),
			coalesce(requested_by, ''), coalesce(approved_by, ''), created_at, updated_at, completed_at, response,
			coalesce(owner, ''), lease_until
		FROM brain_runs WHERE id = $1`
	if forUpdate {
		q += " FOR UPDATE"
	}
	var (
		r                                                        brain.Run
		mode                                                     string
		ctxJSON, limits, decision, planned, receipts, next, errs []byte
	)
	err := db.QueryRow(ctx, q, id).Scan(&r.ID, &r.Message, &mode, &r.ConversationID, &ctxJSON, &limits, &r.Status,
		&decision, &planned, &r.CallIDs, &receipts, &r.AssistantMessage, &next, &errs, &r.Agent, &r.RequestedBy,
		&r.ApprovedBy, &r.CreatedAt, &r.UpdatedAt, &r.CompletedAt, &r.Response, &r.Owner, &r.LeaseUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no run %s", id)
	}
	if err != nil {
		return nil, coded(fmt.Errorf("error loading run: %w", err))
	}
	r.Mode = brain.Mode(mode)
	for _, f := range []struct {
		data []byte
		dst  any
	}{{ctxJSON, &r.Context}, {limits, &r.Limits}, {decision, &r.Decision}, {planned, &r.PlannedCalls},
		{receipts, &r.Receipts}, {next, &r.NextActions}, {errs, &r.Errors}} {
		if len(f.data) > 0 {
			if err := json.Unmarshal(f.data, f.dst); err != nil {
				return nil, fmt.Errorf("error decoding run %s: %w", id, err)
			}
		}
	}
	return &r, nil
}

// ConversationLast returns the context and calls of a conversation's latest planned run made by caller
// (chat runs of agents keep their own history), or found false when it has none. A conversation belongs to
// the caller that started it (SessionOwner): another caller's is ENOTFOUND.
func ConversationLast(ctx context.Context, db gemsql.DBTX, conversationID, caller string) (ctxIDs map[string]any, callIDs []uuid.UUID, found bool, err error) {
	var owner *string
	var ctxJSON []byte
	err = db.QueryRow(ctx, `SELECT (`+sessionOwnerSQL+`), l.context, l.call_ids
		FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT context, call_ids FROM brain_runs
			WHERE conversation_id = $1 AND mode <> 'chat' AND requested_by = $2 ORDER BY created_at DESC LIMIT 1) l ON true`,
		conversationID, caller).Scan(&owner, &ctxJSON, &callIDs)
	if err != nil {
		return nil, nil, false, coded(fmt.Errorf("error loading the conversation: %w", err))
	}
	if owner != nil && *owner != caller {
		return nil, nil, false, brain.Errorf(brain.ENOTFOUND, "no session %q of caller %q", conversationID, caller)
	}
	if ctxJSON == nil {
		return nil, nil, false, nil
	}
	if err := json.Unmarshal(ctxJSON, &ctxIDs); err != nil {
		return nil, nil, false, fmt.Errorf("error decoding the conversation's context: %w", err)
	}
	return ctxIDs, callIDs, true, nil
}

// sessionOwnerSQL is the caller a session or conversation ($1) belongs to: the one its agent session
// records, else the caller of its first run; NULL for a new one.
const sessionOwnerSQL = `coalesce((SELECT s.caller FROM agent_sessions s WHERE s.id = $1),
	(SELECT r.requested_by FROM brain_runs r WHERE r.conversation_id = $1 ORDER BY r.created_at LIMIT 1))`

// RunSteps returns a chat run's LLM requests (brain_turns), in order.
func RunSteps(ctx context.Context, db gemsql.DBTX, runID uuid.UUID) ([]brain.RunStep, error) {
	rows, err := db.Query(ctx, `SELECT iteration, attempt, model, latency_ms,
			coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(response -> 'tool_calls') = 'array' THEN response -> 'tool_calls' END),
				(response ->> 'tool_calls')::int, 0),
			coalesce((usage ->> 'input_tokens')::bigint, 0), coalesce((usage ->> 'output_tokens')::bigint, 0), error, created_at
		FROM brain_turns WHERE run_id = $1 ORDER BY iteration, attempt, id`, runID)
	if err != nil {
		return nil, coded(fmt.Errorf("error reading a run's steps: %w", err))
	}
	steps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (brain.RunStep, error) {
		var s brain.RunStep
		var errJSON []byte
		err := row.Scan(&s.Iteration, &s.Attempt, &s.Model, &s.LatencyMS, &s.ToolCalls, &s.InputTokens, &s.OutputTokens, &errJSON, &s.At)
		if len(errJSON) > 0 {
			s.Error = &brain.Error{}
			_ = json.Unmarshal(errJSON, s.Error)
		}
		return s, err
	})
	return steps, coded(err)
}
