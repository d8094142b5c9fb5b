package oshandlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Record types whose references fill a column of the os pack's tables of their own: a task or reminder
// about a lead keeps its lead_id (and a reminder about a task its task_id), so deleting the record clears
// the link. The leads themselves are a later pack's (it declares the type).
const (
	refLead = "lead"
	refTask = "task"
)

// ownRecords are the os pack's records a context_ref may name, and their tables.
var ownRecords = map[string]string{"task": "os_tasks", "note": "os_notes", "reminder": "os_reminders"}

// records maps the context_ref types of the records GEM checks to their tables: every pack's.
type records map[string]string

// normalizeRef trims a reference and lower-cases its type. An empty reference ({}) is nil; half of one is a
// validation_error naming field.
func normalizeRef(field string, r *ospack.Ref) (*ospack.Ref, error) {
	if r == nil {
		return nil, nil
	}
	n := ospack.Ref{Type: strings.ToLower(strings.TrimSpace(r.Type)), ID: strings.TrimSpace(r.ID)}
	switch {
	case n.Type == "" && n.ID == "":
		return nil, nil
	case n.Type == "" || n.ID == "":
		return nil, executor.InvalidField(field, "needs both a type and an id")
	}
	return &n, nil
}

// check confirms that a (normalized) reference of a known type, given in field, names an existing row and
// returns that row's id; nil for a type no pack declares.
func (rs records) check(ctx context.Context, db executor.DB, field string, r *ospack.Ref) (*uuid.UUID, error) {
	table, known := rs[r.Type]
	if !known {
		return nil, nil
	}
	id, err := executor.RecordID(field+".id", r.ID)
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1)`, id).Scan(&exists); err != nil {
		return nil, fmt.Errorf("error checking %s %s: %w", r.Type, id, err)
	}
	if !exists {
		return nil, executor.NotFound("%s %s does not exist", r.Type, id)
	}
	return &id, nil
}

// resolve normalizes and checks a context_ref; recordID is the id of the record it names when its type is
// known (nil otherwise).
func (rs records) resolve(ctx context.Context, db executor.DB, field string, in *ospack.Ref) (ref *ospack.Ref, recordID *uuid.UUID, err error) {
	if ref, err = normalizeRef(field, in); err != nil || ref == nil {
		return nil, nil, err
	}
	if recordID, err = rs.check(ctx, db, field, ref); err != nil {
		return nil, nil, err
	}
	return ref, recordID, nil
}

// RefFromColumns is the reference a row keeps in its context_type and context_id columns, or nil.
func RefFromColumns(typ, id *string) *ospack.Ref {
	if typ == nil || id == nil {
		return nil
	}
	return &ospack.Ref{Type: *typ, ID: *id}
}

// RefColumns are a reference's values of the context_type and context_id columns (nil for none).
func RefColumns(r *ospack.Ref) (typ, id *string) {
	if r == nil {
		return nil, nil
	}
	return &r.Type, &r.ID
}
