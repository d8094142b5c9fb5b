package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestSQLStateError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		sqlstate string
		want     registry.ErrorCode // "" when the error keeps handler_error
	}{
		{"unique violation", "23505", registry.CodeConflict},
		{"exclusion violation", "23P01", registry.CodeConflict},
		{"state guard", "55000", registry.CodeConflict},
		{"foreign key violation", "23503", registry.CodeNotFound},
		{"not null violation", "23502", registry.CodeValidation},
		{"check violation", "23514", registry.CodeValidation},
		{"value too long", "22001", registry.CodeValidation},
		{"numeric out of range", "22003", registry.CodeValidation},
		{"bad date-time format", "22007", registry.CodeValidation},
		{"date-time overflow", "22008", registry.CodeValidation},
		{"invalid UTF-8", "22021", registry.CodeValidation},
		{"invalid text representation", "22P02", registry.CodeValidation},
		{"untranslatable character", "22P05", registry.CodeValidation},
		{"division by zero", "22012", ""},
		{"undefined column", "42703", ""},
		{"syntax error", "42601", ""},
		{"raise exception", "P0001", ""},
		{"lock not available", "55P03", ""}, // transient, not a state guard
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pgErr := &pgconn.PgError{Code: tt.sqlstate, Message: "it failed", Detail: "Key (id)=(1) is the problem.",
				ConstraintName: "things_check", TableName: "things"}
			// Handlers may wrap the error: it is found all the same.
			e, ok := sqlstateError(fmt.Errorf("error inserting thing: %w", pgErr))
			if tt.want == "" {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, tt.want, e.Code)
			require.Equal(t, "it failed: Key (id)=(1) is the problem.", e.Message)
			require.Equal(t, map[string]any{"sqlstate": tt.sqlstate, "constraint": "things_check", "table": "things"}, e.Details)
		})
	}

	_, ok := sqlstateError(errors.New("not from the database"))
	require.False(t, ok)
}
