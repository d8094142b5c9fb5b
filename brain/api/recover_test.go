package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gemhq/gem/sql/sqltest"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestHandlerPanicIsAnswered: a route whose handler panics (a deliberate fault, through the brain's own
// middleware) is answered 500 {"ok": false, "errors": [{"code": "internal"}]}, logged once with the request's
// id and the panicking goroutine's stack (echo's recovery logged every goroutine's, without the id), and the
// server answers the next request.
func TestHandlerPanicIsAnswered(t *testing.T) {
	t.Parallel()
	var logs sqltest.SyncBuffer
	s := New(&Params{Config: Config{AuthDisabled: true}, Log: zerolog.New(&logs)})
	s.echo.GET("/test/panic", func(echo.Context) error { panic("a deliberate fault") })
	s.echo.GET("/test/fine", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	web := httptest.NewServer(s.echo)
	defer web.Close()

	resp, err := http.Get(web.URL + "/test/panic")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", body)
	var out errorBody
	require.NoError(t, json.Unmarshal(body, &out), "%s", body)
	require.Len(t, out.Errors, 1)
	require.Equal(t, "internal", out.Errors[0].Code)
	requestID := resp.Header.Get(echo.HeaderXRequestID)
	require.NotEmpty(t, requestID)

	var panicked map[string]any
	for _, line := range bytes.Split([]byte(logs.String()), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["panic"] != nil {
			panicked = m
		}
	}
	require.NotNil(t, panicked, "the panic is logged: %s", logs.String())
	require.Equal(t, "a deliberate fault", panicked["panic"])
	require.Equal(t, requestID, panicked["request_id"])
	require.Contains(t, panicked["stack"], "recover_test.go")
	require.NotContains(t, panicked["stack"], "goroutine 1 [", "only the panicking goroutine's stack")

	resp, err = http.Get(web.URL + "/test/fine")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "the server answers on")
}
