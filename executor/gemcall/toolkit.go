package gemcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The tool author's small tools: what most handlers need beside Typed and the errors of handler.go (reading
// ids and optional fields, naming the field an input gets wrong, listing rows, searching with LIKE).

// InvalidField ends a call with validation_error about one input field, which the details name
// ({"field": "patch.title"}) and the message starts with.
func InvalidField(field, format string, args ...any) error {
	return &Error{Code: registry.CodeValidation, Message: field + " " + fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field}}
}

// NotFoundIfNoRows turns pgx.ErrNoRows into a not_found error naming what is missing ("task 5b0f… does not
// exist"); other errors pass through as they are (the executor chooses the receipt code of a database error).
func NotFoundIfNoRows(err error, what string, id any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return NotFound("%s %v does not exist", what, id)
	}
	return err
}

// RecordID reads the id an input's field gives as text (spaces around it ignored): anything but a UUID names
// no record GEM keeps, so the call ends not_found naming the field, in the words Call.Bind uses for a field
// declared a uuid.UUID.
func RecordID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		raw, _ := json.Marshal(s)
		return uuid.Nil, notARecordID(field, raw, err)
	}
	return id, nil
}

// notARecordID is the not_found of a field whose value (raw, as JSON) is not a UUID.
func notARecordID(field string, raw []byte, err error) error {
	return &Error{Code: registry.CodeNotFound, Details: map[string]any{"field": field},
		Message: fmt.Sprintf("%s %s names no record: GEM's ids are UUIDs (%v)", field, raw, err)}
}

// QueryList runs a query and scans each row with scan. It never returns a nil slice, so an empty list is
// JSON [] rather than null, as output schemas of lists ask.
func QueryList[T any](ctx context.Context, db DB, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []T{}
	}
	return list, nil
}

// LimitOr is an input's limit, or def when it is left out (zero) or not positive.
func LimitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// likeEscaper escapes the characters LIKE and ILIKE give a meaning (with the default escape character).
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// LikeEscape makes s match itself in a LIKE or ILIKE pattern: a % or _ of the input matches only itself.
func LikeEscape(s string) string { return likeEscaper.Replace(s) }

// LikeContains is the LIKE or ILIKE pattern of a text that contains s.
func LikeContains(s string) string { return "%" + LikeEscape(s) + "%" }

// Optional is a patch's field as a handler read it, key by key, with its own message for each wrong value:
// left out (Set false), null (Set, Value nil) or a value. Set says it was given.
type Optional[T any] struct {
	Set   bool
	Value *T
}

// SamePtr reports whether two optional values are both absent or both present and equal: whether an update
// changes a nullable column.
func SamePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ValueOr is *p, or def when p is nil.
func ValueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
