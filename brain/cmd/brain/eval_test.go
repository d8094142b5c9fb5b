package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// evalCLI runs brain eval as a person does, on its own database, with the repository's registry.
func evalCLI(t *testing.T, dbURL string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	env := map[string]string{"DATABASE_URL": dbURL, "GEM_REGISTRY": testenv.RegistryPath()}
	var out, errOut bytes.Buffer
	code = cli(append([]string{"eval"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

type evalJSON struct {
	Reports    []evals.Report `json:"reports"`
	BelowFloor []string       `json:"below_floor"`
}

// TestEvalSuitesHoldTheirFloors runs brain eval over the repository's suites (evals/) on a real PostgreSQL and
// holds evals/thresholds.yaml: a change that makes tool selection worse fails here, naming the metric, with
// every miss in the log. The suites are scored on both splits; the chat suite talks to the LLM fake, scripted
// to make each case's calls (scriptChat), so it tests the loop.
func TestEvalSuitesHoldTheirFloors(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	dir := filepath.Join(testenv.RepoRoot(), "evals")
	reg := testRegistry(t)
	cases, err := evals.LoadChat(dir, reg)
	require.NoError(t, err)
	script := scriptChat(t, pool, reg, cases, "fake-model")
	fake := llmfake.NewOpenAI(t, fakeKey, script...)
	env := fakeLLMEnv(dbURL, fake)
	code, out, errText := evalCLIWith(t, env, "-dir", dir, "-json", "-llm", "-hold-models")
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	var text strings.Builder
	for i := range got.Reports {
		got.Reports[i].WriteText(&text) // the report a person reads, every miss in it
	}
	t.Log("\n" + text.String())
	require.Equal(t, 0, code, "brain eval: %s", errText)
	require.Empty(t, got.BelowFloor)
	require.Equal(t, 0, fake.Remaining())
	require.Len(t, got.Reports, len(evalSuites))
	thresholds, err := evals.LoadThresholds(filepath.Join(dir, "thresholds.yaml"))
	require.NoError(t, err)
	for _, r := range got.Reports {
		require.NotEmpty(t, thresholds[r.Suite], "evals/thresholds.yaml holds no floor for the %s suite", r.Suite)
		require.Len(t, r.Splits, 2, "%s: both splits scored", r.Suite)
		for _, s := range r.Splits {
			require.NotEmpty(t, thresholds[r.Suite][s.Split], "evals/thresholds.yaml holds no floor for %s %s", r.Suite, s.Split)
		}
	}
}

// TestEvalRefusesWhatItCannotMeasure: a suite naming a tool the registry lacks, a case without its tools, a
// floor naming a metric no suite reports, or bad flags fail with words that say which; a floor above what the
// search reaches fails with the metric, its value and the floor, after printing the report.
func TestEvalRefusesWhatItCannotMeasure(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	write := func(files map[string]string) string {
		dir := t.TempDir()
		for name, text := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
		}
		return dir
	}
	suite := `
- q: push this to-do back until next week
  tools: [os.defer_task]
  split: tune
- q: tell me a joke about plumbers
  tools: []
  split: held_out
`
	dir := write(map[string]string{"search.yaml": suite})
	code, out, errText := evalCLI(t, dbURL, "-dir", dir, "-json")
	require.Equal(t, 0, code, errText)
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	r := got.Reports[0]
	recall, ok := r.Metric(evals.SplitTune, evals.MetricRecall1)
	require.True(t, ok)
	require.Equal(t, 1.0, recall, "os.defer_task comes first for its own example")
	_, ok = r.Metric(evals.SplitTune, evals.MetricIrrelevance)
	require.False(t, ok, "no irrelevance without a case for it")
	require.Equal(t, 1, r.Splits[1].Irrelevant)

	// The floor of an unreachable recall fails, naming the metric; the report is still printed.
	dir = write(map[string]string{"search.yaml": suite + `
- q: what did I write about the Smith gutters?
  tools: [os.create_reminder]
  split: tune
`, "thresholds.yaml": "search:\n  tune: {recall_at_1: 0.9, mrr: 0.5}\n"})
	code, out, errText = evalCLI(t, dbURL, "-dir", dir)
	require.Equal(t, 1, code, errText)
	require.Contains(t, errText, "search tune recall_at_1 is 0.5000, below its floor 0.9")
	require.NotContains(t, errText, "mrr")
	require.Contains(t, out, `"what did I write about the Smith gutters?"`)
	require.Contains(t, out, "want os.create_reminder")

	// -from-receipts=false is brain eval itself.
	code, out, errText = evalCLI(t, dbURL, "-dir", dir, "-from-receipts=false", "-json", "-thresholds", "none")
	require.Equal(t, 0, code, errText)
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)

	// -split held_out scores only that split: the tune floor is not held.
	code, _, errText = evalCLI(t, dbURL, "-dir", dir, "-split", "held_out")
	require.Equal(t, 0, code, errText)

	for name, c := range map[string]struct {
		files map[string]string
		args  []string
		code  int
		says  string
	}{
		"unknown tool":     {files: map[string]string{"search.yaml": "- q: snooze it\n  tools: [os.snooze_task]\n  split: tune\n"}, code: 1, says: `unknown tool "os.snooze_task"`},
		"tools missing":    {files: map[string]string{"search.yaml": "- q: snooze it\n  split: tune\n"}, code: 1, says: "tools is missing"},
		"bad split":        {files: map[string]string{"search.yaml": "- q: snooze it\n  tools: []\n  split: test\n"}, code: 1, says: `split "test" is not one of`},
		"misspelt field":   {files: map[string]string{"search.yaml": "- q: snooze it\n  tool: [os.defer_task]\n  tools: []\n  split: tune\n"}, code: 1, says: "field tool not found"},
		"same query twice": {files: map[string]string{"search.yaml": "- q: snooze it\n  tools: []\n  split: tune\n- q: Snooze it\n  tools: []\n  split: tune\n"}, code: 1, says: "the same query as case 1"},
		"no suite":         {files: map[string]string{}, code: 1, says: "no suite in"},
		"floors, no suite": {files: map[string]string{"thresholds.yaml": "search:\n  tune: {mrr: 0.5}\n"}, args: []string{"-suite", "search"}, code: 1, says: "search.yaml: no such file"},
		"misspelt metric":  {files: map[string]string{"search.yaml": suite, "thresholds.yaml": "search:\n  tune: {recall_at_2: 0.5}\n"}, code: 1, says: `no metric "recall_at_2"`},
		"floor above one":  {files: map[string]string{"search.yaml": suite, "thresholds.yaml": "search:\n  tune: {mrr: 85}\n"}, code: 1, says: "a floor is from 0 to 1"},
		"unknown suite":    {files: map[string]string{"search.yaml": suite}, args: []string{"-suite", "serch"}, code: 2, says: `-suite "serch" is not all or one of`},
		"unknown split":    {files: map[string]string{"search.yaml": suite}, args: []string{"-split", "test"}, code: 2, says: `-split "test"`},
		"plan: unknown check": {files: map[string]string{"plan.yaml": planSuite + "- message: add a task to call Ann\n  calls:\n    - tool: os.create_task\n      args: {title: {like: Ann}}\n  split: tune\n"},
			code: 1, says: `case 1 ("add a task to call Ann"): call 1: title: unknown check "like"`},
		"plan: unknown property": {files: map[string]string{"plan.yaml": planSuite + "- message: add a task to call Ann\n  calls:\n    - tool: os.create_task\n      args: {titel: {exact: Ann}}\n  split: tune\n"},
			code: 1, says: `case 1 ("add a task to call Ann"): call 1: os.create_task has no input property "titel"`},
		"plan: unknown tool": {files: map[string]string{"plan.yaml": planSuite + "- message: snooze it\n  calls:\n    - tool: os.snooze_task\n  split: tune\n"},
			code: 1, says: `case 1 ("snooze it"): call 1: unknown tool "os.snooze_task"`},
		"plan: two checks": {files: map[string]string{"plan.yaml": planSuite + "- message: add a task to call Ann\n  calls:\n    - tool: os.create_task\n      args: {title: {exact: Ann, present: true}}\n  split: tune\n"},
			code: 1, says: "not 2 of them"},
		"plan: bad date": {files: map[string]string{"plan.yaml": planSuite + "- message: add a task to call Ann\n  calls:\n    - tool: os.create_task\n      args: {due_at: {date: next fortnight}}\n  split: tune\n"},
			code: 1, says: `due_at: date "next fortnight" is not a day`},
		"plan: bad pattern": {files: map[string]string{"plan.yaml": planSuite + "- message: add a task to call Ann\n  calls:\n    - tool: os.create_task\n      args: {title: {pattern: '(Ann'}}\n  split: tune\n"},
			code: 1, says: "title: pattern: error parsing regexp"},
		"plan: neither calls nor asks": {files: map[string]string{"plan.yaml": planSuite + "- message: add a task\n  split: tune\n"}, code: 1, says: "calls or asks is missing"},
		"plan: no timezone":            {files: map[string]string{"plan.yaml": "now: 2026-03-02T09:00:00+11:00\ncases:\n- message: hi\n  calls: []\n  split: tune\n"}, code: 1, says: "timezone is missing"},
		"plan: no now":                 {files: map[string]string{"plan.yaml": "timezone: Australia/Sydney\ncases:\n- message: hi\n  calls: []\n  split: tune\n"}, code: 1, says: `now "" is not a time`},
		"plan: below a floor": {files: map[string]string{"plan.yaml": planSuite + "- message: list my tasks\n  calls: []\n  split: tune\n", "thresholds.yaml": "plan:\n  tune: {irrelevance: 0.5}\n"},
			code: 1, says: "plan tune irrelevance is 0.0000, below its floor 0.5"},
		"plan: misspelt metric":        {files: map[string]string{"plan.yaml": planSuite + "- message: hi\n  calls: []\n  split: tune\n", "thresholds.yaml": "plan:\n  tune: {irrelevant: 0.5}\n"}, code: 1, says: `no metric "irrelevant"`},
		"floor not a number":           {files: map[string]string{"search.yaml": suite, "thresholds.yaml": "search:\n  tune: {mrr: .nan}\n"}, code: 1, says: "a floor is from 0 to 1, not NaN"},
		"misspelt suite":               {files: map[string]string{"search.yaml": suite, "thresholds.yaml": "serch:\n  tune: {mrr: 0.99}\n"}, code: 1, says: `floors for a suite "serch"`},
		"huge suite":                   {files: map[string]string{"search.yaml": suite + strings.Repeat("# a comment line of a file too big to read whole\n", 200_000)}, code: 1, says: "more than the 8 MiB a file of evals may have"},
		"huge thresholds":              {files: map[string]string{"search.yaml": suite, "thresholds.yaml": strings.Repeat("# a comment line of a file too big to read whole\n", 200_000)}, code: 1, says: "more than the 8 MiB a file of evals may have"},
		"floors, no case of the split": {files: map[string]string{"search.yaml": "- q: push this to-do back until next week\n  tools: [os.defer_task]\n  split: tune\n", "thresholds.yaml": "search:\n  held_out: {mrr: 0.99}\n"}, code: 1, says: "search held_out: no case"},
		"two documents":                {files: map[string]string{"search.yaml": suite + "---\n- q: snooze it\n  tools: [os.snooze_task]\n  split: tune\n"}, code: 1, says: "more than one YAML document"},
	} {
		dir := write(c.files)
		code, _, errText := evalCLI(t, dbURL, append([]string{"-dir", dir}, c.args...)...)
		require.Equal(t, c.code, code, "%s: %s", name, errText)
		require.Contains(t, errText, c.says, name)
	}

	// Without a database the command says what it needs.
	var out2, errOut bytes.Buffer
	code = cli([]string{"eval", "-dir", dir}, func(string) string { return "" }, &out2, &errOut)
	require.Equal(t, 2, code)
	require.Contains(t, errOut.String(), "DATABASE_URL is not set")
}

// TestToolSearchMinCoverageFromEnv: GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE sets the coverage below which no tool
// fits, 0 included (every match fits); unset is the default; anything but a number from 0 to 1 is refused at
// start-up, naming the variable.
func TestToolSearchMinCoverageFromEnv(t *testing.T) {
	t.Parallel()
	coverage := func(v string) (float64, error) {
		cfg, err := ConfigFromEnv(func(k string) string {
			if k == "GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE" {
				return v
			}
			return ""
		})
		return cfg.WithDefaults().Chat.ToolSearchMinCoverage, err
	}
	for v, want := range map[string]float64{"": postgres.ToolSearchMinCoverageDefault, "0": 0, "0.3": 0.3, "1": 1} {
		got, err := coverage(v)
		require.NoError(t, err, v)
		require.Equal(t, want, got, v)
	}
	for _, v := range []string{"-0.1", "1.5", "NaN", "lots"} {
		_, err := coverage(v)
		require.ErrorContains(t, err, "GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE", v)
	}
}

// planSuite is a plan suite's header: Monday 2 March 2026, 09:00 in Sydney.
const planSuite = "now: 2026-03-02T09:00:00+11:00\ntimezone: Australia/Sydney\ncases:\n"

// TestEvalPlanChecks: every kind of argument check holds when the planned argument meets it and is a miss,
// naming the check and the value planned, when it does not; a question back about another field, and a plan
// where none was expected, are misses too. Passing cases are tune, failing ones held out.
func TestEvalPlanChecks(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	task := func(name, args, split string) string {
		return "- message: create a task to call " + name + " tomorrow\n  calls:\n    - tool: os.create_task\n      args: " + args + "\n  split: " + split + "\n"
	}
	suite := planSuite +
		task("John", `{title: {pattern: '(?i)^call john$'}, due_at: {date: tomorrow 17:00}, domain: {exact: business}, priority: {one_of: [normal, high]}}`, "tune") +
		task("Ann", `{title: {present: true}, due_at: {date: tomorrow}}`, "tune") +
		task("Bob", `{domain: {exact: personal}}`, "held_out") +
		task("Sue", `{priority: {one_of: [low, high]}}`, "held_out") +
		task("Joe", `{title: {pattern: '^Ring'}}`, "held_out") +
		task("Kim", `{due_at: {date: next friday}}`, "held_out") +
		task("Lee", `{due_at: {date: tomorrow 09:00}}`, "held_out") +
		task("Max", `{description: {present: true}}`, "held_out") + `
- message: new lead Bob Smith 0412 345 678
  asks: suburb
  split: tune
- message: new lead Bob Jones 0412 345 679
  asks: phone
  split: held_out
- message: tell me a joke about plumbers
  calls: []
  split: tune
- message: list my tasks
  calls: []
  split: held_out
`
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(suite), 0o644))
	code, out, errText := evalCLI(t, dbURL, "-dir", dir, "-json")
	require.Equal(t, 0, code, errText)
	var got evalJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Reports, 1)
	r := got.Reports[0]
	require.Equal(t, evals.PlanSuite, r.Suite)
	for split, want := range map[string]map[string]float64{
		evals.SplitTune:    {evals.MetricExact: 1, evals.MetricPartial: 1, evals.MetricAsks: 1, evals.MetricIrrelevance: 1},
		evals.SplitHeldOut: {evals.MetricExact: 0, evals.MetricPartial: 1, evals.MetricAsks: 0, evals.MetricIrrelevance: 0},
	} {
		for metric, v := range want {
			got, ok := r.Metric(split, metric)
			require.True(t, ok, "%s %s", split, metric)
			require.Equal(t, v, got, "%s %s: %+v", split, metric, r.Misses)
		}
	}
	misses := map[string]evals.Miss{}
	for _, m := range r.Misses {
		require.Equal(t, evals.SplitHeldOut, m.Split, "a tune case passes: %+v", m)
		misses[m.Case] = m
	}
	require.Len(t, misses, 8)
	for message, says := range map[string]string{
		"create a task to call Bob tomorrow": `domain: exact "personal", not "business"`,
		"create a task to call Sue tomorrow": `priority: one_of ["low","high"], not "normal"`,
		"create a task to call Joe tomorrow": `title: pattern "^Ring", not "call Joe"`,
		"create a task to call Kim tomorrow": `due_at: date next friday, not "2026-03-03T17:00:00+11:00"`,
		"create a task to call Lee tomorrow": `due_at: date tomorrow 09:00, not "2026-03-03T17:00:00+11:00"`,
		"create a task to call Max tomorrow": `description: present true, not absent`,
	} {
		require.Contains(t, misses[message].Want, says, message)
		require.Contains(t, misses[message].Got, `os.create_task {"title":"call `, message)
	}
	require.Equal(t, "a question about phone", misses["new lead Bob Jones 0412 345 679"].Want)
	require.Contains(t, misses["new lead Bob Jones 0412 345 679"].Got, "asked about suburb")
	require.Equal(t, "nothing planned", misses["list my tasks"].Want)
	require.Contains(t, misses["list my tasks"].Got, "os.list_tasks")

	// A floor the planner does not reach fails, naming the metric; the misses are printed.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "thresholds.yaml"), []byte("plan:\n  held_out: {exact: 0.5, asks: 0}\n"), 0o644))
	code, out, errText = evalCLI(t, dbURL, "-dir", dir)
	require.Equal(t, 1, code, errText)
	require.Contains(t, errText, "plan held_out exact is 0.0000, below its floor 0.5")
	require.NotContains(t, errText, "asks")
	require.Contains(t, out, `"create a task to call Bob tomorrow"`)
}

