// Package business holds the handlers of GEM's business pack: the tools a trades business runs on (notes,
// tasks, leads, and as they are added inspections, quotes, jobs and invoices). Every handler writes only
// through the call's transaction, returns not_found for a missing row, and returns a result that matches
// its tool's output schema.
package business

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Register adds the business pack's handlers.
func Register(h executor.Handlers) {
	registerOS(h)
	registerLeads(h)
}

// dbError turns a constraint violation into the receipt a caller can act on; other errors pass through.
func dbError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "23503": // foreign_key_violation
		return executor.NotFound("%s", fkMessage(pgErr))
	case "23505": // unique_violation
		return executor.Conflict("%s", pgErr.Detail)
	case "23514", "22P02", "22007", "22008": // check_violation, invalid text representation, bad datetime
		return executor.Invalid("%s", pgErr.Message)
	}
	return err
}

func fkMessage(e *pgconn.PgError) string {
	if e.Detail != "" {
		return e.Detail
	}
	return e.Message
}

// notFoundIfNoRows maps pgx.ErrNoRows to a not_found receipt naming what is missing.
func notFoundIfNoRows(err error, what string, id any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return executor.NotFound("%s %v does not exist", what, id)
	}
	return dbError(err)
}

// optional distinguishes a field that is absent from one set to null.
type optional[T any] struct {
	Set   bool
	Value *T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

func nullableUUID(s *string) (*uuid.UUID, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	id, err := uuid.Parse(*s)
	if err != nil {
		return nil, executor.Invalid("%q is not a UUID", *s)
	}
	return &id, nil
}

func parseTime(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, executor.Invalid("%q is not an RFC 3339 date-time", *s)
	}
	return &t, nil
}

func limitOr(n int, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
