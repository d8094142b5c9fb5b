package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry/script"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SessionClaimQueue queues the claim of a chat session on b, to go with the transaction's BEGIN: it creates or
// touches the session for an agent, a user and the caller speaking, and makes run the session's turn. A session
// belongs to the caller (and agent and user) that started it: another's is ENOTFOUND, as is one a rules
// conversation of another caller already uses. A session whose turn is another run is ECONFLICT, naming that
// run, which busy is given. The turn is a column written under the session row's lock and decided from the row
// alone, so of requests arriving at once exactly one gets it; RunFinish gives it back. A turn whose brain died
// is not abandoned: another brain takes it over and ends it (docs/durable-runs.md). Once b is sent, the
// refusal is b's error; the transaction stays usable (to queue the turn behind the running one).
func SessionClaimQueue(b *pgx.Batch, sessionID string, agentID uuid.UUID, userID, caller string, run uuid.UUID, busy *uuid.UUID) {
	b.Queue(`WITH first AS (SELECT r.requested_by FROM brain_runs r WHERE r.conversation_id = $1 ORDER BY r.created_at LIMIT 1)
		INSERT INTO agent_sessions AS s (id, agent_id, user_id, caller, turn_run, turn_since) VALUES ($1, $2, $3, $4, $5, now())
		ON CONFLICT (id) DO UPDATE SET updated_at = now(),
			turn_run = CASE WHEN s.turn_run IS NULL THEN EXCLUDED.turn_run ELSE s.turn_run END,
			turn_since = CASE WHEN s.turn_run IS NULL THEN now() ELSE s.turn_since END
		RETURNING agent_id, user_id, caller, (SELECT requested_by FROM first), turn_run`,
		sessionID, agentID, userID, caller, run).QueryRow(func(row pgx.Row) error {
		var owner, turn uuid.UUID
		var user string
		var sessionCaller, firstCaller *string
		if err := row.Scan(&owner, &user, &sessionCaller, &firstCaller, &turn); err != nil {
			return coded(fmt.Errorf("error claiming session: %w", err))
		}
		if owner != agentID || user != userID || sessionCaller == nil || *sessionCaller != caller || firstCaller != nil && *firstCaller != caller {
			// Whose it is stays unsaid: to any other caller, agent or user the session does not exist.
			return brain.Errorf(brain.ENOTFOUND, "no session %q of this caller, agent and user", sessionID)
		}
		if turn != run {
			*busy = turn
			return &brain.Error{Code: brain.ECONFLICT, Message: fmt.Sprintf("session %q is answering another message (run %s); wait for it (GET /brain/runs/%s)", sessionID, turn, turn),
				Details: map[string]any{"session_id": sessionID, "run_id": turn}}
		}
		return nil
	})
}

// Decided is a call of a session that waited for approval and has its receipt.
type Decided struct {
	CallID uuid.UUID
	Tool   string
	Status string
	Result json.RawMessage
	Error  json.RawMessage
}

// SessionDecisionsQueue queues on b the read of the calls of a session's chat runs that waited for approval
// and have their receipts but were not yet told to the agent, oldest decision first, and records them as told
// by run: they are in out once b is sent.
func SessionDecisionsQueue(b *pgx.Batch, sessionID string, runID uuid.UUID, out *[]Decided) {
	b.Queue(`WITH d AS (
			SELECT c.id, c.tool_name, r.status, r.result, r.error, r.finished_at
			FROM brain_runs b
			JOIN core_tool_calls c ON c.run_id = b.id
			JOIN core_approvals a ON a.call_id = c.id
			JOIN core_tool_receipts r ON r.call_id = c.id
			WHERE b.conversation_id = $1 AND b.mode = 'chat'
			  AND NOT EXISTS (SELECT 1 FROM agent_session_decisions s WHERE s.session_id = $1 AND s.call_id = c.id)),
		told AS (INSERT INTO agent_session_decisions (session_id, call_id, run_id) SELECT $1, id, $2 FROM d ON CONFLICT DO NOTHING)
		SELECT id, tool_name, status, result, error FROM d ORDER BY finished_at, id`, sessionID, runID).Query(func(rows pgx.Rows) (err error) {
		*out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Decided, error) {
			var d Decided
			err := row.Scan(&d.CallID, &d.Tool, &d.Status, &d.Result, &d.Error)
			return d, err
		})
		return err
	})
}

