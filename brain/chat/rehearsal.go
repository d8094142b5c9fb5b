package chat

import (
	"context"
	"encoding/json"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Rehearsal is a conversation with an agent that has no effects, for evals: the agent's system prompt and
// functions as a turn gives them, and each tool call of the LLM's screened as a turn screens it (meta-tools
// answered, malformed or disallowed calls refused, arguments read back and validated against the tool's
// schema, a refusal sent back as the loop sends it); a call that passes is not made, and is answered with
// the result its caller gives, as a succeeded receipt's result is.
type Rehearsal struct {
	c *Chat
	r *chatRun
}

// RehearsedCall is one tool call of an LLM answer as a rehearsal answered it.
type RehearsedCall struct {
	// Tool is the registry tool the call names; "" for a meta-tool or a function the agent lacks.
	Tool string
	// Input is the input a call that passed would be made with; nil for a call that was refused or answered
	// by the brain.
	Input json.RawMessage
	// Status is the call's status as a chat response reports it: succeeded for a call that passed, or the
	// refusal (brain.ChatCallInvalidArguments ...), or brain.ChatCallAnswered for a meta-tool.
	Status string
	// Message is the tool message the LLM is sent.
	Message llm.Message
}

// NewRehearsal prepares a conversation with the agent slug as a turn of Chat is prepared, with the agent's
// tools and skills for no particular user. cfg is the chat's (ToolSearchThreshold and MaxToolCallsPerAnswer
// apply). client's default model is the model when neither the caller nor the agent names one.
func NewRehearsal(ctx context.Context, client llm.Client, pool *pgxpool.Pool, reg *registry.Registry, slug string, cfg Config) (*Rehearsal, error) {
	agent, err := postgres.AgentGet(ctx, pool, slug)
	if err != nil {
		return nil, err
	}
	c := New(client, reg, pool, nil, nil, cfg)
	r := &chatRun{agent: agent, req: &brain.ChatParams{}, resp: &brain.ChatResponse{}}
	if err := c.prepare(ctx, pool, r); err != nil {
		return nil, err
	}
	return &Rehearsal{c: c, r: r}, nil
}

// MaxSteps is the agent's max_tool_iterations: the most LLM answers with calls one user message gets.
func (h *Rehearsal) MaxSteps() int { return h.r.agent.MaxToolIterations }

// Request is the next LLM request of the conversation, as a turn makes it: model ("" for the agent's, or
// the client's default), the system prompt, the functions offered now (describe_tool widens them) and the
// agent's temperature.
func (h *Rehearsal) Request(model string, conversation []llm.Message) *llm.Request {
	if model == "" {
		model = h.c.model(h.r)
	}
	return &llm.Request{Model: model, System: h.r.system, Messages: conversation, Tools: h.c.offeredDefs(h.r), Temperature: h.r.agent.Temperature}
}

// Calls screens an LLM answer's calls and answers each, in order; a call that passes gets result(tool) as its
// result. As in the loop, the arguments of a call not made for its size or the answer's number of calls are
// blanked in calls, the answer as it is sent again.
func (h *Rehearsal) Calls(ctx context.Context, calls []llm.ToolCall, result func(tool string) json.RawMessage) []RehearsedCall {
	out := make([]RehearsedCall, len(calls))
	for i, tc := range calls {
		o := &toolOutcome{msg: postgres.SessionMessage{Message: llm.Message{Role: "tool", ToolCallID: tc.ID}}}
		tool, input := h.c.screenCall(ctx, h.r, calls, i, o)
		switch {
		case tool != nil:
			rec := &registry.Receipt{Status: registry.StatusSucceeded, Result: result(tool.Name)}
			o.msg.Content, o.msg.IsError, o.report.Status = toolResultContent(rec, uuid.Nil, nil, false)
			out[i] = RehearsedCall{Tool: tool.Name, Input: input, Status: o.report.Status, Message: o.msg.Message}
			continue
		case o.program != nil:
			// A program would make calls of its own: not rehearsed.
			o.fail(registry.CodeValidation, "run_code is not available in a rehearsal: call the tools one by one", nil)
			o.report.Status = brain.ChatCallInvalidArguments
		}
		out[i] = RehearsedCall{Tool: o.report.Tool, Status: o.report.Status, Message: o.msg.Message}
	}
	return out
}

// NextTurn starts a user turn after the first, as the loop starts a new turn of a session: history is the
// conversation so far; the tools described in earlier turns must be described again (a turn offers only what
// it described), and the skills loaded in them stay loaded.
func (h *Rehearsal) NextTurn(history []llm.Message) {
	h.r.history = history
	h.r.offered = map[string]bool{}
	h.r.discloseSkills()
}
