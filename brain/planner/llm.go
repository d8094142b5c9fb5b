package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
)

// LLMPlanner plans POST /brain/run with one LLM turn: the model sees the message and the registry's tools
// and answers with the tool calls to make (or, when it makes none, with text that becomes the answer). The
// calls are then validated and enqueued like the rules planner's.
type LLMPlanner struct {
	llm llm.Client
	reg *registry.Registry
	db  gemsql.DBTX
	// MinCoverage is the coverage of the request below which the searched tools do not fit it
	// (postgres.ToolsFit): the model is then offered every tool.
	MinCoverage float64
}

// NewLLMPlanner plans with llm over the registry's tools; with many tools, the tool search on db picks those
// offered.
func NewLLMPlanner(client llm.Client, reg *registry.Registry, db gemsql.DBTX) *LLMPlanner {
	return &LLMPlanner{llm: client, reg: reg, db: db}
}

// Name is "llm".
func (p *LLMPlanner) Name() string { return "llm" }

const llmPlannerSystem = `You plan tool calls for GEM. Read the request and call the tools that do what it asks, all at once ` +
	`(they run in parallel; you will not see their results). Use only the tools given. If the request is a question, ` +
	`answer it in a few sentences without calling tools; if nothing fits, say in one or two sentences what you can do instead.`

// Plan asks the LLM once. With many tools, the most relevant (by the tool search) are offered.
func (p *LLMPlanner) Plan(ctx context.Context, req brain.PlanRequest) (*brain.Plan, error) {
	tools := p.reg.Tools()
	if len(tools) > llm.ToolSearchThresholdDefault {
		hits, err := postgres.ToolSearch(ctx, p.db, tools, req.Message, llm.ToolSearchThresholdDefault)
		if err != nil {
			return nil, err
		}
		// When no tool fits, the model is offered every tool rather than none: the search can be wrong about a
		// request it has no words for, and the model decides better than a threshold whether one fits.
		if postgres.ToolsFit(hits, p.MinCoverage) {
			tools = make([]*registry.Tool, len(hits))
			for i, h := range hits {
				tools[i] = h.Tool
			}
		}
	}
	ts := llm.NewToolSet(tools)
	message := req.Message
	if len(req.Context) > 0 {
		var ids []string
		for _, k := range sortedContextKeys(req.Context) {
			ids = append(ids, fmt.Sprintf("%s=%v", k, req.Context[k]))
		}
		message += "\n\n(Context: " + strings.Join(ids, ", ") + ")"
	}
	resp, err := p.llm.Complete(ctx, &llm.Request{Model: p.llm.DefaultModel(), System: llmPlannerSystem,
		Messages: []llm.Message{{Role: "user", Content: message}}, Tools: ts.Defs()})
	if err != nil {
		return nil, err
	}
	plan := &brain.Plan{}
	for _, tc := range resp.ToolCalls {
		tool, ok := ts.Tool(tc.Name)
		if !ok {
			return nil, brain.Errorf(brain.EINVALID, "the LLM asked for a tool that does not exist: %q", tc.Name)
		}
		input, err := llm.InputFromArguments(tool, tc.Arguments)
		if err != nil {
			return nil, brain.Errorf(brain.EINVALID, "the LLM's arguments for %s are unusable: %v", tool.Name, err)
		}
		plan.Calls = append(plan.Calls, brain.PlannedCall{Tool: tool.Name, Input: input, Reason: "planned by the LLM"})
	}
	if len(plan.Calls) == 0 {
		// Text without calls answers the message (a question, or what it can do instead).
		plan.Reason = "the LLM answered without tool calls"
		if plan.Answer = strings.TrimSpace(resp.Content); plan.Answer == "" {
			plan.Help = "The LLM planned nothing for that message; say what you want done."
		}
		return plan, nil
	}
	plan.Reason = fmt.Sprintf("the LLM (%s %s) planned %d %s", p.llm.Provider(), p.llm.DefaultModel(), len(plan.Calls), brain.Plural(len(plan.Calls), "call", "calls"))
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
