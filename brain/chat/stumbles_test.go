package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// stumbleRow is one row of brain_tool_stumbles.
type stumbleRow struct {
	Calls, Stumbles, Validation, Unknown, NotEnabled, Searches int
	Rate                                                       float64
	Property                                                   *string
	ValidationRuns, UnknownRuns, NotEnabledRuns, SearchRuns    []uuid.UUID
	UnknownNames                                               []string
}

// stumblesOf reads brain_tool_stumbles over the last hour for one agent, by tool.
func stumblesOf(t *testing.T, b *testBundle, agent string) map[string]stumbleRow {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT tool, calls, stumbles, stumble_rate::float8, validation_errors, validation_property,
			coalesce(validation_runs, '{}'), unknown_tool, coalesce(unknown_tool_runs, '{}'), coalesce(unknown_names, '{}'), tool_not_enabled,
			coalesce(tool_not_enabled_runs, '{}'), searches_no_call, coalesce(search_runs, '{}')
		FROM brain_tool_stumbles(now() - interval '1 hour') WHERE agent = $1`, agent)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]stumbleRow{}
	for rows.Next() {
		var tool string
		var r stumbleRow
		require.NoError(t, rows.Scan(&tool, &r.Calls, &r.Stumbles, &r.Rate, &r.Validation, &r.Property, &r.ValidationRuns,
			&r.Unknown, &r.UnknownRuns, &r.UnknownNames, &r.NotEnabled, &r.NotEnabledRuns, &r.Searches, &r.SearchRuns))
		out[tool] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// TestChatStumbles: an agent's refused calls (arguments that break the schema, a tool it may not use, a tool
// that does not exist), a call whose receipt failed validation, and a turn that searched for tools and made
// no call are counted in gem_brain_tool_stumbles_total as the chat refuses or reads them, and are ranked by
// brain_tool_stumbles per tool and agent, with the first violation's property and the runs to look at.
func TestChatStumbles(t *testing.T) {
	// Not in parallel: a chat resumes any run of the shared database whose brain lapsed, and this test's fakes
	// must answer only its own turns.
	ctx := context.Background()
	refusing := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{
			{ID: "bad_input", Name: "os__create_task", Arguments: `{"title": "", "domain": "business", "priority": "whenever", "description": null, "due_at": null, "context_ref": null}`},
			{ID: "not_enabled", Name: "os__create_note", Arguments: `{"domain": "business", "title": "secret", "content": "x"}`},
			{ID: "unknown", Name: "rockets__launch", Arguments: `{}`},
			{ID: "unknown2", Name: "rockets__land", Arguments: `{}`},
			{ID: "unknown3", Name: "crm__find_person", Arguments: `{}`},
			{ID: "good", Name: "os__create_task", Arguments: `{"title": "call the supplier", "domain": "business", "priority": null, "description": null, "due_at": null, "context_ref": null}`},
		}},
		llmfake.Turn{Text: "One task created."},
	)
	searching := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "remind me to ring the supplier", "limit": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d", Name: "describe_tool", Arguments: `{"name": "os__create_task"}`}}},
		llmfake.Turn{Text: "I could not work out how to do that."},
	)
	b := setup(t, llmconfig.ProviderOpenAI, refusing, chat.Config{})
	meta := setup(t, llmconfig.ProviderOpenAI, searching, chat.Config{ToolSearchThreshold: 1})
	reg := prometheus.NewRegistry()
	require.NoError(t, b.chat.CountStumbles(reg))
	require.NoError(t, meta.chat.CountStumbles(reg), "a second chat shares the counter")
	agent := agentWithSkills(t, b, 4, map[string][]string{uniq("tasks"): {"os.create_task", "os.list_tasks"}})

	refused := answered(t, b, agent, "do several things")
	searched, err := meta.chatWith(agent, "remind me to ring the supplier", "")
	require.NoError(t, err)
	require.True(t, searched.OK, "%+v", searched.Errors)
	require.Empty(t, searched.ToolCalls[len(searched.ToolCalls)-1].CallID, "the turn made no call")
	// A call made for the agent outside a chat, which the executor refuses on its schema.
	made, err := gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.create_task", RunID: &refused.RunID, Agent: agent, UserID: "user-1",
		Input: json.RawMessage(`{"title": "x", "domain": "business", "priority": "whenever"}`)})
	require.NoError(t, err)
	require.Equal(t, registry.CodeValidation, b.receipt(t, made[0].ID, 10*time.Second).Error.Code)

	counted := func(tool, reason string) float64 {
		return stumbleCount(t, reg, tool, agent, reason)
	}
	require.Equal(t, 1.0, counted("os.create_task", chat.StumbleValidation), "the chat's refusal; the receipt it never read is not counted")
	require.Equal(t, 1.0, counted("os.create_note", chat.StumbleNotEnabled))
	require.Equal(t, 3.0, counted(chat.StumbleToolUnknown, chat.StumbleUnknownTool), "a made-up name is not a label")
	require.Equal(t, 1.0, counted("os.create_task", chat.StumbleSearchNoCall), "the tool described last")

	got := stumblesOf(t, b, agent)
	task := got["os.create_task"]
	require.Equal(t, 3, task.Calls, "the refused call, the good one and the one the executor refused")
	require.Equal(t, 2, task.Validation)
	require.Equal(t, "/priority", *task.Property)
	require.ElementsMatch(t, []uuid.UUID{refused.RunID, refused.RunID}, task.ValidationRuns)
	require.Equal(t, 1, task.Searches)
	require.Equal(t, []uuid.UUID{searched.RunID}, task.SearchRuns)
	require.Equal(t, 3, task.Stumbles)
	require.InDelta(t, 0.75, task.Rate, 0.001)
	require.Equal(t, 1, got["os.create_note"].NotEnabled)
	require.Equal(t, []uuid.UUID{refused.RunID}, got["os.create_note"].NotEnabledRuns)
	unknown := got[chat.StumbleToolUnknown]
	require.Equal(t, 3, unknown.Unknown, "made-up names are one row, as they are one label")
	require.Equal(t, []string{"crm.find_person", "rockets.land", "rockets.launch"}, unknown.UnknownNames, "with the names the model gave")
	require.Equal(t, []uuid.UUID{refused.RunID, refused.RunID, refused.RunID}, unknown.UnknownRuns)
	require.Len(t, got, 3)

	// A caller who made none of these runs reads none of them.
	var others int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM brain_tool_stumbles(now() - interval '1 hour', now(), 'someone-else') WHERE agent = $1`, agent).Scan(&others))
	require.Zero(t, others)
}

