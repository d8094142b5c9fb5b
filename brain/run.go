package brain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Mode is what a run does with its plan.
type Mode string

// Run modes, as GEM has them.
const (
	// ModeAnswer answers without running anything: help and explanations, or what would run. The default,
	// as in GEM.
	ModeAnswer Mode = "answer"
	// ModePlan stores the plan for approval (POST /brain/runs/{id}/approve).
	ModePlan Mode = "plan"
	// ModeEnqueue enqueues the calls and returns their ids at once.
	ModeEnqueue Mode = "enqueue"
	// ModeEnqueueAndWait enqueues, waits for every receipt and answers from them.
	ModeEnqueueAndWait Mode = "enqueue_and_wait"
)

// ModeChat is the mode of a run that is an agent's chat turn (POST /agents/{slug}/chat); no request asks
// for it.
const ModeChat Mode = "chat"

// RunParams is what a run is asked to do: the body of POST /brain/run.
type RunParams struct {
	// Message is what the person asked, in their words.
	Message string `json:"message"`
	// Mode is what to do with the plan. Defaults to answer, as in GEM (ModeDefault).
	Mode Mode `json:"mode,omitempty"`
	// ConversationID groups runs of one conversation (GEM sends a UUID or null).
	ConversationID string `json:"conversation_id,omitempty"`
	// Context carries ids (lead_id, job_id, quote_id, ...) merged into planned inputs whose schema has
	// that property and that do not set it themselves (see PrepareCalls).
	Context map[string]any `json:"context,omitempty"`
	// Limits bound the run.
	Limits *Limits `json:"limits,omitempty"`
	// IdempotencyKey is the client's key for this request (or the Idempotency-Key header): the same caller
	// and key within the window is the same run, answered again, never made twice (docs/durable-runs.md).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Fingerprint is the request's, set by its door (RequestFingerprint) when it has a key.
	Fingerprint []byte `json:"-"`
	// Async asks for 202 and the run's id once the run is recorded (or Prefer: respond-async); the wait for
	// its receipts goes on. Not part of the request's fingerprint.
	Async bool `json:"async,omitempty"`
	// OnRecorded, when set, is told the run as soon as it and its calls are recorded (or the run a repeat
	// answers), before the wait for receipts.
	OnRecorded func(runID uuid.UUID) `json:"-"`
}

// ModeHelp describes a mode for people.
type ModeHelp struct {
	Mode    Mode   `json:"mode"`
	Default bool   `json:"default"`
	Does    string `json:"does"`
}

// Modes describes every mode, as GET /brain/help lists them.
var Modes = []ModeHelp{
	{Mode: ModeAnswer, Default: true, Does: "plan and say what would run, or answer a question (help, what a tool does); nothing runs"},
	{Mode: ModePlan, Does: "store the plan; POST /brain/runs/{run_id}/approve runs it, once"},
	{Mode: ModeEnqueue, Does: "enqueue the calls and return their ids at once; each receipt is at GET /calls/{call_id}"},
	{Mode: ModeEnqueueAndWait, Does: "enqueue the calls, wait for their receipts (limits.wait_timeout_ms) and answer from them"},
}

// ModeDefault is the mode of a request that names none: answer, as in GEM, so a request never runs
// anything unless it says so.
const ModeDefault = ModeAnswer

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

// PlannedCall is one tool call a planner proposes. Its JSON has GEM's names (tool_name, input,
// idempotency_key) and ours beside them.
type PlannedCall struct {
	// Tool is the registry tool.
	Tool string `json:"tool_name"`
	// Input is the tool's input.
	Input json.RawMessage `json:"input"`
	// IdempotencyKey is an explicit idempotency key for the call; null when the tool's own mode decides.
	IdempotencyKey *string `json:"idempotency_key"`
	// Reason says why, for the person reading the plan.
	Reason string `json:"reason,omitempty"`
	// Rule is the rule that planned it (rules planner).
	Rule string `json:"rule,omitempty"`
	// CallID is set once the call is enqueued.
	CallID *uuid.UUID `json:"call_id,omitempty"`
}

