package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP tasks (the io.modelcontextprotocol/tasks extension, SEP-2663; docs/mcp-server.md#tasks). A client that
// declares the extension in a tools/call's _meta gets, for a call that has no receipt within TaskWait, a task
// instead of {"status": "pending"}: a handle it polls with tasks/get, whose state is the call's. GEM's call is
// the task's work: durable, with exactly one receipt; the task only names it.

const (
	// TasksExtension is the tasks extension's id, declared in server/discover's capabilities and by clients
	// in each request's _meta (io.modelcontextprotocol/clientCapabilities).
	TasksExtension = "io.modelcontextprotocol/tasks"
	// TaskWaitDefault is how long a tools/call from a client that declared tasks waits for the receipt
	// before answering with a task.
	TaskWaitDefault = time.Second
	// TaskPollIntervalDefault is the poll interval a task suggests while its call runs; a call waiting for a
	// person suggests heldPollFactor times more.
	TaskPollIntervalDefault = time.Second
	heldPollFactor          = 5

	// taskIDPrefix starts every task id: 256 random bits after it, base64url.
	taskIDPrefix = "gemtask_"
	// approvalInput is the key of a held call's one input request.
	approvalInput = "approval"
	// resultTypeTask marks a CreateTaskResult; resultTypeComplete every other result of the 2026-07-28 revision.
	resultTypeTask     = "task"
	resultTypeComplete = "complete"
)

// Task statuses (SEP-2663).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskCancelled     = "cancelled"
)

var taskIDRe = regexp.MustCompile(`^` + taskIDPrefix + `[A-Za-z0-9_-]{43}$`)

// declaresTasks reports whether a request's _meta declares the tasks extension: on protocol revision
// 2026-07-28 or later (the extension is not defined before it), its per-request client capabilities name
// the extension with an object. A declaration made earlier (another request, initialize) does not count.
func declaresTasks(meta mcp.Meta) bool {
	if !revisionAtLeast(meta[mcp.MetaKeyProtocolVersion], modernProtocol) {
		return false
	}
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	extensions, _ := caps["extensions"].(map[string]any)
	_, ok := extensions[TasksExtension].(map[string]any)
	return ok
}

// revisionAtLeast says whether v is an MCP protocol revision (a date, YYYY-MM-DD) no earlier than min: a
// string that merely sorts after it ("3", "9999") is none.
func revisionAtLeast(v any, min string) bool {
	s, _ := v.(string)
	at, err := time.Parse(time.DateOnly, s)
	if err != nil || at.Format(time.DateOnly) != s {
		return false
	}
	floor, _ := time.Parse(time.DateOnly, min)
	return !at.Before(floor)
}

// missingTasksCapability is the -32021 error a client that did not declare the extension gets for tasks/*.
func missingTasksCapability(method string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension declared in the request's _meta (%s, protocol revision %s or later)",
			method, TasksExtension, mcp.MetaKeyClientCapabilities, modernProtocol)}
}

// taskSlot is where a tools/call handler leaves the task it answers with, for taskMethods to return in lieu
// of its CallToolResult. Its presence in a handler's context says the client declared tasks.
type taskSlot struct{ task *createTaskResult }

type taskSlotKey struct{}

func taskSlotOf(ctx context.Context) *taskSlot {
	s, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	return s
}

