package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// evalCLIWith runs brain eval as evalCLI does, with more environment (the LLM's).
func evalCLIWith(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli(append([]string{"eval"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// fakeLLMEnv is brain eval's environment with the LLM configured as the fake.
func fakeLLMEnv(dbURL string, fake *llmfake.Server) map[string]string {
	return map[string]string{"DATABASE_URL": dbURL, "GEM_REGISTRY": testenv.RegistryPath(), "GEM_LLM_PROVIDER": "openai",
		"GEM_LLM_BASE_URL": fake.URL + "/v1", "GEM_LLM_API_KEY": fakeKey, "GEM_LLM_MODEL": "fake-model", "GEM_LLM_TIMEOUT": "5s"}
}

// scriptChat scripts the fake as a model that makes exactly each case's expected calls (brain eval runs the
// cases in file order): every expected call in one answer per group (an unordered group in one answer), each
// after describe_tool when its agent finds its tools with the meta-tools, then a text answer; a case without
// calls, and every user turn after the first, is answered in text. Each request is checked: the tools it calls
// are offered, the arguments it sent came back as calls made (their results are the case's), describe_tool
// succeeded. So the scripted run scores every metric 1, and tests the loop.
func scriptChat(t *testing.T, pool *pgxpool.Pool, reg *registry.Registry, cases []evals.ChatCase, model string) []llmfake.Turn {
	t.Helper()
	ctx := context.Background()
	meta := map[string]bool{}
	var turns []llmfake.Turn
	for n, c := range cases {
		if _, ok := meta[c.Agent]; !ok {
			tools, err := postgres.AgentTools(ctx, pool, reg, c.Agent, "")
			require.NoError(t, err)
			meta[c.Agent] = len(tools) > chat.ToolSearchThresholdDefault
		}
		toolSet := llm.NewToolSet(reg.Tools())
		fn := func(tool string) string { f, ok := toolSet.Function(tool); require.True(t, ok, tool); return f }
		// wantBack is what the previous answer's calls must get back: a substring of each result, by call id.
		var wantBack map[string]string
		next := func(turn llmfake.Turn, back map[string]string) {
			prev := wantBack
			check := turn.Check
			turn.Check = func(tt require.TestingT, req *llmfake.Request) {
				require.Equal(tt, model, req.Model, "case %d", n+1)
				results := req.ToolResults()
				for id, want := range prev {
					got, ok := results[id]
					require.True(tt, ok, "case %d: no result for call %s", n+1, id)
					require.False(tt, got.IsError, "case %d: call %s: %s", n+1, id, got.Content)
					require.Contains(tt, got.Content, want, "case %d: call %s", n+1, id)
				}
				if check != nil {
					check(tt, req)
				}
			}
			turns, wantBack = append(turns, turn), back
		}
		for g := 0; g < len(c.Calls); {
			var group []evals.ChatCall
			for _, call := range c.Calls[g:] {
				if call.Group != c.Calls[g].Group {
					break
				}
				group = append(group, call)
			}
			g += len(group)
			if meta[c.Agent] {
				var describes []llmfake.Call
				back := map[string]string{}
				for i, call := range group {
					id := fmt.Sprintf("d%d_%d_%d", n, g, i)
					describes = append(describes, llmfake.Call{ID: id, Name: "describe_tool", Arguments: fmt.Sprintf(`{"name": %q}`, fn(call.Tool))})
					back[id] = `"status":"succeeded"`
				}
				next(llmfake.Turn{Calls: describes}, back)
			}
			var calls []llmfake.Call
			var offered []string
			back := map[string]string{}
			for i, call := range group {
				tool, _ := reg.Tool(call.Tool)
				args, err := json.Marshal(argumentsFor(t, tool, call.Args))
				require.NoError(t, err)
				id := fmt.Sprintf("c%d_%d_%d", n, g, i)
				calls = append(calls, llmfake.Call{ID: id, Name: fn(call.Tool), Arguments: string(args)})
				offered = append(offered, fn(call.Tool))
				back[id] = `"result":` + string(caseResult(c, call.Tool))
			}
			next(llmfake.Turn{Calls: calls, Check: func(tt require.TestingT, req *llmfake.Request) {
				for _, f := range offered {
					require.Contains(tt, req.ToolNames(), f, "case %d: the agent is offered the tool it is to call", n+1)
				}
			}}, back)
		}
		for range c.Turns {
			next(llmfake.Turn{Text: "Done."}, nil)
		}
	}
	return turns
}

func caseResult(c evals.ChatCase, tool string) json.RawMessage {
	if r, ok := c.Results[tool]; ok {
		return r
	}
	return json.RawMessage(`{}`)
}

// argumentsFor makes arguments that hold a call's checks and satisfy its tool's schema: each check's value
// (the first allowed; for a pattern, a string it matches), and a value of the property's schema for every
// required property left and each present check.
func argumentsFor(t *testing.T, tool *registry.Tool, checks []evals.ArgCheck) map[string]any {
	t.Helper()
	var schema map[string]any
	require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
	props, _ := schema["properties"].(map[string]any)
	args := map[string]any{}
	for _, c := range checks {
		path := strings.Split(c.Property, ".")
		var v any
		switch c.Kind {
		case evals.CheckExact, evals.CheckOneOf:
			v = c.Values()[0]
		case evals.CheckPattern:
			v = matching(t, c.Pattern())
			// A pattern on a date-time names its start ("^2026-12-11"): the rest is filled in, as a model would.
			if prop, _ := props[path[0]].(map[string]any); len(path) == 1 && prop["format"] == "date-time" {
				const layout = "2026-12-11T09:00:00+11:00"
				if s := v.(string); len(s) < len(layout) {
					v = s + layout[len(s):]
				}
			}
		case evals.CheckPresent:
			prop, _ := props[path[0]].(map[string]any)
			require.Len(t, path, 1, "%s: present checks a top-level property here", c.Property)
			v = exampleOf(prop)
		}
		obj := args
		for _, key := range path[:len(path)-1] {
			if _, ok := obj[key].(map[string]any); !ok {
				obj[key] = map[string]any{}
			}
			obj = obj[key].(map[string]any)
		}
		obj[path[len(path)-1]] = v
	}
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name := r.(string)
		if _, ok := args[name]; !ok {
			prop, _ := props[name].(map[string]any)
			args[name] = exampleOf(prop)
		}
	}
	return args
}

// exampleOf is a value its property's schema allows: the first of its enum, or a plain value of its type
// and format.
func exampleOf(prop map[string]any) any {
	if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := prop["type"].(string)
	if types, ok := prop["type"].([]any); ok && len(types) > 0 {
		typ, _ = types[0].(string)
	}
	switch typ {
	case "integer", "number":
		if m, ok := prop["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	switch prop["format"] {
	case "uuid":
		return "0b3c2f0e-6f4a-4c57-9a43-2f1d7b9e8c11"
	case "date-time":
		return "2026-12-11T09:00:00+11:00"
	case "date":
		return "2026-12-11"
	case "email":
		return "someone@example.com"
	}
	return "something"
}

// matching is a short string re matches: its literals, the first character of each class, the fewest
// repeats, the first branch of each alternation.
func matching(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	require.NoError(t, err)
	var b strings.Builder
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			b.WriteRune(r.Rune[0])
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('x')
		case syntax.OpCapture, syntax.OpPlus:
			walk(r.Sub[0])
		case syntax.OpRepeat:
			for range r.Min {
				walk(r.Sub[0])
			}
		case syntax.OpConcat:
			for _, s := range r.Sub {
				walk(s)
			}
		case syntax.OpAlternate:
			walk(r.Sub[0])
		}
	}
	walk(parsed)
	s := b.String()
	require.True(t, re.MatchString(s), "no example of pattern %s: %q does not match", re, s)
	return s
}

// TestEvalChatScoresWhatTheModelDid runs brain eval -llm against the fake scripted by hand: a call of the
// wrong tool and one with an argument its check refuses are misses (with what was called), a validation
// error goes back to the model, which corrects its call, a call made where none was expected fails
// irrelevance, calls out of order fail order (an unordered group's do not); floors below what the model did
// fail the run, naming the metric.
func TestEvalChatScoresWhatTheModelDid(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	dir := writeSuite(t, map[string]string{"chat.yaml": `
- turns: [push the gutter clean-out task back to friday]
  results:
    os.defer_task: {task_id: 7d1b2c3e-0000-4000-8000-000000000001, due_at: "2026-12-11T17:00:00+11:00"}
  calls:
    - tool: os.defer_task
      args:
        task_id: {exact: 7d1b2c3e-0000-4000-8000-000000000001}
        due_at: {pattern: "^2026-12-11"}
  split: tune
- turns: [add a task to order the ridge caps for the Hendersons]
  calls:
    - tool: os.create_task
      args:
        title: {pattern: "(?i)ridge caps"}
  split: tune
- turns: ["what's the time in London?"]
  calls: []
  split: held_out
- turns: [remind me at 3pm tomorrow to call Dave back]
  calls:
    - tool: os.create_reminder
      args:
        title: {pattern: "(?i)dave"}
        remind_at: {pattern: "^2026-12-08T15:00"}
  split: held_out
- turns: [look up Dave Nguyen and log that I called him and left a message]
  results:
    entity.search: {entities: [{id: 4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a21, name: Dave Nguyen}]}
  calls:
    - tool: entity.search
      args:
        query: {pattern: "(?i)nguyen"}
    - tool: comms.log_call_outcome
      args:
        entity_id: {exact: 4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a21}
        outcome: {exact: left_message}
  split: tune
- turns: [add a task to check the Patels' ridge capping and remind me about it at 8am on 12 December 2026]
  calls:
    - unordered:
        - tool: os.create_task
          args:
            title: {pattern: "(?i)ridge"}
        - tool: os.create_reminder
          args:
            remind_at: {pattern: "^2026-12-12T08:00"}
  split: held_out
`, "thresholds.yaml": "chat:\n  tune: {call_recall: 0.9}\n  held_out: {irrelevance: 1}\n"})
	reg := testRegistry(t)
	toolSet := llm.NewToolSet(reg.Tools())
	fn := func(tool string) string { f, _ := toolSet.Function(tool); return f }
	describe := func(id, tool string) llmfake.Call {
		return llmfake.Call{ID: id, Name: "describe_tool", Arguments: fmt.Sprintf(`{"name": %q}`, fn(tool))}
	}
	turns := []llmfake.Turn{
		// 1: the wrong date: a miss, with what was called.
		llmfake.Turn{Calls: []llmfake.Call{describe("d1", "os.defer_task")}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c1", Name: fn("os.defer_task"), Arguments: `{"task_id": "7d1b2c3e-0000-4000-8000-000000000001", "due_at": "2026-12-12T17:00:00+11:00", "reason": null}`}}},
		llmfake.Turn{Text: "Deferred to Saturday.", Check: func(t require.TestingT, req *llmfake.Request) {
			require.Contains(t, req.ToolResults()["c1"].Content, `"result":{"due_at":"2026-12-11T17:00:00+11:00"`, "the case's result goes back")
		}},
		// 2: the wrong tool.
		llmfake.Turn{Calls: []llmfake.Call{describe("d2", "os.create_note")}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c2", Name: fn("os.create_note"), Arguments: `{"domain": "business", "title": "ridge caps", "content": "order ridge caps for the Hendersons"}`}}},
		llmfake.Turn{Text: "Noted."},
		// 3: a call where none was expected.
		llmfake.Turn{Calls: []llmfake.Call{describe("d3", "os.search_notes")}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c3", Name: fn("os.search_notes"), Arguments: `{"query": "time in London"}`}}},
		llmfake.Turn{Text: "It is 3am in London."},
		// 4: a validation error goes back; the corrected call is made and matches.
		llmfake.Turn{Calls: []llmfake.Call{describe("d4", "os.create_reminder")}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "bad", Name: fn("os.create_reminder"), Arguments: `{"title": "call Dave back", "remind_at": "3pm tomorrow"}`}}},
		llmfake.Turn{Check: func(t require.TestingT, req *llmfake.Request) {
			bad := req.ToolResults()["bad"]
			require.Contains(t, bad.Content, `"code":"validation_error"`)
			require.Contains(t, bad.Content, "remind_at")
		}, Calls: []llmfake.Call{{ID: "good", Name: fn("os.create_reminder"), Arguments: `{"title": "call Dave back", "remind_at": "2026-12-08T15:00:00+11:00"}`}}},
		llmfake.Turn{Text: "Reminder set."},
		// 5: both calls, the second first: out of order.
		llmfake.Turn{Calls: []llmfake.Call{describe("d5a", "comms.log_call_outcome"), describe("d5b", "entity.search")}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c5a", Name: fn("comms.log_call_outcome"), Arguments: `{"entity_id": "4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a21", "outcome": "left_message"}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c5b", Name: fn("entity.search"), Arguments: `{"query": "Dave Nguyen"}`}}},
		llmfake.Turn{Text: "Logged."},
		// 6: an unordered group, the second first, in one answer: in order.
		llmfake.Turn{Calls: []llmfake.Call{describe("d6a", "os.create_reminder"), describe("d6b", "os.create_task")}},
		llmfake.Turn{Calls: []llmfake.Call{
			{ID: "c6a", Name: fn("os.create_reminder"), Arguments: `{"title": "Check the Patels' ridge capping", "remind_at": "2026-12-12T08:00:00+11:00"}`},
			{ID: "c6b", Name: fn("os.create_task"), Arguments: `{"title": "Check the Patels' ridge capping", "domain": "business"}`},
		}},
		llmfake.Turn{Text: "Both set."},
	}
	fake := llmfake.NewOpenAI(t, fakeKey, turns...)
	code, out, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir, "-suite", "chat", "-llm", "-json", "-hold-models")
	require.Equal(t, 1, code, errText)
	require.Equal(t, 0, fake.Remaining(), "%s\n%s", errText, out)
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	r := got.Reports[0]
	require.Equal(t, "fake-model", r.Model)
	metric := func(split, m string) float64 {
		v, ok := r.Metric(split, m)
		require.True(t, ok, "%s %s", split, m)
		return v
	}
	require.Equal(t, 0.5, metric(evals.SplitTune, evals.MetricCallRecall), "2 of the 4 calls expected")
	require.Equal(t, 0.5, metric(evals.SplitTune, evals.MetricCallPrecision), "2 of the 4 calls made")
	require.Equal(t, 0.0, metric(evals.SplitTune, evals.MetricOrder))
	require.Equal(t, 1.0, metric(evals.SplitHeldOut, evals.MetricCallRecall), "the corrected call counts")
	require.Equal(t, 1.0, metric(evals.SplitHeldOut, evals.MetricCallPrecision), "the refused call was not made")
	require.Equal(t, 1.0, metric(evals.SplitHeldOut, evals.MetricOrder), "an unordered group comes in any order")
	require.Equal(t, 0.0, metric(evals.SplitHeldOut, evals.MetricIrrelevance))
	require.Len(t, r.Misses, 4, "%+v", r.Misses)
	require.Contains(t, r.Misses[3].Got, "the calls came out of order")
	require.Contains(t, r.Misses[0].Got, `os.defer_task {"due_at":"2026-12-12T17:00:00+11:00"`)
	require.Contains(t, r.Misses[0].Got, `due_at is "2026-12-12T17:00:00+11:00", not pattern "^2026-12-11"`)
	require.Contains(t, r.Misses[1].Got, "os.create_note")
	require.Contains(t, r.Misses[1].Got, "os.create_task was not called")
	require.Equal(t, "no call", r.Misses[2].Want)
	require.Contains(t, r.Misses[2].Got, "os.search_notes")
	require.Equal(t, []string{
		"chat (fake-model) tune call_recall is 0.5000, below its floor 0.9",
		"chat (fake-model) held_out irrelevance is 0.0000, below its floor 1",
	}, got.BelowFloor)

	// Without -hold-models a model is compared, not held: the same answers score the same and the run passes.
	code, out, errText = evalCLIWith(t, fakeLLMEnv(dbURL, llmfake.NewOpenAI(t, fakeKey, turns...)), "-dir", dir, "-suite", "chat", "-llm", "-json")
	require.Equal(t, 0, code, errText)
	got = evalJSON{}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Empty(t, got.BelowFloor)
	require.Len(t, got.Reports[0].Misses, 4)
}