// stumbleCount reads one series of the stumbles counter from reg, 0 when it was never counted.
func stumbleCount(t *testing.T, reg *prometheus.Registry, tool, agent, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != chat.MetricToolStumbles {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tool"] == tool && labels["agent"] == agent && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// searchingChat is a chat on fake that searches for tools (chat.Config{} for one that offers them all), its
// stumbles counted in a registry of their own, and an agent of it with tools and max_tool_iterations.
func searchingChat(t *testing.T, fake *llmfake.Server, cfg chat.Config, iterations int, tools ...string) (*testBundle, *prometheus.Registry, string) {
	t.Helper()
	b := setup(t, llmconfig.ProviderOpenAI, fake, cfg)
	reg := prometheus.NewRegistry()
	require.NoError(t, b.chat.CountStumbles(reg))
	return b, reg, agentWithSkills(t, b, iterations, map[string][]string{uniq("tasks"): tools})
}

// searchConfig is a chat whose agents search for their tools, and are told when none fits.
var searchConfig = chat.Config{ToolSearchThreshold: 1, ToolSearchMinCoverage: 0.14}

// answered sends one turn to an agent and requires its answer.
func answered(t *testing.T, b *testBundle, agent, message string) *brain.ChatResponse {
	t.Helper()
	resp, err := b.chatWith(agent, message, "")
	require.NoError(t, err)
	require.True(t, resp.OK, "%+v", resp.Errors)
	return resp
}

// stumbleRows is each brain_tool_stumbles row of an agent over the last hour as "tool stumbles
// validation_errors unknown_tool searches_no_call", by tool.
func stumbleRows(t *testing.T, b *testBundle, agent string) []string {
	t.Helper()
	rows := stumblesOf(t, b, agent)
	var out []string
	for _, tool := range slices.Sorted(maps.Keys(rows)) {
		r := rows[tool]
		out = append(out, fmt.Sprintf("%s %d %d %d %d", tool, r.Stumbles, r.Validation, r.Unknown, r.Searches))
	}
	return out
}

// searchNoCallRuns are the runs of an agent that searched and made no call, as brain_tool_attempts reads them.
func searchNoCallRuns(t *testing.T, b *testBundle, agent string) []uuid.UUID {
	t.Helper()
	var runs []uuid.UUID
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT coalesce(array_agg(run_id), '{}') FROM brain_tool_attempts
		WHERE agent = $1 AND reason = 'search_no_call'`, agent).Scan(&runs))
	return runs
}

// TestChatToldNoToolFitsDidNotStumble: a turn whose search answered that no tool fits, and which then answered
// without a call, did what it was told: neither the metric nor brain_tool_stumbles counts it; a turn whose last
// search found tools and which made no call still stumbled. The auditor reads the attempts without the chat's
// queries.
func TestChatToldNoToolFitsDidNotStumble(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	ctx := context.Background()
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s1", Name: "search_tools", Arguments: `{"query": "reserve a table for 6 at the Royal Hotel Friday night", "limit": null}`}}},
		llmfake.Turn{Text: "I can't book restaurants.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["s1"].Content, `"fits":false`)
		}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s2", Name: "search_tools", Arguments: `{"query": "add a task to ring the supplier", "limit": null}`}}},
		llmfake.Turn{Text: "I could not work out how to do that.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["s2"].Content, `"fits":true`)
		}},
	)
	b, reg, agent := searchingChat(t, fake, searchConfig, 4, "os.create_task", "os.list_tasks")
	answered(t, b, agent, "book us a table at the Royal on Friday")
	lost := answered(t, b, agent, "add a task to ring the supplier")

	require.Equal(t, 1.0, stumbleCount(t, reg, chat.StumbleToolNone, agent, chat.StumbleSearchNoCall), "only the turn whose search found tools")
	require.Equal(t, []uuid.UUID{lost.RunID}, searchNoCallRuns(t, b, agent))

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL ROLE gem_auditor`)
	require.NoError(t, err)
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT run_id, reason FROM brain_tool_attempts WHERE agent = $1) a`, agent).Scan(&n))
	require.Equal(t, 1, n)
	_, err = tx.Exec(ctx, `SELECT query FROM brain_tool_attempts`)
	require.ErrorContains(t, err, "permission denied")
}

// TestChatSearchAfterNoFitDecides: after a search told no tool fits, the turn's last search or description
// decides, for the metric as for brain_tool_stumbles: a search whose arguments are not JSON answered nothing,
// so a turn that then made no call stumbled, on both.
func TestChatSearchAfterNoFitDecides(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "reserve a table for 6 at the Royal Hotel Friday night", "limit": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "broken", Name: "search_tools", Arguments: `{"query": "book a table`}}, Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["s"].Content, `"fits":false`)
		}},
		llmfake.Turn{Text: "I can't book restaurants.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["broken"].Content, "not valid JSON")
		}},
	)
	b, reg, agent := searchingChat(t, fake, searchConfig, 4, "os.create_task", "os.list_tasks")
	resp := answered(t, b, agent, "book us a table at the Royal on Friday")
	require.Zero(t, fake.Remaining())

	require.Equal(t, []uuid.UUID{resp.RunID}, searchNoCallRuns(t, b, agent))
	require.Equal(t, 1.0, stumbleCount(t, reg, chat.StumbleToolNone, agent, chat.StumbleSearchNoCall), "as brain_tool_stumbles counts it")
}

