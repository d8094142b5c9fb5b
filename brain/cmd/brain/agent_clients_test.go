package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// These tests drive GEM with the agent frameworks people build agents with (scripts/agent-clients, installed
// by `make agent-clients`): the OpenAI Agents SDK, the Vercel AI SDK's MCP client and LangChain.js's MCP
// adapters, each listing GEM's tools over MCP and running an agent whose model is the tests' scripted fake of
// OpenAI's chat completions API (llmfake, which refuses what OpenAI refuses: a function name outside
// ^[a-zA-Z0-9_-]{1,64}$, a strict schema that is not strict). The MCP TypeScript SDK's own client is
// scripts/mcp-peers/sdk-client.mjs (runSDKClient).

// agentPlan is what a script of scripts/agent-clients does (plan.mjs): reach GEM's MCP server, list its tools,
// and run an agent on prompt with model.
type agentPlan struct {
	HTTP   *sdkHTTP    `json:"http,omitempty"`
	Stdio  *sdkStdio   `json:"stdio,omitempty"`
	Model  *agentModel `json:"model,omitempty"`
	Prompt string      `json:"prompt,omitempty"`
}

// agentModel is an OpenAI-compatible chat completions API.
type agentModel struct {
	BaseURL string `json:"base_url"`
	APIKey  string `json:"api_key"`
	Name    string `json:"name"`
}

// agentTool is a tool as a framework would offer it to the model: its name, and for the OpenAI Agents SDK
// whether its strict conversion held, the schema it sends the model, and why it fell back.
type agentTool struct {
	Name       string         `json:"name"`
	Strict     *bool          `json:"strict"`
	Parameters map[string]any `json:"parameters"`
	Reason     string         `json:"reason"`
}

// agentRun is what a script printed.
type agentRun struct {
	Tools       []agentTool `json:"tools"`
	FinalText   string      `json:"final_text"`
	ToolOutputs []struct {
		Name   string `json:"name"`
		Output string `json:"output"`
	} `json:"tool_outputs"`
	Threw string `json:"threw"`
}

// agentFrameworks are the scripts of scripts/agent-clients, by the framework each drives.
// badShows is what the model is shown of a call whose arguments break the tool's schema: GEM's violation,
// which names the property, or the framework's own refusal when it checks the arguments first (LangChain.js,
// whose message names nothing).
var agentFrameworks = []struct{ name, script, badShows string }{
	{"OpenAI Agents SDK", "openai-agents.mjs", "/domain"},
	{"Vercel AI SDK", "vercel-ai.mjs", "/domain"},
	{"LangChain.js", "langchain.mjs", "did not match expected schema"},
}

// runAgentClient runs one script of scripts/agent-clients on a plan, failing (not skipping) when the
// frameworks are not installed.
func runAgentClient(t *testing.T, script string, plan agentPlan) *agentRun {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "scripts", "agent-clients")
	for _, pkg := range []string{"@openai/agents", "ai", "@ai-sdk/mcp", "@langchain/mcp-adapters"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("the agent frameworks are not installed (%v): run make agent-clients", err)
		}
	}
	var run agentRun
	runNodeScript(t, filepath.Join(dir, script), plan, &run)
	return &run
}

// noteAgentScript is the fake model's script of an agent asked to save a note. Its first turn makes two
// calls that fail: os__create_note with a domain GEM's schema refuses, and os__complete_task of a task that
// does not exist (a call GEM makes, whose receipt says not_found). It sees both errors (the first as
// badShows says), makes the call as it should, sees the note, and says so.
func noteAgentScript(title, badShows string) []llmfake.Turn {
	return []llmfake.Turn{
		{Calls: []llmfake.Call{
			{ID: "call_bad", Name: "os__create_note", Arguments: `{"domain": "diary", "title": "` + title + `", "content": "x"}`},
			{ID: "call_missing", Name: "os__complete_task", Arguments: `{"task_id": "` + uuid.NewString() + `"}`},
		}},
		{
			Check: func(t require.TestingT, req *llmfake.Request) {
				results := req.ToolResults()
				require.Contains(t, results, "call_bad", "the bad call's error reached the model")
				require.Contains(t, results["call_bad"].Content, badShows, "the model sees what was wrong")
				require.Contains(t, results, "call_missing", "the failed call's error reached the model")
				require.Contains(t, results["call_missing"].Content, string(registry.CodeNotFound), "the model sees GEM's error")
			},
			Calls: []llmfake.Call{{ID: "call_ok", Name: "os__create_note", Arguments: `{"domain": "business", "title": "` + title + `", "content": "the gutters at the back"}`}},
		},
		{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Contains(t, req.ToolResults(), "call_ok", "the call's result reached the model")
				require.Contains(t, req.ToolResults()["call_ok"].Content, "note_id")
			},
			Text: "Saved the note.",
		},
	}
}

