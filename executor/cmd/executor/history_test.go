package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// Not parallel: the command reads its configuration from the process environment.
func TestHistoryCommand(t *testing.T) {
	pool, url := sqltest.NewDB(t)
	archive := t.TempDir()
	t.Setenv("DATABASE_URL", url)
	t.Setenv("GEM_ARCHIVE_DIR", archive)
	t.Setenv("GEM_RETENTION", "400d")
	_, err := pool.Exec(t.Context(), `INSERT INTO core_tool_calls (tool_name) VALUES ('os.health_check')`)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `ANALYZE core_tool_calls`)
	require.NoError(t, err)

	now := time.Now().UTC()
	month := now.Format("2006_01")
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	code, out, errOut := runCmd("history")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "MONTH")
	require.Regexp(t, `(?m)^`+month+` +`+monthStart.AddDate(0, 1, 0).Format("2006-01-02")+` +1 +[0-9.]+ [kM]B +from `+
		monthStart.AddDate(0, 1, 0).Add(400*24*time.Hour).Format("2006-01-02")+`$`, out)
	require.Regexp(t, `(?m)^before +`+monthStart.Format("2006-01-02")+` +0 `, out)
	require.Regexp(t, `(?m)^`+monthStart.AddDate(0, 3, 0).Format("2006_01")+` `, out, "three months ahead")

	// -retire with a day's retention: the history from before partitioning ended when this month began.
	t.Setenv("GEM_RETENTION", "24h")
	code, out, errOut = runCmd("history", "-retire")
	require.Equal(t, 0, code, errOut)
	if now.Sub(monthStart) >= 24*time.Hour {
		require.Contains(t, out, "retired before in ")
		require.FileExists(t, filepath.Join(archive, "before", "manifest.json"))
		require.NotRegexp(t, `(?m)^before `, out)
	} else {
		require.NotContains(t, out, "retired before")
	}
	require.Regexp(t, `(?m)^`+month+` `, out, "this month is kept")

	t.Setenv("GEM_RETENTION", "off")
	code, _, errOut = runCmd("history", "-retire")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "GEM_RETENTION is off")
	t.Setenv("GEM_RETENTION", "forever")
	code, _, errOut = runCmd("history")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "GEM_RETENTION")
}
