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

// TestStudioShortIDs: the studio shows a call's id by its last 8 characters, with the whole id in its title:
// two calls of the same minute read differently (the first 8 of a UUIDv7 are its time, the same for a
// minute), and what is shown is part of the id, so searching for it finds the call.
func TestStudioShortIDs(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	first, second := a.call("os.health_check", map[string]any{}), a.call("os.health_check", map[string]any{})
	s := newStudioClient(t, shared.url)
	s.login(testToken)
	status, page := s.get("/studio/calls?tool=os.health_check")
	require.Equal(t, http.StatusOK, status)
	var shown []string
	for _, c := range []*callResponse{first, second} {
		id := c.Call.ID.String()
		short := id[len(id)-8:]
		require.Contains(t, page, `title="`+id+`">`+short+`</a>`, "call %s is shown by its last 8 characters", id)
		shown = append(shown, short)
	}
	require.NotEqual(t, shown[0], shown[1])
}

// TestStudioRunWithoutCalls: a finished run that made no calls says so, not "None yet".
func TestStudioRunWithoutCalls(t *testing.T) {
	t.Parallel()
	resp := newAPI(t).runOK(map[string]any{"message": "help", "mode": "answer"})
	s := newStudioClient(t, shared.url)
	s.login(testToken)
	status, page := s.get("/studio/runs/" + resp.RunID.String())
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "No calls: this run made none.")
	require.NotContains(t, page, "None yet")
}
