package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StatusPending is the status of a call answered before its receipt: it keeps running.
const StatusPending = "pending"

// statusInvalidArguments is the status of a tools/call refused before any call was made.
const statusInvalidArguments = brain.ChatCallInvalidArguments

// metaCallID is the _meta key carrying the GEM call a tools/call made.
const metaCallID = "gem/call_id"

// Tool is a registry tool's MCP definition, llm.MCPToolDef (so GET /brain/tools?format=mcp shows exactly
// what tools/list does), in the SDK's type: named portably, with GEM's name in its title and _meta.
func Tool(t *registry.Tool) *mcp.Tool {
	def := llm.MCPToolDef(t)
	a := def.Annotations
	return &mcp.Tool{
		Meta:         def.Meta,
		Name:         def.Name,
		Title:        def.Title,
		Description:  def.Description,
		InputSchema:  def.InputSchema,
		OutputSchema: def.OutputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: &a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   &a.OpenWorldHint,
		},
	}
}

// callTool runs a registry tool as POST /calls does: validate, insert the call (recording the caller), wait
// for its receipt, and answer from it.
func (s *Server) callTool(tool *registry.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := callerOf(ctx)
		input := []byte(req.Params.Arguments)
		if len(input) == 0 || string(input) == "null" {
			input = []byte("{}")
		}
		if err := brain.CheckText(input); err != nil { // the client's text: refused, as POST /calls refuses it
			return invalidArguments(tool.Name, err), nil
		}
		if err := tool.ValidateInput(input); err != nil {
			var ve *registry.ValidationError
			if errors.As(err, &ve) {
				registry.RedactViolations(tool, ve.Violations)
			}
			return invalidArguments(tool.Name, err), nil
		}
		input, err := brain.SealInput(s.reg, tool.Name, input)
		if brain.ErrorCode(err) == brain.EUNAVAILABLE {
			return notStored(tool.Name, err), nil
		} else if err != nil {
			return invalidArguments(tool.Name, err), nil
		}
		device, err := deviceOf(req.Params.Meta)
		if err != nil {
			return invalidArguments(tool.Name, err), nil
		}
		key, err := requestKeyOf(req)
		if err != nil {
			return invalidArguments(tool.Name, err), nil
		}
		id := uuid.Must(uuid.NewV7())
		sub := s.waiter.Subscribe([]uuid.UUID{id}) // before the call exists, so the wait need not read first
		defer sub.Close()
		inserted, err := gemsql.CallInsert(ctx, s.pool, gemsql.CallInsertParams{ID: id, ToolName: tool.Name, Input: input,
			IdempotencyKey: key, Agent: c.Agent, UserID: c.userOf(), RequestedBy: c.Name, Device: device})
		if err != nil {
			switch e := brain.AsError(err); e.Code {
			case brain.EINVALID: // text PostgreSQL cannot store
				return invalidArguments(tool.Name, e), nil
			case brain.EKEYREUSED:
				return keyReused(tool.Name, e), nil
			}
			return nil, s.internal(ctx, err, "error enqueueing the call")
		}
		made := inserted[0]
		slot := taskSlotOf(ctx) // the client declared tasks: a call that does not end at once becomes one
		if made.Awaiting {
			if slot != nil {
				return s.toTask(ctx, slot, tool.Name, id)
			}
			return s.awaitingAnswer(ctx, tool.Name, id)
		}
		// A task names the request: for a repeat (the same key), the first call, which is the one that runs
		// and the one tasks/cancel can stop (the repeat has no job of its own).
		taskCall := id
		if of := made.IdempotencyOf; of != nil {
			taskCall = *of
			// A repeated request: its receipt comes with the first one's, which may wait for a person.
			if first, err := gemsql.CallsInserted(ctx, s.pool, []uuid.UUID{*of}); err == nil && first[0].Awaiting {
				if slot != nil {
					return s.toTask(ctx, slot, tool.Name, *of)
				}
				return s.awaitingAnswer(ctx, tool.Name, *of)
			}
		}
		s.logger(ctx).Debug().Str("call_id", id.String()).Str("tool", tool.Name).Str("agent", c.Agent).Msg("mcp call enqueued")
		wait := s.cfg.CallWait
		if slot != nil {
			wait = s.cfg.TaskWait
		}
		receipt, err := s.await(ctx, req, id, fmt.Sprintf("call %s enqueued", id), sub.Wait, wait)
		if err != nil {
			return nil, err
		}
		if receipt == nil && slot != nil {
			return s.toTask(ctx, slot, tool.Name, taskCall)
		}
		return answer(c, tool.Name, id, receipt, false), nil
	}
}

