package gemsql_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestMaxAttemptsNamesItsRange: a max_attempts out of range is refused by GEM's check, naming the range,
// not by River's job insert ("max_attempts_is_positive").
func TestMaxAttemptsNamesItsRange(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	for _, n := range []int{0, -1, 101, 32767} {
		_, err := b.pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input, max_attempts) VALUES ('os.health_check', '{}', $1)`, n)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%d: %v", n, err)
		require.Equal(t, "23514", pgErr.Code, "check_violation")
		require.Equal(t, "core_tool_calls_max_attempts_check", pgErr.ConstraintName)
		require.Contains(t, pgErr.Message, "max_attempts must be between 1 and 100")
	}
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls`))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM river_job`))

	var id string
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, max_attempts) VALUES ('os.health_check', '{}', 100) RETURNING id`).Scan(&id))
	_, err := b.pool.Exec(ctx, `UPDATE core_tool_calls SET max_attempts = 0 WHERE id = $1`, id)
	require.ErrorContains(t, err, "max_attempts must be between 1 and 100, not 0")
}

// TestToolStatsAreRounded: core_tool_stats' durations print with at most two decimals.
func TestToolStatsAreRounded(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input) SELECT 'stats.tool', '{}' FROM generate_series(1, 3)`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, duration_ms, attempt, worker, started_at, finished_at)
		SELECT id, tool_name, 'succeeded', d, 1, 'test', now(), now()
		FROM (SELECT id, tool_name, row_number() OVER (ORDER BY id) AS n FROM core_tool_calls) c
		JOIN (VALUES (1, 1.1), (2, 2.166), (3, 3.3333)) v(n, d) USING (n)`)
	require.NoError(t, err)
	var avg, p50, p95, p99 string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT avg_ms::text, p50_ms::text, p95_ms::text, p99_ms::text FROM core_tool_stats WHERE tool_name = 'stats.tool'`).
		Scan(&avg, &p50, &p95, &p99))
	require.Equal(t, "2.20", avg)
	require.Equal(t, "2.17", p50)
	require.Equal(t, "3.22", p95)
	require.Equal(t, "3.31", p99)
}