// SessionMessage is a message of a chat session, with the GEM call a tool message reports on.
type SessionMessage struct {
	llm.Message
	CallID *uuid.UUID
	// AwaitingReceipt marks a tool message recorded before its call's receipt (its content says the call
	// is pending); ToolMessagesSettle gives it the receipt's content.
	AwaitingReceipt bool
}

// SessionMessageListQueue queues on b the read of a session's last limit messages, oldest first: they are in
// out once b is sent.
func SessionMessageListQueue(b *pgx.Batch, sessionID string, limit int, out *[]llm.Message) {
	b.Queue(messagesBeforeSQL, sessionID, int64(math.MaxInt64), limit).Query(func(rows pgx.Rows) (err error) {
		*out, err = messagesRead(rows)
		return err
	})
}

// messagesBefore returns the last limit messages of a session before message id before, oldest first, never
// starting in the middle of a tool exchange.
func messagesBefore(ctx context.Context, db gemsql.DBTX, sessionID string, before int64, limit int) ([]llm.Message, error) {
	rows, err := db.Query(ctx, messagesBeforeSQL, sessionID, before, limit)
	if err != nil {
		return nil, coded(fmt.Errorf("error loading messages: %w", err))
	}
	msgs, err := messagesRead(rows)
	return msgs, coded(err)
}

const messagesBeforeSQL = `SELECT role, content, tool_calls, coalesce(tool_call_id, '') FROM (
	SELECT * FROM agent_messages WHERE session_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3) m ORDER BY id`

// messagesRead reads messagesBeforeSQL's rows, dropping those before the first user message.
func messagesRead(rows pgx.Rows) ([]llm.Message, error) {
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (llm.Message, error) {
		var m llm.Message
		var calls []byte
		err := row.Scan(&m.Role, &m.Content, &calls, &m.ToolCallID)
		if len(calls) > 0 {
			_ = json.Unmarshal(calls, &m.ToolCalls)
		}
		return m, err
	})
	for len(msgs) > 0 && msgs[0].Role != "user" {
		msgs = msgs[1:]
	}
	return msgs, err
}

// SessionMessageInsertQueue queues on b the statement that stores messages of a session, made by a run.
func SessionMessageInsertQueue(b *pgx.Batch, sessionID string, runID uuid.UUID, msgs ...SessionMessage) {
	// One statement for all of them: a turn's assistant message and its tool results are one commit, not one
	// each. The ids follow the order given (the rows are sorted before they are numbered).
	n := len(msgs)
	if n == 0 {
		return
	}
	roles, contents, toolCallIDs := make([]string, n), make([]string, n), make([]*string, n)
	calls, callIDs, awaiting := make([][]byte, n), make([]*uuid.UUID, n), make([]bool, n)
	for i, m := range msgs {
		roles[i], contents[i], toolCallIDs[i], callIDs[i], awaiting[i] = m.Role, m.Content, nullIfEmpty(m.ToolCallID), m.CallID, m.AwaitingReceipt
		if len(m.ToolCalls) > 0 {
			calls[i], _ = json.Marshal(m.ToolCalls)
		}
	}
	b.Queue(`INSERT INTO agent_messages (session_id, run_id, role, content, tool_calls, tool_call_id, call_id, awaiting_receipt)
		SELECT $1, $2, m.role, m.content, m.tool_calls, m.tool_call_id, m.call_id, m.awaiting
		FROM unnest($3::text[], $4::text[], $5::jsonb[], $6::text[], $7::uuid[], $8::boolean[]) WITH ORDINALITY
		     AS m (role, content, tool_calls, tool_call_id, call_id, awaiting, ord)
		ORDER BY m.ord`, sessionID, runID, roles, contents, calls, toolCallIDs, callIDs, awaiting)
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
	// Text is the attempt's streamed text not yet written as text events: its text event comes just before
	// its llm_ended.
	Text string
	// Enqueued are the calls the turn's answer makes, in its transaction: their call_enqueued events follow
	// its llm_ended (those held for approval add theirs with RunCallsHeldQueue).
	Enqueued []EnqueuedCall
}

// EnqueuedCall is a call an LLM turn makes, as its call_enqueued event names it.
type EnqueuedCall struct {
	CallID uuid.UUID `json:"call_id"`
	Tool   string    `json:"tool"`
}

