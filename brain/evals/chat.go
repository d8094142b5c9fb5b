package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
)

// ChatSuite is the chat suite's name and file (evals/chat.yaml).
const ChatSuite = "chat"

// ChatAgentDefault is the agent a chat case talks to when it names none.
const ChatAgentDefault = "office-assistant"

// The chat suite's metrics (irrelevance is MetricIrrelevance).
const (
	MetricCallPrecision = "call_precision"
	MetricCallRecall    = "call_recall"
	MetricOrder         = "order"
	// MetricEveryRun is the share of cases right in every one of their runs, when each case runs more than
	// once (pass^k): a model right half the time scores half the calls, and no case.
	MetricEveryRun = "every_run"
)

// ChatCase is a short conversation with an agent and the calls it should make, in order. No calls means the
// agent should make none (answer, or ask).
type ChatCase struct {
	// Agent is the agent's slug: its system prompt and tools are the ones used.
	Agent string
	// Turns are the user's messages, one after the other; each is answered until the model answers in text.
	Turns []string
	// Results are what a call of each tool gets back, as its receipt's result; a tool without one gets {}.
	// No tool runs: an eval has no effects.
	Results map[string]json.RawMessage
	// Calls are the calls expected, in order; calls of the same Group may come in any order among themselves.
	Calls []ChatCall
	Split string
}

// ChatCall is a call a chat case expects: its tool, a check per argument it cares about, and its place in
// the order (calls of one unordered group share it).
type ChatCall struct {
	Tool  string
	Args  []ArgCheck
	Group int
}

type chatCaseFile struct {
	Agent   string          `yaml:"agent"`
	Turns   []string        `yaml:"turns"`
	Results map[string]any  `yaml:"results"`
	Calls   *[]chatCallFile `yaml:"calls"`
	Split   string          `yaml:"split"`
}

// chatCallFile is an expected call as written, or a group of calls that may come in any order.
type chatCallFile struct {
	Tool      string                    `yaml:"tool"`
	Args      map[string]map[string]any `yaml:"args"`
	Unordered []chatCallFile            `yaml:"unordered"`
}

// LoadChat reads dir/chat.yaml. Every case needs its turns, its calls ([] when the agent should make none)
// and its split; a call's tool must be in reg and each checked property in the tool's input schema, and so
// must every tool with a result. A problem names its case.
func LoadChat(dir string, reg *registry.Registry) ([]ChatCase, error) {
	var file []chatCaseFile
	if err := readSuite(dir, ChatSuite, &file); err != nil {
		return nil, err
	}
	var problems []string
	seen := map[string]int{}
	cases := make([]ChatCase, 0, len(file))
	for i, f := range file {
		at := fmt.Sprintf("case %d", i+1)
		if len(f.Turns) > 0 {
			at += fmt.Sprintf(" (%q)", f.Turns[0])
		}
		problem := func(format string, args ...any) { problems = append(problems, at+": "+fmt.Sprintf(format, args...)) }
		c := ChatCase{Agent: f.Agent, Split: f.Split, Results: map[string]json.RawMessage{}}
		if c.Agent == "" {
			c.Agent = ChatAgentDefault
		}
		for _, t := range f.Turns {
			if t = strings.TrimSpace(t); t == "" {
				problem("a turn is empty")
			}
			c.Turns = append(c.Turns, strings.TrimSpace(t))
		}
		key := strings.ToLower(c.Agent + "\n" + strings.Join(c.Turns, "\n"))
		switch {
		case len(c.Turns) == 0:
			problem("turns is missing (the user's messages)")
		case seen[key] > 0:
			problem("the same conversation as case %d", seen[key])
		}
		seen[key] = i + 1
		if f.Calls == nil {
			problem("calls is missing (calls: [] when the agent should make none)")
		}
		if err := checkSplit(f.Split); err != nil {
			problem("%v", err)
		}
		for _, tool := range slices.Sorted(maps.Keys(f.Results)) {
			result := f.Results[tool]
			if _, ok := reg.Tool(tool); !ok {
				problem("results: unknown tool %q", tool)
			}
			if err := notJSON(result); err != nil {
				problem("results: %s: %v", tool, err)
				continue
			}
			b, err := json.Marshal(result)
			if err != nil {
				problem("results: %s: %v", tool, err)
			}
			c.Results[tool] = b
		}
		var calls []chatCallFile
		if f.Calls != nil {
			calls = *f.Calls
		}
		for group, written := range calls {
			members := []chatCallFile{written}
			if written.Unordered != nil {
				if written.Tool != "" || written.Args != nil {
					problem("call %d: a call is a tool with its args, or an unordered group, not both", group+1)
				}
				if len(written.Unordered) < 2 {
					problem("call %d: an unordered group holds two calls or more", group+1)
				}
				members = written.Unordered
			}
			for _, m := range members {
				call, ps := loadChatCall(m, reg, group)
				for _, p := range ps {
					problem("call %d: %s", group+1, p)
				}
				c.Calls = append(c.Calls, call)
			}
		}
		cases = append(cases, c)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s.yaml: %s", ChatSuite, strings.Join(problems, "; "))
	}
	return cases, nil
}

