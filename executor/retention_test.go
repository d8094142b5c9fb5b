package executor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/stretchr/testify/require"
)

// An executor retires months of history past its retention into its archive folder, and makes the months
// ahead. The test runs the pass as of six months from now, with a 30-day retention: this month, the three
// made ahead and the history from before partitioning are all past it.
func TestExecutorRetiresHistory(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	archive := t.TempDir()
	e := b.startExecutor(t, func(c *executor.Config) {
		c.Retention = 30 * 24 * time.Hour
		c.ArchiveDir = archive
	})
	id := b.call(t, ctx, "os.health_check", `{}`)
	require.Equal(t, "succeeded", string(b.waitOne(t, ctx, id).Status))

	future := time.Now().UTC().AddDate(0, 6, 0)
	require.Equal(t, 6, e.Maintain(ctx, future), "this month, three ahead, and the two partitions of history from before partitioning")

	month := time.Now().UTC().Format("2006_01")
	raw, err := os.ReadFile(filepath.Join(archive, month, "manifest.json"))
	require.NoError(t, err)
	var manifest gemsql.ArchiveManifest
	require.NoError(t, json.Unmarshal(raw, &manifest))
	require.Equal(t, int64(1), manifest.Tables["core_tool_calls"].Rows)
	require.Equal(t, int64(1), manifest.Tables["core_tool_receipts"].Rows)
	require.FileExists(t, filepath.Join(archive, month, "core_tool_receipts_p"+month+".csv.gz"))
	require.FileExists(t, filepath.Join(archive, "before", "manifest.json"))
	require.FileExists(t, filepath.Join(archive, "nonv7", "core_tool_calls_p_nonv7.csv.gz"))
	require.Zero(t, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls WHERE id = $1`, id))

	// The months from the pass's now on exist; a second pass has nothing left to retire.
	for i := range gemsql.MonthsAhead + 1 {
		name := "core_tool_calls_p" + future.AddDate(0, i, 0).Format("2006_01")
		require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass($1)`, name), name)
	}
	require.Zero(t, e.Maintain(ctx, future))
}

// Retention off keeps every month.
func TestExecutorRetentionOff(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	e := b.startExecutor(t, func(c *executor.Config) { c.Retention = -1; c.ArchiveDir = t.TempDir() })
	id := b.call(t, ctx, "os.health_check", `{}`)
	b.waitOne(t, ctx, id)
	require.Zero(t, e.Maintain(ctx, time.Now().AddDate(5, 0, 0)))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls WHERE id = $1`, id))
}
