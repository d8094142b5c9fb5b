package devicehub

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestAnswerTextIsRepaired: a device's answer is a tool's result, so text PostgreSQL cannot store in it (a
// \u0000, a lone surrogate) becomes U+FFFD, as in the receipt of a call an executor ran (gemsql's one rule
// for text GEM did not get from a client); before, the call failed with output_contract.
func TestAnswerTextIsRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := sqltest.NewDB(t)
	_, err := gemsql.DeviceCreate(ctx, pool, "laptop", "ann", nil)
	require.NoError(t, err)
	made, err := gemsql.CallInsert(ctx, pool, gemsql.CallInsertParams{ToolName: "lab.echo", Device: "laptop"})
	require.NoError(t, err)
	var attempt int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_device_attempts (call_id, device, state, timeout_ms, sent_at)
		VALUES ($1, 'laptop', 'sent', 5000, now()) RETURNING id`, made[0].ID).Scan(&attempt))

	s := &session{h: &Hub{relayPool: pool}, name: "laptop", ctx: ctx, log: zerolog.Nop()}
	stored := s.storeAnswers([]*registry.DeviceAnswer{{Attempt: attempt, Status: registry.StatusSucceeded,
		Result: json.RawMessage(`{"text": "a\u0000b\ud800c"}`)}})
	require.Equal(t, []int64{attempt}, stored)
	var state, text string
	require.NoError(t, pool.QueryRow(ctx, `SELECT state, result ->> 'text' FROM core_device_attempts WHERE id = $1`, attempt).Scan(&state, &text))
	require.Equal(t, gemsql.AttemptSucceeded, state)
	require.Equal(t, "a\uFFFDb\uFFFDc", text)
}