// TurnInsert records one LLM turn with its run, and its llm_ended event (after its last text event, when
// p.Text) in the same statement.
func TurnInsert(ctx context.Context, db gemsql.DBTX, p *TurnInsertParams) error {
	b := &pgx.Batch{}
	TurnInsertQueue(b, p)
	if err := execQueued(ctx, db, b); err != nil {
		return coded(fmt.Errorf("error recording an LLM turn: %w", err))
	}
	return nil
}

// TurnInsertQueue queues TurnInsert's statement on b.
func TurnInsertQueue(b *pgx.Batch, p *TurnInsertParams) {
	latency := float64(p.Latency.Microseconds()) / 1000
	event := map[string]any{"iteration": p.Iteration, "attempt": max(p.Attempt, 1), "retries": max(p.Attempt, 1) - 1,
		"provider": p.Provider, "model": p.Model, "latency_ms": latency}
	if len(p.Usage) > 0 {
		event["tokens"] = json.RawMessage(p.Usage)
	}
	if len(p.Error) > 0 {
		event["error"] = json.RawMessage(p.Error)
	}
	ended, _ := json.Marshal(event)
	kinds, datas := []string{EventLLMEnded}, [][]byte{ended}
	if p.Text != "" {
		text, _ := json.Marshal(map[string]string{"text": p.Text})
		kinds, datas = []string{EventText, EventLLMEnded}, [][]byte{text, ended}
	}
	for _, c := range p.Enqueued {
		d, _ := json.Marshal(c)
		kinds, datas = append(kinds, EventCallEnqueued), append(datas, d)
	}
	b.Queue(`WITH t AS (INSERT INTO brain_turns (run_id, iteration, attempt, provider, model, request, response, error, usage, latency_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING run_id)
		SELECT gem_run_events_add(run_id, $11::text[], $12::jsonb[]) FROM t`,
		p.RunID, p.Iteration, max(p.Attempt, 1), p.Provider, p.Model, p.Request, p.Response, p.Error, p.Usage, latency, kinds, datas)
}

// RunAddCalls records calls a chat run has just made (in the transaction that inserts them): the run is
// waiting, its call ids grow and its planned calls are replaced.
func RunAddCalls(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, ids []uuid.UUID, planned []brain.PlannedCall) error {
	b := &pgx.Batch{}
	RunAddCallsQueue(b, runID, ids, planned)
	if err := execQueued(ctx, db, b); err != nil {
		return coded(fmt.Errorf("error updating run: %w", err))
	}
	return nil
}

// RunAddCallsQueue queues RunAddCalls's statement on b.
func RunAddCallsQueue(b *pgx.Batch, runID uuid.UUID, ids []uuid.UUID, planned []brain.PlannedCall) {
	b.Queue(`UPDATE brain_runs SET status = 'waiting', call_ids = call_ids || $2::uuid[], planned_calls = $3, updated_at = now()
		WHERE id = $1`, runID, ids, jsonOrEmpty(planned, "[]"))
}

// RunFinish records a chat run's end, under its fence (RunFenced: ErrTakenOver when claim no longer owns
// it): its status, calls, reply and errors, the response as it was sent (what a repeat of its request is
// answered), and gives the session's turn back. releaseKey gives the request's key up too, for a run that
// did no work (the LLM unavailable before any call): a retry with it tries again.
func RunFinish(ctx context.Context, pool *pgxpool.Pool, runID uuid.UUID, claim, sessionID, status string, planned []brain.PlannedCall, reply string,
	errs []*brain.Error, response []byte, releaseKey bool) error {
	err := RunFencedBatch(ctx, pool, runID, claim, false, func(b *pgx.Batch) error {
		RunFinishQueue(b, runID, sessionID, status, planned, reply, errs, response, releaseKey, nil)
		return nil
	})
	if errors.Is(err, ErrTakenOver) {
		return err
	}
	return coded(err)
}

