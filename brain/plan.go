package brain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
)

// Mode is what a run does with its plan.
type Mode string

// Run modes.
const (
	// ModeAnswer plans and says what would run; nothing is enqueued.
	ModeAnswer Mode = "answer"
	// ModePlan stores the plan for approval (POST /brain/runs/{id}/approve).
	ModePlan Mode = "plan"
	// ModeEnqueue enqueues the calls and returns their ids at once.
	ModeEnqueue Mode = "enqueue"
	// ModeEnqueueAndWait enqueues, waits for every receipt and answers from them.
	ModeEnqueueAndWait Mode = "enqueue_and_wait"
)

// RunRequest is the body of POST /brain/run.
type RunRequest struct {
	// Message is what the person asked, in their words.
	Message string `json:"message"`
	// Mode is what to do with the plan. Defaults to enqueue_and_wait.
	Mode Mode `json:"mode,omitempty"`
	// ConversationID groups runs of one conversation.
	ConversationID string `json:"conversation_id,omitempty"`
	// Context carries ids (lead_id, job_id, quote_id, ...) merged into planned inputs whose schema has
	// that property and that do not set it themselves.
	Context map[string]any `json:"context,omitempty"`
	// Limits bound the run.
	Limits *Limits `json:"limits,omitempty"`
}

// Limits bound a run.
type Limits struct {
	// MaxToolCalls is the most calls the run may plan (1..50). Defaults to 10.
	MaxToolCalls int `json:"max_tool_calls,omitempty"`
	// WaitTimeoutMS is how long enqueue_and_wait waits for receipts (1,000..120,000). Defaults to 30,000.
	WaitTimeoutMS int `json:"wait_timeout_ms,omitempty"`
}

// runRequestSchema is checked before anything else, so every mistake in a request is reported at once.
var runRequestSchema = registry.MustCompileSchema("run request", []byte(fmt.Sprintf(`{
	"type": "object",
	"properties": {
		"message": {"type": "string", "minLength": 1, "maxLength": 10000},
		"mode": {"type": "string", "enum": ["answer", "plan", "enqueue", "enqueue_and_wait"]},
		"conversation_id": {"type": "string", "maxLength": 200},
		"context": {
			"type": "object",
			"propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,63}$"},
			"additionalProperties": {"type": ["string", "number", "boolean"]},
			"maxProperties": 50
		},
		"limits": {
			"type": "object",
			"properties": {
				"max_tool_calls": {"type": "integer", "minimum": 1, "maximum": %d},
				"wait_timeout_ms": {"type": "integer", "minimum": %d, "maximum": %d}
			},
			"additionalProperties": false
		}
	},
	"required": ["message"],
	"additionalProperties": false
}`, MaxToolCallsMax, WaitTimeoutMin.Milliseconds(), WaitTimeoutMax.Milliseconds())))

// decodeRunRequest validates and decodes a request body, returning an EINVALID error listing every
// violation.
func decodeRunRequest(body []byte) (*RunRequest, error) {
	if err := runRequestSchema.Validate(body); err != nil {
		return nil, invalidRequest(err)
	}
	var req RunRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, Errorf(EINVALID, "the request body is not valid JSON: %v", err)
	}
	if req.Mode == "" {
		req.Mode = ModeEnqueueAndWait
	}
	return &req, nil
}

func invalidRequest(err error) *Error {
	var ve *registry.ValidationError
	if errors.As(err, &ve) {
		return &Error{Code: EINVALID, Message: fmt.Sprintf("the request does not match its schema (%d violations)", len(ve.Violations)),
			Details: map[string]any{"violations": ve.Violations}}
	}
	return Errorf(EINVALID, "%v", err)
}

func (r *RunRequest) maxToolCalls() int {
	if r.Limits != nil && r.Limits.MaxToolCalls > 0 {
		return r.Limits.MaxToolCalls
	}
	return MaxToolCallsDefault
}

func (r *RunRequest) waitTimeout() time.Duration {
	if r.Limits != nil && r.Limits.WaitTimeoutMS > 0 {
		return time.Duration(r.Limits.WaitTimeoutMS) * time.Millisecond
	}
	return WaitTimeoutDefault
}

// PlannedCall is one tool call a planner proposes.
type PlannedCall struct {
	// Tool is the registry tool.
	Tool string `json:"tool"`
	// Input is the tool's input.
	Input json.RawMessage `json:"input"`
	// Reason says why, for the person reading the plan.
	Reason string `json:"reason,omitempty"`
	// Rule is the rule that planned it (rules planner).
	Rule string `json:"rule,omitempty"`
	// CallID is set once the call is enqueued.
	CallID *uuid.UUID `json:"call_id,omitempty"`
}

// Plan is a planner's answer to a message.
type Plan struct {
	// Calls are the calls to make, in order (they run concurrently once enqueued).
	Calls []PlannedCall
	// Reason explains the plan (or why there is none).
	Reason string
	// Rules names the rules that matched.
	Rules []string
	// Unmatched holds the parts of the message no rule understood.
	Unmatched []string
	// Help is the answer for a message nothing matched: what the planner can do.
	Help string
}

// PlanRequest is what a planner gets.
type PlanRequest struct {
	Message string
	Context map[string]any
	Now     time.Time
}

// Planner turns a message into tool calls.
type Planner interface {
	// Name identifies the planner in a run's decision ("rules", "llm").
	Name() string
	Plan(ctx context.Context, req PlanRequest) (*Plan, error)
}

// Decision says how a run was handled.
type Decision struct {
	Mode    Mode     `json:"mode"`
	Reason  string   `json:"reason"`
	Planner string   `json:"planner"`
	Rules   []string `json:"rules,omitempty"`
}

// prepareCalls merges the context into each planned input and validates it against the registry. It
// returns one EINVALID error per call that fails, listing every violation.
func prepareCalls(reg *registry.Registry, calls []PlannedCall, ctxIDs map[string]any) []*Error {
	var errs []*Error
	for i := range calls {
		pc := &calls[i]
		tool, ok := reg.Tool(pc.Tool)
		if !ok {
			errs = append(errs, &Error{Code: EINVALID, Message: fmt.Sprintf("planned call %d: no tool named %q in the registry", i, pc.Tool),
				Details: map[string]any{"call": i, "tool": pc.Tool}})
			continue
		}
		input := map[string]any{}
		if len(pc.Input) > 0 {
			dec := json.NewDecoder(bytes.NewReader(pc.Input))
			dec.UseNumber()
			if err := dec.Decode(&input); err != nil {
				errs = append(errs, &Error{Code: EINVALID, Message: fmt.Sprintf("planned call %d (%s): input is not a JSON object", i, pc.Tool)})
				continue
			}
		}
		for k, v := range ctxIDs {
			if _, set := input[k]; !set && tool.HasInputProperty(k) {
				input[k] = v
			}
		}
		pc.Input, _ = json.Marshal(input)
		if err := tool.ValidateInput(pc.Input); err != nil {
			var ve *registry.ValidationError
			details := map[string]any{"call": i, "tool": pc.Tool, "input": json.RawMessage(pc.Input)}
			if errors.As(err, &ve) {
				details["violations"] = ve.Violations
			}
			errs = append(errs, &Error{Code: EINVALID, Message: fmt.Sprintf("planned call %d (%s) has invalid input: %v", i, pc.Tool, err), Details: details})
		}
	}
	return errs
}
