package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/script"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Code mode (docs/code-mode.md): an agent with code_mode is offered run_code, a JavaScript program in which
// each tool it may use now is a function. Every function call is a call like the loop's own — validated,
// enqueued for the agent and its run, receipted, its skill rules enforced by the executor — so one turn
// can chain several calls and the run is still audited call by call. Each program is recorded on the run
// (brain_run_programs) with what it printed, returned and called.

const metaRunCode = "run_code"

// codeLimits bound one program: its calls wait for their receipts within its time.
var codeLimits = script.Limits{Timeout: 60 * time.Second, MaxCalls: 25}

func runCodeDef() llm.ToolDef {
	return llm.ToolDef{Name: metaRunCode, Strict: true,
		Description: fmt.Sprintf("Run a short JavaScript program that calls your tools, to chain several calls in one step. "+
			"Each tool you may use is a function of its name: domain.method is gem.domain.method(input), where input is the "+
			"object the tool takes; it returns the tool's result or throws an Error with name \"ToolError\", code, message and "+
			"call_id. A tool on a person's device is devices.<device>.domain.method(input). Give the program's answer with "+
			"return; console.log prints. There are no timers, network or files; at most %d calls and %s.",
			codeLimits.MaxCalls, codeLimits.Timeout),
		Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"code"}, "properties": map[string]any{
			"code": map[string]any{"type": "string", "description": "the program: the body of a function, ending with return <answer>"},
		}}}
}

// runCode runs one run_code call and returns the tool message's content.
func (c *Chat) runCode(ctx context.Context, r *chatRun, iteration int, tc llm.ToolCall) (string, bool) {
	var args struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil || args.Code == "" {
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": registry.CodeValidation,
			"message": "run_code takes {\"code\": \"<the program>\"}"}}), true
	}
	started := time.Now()
	res := script.Result{Calls: []script.CallRecord{}}
	prog, err := script.CompileBody("program.js", args.Code)
	if err != nil {
		var se *script.Error
		if !errors.As(err, &se) {
			se = &script.Error{Code: script.CodeSyntax, Message: err.Error()}
		}
		res.Error = se
	} else {
		env := c.codeEnv(r)
		var mu sync.Mutex
		env.Call = func(ctx context.Context, tool, device string, input json.RawMessage) (json.RawMessage, string, error) {
			mu.Lock() // one call at a time: the run's planned calls are appended in order
			defer mu.Unlock()
			return c.codeCall(ctx, r, iteration, tool, device, input)
		}
		res = prog.Run(ctx, env, codeLimits, nil)
	}
	var callIDs []uuid.UUID
	for _, cr := range res.Calls {
		if id, err := uuid.Parse(cr.CallID); err == nil {
			callIDs = append(callIDs, id)
		}
	}
	record := res
	record.Value = r.scrubJSON(res.Value)
	record.Output = make([]string, len(res.Output))
	for i, line := range res.Output {
		record.Output[i] = r.scrub(line)
	}
	if res.Error != nil {
		e := *res.Error
		e.Message = r.scrub(e.Message)
		record.Error = &e
	}
	if err := postgres.ProgramRecord(context.WithoutCancel(ctx), c.pool, r.runID, iteration, r.scrub(args.Code), &record, callIDs, time.Since(started)); err != nil {
		r.log.Error().Err(err).Msg("error recording a run_code program")
	}
	body := map[string]any{"calls": res.Calls}
	if len(res.Output) > 0 {
		body["output"] = res.Output
	}
	if res.Error != nil {
		body["status"], body["error"] = "failed", res.Error
		return capJSON(body), true
	}
	body["status"], body["result"] = "succeeded", json.RawMessage(res.Value)
	return capJSON(body), false
}

// codeEnv is what a program may call: the tools the agent may use now, and those of them devices serve.
func (c *Chat) codeEnv(r *chatRun) script.Env {
	env := script.Env{Devices: map[string][]string{}}
	for name := range r.visible {
		if _, ok := r.tools.Function(name); !ok {
			continue
		}
		env.Tools = append(env.Tools, name)
		for _, d := range c.reg.ServedBy(name) {
			env.Devices[d] = append(env.Devices[d], name)
		}
	}
	sort.Strings(env.Tools)
	return env
}

