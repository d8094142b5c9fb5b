package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry/script"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SessionClaim creates or touches a chat session for an agent, a user and the caller speaking, and makes run
// the session's turn. A session belongs to the caller (and agent and user) that started it: another's is
// ENOTFOUND, as is one a rules conversation of another caller already uses (sessionOwnerSQL). A session
// whose turn is another run (taken in the last 10 minutes) is
// ECONFLICT, naming that run. The turn is a column written under the session row's lock and decided from
// the row alone, so of requests arriving at once exactly one gets it; RunFinish gives it back, and a turn
// held 10 minutes is taken as abandoned.
func SessionClaim(ctx context.Context, db gemsql.DBTX, sessionID string, agentID uuid.UUID, userID, caller string, run uuid.UUID) error {
	var owner, turn uuid.UUID
	var user string
	var sessionCaller, firstCaller *string
	err := db.QueryRow(ctx, `WITH first AS (SELECT r.requested_by FROM brain_runs r WHERE r.conversation_id = $1 ORDER BY r.created_at LIMIT 1)
		INSERT INTO agent_sessions AS s (id, agent_id, user_id, caller, turn_run, turn_since) VALUES ($1, $2, $3, $4, $5, now())
		ON CONFLICT (id) DO UPDATE SET updated_at = now(),
			turn_run = CASE WHEN s.turn_run IS NULL OR s.turn_since < now() - interval '10 minutes' THEN EXCLUDED.turn_run ELSE s.turn_run END,
			turn_since = CASE WHEN s.turn_run IS NULL OR s.turn_since < now() - interval '10 minutes' THEN now() ELSE s.turn_since END
		RETURNING agent_id, user_id, caller, (SELECT requested_by FROM first), turn_run`,
		sessionID, agentID, userID, caller, run).Scan(&owner, &user, &sessionCaller, &firstCaller, &turn)
	if err != nil {
		return Error(fmt.Errorf("error claiming session: %w", err))
	}
	if owner != agentID || user != userID || sessionCaller == nil || *sessionCaller != caller || firstCaller != nil && *firstCaller != caller {
		// Whose it is stays unsaid: to any other caller, agent or user the session does not exist.
		return brain.Errorf(brain.ENOTFOUND, "no session %q of this caller, agent and user", sessionID)
	}
	if turn != run {
		return &brain.Error{Code: brain.ECONFLICT, Message: fmt.Sprintf("session %q is answering another message (run %s); wait for it (GET /brain/runs/%s)", sessionID, turn, turn),
			Details: map[string]any{"session_id": sessionID, "run_id": turn}}
	}
	return nil
}

// Decided is a call of a session that waited for approval and has its receipt.
type Decided struct {
	CallID uuid.UUID
	Tool   string
	Status string
	Result json.RawMessage
	Error  json.RawMessage
}

// SessionDecisions returns the calls of a session's chat runs that waited for approval and have their
// receipts but were not yet told to the agent, oldest decision first, and records them as told by run.
func SessionDecisions(ctx context.Context, db gemsql.DBTX, sessionID string, runID uuid.UUID) ([]Decided, error) {
	rows, err := db.Query(ctx, `WITH d AS (
			SELECT c.id, c.tool_name, r.status, r.result, r.error, r.finished_at
			FROM brain_runs b
			JOIN core_tool_calls c ON c.run_id = b.id
			JOIN core_approvals a ON a.call_id = c.id
			JOIN core_tool_receipts r ON r.call_id = c.id
			WHERE b.conversation_id = $1 AND b.mode = 'chat'
			  AND NOT EXISTS (SELECT 1 FROM agent_session_decisions s WHERE s.session_id = $1 AND s.call_id = c.id)),
		told AS (INSERT INTO agent_session_decisions (session_id, call_id, run_id) SELECT $1, id, $2 FROM d ON CONFLICT DO NOTHING)
		SELECT id, tool_name, status, result, error FROM d ORDER BY finished_at, id`, sessionID, runID)
	if err != nil {
		return nil, Error(fmt.Errorf("error reading the session's decided calls: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Decided, error) {
		var d Decided
		err := row.Scan(&d.CallID, &d.Tool, &d.Status, &d.Result, &d.Error)
		return d, err
	})
	return out, Error(err)
}

// SessionMessage is a message of a chat session, with the GEM call a tool message reports on.
type SessionMessage struct {
	llm.Message
	CallID *uuid.UUID
}

// SessionMessageList returns a session's last limit messages, oldest first.
func SessionMessageList(ctx context.Context, db gemsql.DBTX, sessionID string, limit int) ([]llm.Message, error) {
	rows, err := db.Query(ctx, `SELECT role, content, tool_calls, coalesce(tool_call_id, '') FROM (
			SELECT * FROM agent_messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2) m ORDER BY id`, sessionID, limit)
	if err != nil {
		return nil, Error(fmt.Errorf("error loading messages: %w", err))
	}
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (llm.Message, error) {
		var m llm.Message
		var calls []byte
		err := row.Scan(&m.Role, &m.Content, &calls, &m.ToolCallID)
		if len(calls) > 0 {
			_ = json.Unmarshal(calls, &m.ToolCalls)
		}
		return m, err
	})
	return msgs, Error(err)
}

