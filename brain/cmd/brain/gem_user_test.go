package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDatesAreInTheBusinessZone: the brain reads "tomorrow at 3pm" in the zone the executor's tools read
// dates and working hours in, so a default set-up does not book a 10am inspection at 9pm business time.
func TestDatesAreInTheBusinessZone(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	base := map[string]string{"DATABASE_URL": "postgres://x", "GEM_BRAIN_AUTH": "off"}
	zone := func(extra map[string]string) string {
		t.Helper()
		kv := map[string]string{}
		for k, v := range base {
			kv[k] = v
		}
		for k, v := range extra {
			kv[k] = v
		}
		cfg, err := ConfigFromEnv(env(kv))
		require.NoError(t, err)
		return cfg.WithDefaults().Timezone.String()
	}
	require.Equal(t, "Australia/Sydney", zone(nil))
	require.Equal(t, "Europe/Berlin", zone(map[string]string{"GEM_BUSINESS_TIMEZONE": "Europe/Berlin"}))
	require.Equal(t, "Asia/Tokyo", zone(map[string]string{"GEM_BUSINESS_TIMEZONE": "Europe/Berlin", "GEM_BRAIN_TIMEZONE": "Asia/Tokyo"}))
	_, err := ConfigFromEnv(env(map[string]string{"DATABASE_URL": "postgres://x", "GEM_BUSINESS_TIMEZONE": "Mars/Olympus"}))
	require.ErrorContains(t, err, "GEM_BUSINESS_TIMEZONE")

	// The shared test brain has no zone configured: a time in a message is the business's.
	resp, status := newAPI(t).run(map[string]any{"message": "book a meeting with the zone tester on friday at 2pm for 2 hours"})
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	require.Len(t, resp.PlannedToolCalls, 1)
	var in struct {
		StartAt time.Time `json:"start_at"`
	}
	require.NoError(t, json.Unmarshal(resp.PlannedToolCalls[0].Input, &in))
	start := in.StartAt
	sydney, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	require.Equal(t, 14, start.In(sydney).Hour(), "start_at %s", start)
	require.Equal(t, time.Friday, start.In(sydney).Weekday())

	// Answers say times in that zone too, also those read back from results (PostgreSQL's are in UTC): on
	// a database of its own, so the list holds only this task.
	a, _ := privateBrain(t, true)
	resp, status = a.run(map[string]any{"message": "create a task to call the zone tester on friday", "mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	require.Regexp(t, `due Fri \d+ \w+ 17:00\)\.$`, resp.AssistantMessage)
	resp, status = a.run(map[string]any{"message": "list tasks", "mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	require.Regexp(t, `call the zone tester \(normal, due Fri \d+ \w+ 17:00\)`, resp.AssistantMessage)
}

// TestRunTakesGEMsNulls: GEM's brain read a null mode, context or limits as absent, and its clients send
// null for what they leave out; such a request is answered in the default mode, not refused.
func TestRunTakesGEMsNulls(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	status, out := rawRun(t, a, map[string]any{"message": "create a task to call the null client", "mode": nil, "context": nil,
		"limits": nil, "conversation_id": nil})
	require.Equal(t, http.StatusOK, status, "%v", out)
	require.Equal(t, true, out["ok"], "%v", out)
	require.Equal(t, "answer", out["decision"].(map[string]any)["mode_used"])
	require.Equal(t, []any{}, out["enqueued"])
	require.Equal(t, "os.create_task", out["planned_tool_calls"].([]any)[0].(map[string]any)["tool_name"])
}

// TestPhotoExampleWorks: the help's example for registering a photo runs as written. It named a gemfs://
// file no store holds (a user cannot put one there), so trying it failed with not_found.
func TestPhotoExampleWorks(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	resp, status := a.run(map[string]any{"message": "register photo https://photos.example.com/baker/north-face.jpg for the job in Newtown",
		"mode": "enqueue_and_wait"})
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	require.True(t, resp.OK, "%+v %s", resp.Errors, resp.AssistantMessage)
	require.Equal(t, "media.register_asset", resp.Receipts[0].ToolName)
}
