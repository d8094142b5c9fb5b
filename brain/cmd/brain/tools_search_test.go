package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// toolsAnswer is GET /brain/tools' answer, its tools left in their format.
type toolsAnswer struct {
	OK      bool              `json:"ok"`
	Format  string            `json:"format"`
	Agent   string            `json:"agent"`
	Query   string            `json:"query"`
	Limit   int               `json:"limit"`
	Tools   []json.RawMessage `json:"tools"`
	Fits    *bool             `json:"fits"`
	Matches []struct {
		Name     string  `json:"name"`
		Function string  `json:"function"`
		Score    float64 `json:"score"`
		Coverage float64 `json:"coverage"`
	} `json:"matches"`
	Errors []*brain.Error `json:"errors"`
}

func getTools(t *testing.T, a *testAPI, query url.Values) (int, *toolsAnswer) {
	t.Helper()
	var out toolsAnswer
	status := a.do(http.MethodGet, "/brain/tools?"+query.Encode(), nil, &out)
	return status, &out
}

// TestToolsFormats: GET /brain/tools exports every tool as GEM describes it (the default), as OpenAI and
// Anthropic receive it from the LLM loop (strict mode and mapped names), and as MCP's tools/list shows it.
func TestToolsFormats(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	reg := shared.brain.Registry
	set := llm.NewToolSet(reg.Tools())

	status, def := getTools(t, a, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "gem", def.Format)
	require.Len(t, def.Tools, reg.Len())
	status, gem := getTools(t, a, url.Values{"format": {"gem"}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, def.Tools, gem.Tools, "gem is the default")
	for i, tool := range reg.Tools() {
		var v struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		require.NoError(t, json.Unmarshal(gem.Tools[i], &v))
		require.Equal(t, tool.Name, v.Name)
		require.JSONEq(t, string(tool.InputSchema), string(v.InputSchema))
	}

	for _, format := range []string{llm.FormatOpenAI, llm.FormatAnthropic, llm.FormatMCP} {
		status, out := getTools(t, a, url.Values{"format": {format}})
		require.Equal(t, http.StatusOK, status, format)
		require.Equal(t, format, out.Format)
		require.Len(t, out.Tools, reg.Len(), format)
		for i, tool := range set.Tools() {
			want, err := set.Export(format, tool.Name)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(out.Tools[i]), "%s %s", format, tool.Name)
		}
	}
	// What each format says, in the provider's own words.
	var openai struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Strict      bool           `json:"strict"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	_, out := getTools(t, a, url.Values{"format": {"openai"}})
	for _, raw := range out.Tools {
		require.NoError(t, json.Unmarshal(raw, &openai))
		require.Equal(t, "function", openai.Type)
		require.True(t, openai.Function.Strict, openai.Function.Name)
		require.Empty(t, llm.StrictProblems(openai.Function.Parameters), openai.Function.Name)
		require.NotContains(t, openai.Function.Name, ".")
	}
	var anthropic struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"input_schema"`
	}
	_, out = getTools(t, a, url.Values{"format": {"anthropic"}})
	require.NoError(t, json.Unmarshal(out.Tools[0], &anthropic))
	require.Equal(t, "object", anthropic.InputSchema["type"])
	var mcp llm.MCPTool
	_, out = getTools(t, a, url.Values{"format": {"mcp"}})
	require.NoError(t, json.Unmarshal(out.Tools[0], &mcp))
	require.Regexp(t, registry.PortableNameRe, mcp.Name, "MCP offers the names model APIs accept, as the LLM loop does")
	require.Equal(t, reg.Tools()[0].Name, mcp.Meta[llm.MCPMetaName], "and GEM's name in _meta")
	require.NotEmpty(t, mcp.Title)

	for _, bad := range []string{"OpenAI", "xml", " gem", "gem,openai"} {
		status, out := getTools(t, a, url.Values{"format": {bad}})
		require.Equal(t, http.StatusBadRequest, status, bad)
		require.Equal(t, brain.EINVALID, out.Errors[0].Code)
		require.Contains(t, out.Errors[0].Message, "format must be one of gem, openai, anthropic, mcp")
		require.Equal(t, []any{"gem", "openai", "anthropic", "mcp"}, out.Errors[0].Details.(map[string]any)["allowed_formats"])
	}
}