func loadChatCall(f chatCallFile, reg *registry.Registry, group int) (ChatCall, []string) {
	call := ChatCall{Tool: f.Tool, Group: group}
	if f.Unordered != nil {
		return call, []string{"unordered groups do not nest"}
	}
	tool, ok := reg.Tool(f.Tool)
	if !ok {
		return call, []string{fmt.Sprintf("unknown tool %q", f.Tool)}
	}
	checks, problems := loadChecks(f.Args, tool.HasInputProperty, time.Time{})
	for i := range problems {
		problems[i] = tool.Name + ": " + problems[i]
	}
	call.Args = checks
	return call, problems
}

// ChatOpener opens a rehearsal of an agent: a conversation with no effects (chat.NewRehearsal).
type ChatOpener func(ctx context.Context, agent string) (*chat.Rehearsal, error)

// madeCall is a call a case's conversation made: it passed the chat loop's checks, and would have run.
type madeCall struct {
	tool  string
	input json.RawMessage
	args  map[string]any
}

// RunChat holds every case's conversation with its agent over client, as the chat loop would (the agent's
// system prompt and functions, each call screened and validated as a turn does, a refusal sent back to the
// model), each call that passes answered with the case's result for its tool instead of being made; each user
// turn goes on until the model answers in text or makes the agent's max_tool_iterations rounds of calls. model
// is the model asked ("" for the agent's or the client's). It scores each split: call precision (the calls
// made that a case expects) and recall (the calls expected that were made: the tool, and every argument check
// held) and order (the cases with two calls matched or more whose matched calls came in the order expected)
// over the cases with calls; irrelevance (no call made or tried: the brain's own meta-tools aside) over those
// without. A model that fails a request fails its case, not the run. With runs above 1 each case is held that
// many times (a model answers differently each time): the metrics count every run, and every_run is the
// share of cases right in all of them.
func RunChat(ctx context.Context, cases []ChatCase, client llm.Client, model string, runs int, open ChatOpener) (*Report, error) {
	runs = max(runs, 1)
	tallies := map[string]*chatTally{}
	report := &Report{Suite: ChatSuite, Model: model, Runs: runs, Misses: []Miss{}}
	// Without a model named, each agent's own model (or the client's default) is asked: the report names those.
	asked := map[string]bool{}
	defer func() {
		if model == "" {
			report.Model = strings.Join(slices.Sorted(maps.Keys(asked)), ", ")
		}
	}()
	for _, c := range cases {
		t := tallies[c.Split]
		if t == nil {
			t = &chatTally{}
			tallies[c.Split] = t
		}
		t.cases++
		right := 0
		for run := 1; run <= runs; run++ {
			h, err := open(ctx, c.Agent)
			if err != nil {
				return nil, fmt.Errorf("agent %s: %w", c.Agent, err)
			}
			asked[h.Request(model, nil).Model] = true
			conv := converse(ctx, c, h, client, model)
			miss := Miss{Split: c.Split, Case: strings.Join(c.Turns, " / "), Want: describeWanted(c.Calls), Got: conv.describe()}
			if runs > 1 {
				miss.Case += fmt.Sprintf(" (run %d of %d)", run, runs)
			}
			if missed := scoreChat(t, c, conv, &miss); missed {
				report.Misses = append(report.Misses, miss)
			} else {
				right++
			}
		}
		if len(c.Calls) == 0 {
			t.irrelevant++
		} else {
			t.relevant++
		}
		if right == runs {
			t.steady++
		}
	}
	for _, split := range Splits {
		t := tallies[split]
		if t == nil {
			continue
		}
		m := map[string]float64{}
		if t.relevant > 0 {
			m[MetricCallPrecision], m[MetricCallRecall] = ratio(t.matched, t.made), ratio(t.matched, t.expected)
			if t.orderable > 0 {
				m[MetricOrder] = ratio(t.ordered, t.orderable)
			}
		}
		if t.irrelevant > 0 {
			m[MetricIrrelevance] = ratio(t.rejected, t.irrelevant*runs)
		}
		if runs > 1 {
			m[MetricEveryRun] = ratio(t.steady, t.cases)
		}
		report.Splits = append(report.Splits, SplitReport{Split: split, Cases: t.cases, Relevant: t.relevant, Irrelevant: t.irrelevant, Metrics: m})
	}
	return report, nil
}

