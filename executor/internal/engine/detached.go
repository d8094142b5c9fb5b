package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Detached is one run of a handler away from the database, as a device runs its tools: no transaction, no
// receipt (the hub side writes it). Handlers that need Call.DB cannot run detached; rest and mcp tools (and
// scripts) do not use it.
type Detached struct {
	CallID  uuid.UUID
	Tool    *registry.Tool
	Handler gemcall.Handler
	Input   json.RawMessage
	Log     zerolog.Logger
}

// DetachedResult is how a detached run ended: a result that matches the tool's output schema, or an error
// as a receipt would carry it. Retryable marks a transient failure a caller may try again.
type DetachedResult struct {
	Result    json.RawMessage
	Error     *registry.CallError
	Retryable bool
}

// Run validates the input, runs the handler under the tool's timeout (recovering a panic) and checks its
// result against the output schema.
func (d *Detached) Run(ctx context.Context) DetachedResult {
	if _, invalid := validInput(d.Tool, d.Input); invalid != nil {
		if d.Tool.HasSecrets() && invalid.err != nil {
			invalid = redactedInvalid(d.Tool, invalid)
		}
		return DetachedResult{Error: invalid.err}
	}
	hctx, cancel := context.WithTimeout(d.Log.WithContext(ctx), d.Tool.Timeout())
	defer cancel()
	c := &gemcall.Call{ID: d.CallID, Tool: d.Tool, Input: d.Input, Attempt: 1, Log: d.Log}
	v, err := func() (v any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = panicked(p)
			}
		}()
		return d.Handler.Run(hctx, c)
	}()
	if err != nil {
		if hctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return DetachedResult{Error: &registry.CallError{Code: registry.CodeTimeout,
				Message: fmt.Sprintf("the tool overran its %s timeout and was cancelled", d.Tool.Timeout())}}
		}
		he, ok := asError(err)
		if !ok {
			return DetachedResult{Error: &registry.CallError{Code: registry.CodeHandlerError, Message: "the handler failed: " + err.Error()}}
		}
		ce := &registry.CallError{Code: he.Code, Message: he.Message}
		if he.Details != nil {
			ce.Details, _ = json.Marshal(he.Details)
		}
		return DetachedResult{Error: ce, Retryable: errRetryable(he)}
	}
	result, err := json.Marshal(v)
	if err != nil {
		return DetachedResult{Error: &registry.CallError{Code: registry.CodeOutputContract, Message: "the handler's result cannot be encoded as JSON: " + err.Error()}}
	}
	if verr := d.Tool.ValidateOutput(result); verr != nil {
		details := map[string]any{"result": json.RawMessage(result)}
		var ve *registry.ValidationError
		if errors.As(verr, &ve) {
			details["violations"] = ve.Violations
		}
		ce := &registry.CallError{Code: registry.CodeOutputContract, Message: "the tool's result does not match its output schema: " + verr.Error()}
		ce.Details, _ = json.Marshal(details)
		return DetachedResult{Error: ce}
	}
	// Files the handler staged (an MCP server's images) go to this machine's file store, which the result
	// names them in.
	if _, err := stateOf(c).WriteStaged(); err != nil {
		return DetachedResult{Error: &registry.CallError{Code: registry.CodeHandlerError, Message: "the handler failed: " + err.Error()}}
	}
	return DetachedResult{Result: result}
}
