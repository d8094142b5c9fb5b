package gemsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of CallDecide, from gem_call_decide's SQLSTATEs (00023_approvals.sql).
var (
	ErrAlreadyDecided   = errors.New("already decided")         // GA001
	ErrApprovalExpired  = errors.New("approval expired")        // GA002
	ErrNotAwaiting      = errors.New("does not await approval") // GA003
	ErrMayNotDecide     = errors.New("may not decide")          // GA004
	approvalErrorByCode = map[string]error{"GA001": ErrAlreadyDecided, "GA002": ErrApprovalExpired, "GA003": ErrNotAwaiting, "GA004": ErrMayNotDecide}
)

// DecisionError is a decision gem_call_decide refused: its message, and which refusal it is (Kind, one of
// ErrAlreadyDecided, ErrApprovalExpired, ErrNotAwaiting, ErrMayNotDecide; errors.Is matches it).
type DecisionError struct {
	Message string
	Kind    error
}

func (e *DecisionError) Error() string { return e.Message }
func (e *DecisionError) Unwrap() error { return e.Kind }

// ApprovalChannel is notified (payload: the call id) when a call starts awaiting approval and when it is
// decided or expires.
const ApprovalChannel = "gem_approval"

// Approval is a call's approval: why it was needed, until when, and what was decided.
type Approval struct {
	CallID     uuid.UUID  `json:"call_id"`
	RequiredBy string     `json:"required_by"`
	ExpiresAt  time.Time  `json:"expires_at"`
	Decision   string     `json:"decision,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
}

const approvalColumns = `call_id, required_by, expires_at, coalesce(decision, ''), coalesce(decided_by, ''), coalesce(reason, ''),
	decided_at, created_at`

func scanApproval(row pgx.Row) (*Approval, error) {
	var a Approval
	err := row.Scan(&a.CallID, &a.RequiredBy, &a.ExpiresAt, &a.Decision, &a.DecidedBy, &a.Reason, &a.DecidedAt, &a.CreatedAt)
	return &a, err
}

// ApprovalGet returns a call's approval, or ErrNotFound when it needed none.
func ApprovalGet(ctx context.Context, db DBTX, call uuid.UUID) (*Approval, error) {
	a, err := scanApproval(db.QueryRow(ctx, `SELECT `+approvalColumns+` FROM core_approvals WHERE call_id = $1`, call))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading the approval of call %s: %w", call, err))
	}
	return a, nil
}

// PendingApproval is a call awaiting a decision, as core_pending_approvals shows it.
type PendingApproval struct {
	Approval
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input"`
	RequestedBy string          `json:"requested_by"`
	Agent       string          `json:"agent,omitempty"`
	RunID       *uuid.UUID      `json:"run_id,omitempty"`
}

// ApprovalsPending returns the calls awaiting a decision, the soonest to expire first (at most limit).
func ApprovalsPending(ctx context.Context, db DBTX, limit int) ([]*PendingApproval, error) {
	rows, err := db.Query(ctx, `SELECT call_id, required_by, expires_at, created_at, tool_name, input, coalesce(requested_by, ''),
		coalesce(agent, ''), run_id FROM core_pending_approvals LIMIT $1`, limit)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing approvals: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*PendingApproval, error) {
		var p PendingApproval
		err := row.Scan(&p.CallID, &p.RequiredBy, &p.ExpiresAt, &p.CreatedAt, &p.Tool, &p.Input, &p.RequestedBy, &p.Agent, &p.RunID)
		return &p, err
	})
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing approvals: %w", err))
	}
	return list, nil
}

// CallDecide approves (the call is enqueued in this transaction) or rejects (its receipt is written) a call
// awaiting approval, for decider, and returns the call's status. A refusal is a *DecisionError.
func CallDecide(ctx context.Context, db DBTX, call uuid.UUID, approve bool, reason, decider string) (string, error) {
	var status string
	var r, d any
	if reason != "" {
		r = reason
	}
	if decider != "" {
		d = decider
	}
	err := db.QueryRow(ctx, `SELECT gem_call_decide($1, $2, $3, $4)`, call, approve, r, d).Scan(&status)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if known, ok := approvalErrorByCode[pgErr.Code]; ok {
			return "", &DecisionError{Message: pgErr.Message, Kind: known}
		}
	}
	if err != nil {
		return "", Coded(fmt.Errorf("error deciding call %s: %w", call, err))
	}
	return status, nil
}
