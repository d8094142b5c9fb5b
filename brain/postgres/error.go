package postgres

import (
	"context"
	"errors"

	"github.com/gemhq/gem/brain"
	gemsql "github.com/gemhq/gem/sql"
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
//   - text PostgreSQL cannot store or read (22021 a NUL or invalid UTF-8, 22P05 an untranslatable
//     character such as \u0000 in jsonb, 22P02 a malformed value) is the client's input: EINVALID, naming
//     what PostgreSQL says;
//   - a server that cannot be reached, is shutting down or out of resources (classes 08, 57, 53, and errors
//     without a SQLSTATE) is EUNAVAILABLE;
//   - any other error PostgreSQL returned is a bug, left for the API to log as internal.
//
// Clients' input is checked at the edge (brain/api) before it gets here; this catches what slips through.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var e *brain.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "22021", "22P05", "22P02":
			return &brain.Error{Code: brain.EINVALID, Message: "the request holds text the database cannot store: " + pgErr.Message,
				Details: map[string]any{"sqlstate": pgErr.Code}}
		}
		if class := pgErr.Code[:2]; class != "08" && class != "57" && class != "53" {
			return err
		}
	}
	return &brain.Error{Code: brain.EUNAVAILABLE, Message: "the database cannot be reached: " + err.Error()}
}
