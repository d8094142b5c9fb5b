package chat_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// approvalPolicy makes every call of a tool declaring permission wait for a person (only agents' calls with
// agentsOnly), on the package's shared database, until the test ends.
func approvalPolicy(t *testing.T, pool *pgxpool.Pool, permission string, agentsOnly bool, expiresMS int) {
	t.Helper()
	ctx := context.Background()
	var policy int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_approval_policies (permission, agents_only, expires_ms, note)
		VALUES ($1, $2, $3, $4) RETURNING id`, permission, agentsOnly, expiresMS, t.Name()).Scan(&policy))
	t.Cleanup(func() { _, _ = pool.Exec(ctx, `DELETE FROM core_approval_policies WHERE id = $1`, policy) })
}

// TestApprovalsInChat: an agent's call a policy holds for approval is not waited for: the LLM is told
// "awaiting approval, call id …" at once, the run answers, and the call runs once a person approves it.
func TestApprovalsInChat(t *testing.T) {
	t.Parallel()

	var waiting, waiting2 map[string]any
	var told, told2 string
	lastUser := func(req *llmfake.Request) string {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				return req.Messages[i].Content
			}
		}
		return ""
	}
	listReminders := `{"when": null, "within_hours": null, "limit": null, "domain": null}`
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "r1", Name: "os__list_reminders", Arguments: listReminders}}},
		llmfake.Turn{Text: "Listing your reminders needs approval first.", Check: func(t require.TestingT, req *llmfake.Request) {
			waiting = resultOf(t, req.ToolResults()["r1"])
			require.Equal(t, "awaiting_approval", waiting["status"])
			require.Contains(t, waiting["message"], "awaiting approval, call id")
		}},
		// The resume: a turn of its own, whose user message is the decision.
		llmfake.Turn{Text: "You have no reminders.", Check: func(t require.TestingT, req *llmfake.Request) { told = lastUser(req) }},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "r2", Name: "os__list_reminders", Arguments: listReminders}}},
		llmfake.Turn{Text: "That needs approval again.", Check: func(t require.TestingT, req *llmfake.Request) {
			waiting2 = resultOf(t, req.ToolResults()["r2"])
		}},
		// The next message carries the rejection before what the user says.
		llmfake.Turn{Text: "Understood.", Check: func(t require.TestingT, req *llmfake.Request) { told2 = lastUser(req) }},
	)
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	approvalPolicy(t, b.pool, "read:reminders", true, 60000)
	agent := agentWithSkills(t, b, 3, map[string][]string{uniq("reminders"): {"os.list_reminders"}})
	start := time.Now()
	resp, err := b.chatWith(agent, "what reminders do I have?", "")
	require.NoError(t, err)
	require.Less(t, time.Since(start), 10*time.Second, "the chat does not wait for a decision")
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, brain.ChatCallAwaitingApproval, resp.ToolCalls[0].Status)
	id := resp.ToolCalls[0].CallID.String()
	require.Equal(t, id, waiting["call_id"])

	_, err = gemsql.CallDecide(context.Background(), b.pool, *resp.ToolCalls[0].CallID, true, "fine", requester)
	require.NoError(t, err)
	receipt := b.receipt(t, *resp.ToolCalls[0].CallID, 20*time.Second)
	require.Equal(t, registry.StatusSucceeded, receipt.Status, "%+v", receipt.Error)
	call, err := gemsql.CallGet(context.Background(), b.pool, *resp.ToolCalls[0].CallID)
	require.NoError(t, err)
	require.Equal(t, agent, call.Agent)
	require.Equal(t, "tester", call.RequestedBy, "the agent acts for the caller who spoke to it")

	// Resuming the session tells the agent the decision, once.
	resume := func() (*brain.ChatResponse, error) {
		return b.chat.Chat(context.Background(), agent, &brain.ChatParams{Resume: true, UserID: "user-1", SessionID: resp.SessionID}, requester)
	}
	resumed, err := resume()
	require.NoError(t, err)
	require.Equal(t, "You have no reminders.", resumed.Reply)
	require.Len(t, resumed.Decided, 1)
	require.Equal(t, id, resumed.Decided[0].CallID.String())
	require.Equal(t, "succeeded", resumed.Decided[0].Status)
	require.Contains(t, told, id)
	require.Contains(t, told, `"status":"succeeded"`)
	_, err = resume()
	require.Equal(t, brain.ECONFLICT, brain.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "nothing to resume")

	// A rejection is told with the next message, before it.
	resp, err = b.chatWith(agent, "list them again", resp.SessionID)
	require.NoError(t, err)
	id2 := fmt.Sprint(waiting2["call_id"])
	_, err = gemsql.CallDecide(context.Background(), b.pool, uuid.MustParse(id2), false, "not now", requester)
	require.NoError(t, err)
	resp, err = b.chatWith(agent, "ok, thanks", resp.SessionID)
	require.NoError(t, err)
	require.Len(t, resp.Decided, 1)
	require.Equal(t, "rejected", resp.Decided[0].ErrorCode)
	require.Contains(t, told2, id2)
	require.Contains(t, told2, "not now")
	require.True(t, strings.HasSuffix(told2, "ok, thanks"), "the user's message follows the decisions: %s", told2)
}

// TestCallerPermissionsInChat: an agent acts for the caller who spoke to it, never with more: a write the
// caller may not make fails permission_denied in the agent's tool result, and the LLM is told why.
func TestCallerPermissionsInChat(t *testing.T) {
	t.Parallel()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "w", Name: "os__create_task", Arguments: `{"title": "not mine to make", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`}}},
		llmfake.Turn{Text: "I may not create tasks for you.", Check: func(t require.TestingT, req *llmfake.Request) {
			res := resultOf(t, req.ToolResults()["w"])
			require.Equal(t, "failed", res["status"])
			require.Equal(t, string(registry.CodePermissionDenied), res["error"].(map[string]any)["code"])
			require.Contains(t, res["error"].(map[string]any)["message"], "write:db")
		}},
	)
	b := setup(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	agent := agentWithSkills(t, b, 3, map[string][]string{uniq("tasks"): {"os.create_task"}})
	name := uniq("caller")
	require.NoError(t, gemsql.CallerEnsure(context.Background(), b.pool, name, gemsql.CallerToken, []string{"read:*"}, "made by "+t.Name()))
	resp, err := b.chat.Chat(context.Background(), agent, &brain.ChatParams{Message: "add a task for me", UserID: "user-1"}, name)
	require.NoError(t, err)
	require.Equal(t, "I may not create tasks for you.", resp.Reply)
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, string(registry.StatusFailed), resp.ToolCalls[0].Status)
	call, err := gemsql.CallGet(context.Background(), b.pool, *resp.ToolCalls[0].CallID)
	require.NoError(t, err)
	require.Equal(t, name, call.RequestedBy)
	require.Equal(t, agent, call.Agent)
}