// SessionMessageInsert stores messages of a session, made by a run.
func SessionMessageInsert(ctx context.Context, db gemsql.DBTX, sessionID string, runID uuid.UUID, msgs ...SessionMessage) error {
	// One statement for all of them: a turn's assistant message and its tool results are one commit, not one
	// each. The ids follow the order given (the rows are sorted before they are numbered).
	n := len(msgs)
	if n == 0 {
		return nil
	}
	roles, contents, toolCallIDs := make([]string, n), make([]string, n), make([]*string, n)
	calls, callIDs := make([][]byte, n), make([]*uuid.UUID, n)
	for i, m := range msgs {
		roles[i], contents[i], toolCallIDs[i], callIDs[i] = m.Role, m.Content, nullIfEmpty(m.ToolCallID), m.CallID
		if len(m.ToolCalls) > 0 {
			calls[i], _ = json.Marshal(m.ToolCalls)
		}
	}
	if _, err := db.Exec(ctx, `INSERT INTO agent_messages (session_id, run_id, role, content, tool_calls, tool_call_id, call_id)
		SELECT $1, $2, m.role, m.content, m.tool_calls, m.tool_call_id, m.call_id
		FROM unnest($3::text[], $4::text[], $5::jsonb[], $6::text[], $7::uuid[]) WITH ORDINALITY
		     AS m (role, content, tool_calls, tool_call_id, call_id, ord)
		ORDER BY m.ord`, sessionID, runID, roles, contents, calls, toolCallIDs, callIDs); err != nil {
		return Error(fmt.Errorf("error storing messages: %w", err))
	}
	return nil
}

// TurnInsertParams describe one LLM request of a run: an attempt of one of its turns.
type TurnInsertParams struct {
	RunID     uuid.UUID
	Iteration int
	// Attempt numbers the requests of one turn from 1 (a turn retried after a 429 has several).
	Attempt  int
	Provider string
	Model    string
	// Request summarises what was asked; Response, Error and Usage are JSON (nil when absent).
	Request, Response, Error, Usage []byte
	Latency                         time.Duration
}

// TurnInsert records one LLM turn with its run.
func TurnInsert(ctx context.Context, db gemsql.DBTX, p *TurnInsertParams) error {
	_, err := db.Exec(ctx, `INSERT INTO brain_turns (run_id, iteration, attempt, provider, model, request, response, error, usage, latency_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, p.RunID, p.Iteration, max(p.Attempt, 1), p.Provider, p.Model, p.Request, p.Response, p.Error, p.Usage,
		float64(p.Latency.Microseconds())/1000)
	if err != nil {
		return fmt.Errorf("error recording an LLM turn: %w", err)
	}
	return nil
}

// RunAddCalls records calls a chat run has just made (in the transaction that inserts them): the run is
// waiting, its call ids grow and its planned calls are replaced.
func RunAddCalls(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, ids []uuid.UUID, planned []brain.PlannedCall) error {
	_, err := db.Exec(ctx, `UPDATE brain_runs SET status = 'waiting', call_ids = call_ids || $2::uuid[], planned_calls = $3, updated_at = now()
		WHERE id = $1`, runID, ids, jsonOrEmpty(planned, "[]"))
	if err != nil {
		return fmt.Errorf("error updating run: %w", err)
	}
	return nil
}

// RunFinish records a chat run's end: its status, calls, reply and errors, the response as it was sent (what a
// repeat of its request is answered), and gives the session's turn back. releaseKey gives the request's key
// up too, for a run that did no work (the LLM unavailable before any call): a retry with it tries again.
func RunFinish(ctx context.Context, db Batcher, runID uuid.UUID, sessionID, status string, planned []brain.PlannedCall, reply string, errs []*brain.Error,
	response []byte, releaseKey bool) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE brain_runs SET status = $2, planned_calls = $3, assistant_message = $4, errors = $5, response = $6,
		updated_at = now(), completed_at = now() WHERE id = $1`, runID, status, jsonOrEmpty(planned, "[]"), reply, jsonOrEmpty(errs, "[]"), response)
	b.Queue(`UPDATE agent_sessions SET turn_run = NULL, turn_since = NULL WHERE id = $1 AND turn_run = $2`, sessionID, runID)
	if releaseKey {
		b.Queue(`DELETE FROM brain_request_keys WHERE run_id = $1`, runID)
	}
	// A batch is one implicit transaction (or part of db's own).
	return Error(db.SendBatch(ctx, b).Close())
}

// Batcher sends batches: a pool, a connection or a transaction.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// ProgramRecord records a run_code program on its run: the code, what it returned, printed and called, and
// why it stopped.
func ProgramRecord(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, iteration int, code string, res *script.Result, callIDs []uuid.UUID, took time.Duration) error {
	var value, errJSON []byte
	if len(res.Value) > 0 {
		value = res.Value
	}
	if res.Error != nil {
		errJSON, _ = json.Marshal(res.Error)
	}
	if callIDs == nil {
		callIDs = []uuid.UUID{}
	}
	_, err := db.Exec(ctx, `INSERT INTO brain_run_programs (run_id, iteration, code, value, output, calls, call_ids, error, started_at, duration_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() - make_interval(secs => $9 / 1000.0), $9)`,
		runID, iteration, code, value, jsonOrEmpty(res.Output, "[]"), jsonOrEmpty(res.Calls, "[]"), callIDs, errJSON,
		float64(took.Microseconds())/1000)
	if err != nil {
		return fmt.Errorf("error recording a program: %w", err)
	}
	return nil
}
