package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// timedEvent is an event and when the client read it.
type timedEvent struct {
	sseEvent
	at time.Time
}

// readUntil reads a stream's events, each with the time it came, until the stream ends or within, whichever
// is first; at each event it calls seen (nil: none).
func readUntil(t *testing.T, events <-chan sseEvent, within time.Duration, seen func(timedEvent)) []timedEvent {
	t.Helper()
	var out []timedEvent
	deadline := time.After(within)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return out
			}
			te := timedEvent{e, time.Now()}
			out = append(out, te)
			if seen != nil {
				seen(te)
			}
		case <-deadline:
			t.Fatalf("the stream did not end within %s; it sent %v", within, kinds(plain(out)))
		}
	}
}

func plain(events []timedEvent) []sseEvent {
	out := make([]sseEvent, len(events))
	for i, e := range events {
		out[i] = e.sseEvent
	}
	return out
}

// eventText is a text event's text.
func eventText(t *testing.T, e sseEvent) string {
	t.Helper()
	var d struct {
		Text *string `json:"text"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.Data), &d), e.Data)
	require.NotNil(t, d.Text, "a text event has its text: %s", e.Data)
	return *d.Text
}

// lastText is the text a client shows at the end of events: the text events after the last llm_started.
func lastText(t *testing.T, events []sseEvent) (string, int) {
	t.Helper()
	var b strings.Builder
	n := 0
	for _, e := range events {
		switch e.Event {
		case "llm_started":
			b.Reset()
			n = 0
		case "text":
			b.WriteString(eventText(t, e))
			n++
		}
	}
	return b.String(), n
}

func indexOf(events []sseEvent, kind string, from int) int {
	for i := from; i < len(events); i++ {
		if events[i].Event == kind {
			return i
		}
	}
	return -1
}

// TestChatStreamsTextAsItIsWritten: an SSE client of a chat turn whose LLM streams its reply in four pieces
// 300 ms apart sees the text as text events before the answer — the first well before it — whose
// concatenation is the reply, on both wire formats; a client that resumes with Last-Event-ID after the first
// text event, while the model still writes, loses nothing; the tool call before it, whose arguments came in
// pieces, is made once; the tokens are counted. Before, the brain asked for whole answers and a turn's text
// came only with llm_ended and answer.
func TestChatStreamsTextAsItIsWritten(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			title := "streamed " + uuid.NewString()[:8]
			chunks := []string{"I added the task ", "to your list: ", title, ". Anything else?"}
			fake := newFake(t, provider,
				llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task", Arguments: fmt.Sprintf(
					`{"title": %q, "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`, title)}}, Gap: 30 * time.Millisecond},
				llmfake.Turn{Chunks: chunks, Gap: 300 * time.Millisecond})
			a := llmBrain(t, provider, fake, chat.Config{})
			agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

			key := "text-" + uuid.NewString()
			resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "add a task", "user_id": "user-1"},
				map[string]string{brain.IdempotencyKeyHeader: key})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var resumed <-chan sseEvent
			var resumedAfter int64
			timed := readUntil(t, readSSE(resp.Body), time.Minute, func(e timedEvent) {
				if e.Event != "text" || resumed != nil {
					return
				}
				// Another client resumes after the first piece, while the model still writes.
				var run brain.RunResponse
				require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/runs?idempotency_key="+key, nil, &run))
				resumedAfter = e.ID
				resumed = readSSE(openStream(t, a, http.MethodGet, "/brain/runs/"+run.RunID.String()+"/events", nil,
					map[string]string{"Last-Event-ID": strconv.FormatInt(e.ID, 10)}).Body)
			})
			live := plain(timed)
			require.NotNil(t, resumed, "no text event came: %v", kinds(live))
			var final brain.ChatResponse
			require.Equal(t, "response", live[len(live)-1].Event)
			require.NoError(t, json.Unmarshal([]byte(live[len(live)-1].Data), &final))
			require.True(t, final.OK, "%+v", final.Errors)
			require.Equal(t, strings.Join(chunks, ""), final.Reply)

			// The text before the answer, in pieces: their concatenation is the reply.
			text, pieces := lastText(t, live)
			require.Equal(t, final.Reply, text)
			require.GreaterOrEqual(t, pieces, 3, "pieces 300 ms apart are text events of their own: %v", kinds(live))
			firstText, answer := indexOf(live, "text", 0), indexOf(live, "answer", 0)
			require.Less(t, firstText, answer)
			require.Greater(t, timed[answer].at.Sub(timed[firstText].at), 400*time.Millisecond,
				"the first text came as the model wrote it, not with the answer")
			require.Equal(t, []string{"run_started", "llm_started", "llm_ended", "call_enqueued", "receipt", "llm_started"}, kinds(live[:firstText]))
			require.Equal(t, []string{"llm_ended", "answer", "run_ended", "response"}, kinds(live[firstText+pieces:]))

			// The resumed client got every event after the one it had, the rest of the text included.
			rest := collect(t, resumed, time.Minute)
			requireSeq(t, rest, resumedAfter+1)
			require.Equal(t, live[firstText+1:len(live)-1], rest)
			resumedText, _ := lastText(t, append([]sseEvent{live[firstText]}, rest...))
			require.Equal(t, final.Reply, resumedText)

			// The call, whose arguments came in pieces, was made once; the tokens were counted.
			require.Equal(t, 1, testenv.CountCalls(t, shared.pool, final.RunID))
			require.Equal(t, "succeeded", final.ToolCalls[0].Status)
			var ended struct {
				Tokens struct {
					Input  int64 `json:"input_tokens"`
					Output int64 `json:"output_tokens"`
				} `json:"tokens"`
			}
			require.NoError(t, json.Unmarshal([]byte(live[firstText+pieces].Data), &ended))
			require.Positive(t, ended.Tokens.Input)
			require.EqualValues(t, 12, ended.Tokens.Output)
			for _, r := range fake.Requests() {
				require.True(t, r.Stream && r.IncludeUsage, "each LLM request asked for a stream with its usage")
			}
		})
	}
}

