package brain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
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

// RunParams is what a run is asked to do: the body of POST /brain/run.
type RunParams struct {
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

// Defaults and bounds of a run's limits.
const (
	// MaxToolCallsDefault and MaxToolCallsMax limit how many calls one run may plan.
	MaxToolCallsDefault = 10
	MaxToolCallsMax     = 50
	// WaitTimeoutDefault and its bounds limit how long enqueue_and_wait waits for receipts.
	WaitTimeoutDefault = 30 * time.Second
	WaitTimeoutMin     = time.Second
	WaitTimeoutMax     = 120 * time.Second
)

// Limits bound a run.
type Limits struct {
	// MaxToolCalls is the most calls the run may plan (1..50). Defaults to 10.
	MaxToolCalls int `json:"max_tool_calls,omitempty"`
	// WaitTimeoutMS is how long enqueue_and_wait waits for receipts (1,000..120,000). Defaults to 30,000.
	WaitTimeoutMS int `json:"wait_timeout_ms,omitempty"`
}

// MaxToolCalls is the most calls the run may plan: its limit, or MaxToolCallsDefault.
func (r *RunParams) MaxToolCalls() int {
	if r.Limits != nil && r.Limits.MaxToolCalls > 0 {
		return r.Limits.MaxToolCalls
	}
	return MaxToolCallsDefault
}

// WaitTimeout is how long enqueue_and_wait waits for receipts: its limit, or WaitTimeoutDefault.
func (r *RunParams) WaitTimeout() time.Duration {
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

// PrepareCalls merges the context into each planned input and validates it against the registry. It
// returns one EINVALID error per call that fails, listing every violation.
func PrepareCalls(reg *registry.Registry, calls []PlannedCall, ctxIDs map[string]any) []*Error {
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

// Run statuses (brain_runs.status).
const (
	RunCreated   = "created"
	RunPlanning  = "planning"
	RunPlanned   = "planned"
	RunEnqueued  = "enqueued"
	RunWaiting   = "waiting"
	RunCompleted = "completed"
	RunFailed    = "failed"
)

// Run is a run as it is recorded (brain_runs): what was asked, how it was planned, its calls and its answer.
type Run struct {
	ID               uuid.UUID
	Message          string
	Mode             Mode
	ConversationID   string
	Context          map[string]any
	Limits           Limits
	Status           string
	Decision         Decision
	PlannedCalls     []PlannedCall
	CallIDs          []uuid.UUID
	Receipts         []CompactReceipt
	AssistantMessage string
	NextActions      []string
	Errors           []*Error
	Agent            string
	RequestedBy      string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	CompletedAt      *time.Time
}

// CompactReceipt is what a run keeps of each receipt; the receipt itself stays in core_tool_receipts.
type CompactReceipt struct {
	CallID  uuid.UUID       `json:"call_id"`
	Tool    string          `json:"tool"`
	Status  string          `json:"status"`
	Summary map[string]any  `json:"summary,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Compact keeps what a run records of each receipt.
func Compact(rs []*registry.Receipt) []CompactReceipt {
	out := make([]CompactReceipt, len(rs))
	for i, r := range rs {
		out[i] = CompactReceipt{CallID: r.CallID, Tool: r.ToolName, Status: string(r.Status), Summary: r.Summary}
		if r.Error != nil {
			out[i].Error, _ = json.Marshal(r.Error)
		}
	}
	return out
}

// RunResponse is the answer to POST /brain/run, POST /brain/runs/{id}/approve and GET /brain/runs/{id}.
type RunResponse struct {
	// OK is true when the run did what was asked: its plan was valid and every call it waited for succeeded.
	OK    bool      `json:"ok"`
	RunID uuid.UUID `json:"run_id"`
	// Status is the run's status: planned, enqueued, waiting, completed or failed.
	Status           string        `json:"status"`
	Decision         Decision      `json:"decision"`
	PlannedToolCalls []PlannedCall `json:"planned_tool_calls"`
	// Enqueued lists the calls made, in plan order.
	Enqueued []uuid.UUID `json:"enqueued"`
	// Receipts are the receipts of the calls that have one.
	Receipts []*registry.Receipt `json:"receipts"`
	// Pending lists calls still without a receipt (they keep running).
	Pending          []uuid.UUID `json:"pending,omitempty"`
	AssistantMessage string      `json:"assistant_message"`
	NextActions      []string    `json:"next_actions"`
	Errors           []*Error    `json:"errors"`

	// recorded, when set, reports the commit of the run's answer, which may still be under way; see
	// Recorded.
	recorded <-chan error
}

// SetRecording hands the response the outcome of the run's answer being recorded (see Recorded).
func (r *RunResponse) SetRecording(recorded <-chan error) { r.recorded = recorded }

// Recorded waits until the run's answer is recorded in brain_runs and returns the error, if any. A response
// may be sent before: the answer is derived from the calls' receipts, and GET /brain/runs/{id} derives it
// again for a run still waiting.
func (r *RunResponse) Recorded() error {
	if r.recorded == nil {
		return nil
	}
	return <-r.recorded
}

// DescribePlan lists planned calls for a person: one line each.
func DescribePlan(calls []PlannedCall) string {
	lines := make([]string, len(calls))
	for i, c := range calls {
		lines[i] = fmt.Sprintf("%d. %s %s", i+1, c.Tool, compactJSON(c.Input))
	}
	return strings.Join(lines, "\n")
}

func compactJSON(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// Plural picks the word for n things.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// LogRun adds a run's id to the logger in ctx, and returns it: every later line of the request (its own
// "request" line too, when brain/api made the logger) carries run_id. A context without a logger of its
// own gets a new one, so the process's default logger is never changed.
func LogRun(ctx context.Context, runID uuid.UUID) *zerolog.Logger {
	l := zerolog.Ctx(ctx)
	if l == zerolog.DefaultContextLogger || l.GetLevel() == zerolog.Disabled {
		child := l.With().Str("run_id", runID.String()).Logger()
		return &child
	}
	l.UpdateContext(func(c zerolog.Context) zerolog.Context { return c.Str("run_id", runID.String()) })
	return l
}