// awaitingAnswer answers a call that waits for a person's decision: not an error, and nothing to wait for.
func (s *Server) awaitingAnswer(ctx context.Context, tool string, id uuid.UUID) (*mcp.CallToolResult, error) {
	a, err := gemsql.ApprovalGet(ctx, s.pool, id)
	if err != nil {
		return nil, s.internal(ctx, err, "error reading the call's approval")
	}
	return &mcp.CallToolResult{Meta: mcp.Meta{metaCallID: id.String()},
		StructuredContent: map[string]any{"call_id": id, "status": brain.ChatCallAwaitingApproval, "tool": tool, "expires_at": a.ExpiresAt},
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s awaits approval (call %s) until %s: it runs once a person approves it. "+
			"Call %s with {\"call_id\": %q} later for its receipt; do not make it again.", tool, id, a.ExpiresAt.Format(time.RFC3339),
			callerOf(ctx).toolName(GetReceiptTool), id)}}}, nil
}

// await waits for one call's receipt until bound passes (nil: still running), sending progress
// notifications meanwhile when the client gave a progress token: first, then one per ProgressInterval with
// the call's status.
func (s *Server) await(ctx context.Context, req *mcp.CallToolRequest, id uuid.UUID, first string,
	wait func(context.Context) (*gemsql.WaitResult, error), bound time.Duration) (*registry.Receipt, error) {
	waitCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	type outcome struct {
		res *gemsql.WaitResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var res *gemsql.WaitResult
		err := gemlog.Guarded(s.logger(ctx), "waiting for a receipt", func() (err error) {
			res, err = wait(waitCtx)
			return err
		})
		if res == nil {
			res = &gemsql.WaitResult{}
		}
		done <- outcome{res, err}
	}()
	token := req.Params.GetProgressToken()
	start := time.Now()
	notify := func(message string) {
		if token == nil {
			return
		}
		// A lost notification is not worth failing the call for.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: message,
			Progress: time.Since(start).Seconds(), Total: bound.Seconds()})
	}
	notify(first)
	var tick <-chan time.Time
	if token != nil {
		t := time.NewTicker(s.cfg.ProgressInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case o := <-done:
			if r := o.res.Receipts[id]; r != nil {
				return r, nil
			}
			if ctx.Err() != nil {
				// The client went away (or cancelled): the call goes on, and gets its receipt.
				s.logger(ctx).Info().Str("call_id", id.String()).Err(context.Cause(ctx)).Msg("MCP wait abandoned; the call goes on")
				return nil, ctx.Err()
			}
			if o.err != nil && !errors.Is(o.err, context.DeadlineExceeded) {
				return nil, s.internal(ctx, o.err, "error waiting for the receipt")
			}
			return nil, nil
		case <-tick:
			status := "waiting for its receipt"
			if call, err := gemsql.CallGet(ctx, s.pool, id); err == nil {
				status = string(call.Status)
				if call.Attempt > 0 {
					status += fmt.Sprintf(" (attempt %d)", call.Attempt)
				}
			}
			notify(fmt.Sprintf("call %s: %s", id, status))
		}
	}
}

// answer renders a call's outcome for caller c: the result as structured content (with its JSON as text) when
// it succeeded; isError with the receipt's code, message and details when it did not; {call_id, status:
// "pending"} when there is no receipt yet. asReceipt answers with the whole receipt (gem.get_receipt).
func answer(c Caller, tool string, id uuid.UUID, r *registry.Receipt, asReceipt bool) *mcp.CallToolResult {
	meta := mcp.Meta{metaCallID: id.String()}
	if r == nil {
		pending := map[string]any{"call_id": id, "status": StatusPending, "tool": tool}
		return &mcp.CallToolResult{Meta: meta, StructuredContent: pending, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("%s is still running (call %s). Call %s with {\"call_id\": %q} for its receipt.", tool, id, c.toolName(GetReceiptTool), id)}}}
	}
	if r.Status == registry.StatusSucceeded {
		var structured any = json.RawMessage(r.Result)
		if trimmed := bytes.TrimSpace(r.Result); len(trimmed) == 0 || trimmed[0] != '{' {
			// structuredContent is an object (see llm.MCPToolDef): another result is answered as {"result": value}.
			structured = map[string]any{"result": json.RawMessage(cmp.Or(string(trimmed), "null"))}
		}
		if asReceipt {
			structured = r
		}
		text, _ := json.Marshal(structured)
		return &mcp.CallToolResult{Meta: meta, StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
	}
	structured := any(map[string]any{"call_id": id, "tool": r.ToolName, "status": r.Status, "error": errorOf(r.Error)})
	if asReceipt {
		structured = r
	}
	text := fmt.Sprintf("%s %s (call %s)", r.ToolName, r.Status, id)
	if e := r.Error; e != nil {
		text += fmt.Sprintf(": %s: %s", e.Code, e.Message)
		if len(e.Details) > 0 && string(e.Details) != "null" {
			text += "\ndetails: " + string(e.Details)
		}
	}
	return &mcp.CallToolResult{Meta: meta, IsError: true, StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// errorOf is a receipt's error as the output schema's error branch has it: details, when there are any, are
// an object (anything else is kept under "value").
func errorOf(e *registry.CallError) map[string]any {
	if e == nil {
		return map[string]any{"code": string(registry.CodeHandlerError), "message": "the receipt records no error"}
	}
	out := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Details) > 0 && string(e.Details) != "null" {
		var details map[string]any
		if json.Unmarshal(e.Details, &details) == nil {
			out["details"] = json.RawMessage(e.Details)
		} else {
			out["details"] = map[string]any{"value": json.RawMessage(e.Details)}
		}
	}
	return out
}

// notStored answers a call the brain cannot store as it must (a secret input without GEM_SECRET_KEY): not
// configured, as the executor's receipt would say, with what to set. No call was made.
func notStored(tool string, err error) *mcp.CallToolResult {
	e := &registry.CallError{Code: registry.CodeNotConfigured, Message: brain.AsError(err).Message}
	e.Details, _ = json.Marshal(registry.NoSecretKeyDetails())
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s was not called: %s", tool, e.Message)}},
		StructuredContent: map[string]any{"tool": tool, "status": string(registry.StatusNotConfigured), "error": e}}
}

