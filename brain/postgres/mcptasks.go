package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// An MCP task (docs/mcp-server.md#tasks) is a handle on one call, bound to the caller and agent that made it
// and known by the SHA-256 of its id (core_mcp_tasks, migration 00055): the id itself is a bearer secret the
// database never holds.

// MCPTask is a task as its caller sees it: the call it follows and what that call has come to.
type MCPTask struct {
	CallID    uuid.UUID
	CreatedAt time.Time
	// InputAnswered is when the client answered the task's input request (the approval's), if it did.
	InputAnswered *time.Time
	Tool          string
	// Status is the call's live status (core_calls: queued, running, awaiting_approval, or a final one).
	Status     registry.CallStatus
	Attempt    int
	StartedAt  *time.Time
	FinishedAt *time.Time
	// ApprovalExpires and ApprovalDecided are the call's approval's, when it needed one.
	ApprovalExpires *time.Time
	ApprovalDecided *time.Time
}

// MCPTaskCreate records a task on a call for caller speaking for agent ("" for none), and returns when it
// was made. It is committed when this returns, so that a tasks/get for it finds it (SEP-2663).
func MCPTaskCreate(ctx context.Context, db gemsql.DBTX, idSHA256 []byte, call uuid.UUID, caller, agent string) (time.Time, error) {
	var at time.Time
	err := db.QueryRow(ctx, `INSERT INTO core_mcp_tasks (id_sha256, call_id, caller, agent) VALUES ($1, $2, $3, $4)
		RETURNING created_at`, idSHA256, call, caller, agent).Scan(&at)
	return at, coded(err)
}

// MCPTaskGet returns the task for caller speaking for agent: ENOTFOUND for one that does not exist and for
// another caller's (or another agent's) alike.
func MCPTaskGet(ctx context.Context, db gemsql.DBTX, idSHA256 []byte, caller, agent string) (*MCPTask, error) {
	var t MCPTask
	err := db.QueryRow(ctx, `
		SELECT t.call_id, t.created_at, t.input_answered, c.tool_name, c.status, c.attempt, c.started_at, c.finished_at,
		       a.expires_at, a.decided_at
		FROM core_mcp_tasks t
		JOIN core_calls c ON c.id = t.call_id
		LEFT JOIN core_approvals a ON a.call_id = t.call_id
		WHERE t.id_sha256 = $1 AND t.caller = $2 AND t.agent = $3`, idSHA256, caller, agent).
		Scan(&t.CallID, &t.CreatedAt, &t.InputAnswered, &t.Tool, &t.Status, &t.Attempt, &t.StartedAt, &t.FinishedAt,
			&t.ApprovalExpires, &t.ApprovalDecided)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no such task")
	}
	if err != nil {
		return nil, coded(err)
	}
	return &t, nil
}

// MCPTaskInputAnswered records that the client answered the task's input request (once: a second answer
// changes nothing).
func MCPTaskInputAnswered(ctx context.Context, db gemsql.DBTX, idSHA256 []byte) error {
	_, err := db.Exec(ctx, `UPDATE core_mcp_tasks SET input_answered = now() WHERE id_sha256 = $1 AND input_answered IS NULL`, idSHA256)
	return coded(err)
}
