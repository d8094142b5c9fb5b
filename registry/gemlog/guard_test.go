package gemlog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/gemhq/gem/registry/gemlog"
	"github.com/stretchr/testify/require"
)

func TestGuarded(t *testing.T) {
	t.Parallel()

	t.Run("APanicIsALoggedError", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		log, err := gemlog.New(&buf, "brain", "", "")
		require.NoError(t, err)
		log = log.With().Str("request_id", "r1").Logger()
		err = gemlog.Guarded(&log, "a request's handler", func() error { panic("boom") })
		var pe *gemlog.PanicError
		require.True(t, errors.As(err, &pe), "%v", err)
		require.Equal(t, "boom", pe.Value)
		require.Equal(t, "panic: boom", err.Error())
		require.Contains(t, string(pe.Stack), "guard_test.go")
		var line map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
		require.Equal(t, "error", line["level"])
		require.Equal(t, "a request's handler panicked; recovered", line["message"])
		require.Equal(t, "boom", line["panic"])
		require.Equal(t, "r1", line["request_id"], "the logger's fields")
		require.NotEmpty(t, line["stack"])
	})

	t.Run("ErrorsPassAndNothingIsLogged", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		log, err := gemlog.New(&buf, "brain", "", "")
		require.NoError(t, err)
		want := errors.New("refused")
		require.Equal(t, want, gemlog.Guarded(&log, "work", func() error { return want }))
		require.NoError(t, gemlog.Guarded(&log, "work", func() error { return nil }))
		require.Empty(t, buf.String())
	})

	t.Run("AnAbortedResponseIsThrownOn", func(t *testing.T) {
		t.Parallel()
		log, err := gemlog.New(&bytes.Buffer{}, "brain", "", "")
		require.NoError(t, err)
		require.PanicsWithValue(t, http.ErrAbortHandler, func() {
			_ = gemlog.Guarded(&log, "a request's handler", func() error { panic(http.ErrAbortHandler) })
		})
	})
}