// invalidArguments refuses arguments before any call is made, listing every violation with its path.
func invalidArguments(tool string, err error) *mcp.CallToolResult {
	e := &registry.CallError{Code: registry.CodeValidation, Message: err.Error()}
	text := fmt.Sprintf("%s was not called: %v", tool, err)
	var ve *registry.ValidationError
	var be *brain.Error
	switch {
	case errors.As(err, &ve):
		n := len(ve.Violations)
		e.Message = fmt.Sprintf("the arguments do not match %s's input schema (%d %s)", tool, n, brain.Plural(n, "violation", "violations"))
		e.Details, _ = json.Marshal(map[string]any{"violations": ve.Violations})
		lines := []string{fmt.Sprintf("%s was not called: %s:", tool, e.Message)}
		for _, v := range ve.Violations {
			path := v.Path
			if path == "" {
				path = "(the arguments)"
			}
			lines = append(lines, fmt.Sprintf("  %s: %s", path, v.Message))
		}
		text = strings.Join(lines, "\n")
	case errors.As(err, &be):
		e.Message = be.Message
		text = fmt.Sprintf("%s was not called: %s", tool, be.Message)
	}
	return &mcp.CallToolResult{IsError: true,
		StructuredContent: map[string]any{"tool": tool, "status": statusInvalidArguments, "error": e},
		Content:           []mcp.Content{&mcp.TextContent{Text: text}}}
}

// getReceiptDefinition is gem.get_receipt's MCP definition.
var getReceiptDefinition = &mcp.Tool{
	Name:  GetReceiptTool,
	Title: "Get a call's receipt (gem.get_receipt)",
	Description: "The receipt of a GEM call, by its call_id: what a tool call answered {\"call_id\", \"status\": \"pending\"} " +
		"for. Waits a while for a call still running; answers pending again if it still is. A failed call is an error " +
		"with the receipt's code and message.",
	InputSchema: llm.ModelInputSchema(json.RawMessage(getReceiptInput)), // validated against getReceiptInput whole
	OutputSchema: json.RawMessage(`{
		"type": "object",
		"description": "The receipt (status succeeded, failed or not_configured), {call_id, status: pending or awaiting_approval}, or an error (invalid_arguments, not_found).",
		"properties": {
			"call_id": {"type": "string", "format": "uuid"},
			"tool": {"type": "string"},
			"status": {"type": "string", "enum": ["pending", "awaiting_approval", "succeeded", "failed", "not_configured", "invalid_arguments", "not_found"]},
			"result": {"description": "The tool's result; null when the call did not succeed."},
			"error": {"type": "object", "additionalProperties": true}
		},
		"required": ["status"],
		"additionalProperties": true
	}`),
	Annotations: &mcp.ToolAnnotations{Title: "Get a call's receipt (gem.get_receipt)", ReadOnlyHint: true, IdempotentHint: true,
		DestructiveHint: new(bool), OpenWorldHint: new(bool)},
}

const getReceiptInput = `{
	"type": "object",
	"properties": {
		"call_id": {"type": "string", "format": "uuid", "description": "The call_id a pending tool call answered with."}
	},
	"required": ["call_id"],
	"additionalProperties": false
}`

var getReceiptSchema = registry.MustCompileSchema(GetReceiptTool+" input", []byte(getReceiptInput))