// TestToolsSearch: GET /brain/tools?q= ranks tools for a request in words, best first, in any format, with
// limit from 1 to 50 (5 by default); bad parameters are a 400 naming the problem, never a 500.
func TestToolsSearch(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	status, out := getTools(t, a, url.Values{"q": {"push this to-do back until next week"}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 5, out.Limit)
	require.Len(t, out.Matches, 5)
	require.Len(t, out.Tools, 5)
	require.Equal(t, "os.defer_task", out.Matches[0].Name)
	require.Equal(t, "os__defer_task", out.Matches[0].Function)
	require.NotNil(t, out.Fits)
	require.True(t, *out.Fits)
	require.Greater(t, out.Matches[0].Coverage, 0.5, "the tool holds most of the request")
	require.LessOrEqual(t, out.Matches[0].Coverage, 1.0)
	for i := 1; i < len(out.Matches); i++ {
		require.GreaterOrEqual(t, out.Matches[i-1].Score, out.Matches[i].Score, "best first")
	}
	var first struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal(out.Tools[0], &first))
	require.Equal(t, "os.defer_task", first.Name)

	status, out = getTools(t, a, url.Values{"q": {"send a text message"}, "limit": {"2"}, "format": {"openai"}})
	require.Equal(t, http.StatusOK, status)
	require.Len(t, out.Matches, 2)
	var fn struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	for i, raw := range out.Tools {
		require.NoError(t, json.Unmarshal(raw, &fn))
		require.Equal(t, out.Matches[i].Function, fn.Function.Name, "tools follow the matches' order")
	}
	require.Contains(t, []string{"comms.send_sms", "comms.compose_sms"}, out.Matches[0].Name)

	status, out = getTools(t, a, url.Values{"q": {"send invoce remindr by sms"}, "limit": {"3"}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "invoice.send_reminder_sms", out.Matches[0].Name, "misspelt words still find the tool")

	// A phone number is a value for the call, not words the tool must hold: the request still fits.
	status, out = getTools(t, a, url.Values{"q": {"new enquiry from Dave, 0412 555 111, wants a roof repair"}})
	require.Equal(t, http.StatusOK, status)
	require.True(t, *out.Fits, "%+v", out.Matches)
	require.Equal(t, "leads.create", out.Matches[0].Name)

	// A request no tool serves: the names that share a few letters with it are not offered.
	status, out = getTools(t, a, url.Values{"q": {"reserve a table for 6 at the Royal Hotel Friday night"}})
	require.Equal(t, http.StatusOK, status)
	require.False(t, *out.Fits, "no tool fits: %+v", out.Matches)
	require.Empty(t, out.Matches)
	require.Empty(t, out.Tools)

	status, out = getTools(t, a, url.Values{"q": {"xyzzy plugh"}, "limit": {"50"}})
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, out.Matches)
	require.Empty(t, out.Tools)
	require.NotNil(t, out.Tools, "an empty list, not null")

	for _, tt := range []struct {
		query url.Values
		want  string
	}{
		{url.Values{"q": {"task"}, "limit": {"0"}}, "limit must be a whole number from 1 to 50"},
		{url.Values{"q": {"task"}, "limit": {"51"}}, "limit must be a whole number from 1 to 50"},
		{url.Values{"q": {"task"}, "limit": {"-1"}}, "limit must be a whole number from 1 to 50"},
		{url.Values{"q": {"task"}, "limit": {"five"}}, "limit must be a whole number from 1 to 50"},
		{url.Values{"q": {"task"}, "limit": {""}}, "limit must be a whole number from 1 to 50"},
		{url.Values{"q": {"task"}, "limit": {"99999999999999999999"}}, "limit must be a whole number from 1 to 50"},
		{url.Values{"limit": {"3"}}, "limit bounds the results of a query: give q too"},
		{url.Values{"q": {""}}, "q must say what the tool should do"},
		{url.Values{"q": {"   "}}, "q must say what the tool should do"},
		{url.Values{"q": {strings.Repeat("task ", 201)}}, "q must be at most 1000 bytes"},
		{url.Values{"user_id": {"u1"}}, "user_id scopes an agent's tools: give agent too"},
		{url.Values{"q": {"task"}, "limit": {"0"}, "format": {"yaml"}}, "format must be one of"},
	} {
		status, out := getTools(t, a, tt.query)
		require.Equal(t, http.StatusBadRequest, status, tt.query.Encode())
		require.Equal(t, brain.EINVALID, out.Errors[0].Code)
		require.Contains(t, out.Errors[0].Message, tt.want, tt.query.Encode())
		require.NotEmpty(t, out.Errors[0].Details.(map[string]any)["problems"])
	}
	// Text PostgreSQL cannot store is refused before the search.
	status, out = getTools(t, a, url.Values{"q": {"task\x00"}})
	require.Equal(t, http.StatusBadRequest, status)
	// Query syntax is words, never operators: quotes, minus signs and "or" only ever search.
	for _, q := range []string{`"unclosed`, `-task`, `or or or`, `!(&|):*`, `task & invoice`, `'`, `\`} {
		status, _ := getTools(t, a, url.Values{"q": {q}})
		require.Equal(t, http.StatusOK, status, q)
	}
}

// TestToolsAgentScope: ?agent= lists and searches only the tools the agent may call; an unknown agent is 404.
func TestToolsAgentScope(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("scope"): {"os.create_task", "os.defer_task", "invoice.send"}})

	for _, format := range llm.ExportFormats {
		status, out := getTools(t, a, url.Values{"agent": {agent}, "format": {format}})
		require.Equal(t, http.StatusOK, status, format)
		require.Equal(t, agent, out.Agent)
		require.Len(t, out.Tools, 3, format)
	}
	status, out := getTools(t, a, url.Values{"agent": {agent}, "q": {"text the customer a reminder"}, "limit": {"50"}})
	require.Equal(t, http.StatusOK, status)
	require.NotEmpty(t, out.Matches)
	for _, m := range out.Matches {
		require.Contains(t, []string{"os.create_task", "os.defer_task", "invoice.send"}, m.Name, "only the agent's tools")
	}
	status, out = getTools(t, a, url.Values{"agent": {agent}, "q": {"postpone the chore"}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "os.defer_task", out.Matches[0].Name)
	status, out = getTools(t, a, url.Values{"agent": {agent}, "user_id": {"someone"}})
	require.Equal(t, http.StatusOK, status)
	require.Len(t, out.Tools, 3, "the skills are not limited to users")

	status, out = getTools(t, a, url.Values{"agent": {"no-such-agent"}})
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, brain.ENOTFOUND, out.Errors[0].Code)
	status, _ = getTools(t, a, url.Values{"agent": {strings.Repeat("x", 5000)}, "q": {"task"}})
	require.Equal(t, http.StatusNotFound, status)
}

// TestToolsSearchIsTheMetaToolsSearch: an agent's search_tools answers with exactly the tools GET
// /brain/tools?agent=&q= ranks, in the same order: one search.
func TestToolsSearchIsTheMetaToolsSearch(t *testing.T) {
	t.Parallel()
	const query = "chase the unpaid bill by text"
	var found []string
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "` + query + `", "limit": 8}`}}},
		llmfake.Turn{Text: "Found them.", Check: func(t require.TestingT, req *llmfake.Request) {
			for _, hit := range resultOf(t, req.ToolResults()["s"])["result"].(map[string]any)["tools"].([]any) {
				found = append(found, hit.(map[string]any)["name"].(string))
			}
		}},
	)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{ToolSearchThreshold: 3})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("money"): {"invoice.send", "invoice.send_reminder_sms",
		"invoice.send_reminder_email", "invoice.add_payment", "comms.send_sms", "os.create_task", "quote.mark_sent"}})
	resp, status := chatWith(t, a, agent, "find me the tools", "")
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.OK, "%+v", resp.Errors)

	status, out := getTools(t, a, url.Values{"agent": {agent}, "q": {query}, "limit": {"8"}})
	require.Equal(t, http.StatusOK, status)
	var ranked []string
	for _, m := range out.Matches {
		ranked = append(ranked, m.Function)
	}
	require.NotEmpty(t, ranked)
	require.Equal(t, ranked, found)
	require.Equal(t, "invoice__send_reminder_sms", found[0])
}

