package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ApproveTool decides a call awaiting approval (docs/governance.md#approvals), for callers holding approve.
const ApproveTool = "gem.approve"

const approveInput = `{
	"type": "object",
	"properties": {
		"call_id": {"type": "string", "format": "uuid", "description": "The call awaiting approval."},
		"approve": {"type": "boolean", "description": "true to let the call run, false to reject it."},
		"reason": {"type": "string", "maxLength": 2000, "description": "Why; required to reject. Recorded with the decision."}
	},
	"required": ["call_id", "approve"],
	"additionalProperties": false
}`

var approveSchema = registry.MustCompileSchema(ApproveTool+" input", []byte(approveInput))

var approveDefinition = &mcp.Tool{
	Name:  ApproveTool,
	Title: "Approve or reject a call (gem.approve)",
	Description: "Decide a GEM call that awaits approval (a tool call answered {\"status\": \"awaiting_approval\"}): approved, it runs; " +
		"rejected, its receipt says who rejected it and why. Only for callers granted the approve permission, never for an agent.",
	InputSchema: llm.ModelInputSchema(json.RawMessage(approveInput)), // validated against approveInput whole
	OutputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"call_id": {"type": "string", "format": "uuid"},
			"status": {"type": "string", "description": "The call's status after the decision (queued, failed), or refused."},
			"decision": {"type": "string", "enum": ["approved", "rejected"]},
			"error": {"type": "object", "additionalProperties": true}
		},
		"required": ["status"],
		"additionalProperties": true
	}`),
	Annotations: &mcp.ToolAnnotations{Title: "Approve or reject a call (gem.approve)", DestructiveHint: new(bool), OpenWorldHint: new(bool)},
}

// approve answers gem.approve in the caller's name. A session speaking for an agent may not decide: an LLM
// must never approve what an LLM asked for.
func (s *Server) approve(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c := callerOf(ctx)
	input := []byte(req.Params.Arguments)
	if len(input) == 0 || string(input) == "null" {
		input = []byte("{}")
	}
	if err := approveSchema.Validate(input); err != nil {
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			ve.Tool, ve.Schema = ApproveTool, "input"
		}
		return invalidArguments(ApproveTool, err), nil
	}
	var in struct {
		CallID  uuid.UUID `json:"call_id"`
		Approve bool      `json:"approve"`
		Reason  string    `json:"reason"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return invalidArguments(ApproveTool, brain.Errorf(brain.EINVALID, "call_id is not a UUID")), nil
	}
	refuse := func(code, message string) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true,
			StructuredContent: map[string]any{"call_id": in.CallID, "status": "refused", "error": map[string]any{"code": code, "message": message}},
			Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s refused: %s: %s", ApproveTool, code, message)}}}
	}
	switch {
	case c.Agent != "":
		return refuse(brain.EFORBIDDEN, fmt.Sprintf("this session speaks for agent %q, and an agent may not decide approvals", c.Agent)), nil
	case !in.Approve && in.Reason == "":
		return invalidArguments(ApproveTool, brain.Errorf(brain.EINVALID, "a rejection needs a reason (its receipt says it)")), nil
	}
	status, err := gemsql.CallDecide(ctx, s.pool, in.CallID, in.Approve, in.Reason, c.Name)
	var de *gemsql.DecisionError
	switch {
	case errors.As(err, &de) && errors.Is(err, gemsql.ErrMayNotDecide):
		return refuse(brain.EFORBIDDEN, de.Message), nil
	case errors.As(err, &de):
		return refuse(brain.ECONFLICT, de.Message), nil
	case err != nil:
		return nil, s.internal(ctx, err, "error deciding the call")
	}
	decision := "rejected"
	if in.Approve {
		decision = "approved"
	}
	return &mcp.CallToolResult{StructuredContent: map[string]any{"call_id": in.CallID, "status": status, "decision": decision},
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("call %s %s by %s; it is now %s", in.CallID, decision, c.Name, status)}}}, nil
}
