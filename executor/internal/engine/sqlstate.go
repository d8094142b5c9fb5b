package engine

import (
	"errors"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/registry"
	"github.com/jackc/pgx/v5/pgconn"
)

// sqlstateCodes maps the SQLSTATEs a handler's statement fails with because of its input or the state of
// the data, not because of a bug, to the receipt code a caller can act on. It is applied to every error a
// handler returns (see classify), so handlers return database errors as they are. Any other SQLSTATE is a
// handler_error, or is retried when it passes (isTransient).
//
// 23503 (a foreign key) is not_found: handlers meet it when an id in their input names a row that does not
// exist (a lead_id, a task_id), which is what not_found means. (Deleting a row still referenced raises it
// too, and would be a conflict, but no handler deletes referenced rows; PostgreSQL tells the two apart only
// in the message text, which depends on lc_messages.)
//
// 55000 (object_not_in_prerequisite_state) is conflict: the state guards of 00004_business.sql raise it when
// a row's state refuses the change (a locked inspection, a quote that has left draft), which is what
// conflict means.
var sqlstateCodes = map[string]registry.ErrorCode{
	"23505": registry.CodeConflict,   // unique_violation
	"23P01": registry.CodeConflict,   // exclusion_violation (also the skill dependency cycle of 00006_agents.sql)
	"55000": registry.CodeConflict,   // object_not_in_prerequisite_state: the state guards
	"23503": registry.CodeNotFound,   // foreign_key_violation
	"23502": registry.CodeValidation, // not_null_violation
	"23514": registry.CodeValidation, // check_violation
	"22001": registry.CodeValidation, // string_data_right_truncation (value too long for its column)
	"22003": registry.CodeValidation, // numeric_value_out_of_range
	"22007": registry.CodeValidation, // invalid_datetime_format
	"22008": registry.CodeValidation, // datetime_field_overflow
	"22021": registry.CodeValidation, // character_not_in_repertoire (bytes that are not valid UTF-8)
	"22P02": registry.CodeValidation, // invalid_text_representation ('x'::integer)
	"22P05": registry.CodeValidation, // untranslatable_character (\u0000 in text)
}

// sqlstateError turns a database error with a SQLSTATE of sqlstateCodes into the *Error that ends the call
// with its code. The message is PostgreSQL's, with its detail (which names the key of a unique or foreign
// key violation); the details carry the SQLSTATE and what PostgreSQL names: constraint, table, column.
func sqlstateError(err error) (*gemcall.Error, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil, false
	}
	code, ok := sqlstateCodes[pgErr.Code]
	if !ok {
		return nil, false
	}
	msg := pgErr.Message
	if pgErr.Detail != "" {
		msg += ": " + pgErr.Detail
	}
	return &gemcall.Error{Code: code, Message: msg, Details: pgErrorDetails(pgErr)}, true
}

// pgErrorDetails are the facts of a database error a caller can use.
func pgErrorDetails(pgErr *pgconn.PgError) map[string]any {
	details := map[string]any{"sqlstate": pgErr.Code}
	for k, v := range map[string]string{"constraint": pgErr.ConstraintName, "table": pgErr.TableName, "column": pgErr.ColumnName} {
		if v != "" {
			details[k] = v
		}
	}
	return details
}
