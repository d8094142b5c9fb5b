package registry

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// CallJobKind is the River job kind of a tool call.
const CallJobKind = "gem.tool_call"

// CallArgs are the River job args of one tool call. The call itself (input, idempotency key, run, agent) is
// its core_tool_calls row; the job carries only the row's id, so a call inserted with plain SQL and one
// enqueued by the brain are executed the same way. The row's insert trigger creates the job.
type CallArgs struct {
	CallID   uuid.UUID `json:"call_id"`
	ToolName string    `json:"tool_name"`
	// Device is the device the call names (core_tool_calls.device), so an executor routes it before loading it.
	Device string `json:"device,omitempty"`
}

// Kind is the River job kind.
func (CallArgs) Kind() string { return CallJobKind }

// CallStatus is the status of a core_tool_calls row.
type CallStatus string

// Call statuses. A call is queued until an executor fetches its job, running while an attempt is under way,
// and ends with the status of its one receipt.
const (
	CallQueued        CallStatus = "queued"
	CallRunning       CallStatus = "running"
	CallSucceeded     CallStatus = "succeeded"
	CallFailed        CallStatus = "failed"
	CallNotConfigured CallStatus = "not_configured"
	// CallAwaitingApproval: the call waits for a decision (docs/governance.md#approvals); it has no job yet.
	CallAwaitingApproval CallStatus = "awaiting_approval"
)

// ReceiptStatus is the outcome recorded in a receipt.
type ReceiptStatus string

// Receipt statuses.
const (
	// StatusSucceeded: the handler ran (or an earlier call with the same idempotency key had) and its result
	// matched the output schema; its database effects are committed with the receipt.
	StatusSucceeded ReceiptStatus = "succeeded"
	// StatusFailed: the call did not succeed; Error says why. Its database effects were rolled back.
	StatusFailed ReceiptStatus = "failed"
	// StatusNotConfigured: the tool has no handler here, or needs a provider that is not configured; Error's
	// details say what to set.
	StatusNotConfigured ReceiptStatus = "not_configured"
)

// ErrorCode classifies why a call did not succeed. Codes are stable: callers and SQL audits match on them.
type ErrorCode string