// RunFinishQueue queues RunFinish's statements on b, for a batch under the run's fence. queued, when not nil,
// learns whether the session has a turn queued behind this one (to start it now).
func RunFinishQueue(b *pgx.Batch, runID uuid.UUID, sessionID, status string, planned []brain.PlannedCall, reply string,
	errs []*brain.Error, response []byte, releaseKey bool, queued *bool) {
	b.Queue(`UPDATE brain_runs SET status = $2, planned_calls = $3, assistant_message = $4, errors = $5, response = $6,
		updated_at = now(), completed_at = now() WHERE id = $1`, runID, status, jsonOrEmpty(planned, "[]"), reply, jsonOrEmpty(errs, "[]"), response)
	b.Queue(`UPDATE agent_sessions SET turn_run = NULL, turn_since = NULL WHERE id = $1 AND turn_run = $2`, sessionID, runID)
	if releaseKey {
		b.Queue(`DELETE FROM brain_request_keys WHERE run_id = $1`, runID)
	}
	if queued != nil {
		// brain_runs_queued (a partial index of the few queued runs) answers it, under a plan kept for every
		// session (lazyCommit's generic).
		b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
		b.Queue(`SELECT EXISTS (SELECT 1 FROM brain_runs WHERE status = 'queued' AND conversation_id = $1)`, sessionID).QueryRow(func(row pgx.Row) error {
			return row.Scan(queued)
		})
		b.Queue("SET LOCAL plan_cache_mode TO DEFAULT")
	}
}

// ProgramRecord records a run_code program on its run: the code, what it returned, printed and called, and
// why it stopped. A program is the LLM's, and what it returns and prints its own: text in them PostgreSQL
// cannot store (a NUL a program made) is repaired (gemsql.TextRepaired, GEM's rule), so the record is
// written.
func ProgramRecord(ctx context.Context, db gemsql.DBTX, runID uuid.UUID, iteration int, code string, res *script.Result, callIDs []uuid.UUID, took time.Duration) error {
	var value, errJSON []byte
	if len(res.Value) > 0 {
		value = gemsql.TextRepaired(res.Value)
	}
	if res.Error != nil {
		errJSON, _ = json.Marshal(res.Error)
		errJSON = gemsql.TextRepaired(errJSON)
	}
	if callIDs == nil {
		callIDs = []uuid.UUID{}
	}
	_, err := db.Exec(ctx, `INSERT INTO brain_run_programs (run_id, iteration, code, value, output, calls, call_ids, error, started_at, duration_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() - make_interval(secs => $9 / 1000.0), $9)`,
		runID, iteration, gemsql.PlainTextRepaired(code), value, gemsql.TextRepaired(jsonOrEmpty(res.Output, "[]")),
		gemsql.TextRepaired(jsonOrEmpty(res.Calls, "[]")), callIDs, errJSON,
		float64(took.Microseconds())/1000)
	if err != nil {
		return coded(fmt.Errorf("error recording a program: %w", err))
	}
	return nil
}

// ToolMessagesSettle gives the tool messages of a session's calls that were recorded awaiting their receipts
// the content their receipts say (contents[i] for callIDs[i]). Settling twice writes the same content.
func ToolMessagesSettle(ctx context.Context, db gemsql.DBTX, sessionID string, callIDs []uuid.UUID, contents []string) error {
	b := &pgx.Batch{}
	ToolMessagesSettleQueue(b, sessionID, callIDs, contents)
	if b.Len() == 0 {
		return nil
	}
	if pool, ok := db.(*pgxpool.Pool); ok {
		return coded(LazyCommitBatch(ctx, pool, b))
	}
	return coded(execQueued(ctx, db, b))
}

// ToolMessagesSettleQueue queues ToolMessagesSettle's statement on b (nothing, for no calls).
func ToolMessagesSettleQueue(b *pgx.Batch, sessionID string, callIDs []uuid.UUID, contents []string) {
	if len(callIDs) == 0 {
		return
	}
	// The receipt events of the calls settled, in the same statement (once per call: a second settle adds none).
	// Derived from the receipts, so not waiting for the disk: a settle lost to a crash of the server is made
	// again from them (a resumed turn's calls awaiting their receipts, the next turn's settleFinished).
	b.Queue(`WITH settled AS (
			UPDATE agent_messages m SET content = s.content, awaiting_receipt = false
			FROM unnest($2::uuid[], $3::text[]) AS s (call_id, content)
			WHERE m.session_id = $1 AND m.call_id = s.call_id AND m.awaiting_receipt
			RETURNING m.id, m.run_id, m.call_id)
		SELECT gem_run_receipts_settled(run_id, array_agg(call_id ORDER BY id)) FROM settled WHERE run_id IS NOT NULL GROUP BY run_id`,
		sessionID, callIDs, contents)
}