// taskResult is a task as the wire has it: a CreateTaskResult (resultType task) or a tasks/get result
// (resultType complete, with the status's own fields).
type taskResult struct {
	mcp.ResultBase
	ResultType     string                  `json:"resultType"`
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          *int64                  `json:"ttlMs"` // null: a task lives as long as its call is kept
	PollIntervalMs int64                   `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]inputRequest `json:"inputRequests,omitempty"`
	Result         json.RawMessage         `json:"result,omitempty"`
}

// createTaskResult is what a tools/call answers with when it becomes a task.
type createTaskResult = taskResult

// inputRequest is a request of the server to the client, carried by a task (here: elicitation/create).
type inputRequest struct {
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
}

// completeResult is the empty acknowledgement of tasks/update and tasks/cancel.
type completeResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel, kept raw so that a wrong type is
// answered -32602 by the handler rather than by a decoder.
type taskParams struct {
	mcp.ParamsBase
	TaskID         json.RawMessage `json:"taskId,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// addTasks registers tasks/get, tasks/update and tasks/cancel (tasks/result and tasks/list, which SEP-2663
// removed, stay unknown methods).
func (s *Server) addTasks() error {
	for method, h := range map[string]func(context.Context, *mcp.ServerSession, *taskParams) (mcp.Result, error){
		"tasks/get": s.getTask, "tasks/update": s.updateTask, "tasks/cancel": s.cancelTask,
	} {
		if err := mcp.AddReceivingCustomMethod(s.mcp, method, h); err != nil {
			return err
		}
	}
	return nil
}

// taskMethods is what tasks add to the SDK's methods: a tools/call from a client that declared them may
// answer with a task (its handler leaves it in a taskSlot); initialize, the 2025 handshake, does not offer
// the extension, which is not defined before revision 2026-07-28.
func (s *Server) taskMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok || !declaresTasks(p.Meta) {
				return next(ctx, method, req)
			}
			slot := &taskSlot{}
			res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
			if err == nil && slot.task != nil {
				return slot.task, nil
			}
			return res, err
		case "initialize":
			res, err := next(ctx, method, req)
			if init, ok := res.(*mcp.InitializeResult); ok && init.Capabilities != nil && init.Capabilities.Extensions[TasksExtension] != nil {
				caps := *init.Capabilities
				caps.Extensions = make(map[string]any, len(init.Capabilities.Extensions))
				for k, v := range init.Capabilities.Extensions {
					if k != TasksExtension {
						caps.Extensions[k] = v
					}
				}
				answer := *init
				answer.Capabilities = &caps
				return &answer, err
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// toTask makes call id (of tool) a task for the client, committed before the answer leaves (SEP-2663: a
// task is findable once it is answered), and leaves it in slot. The handler's own answer is what a client
// without tasks would get.
func (s *Server) toTask(ctx context.Context, slot *taskSlot, tool string, id uuid.UUID) (*mcp.CallToolResult, error) {
	c := callerOf(ctx)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand never fails (it panics rather)
	taskID := taskIDPrefix + base64.RawURLEncoding.EncodeToString(secret)
	hash := sha256.Sum256([]byte(taskID))
	if _, err := postgres.MCPTaskCreate(ctx, s.pool, hash[:], id, c.Name, c.Agent); err != nil {
		return nil, s.internal(ctx, err, "error recording the task")
	}
	task, err := postgres.MCPTaskGet(ctx, s.pool, hash[:], c.Name, c.Agent)
	if err != nil {
		return nil, s.internal(ctx, err, "error reading the task")
	}
	t, err := s.taskState(ctx, c, taskID, task)
	if err != nil {
		return nil, err
	}
	t.ResultType = resultTypeTask
	t.InputRequests, t.Result = nil, nil // a CreateTaskResult is the Task alone; tasks/get has the rest
	slot.task = t
	s.logger(ctx).Debug().Str("call_id", id.String()).Str("tool", tool).Str("status", t.Status).Msg("mcp call answered as a task")
	return answer(c, tool, id, nil, false), nil
}

// taskOf finds the task a tasks/* request names, for its caller: a request without the extension declared
// is refused -32021; an id that is malformed, unknown or another caller's (or another agent's) is the same
// -32602, "Task not found", so that no answer tells a task of someone else's from none.
func (s *Server) taskOf(ctx context.Context, method string, p *taskParams) (string, []byte, *postgres.MCPTask, error) {
	if p == nil {
		return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(`invalid params: %s needs {"taskId": "<the taskId tools/call answered>"}`, method)}
	}
	if !declaresTasks(p.Meta) {
		return "", nil, nil, missingTasksCapability(method)
	}
	var taskID string
	if len(p.TaskID) == 0 || string(p.TaskID) == "null" || json.Unmarshal(p.TaskID, &taskID) != nil {
		return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(`invalid params: %s needs "taskId", a string`, method)}
	}
	verb := map[string]string{"tasks/get": "retrieve", "tasks/update": "update", "tasks/cancel": "cancel"}[method]
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to %s task: Task not found", verb)}
	if !taskIDRe.MatchString(taskID) {
		return "", nil, nil, notFound
	}
	hash := sha256.Sum256([]byte(taskID))
	c := callerOf(ctx)
	t, err := postgres.MCPTaskGet(ctx, s.pool, hash[:], c.Name, c.Agent)
	if brain.ErrorCode(err) == brain.ENOTFOUND {
		return "", nil, nil, notFound
	}
	if err != nil {
		return "", nil, nil, s.internal(ctx, err, "error reading the task")
	}
	return taskID, hash[:], t, nil
}