// TestSearchToolsSaysNoToolFits: an agent's search_tools for a request no tool serves answers that no tool fits,
// in words the model acts on, instead of offering the tools that share a word or a few letters with it; a
// request a tool serves is answered with the tools, and fits.
func TestSearchToolsSaysNoToolFits(t *testing.T) {
	t.Parallel()
	var none, some map[string]any
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{
			{ID: "none", Name: "search_tools", Arguments: `{"query": "reserve a table for 6 at the Royal Hotel Friday night"}`},
			{ID: "some", Name: "search_tools", Arguments: `{"query": "text the customer that we are running late"}`},
		}},
		llmfake.Turn{Text: "I can't book restaurants.", Check: func(t require.TestingT, req *llmfake.Request) {
			none = resultOf(t, req.ToolResults()["none"])["result"].(map[string]any)
			some = resultOf(t, req.ToolResults()["some"])["result"].(map[string]any)
		}},
	)
	a := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{ToolSearchThreshold: 3})
	agent := agentWithSkills(t, a, 3, map[string][]string{uniq("desk"): {"leads.create", "entity.create", "comms.send_sms",
		"os.create_task", "calendar.create_event"}})
	resp, status := chatWith(t, a, agent, "book us a table at the Royal on Friday", "")
	require.Equal(t, http.StatusOK, status)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, false, none["fits"])
	require.Empty(t, none["tools"])
	require.Contains(t, none["note"], "no tool fits this request")
	require.Equal(t, true, some["fits"])
	require.NotEmpty(t, some["tools"])
	require.Equal(t, "comms__send_sms", some["tools"].([]any)[0].(map[string]any)["name"])
}
