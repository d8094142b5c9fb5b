package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestAsyncRunRefusedAsWithout: "async": true (or Prefer: respond-async) on a /brain/run whose plan is
// refused — more calls than limits.max_tool_calls, an input its tool's schema refuses — answers the 400 it
// answers without async, and so does its retry with the key; an accepted run still answers 202. Before, a
// refused run answered 202 "accepted" and the client learnt of the refusal only by reading the run.
func TestAsyncRunRefusedAsWithout(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	key := "refused-" + uuid.NewString()
	tooMany := map[string]any{"message": "create a task to a\ncreate a task to b\ncreate a task to c", "limits": map[string]any{"max_tool_calls": 2}, "async": true}
	var runID string
	for range 2 { // the request, and its retry with the key
		status, data, err := post(a, "/brain/run", tooMany, map[string]string{"Idempotency-Key": key})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, "%s", data)
		require.Contains(t, string(data), "max_tool_calls")
		var refused struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal(data, &refused))
		require.Equal(t, "failed", refused.Status)
		if runID == "" {
			runID = refused.RunID
		}
		require.Equal(t, runID, refused.RunID, "the retry answers the same run")
	}
	status, data, err := post(a, "/brain/run", map[string]any{"message": "log call: no answer", "mode": "enqueue_and_wait",
		"context": map[string]any{"entity_id": 42}}, map[string]string{"Prefer": "respond-async"})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, "%s", data)
	require.Contains(t, string(data), "/entity_id")

	status, data, err = post(a, "/brain/run", map[string]any{"message": "health check", "mode": "enqueue_and_wait", "async": true}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%s", data)
}
