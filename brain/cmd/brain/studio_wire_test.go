package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStudioStaticBadPath: a static file path that is not text (%ff, %c0, %00) is a 400 naming the path
// parameter, never a 500.
func TestStudioStaticBadPath(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"%ff", "%c0", "%c0%af", "studio.css%ff", "%00"} {
		resp, err := http.Get(shared.url + "/studio/static/" + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", path, body)
	}
	resp, err := http.Get(shared.url + "/studio/static/studio.css")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
