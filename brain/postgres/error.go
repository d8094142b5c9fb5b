package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gemhq/gem/brain"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Beginner is a database handle that can start a transaction: a pool, a connection, or a transaction (a
// savepoint).
type Beginner interface {
	gemsql.DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Error is the one place the brain turns a database error into what a client is told:
//   - a *brain.Error and a cancellation pass through;
//   - an idempotency key its caller used with another input is EKEYREUSED (422), naming the earlier call
//     or run; a key whose run holds the same request is a *RepeatedRequest, which the door answers with
//     that run;
//   - text PostgreSQL cannot store or read (22021 a NUL or invalid UTF-8, 22P05 an untranslatable
//     character such as \u0000 in jsonb, 22P02 a malformed value) is the client's input: EINVALID, naming
//     what PostgreSQL says;
//   - the database being away (gemsql.DatabaseAway: the connection refused or lost, the server restarting,
//     shutting down or out of connections or resources) is EUNAVAILABLE, which the API answers 503 with a
//     Retry-After;
//   - any other error is a bug, left for the API to log as internal.
//
// Clients' input is checked at the edge (brain/api) before it gets here; this catches what slips through.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var e *brain.Error
	var pgErr *pgconn.PgError
	var reused *gemsql.IdempotencyConflictError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &reused):
		return &brain.Error{Code: brain.EKEYREUSED, Message: reused.Message + "; a retry sends the same input with the same key, a new request a new key",
			Details: map[string]any{"call_id": reused.CallID, "tool": reused.Tool, "idempotency_key": reused.Key}}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case gemsql.DatabaseAway(err):
		return &brain.Error{Code: brain.EUNAVAILABLE, Message: "the database cannot be reached: " + err.Error()}
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "GI001":
			var d struct {
				RunID uuid.UUID `json:"run_id"`
				Key   string    `json:"idempotency_key"`
			}
			_ = json.Unmarshal([]byte(pgErr.Detail), &d)
			return &brain.Error{Code: brain.EKEYREUSED, Message: pgErr.Message + "; a retry sends the same request with the same key, a new request a new key",
				Details: map[string]any{"run_id": d.RunID, "idempotency_key": d.Key}}
		case "GI002":
			r := &RepeatedRequest{}
			_ = json.Unmarshal([]byte(pgErr.Detail), r)
			return r
		case "22021", "22P05", "22P02":
			return &brain.Error{Code: brain.EINVALID, Message: "the request holds text the database cannot store: " + pgErr.Message,
				Details: map[string]any{"sqlstate": pgErr.Code}}
		}
	}
	return err
}

// RepeatedRequest is a request whose caller sent its key before with the same request, within the key's
// window (SQLSTATE GI002, gem_run_key_claim): nothing was written, and the door answers with RunID, the run
// the first request made.
type RepeatedRequest struct {
	RunID uuid.UUID `json:"run_id"`
	Key   string    `json:"idempotency_key"`
}

func (r *RepeatedRequest) Error() string {
	return fmt.Sprintf("idempotency key %q is run %s", r.Key, r.RunID)
}
