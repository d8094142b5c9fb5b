package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
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

// coded is how this package's functions return their failures: with the code their caller acts on, so no
// caller translates a driver's error (the doors read the code once: brain.AsError):
//   - a *brain.Error comes back as it is;
//   - a request key its caller used with another request (GI001, gem_run_key_claim) is EKEYREUSED, naming
//     the earlier run; a key whose run holds the same request is a *RepeatedRequest (GI002), which the
//     door answers with that run;
//   - the rest is the storage's coding (gemsql.Coded): the database away is EUNAVAILABLE, text it cannot
//     store EINVALID, a calls' key used with another input EKEYREUSED; anything else is internal.
func coded(err error) error {
	var e *brain.Error
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.As(err, &pgErr) && pgErr.Code == "GI001":
		var d struct {
			RunID uuid.UUID `json:"run_id"`
			Key   string    `json:"idempotency_key"`
		}
		_ = json.Unmarshal([]byte(pgErr.Detail), &d)
		return &brain.Error{Code: brain.EKEYREUSED, Message: pgErr.Message + "; a retry sends the same request with the same key, a new request a new key",
			Details: map[string]any{"run_id": d.RunID, "idempotency_key": d.Key}}
	case errors.As(err, &pgErr) && pgErr.Code == "GI002":
		r := &RepeatedRequest{}
		_ = json.Unmarshal([]byte(pgErr.Detail), r)
		return r
	}
	return gemsql.Coded(err)
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