// chatTally counts a split's cases (relevant: with calls; irrelevant: without; steady: right in every run) and,
// over every run, the calls made, expected and matched, the runs with two calls matched or more (orderable)
// and those in order, and the runs of cases without calls that made none (rejected).
type chatTally struct {
	cases, relevant, irrelevant, steady, made, expected, matched, ordered, orderable, rejected int
}

// scoreChat adds one run of a case to its split's tally and reports whether it missed, saying why in miss.
func scoreChat(t *chatTally, c ChatCase, conv *conversation, miss *Miss) (missed bool) {
	if len(c.Calls) == 0 {
		if len(conv.made) == 0 && len(conv.refused) == 0 && conv.failure == "" {
			t.rejected++
			return false
		}
		return true
	}
	at, why := matchCalls(c.Calls, conv.made)
	matched, inOrder := 0, true
	for i, pos := range at {
		if pos < 0 {
			continue
		}
		matched++
		for j, other := range at {
			if other >= 0 && c.Calls[j].Group < c.Calls[i].Group && other > pos {
				inOrder = false
			}
		}
	}
	t.made += len(conv.made)
	t.expected += len(c.Calls)
	t.matched += matched
	if matched >= 2 {
		t.orderable++
		if inOrder {
			t.ordered++
		}
	}
	if matched < len(c.Calls) || len(conv.made) > matched || !inOrder || conv.failure != "" {
		if !inOrder {
			why = append(why, "the calls came out of order")
		}
		if len(why) > 0 {
			miss.Got += "; " + strings.Join(why, "; ")
		}
		return true
	}
	return false
}

// ratio is n/d, 0 when d is.
func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// conversation is what became of a case's conversation: the calls made, those refused, the last reply, and
// why it ended early, if it did.
type conversation struct {
	made    []madeCall
	refused []string
	reply   string
	failure string
}

// converse holds a case's conversation with its agent's rehearsal.
func converse(ctx context.Context, c ChatCase, h *chat.Rehearsal, client llm.Client, model string) *conversation {
	conv := &conversation{}
	result := func(tool string) json.RawMessage {
		if r, ok := c.Results[tool]; ok {
			return r
		}
		return json.RawMessage(`{}`)
	}
	var messages []llm.Message
	for n, turn := range c.Turns {
		if n > 0 {
			h.NextTurn(messages)
		}
		messages = append(messages, llm.Message{Role: "user", Content: turn})
		for step := 1; ; step++ {
			resp, err := client.Complete(ctx, h.Request(model, messages))
			if err != nil {
				conv.failure = "the model failed: " + err.Error()
				return conv
			}
			messages = append(messages, llm.Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls})
			if len(resp.ToolCalls) == 0 {
				conv.reply = resp.Content
				break
			}
			for i, rc := range h.Calls(ctx, resp.ToolCalls, result) {
				messages = append(messages, rc.Message)
				switch {
				case rc.Input != nil:
					var args map[string]any
					_ = json.Unmarshal(rc.Input, &args)
					conv.made = append(conv.made, madeCall{tool: rc.Tool, input: rc.Input, args: args})
				case rc.Status != brain.ChatCallAnswered:
					conv.refused = append(conv.refused, fmt.Sprintf("%s refused (%s): %s", nameOr(rc.Tool, resp.ToolCalls[i].Name), rc.Status, refusalMessage(rc.Message.Content)))
				}
			}
			if step >= h.MaxSteps() {
				conv.failure = fmt.Sprintf("no answer after %d rounds of calls (the agent's max_tool_iterations)", step)
				return conv
			}
		}
	}
	return conv
}

func nameOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// refusalMessage is the error message of a refused call's tool message.
func refusalMessage(content string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(content), &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	return content
}

// describe says what a conversation did: the calls made, with their input, those refused, and how it ended.
func (c *conversation) describe() string {
	var parts []string
	for _, m := range c.made {
		parts = append(parts, m.tool+" "+string(m.input))
	}
	if len(parts) == 0 {
		parts = append(parts, "no call")
	}
	parts = append(parts, c.refused...)
	switch {
	case c.failure != "":
		parts = append(parts, c.failure)
	case c.reply != "":
		parts = append(parts, fmt.Sprintf("answered %q", cut(c.reply, 100)))
	}
	return strings.Join(parts, "; ")
}

// cut shortens s to about n characters.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// describeWanted says what a case expects: its calls in order, an unordered group in braces.
func describeWanted(calls []ChatCall) string {
	if len(calls) == 0 {
		return "no call"
	}
	var groups []string
	for i := 0; i < len(calls); {
		j := i
		var members []string
		for ; j < len(calls) && calls[j].Group == calls[i].Group; j++ {
			members = append(members, describeCall(calls[j]))
		}
		if len(members) > 1 {
			groups = append(groups, "{"+strings.Join(members, ", ")+"} in any order")
		} else {
			groups = append(groups, members[0])
		}
		i = j
	}
	return strings.Join(groups, " then ")
}

func describeCall(c ChatCall) string {
	var checks []string
	for _, a := range c.Args {
		checks = append(checks, a.Property+" "+a.Written)
	}
	return c.Tool + "(" + strings.Join(checks, ", ") + ")"
}

// matchCalls pairs expected calls with calls made: a call made matches an expected one when it is of its tool
// and every check holds, and each call made matches one expected call at most. It finds the most pairs there
// can be (a greedy pairing can take a call another expected call needed), and among those keeps the order
// expected where a swap of two pairs can: at[i] is the made call's index, -1 when none matched; why says, for
// each call that did not match, what came closest.
func matchCalls(want []ChatCall, made []madeCall) (at []int, why []string) {
	fits := make([][]bool, len(want))
	for i, w := range want {
		fits[i] = make([]bool, len(made))
		for j, m := range made {
			fits[i][j] = m.tool == w.Tool && checkArgs(w.Args, m.args) == nil
		}
	}
	at = make([]int, len(want))
	for i := range at {
		at[i] = -1
	}
	by := make([]int, len(made)) // the expected call each call made is paired with
	for j := range by {
		by[j] = -1
	}
	// Kuhn's augmenting paths: expected calls in order, calls made in the order they came.
	var augment func(i int, seen []bool) bool
	augment = func(i int, seen []bool) bool {
		for j := range made {
			if !fits[i][j] || seen[j] {
				continue
			}
			seen[j] = true
			if by[j] < 0 || augment(by[j], seen) {
				at[i], by[j] = j, i
				return true
			}
		}
		return false
	}
	for i := range want {
		augment(i, make([]bool, len(made)))
	}
	// Two pairs out of order whose calls each fit the other's expected call swap, until none is left.
	for swapped := true; swapped; {
		swapped = false
		for i := range want {
			for k := range want {
				if a, b := at[i], at[k]; a >= 0 && b >= 0 && want[i].Group < want[k].Group && a > b && fits[i][b] && fits[k][a] {
					at[i], at[k] = b, a
					swapped = true
				}
			}
		}
	}
	for i, w := range want {
		if at[i] >= 0 {
			continue
		}
		var nearest error
		called := false
		for _, m := range made {
			if m.tool != w.Tool {
				continue
			}
			called = true
			if err := checkArgs(w.Args, m.args); err != nil {
				nearest = err
				break
			}
		}
		switch {
		case nearest != nil:
			why = append(why, fmt.Sprintf("%s: %v", w.Tool, nearest))
		case called:
			why = append(why, w.Tool+" was called fewer times than expected")
		default:
			why = append(why, w.Tool+" was not called")
		}
	}
	return at, why
}

// checkArgs says which checks an input fails, nil when it passes them all.
func checkArgs(checks []ArgCheck, input map[string]any) error {
	var failed []string
	for _, c := range checks {
		if err := c.CheckInput(input, time.UTC); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(failed, ", "))
}