// getTask answers tasks/get: the task's state, read from its call, its approval and its receipt.
func (s *Server) getTask(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	taskID, _, t, err := s.taskOf(ctx, "tasks/get", p)
	if err != nil {
		return nil, err
	}
	return s.taskState(ctx, callerOf(ctx), taskID, t)
}

// taskState is a task (found for caller c) as tasks/get answers it:
//
//	queued, running                  working (statusMessage: which, and the attempt)
//	awaiting_approval                input_required, with the approval's URL as its one input request;
//	                                 once the client answered that request, working until a person decides
//	a receipt                        completed, result: the tools/call answer a client without tasks gets
//	                                 (isError for a failed receipt, structuredContent held to outputSchema)
//	a receipt with code cancelled    cancelled (tasks/cancel, or a cancellation by its caller otherwise)
func (s *Server) taskState(ctx context.Context, c Caller, taskID string, t *postgres.MCPTask) (*taskResult, error) {
	last := t.CreatedAt
	for _, at := range []*time.Time{t.StartedAt, t.FinishedAt, t.ApprovalDecided, t.InputAnswered} {
		if at != nil && at.After(last) {
			last = *at
		}
	}
	res := &taskResult{ResultBase: mcp.ResultBase{Meta: mcp.Meta{metaCallID: t.CallID.String()}}, ResultType: resultTypeComplete,
		TaskID: taskID, CreatedAt: isoTime(t.CreatedAt), LastUpdatedAt: isoTime(last), PollIntervalMs: s.cfg.TaskPollInterval.Milliseconds()}
	switch t.Status {
	case registry.CallQueued:
		res.Status, res.StatusMessage = taskWorking, "queued: waiting for an executor"
		if t.Attempt > 0 {
			res.StatusMessage = fmt.Sprintf("queued to be tried again after attempt %d", t.Attempt)
		}
	case registry.CallRunning:
		res.Status, res.StatusMessage = taskWorking, fmt.Sprintf("running (attempt %d)", max(t.Attempt, 1))
	case registry.CallAwaitingApproval:
		url := s.approvalsURL(ctx, t.CallID)
		until := ""
		if t.ApprovalExpires != nil {
			until = " until " + isoTime(*t.ApprovalExpires)
		}
		res.PollIntervalMs *= heldPollFactor
		if t.InputAnswered != nil {
			res.Status, res.StatusMessage = taskWorking, fmt.Sprintf("awaiting a person's decision%s: %s", until, url)
			break
		}
		res.Status = taskInputRequired
		res.StatusMessage = fmt.Sprintf("%s (call %s) awaits approval%s: a caller holding approve decides it at %s", t.Tool, t.CallID, until, url)
		res.InputRequests = map[string]inputRequest{approvalInput: s.approvalRequest(c, t, url, until)}
	default: // a receipt: succeeded, failed, not_configured
		receipt, err := gemsql.ReceiptGet(ctx, s.pool, t.CallID)
		if err != nil {
			return nil, s.internal(ctx, err, "error reading the call's receipt")
		}
		if receipt.Error != nil && receipt.Error.Code == registry.CodeCancelled {
			res.Status, res.StatusMessage = taskCancelled, receipt.Error.Message
			break
		}
		res.Status = taskCompleted
		res.StatusMessage = fmt.Sprintf("%s %s", t.Tool, receipt.Status)
		if receipt.Error != nil {
			res.StatusMessage += fmt.Sprintf(": %s: %s", receipt.Error.Code, receipt.Error.Message)
		}
		if res.Result, err = s.callToolAnswer(ctx, c, t.Tool, t.CallID, receipt); err != nil {
			return nil, s.internal(ctx, err, "error writing the call's answer")
		}
	}
	return res, nil
}