// getReceipt answers gem.get_receipt: the call's receipt, waiting up to CallWait for it. A caller reads its
// own calls (or everyone's, with audit: brain.Reader), and a client that speaks for an agent only that
// agent's; any other call is not found.
func (s *Server) getReceipt(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	input := []byte(req.Params.Arguments)
	if len(input) == 0 || string(input) == "null" {
		input = []byte("{}")
	}
	if err := getReceiptSchema.Validate(input); err != nil {
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			ve.Tool, ve.Schema = GetReceiptTool, "input"
		}
		return invalidArguments(GetReceiptTool, err), nil
	}
	var in struct {
		CallID uuid.UUID `json:"call_id"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return invalidArguments(GetReceiptTool, brain.Errorf(brain.EINVALID, "call_id is not a UUID")), nil
	}
	caller := callerOf(ctx)
	call, err := postgres.CallReadable(ctx, s.pool, caller.Reader, in.CallID)
	if brain.ErrorCode(err) == brain.ENOTFOUND || err == nil && caller.Agent != "" && call.Agent != caller.Agent {
		return &mcp.CallToolResult{IsError: true,
			StructuredContent: map[string]any{"call_id": in.CallID, "status": "not_found",
				"error": &registry.CallError{Code: registry.CodeNotFound, Message: fmt.Sprintf("no call %s", in.CallID)}},
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("no call %s", in.CallID)}}}, nil
	}
	if err != nil {
		return nil, s.internal(ctx, err, "error reading the call")
	}
	if call.Status == registry.CallAwaitingApproval {
		return s.awaitingAnswer(ctx, call.ToolName, in.CallID)
	}
	readOrWait := func(ctx context.Context) (*gemsql.WaitResult, error) {
		return s.waiter.Wait(ctx, []uuid.UUID{in.CallID}) // reads first: the receipt may exist
	}
	receipt, err := s.await(ctx, req, in.CallID, fmt.Sprintf("waiting for the receipt of call %s", in.CallID), readOrWait, s.cfg.CallWait)
	if err != nil {
		return nil, err
	}
	return answer(caller, call.ToolName, in.CallID, receipt, true), nil
}

// metaDevice is the _meta key of a tools/call that names the device the call must run on (docs/devices.md).
const metaDevice = "gem/device"

// deviceOf reads the device a tools/call names in its _meta, if any.
func deviceOf(meta mcp.Meta) (string, error) {
	v, ok := meta[metaDevice]
	if !ok || v == nil {
		return "", nil
	}
	name, ok := v.(string)
	if !ok || !gemsql.DeviceNameRe.MatchString(name) {
		return "", brain.Errorf(brain.EINVALID, "_meta.%s must be a device name (a slug such as \"laptop\"), not %v", metaDevice, v)
	}
	return name, nil
}

// metaIdempotencyKey is the _meta field of a tools/call that carries the client's key for the request; over
// HTTP the Idempotency-Key header may carry it instead (both must agree).
const metaIdempotencyKey = "gem/idempotency_key"

// requestKeyOf is a tools/call's key for its request: _meta's gem/idempotency_key and the HTTP request's
// Idempotency-Key header, either, or both when they agree.
func requestKeyOf(req *mcp.CallToolRequest) (string, error) {
	var field string
	if v, ok := req.Params.Meta[metaIdempotencyKey]; ok && v != nil {
		s, ok := v.(string)
		if !ok || s == "" || utf8.RuneCountInString(s) > brain.RequestKeyMaxLen {
			return "", brain.Errorf(brain.EINVALID, "_meta.%s must be a string of 1 to %d characters, not %v",
				metaIdempotencyKey, brain.RequestKeyMaxLen, v)
		}
		field = s
	}
	var header []string
	if req.Extra != nil {
		header = req.Extra.Header.Values(brain.IdempotencyKeyHeader)
	}
	return brain.RequestKey(header, field)
}

// keyReused answers a call whose key its caller used before with other arguments: nothing was made.
func keyReused(tool string, e *brain.Error) *mcp.CallToolResult {
	ce := &registry.CallError{Code: registry.ErrorCode(brain.EKEYREUSED), Message: e.Message}
	if e.Details != nil {
		ce.Details, _ = json.Marshal(e.Details)
	}
	return &mcp.CallToolResult{IsError: true,
		StructuredContent: map[string]any{"tool": tool, "status": string(registry.StatusFailed), "error": ce},
		Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s was not called: %s", tool, e.Message)}}}
}

// SetDeviceTools adds the tools devices started serving and removes those no device serves any more:
// tools/list follows the devices that are connected.
func (s *Server) SetDeviceTools(added, removed []*registry.Tool) {
	if len(removed) > 0 {
		s.removeTools(removed)
	}
	s.addTools(added)
}