// TestEvalChatSideBySide: -llm given twice asks each model in turn, through the configured provider, and
// prints their metrics side by side; without -llm the chat suite is skipped, saying how to run it; a suite
// that cannot be measured fails its load, naming the case's problem.
func TestEvalChatSideBySide(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	dir := writeSuite(t, map[string]string{"chat.yaml": `
- turns: [tell me a joke about roofers]
  calls: []
  split: tune
- turns: [whats the capital of France]
  calls: []
  split: held_out
`})
	answer := func(model, text string) llmfake.Turn {
		return llmfake.Turn{Text: text, Check: func(t require.TestingT, req *llmfake.Request) { require.Equal(t, model, req.Model) }}
	}
	fake := llmfake.NewOpenAI(t, fakeKey, answer("big", "No."), answer("big", "Paris."), answer("small", "No."),
		llmfake.Turn{Calls: []llmfake.Call{{ID: "s", Name: "search_tools", Arguments: `{"query": "capital of France", "limit": null}`}}},
		answer("small", "Paris."))
	env := fakeLLMEnv(dbURL, fake)
	delete(env, "GEM_LLM_MODEL") // the models named are enough
	code, out, errText := evalCLIWith(t, env, "-dir", dir, "-llm", "big", "-llm", "small")
	require.Equal(t, 0, code, errText)
	require.Equal(t, 0, fake.Remaining())
	t.Log("\n" + out)
	require.Contains(t, out, "chat suite: big | small\n")
	lines := strings.Split(out, "\n")
	require.Regexp(t, `^\s+tune big\s+tune small\s+held_out big\s+held_out small\s*$`, lines[1])
	require.Regexp(t, `^\s*irrelevance\s+1\.000\s+1\.000\s+1\.000\s+1\.000\s*$`, lines[3], "search_tools is the brain's, not a call")

	code, out, errText = evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir)
	require.Equal(t, 0, code, errText)
	require.Contains(t, out, "chat suite\n  skipped: no model to talk to: brain eval -llm")

	for name, c := range map[string]struct {
		suite, says string
	}{
		"unknown tool":   {"- turns: [hi]\n  calls: [{tool: os.snooze_task}]\n  split: tune\n", `unknown tool "os.snooze_task"`},
		"unknown arg":    {"- turns: [hi]\n  calls: [{tool: os.defer_task, args: {when: {present: true}}}]\n  split: tune\n", `os.defer_task: no input property "when"`},
		"two checks":     {"- turns: [hi]\n  calls: [{tool: os.defer_task, args: {task_id: {present: true, exact: x}}}]\n  split: tune\n", "not 2 of them"},
		"calls missing":  {"- turns: [hi]\n  split: tune\n", "calls is missing"},
		"no turns":       {"- calls: []\n  split: tune\n", "turns is missing"},
		"bad result":     {"- turns: [hi]\n  results: {os.snooze: {}}\n  calls: []\n  split: tune\n", `results: unknown tool "os.snooze"`},
		"misspelt field": {"- turns: [hi]\n  call: []\n  calls: []\n  split: tune\n", "field call not found"},
		"lone unordered": {"- turns: [hi]\n  calls: [{unordered: [{tool: os.list_tasks}]}]\n  split: tune\n", "two calls or more"},
	} {
		dir := writeSuite(t, map[string]string{"chat.yaml": c.suite})
		code, _, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir)
		require.Equal(t, 1, code, name)
		require.Contains(t, errText, c.says, name)
	}
	code, _, errText = evalCLIWith(t, map[string]string{"DATABASE_URL": dbURL, "GEM_REGISTRY": testenv.RegistryPath()}, "-dir", dir, "-llm")
	require.Equal(t, 2, code)
	require.Contains(t, errText, "-llm: no LLM is configured")
}

