package gemsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of CallCancel, from gem_call_cancel's SQLSTATEs (00055_mcp_tasks.sql).
var (
	ErrMayNotCancel = errors.New("may not cancel") // GA005
)

// CallCancel cancels a call that has not started — held for approval, or queued — for canceller, the caller
// that made it: its one receipt (failed, cancelled) is written and its job cancelled in one transaction. It
// returns the call's status after: "failed" when it was cancelled now, else the status it had (running,
// succeeded, ...), which nothing changed. A canceller that did not make the call (or is unknown, or revoked)
// is ErrMayNotCancel; an unknown call ErrNotFound.
func CallCancel(ctx context.Context, db DBTX, call uuid.UUID, canceller string) (string, error) {
	var status string
	err := db.QueryRow(ctx, `SELECT gem_call_cancel($1, $2)`, call, canceller).Scan(&status)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "GA005":
			return "", fmt.Errorf("%s: %w", pgErr.Message, ErrMayNotCancel)
		case "GA006":
			return "", ErrNotFound
		}
	}
	if err != nil {
		return "", Coded(fmt.Errorf("error cancelling call %s: %w", call, err))
	}
	return status, nil
}