// TestChatMadeUpToolTooLongIsUnknown: a model that makes up a tool and sends it more arguments than a call may
// have called a tool that does not exist: one (unknown) row per agent on the stumbles page, as the metric
// labels it, not a row per name it invents.
func TestChatMadeUpToolTooLongIsUnknown(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	huge := `{"payload": "` + strings.Repeat("x", 70<<10) + `"}`
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "a", Name: "rockets__launch", Arguments: huge}, {ID: "b", Name: "moon__land", Arguments: huge}}},
		llmfake.Turn{Text: "I cannot do that."},
	)
	b, reg, agent := searchingChat(t, fake, chat.Config{}, 2, "os.list_tasks")
	answered(t, b, agent, "launch the rockets")
	require.Zero(t, fake.Remaining())

	require.Equal(t, []string{chat.StumbleToolUnknown}, slices.Collect(maps.Keys(stumblesOf(t, b, agent))), "one row, whatever the names")
	require.Equal(t, 2.0, stumbleCount(t, reg, chat.StumbleToolUnknown, agent, chat.StumbleUnknownTool), "as the page counts them")
}

// TestChatDescribingMadeUpToolsIsOneSearch: a turn that describes tools that do not exist and makes no call
// stumbled once, searching: the stumbles page counts no call of a tool named describe_tool, and no row for
// each name the model made up, as the metric counts one search with no tool described.
func TestChatDescribingMadeUpToolsIsOneSearch(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d1", Name: "describe_tool", Arguments: `{"name": "calendar__book"}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d2", Name: "describe_tool", Arguments: `{"name": "moon__land"}`}}},
		llmfake.Turn{Text: "I can't book restaurants.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["d2"].Content, `"unknown_tool"`)
		}},
	)
	b, reg, agent := searchingChat(t, fake, searchConfig, 4, "os.create_task", "os.list_tasks")
	answered(t, b, agent, "book us a table at the Royal on Friday")
	require.Zero(t, fake.Remaining())

	require.Equal(t, []string{" 1 0 0 1"}, stumbleRows(t, b, agent), "one search with no tool described: tool, stumbles, validation_errors, unknown_tool, searches_no_call")
	require.Equal(t, 1.0, stumbleCount(t, reg, chat.StumbleToolNone, agent, chat.StumbleSearchNoCall), "as the metric counts it")
	require.Zero(t, stumbleCount(t, reg, chat.StumbleToolUnknown, agent, chat.StumbleSearchNoCall))
}