// UnmarshalJSON reads a planned call, also as runs recorded before GEM's names stored it ("tool").
func (pc *PlannedCall) UnmarshalJSON(data []byte) error {
	type plain PlannedCall
	var v struct {
		plain
		OldTool string `json:"tool"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*pc = PlannedCall(v.plain)
	if pc.Tool == "" {
		pc.Tool = v.OldTool
	}
	return nil
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
	// Answer, with no calls, says the message asked for help or an explanation and is the reply: the run
	// answers it and runs nothing, whatever its mode.
	Answer string
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

// Decision says how a run was handled: GEM's mode_used and reason, and which planner and rules.
type Decision struct {
	// Mode is the mode used: the one asked for, or answer when there was nothing to run.
	Mode    Mode     `json:"mode_used"`
	Reason  string   `json:"reason"`
	Planner string   `json:"planner"`
	Rules   []string `json:"rules,omitempty"`
}

// UnmarshalJSON reads a decision, also as runs recorded before GEM's names stored it ("mode").
func (d *Decision) UnmarshalJSON(data []byte) error {
	type plain Decision
	var v struct {
		plain
		OldMode Mode `json:"mode"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*d = Decision(v.plain)
	if d.Mode == "" {
		d.Mode = v.OldMode
	}
	return nil
}

// PrepareCalls merges the context into each planned input and validates it against the registry. It
// returns one EINVALID error per call that fails, listing every violation. Errors name a call by its tool,
// and by its place in the plan when there are several.
func PrepareCalls(reg *registry.Registry, calls []PlannedCall, ctxIDs map[string]any) []*Error {
	var errs []*Error
	for i := range calls {
		pc := &calls[i]
		label := pc.Tool
		if len(calls) > 1 {
			label = fmt.Sprintf("planned call %d (%s)", i, pc.Tool)
		}
		tool, ok := reg.Tool(pc.Tool)
		if !ok {
			errs = append(errs, unknownTool(reg, calls, i))
			continue
		}
		input := map[string]any{}
		if tool.HasSecrets() && len(pc.Input) > 0 {
			// A stored plan holds its secrets sealed: they are checked in clear, and sealed again below.
			clear, err := reg.OpenInput(tool.Name, pc.Input)
			if err != nil {
				errs = append(errs, &Error{Code: EUNAVAILABLE, Message: fmt.Sprintf("%s: %v", label, err)})
				continue
			}
			pc.Input = clear
		}
		if len(pc.Input) > 0 {
			dec := json.NewDecoder(bytes.NewReader(pc.Input))
			dec.UseNumber()
			if err := dec.Decode(&input); err != nil {
				errs = append(errs, &Error{Code: EINVALID, Message: fmt.Sprintf("%s: the input is not a JSON object", label)})
				continue
			}
		}
		for k, v := range ctxIDs {
			if _, set := input[k]; !set && tool.HasInputProperty(k) {
				input[k] = v
			}
		}
		if _, set := input["context_ref"]; !set && tool.HasInputProperty("context_ref") {
			if ref := contextRef(tool, ctxIDs); ref != nil {
				input["context_ref"] = ref
			}
		}
		pc.Input, _ = json.Marshal(input)
		if err := tool.ValidateInput(pc.Input); err != nil {
			var ve *registry.ValidationError
			details := map[string]any{"call": i, "tool": pc.Tool, "input": json.RawMessage(reg.RedactInput(tool.Name, pc.Input))}
			if errors.As(err, &ve) {
				registry.RedactViolations(tool, ve.Violations)
				details["violations"] = ve.Violations
			}
			errs = append(errs, &Error{Code: EINVALID, Message: fmt.Sprintf("%s has invalid input: %v", label, err), Details: details})
			continue
		}
		sealed, err := SealInput(reg, tool.Name, pc.Input)
		if err != nil {
			errs = append(errs, AsError(err))
			continue
		}
		pc.Input = sealed
	}
	return errs
}

// unknownTool is the error of a call to a tool the registry lacks, suggesting the closest names.
func unknownTool(reg *registry.Registry, calls []PlannedCall, i int) *Error {
	name := calls[i].Tool
	msg := fmt.Sprintf("no tool named %q in the registry", name)
	if len(calls) > 1 {
		msg = fmt.Sprintf("planned call %d: %s", i, msg)
	}
	details := map[string]any{"call": i, "tool": name}
	if similar := reg.SimilarNames(name); len(similar) > 0 {
		details["did_you_mean"] = similar
		msg += "; did you mean " + strings.Join(similar, ", ") + "?"
	} else {
		msg += ", nor one close to it: GET /brain/tools lists them"
	}
	return &Error{Code: EINVALID, Message: msg, Details: details}
}

// ErrSealedInput refuses a request whose secret property holds a sealed value ({"$gem_secret": …}): it was
// copied from a stored call, and opening it would hand another caller's secret to this one.
func ErrSealedInput(tool string) *Error {
	return &Error{Code: EINVALID, Message: fmt.Sprintf("the input of %s holds a sealed value ($gem_secret) at a secret property: send secret values in clear; GEM seals them itself", tool)}
}

// SealInput seals the secret properties of a call's input, as it is stored (registry.SealInput). Without
// GEM_SECRET_KEY a call with a secret input is refused (503): the brain does not store a secret in clear.
func SealInput(reg *registry.Registry, tool string, input json.RawMessage) (json.RawMessage, error) {
	if reg.HasSealed(tool, input) {
		return nil, ErrSealedInput(tool)
	}
	sealed, err := reg.SealInput(tool, input)
	if errors.Is(err, registry.ErrNoSecretKey) {
		return nil, &Error{Code: EUNAVAILABLE, Message: fmt.Sprintf("%s has a secret input, and %v", tool, err)}
	}
	if err != nil {
		return nil, Errorf(EINVALID, "the input of %s cannot be sealed: %v", tool, err)
	}
	return sealed, nil
}

// contextRefKeys are the context ids that can say what a call is about (a tool's context_ref), the most
// specific first: a message about an invoice is about its job, quote and lead too.
var contextRefKeys = []struct{ key, refType string }{
	{"invoice_id", "invoice"}, {"job_id", "job"}, {"quote_id", "quote"}, {"inspection_id", "inspection"}, {"lead_id", "lead"},
}

// contextRef is the context_ref ({type, id}) the context gives a tool: its most specific id of a type the
// tool's schema allows, or nil.
func contextRef(tool *registry.Tool, ctxIDs map[string]any) map[string]any {
	var schema struct {
		Properties struct {
			ContextRef struct {
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"context_ref"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(tool.InputSchema, &schema)
	allowed := schema.Properties.ContextRef.Properties.Type.Enum
	for _, k := range contextRefKeys {
		id, ok := ctxIDs[k.key].(string)
		if !ok || id == "" || len(allowed) > 0 && !slices.Contains(allowed, k.refType) {
			continue
		}
		return map[string]any{"type": k.refType, "id": id}
	}
	return nil
}

// Run statuses (brain_runs.status).
const (
	RunCreated  = "created"
	RunPlanning = "planning"
	RunPlanned  = "planned"
	RunEnqueued = "enqueued"
	RunWaiting  = "waiting"
	// RunQueued: a chat turn waiting behind the session's running turn (if_busy enqueue).
	RunQueued    = "queued"
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
	// ApprovedBy is the caller who approved the stored plan (mode plan), once approved.
	ApprovedBy string
	// IdempotencyKey is the client's key for the request that made the run, and Fingerprint that request's
	// (RequestFingerprint): the run's insert claims the key for RequestedBy, or fails as a repeat.
	IdempotencyKey string
	Fingerprint    []byte
	// Owner and LeaseUntil: the brain answering a chat turn and until when (docs/durable-runs.md).
	Owner      string
	LeaseUntil *time.Time
	// Response is a chat turn's response as it was sent, once it ended.
	Response    json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
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

// EnqueuedCall is a call a run made, as GEM lists it.
type EnqueuedCall struct {
	CallID   uuid.UUID `json:"call_id"`
	ToolName string    `json:"tool_name"`
}

// RunReceipt is a receipt as a run's answer shows it: the receipt, with its tool's name also under GEM's key
// tool_name.
type RunReceipt struct {
	*registry.Receipt
	// GEMToolName repeats Receipt.ToolName ("tool") as GEM's clients read it.
	GEMToolName string `json:"tool_name"`
}

// RunReceipts wraps receipts for a run's answer.
func RunReceipts(rs []*registry.Receipt) []RunReceipt {
	out := make([]RunReceipt, len(rs))
	for i, r := range rs {
		out[i] = RunReceipt{Receipt: r, GEMToolName: r.ToolName}
	}
	return out
}

// RunResponse is the answer to POST /brain/run, POST /brain/runs/{id}/approve and GET /brain/runs/{id}. Its
// fields are GEM's (ok, run_id, decision, planned_tool_calls, enqueued, receipts, assistant_message,
// next_actions, errors) with ours beside them (status, pending).
type RunResponse struct {
	// OK is true when the run did what was asked: its plan was valid and every call it waited for succeeded.
	OK    bool      `json:"ok"`
	RunID uuid.UUID `json:"run_id"`
	// Status is the run's status: planned, enqueued, waiting, completed or failed.
	Status           string        `json:"status"`
	Decision         Decision      `json:"decision"`
	PlannedToolCalls []PlannedCall `json:"planned_tool_calls"`
	// Enqueued lists the calls made, in plan order.
	Enqueued []EnqueuedCall `json:"enqueued"`
	// Receipts are the receipts of the calls that have one.
	Receipts []RunReceipt `json:"receipts"`
	// Pending lists calls still without a receipt (they keep running).
	Pending          []uuid.UUID `json:"pending,omitempty"`
	AssistantMessage string      `json:"assistant_message"`
	NextActions      []string    `json:"next_actions"`
	Errors           []*Error    `json:"errors"`
	// RequestedBy is the caller who made the run; ApprovedBy the caller who approved its stored plan, whose
	// grants bound its calls as the author's do (docs/governance.md#stored-plans).
	RequestedBy string `json:"requested_by,omitempty"`
	ApprovedBy  string `json:"approved_by,omitempty"`
	// Repeated says the request repeated an earlier one's key: this is the earlier request's run, and
	// nothing was made again.
	Repeated bool `json:"repeated,omitempty"`
	// Owner is the brain answering a chat turn still planning or waiting, and LeaseUntil when another brain
	// may take it over (docs/durable-runs.md#owners-and-leases).
	Owner      string     `json:"owner,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	// Steps are a chat turn's LLM requests, in order: its journal, with its calls in planned_tool_calls.
	Steps []RunStep `json:"steps,omitempty"`
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

// RunStep is one LLM request of a chat turn (a brain_turns row): its step (iteration) and attempt, what it
// cost and what came back.
type RunStep struct {
	Iteration int     `json:"iteration"`
	Attempt   int     `json:"attempt"`
	Model     string  `json:"model"`
	LatencyMS float64 `json:"latency_ms"`
	// ToolCalls is how many tool calls the answer asked for.
	ToolCalls    int       `json:"tool_calls"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	Error        *Error    `json:"error,omitempty"`
	At           time.Time `json:"at"`
}