// callToolAnswer is the CallToolResult a tools/call would have answered for this receipt, as revision
// 2026-07-28 writes it (resultType complete): a completed task's result.
func (s *Server) callToolAnswer(ctx context.Context, c Caller, tool string, id uuid.UUID, receipt *registry.Receipt) (json.RawMessage, error) {
	res := answer(c, tool, id, receipt, false)
	if st := s.servedByName(tool); st != nil {
		res = s.conform(ctx, st, res)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	fields["resultType"] = json.RawMessage(`"` + resultTypeComplete + `"`)
	return json.Marshal(fields)
}

// approvalRequest is a held call's input request: for a caller that may decide it (holding approve,
// speaking for no agent), a form asking for the decision, answered with tasks/update; for any other, the
// URL where a person decides it (URL-mode elicitation), which the client shows its user.
func (s *Server) approvalRequest(c Caller, t *postgres.MCPTask, url, until string) inputRequest {
	if c.mayDecide() {
		return inputRequest{Method: "elicitation/create", Params: map[string]any{
			"mode": "form",
			"message": fmt.Sprintf("%s (call %s) awaits approval%s. Approve it to let it run, or reject it with a reason (its receipt says why). "+
				"It may also be decided at %s.", t.Tool, t.CallID, until, url),
			"requestedSchema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "true runs the call; false rejects it"},
					"reason":  map[string]any{"type": "string", "title": "Reason", "maxLength": 2000, "description": "why; required to reject"},
				},
				"required": []string{"approve"},
			},
		}}
	}
	return inputRequest{Method: "elicitation/create", Params: map[string]any{
		"mode":          "url",
		"elicitationId": t.CallID.String(),
		"url":           url,
		"message": fmt.Sprintf("%s (call %s) awaits a person's approval%s: a caller holding approve decides it at %s "+
			"(or POST /calls/%s/approve or /reject). The task goes on once it is decided.", t.Tool, t.CallID, until, url, t.CallID),
	}}
}

// mayDecide says whether the caller may decide approvals: it holds approve and speaks for no agent (an LLM
// never approves what an LLM asked for). The database checks again when it decides.
func (c Caller) mayDecide() bool {
	return c.Agent == "" && c.Grants.Allows(registry.PermissionApprove)
}

// approvalsURL is where a person decides a held call: the studio's approvals page, at the brain's URL
// (Config.BaseURL, else the HTTP request's).
func (s *Server) approvalsURL(ctx context.Context, call uuid.UUID) string {
	base := s.cfg.BaseURL
	if base == "" {
		base, _ = ctx.Value(baseURLKey{}).(string)
	}
	if base == "" {
		base = BaseURLDefault
	}
	return strings.TrimRight(base, "/") + "/studio/approvals#call-" + call.String()
}

// baseURLKey keys, in an HTTP request's context, the brain's URL as the request reached it.
type baseURLKey struct{}

// updateTask answers tasks/update: the client's answer to a held call's input request. A caller that may
// decide answers the form with {"action": "accept", "content": {"approve": true|false, "reason"}}, which
// decides the call as gem.approve would; declining (or any answer to the URL request) leaves the decision
// to a person, and the task waits for it as working. A decision from a caller that may not decide is
// refused; answers to keys that are not outstanding are ignored (SEP-2663).
func (s *Server) updateTask(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	_, hash, t, err := s.taskOf(ctx, "tasks/update", p)
	if err != nil {
		return nil, err
	}
	var responses map[string]json.RawMessage
	if len(p.InputResponses) == 0 || json.Unmarshal(p.InputResponses, &responses) != nil || responses == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: tasks/update needs "inputResponses", an object of answers by the keys of the task's inputRequests`}
	}
	ack := &completeResult{ResultType: resultTypeComplete}
	raw, ok := responses[approvalInput]
	if !ok || t.Status != registry.CallAwaitingApproval || t.InputAnswered != nil {
		return ack, nil // not outstanding: ignored
	}
	var response struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &response) != nil || response.Action != "accept" && response.Action != "decline" && response.Action != "cancel" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: inputResponses.approval is an elicitation's answer: {"action": "accept" | "decline" | "cancel", "content"}`}
	}
	c := callerOf(ctx)
	var decision struct {
		Approve *bool   `json:"approve"`
		Reason  *string `json:"reason"`
	}
	if len(response.Content) > 0 && string(response.Content) != "null" && json.Unmarshal(response.Content, &decision) != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: inputResponses.approval.content is {"approve": true | false, "reason": "…"}`}
	}
	decides := response.Action == "accept" && decision.Approve != nil
	switch {
	case decides && !c.mayDecide():
		return nil, mayNotDecide(c, s.approvalsURL(ctx, t.CallID))
	case c.mayDecide() && response.Action == "accept" && !decides:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: accepting the approval form gives {"approve": true | false}; decline it to leave the decision to someone else`}
	case !decides:
		if err := postgres.MCPTaskInputAnswered(ctx, s.pool, hash); err != nil {
			return nil, s.internal(ctx, err, "error recording the answer")
		}
		return ack, nil
	}
	reason := ""
	if decision.Reason != nil {
		reason = *decision.Reason
	}
	switch {
	case !*decision.Approve && strings.TrimSpace(reason) == "":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: a rejection needs a reason (its receipt says it)"}
	case len([]rune(reason)) > 2000:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: the reason is at most 2000 characters"}
	}
	_, err = gemsql.CallDecide(ctx, s.pool, t.CallID, *decision.Approve, reason, c.Name)
	var de *gemsql.DecisionError
	switch {
	case errors.Is(err, gemsql.ErrMayNotDecide):
		return nil, mayNotDecide(c, s.approvalsURL(ctx, t.CallID))
	case errors.As(err, &de):
		return ack, nil // decided or expired meanwhile: the request is no longer outstanding
	case err != nil:
		return nil, s.internal(ctx, err, "error deciding the call")
	}
	return ack, nil
}

