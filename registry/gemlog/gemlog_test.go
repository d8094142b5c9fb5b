package gemlog_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gemhq/gem/registry/gemlog"
	"github.com/stretchr/testify/require"
)

// TestNewWhileLogging: loggers made while others write lines share zerolog's global time format without a
// data race (go test -race): New sets it once.
func TestNewWhileLogging(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var buf bytes.Buffer
			log, err := gemlog.New(&buf, "brain", "", "")
			require.NoError(t, err)
			log.Info().Int("writer", i).Msg("hello")
			var line map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
			require.Contains(t, line, "time")
		})
	}
	wg.Wait()
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("JSONByDefault", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		log, err := gemlog.New(&buf, "executor", "", "")
		require.NoError(t, err)
		log.Debug().Msg("hidden at info")
		log.Info().Str("call_id", "c1").Msg("hello")
		var line map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
		require.Equal(t, "executor", line["service"])
		require.Equal(t, "info", line["level"])
		require.Equal(t, "hello", line["message"])
		require.Equal(t, "c1", line["call_id"])
		require.Contains(t, line, "time")
	})

	t.Run("ConsoleWithoutColourOffATerminal", func(t *testing.T) {
		t.Parallel()
		// A buffer and a regular file (make run > file) are not terminals: no ANSI escape codes.
		var buf bytes.Buffer
		log, err := gemlog.New(&buf, "brain", "debug", "console")
		require.NoError(t, err)
		log.Debug().Str("tool", "leads.create").Msg("hello")
		require.Contains(t, buf.String(), "hello")
		require.Contains(t, buf.String(), "tool=leads.create")
		require.NotContains(t, buf.String(), "\x1b[")

		f, err := os.Create(filepath.Join(t.TempDir(), "log"))
		require.NoError(t, err)
		defer f.Close()
		require.False(t, gemlog.IsTerminal(f))
		log, err = gemlog.New(f, "brain", "", "console")
		require.NoError(t, err)
		log.Warn().Msg("to a file")
		b, err := os.ReadFile(f.Name())
		require.NoError(t, err)
		require.Contains(t, string(b), "to a file")
		require.NotContains(t, string(b), "\x1b[")
	})

	t.Run("RejectsUnknownLevelAndFormat", func(t *testing.T) {
		t.Parallel()
		_, err := gemlog.New(&bytes.Buffer{}, "executor", "loud", "")
		require.ErrorContains(t, err, "GEM_LOG_LEVEL")
		_, err = gemlog.New(&bytes.Buffer{}, "executor", "", "xml")
		require.ErrorContains(t, err, "GEM_LOG_FORMAT")
	})

	t.Run("SlogBridge", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		log, err := gemlog.New(&buf, "executor", "warn", "json")
		require.NoError(t, err)
		slogger := gemlog.Slog(log.With().Str("component", "river").Logger())
		slogger.Info("below the level")
		require.Empty(t, buf.String(), "the zerolog level applies to slog records")
		slogger.Warn("listener lost", "error", "boom")
		var line map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
		require.Equal(t, "warn", line["level"])
		require.Equal(t, "listener lost", line["message"])
		require.Equal(t, "boom", line["error"])
		require.Equal(t, "river", line["component"])
		require.Equal(t, "executor", line["service"])
	})
}
