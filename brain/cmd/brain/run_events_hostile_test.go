package main

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

// A run's events as a hostile client, a crash and an outage meet them (docs/durable-runs.md#async-and-live).

// TestRunEventsEndWhenNothingMoreComes: a client resuming a run that has ended, after its last event or
// beyond it, is answered 204 No Content at once (an EventSource stops reconnecting on it), and FollowRun
// returns; a stream of a run still going, resumed beyond its last event, ends when the run ends; an id no
// event can have is 400. Before, each of them was a stream that never ended (a keep-alive every 15 s,
// forever), and an id past 2^31 an empty 200 with an error in the brain's log.
func TestRunEventsEndWhenNothingMoreComes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	done := a.runOK(map[string]any{"message": "create a task to " + uniq("ended"), "mode": "enqueue_and_wait"})
	path := "/brain/runs/" + done.RunID.String() + "/events"
	all := collect(t, readSSE(openStream(t, a, http.MethodGet, path, nil, nil).Body), 10*time.Second)
	last := all[len(all)-1]
	require.Equal(t, "run_ended", last.Event)

	for _, after := range []string{strconv.FormatInt(last.ID, 10), strconv.FormatInt(last.ID+1, 10), "1000"} {
		resp := openStream(t, a, http.MethodGet, path, nil, map[string]string{"Last-Event-ID": after})
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "Last-Event-ID %s of a run that ended at %d", after, last.ID)
		resp = openStream(t, a, http.MethodGet, path+"?after="+after, nil, nil)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "?after=%s", after)
	}
	for _, bad := range []string{"2147483648", "9999999999"} {
		resp := openStream(t, a, http.MethodGet, path, nil, map[string]string{"Last-Event-ID": bad})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "Last-Event-ID %s", bad)
	}

	client := &api.Client{BaseURL: a.url, Token: a.token}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var followed []api.Event
	require.NoError(t, client.FollowRun(ctx, done.RunID.String(), last.ID, func(e api.Event) error { followed = append(followed, e); return nil }))
	require.Empty(t, followed)

	// A plan, followed from beyond its events: the stream ends when the plan has run.
	plan, status := a.run(map[string]any{"message": "create a task to " + uniq("beyond"), "mode": "plan"})
	require.Equal(t, http.StatusOK, status, "%+v", plan.Errors)
	beyond := readSSE(openStream(t, a, http.MethodGet, "/brain/runs/"+plan.RunID.String()+"/events?after=50", nil, nil).Body)
	var approved map[string]any
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/brain/runs/"+plan.RunID.String()+"/approve", map[string]any{"wait": true}, &approved), "%v", approved)
	require.Empty(t, collect(t, beyond, 10*time.Second))
}

// TestRunEventsOnlyWhileTheCallerMayReadThem: a stream stops as soon as its caller may no longer read the
// run: an approver reading a plan (which it may while the plan waits) sees none of its calls, receipts or
// answer once another approved it — GET /brain/runs/{id} is 404 to it then; a caller revoked while it
// streams, and a studio login that logs out, lose the stream within seconds, and their reconnection is
// refused. Before, a stream was authorized once, when it opened: each went on to the run's end.
func TestRunEventsOnlyWhileTheCallerMayReadThem(t *testing.T) {
	t.Parallel()
	admin := newAPI(t)
	plan := func(a *testAPI) string {
		t.Helper()
		resp, status := a.run(map[string]any{"message": "create a task to " + uniq("watched"), "mode": "plan"})
		require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
		return resp.RunID.String()
	}
	approve := func(id string) {
		t.Helper()
		var out map[string]any
		require.Equal(t, http.StatusOK, admin.do(http.MethodPost, "/brain/runs/"+id+"/approve", map[string]any{"wait": true}, &out), "%v", out)
	}
	first := func(events <-chan sseEvent) sseEvent {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no first event")
		}
		return sseEvent{}
	}

	// An approver (not the author) watches the admin's plan; the admin approves it.
	_, approver := addCaller(t, admin, []string{"read:*", "approve"}, nil)
	id := plan(admin)
	watched := readSSE(openStream(t, approver, http.MethodGet, "/brain/runs/"+id+"/events", nil, nil).Body)
	require.Equal(t, "run_started", first(watched).Event)
	approve(id)
	require.Empty(t, kinds(collect(t, watched, 10*time.Second)), "the calls, receipts and answer of a run it may no longer read")
	require.Equal(t, http.StatusNotFound, approver.do(http.MethodGet, "/brain/runs/"+id, nil, nil))

	// A caller revoked while it streams its own plan.
	name, revoked := addCaller(t, admin, []string{"read:*", "write:db"}, nil)
	id = plan(revoked)
	watched = readSSE(openStream(t, revoked, http.MethodGet, "/brain/runs/"+id+"/events", nil, nil).Body)
	require.Equal(t, "run_started", first(watched).Event)
	require.Equal(t, http.StatusOK, admin.do(http.MethodDelete, "/callers/"+name, nil, nil))
	at := time.Now()
	require.Empty(t, collect(t, watched, 10*time.Second))
	t.Logf("the revoked caller's stream ended %s after the revocation", time.Since(at).Round(time.Millisecond))
	require.Equal(t, http.StatusUnauthorized, openStream(t, revoked, http.MethodGet, "/brain/runs/"+id+"/events", nil, nil).StatusCode)

	// A studio login streams its own plan with its cookie, and logs out.
	_, viewer := addCaller(t, admin, []string{"read:*", "write:db"}, nil)
	id = plan(viewer)
	s := newStudioClient(t, viewer.url)
	s.login(viewer.token)
	req, err := http.NewRequest(http.MethodGet, s.base+"/brain/runs/"+id+"/events", nil)
	require.NoError(t, err)
	s.http.Timeout = 0
	resp, err := s.http.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	watched = readSSE(resp.Body)
	require.Equal(t, "run_started", first(watched).Event)
	out, _ := s.post("/studio/logout", url.Values{"_csrf": {s.csrf}}, s.base)
	require.Equal(t, http.StatusSeeOther, out.StatusCode)
	require.Empty(t, collect(t, watched, 10*time.Second))
	approve(id) // the plan runs on; its stream had ended
}

// TestChatStreamAcceptQZero: Accept: text/event-stream;q=0 says the client does not accept a stream
// (RFC 9110): the chat answers JSON. Before, the parameter was ignored and the chat streamed.
func TestChatStreamAcceptQZero(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Text: "Plain."}, llmfake.Turn{Text: "Streamed."})
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, a, 3, nil)
	resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "user-1"},
		map[string]string{"Accept": "text/event-stream;q=0, application/json"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", strings.SplitN(resp.Header.Get("Content-Type"), ";", 2)[0])
	resp = openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "user-1"},
		map[string]string{"Accept": "application/json;q=0.5, text/event-stream;q=0.9"})
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	streamed := kinds(collect(t, readSSE(resp.Body), 30*time.Second))
	require.Equal(t, "response", streamed[len(streamed)-1])
}