// mayNotDecide refuses a decision from a caller that may not decide approvals.
func mayNotDecide(c Caller, url string) error {
	why := "it lacks permission approve"
	if c.Agent != "" {
		why = fmt.Sprintf("it speaks for agent %q, and an agent may not decide approvals", c.Agent)
	}
	data, _ := json.Marshal(map[string]any{"code": brain.EFORBIDDEN, "url": url})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Data: data,
		Message: fmt.Sprintf("invalid params: caller %s may not decide this approval: %s; a person decides it at %s", c.Name, why, url)}
}

// cancelTask answers tasks/cancel: the call is cancelled if it has not started — held for approval, or
// queued — with its one receipt (failed, cancelled), and the task becomes cancelled. A running or finished
// call is left to end as it does (SEP-2663: cancellation is cooperative); the answer is the same empty
// acknowledgement, and tasks/get says what came of it.
func (s *Server) cancelTask(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	_, _, t, err := s.taskOf(ctx, "tasks/cancel", p)
	if err != nil {
		return nil, err
	}
	c := callerOf(ctx)
	status, err := gemsql.CallCancel(ctx, s.pool, t.CallID, c.Name)
	switch {
	case errors.Is(err, gemsql.ErrMayNotCancel):
		data, _ := json.Marshal(map[string]any{"code": brain.EFORBIDDEN})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Data: data, Message: "invalid params: " + err.Error()}
	case err != nil:
		return nil, s.internal(ctx, err, "error cancelling the call")
	}
	s.logger(ctx).Info().Str("call_id", t.CallID.String()).Str("caller", c.Name).Str("status", status).Msg("MCP tasks/cancel")
	return &completeResult{ResultType: resultTypeComplete}, nil
}

// isoTime writes a task's times (ISO 8601, UTC).
func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// taskNameHeader checks a tasks/* request over HTTP on revision 2026-07-28 or later: SEP-2663 has the client
// put the taskId in the Mcp-Name header (for intermediaries that route by it), and a request whose header is
// missing or names another task is refused as the SDK refuses a tools/call's (SEP-2243: -32020, HTTP 400).
func taskNameHeader(h http.Header, msg *checked) *rpcError {
	if !strings.HasPrefix(msg.method, "tasks/") || msg.id == nil || h.Get("Mcp-Protocol-Version") < modernProtocol {
		return nil
	}
	var body struct {
		Params struct {
			TaskID json.RawMessage `json:"taskId"`
		} `json:"params"`
	}
	var taskID string
	if json.Unmarshal(msg.body, &body) != nil || json.Unmarshal(body.Params.TaskID, &taskID) != nil || taskID == "" {
		return nil // no taskId to route by: the handler refuses the params
	}
	name := h.Get("Mcp-Name")
	if encoded, ok := strings.CutPrefix(name, "=?base64?"); ok && strings.HasSuffix(encoded, "?=") {
		if decoded, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(encoded, "?=")); err == nil {
			name = string(decoded)
		}
	}
	switch {
	case h.Get("Mcp-Name") == "":
		return &rpcError{mcp.CodeHeaderMismatch, fmt.Sprintf("missing required Mcp-Name header for method %q: it carries params.taskId", msg.method)}
	case name != taskID:
		return &rpcError{mcp.CodeHeaderMismatch, "header mismatch: the Mcp-Name header does not match params.taskId"}
	}
	return nil
}