// TestStreamBrokenMidwayIsRetried: the fake drops the connection after two pieces of the answer. The step
// is a failed attempt, recorded in brain_turns, and retried: the client sees llm_ended with the error, then
// llm_started again (attempt 2), whose text is the reply; a client resets its pending text at each
// llm_started. Before, a stream was never asked for.
func TestStreamBrokenMidwayIsRetried(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			fake := newFake(t, provider,
				llmfake.Turn{Chunks: []string{"Let me ", "think about ", "it…"}, Gap: 150 * time.Millisecond, CutAfter: 2},
				llmfake.Turn{Chunks: []string{"All ", "done."}, Gap: 150 * time.Millisecond})
			a := llmBrain(t, provider, fake, chat.Config{})
			agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

			resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "think", "user_id": "user-1"}, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			events := collect(t, readSSE(resp.Body), time.Minute)
			var final brain.ChatResponse
			require.NoError(t, json.Unmarshal([]byte(events[len(events)-1].Data), &final))
			require.True(t, final.OK, "%+v", final.Errors)
			require.Equal(t, "All done.", final.Reply)

			started := []map[string]any{}
			firstEnded := -1
			for i, e := range events {
				var d map[string]any
				_ = json.Unmarshal([]byte(e.Data), &d)
				if e.Event == "llm_started" {
					started = append(started, d)
				}
				if e.Event == "llm_ended" && firstEnded < 0 {
					firstEnded = i
					require.EqualValues(t, 1, d["attempt"])
					require.Contains(t, fmt.Sprint(d["error"]), "stream broke", "the first attempt failed: %s", e.Data)
				}
			}
			require.Len(t, started, 2, "%v", kinds(events))
			require.EqualValues(t, 1, started[0]["iteration"])
			require.EqualValues(t, 1, started[0]["attempt"])
			require.EqualValues(t, 1, started[1]["iteration"])
			require.EqualValues(t, 2, started[1]["attempt"])
			before, _ := lastText(t, events[:firstEnded])
			require.Equal(t, "Let me think about ", before, "the broken attempt's text, up to the break")
			after, _ := lastText(t, events)
			require.Equal(t, "All done.", after, "the text after the last llm_started is the reply")

			rows, err := shared.pool.Query(context.Background(), `SELECT attempt, error IS NOT NULL, response IS NOT NULL FROM brain_turns
				WHERE run_id = $1 ORDER BY attempt`, final.RunID)
			require.NoError(t, err)
			var turns [][3]any
			for rows.Next() {
				var n int
				var failed, answered bool
				require.NoError(t, rows.Scan(&n, &failed, &answered))
				turns = append(turns, [3]any{n, failed, answered})
			}
			require.NoError(t, rows.Err())
			require.Equal(t, [][3]any{{1, true, false}, {2, false, true}}, turns, "both attempts are in brain_turns")
			require.Len(t, fake.Requests(), 2)
		})
	}
}

