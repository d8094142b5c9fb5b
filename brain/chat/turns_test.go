package chat_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestChatOneTurnAtATime: fifty messages sent at the same instant to one session. Exactly one turn runs;
// the 49 others are refused 409 naming its run, while it runs — none is admitted beside it, so no LLM
// request sees another client's message. Before, the session's guard was a check of other runs followed by
// an insert, which requests arriving together all passed.
func TestChatOneTurnAtATime(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 64), make(chan struct{})
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Blocking(llmfake.Turn{Text: "One at a time."}, asked, release))
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the chat stops: a failed test must not leave it blocked
	agent := agentWithSkills(t, b, 3, nil)
	session := "one-turn-" + uuid.NewString()

	const n = 50
	type answer struct {
		resp *brain.ChatResponse
		err  error
	}
	answers := make(chan answer, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			var an answer
			an.resp, an.err = b.chatWith(agent, "hello", session)
			answers <- an
		}()
	}
	close(start)
	var refused []answer
	for range n - 1 {
		select {
		case an := <-answers:
			require.Equal(t, brain.ECONFLICT, brain.ErrorCode(an.err), "a second turn was admitted beside the first: %+v %v", an.resp, an.err)
			refused = append(refused, an)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d requests were answered while the turn ran", len(refused), n-1)
		}
	}
	once.Do(func() { close(release) })
	admitted := <-answers
	require.NoError(t, admitted.err)
	require.Equal(t, "One at a time.", admitted.resp.Reply)
	for _, an := range refused {
		var e *brain.Error
		require.ErrorAs(t, an.err, &e)
		require.Equal(t, brain.ECONFLICT, e.Code)
		require.Equal(t, admitted.resp.RunID.String(), fmt.Sprint(e.Details.(map[string]any)["run_id"]), "the refusal names the running turn")
	}
	require.Len(t, fake.Requests(), 1, "one LLM request, with one user message")
	require.Len(t, asked, 1)

	// The turn over, the session takes the next message.
	fake.Push(llmfake.Turn{Text: "Next."})
	next, err := b.chatWith(agent, "and now?", session)
	require.NoError(t, err)
	require.Equal(t, "Next.", next.Reply)
}

// TestChatIfBusyEnqueue: two messages sent while a turn runs, with "if_busy": "enqueue", wait behind it
// instead of being refused, and run after it, in the order they came: each LLM request sees the turns
// before it whole, never two user messages in a row. Before, if_busy was an unknown property (400).
func TestChatIfBusyEnqueue(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}, 4), make(chan struct{})
	roles := func(req *llmfake.Request) []string {
		out := []string{}
		for _, m := range req.Messages {
			out = append(out, m.Role+":"+m.Content)
		}
		return out
	}
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Blocking(llmfake.Turn{Text: "first"}, asked, release),
		llmfake.Turn{Text: "second", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Equal(t, []string{"user:one", "assistant:first", "user:two"}, roles(req))
		}},
		llmfake.Turn{Text: "third", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Equal(t, []string{"user:one", "assistant:first", "user:two", "assistant:second", "user:three"}, roles(req))
		}})
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	b.chat.TestSignals.TurnQueued.Init(t)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	agent := agentWithSkills(t, b, 3, nil)
	session := "queue-" + uuid.NewString()

	type answer struct {
		resp *brain.ChatResponse
		err  error
	}
	send := func(message string, ifBusy string, out chan<- answer) {
		var an answer
		an.resp, an.err = b.chat.Chat(context.Background(), agent, &brain.ChatParams{Message: message, UserID: "user-1", SessionID: session, IfBusy: ifBusy}, requester)
		out <- an
	}
	// queued waits for the chat to queue the turn just sent, the session's nth behind the running one.
	queued := func(n int) {
		b.chat.TestSignals.TurnQueued.Wait()
		var got int
		require.NoError(t, b.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM brain_runs WHERE conversation_id = $1 AND status = 'queued'`, session).Scan(&got))
		require.Equal(t, n, got)
	}
	one, two, three := make(chan answer, 1), make(chan answer, 1), make(chan answer, 1)
	go send("one", "", one)
	<-asked
	go send("two", "enqueue", two)
	queued(1)
	go send("three", "enqueue", three)
	queued(2)
	_, err := b.chatWith(agent, "four", session)
	require.Equal(t, brain.ECONFLICT, brain.ErrorCode(err), "without if_busy a busy session still refuses: %v", err)
	once.Do(func() { close(release) })

	for i, ch := range []chan answer{one, two, three} {
		an := <-ch
		require.NoError(t, an.err, "message %d", i+1)
		require.True(t, an.resp.OK, "message %d: %+v", i+1, an.resp.Errors)
		require.Equal(t, []string{"first", "second", "third"}[i], an.resp.Reply)
		require.Equal(t, brain.RunCompleted, an.resp.Status)
	}
	require.Zero(t, fake.Remaining())
}