// codeCall makes one call of a program: checked against the tool's input schema, enqueued with the run's
// other calls for the agent, and waited on like the loop's calls.
func (c *Chat) codeCall(ctx context.Context, r *chatRun, iteration int, name, device string, input json.RawMessage) (json.RawMessage, string, error) {
	tool, ok := c.reg.Tool(name)
	if !ok || !r.visible[name] {
		return nil, "", &script.ToolError{Code: string(registry.CodeToolNotEnabled), Message: fmt.Sprintf("%s is not a tool you may use", name)}
	}
	if err := tool.ValidateInput(input); err != nil {
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			registry.RedactViolations(tool, ve.Violations)
		}
		te := &script.ToolError{Code: string(registry.CodeValidation), Message: "the input was not used: " + err.Error()}
		if ve != nil {
			te.Details, _ = json.Marshal(map[string]any{"violations": ve.Violations})
		}
		return nil, "", te
	}
	// A program's input holding text PostgreSQL cannot store (a NUL it made) is refused, naming where, as a
	// client's is: the call is not made, and the program may catch why.
	if err := brain.CheckText(input); err != nil {
		e := brain.AsError(err)
		te := &script.ToolError{Code: string(registry.CodeValidation), Message: "the input was not used: " + e.Message}
		te.Details, _ = json.Marshal(e.Details)
		return nil, "", te
	}
	r.noteSecrets(tool, input)
	input, err := brain.SealInput(c.reg, name, input)
	if err != nil {
		return nil, "", &script.ToolError{Code: string(registry.CodeNotConfigured), Message: brain.AsError(err).Message}
	}
	id := uuid.Must(uuid.NewV7())
	r.calls = append(r.calls, brain.PlannedCall{Tool: name, Input: input, CallID: &id,
		Reason: fmt.Sprintf("run_code program (iteration %d)", iteration)})
	sub := c.waiter.Subscribe([]uuid.UUID{id}) // before the call exists, so the wait need not read first
	defer sub.Close()
	var awaiting bool
	// Under the run's fence: a brain that lost the run makes no more of its program's calls.
	err = postgres.RunFenced(ctx, c.pool, r.runID, r.claim, false, func(tx pgx.Tx) error {
		made, err := gemsql.CallInsert(ctx, tx, gemsql.CallInsertParams{ID: id, ToolName: name, Input: input, RunID: &r.runID,
			Agent: r.agent.Slug, UserID: r.req.UserID, RequestedBy: r.requester, Device: device})
		if err != nil {
			return err
		}
		awaiting = made[0].Awaiting
		return postgres.RunAddCalls(ctx, tx, r.runID, []uuid.UUID{id}, r.calls)
	})
	if errors.Is(err, postgres.ErrTakenOver) {
		return nil, "", &script.ToolError{Code: "taken_over", Message: "the turn was taken over by another brain: this program makes no more calls"}
	}
	if err != nil {
		return nil, "", err
	}
	r.resp.ToolCalls = append(r.resp.ToolCalls, brain.ChatToolCall{CallID: &id, Tool: name, Iteration: iteration})
	report := &r.resp.ToolCalls[len(r.resp.ToolCalls)-1]
	if awaiting {
		// The program goes on without it (it may catch this); the call runs if a person approves it.
		report.Status = brain.ChatCallAwaitingApproval
		return nil, id.String(), &script.ToolError{Code: brain.ChatCallAwaitingApproval,
			Message: fmt.Sprintf("awaiting approval, call id %s: a person must approve it before it runs", id)}
	}
	waitCtx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	res, _ := sub.Wait(waitCtx)
	rec, ok := res.Receipts[id]
	switch {
	case !ok:
		report.Status = brain.ChatCallPending
		return nil, id.String(), &script.ToolError{Code: brain.ChatCallPending,
			Message: fmt.Sprintf("the call is still running; its receipt will be at GET /calls/%s", id)}
	case rec.Status != registry.StatusSucceeded:
		report.Status = string(rec.Status)
		te := &script.ToolError{Code: string(registry.CodeHandlerError), Message: "the call ended " + string(rec.Status)}
		if rec.Error != nil {
			te = &script.ToolError{Code: string(rec.Error.Code), Message: rec.Error.Message, Details: rec.Error.Details}
		}
		return nil, id.String(), te
	}
	report.Status = string(rec.Status)
	return rec.Result, id.String(), nil
}
