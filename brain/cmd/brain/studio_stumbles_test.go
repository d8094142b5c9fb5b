package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/gemhq/gem/sql/telemetry/telemetrytest"
	"github.com/stretchr/testify/require"
)

// TestStudioStumblesInBrowser: after an agent's calls are refused (arguments that break the schema, a tool it
// may not use, a tool that does not exist) and another agent searches for a tool and makes no call, the
// studio's "Where agents stumble" page ranks them, names the property the arguments got wrong and links to
// the runs, which open. A caller without audit sees none of the runs it did not make. The page's
// screenshot is studio-stumbles.png in GEM_STUDIO_SCREENSHOTS (docs/studio.md).
func TestStudioStumblesInBrowser(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{
			{ID: "bad_input", Name: "os__create_task", Arguments: `{"title": "Ring the supplier", "domain": "business", "priority": "asap", "description": null, "due_at": null, "context_ref": null}`},
			{ID: "not_enabled", Name: "os__create_note", Arguments: `{"domain": "business", "title": "supplier", "content": "ring them"}`},
			{ID: "unknown", Name: "calendar__book", Arguments: `{}`},
		}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "good", Name: "os__create_task", Arguments: `{"title": "Ring the supplier", "domain": "business", "priority": "high", "description": null, "due_at": null, "context_ref": null}`}}},
		llmfake.Turn{Text: "A task to ring the supplier is set."},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "what is the weather tomorrow", "limit": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d", Name: "describe_tool", Arguments: `{"name": "os__list_tasks"}`}}},
		llmfake.Turn{Text: "I cannot tell the weather."},
	)
	a := llmBrainOn(t, dbURL, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{ToolSearchThreshold: 3} })

	tasks := agentWithSkills(t, a, 4, map[string][]string{uniq("tasks"): {"os.create_task", "os.list_tasks"}})
	refused, status := chatWith(t, a, tasks, "remind me to ring the supplier", "")
	require.Equal(t, http.StatusOK, status, "%+v", refused.Errors)
	searcher := agentWithSkills(t, a, 4, map[string][]string{uniq("many"): {"os.create_task", "os.list_tasks", "os.create_note", "os.search_notes"}})
	searched, status := chatWith(t, a, searcher, "what's the weather doing tomorrow?", "")
	require.Equal(t, http.StatusOK, status, "%+v", searched.Errors)
	require.Zero(t, fake.Remaining())

	// A caller without audit reads only what it made: none of these.
	_, other := addCaller(t, a, []string{"read:*"}, nil)
	s := newStudioClient(t, a.url)
	s.login(other.token)
	code, body := s.get("/studio/stumbles")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No agent stumbled in this window.")
	require.NotContains(t, body, tasks)
	code, _ = s.get("/studio/stumbles?since=forever")
	require.Equal(t, http.StatusBadRequest, code)

	b := &browserSteps{t: t, ctx: headlessChromium(t), base: a.url, dir: screenshotDir(t)}
	b.do("login page", chromedp.Navigate(b.base+"/studio/stumbles"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do("log in", chromedp.SendKeys(chromedp.ID("token"), testToken))
	b.submit("log in", "login-form", `location.pathname === "/studio/stumbles" && document.getElementById("stumbles") !== null`)
	require.Equal(t, "/studio/stumbles", b.location())
	require.Equal(t, "Stumbles", b.text("nav a.on"))

	task := fmt.Sprintf(`#stumbles tr[data-tool="os.create_task"][data-agent=%q]`, tasks)
	require.Contains(t, b.text(task+" .rate"), "50%", "one of its two attempts stumbled")
	require.Contains(t, b.text(task+" .reason-validation"), "1 on /priority")
	require.Contains(t, b.text(fmt.Sprintf(`#stumbles tr[data-tool="os.create_note"][data-agent=%q] .reason-not-enabled`, tasks)), "1")
	unknown := b.text(fmt.Sprintf(`#stumbles tr[data-tool="(unknown)"][data-agent=%q] .reason-unknown`, tasks))
	require.Contains(t, unknown, "1 as calendar.book", "a made-up name is one row with the other names no tool has, saying the name")
	require.Contains(t, unknown, refused.RunID.String()[len(refused.RunID.String())-8:], "and linking its run")
	require.Contains(t, b.text(fmt.Sprintf(`#stumbles tr[data-tool="os.list_tasks"][data-agent=%q] .reason-search`, searcher)), "1")
	// The tools every attempt of which stumbled come first.
	first := b.text(`#stumbles tbody tr:first-child .rate`)
	require.Contains(t, first, "100%")
	b.shot("studio-stumbles")

	b.do("open an example run", chromedp.Click(chromedp.CSS(task+" .reason-validation a")), chromedp.WaitVisible(chromedp.ID("run-status")))
	require.Equal(t, "/studio/runs/"+refused.RunID.String(), b.location())
}

// TestStumblesScraped: the brain serves gem_brain_tool_stumbles_total on /metrics, a made-up tool's name
// counted under one label.
func TestStumblesScraped(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "a", Name: "rockets__launch", Arguments: `{}`}, {ID: "b", Name: "moon__land", Arguments: `{}`}}},
		llmfake.Turn{Text: "I cannot do that."})
	m, err := startBrain(dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("tasks"): {"os.list_tasks"}})
	resp, status := chatWith(t, a, agent, "launch the rockets", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)

	f, status, err := telemetrytest.Scrape(m.Server.URL()+"/metrics", testToken)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 2.0, f.Value(chat.MetricToolStumbles, "tool", chat.StumbleToolUnknown, "agent", agent, "reason", chat.StumbleUnknownTool))
	require.NotContains(t, f.AllLabelValues(), "rockets.launch")
}