// writeSuite writes a folder of suite files.
func writeSuite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// testRegistry is the repository's registry, as brain eval reads it.
func testRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	return reg
}

// TestEvalChatOnAnthropic runs the repository's chat suite against the fake on Anthropic's wire format, scripted
// from each case's expected calls, as make test does on OpenAI's: the loop scores every metric 1 on both.
func TestEvalChatOnAnthropic(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	dir := filepath.Join(testenv.RepoRoot(), "evals")
	reg := testRegistry(t)
	cases, err := evals.LoadChat(dir, reg)
	require.NoError(t, err)
	fake := llmfake.NewAnthropic(t, fakeKey, scriptChat(t, pool, reg, cases, "fake-model")...)
	env := fakeLLMEnv(dbURL, fake)
	env["GEM_LLM_PROVIDER"], env["GEM_LLM_BASE_URL"] = "anthropic", fake.URL
	code, out, errText := evalCLIWith(t, env, "-dir", dir, "-suite", "chat", "-llm", "-json", "-hold-models")
	require.Equal(t, 0, code, errText)
	require.Equal(t, 0, fake.Remaining())
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	require.Empty(t, got.Reports[0].Misses)
	for _, s := range got.Reports[0].Splits {
		for m, v := range s.Metrics {
			require.Equal(t, 1.0, v, "%s %s", s.Split, m)
		}
	}
}