// StoredMessage is a message of a session as stored, with its run and call.
type StoredMessage struct {
	SessionMessage
	RunID *uuid.UUID
}

// RunMessages returns a chat run's journal as its session stores it: the run's own messages in order, and
// the last limit messages before them (the history its turn was given, never starting inside a tool
// exchange).
func RunMessages(ctx context.Context, db gemsql.DBTX, sessionID string, runID uuid.UUID, limit int) (history []llm.Message, own []SessionMessage, err error) {
	rows, err := db.Query(ctx, `SELECT id, role, content, tool_calls, coalesce(tool_call_id, ''), call_id, awaiting_receipt
		FROM agent_messages WHERE session_id = $1 AND run_id = $2 ORDER BY id`, sessionID, runID)
	if err != nil {
		return nil, nil, coded(fmt.Errorf("error loading a run's messages: %w", err))
	}
	first := int64(-1)
	own, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (SessionMessage, error) {
		var m SessionMessage
		var id int64
		var calls []byte
		err := row.Scan(&id, &m.Role, &m.Content, &calls, &m.ToolCallID, &m.CallID, &m.AwaitingReceipt)
		if len(calls) > 0 {
			_ = json.Unmarshal(calls, &m.ToolCalls)
		}
		if first < 0 {
			first = id
		}
		return m, err
	})
	if err != nil || first < 0 {
		return nil, own, coded(err)
	}
	history, err = messagesBefore(ctx, db, sessionID, first, limit)
	return history, own, coded(err)
}

