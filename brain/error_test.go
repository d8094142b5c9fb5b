package brain_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestErrorCode: an error's code is read one way, AsError's, whatever wraps it: the brain's own errors, the
// storage's, a driver's failure the storage would code, and anything else internal.
func TestErrorCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		code string
	}{
		{"nil", nil, brain.EINTERNAL},
		{"the brain's", fmt.Errorf("wrapped: %w", brain.Errorf(brain.ETOOMANY, "slow down")), brain.ETOOMANY},
		{"the storage's", fmt.Errorf("wrapped: %w", &gemsql.Error{Code: gemsql.ENOTFOUND, Message: "no run"}), brain.ENOTFOUND},
		{"the storage's internal", &gemsql.Error{Code: gemsql.EINTERNAL, Message: "boom"}, brain.EINTERNAL},
		{"a driver's, coded the storage's way", &pgconn.PgError{Code: "22021", Message: "invalid byte sequence"}, brain.EINVALID},
		{"a cancellation", context.Canceled, brain.EINTERNAL},
		{"anything else", errors.New("boom"), brain.EINTERNAL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.code, brain.ErrorCode(tt.err))
			require.Equal(t, brain.AsError(tt.err).Code, brain.ErrorCode(tt.err))
		})
	}
}