// Error codes.
const (
	// CodeUnknownTool: the call names a tool the registry does not have.
	CodeUnknownTool ErrorCode = "unknown_tool"
	// CodeValidation: the input does not match the tool's input schema; details list every violation.
	CodeValidation ErrorCode = "validation_error"
	// CodeInvalidCall: the call itself is unusable (for example an empty idempotency key for a keyed tool).
	CodeInvalidCall ErrorCode = "invalid_call"
	// CodeNotFound: a row the input refers to does not exist.
	CodeNotFound ErrorCode = "not_found"
	// CodeConflict: the input is valid but the current state refuses it (a locked inspection, a paid invoice).
	CodeConflict ErrorCode = "conflict"
	// CodeTimeout: the handler overran the tool's timeout_ms; it was cancelled and its effects rolled back.
	CodeTimeout ErrorCode = "timeout"
	// CodeHandlerError: the handler failed (or panicked) with an error that is not worth retrying.
	CodeHandlerError ErrorCode = "handler_error"
	// CodeOutputContract: the handler's result does not match the tool's output schema; its effects were
	// rolled back.
	CodeOutputContract ErrorCode = "output_contract_violation"
	// CodeOutcomeUnknown: an earlier attempt of a call with effects outside the database started and never
	// finished, so the call is not run again (it might send twice).
	CodeOutcomeUnknown ErrorCode = "outcome_unknown"
	// CodeNotConfigured: the status not_configured; details carry reason, required_env and next_steps.
	CodeNotConfigured ErrorCode = "not_configured"
	// CodeToolNotEnabled: the call was made for an agent whose skills do not enable the tool.
	CodeToolNotEnabled ErrorCode = "tool_not_enabled"
	// CodePermissionDenied: the call's caller (requested_by) lacks a permission the tool declares, may not
	// act as the call's agent, is not known or is revoked; details name the caller and what it lacks.
	CodePermissionDenied ErrorCode = "permission_denied"
	// CodeInputTooLarge: the call's input is larger than its tool accepts (limits.max_input_bytes, else the
	// executor's GEM_MAX_INPUT_BYTES); details carry bytes and max_bytes. The input never reached a handler.
	CodeInputTooLarge ErrorCode = "input_too_large"
	// CodeResultTooLarge: the handler's result is larger than its tool allows (limits.max_result_bytes, else
	// GEM_MAX_RESULT_BYTES); its effects were rolled back. Details carry bytes and max_bytes.
	CodeResultTooLarge ErrorCode = "result_too_large"
	// CodeRejected: the call needed approval and was rejected; details name who decided and why.
	CodeRejected ErrorCode = "rejected"
	// CodeApprovalExpired: the call needed approval and no decision came before it expired.
	CodeApprovalExpired ErrorCode = "approval_expired"
	// CodeCancelled: the caller that made the call cancelled it before it ran (an MCP client's tasks/cancel);
	// details name who.
	CodeCancelled ErrorCode = "cancelled"
	// CodeRemoteError: a rest or mcp tool's remote answered with an error (an HTTP status outside the tool's
	// success statuses, an MCP result with isError, a server that could not be reached and may not be
	// retried); details carry the remote's status and message.
	CodeRemoteError ErrorCode = "remote_error"
	// CodeScriptError: a script tool's program failed: it threw (a tool's error it did not catch, too), did
	// not compile, or passed a bound (time, calls, output, memory); details carry the sandbox's code, the
	// line, what it printed and the calls it made.
	CodeScriptError ErrorCode = "script_error"
	// CodeDeviceUnavailable: the call's device (the one it names, or every device serving its tool) was not
	// connected within the call's wait; details name the devices and how long the call waited.
	CodeDeviceUnavailable ErrorCode = "device_unavailable"
	// CodeUnknownDevice: the call names a device that does not exist, or one that does not serve its tool.
	CodeUnknownDevice ErrorCode = "unknown_device"
	// CodeRateLimited: the call waited for its turn under its tool's concurrency or rate limit longer than
	// the tool's max_wait_ms; it did not run.
	CodeRateLimited ErrorCode = "rate_limited"
	// CodeRetriesExhausted: every attempt failed with a transient error (database or provider unavailable).
	CodeRetriesExhausted ErrorCode = "retries_exhausted"
	// CodeJobDiscarded, CodeJobCancelled, CodeJobDeleted: the call's River job ended outside the executor
	// (discarded by River's rescuer, cancelled or deleted by an operator); written by a database trigger.
	CodeJobDiscarded ErrorCode = "job_discarded"
	CodeJobCancelled ErrorCode = "job_cancelled"
	CodeJobDeleted   ErrorCode = "job_deleted"
	// CodeJobCompletedWithoutReceipt: the job was marked completed by something other than the executor.
	CodeJobCompletedWithoutReceipt ErrorCode = "job_completed_without_receipt"
)

// ErrorCodes lists every error code, for documentation and for checking the SQL triggers.
var ErrorCodes = []ErrorCode{
	CodeUnknownTool, CodeValidation, CodeInvalidCall, CodeNotFound, CodeConflict, CodeTimeout,
	CodeHandlerError, CodeOutputContract, CodeOutcomeUnknown, CodeNotConfigured, CodeToolNotEnabled,
	CodePermissionDenied, CodeInputTooLarge, CodeResultTooLarge, CodeRejected, CodeApprovalExpired, CodeCancelled, CodeRateLimited, CodeRemoteError, CodeScriptError, CodeDeviceUnavailable, CodeUnknownDevice, CodeRetriesExhausted, CodeJobDiscarded, CodeJobCancelled, CodeJobDeleted, CodeJobCompletedWithoutReceipt,
}

