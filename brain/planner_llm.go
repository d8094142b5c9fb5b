package brain

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gemhq/gem/registry"
)

// LLMPlanner plans POST /brain/run with one LLM turn: the model sees the message and the registry's tools
// and answers with the tool calls to make (or, when it makes none, with text that becomes the answer). The
// calls are then validated and enqueued like the rules planner's.
type LLMPlanner struct {
	llm LLM
	reg *registry.Registry
}

// NewLLMPlanner plans with llm over the registry's tools.
func NewLLMPlanner(llm LLM, reg *registry.Registry) *LLMPlanner {
	return &LLMPlanner{llm: llm, reg: reg}
}

// Name is "llm".
func (p *LLMPlanner) Name() string { return "llm" }

const llmPlannerSystem = `You plan tool calls for GEM. Read the request and call the tools that do what it asks, all at once ` +
	`(they run in parallel; you will not see their results). Use only the tools given. If nothing fits, answer in one ` +
	`or two sentences saying what you can do instead.`

// Plan asks the LLM once. With many tools, the most relevant (by name and description) are offered.
func (p *LLMPlanner) Plan(ctx context.Context, req PlanRequest) (*Plan, error) {
	tools := p.reg.Tools()
	if len(tools) > ToolSearchThresholdDefault {
		if ranked := rankTools(tools, req.Message, ToolSearchThresholdDefault); len(ranked) > 0 {
			tools = ranked
		}
	}
	ts := NewToolSet(tools)
	message := req.Message
	if len(req.Context) > 0 {
		var ids []string
		for _, k := range sortedContextKeys(req.Context) {
			ids = append(ids, fmt.Sprintf("%s=%v", k, req.Context[k]))
		}
		message += "\n\n(Context: " + strings.Join(ids, ", ") + ")"
	}
	resp, err := p.llm.Complete(ctx, &LLMRequest{Model: p.llm.DefaultModel(), System: llmPlannerSystem,
		Messages: []Message{{Role: "user", Content: message}}, Tools: ts.Defs()})
	if err != nil {
		return nil, err
	}
	plan := &Plan{}
	for _, tc := range resp.ToolCalls {
		tool, ok := ts.Tool(tc.Name)
		if !ok {
			return nil, Errorf(EINVALID, "the LLM asked for a tool that does not exist: %q", tc.Name)
		}
		input, err := InputFromArguments(tool, tc.Arguments)
		if err != nil {
			return nil, Errorf(EINVALID, "the LLM's arguments for %s are unusable: %v", tool.Name, err)
		}
		plan.Calls = append(plan.Calls, PlannedCall{Tool: tool.Name, Input: input, Reason: "planned by the LLM"})
	}
	if len(plan.Calls) == 0 {
		plan.Reason = "the LLM planned no tool calls"
		plan.Help = resp.Content
		return plan, nil
	}
	plan.Reason = fmt.Sprintf("the LLM (%s %s) planned %d %s", p.llm.Provider(), p.llm.DefaultModel(), len(plan.Calls), plural(len(plan.Calls), "call", "calls"))
	return plan, nil
}

func sortedContextKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
