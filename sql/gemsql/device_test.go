package gemsql_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// A call is with at most one device at a time: a second open attempt is refused, and one may follow an
// attempt that ended.
func TestDeviceAttemptOneOpen(t *testing.T) {
	ctx, b := setup(t)
	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "lab.effect", Input: json.RawMessage(`{}`)}))
	require.NoError(t, err)
	const insert = `INSERT INTO core_device_attempts (call_id, device, timeout_ms) VALUES ($1, $2, 1000) RETURNING id`
	var first int64
	require.NoError(t, b.pool.QueryRow(ctx, insert, id, "laptop").Scan(&first))

	for _, state := range []string{gemsql.AttemptQueued, gemsql.AttemptSent} {
		_, err = b.pool.Exec(ctx, `UPDATE core_device_attempts SET state = $2 WHERE id = $1`, first, state)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, insert, id, "server")
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "a second attempt beside a %s one: %v", state, err)
		require.Equal(t, "core_device_attempts_one_open", pgErr.ConstraintName)
	}

	_, err = b.pool.Exec(ctx, `UPDATE core_device_attempts SET state = 'unsent', finished_at = now() WHERE id = $1`, first)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, insert, id, "server")
	require.NoError(t, err, "the call may go to another device once its attempt ended")
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM core_device_attempts WHERE call_id = $1`, id))
}