// secretTool is a tool with a secret input: the brain knows the password once the agent's call names it.
const secretTool = `{
	"name": "lab.login",
	"description": "Logs in to the lab with a user and a password (the password is secret).",
	"input_schema": {"type": "object", "properties": {
		"user": {"type": "string", "minLength": 1},
		"password": {"type": "string", "minLength": 8, "writeOnly": true}},
		"required": ["user", "password"], "additionalProperties": false},
	"output_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
	"permissions": ["read:external"],
	"idempotency": {"mode": "safe-retry"},
	"timeout_ms": 5000,
	"implementation": {"type": "rest", "method": "POST", "url": "http://127.0.0.1:9/login"}
}`

// registryWithTool writes the repository's registry plus tool to a file of the test's.
func registryWithTool(t *testing.T, tool string) string {
	t.Helper()
	data, err := os.ReadFile(testenv.RegistryPath())
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	var v any
	require.NoError(t, json.Unmarshal([]byte(tool), &v))
	doc["tools"] = append(doc["tools"].([]any), v)
	path := filepath.Join(t.TempDir(), "registry.json")
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// TestTextEventsKeepSecrets: a secret the agent's call named, written again by the model in its next answer
// — split across two pieces of the stream, 150 ms apart — never appears in a text event: the piece that
// could begin it is held back until the next shows it, and the value is scrubbed as the reply is. Text the
// model wrote before the call that names the secret (the same answer) is scrubbed from the stored events
// when the step is journaled, as its message is. Before, there were no text events.
func TestTextEventsKeepSecrets(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t) // its own: the tool joins the database's tool catalog
	regPath := registryWithTool(t, secretTool)
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			secret := "planted-" + strings.ReplaceAll(uuid.NewString(), "-", "")
			args, _ := json.Marshal(map[string]string{"user": "dana", "password": secret})
			fake := newFake(t, provider,
				llmfake.Turn{Chunks: []string{"Logging you in as dana with ", secret[:12], secret[12:] + "."}, Gap: 150 * time.Millisecond,
					Calls: []llmfake.Call{{ID: "l1", Name: "lab__login", Arguments: string(args)}}},
				llmfake.Turn{Chunks: []string{"Your password ", secret[:9], secret[9:], " did not work: no key."}, Gap: 150 * time.Millisecond})
			a := llmBrainWith(t, provider, fake, func(c *Config) { c.DatabaseURL, c.RegistryPath = dbURL, regPath })
			agent := agentWithSkills(t, a, 3, map[string][]string{uniq("lab"): {"lab.login"}})

			resp := openStream(t, a, http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "log me in", "user_id": "user-1"}, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			events := collect(t, readSSE(resp.Body), time.Minute)
			var final brain.ChatResponse
			require.NoError(t, json.Unmarshal([]byte(events[len(events)-1].Data), &final))
			require.Equal(t, "Your password [secret] did not work: no key.", final.Reply)
			require.Len(t, final.ToolCalls, 1)

			// Live, once the call named it: in no event, and not in their text put together.
			after := indexOf(events, "llm_ended", 0)
			require.Positive(t, after)
			text, pieces := lastText(t, events)
			require.Equal(t, final.Reply, text)
			require.GreaterOrEqual(t, pieces, 2, "the text came in pieces: %v", kinds(events))
			for _, e := range events[after:] {
				require.NotContains(t, e.Data, secret)
				require.NotContains(t, e.Data, secret[:9]+`"`, "no text event ends with the start of the secret")
			}

			// Stored: in none of the run's events, the step before the call included.
			path := "/brain/runs/" + final.RunID.String() + "/events"
			stored := collect(t, readSSE(openStream(t, a, http.MethodGet, path, nil, nil).Body), 30*time.Second)
			var all strings.Builder
			for _, e := range stored {
				require.NotContains(t, e.Data, secret, "%s event %d", e.Event, e.ID)
				if e.Event == "text" {
					all.WriteString(eventText(t, e))
				}
			}
			require.NotContains(t, all.String(), secret)
			require.Contains(t, all.String(), "Logging you in as dana with [secret].")
		})
	}
}
