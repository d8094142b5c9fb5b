package gemlog_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/gemhq/gem/registry/gemlog"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its terminal side (the side a process writes its logs to).
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	require.NoError(t, err, "the test needs a pseudo-terminal (/dev/ptmx)")
	t.Cleanup(func() { ptmx.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	return tty
}

func TestNewColoursATerminal(t *testing.T) {
	t.Parallel()
	tty := openPTY(t)
	require.True(t, gemlog.IsTerminal(tty))

	// The console format decides on colour from the writer it is given; write through a wrapper that keeps
	// the terminal's Fd but records the bytes.
	rec := &fdRecorder{File: tty}
	log, err := gemlog.New(rec, "executor", "", "console")
	require.NoError(t, err)
	log.Info().Msg("hello")
	require.Contains(t, rec.buf.String(), "hello")
	require.Contains(t, rec.buf.String(), "\x1b[", "a terminal gets colour")
}

// fdRecorder is a terminal (it has the file's Fd) whose writes are recorded instead of sent.
type fdRecorder struct {
	*os.File
	buf bytes.Buffer
}

func (r *fdRecorder) Write(p []byte) (int, error) { return r.buf.Write(p) }