// CallError is the error recorded in a receipt.
type CallError struct {
	Code    ErrorCode       `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}

func (e *CallError) Error() string { return string(e.Code) + ": " + e.Message }

// NotConfiguredDetails are a not_configured receipt's error details.
type NotConfiguredDetails struct {
	// Reason says what is missing, in a sentence.
	Reason string `json:"reason"`
	// RequiredEnv lists the environment variables that enable the tool.
	RequiredEnv []string `json:"required_env"`
	// NextSteps says what to do, step by step.
	NextSteps []string `json:"next_steps"`
}

// DBWrite is what a handler wrote to one table with one kind of statement.
type DBWrite struct {
	Table string `json:"table"`
	// Op is "insert", "update" or "delete".
	Op string `json:"op"`
	// Count is the number of rows.
	Count int `json:"count"`
	// IDs are the rows' ids (at most DBWriteIDsMax; Count is always exact).
	IDs []string `json:"ids"`
}

// DBWriteIDsMax caps the ids listed per DBWrite.
const DBWriteIDsMax = 100

// OutsideEffect is an effect outside the database that a handler reports (a message sent, a file written).
type OutsideEffect struct {
	// Kind names the effect: "sms", "email", "http", "file".
	Kind string `json:"kind"`
	// Target is who or what it reached (a phone number, an address, a URL).
	Target string `json:"target,omitempty"`
	// Reference is the provider's id for it, if any.
	Reference string `json:"reference,omitempty"`
}

// Effects are a call's effects.
type Effects struct {
	// DBWrites lists the rows the handler wrote, captured by database triggers in the call's transaction.
	DBWrites []DBWrite `json:"db_writes"`
	// Outside lists effects outside the database, as reported by the handler.
	Outside []OutsideEffect `json:"outside,omitempty"`
	// FilesWritten lists the files the handler put in GEM's file store.
	FilesWritten []FileWritten `json:"files_written,omitempty"`
}

// FileWritten is one file a call put in GEM's file store. Files are named by their content, so writing the
// same bytes again (a retried call) gives the same ref and changes nothing.
type FileWritten struct {
	// Ref is the file's reference in the store ("gemfs://<sha256>.pdf"), the value tools return.
	Ref string `json:"ref"`
	// Name is the file's suggested name for people ("quote-Q-0001.pdf").
	Name string `json:"name,omitempty"`
	// ContentType is the file's media type.
	ContentType string `json:"content_type"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// SHA256 is the hex digest of the file's content.
	SHA256 string `json:"sha256"`
}

// Receipt is the one record of how a call ended. Exactly one exists per call; it is written in the same
// transaction as the call's final status, the handler's database effects and the River job's completion.
type Receipt struct {
	CallID   uuid.UUID       `json:"call_id"`
	ToolName string          `json:"tool"`
	Status   ReceiptStatus   `json:"status"`
	Result   json.RawMessage `json:"result"`
	Effects  Effects         `json:"effects"`
	Error    *CallError      `json:"error,omitempty"`
	// Summary holds the values of the tool's receipt_fields, keyed by field ("result.task_id").
	Summary map[string]any `json:"summary,omitempty"`

	// IdempotencyKey is the key the call was deduplicated by, if its tool's mode uses one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// IdempotencyHit is true when the handler did not run because an earlier succeeded call holds the key;
	// Result is then that call's result and IdempotencyOf its id.
	IdempotencyHit bool       `json:"idempotency_hit"`
	IdempotencyOf  *uuid.UUID `json:"idempotency_of,omitempty"`

	// Device is the device that ran the call (a device tool), and DevicesTried every device it was handed
	// to, in order (more than one after a failover).
	Device       string   `json:"device,omitempty"`
	DevicesTried []string `json:"devices_tried,omitempty"`

	// LimitWaitMS is how long the call waited for its turn under its tool's concurrency or rate limit
	// before it ran (absent: the tool has no such limit).
	LimitWaitMS *float64 `json:"limit_wait_ms,omitempty"`

	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
}

// Summarize picks the tool's receipt_fields out of a result and effects. Fields that are absent are left out.
func (t *Tool) Summarize(result json.RawMessage, effects *Effects) map[string]any {
	if len(t.ReceiptFields) == 0 {
		return nil
	}
	var doc struct {
		Result  any `json:"result"`
		Effects any `json:"effects"`
	}
	var buf bytes.Buffer
	buf.WriteString(`{"result":`)
	if len(result) == 0 {
		buf.WriteString("null")
	} else {
		buf.Write(result)
	}
	buf.WriteString(`,"effects":`)
	eff, _ := json.Marshal(effects)
	buf.Write(eff)
	buf.WriteString("}")
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	root := map[string]any{"result": doc.Result, "effects": doc.Effects}
	out := make(map[string]any, len(t.ReceiptFields))
	for _, f := range t.ReceiptFields {
		if v, ok := lookupPath(root, f); ok {
			out[f] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// lookupPath follows a dotted path through objects (and numeric segments through arrays).
func lookupPath(v any, path string) (any, bool) {
	for _, seg := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}