// TestEvalChatTurnsDescribeAgain: as in a chat session, each user turn offers only the tools it described: a
// call in a later turn of a tool described in an earlier one is refused until described again, so the model
// that does not describe it again has not made the call.
func TestEvalChatTurnsDescribeAgain(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	dir := writeSuite(t, map[string]string{"chat.yaml": `
- turns: [look up Dave Nguyen, now log that I called him and left a message]
  results:
    entity.search: {entities: [{id: 4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a21, name: Dave Nguyen}]}
  calls:
    - tool: entity.search
    - tool: comms.log_call_outcome
      args:
        outcome: {exact: left_message}
  split: tune
`})
	reg := testRegistry(t)
	toolSet := llm.NewToolSet(reg.Tools())
	fn := func(tool string) string { f, _ := toolSet.Function(tool); return f }
	describe := func(id, tool string) llmfake.Call {
		return llmfake.Call{ID: id, Name: "describe_tool", Arguments: fmt.Sprintf(`{"name": %q}`, fn(tool))}
	}
	var refusal string
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{describe("d1", "entity.search"), describe("d2", "comms.log_call_outcome")}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c1", Name: fn("entity.search"), Arguments: `{"query": "Dave Nguyen"}`}}},
		llmfake.Turn{Text: "Found Dave."},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "c2", Name: fn("comms.log_call_outcome"),
			Arguments: `{"entity_id": "4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a21", "outcome": "left_message"}`}}},
		llmfake.Turn{Text: "Logged.", Check: func(t require.TestingT, req *llmfake.Request) {
			refusal = req.ToolResults()["c2"].Content
		}},
	)
	code, out, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir, "-suite", "chat", "-llm", "-json", "-thresholds", "none")
	require.Equal(t, 0, code, errText)
	require.Equal(t, 0, fake.Remaining())
	require.Contains(t, refusal, "describe_tool", "the second turn must describe the tool again")
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	recall, ok := got.Reports[0].Metric(evals.SplitTune, evals.MetricCallRecall)
	require.True(t, ok)
	require.Equal(t, 0.5, recall, "the call refused in the second turn was not made")
}

