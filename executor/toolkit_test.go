package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// codeOf is the receipt code an error from a handler gives, or "" for an error that is no *executor.Error.
func codeOf(err error) registry.ErrorCode {
	var e *executor.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestToolkitErrors(t *testing.T) {
	err := executor.InvalidField("patch.title", "must be %d to %d characters", 1, 200)
	require.Equal(t, registry.CodeValidation, codeOf(err))
	require.Equal(t, "validation_error: patch.title must be 1 to 200 characters", err.Error())
	require.Equal(t, map[string]any{"field": "patch.title"}, err.(*executor.Error).Details)

	err = executor.NotFoundIfNoRows(fmt.Errorf("reading: %w", pgx.ErrNoRows), "task", 7)
	require.Equal(t, registry.CodeNotFound, codeOf(err))
	require.Contains(t, err.Error(), "task 7 does not exist")
	other := errors.New("connection reset")
	require.Same(t, other, executor.NotFoundIfNoRows(other, "task", 7), "other errors pass through")

	id := uuid.New()
	got, err := executor.RecordID("task_id", " "+id.String()+" ")
	require.NoError(t, err)
	require.Equal(t, id, got)
	_, err = executor.RecordID("task_id", "task-1")
	require.Equal(t, registry.CodeNotFound, codeOf(err))
	require.Contains(t, err.Error(), `task_id "task-1" names no record: GEM's ids are UUIDs`)
	require.Equal(t, map[string]any{"field": "task_id"}, err.(*executor.Error).Details)
}

func TestToolkitValues(t *testing.T) {
	require.Equal(t, 20, executor.LimitOr(0, 20))
	require.Equal(t, 20, executor.LimitOr(-3, 20))
	require.Equal(t, 5, executor.LimitOr(5, 20))

	require.Equal(t, `100\% of a\_b \\ c`, executor.LikeEscape(`100% of a_b \ c`))
	require.Equal(t, `%50\%%`, executor.LikeContains("50%"))

	one, two, alsoOne := 1, 2, 1
	require.True(t, executor.SamePtr[int](nil, nil))
	require.True(t, executor.SamePtr(&one, &alsoOne))
	require.False(t, executor.SamePtr(&one, &two))
	require.False(t, executor.SamePtr(&one, nil))

	require.Equal(t, "unknown", executor.ValueOr(nil, "unknown"))
	s := "os.create_task"
	require.Equal(t, s, executor.ValueOr(&s, "unknown"))

}

// TestToolkitQueryList: rows are scanned in order, and no rows is an empty list, never nil (JSON []).
func TestToolkitQueryList(t *testing.T) {
	t.Parallel()
	pool, _ := sqltest.NewDB(t)
	ctx := context.Background()
	scan := func(r pgx.Row) (int, error) {
		var n int
		return n, r.Scan(&n)
	}
	list, err := executor.QueryList(ctx, pool, scan, `SELECT generate_series(1, $1)`, 3)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, list)
	list, err = executor.QueryList(ctx, pool, scan, `SELECT 1 WHERE false`)
	require.NoError(t, err)
	require.NotNil(t, list)
	out, err := json.Marshal(list)
	require.NoError(t, err)
	require.Equal(t, "[]", string(out))
	_, err = executor.QueryList(ctx, pool, scan, `SELECT 'x'`)
	require.Error(t, err, "a scan error is returned")
}
