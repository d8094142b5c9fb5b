package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// CountCalls is how many calls a run made, as stored.
func CountCalls(t testing.TB, pool *pgxpool.Pool, runID any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM core_tool_calls WHERE run_id = $1`, runID).Scan(&n))
	return n
}

// RunStatus is a run's status, as stored.
func RunStatus(t testing.TB, pool *pgxpool.Pool, runID any) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT status FROM brain_runs WHERE id = $1`, runID).Scan(&s))
	return s
}