// TestEvalChatNamesTheModelAsked: with -llm and no model named, each agent's own model is asked, and the report
// names it, not the client's default.
func TestEvalChatNamesTheModelAsked(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	_, err := pool.Exec(t.Context(), `UPDATE agents SET model = 'agents-own-model' WHERE slug = 'office-assistant'`)
	require.NoError(t, err)
	dir := writeSuite(t, map[string]string{"chat.yaml": "- turns: [tell me a joke about roofers]\n  calls: []\n  split: tune\n"})
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Text: "No.", Check: func(t require.TestingT, req *llmfake.Request) {
		require.Equal(t, "agents-own-model", req.Model)
	}})
	code, out, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir, "-suite", "chat", "-llm", "-json")
	require.Equal(t, 0, code, errText)
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, "agents-own-model", got.Reports[0].Model)
}

// TestEvalChatRunsEachCaseNTimes: -runs holds each case that many times against the model and counts every run;
// every_run is the share of cases right each time. Two calls of one tool pair with the calls expected however
// they came: the call that checks nothing does not take the one the other needed.
func TestEvalChatRunsEachCaseNTimes(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	const van, ute = "0c6f5a1e-2b3d-4e5f-8a9b-1c2d3e4f5a06", "0c6f5a1e-2b3d-4e5f-8a9b-1c2d3e4f5a16"
	dir := writeSuite(t, map[string]string{"chat.yaml": `
- turns: ["the van's clean and the ute's been serviced: tick both off"]
  calls:
    - unordered:
        - tool: os.complete_task
        - tool: os.complete_task
          args:
            task_id: {exact: ` + ute + `}
  split: tune
- turns: [tell me a joke about roofers]
  calls: []
  split: tune
`})
	reg := testRegistry(t)
	toolSet := llm.NewToolSet(reg.Tools())
	fn := func(tool string) string { f, _ := toolSet.Function(tool); return f }
	complete := func(id, task string) llmfake.Call {
		return llmfake.Call{ID: id, Name: fn("os.complete_task"), Arguments: fmt.Sprintf(`{"task_id": %q, "note": null}`, task)}
	}
	describe := llmfake.Turn{Calls: []llmfake.Call{{ID: "d", Name: "describe_tool", Arguments: fmt.Sprintf(`{"name": %q}`, fn("os.complete_task"))}}}
	turns := []llmfake.Turn{
		// Run 1: both tasks, the one the case checks first.
		describe, {Calls: []llmfake.Call{complete("c1", ute), complete("c2", van)}}, {Text: "Both done."},
		// Run 2: only one.
		describe, {Calls: []llmfake.Call{complete("c3", van)}}, {Text: "Done."},
		{Text: "No jokes today."}, {Text: "Still no jokes."},
	}
	fake := llmfake.NewOpenAI(t, fakeKey, turns...)
	code, out, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir, "-thresholds", "none", "-llm", "-runs", "2", "-json")
	require.Equal(t, 0, code, errText)
	require.Equal(t, 0, fake.Remaining(), "%s\n%s", errText, out)
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	r := got.Reports[0]
	metric := func(m string) float64 {
		v, ok := r.Metric(evals.SplitTune, m)
		require.True(t, ok, m)
		return v
	}
	require.Equal(t, 0.75, metric(evals.MetricCallRecall), "3 of the 4 calls expected over two runs")
	require.Equal(t, 1.0, metric(evals.MetricCallPrecision))
	require.Equal(t, 1.0, metric(evals.MetricIrrelevance), "both runs of the joke made no call")
	require.Equal(t, 0.5, metric(evals.MetricEveryRun), "the joke was right twice; the tasks once")
	require.Equal(t, 2, r.Splits[0].Cases)
	require.Equal(t, 2, r.Runs)
	require.Len(t, r.Misses, 1, "%+v", r.Misses)
	require.Contains(t, r.Misses[0].Case, "(run 2 of 2)")
	require.Contains(t, r.Misses[0].Got, "os.complete_task: task_id is \""+van+"\", not exact \""+ute+"\"")

	for args, says := range map[string]string{
		"-runs 0":   "-runs 0 is not between 1 and 100",
		"-runs 101": "-runs 101 is not between 1 and 100",
		"-runs 3":   "-runs holds the chat suite's cases against a model: it needs -llm",
	} {
		code, _, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), append([]string{"-dir", dir}, strings.Fields(args)...)...)
		require.Equal(t, 2, code, args)
		require.Contains(t, errText, says, args)
	}
}