// TestEvalChecksSayWhatJSONCanSay: a value a check compares, or a result a model gets back, is JSON as the
// model writes it. YAML reads an unquoted date as a time (sent as 2026-12-01T00:00:00Z), .nan and .inf are no
// JSON number, and a mapping's keys are strings in JSON: a case holding one of them could never pass, or would
// tell the model something else than written, so the suite is refused, naming where.
func TestEvalChecksSayWhatJSONCanSay(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	for name, c := range map[string]struct{ file, suite, says string }{
		"chat: unquoted date": {"chat.yaml", "- turns: [log the expense]\n  calls: [{tool: os.create_task, args: {title: {exact: 2026-12-01}}}]\n  split: tune\n",
			`title: exact: 2026-12-01 is a date in YAML, read as a time: quote it ("2026-12-01")`},
		"chat: date in one_of": {"chat.yaml", "- turns: [log the expense]\n  calls: [{tool: os.create_task, args: {title: {one_of: [a, 2026-12-01]}}}]\n  split: tune\n",
			"title: one_of: 2026-12-01 is a date in YAML"},
		"chat: not a number": {"chat.yaml", "- turns: [log the expense]\n  calls: [{tool: os.create_task, args: {title: {exact: .nan}}}]\n  split: tune\n",
			"title: exact: NaN is not a JSON value"},
		"chat: infinity": {"chat.yaml", "- turns: [log the expense]\n  calls: [{tool: os.create_task, args: {title: {one_of: [1, .inf]}}}]\n  split: tune\n",
			"title: one_of: +Inf is not a JSON value"},
		"chat: number keys": {"chat.yaml", "- turns: [log the expense]\n  calls: [{tool: os.create_task, args: {title: {exact: {1: a}}}}]\n  split: tune\n",
			"title: exact: a key 1 is not a string"},
		"chat: date in a result": {"chat.yaml", "- turns: [what is due]\n  results: {os.list_tasks: {tasks: [{due: 2026-12-01}]}}\n  calls: []\n  split: tune\n",
			"results: os.list_tasks: tasks.0.due: 2026-12-01 is a date in YAML"},
		"plan: unquoted date": {"plan.yaml", planSuite + "- message: add a task to call Ann\n  calls:\n    - tool: os.create_task\n      args: {title: {exact: 2026-03-03}}\n  split: tune\n",
			`title: exact: 2026-03-03 is a date in YAML, read as a time: quote it ("2026-03-03")`},
	} {
		dir := writeSuite(t, map[string]string{c.file: c.suite})
		code, _, errText := evalCLI(t, dbURL, "-dir", dir, "-thresholds", "none")
		require.Equal(t, 1, code, "%s: %s", name, errText)
		require.Contains(t, errText, c.says, name)
	}
	// Quoted, the date is the text the model writes: the suite loads.
	dir := writeSuite(t, map[string]string{"chat.yaml": "- turns: [log the expense]\n  results: {os.list_tasks: {due: \"2026-12-01\"}}\n  calls: [{tool: os.create_task, args: {title: {exact: \"2026-12-01\"}}}]\n  split: tune\n"})
	code, _, errText := evalCLI(t, dbURL, "-dir", dir, "-thresholds", "none")
	require.Equal(t, 0, code, errText)
}