// TestStudioStumblesAttemptsAddUp: the stumbles page counts as a tool's attempts every attempt its rate
// divides by, the searches that described it and made no call included: one call that worked and one such
// search are two attempts, one of which stumbled.
func TestStudioStumblesAttemptsAddUp(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	task := `{"title": "Ring the supplier", "domain": "business", "priority": "high", "description": null, "due_at": null, "context_ref": null}`
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s1", Name: "search_tools", Arguments: `{"query": "add a task", "limit": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d1", Name: "describe_tool", Arguments: `{"name": "os__create_task"}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c1", Name: "os__create_task", Arguments: task}}},
		llmfake.Turn{Text: "Done."},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s2", Name: "search_tools", Arguments: `{"query": "add a task", "limit": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d2", Name: "describe_tool", Arguments: `{"name": "os__create_task"}`}}},
		llmfake.Turn{Text: "Which supplier?"},
	)
	a := llmBrainOn(t, dbURL, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{ToolSearchThreshold: 3} })
	agent := agentWithSkills(t, a, 6, map[string][]string{uniq("many"): {"os.create_task", "os.list_tasks", "os.create_note", "os.search_notes"}})
	for _, message := range []string{"remind me to ring the supplier", "remind me to ring them"} {
		resp, status := chatWith(t, a, agent, message, "")
		require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	}
	require.Zero(t, fake.Remaining())

	s := newStudioClient(t, a.url)
	s.login(testToken)
	code, body := s.get("/studio/stumbles")
	require.Equal(t, http.StatusOK, code)
	row := regexp.MustCompile(`(?s)<tr data-tool="os.create_task" data-agent="` + regexp.QuoteMeta(agent) + `">.*?</tr>`).FindString(body)
	require.NotEmpty(t, row, body)
	cells := regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row, -1)
	require.Len(t, cells, 8, row)
	require.Equal(t, "2", strings.TrimSpace(cells[2][1]), "attempts: %s", row)
	require.Contains(t, cells[3][1], "50%", row)
	require.Contains(t, cells[3][1], "(1)", row)
	require.Contains(t, cells[7][1], "1", row)
}

// TestStudioStumblesNotAnOutage: a turn that searched for tools and then failed (the model's provider
// refused the next request) is not a search that found nothing to call: the stumbles page lists nothing, as
// the metric counts nothing.
func TestStudioStumblesNotAnOutage(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "list my tasks", "limit": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "d", Name: "describe_tool", Arguments: `{"name": "os__list_tasks"}`}}},
		llmfake.Turn{Fail: &llmfake.Failure{Status: http.StatusBadRequest, Message: "the request is not valid"}},
	)
	a := llmBrainOn(t, dbURL, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{ToolSearchThreshold: 3} })
	agent := agentWithSkills(t, a, 6, map[string][]string{uniq("many"): {"os.create_task", "os.list_tasks", "os.create_note", "os.search_notes"}})
	chatWith(t, a, agent, "what's on my list?", "")
	require.Zero(t, fake.Remaining())

	s := newStudioClient(t, a.url)
	s.login(testToken)
	code, body := s.get("/studio/stumbles")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No agent stumbled in this window.", "a failed turn is no stumble")
}