// TestChatSearchWithoutWordsIsRefused: search_tools with no words searched nothing, so it is refused, as GET
// /brain/tools?q= refuses an empty q: answering that no tool fits would tell the model something false, and
// leave the turn out of the stumbles.
func TestChatSearchWithoutWordsIsRefused(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "  ", "limit": null}`}}},
		llmfake.Turn{Text: "I could not find a way.", Check: func(t require.TestingT, req *llmfake.Request) {
			content := req.ToolResults()["s"].Content
			require.Contains(t, content, `"validation_error"`)
			require.Contains(t, content, "query must say what the tool should do, in words")
			require.NotContains(t, content, "fits")
		}},
	)
	b, reg, agent := searchingChat(t, fake, searchConfig, 4, "os.create_task", "os.list_tasks")
	answered(t, b, agent, "add a task to ring the supplier")
	require.Zero(t, fake.Remaining())
	require.Equal(t, 1.0, stumbleCount(t, reg, chat.StumbleToolNone, agent, chat.StumbleSearchNoCall), "a search that found nothing to call")
}

// TestChatSearchTooLongIsASearch: a search_tools call with more arguments than a call may have is refused
// unread, and is still the turn's search: with no call after it the turn stumbled once, searching, on the
// stumbles page as in the metric, and no tool of the registry was called.
func TestChatSearchTooLongIsASearch(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	huge := `{"query": "` + strings.Repeat("task ", 14<<10) + `", "limit": null}`
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: huge}}},
		llmfake.Turn{Text: "I could not find a way.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["s"].Content, "one call may have")
		}},
	)
	b, reg, agent := searchingChat(t, fake, searchConfig, 4, "os.create_task", "os.list_tasks")
	answered(t, b, agent, "add a task to ring the supplier")
	require.Zero(t, fake.Remaining())

	require.Equal(t, []string{" 1 0 0 1"}, stumbleRows(t, b, agent), "tool, stumbles, validation_errors, unknown_tool, searches_no_call")
	require.Equal(t, 1.0, stumbleCount(t, reg, chat.StumbleToolNone, agent, chat.StumbleSearchNoCall), "as the page counts it")
	require.Zero(t, stumbleCount(t, reg, chat.StumbleToolUnknown, agent, chat.StumbleValidation), "search_tools is no tool of the registry")
}

// TestChatBrainsOwnToolNotOfferedIsASearch: a model that calls search_tools where the run does not offer it is
// refused, and stumbled over no tool of the registry: it searched and made no call, on the stumbles page as in
// the metric.
func TestChatBrainsOwnToolNotOfferedIsASearch(t *testing.T) {
	// Not in parallel, as TestChatStumbles.
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "add a task", "limit": null}`}}},
		llmfake.Turn{Text: "Which task?", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["s"].Content, `"unknown_tool"`)
		}},
	)
	b, reg, agent := searchingChat(t, fake, chat.Config{}, 2, "os.create_task", "os.list_tasks")
	answered(t, b, agent, "add a task")
	require.Zero(t, fake.Remaining())

	require.Equal(t, []string{" 1 0 0 1"}, stumbleRows(t, b, agent), "tool, stumbles, validation_errors, unknown_tool, searches_no_call")
	require.Equal(t, 1.0, stumbleCount(t, reg, chat.StumbleToolNone, agent, chat.StumbleSearchNoCall), "as the page counts it")
	require.Zero(t, stumbleCount(t, reg, chat.StumbleToolUnknown, agent, chat.StumbleUnknownTool))
}