// RunAssistantMessages counts a chat run's assistant messages: one per journaled step (an LLM answer, or
// the note of a turn that ran out of rounds).
func RunAssistantMessages(ctx context.Context, db gemsql.DBTX, runID uuid.UUID) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM agent_messages WHERE run_id = $1 AND role = 'assistant'`, runID).Scan(&n)
	return n, coded(err)
}

// SessionOf returns the user a chat session speaks for.
func SessionOf(ctx context.Context, db gemsql.DBTX, sessionID string) (userID string, err error) {
	err = db.QueryRow(ctx, `SELECT user_id FROM agent_sessions WHERE id = $1`, sessionID).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", brain.Errorf(brain.ENOTFOUND, "no session %q", sessionID)
	}
	return userID, coded(err)
}

// ErrTakenOver is the refusal of a journal write by a brain that no longer owns the run: another brain took
// it over when its lease expired.
var ErrTakenOver = errors.New("the run was taken over by another brain")

// RunFenced runs fn in a transaction that holds the run's row and begins only while claim owns the run
// (ErrTakenOver otherwise): a brain writes its run's journal only under this check, so of two brains that
// believe they own a run, one journals each step. The check is sent with BEGIN, in one round trip
// (gem_run_fence: FOR NO KEY UPDATE holds off a takeover's UPDATE as FOR UPDATE would, without blocking the
// checks of rows that name the run). lazy commits without waiting for the disk (a write a durable one
// follows). fn's own errors come back as they are, the database's coded.
func RunFenced(ctx context.Context, db TxBeginner, runID uuid.UUID, claim string, lazy bool, fn func(pgx.Tx) error) error {
	begin := "BEGIN; SELECT gem_run_fence(" + literal(runID.String()) + ", " + literal(claim) + ")"
	if lazy {
		begin += "; SET LOCAL synchronous_commit = off"
	}
	err := pgx.BeginTxFunc(ctx, db, pgx.TxOptions{BeginQuery: begin}, fn)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "GR409" {
		return ErrTakenOver
	}
	return coded(err)
}

// RunFencedBatch is RunFenced for a write that needs nothing back before it ends: the statements queue puts
// on a batch travel in one round trip with the fence before them and the COMMIT after. A failing statement
// rolls all of them back, and its error comes back coded.
func RunFencedBatch(ctx context.Context, pool *pgxpool.Pool, runID uuid.UUID, claim string, lazy bool, queue func(*pgx.Batch) error) error {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`SELECT gem_run_fence($1, $2)`, runID, claim)
	if lazy {
		b.Queue("SET LOCAL synchronous_commit = off")
	}
	if err := queue(b); err != nil {
		return err
	}
	b.Queue("COMMIT")
	err := sendTx(ctx, pool, b)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "GR409" {
		return ErrTakenOver
	}
	return coded(err)
}

// TxBeginner begins transactions with options (a pool, a connection).
type TxBeginner interface {
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

// literal is s as an SQL string literal (standard_conforming_strings, PostgreSQL's default since 9.1).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// NewClaim is a claim of owner on a run: the owner's id and a token of this taking, so that a brain that takes
// over a run it was itself working on (its lease lapsed while it was away from the database) fences out its
// earlier self.
func NewClaim(owner string) string { return owner + "#" + uuid.NewString()[:8] }

// RunLeasesRenew renews the leases of the runs a brain is working on, each under its claim.
func RunLeasesRenew(ctx context.Context, db gemsql.DBTX, runIDs []uuid.UUID, claims []string, d time.Duration) error {
	_, err := db.Exec(ctx, `UPDATE brain_runs b SET lease_until = now() + $3::interval
		FROM unnest($1::uuid[], $2::text[]) AS l (id, claim)
		WHERE b.id = l.id AND b.owner = l.claim AND b.status IN ('planning', 'waiting')`, runIDs, claims, d)
	return coded(err)
}

// RunLeasesGive ends the leases of runs at once, each under its claim, so another brain takes them over (a
// brain shutting down hands its runs over).
func RunLeasesGive(ctx context.Context, db gemsql.DBTX, runIDs []uuid.UUID, claims []string) error {
	_, err := db.Exec(ctx, `UPDATE brain_runs b SET lease_until = now() - interval '1 millisecond'
		FROM unnest($1::uuid[], $2::text[]) AS l (id, claim)
		WHERE b.id = l.id AND b.owner = l.claim AND b.status IN ('planning', 'waiting')`, runIDs, claims)
	return coded(err)
}

// Taken is a run a brain took, with its claim.
type Taken struct {
	ID    uuid.UUID
	Claim string
}

// CrossPlannerTakeover is how long after its lease expired a chat run may be taken over by a brain whose LLM
// is not the run's: until then only a brain of the run's planner (llm:<provider>) takes it, so a fleet of
// brains per provider sharing one database resumes each turn with its own provider; after, any brain does,
// so a run is never stranded when the provider changed.
const CrossPlannerTakeover = time.Minute

// RunsTakeOver gives owner up to limit chat runs whose lease expired, each under a new claim, and returns
// them: runs of planner (the run's decision.planner, "llm:<provider>"), or of any planner once their lease
// expired CrossPlannerTakeover ago; never those owner is working on (busy).
func RunsTakeOver(ctx context.Context, db gemsql.DBTX, owner, planner string, d time.Duration, limit int, busy []uuid.UUID) ([]Taken, error) {
	rows, err := db.Query(ctx, `UPDATE brain_runs r SET owner = $1 || '#' || substr(md5(random()::text), 1, 8), lease_until = now() + $2::interval
		FROM (SELECT id FROM brain_runs WHERE status IN ('planning', 'waiting') AND lease_until < now() AND mode = 'chat'
		        AND (decision->>'planner' = $4 OR lease_until < now() - $5::interval) AND NOT (id = ANY($6))
		      ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED) t
		WHERE r.id = t.id RETURNING r.id, r.owner`, owner, d, limit, planner, CrossPlannerTakeover, busy)
	if err != nil {
		return nil, coded(fmt.Errorf("error taking runs over: %w", err))
	}
	taken, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Taken])
	return taken, coded(err)
}

// SessionCallsAwaitingReceiptsQueue queues on b the read of the calls whose tool messages in the session still
// await their receipts (they were running when their turn's wait ended), their messages locked for the
// transaction: they are in out once b is sent.
func SessionCallsAwaitingReceiptsQueue(b *pgx.Batch, sessionID string, out *[]uuid.UUID) {
	b.Queue(`SELECT call_id FROM agent_messages
		WHERE session_id = $1 AND awaiting_receipt AND call_id IS NOT NULL ORDER BY id FOR UPDATE`, sessionID).Query(func(rows pgx.Rows) (err error) {
		*out, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		return err
	})
}

// BatchTx runs fn in a transaction whose BEGIN travels with the statements first queues, in one round trip;
// fn learns their error (firstErr: a server's leaves the transaction failed, a callback's leaves it usable).
// The transaction commits when fn returns nil, and rolls back otherwise; fn's own errors come back as they
// are, the database's coded.
func BatchTx(ctx context.Context, pool *pgxpool.Pool, first func(*pgx.Batch), fn func(tx pgx.Tx, firstErr error) error) error {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	first(b)
	br := pool.SendBatch(ctx, b)
	firstErr := br.Close()
	tx := br.Tx()
	if tx == nil {
		return coded(firstErr)
	}
	if err := fn(tx, firstErr); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return coded(err)
	}
	return coded(tx.Commit(ctx))
}

// BatchSend sends the statements queued on b in one round trip (a batch without BEGIN is one implicit
// transaction), for a write that joins several of this package's queue forms, and returns their failure
// coded.
func BatchSend(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	return coded(pool.SendBatch(ctx, b).Close())
}

// InTx runs fn in a transaction on db, which commits when fn returns nil and rolls back otherwise; fn's own
// errors come back as they are, the database's coded.
func InTx(ctx context.Context, db Beginner, fn func(pgx.Tx) error) error {
	return coded(pgx.BeginFunc(ctx, db, fn))
}

// QueuedTurnsStart starts, for owner, up to limit chat turns queued behind others (if_busy enqueue) whose
// session is free now: the oldest queued turn of each such session takes the session's turn — under its
// row's lock, as any turn does — and becomes its owner's, planning. It returns them (gem_queued_turns_start,
// with a generic plan: 00057).
func QueuedTurnsStart(ctx context.Context, db gemsql.DBTX, owner string, d time.Duration, limit int, _ []uuid.UUID) ([]Taken, error) {
	rows, err := db.Query(ctx, `SELECT run_id, run_owner FROM gem_queued_turns_start($1, $2::interval, $3)`, owner, d, limit)
	if err != nil {
		return nil, coded(fmt.Errorf("error starting queued turns: %w", err))
	}
	taken, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Taken])
	return taken, coded(err)
}

// ToolMessageSettleByToolCall gives a run's tool message answering the LLM's tool call toolCallID (a run_code
// program's, which has no call of its own) its content.
func ToolMessageSettleByToolCall(ctx context.Context, db gemsql.DBTX, sessionID string, runID uuid.UUID, toolCallID, content string) error {
	_, err := db.Exec(ctx, `UPDATE agent_messages SET content = $4, awaiting_receipt = false
		WHERE session_id = $1 AND run_id = $2 AND tool_call_id = $3 AND role = 'tool' AND awaiting_receipt`, sessionID, runID, toolCallID, content)
	return coded(err)
}

// StepScrub rewrites a journaled step's records — its assistant message, its LLM turns and its text events —
// through scrub,
// for secrets learned after they were written (a run_code program's calls name them).
func StepScrub(ctx context.Context, db Beginner, sessionID string, runID uuid.UUID, iteration int, scrub func(string) string) error {
	return coded(pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		type row struct {
			id   int64
			a, b string
			hasB bool
		}
		read := func(q string, args ...any) ([]row, error) {
			rows, err := tx.Query(ctx, q, args...)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
				var x row
				var b *string
				err := r.Scan(&x.id, &x.a, &b)
				if b != nil {
					x.b, x.hasB = *b, true
				}
				return x, err
			})
		}
		msgs, err := read(`SELECT id, content, tool_calls::text FROM agent_messages
			WHERE session_id = $1 AND run_id = $2 AND role = 'assistant' AND tool_calls IS NOT NULL ORDER BY id`, sessionID, runID)
		if err != nil {
			return err
		}
		// The step's assistant message is the iteration-th of the run's that asked for tool calls.
		if iteration >= 1 && iteration <= len(msgs) {
			m := msgs[iteration-1]
			if _, err := tx.Exec(ctx, `UPDATE agent_messages SET content = $2, tool_calls = $3::jsonb WHERE id = $1`, m.id, scrub(m.a), scrub(m.b)); err != nil {
				return err
			}
		}
		turns, err := read(`SELECT id, request::text, response::text FROM brain_turns WHERE run_id = $1 AND iteration = $2`, runID, iteration)
		if err != nil {
			return err
		}
		for _, t := range turns {
			var response *string
			if t.hasB {
				v := scrub(t.b)
				response = &v
			}
			if _, err := tx.Exec(ctx, `UPDATE brain_turns SET request = $3::jsonb, response = $4::jsonb WHERE run_id = $1 AND id = $2`,
				runID, t.id, scrub(t.a), response); err != nil {
				return err
			}
		}
		return StepTextScrub(ctx, tx, runID, iteration, scrub)
	}))
}