// TestEvalModelFlagsNeedTheChatSuite: -llm and -runs hold the chat suite against a model; given with a suite
// that is not the chat suite, or a folder without chat.yaml, they would be ignored while the command passed
// as if the model had been measured: they are refused, saying why.
func TestEvalModelFlagsNeedTheChatSuite(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	fake := llmfake.NewOpenAI(t, fakeKey)
	search := "- q: push this to-do back until next week\n  tools: [os.defer_task]\n  split: tune\n"
	dir := writeSuite(t, map[string]string{"search.yaml": search, "chat.yaml": "- turns: [tell me a joke]\n  calls: []\n  split: tune\n"})
	noChat := writeSuite(t, map[string]string{"search.yaml": search})
	for args, says := range map[string]string{
		"-suite search -llm -runs 3":  "-llm holds the chat suite against a model: -suite search has no chat suite",
		"-suite plan -llm":            "-llm holds the chat suite against a model: -suite plan has no chat suite",
		"-llm -runs 2 -dir " + noChat: "-llm holds the chat suite against a model: " + noChat + " has no chat.yaml",
	} {
		code, _, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), append([]string{"-dir", dir, "-thresholds", "none"}, strings.Fields(args)...)...)
		require.Equal(t, 2, code, "%s: %s", args, errText)
		require.Contains(t, errText, says, args)
	}
	require.Empty(t, fake.Requests(), "no model was asked")
	code, _, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", noChat, "-thresholds", "none")
	require.Equal(t, 0, code, errText)
}

// TestEvalChatReportKeepsTheModelsWordsOnTheirLine: what a model sends (a made-up tool's name with a line break
// and a terminal's escape codes) is printed escaped in the text report: each miss stays its three lines, and
// the model cannot write to the terminal.
func TestEvalChatReportKeepsTheModelsWordsOnTheirLine(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	dir := writeSuite(t, map[string]string{"chat.yaml": "- turns: [tell me a joke about roofers]\n  calls: []\n  split: tune\n"})
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "x", Name: "launch\x1b[2J\nwant os.nothing\u202e", Arguments: `{}`}}},
		llmfake.Turn{Text: "No jokes today."})
	code, out, errText := evalCLIWith(t, fakeLLMEnv(dbURL, fake), "-dir", dir, "-thresholds", "none", "-llm")
	require.Equal(t, 0, code, errText)
	require.Zero(t, fake.Remaining())
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\u202e")
	require.Equal(t, 1, strings.Count(out, "\n      want "), out)
	require.Contains(t, out, `launch\u001b[2J\u000awant os.nothing\u202e refused (unknown_tool)`)
}
