package gemsql_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestDevPostgresMovesFromATakenPort: a private cluster whose port another program took while it was
// stopped (another checkout's cluster, say) starts on a free port instead of refusing, unless GEM_PG_PORT
// asks for that port.
func TestDevPostgresMovesFromATakenPort(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "gem-pg-port-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755)) // the server's user must reach it when the test runs as root
	script := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("../dev-postgres.sh", args...)
		cmd.Env = append(append(os.Environ(), "GEM_PG_DIR="+dir+"/cluster"), env...)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out) + string(ee.Stderr), err
		}
		return strings.TrimSpace(string(out)), err
	}
	t.Cleanup(func() {
		_, _ = script(nil, "destroy")
		_ = os.RemoveAll(dir)
	})
	first, err := script(nil, "start")
	require.NoError(t, err, first)
	_, err = script(nil, "stop")
	require.NoError(t, err)

	u, err := url.Parse(first)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", u.Host) // another program takes the port
	require.NoError(t, err)
	defer ln.Close()

	out, err := script([]string{"GEM_PG_PORT=" + u.Port()}, "start")
	require.Error(t, err, "a port asked for is not moved from")
	require.Contains(t, out, "is taken by another program")

	moved, err := script(nil, "start")
	require.NoError(t, err, moved)
	require.NotEqual(t, first, moved)
	conn, err := pgx.Connect(context.Background(), moved)
	require.NoError(t, err, "the cluster answers on its new port")
	require.NoError(t, conn.Close(context.Background()))
	again, err := script(nil, "url")
	require.NoError(t, err)
	require.Equal(t, moved, again, "and keeps it")
}
