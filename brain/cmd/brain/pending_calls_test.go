package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestChatReportsCallsThatFinishLater: a call still running when its turn's wait ends is told to the agent
// as pending; at the next turn, its tool message holds its result and the turn's message says it finished
// (response "finished"). Before, the agent was never told: its history kept "still running" for good.
func TestChatReportsCallsThatFinishLater(t *testing.T) {
	t.Parallel()
	create := llmfake.Turn{Calls: []llmfake.Call{{ID: "t1", Name: "os__create_task", Arguments: `{"title": "ring Dee", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}}
	fake := llmfake.NewOpenAI(t, fakeKey, create,
		llmfake.Turn{Text: "It is being made.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.Messages[len(req.Messages)-1].Content, `"status":"pending"`)
		}},
		llmfake.Turn{Text: "Yes, Dee is on your list.", Check: func(t require.TestingT, req *llmfake.Request) {
			var tool, user string
			for _, m := range req.Messages {
				if m.Role == "tool" {
					tool = m.Content
				}
				if m.Role == "user" {
					user = m.Content
				}
			}
			require.Contains(t, tool, `"status":"succeeded"`, "the pending result is replaced by the receipt's")
			require.True(t, strings.HasPrefix(user, "[GEM] Calls you made earlier that were still running have finished"), user)
			require.True(t, strings.HasSuffix(user, "did it work?"), user)
		}})
	// A wait that ends at once: the call is pending when the turn answers.
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{WaitTimeout: time.Nanosecond})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})

	first, status := chatWith(t, a, agent, "add a task to ring Dee", "")
	require.Equal(t, http.StatusOK, status, "%+v", first.Errors)
	require.Len(t, first.ToolCalls, 1)
	require.Equal(t, brain.ChatCallPending, first.ToolCalls[0].Status)
	var call struct {
		Receipt *registry.Receipt `json:"receipt"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls/"+first.ToolCalls[0].CallID.String()+"?wait=10s", nil, &call))
	require.NotNil(t, call.Receipt)

	second, status := chatWith(t, a, agent, "did it work?", first.SessionID)
	require.Equal(t, http.StatusOK, status, "%+v", second.Errors)
	require.Equal(t, "Yes, Dee is on your list.", second.Reply)
	require.Equal(t, []brain.ChatDecided{{CallID: *first.ToolCalls[0].CallID, Tool: "os.create_task", Status: "succeeded"}}, second.Finished)
	require.Zero(t, fake.Remaining())
}