// noteReceipt is the status of the call that made the note titled title and who made it ("" when none was
// made); calls is how many were.
func noteReceipt(t *testing.T, pool *pgxpool.Pool, title string) (status, requestedBy string, calls int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) OVER (), r.status, c.requested_by FROM core_tool_calls c JOIN core_tool_receipts r ON r.call_id = c.id
		WHERE c.tool_name = 'os.create_note' AND c.input->>'title' = $1`, title).Scan(&calls, &status, &requestedBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", 0
	}
	require.NoError(t, err)
	return status, requestedBy, calls
}

// clientRow is one client's line of the table docs/mcp-server.md closes with: what it listed, how many of
// the tools' schemas its strict conversion held for (the OpenAI Agents SDK's; -1 for a client without one),
// whether its call was made (and ended with a receipt) and whether the model, or the client's caller, was
// shown the errors of the bad calls.
type clientRow struct {
	client               string
	listed, portable     int
	strict               int
	called, errorVisible bool
}

func (r clientRow) String() string {
	yes := map[bool]string{true: "yes", false: "no"}
	strict := "—"
	if r.strict >= 0 {
		strict = fmt.Sprintf("%d of %d", r.strict, r.listed)
	}
	return fmt.Sprintf("| %s | %d (%d with names model APIs accept) | %s | %s | %s |", r.client, r.listed, r.portable, strict,
		yes[r.called], yes[r.errorVisible])
}

// countPortable counts the names model APIs accept.
func countPortable(names []string) int {
	n := 0
	for _, name := range names {
		if registry.PortableNameRe.MatchString(name) {
			n++
		}
	}
	return n
}

// TestAgentFrameworks: each framework lists every tool under a name model APIs accept, sends them all to the
// model, shows the model the errors of a bad call (GEM's violation, or the framework's own check) and of a
// call GEM made that failed, and makes the good call, which ends with its receipt — over HTTP, and for the
// OpenAI Agents SDK over stdio too. The MCP TypeScript SDK's client (sdk-client.mjs) lists, calls and gets
// the bad call's violation as isError, over HTTP and stdio. Each logs its line of the table that closes
// docs/mcp-server.md.
func TestAgentFrameworks(t *testing.T) {
	t.Parallel()
	clientMatrix(t, mcpTarget{url: shared.url, pool: shared.pool, tools: shared.brain.Registry.Len() + 2,
		stdio: func(t *testing.T) *sdkStdio { return sdkOverStdio(t, shared.dbURL, testenv.RegistryPath(), nil) }})
}

// mcpTarget is a GEM to drive: its brain's URL (the test token's), its database, how many tools it lists, and
// how to start its `brain mcp`.
type mcpTarget struct {
	url   string
	pool  *pgxpool.Pool
	tools int
	stdio func(t *testing.T) *sdkStdio
}

// clientMatrix runs every client against a GEM: TestAgentFrameworks's subtests.
func clientMatrix(t *testing.T, target mcpTarget) {
	for _, fw := range agentFrameworks {
		transports := []string{"HTTP"}
		if fw.script == "openai-agents.mjs" {
			transports = append(transports, "stdio")
		}
		for _, transport := range transports {
			t.Run(fw.name+" over "+transport, func(t *testing.T) {
				t.Parallel()
				title := "agent note " + uuid.NewString()[:8]
				model := llmfake.NewOpenAI(t, "sk-fake", noteAgentScript(title, fw.badShows)...)
				plan := agentPlan{Model: &agentModel{BaseURL: model.URL + "/v1", APIKey: "sk-fake", Name: "gpt-fake"},
					Prompt: "Save a note for the business about the back gutters, titled " + title + "."}
				caller := "tester"
				if transport == "HTTP" {
					plan.HTTP = sdkOverHTTP(target.url, "", testToken)
				} else {
					plan.Stdio = target.stdio(t)
					caller = "stdio"
				}
				run := runAgentClient(t, fw.script, plan)

				row := clientRow{client: fw.name + " (" + transport + ")", listed: len(run.Tools), strict: -1}
				names := make([]string, len(run.Tools))
				for i, tool := range run.Tools {
					names[i] = tool.Name
					if tool.Strict != nil {
						row.strict = max(row.strict, 0)
						if *tool.Strict {
							row.strict++
						}
					}
				}
				row.portable = countPortable(names)
				status, requestedBy, calls := noteReceipt(t, target.pool, title)
				row.called = status == string(registry.StatusSucceeded)
				reqs := model.Requests()
				if len(reqs) >= 2 {
					results := reqs[1].ToolResults()
					row.errorVisible = strings.Contains(results["call_bad"].Content, fw.badShows) &&
						strings.Contains(results["call_missing"].Content, string(registry.CodeNotFound))
				}
				t.Log(row)

				require.Empty(t, run.Threw, "the agent ran to its end")
				require.Len(t, run.Tools, target.tools, "every tool, gem__get_receipt and gem__approve")
				require.Equal(t, len(names), row.portable, "every name %s sends the model matches %s: %v", fw.name, registry.PortableNameRe, names)
				require.Equal(t, "Saved the note.", run.FinalText)
				require.Len(t, reqs, 3)
				require.Len(t, reqs[0].Tools, target.tools, "every tool went to the model")
				require.True(t, row.errorVisible, "the model saw both errors")
				require.Equal(t, 1, calls, "one note made, by the good call (the bad one made no call)")
				require.Equal(t, string(registry.StatusSucceeded), status)
				require.Equal(t, caller, requestedBy)
			})
		}
	}
	for _, transport := range []string{"HTTP", "stdio"} {
		t.Run("MCP TypeScript SDK over "+transport, func(t *testing.T) {
			t.Parallel()
			title := "sdk note " + uuid.NewString()[:8]
			plan := sdkPlan{Calls: []sdkCall{
				{Name: "os__create_note", Arguments: map[string]any{"domain": "diary", "title": title, "content": "x"}},
				{Name: "os__create_note", Arguments: map[string]any{"domain": "business", "title": title, "content": "the gutters at the back"}},
			}}
			if transport == "HTTP" {
				plan.HTTP = sdkOverHTTP(target.url, "", testToken)
			} else {
				plan.Stdio = target.stdio(t)
			}
			run := runSDKClient(t, plan)
			row := clientRow{client: "MCP TypeScript SDK (" + transport + ")", listed: len(run.Tools), portable: countPortable(run.names()), strict: -1}
			status, _, calls := noteReceipt(t, target.pool, title)
			row.called = status == string(registry.StatusSucceeded)
			bad := run.Results[0]
			row.errorVisible = bad.Threw == "" && bad.Result != nil && bad.Result.IsError && strings.Contains(fmt.Sprint(bad.Result.Content), "/domain")
			t.Log(row)

			require.Len(t, run.Tools, target.tools)
			require.Equal(t, len(run.Tools), row.portable, "%v", run.names())
			require.True(t, row.errorVisible, "the violation shown as isError: %+v", bad)
			require.Equal(t, 1, calls)
			require.True(t, row.called)
		})
	}
}

// nonStrictTools are the tools whose MCP input schema the OpenAI Agents SDK cannot convert to strict mode,
// and why: each holds a value GEM's contract leaves free-form, an object whose keys are data, which strict
// mode cannot describe (it needs every key named). docs/mcp-server.md lists them too.
var nonStrictTools = map[string]string{
	"entity.add_interaction":        "details: any structured extras",
	"identity.add_memory":           "value: the memory, any object",
	"identity.score_pattern":        "value: the pattern, any object; evidence_refs: objects of any shape",
	"identity.set_boundaries":       "boundaries: the rules, any object",
	"identity.update_self_model":    "patch: each section (persona, values, boundaries, goals) is merged as any object",
	"job.add_progress_update":       "details: any structured facts",
	"leads.add_source":              "campaign: text values under any keys",
	"lore.ingest":                   "metadata: anything kept with the document",
	"marketing.log_campaign_result": "metrics: a number under each metric's name",
	"personal.boundary_set":         "value: the boundary, any object",
	"personal.decision_support":     "constraints: a limit, must or requirement under each constraint's name",
}

// TestMCPStrictConversion: the OpenAI Agents SDK converts the input schema of every tool GEM lists to strict
// mode (convertSchemasToStrict) but those of nonStrictTools, whose values GEM's contract leaves free-form, and
// every schema it converts is one OpenAI's strict mode takes (llm.StrictProblems, the LLM loop's own check:
// no keyword strict mode refuses, such as maxLength, minLength, default or format uri). The list may shrink,
// never grow; docs/mcp-server.md names each tool of it.
func TestMCPStrictConversion(t *testing.T) {
	t.Parallel()
	run := runAgentClient(t, "openai-agents.mjs", agentPlan{HTTP: sdkOverHTTP(shared.url, "", testToken)})
	require.Len(t, run.Tools, shared.brain.Registry.Len()+2)
	fellBack := map[string]string{}
	var refused []string
	for _, tool := range run.Tools {
		require.NotNil(t, tool.Strict, tool.Name)
		if !*tool.Strict {
			fellBack[registry.DottedName(tool.Name)] = tool.Reason
			continue
		}
		for _, problem := range llm.StrictProblems(tool.Parameters) {
			refused = append(refused, tool.Name+problem)
		}
	}
	t.Logf("strict: %d of %d tools; non-strict: %v", len(run.Tools)-len(fellBack), len(run.Tools), slices.Sorted(maps.Keys(fellBack)))
	require.Empty(t, refused, "the SDK's strict schemas keep what strict mode refuses")
	for name, reason := range fellBack {
		_, known := nonStrictTools[name]
		require.True(t, known, "%s fell back to a non-strict tool: %s", name, reason)
		require.Contains(t, reason, "open JSON schema object", "%s: an open object is the reason", name)
	}
	for name := range nonStrictTools {
		require.Contains(t, fellBack, name, "%s converts now: take it out of nonStrictTools and docs/mcp-server.md", name)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "mcp-server.md"))
	require.NoError(t, err)
	for name := range nonStrictTools {
		require.Contains(t, string(doc), "| `"+name+"` |", "docs/mcp-server.md lists %s among the non-strict tools", name)
	}
}
