package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// Defaults of the chat loop.
const (
	// ToolSearchThresholdDefault: an agent with more tools than this is offered search_tools and
	// describe_tool instead of the full list.
	ToolSearchThresholdDefault = 40
	// ChatWaitTimeoutDefault bounds the wait for one iteration's receipts.
	ChatWaitTimeoutDefault = 30 * time.Second
	// historyMessages is how many stored messages of a session are sent back to the LLM.
	historyMessages = 60
	// toolResultMax caps the JSON of one tool result fed back to the LLM.
	toolResultMax = 16 << 10
)

// Meta-tools offered to agents with many tools. They are answered by the brain itself (they only read the
// registry), so they are not calls and have no receipts.
const (
	metaSearchTools  = "search_tools"
	metaDescribeTool = "describe_tool"
)

// ChatRequest is the body of POST /agents/{slug}/chat.
type ChatRequest struct {
	Message   string `json:"message"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id,omitempty"`
}

var chatRequestSchema = registry.MustCompileSchema("chat request", []byte(`{
	"type": "object",
	"properties": {
		"message": {"type": "string", "minLength": 1, "maxLength": 20000},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 200},
		"session_id": {"type": "string", "minLength": 1, "maxLength": 200}
	},
	"required": ["message", "user_id"],
	"additionalProperties": false
}`))

// ChatToolCall is one tool call of a chat turn.
type ChatToolCall struct {
	// CallID is the GEM call, when one was made (not for refused arguments or meta-tools).
	CallID *uuid.UUID `json:"call_id"`
	Tool   string     `json:"tool"`
	// Status is the receipt's status, or pending, invalid_arguments, not_enabled, unknown_tool, or answered
	// (a meta-tool).
	Status    string `json:"status"`
	Iteration int    `json:"iteration"`
}

// ChatResponse is the answer to POST /agents/{slug}/chat.
type ChatResponse struct {
	OK         bool           `json:"ok"`
	Reply      string         `json:"reply"`
	RunID      uuid.UUID      `json:"run_id"`
	SessionID  string         `json:"session_id"`
	ToolCalls  []ChatToolCall `json:"tool_calls"`
	Iterations int            `json:"iterations"`
	// LimitReached is true when the agent hit max_tool_iterations before answering in text.
	LimitReached bool     `json:"limit_reached"`
	Errors       []*Error `json:"errors"`
}

// Chat runs agents: the LLM tool loop, with every tool call going through the queue.
type Chat struct {
	llm       LLM
	reg       *registry.Registry
	agents    *Agents
	pool      *pgxpool.Pool
	waiter    *gemsql.ReceiptWaiter
	log       zerolog.Logger
	threshold int
	wait      time.Duration
}

// ChatConfig tunes the loop.
type ChatConfig struct {
	// ToolSearchThreshold is the number of tools above which the meta-tools are offered. Defaults to 40
	// (GEM_BRAIN_TOOL_SEARCH_THRESHOLD).
	ToolSearchThreshold int
	// WaitTimeout bounds the wait for one iteration's receipts. Defaults to 30s (GEM_BRAIN_CHAT_WAIT_TIMEOUT).
	WaitTimeout time.Duration
}

// NewChat builds the loop; llm may be nil (chat then answers that no LLM is configured).
func NewChat(llm LLM, reg *registry.Registry, agents *Agents, pool *pgxpool.Pool, waiter *gemsql.ReceiptWaiter, cfg ChatConfig, log zerolog.Logger) *Chat {
	if cfg.ToolSearchThreshold <= 0 {
		cfg.ToolSearchThreshold = ToolSearchThresholdDefault
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = ChatWaitTimeoutDefault
	}
	return &Chat{llm: llm, reg: reg, agents: agents, pool: pool, waiter: waiter, log: log, threshold: cfg.ToolSearchThreshold, wait: cfg.WaitTimeout}
}

// chatRun is the state of one chat request.
type chatRun struct {
	agent   *Agent
	req     *ChatRequest
	runID   uuid.UUID
	tools   *ToolSet
	meta    bool
	offered map[string]bool // registry tools offered (all, or those described, with meta-tools)
	system  string
	history []Message
	resp    *ChatResponse
	calls   []PlannedCall
	log     zerolog.Logger
}

// Chat handles one message to an agent.
func (c *Chat) Chat(ctx context.Context, slug string, body []byte, requester string) (*ChatResponse, error) {
	req, err := decodeInput[ChatRequest](chatRequestSchema, body)
	if err != nil {
		return nil, err
	}
	agent, err := c.agents.AgentGet(ctx, c.pool, slug)
	if err != nil {
		return nil, err
	}
	if !agent.Enabled {
		return nil, Errorf(ECONFLICT, "agent %q is disabled", slug)
	}
	if c.llm == nil {
		return nil, &Error{Code: ENOLLM, Message: "no LLM is configured, so agents cannot chat: set GEM_LLM_MODEL and GEM_LLM_API_KEY (or GEM_LLM_BASE_URL for a local server), and GEM_LLM_PROVIDER=anthropic for Claude; the rules planner (POST /brain/run) works without one"}
	}
	if req.SessionID == "" {
		req.SessionID = uuid.NewString()
	}

	r := &chatRun{agent: agent, req: req, runID: uuid.Must(uuid.NewV7()),
		resp: &ChatResponse{SessionID: req.SessionID, ToolCalls: []ChatToolCall{}, Errors: []*Error{}}}
	r.resp.RunID = r.runID
	r.log = c.log.With().Str("run_id", r.runID.String()).Str("agent", slug).Str("session_id", req.SessionID).Logger()

	if err := c.begin(ctx, r, requester); err != nil {
		return nil, err
	}

	loopErr := c.loop(ctx, r)
	status := RunCompleted
	if loopErr != nil {
		status = RunFailed
		r.resp.Errors = append(r.resp.Errors, asError(loopErr))
		if r.resp.Reply == "" {
			r.resp.Reply = asError(loopErr).Message
		}
	}
	r.resp.OK = len(r.resp.Errors) == 0
	if err := c.finish(context.WithoutCancel(ctx), r, status); err != nil {
		return nil, err
	}
	if loopErr != nil && ErrorCode(loopErr) == EUNAVAILABLE {
		return r.resp, loopErr
	}
	return r.resp, nil
}

// begin claims the session, records the run and the user's message, and loads the agent's skills, tools
// and history.
func (c *Chat) begin(ctx context.Context, r *chatRun, requester string) error {
	return unavailable(pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var owner uuid.UUID
		var user string
		var busy bool
		err := tx.QueryRow(ctx, `INSERT INTO agent_sessions (id, agent_id, user_id) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET updated_at = now()
			RETURNING agent_id, user_id, EXISTS (SELECT 1 FROM brain_runs WHERE conversation_id = $1 AND mode = 'chat'
				AND status IN ('planning', 'waiting') AND created_at > now() - interval '10 minutes')`,
			r.req.SessionID, r.agent.ID, r.req.UserID).Scan(&owner, &user, &busy)
		if err != nil {
			return err
		}
		if owner != r.agent.ID || user != r.req.UserID {
			return Errorf(ECONFLICT, "session %q belongs to another agent or user", r.req.SessionID)
		}
		if busy {
			return Errorf(ECONFLICT, "session %q is answering another message; wait for it", r.req.SessionID)
		}
		run := &runRecord{ID: r.runID, Message: r.req.Message, Mode: "chat", ConversationID: r.req.SessionID, Status: RunPlanning,
			Decision: Decision{Mode: "chat", Planner: "llm:" + c.llm.Provider(), Reason: "agent " + r.agent.Slug}, PlannedCalls: []PlannedCall{},
			Agent: r.agent.Slug, RequestedBy: requester}
		if err := insertRun(ctx, tx, run); err != nil {
			return err
		}

		// History first (before this message is stored).
		rows, err := tx.Query(ctx, `SELECT role, content, tool_calls, coalesce(tool_call_id, '') FROM (
				SELECT * FROM agent_messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2) m ORDER BY id`, r.req.SessionID, historyMessages)
		if err != nil {
			return err
		}
		r.history, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
			var m Message
			var calls []byte
			err := row.Scan(&m.Role, &m.Content, &calls, &m.ToolCallID)
			if len(calls) > 0 {
				_ = json.Unmarshal(calls, &m.ToolCalls)
			}
			return m, err
		})
		if err != nil {
			return err
		}
		// Never start in the middle of a tool exchange.
		for len(r.history) > 0 && r.history[0].Role != "user" {
			r.history = r.history[1:]
		}
		if err := c.saveMessages(ctx, tx, r, Message{Role: "user", Content: r.req.Message}); err != nil {
			return err
		}

		tools, err := c.agents.AgentTools(ctx, tx, r.agent.Slug, r.req.UserID)
		if err != nil {
			return err
		}
		r.tools = NewToolSet(tools)
		r.meta = r.tools.Len() > c.threshold
		r.offered = map[string]bool{}
		if !r.meta {
			for _, t := range tools {
				r.offered[t.Name] = true
			}
		}

		rows, err = tx.Query(ctx, `SELECT s.name, s.instructions FROM gem_agent_skills($1, $2) g JOIN skills s ON s.id = g.skill_id
			WHERE g.available AND s.instructions <> '' ORDER BY g.priority, s.slug`, r.agent.Slug, r.req.UserID)
		if err != nil {
			return err
		}
		type skillText struct{ name, text string }
		skills, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (skillText, error) {
			var s skillText
			return s, row.Scan(&s.name, &s.text)
		})
		if err != nil {
			return err
		}
		var b strings.Builder
		b.WriteString(strings.TrimSpace(r.agent.Instructions))
		if len(skills) > 0 {
			b.WriteString("\n\n# Skills\n")
			for _, s := range skills {
				fmt.Fprintf(&b, "\n## %s\n\n%s\n", s.name, strings.TrimSpace(s.text))
			}
		}
		b.WriteString("\n\n# Tools\n\nEach tool result is JSON: {\"status\": \"succeeded\", \"result\": ...} or {\"status\": \"failed\", \"error\": {\"code\", \"message\", \"details\"}}. " +
			"When a call fails, correct the input if you can, or tell the user what went wrong. Never invent a result.")
		if r.meta {
			b.WriteString(fmt.Sprintf(" You have %d tools: find them with %s, read one's input schema with %s, and then call it by the name %s gives.",
				r.tools.Len(), metaSearchTools, metaDescribeTool, metaDescribeTool))
		}
		r.system = strings.TrimSpace(b.String())
		return nil
	}))
}

// loop asks the LLM, runs the tool calls it wants through the queue, feeds back their receipts, and
// repeats until the LLM answers in text or the agent's max_tool_iterations is reached.
func (c *Chat) loop(ctx context.Context, r *chatRun) error {
	conversation := append(append([]Message{}, r.history...), Message{Role: "user", Content: r.req.Message})
	model := c.llm.DefaultModel()
	if r.agent.Model != nil && *r.agent.Model != "" {
		model = *r.agent.Model
	}
	for iteration := 1; ; iteration++ {
		req := &LLMRequest{Model: model, System: r.system, Messages: conversation, Tools: c.offeredDefs(r), Temperature: r.agent.Temperature}
		start := time.Now()
		resp, err := c.llm.Complete(ctx, req)
		c.recordTurn(ctx, r, iteration, model, req, resp, err, time.Since(start))
		if err != nil {
			return err
		}
		r.resp.Iterations = iteration
		assistant := Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls}
		if len(resp.ToolCalls) == 0 {
			r.resp.Reply = resp.Content
			return c.saveMessages(ctx, c.pool, r, assistant)
		}
		results := c.runToolCalls(ctx, r, iteration, resp.ToolCalls)
		if err := c.saveMessages(ctx, c.pool, r, append([]Message{assistant}, results...)...); err != nil {
			return err
		}
		conversation = append(conversation, assistant)
		conversation = append(conversation, results...)
		if iteration >= r.agent.MaxToolIterations {
			r.resp.LimitReached = true
			note := fmt.Sprintf("I stopped after %d rounds of tool calls, the limit for agent %s, before finishing.", iteration, r.agent.Slug)
			if strings.TrimSpace(resp.Content) != "" {
				note = strings.TrimSpace(resp.Content) + "\n\n" + note
			}
			r.resp.Reply = note
			return c.saveMessages(ctx, c.pool, r, Message{Role: "assistant", Content: note})
		}
	}
}

// offeredDefs are the functions offered this iteration: the agent's tools, or the meta-tools plus the tools
// described so far.
func (c *Chat) offeredDefs(r *chatRun) []ToolDef {
	var defs []ToolDef
	if r.meta {
		defs = append(defs, metaToolDefs()...)
	}
	for _, d := range r.tools.Defs() {
		if t, _ := r.tools.Tool(d.Name); t != nil && r.offered[t.Name] {
			defs = append(defs, d)
		}
	}
	return defs
}

func metaToolDefs() []ToolDef {
	return []ToolDef{
		{Name: metaSearchTools, Description: "Find tools by what they do. Returns the best matches with their names and descriptions.", Strict: true,
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"query", "limit"}, "properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "words describing the task"},
				"limit": map[string]any{"type": []any{"integer", "null"}, "description": "most results (default 8)"},
			}}},
		{Name: metaDescribeTool, Description: "Show a tool's description and input schema, and make it callable.", Strict: true,
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"}, "properties": map[string]any{
				"name": map[string]any{"type": "string", "description": "the tool's name, as search_tools gave it"},
			}}},
	}
}

// toolOutcome is one tool call's result message, with what to report about it.
type toolOutcome struct {
	msg    Message
	report ChatToolCall
	call   *gemsql.CallInsertParams
	tool   *registry.Tool
}

// runToolCalls answers meta-tools, refuses malformed or disallowed calls, enqueues the rest together (one
// transaction), waits for their receipts and returns one tool message per call, in the LLM's order.
func (c *Chat) runToolCalls(ctx context.Context, r *chatRun, iteration int, calls []ToolCall) []Message {
	outcomes := make([]*toolOutcome, len(calls))
	var params []gemsql.CallInsertParams
	var ids []uuid.UUID
	for i, tc := range calls {
		o := &toolOutcome{msg: Message{Role: "tool", ToolCallID: tc.ID}, report: ChatToolCall{Tool: tc.Name, Iteration: iteration}}
		outcomes[i] = o
		if r.meta && (tc.Name == metaSearchTools || tc.Name == metaDescribeTool) {
			o.msg.Content, o.msg.IsError = c.answerMeta(r, tc)
			o.report.Status = "answered"
			continue
		}
		tool, ok := r.tools.Tool(tc.Name)
		switch {
		case !ok:
			_, inRegistry := c.reg.Tool(strings.ReplaceAll(tc.Name, "__", "."))
			code, status := "unknown_tool", "unknown_tool"
			if inRegistry {
				code, status = string(registry.CodeToolNotEnabled), "not_enabled"
			}
			o.fail(code, fmt.Sprintf("there is no tool %q you may use", tc.Name), nil)
			o.report.Status = status
			continue
		case !r.offered[tool.Name]:
			o.report.Tool = tool.Name
			o.fail("not_described", fmt.Sprintf("call %s with the name %s after describing it with %s", metaDescribeTool, tc.Name, metaDescribeTool), nil)
			o.report.Status = "invalid_arguments"
			continue
		}
		o.report.Tool, o.tool = tool.Name, tool
		input, err := InputFromArguments(tool, tc.Arguments)
		if err == nil {
			err = tool.ValidateInput(input)
		}
		if err != nil {
			var details any
			var ve *registry.ValidationError
			if errors.As(err, &ve) {
				details = map[string]any{"violations": ve.Violations}
			}
			o.fail(string(registry.CodeValidation), "the arguments were not used: "+err.Error(), details)
			o.report.Status = "invalid_arguments"
			continue
		}
		id := uuid.Must(uuid.NewV7())
		o.report.CallID = &id
		params = append(params, gemsql.CallInsertParams{ID: id, ToolName: tool.Name, Input: input, RunID: &r.runID,
			Agent: r.agent.Slug, UserID: r.req.UserID, RequestedBy: "agent:" + r.agent.Slug})
		ids = append(ids, id)
		r.calls = append(r.calls, PlannedCall{Tool: tool.Name, Input: input, Reason: fmt.Sprintf("LLM tool call %s (iteration %d)", tc.ID, iteration), CallID: &id})
	}

	if len(params) > 0 {
		receipts, pending, err := c.enqueueAndWait(ctx, r, params, ids)
		for _, o := range outcomes {
			if o.report.CallID == nil {
				continue
			}
			id := *o.report.CallID
			o.msg.Content, o.msg.IsError, o.report.Status = toolResultContent(receipts[id], id, err, contains(uuidStrings(pending), id.String()))
		}
	}
	msgs := make([]Message, len(outcomes))
	for i, o := range outcomes {
		o.msg.callID = o.report.CallID
		msgs[i] = o.msg
		r.resp.ToolCalls = append(r.resp.ToolCalls, o.report)
	}
	return msgs
}

func (o *toolOutcome) fail(code, message string, details any) {
	body := map[string]any{"status": "failed", "error": map[string]any{"code": code, "message": message}}
	if details != nil {
		body["error"].(map[string]any)["details"] = details
	}
	o.msg.Content, o.msg.IsError = capJSON(body), true
}

func uuidStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// enqueueAndWait makes one iteration's calls in one transaction (with the run's new status), then waits.
func (c *Chat) enqueueAndWait(ctx context.Context, r *chatRun, params []gemsql.CallInsertParams, ids []uuid.UUID) (map[uuid.UUID]*registry.Receipt, []uuid.UUID, error) {
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := gemsql.CallInsertMany(ctx, tx, params); err != nil {
			return err
		}
		planned, _ := json.Marshal(r.calls)
		_, err := tx.Exec(ctx, `UPDATE brain_runs SET status = 'waiting', call_ids = call_ids || $2::uuid[], planned_calls = $3, updated_at = now()
			WHERE id = $1`, r.runID, ids, planned)
		return err
	})
	if err != nil {
		return nil, ids, unavailable(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	res, _ := c.waiter.Wait(waitCtx, ids)
	return res.Receipts, res.Pending, nil
}

// toolResultContent is what the LLM is told about a call: compact JSON of its status and result or error.
func toolResultContent(rec *registry.Receipt, id uuid.UUID, enqueueErr error, pending bool) (string, bool, string) {
	switch {
	case enqueueErr != nil:
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": "unavailable", "message": asError(enqueueErr).Message}}), true, "failed"
	case rec == nil || pending:
		return capJSON(map[string]any{"status": "pending", "call_id": id,
			"message": "the call is still running; its receipt will be at GET /calls/" + id.String()}), false, "pending"
	case rec.Status == registry.StatusSucceeded:
		body := map[string]any{"status": "succeeded", "result": json.RawMessage(rec.Result)}
		if rec.IdempotencyHit {
			body["idempotency_hit"] = true
		}
		return capJSON(body), false, string(rec.Status)
	default:
		return capJSON(map[string]any{"status": rec.Status, "error": rec.Error}), true, string(rec.Status)
	}
}

// capJSON marshals v, replacing a result too large for the LLM with a note.
func capJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) <= toolResultMax {
		return string(b)
	}
	status := "succeeded"
	if m, ok := v.(map[string]any); ok {
		status = fmt.Sprint(m["status"])
	}
	b, _ = json.Marshal(map[string]any{"status": status, "truncated": true,
		"message": fmt.Sprintf("the result was %d bytes, more than the %d that are passed back; ask for less (a smaller limit, a narrower search)", len(b), toolResultMax),
		"start":   string(b[:toolResultMax/2])})
	return string(b)
}

// answerMeta answers search_tools and describe_tool from the registry; describing a tool makes it callable.
func (c *Chat) answerMeta(r *chatRun, tc ToolCall) (string, bool) {
	var args struct {
		Query string `json:"query"`
		Limit *int   `json:"limit"`
		Name  string `json:"name"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": "validation_error", "message": "the arguments are not valid JSON: " + err.Error()}}), true
	}
	if tc.Name == metaSearchTools {
		limit := 8
		if args.Limit != nil && *args.Limit > 0 {
			limit = min(*args.Limit, 25)
		}
		type hit struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		var hits []hit
		for _, t := range rankTools(r.tools.Tools(), args.Query, limit) {
			fn, _ := r.tools.Function(t.Name)
			hits = append(hits, hit{Name: fn, Description: t.Description})
		}
		if hits == nil {
			hits = []hit{}
		}
		return capJSON(map[string]any{"status": "succeeded", "result": map[string]any{"tools": hits}}), false
	}
	tool, ok := r.tools.Tool(args.Name)
	if !ok {
		if t, found := c.reg.Tool(args.Name); found {
			if fn, allowed := r.tools.Function(t.Name); allowed {
				tool, ok = t, true
				args.Name = fn
			}
		}
	}
	if !ok {
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": "unknown_tool", "message": fmt.Sprintf("no tool %q; use %s to find one", args.Name, metaSearchTools)}}), true
	}
	r.offered[tool.Name] = true
	def, _ := r.tools.Def(tool.Name)
	return capJSON(map[string]any{"status": "succeeded", "result": map[string]any{"name": def.Name, "description": tool.Description,
		"input_schema": def.Parameters, "idempotency": tool.Idempotency.Mode, "note": "you can call this tool now"}}), false
}

// rankTools scores tools against a query: each query word found in the name counts 3, in the description 1.
func rankTools(tools []*registry.Tool, query string, limit int) []*registry.Tool {
	words := strings.Fields(strings.ToLower(strings.NewReplacer(".", " ", "_", " ", ",", " ").Replace(query)))
	type scored struct {
		t     *registry.Tool
		score int
	}
	var list []scored
	for _, t := range tools {
		name := strings.ToLower(strings.NewReplacer(".", " ", "_", " ").Replace(t.Name))
		desc := strings.ToLower(t.Description)
		score := 0
		for _, w := range words {
			w = strings.TrimSuffix(w, "s")
			if len(w) < 2 {
				continue
			}
			if strings.Contains(name, w) {
				score += 3
			}
			if strings.Contains(desc, w) {
				score++
			}
		}
		if score > 0 {
			list = append(list, scored{t, score})
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].score != list[j].score {
			return list[i].score > list[j].score
		}
		return list[i].t.Name < list[j].t.Name
	})
	var out []*registry.Tool
	for i := 0; i < len(list) && i < limit; i++ {
		out = append(out, list[i].t)
	}
	return out
}

func (c *Chat) saveMessages(ctx context.Context, db gemsql.DBTX, r *chatRun, msgs ...Message) error {
	for _, m := range msgs {
		var calls []byte
		if len(m.ToolCalls) > 0 {
			calls, _ = json.Marshal(m.ToolCalls)
		}
		if _, err := db.Exec(ctx, `INSERT INTO agent_messages (session_id, run_id, role, content, tool_calls, tool_call_id, call_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.req.SessionID, r.runID, m.Role, m.Content, calls, nullIfEmpty(m.ToolCallID), m.callID); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// recordTurn stores one LLM turn with the run (what was asked, in summary, and what came back).
func (c *Chat) recordTurn(ctx context.Context, r *chatRun, iteration int, model string, req *LLMRequest, resp *LLMResponse, err error, latency time.Duration) {
	tools := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = t.Name
	}
	request, _ := json.Marshal(map[string]any{"messages": len(req.Messages), "tools": tools, "system_chars": len(req.System),
		"last_message": req.Messages[len(req.Messages)-1]})
	var response, usage, errJSON []byte
	if resp != nil {
		response, _ = json.Marshal(resp)
		usage, _ = json.Marshal(resp.Usage)
	}
	if err != nil {
		errJSON, _ = json.Marshal(asError(err))
	}
	if _, dbErr := c.pool.Exec(context.WithoutCancel(ctx), `INSERT INTO brain_turns (run_id, iteration, provider, model, request, response, error, usage, latency_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, r.runID, iteration, c.llm.Provider(), model, request, response, errJSON, usage,
		float64(latency.Microseconds())/1000); dbErr != nil {
		r.log.Warn().Err(dbErr).Msg("error recording an LLM turn")
	}
	ev := r.log.Info()
	if err != nil {
		ev = r.log.Warn().Err(err)
	}
	calls := 0
	if resp != nil {
		calls = len(resp.ToolCalls)
	}
	ev.Int("iteration", iteration).Str("model", model).Int("tool_calls", calls).Float64("latency_ms", float64(latency.Microseconds())/1000).Msg("llm turn")
}

// finish records how the run ended.
func (c *Chat) finish(ctx context.Context, r *chatRun, status string) error {
	planned, _ := json.Marshal(r.calls)
	if r.calls == nil {
		planned = []byte("[]")
	}
	errs, _ := json.Marshal(r.resp.Errors)
	_, err := c.pool.Exec(ctx, `UPDATE brain_runs SET status = $2, planned_calls = $3, assistant_message = $4, errors = $5,
		updated_at = now(), completed_at = now() WHERE id = $1`, r.runID, status, planned, r.resp.Reply, errs)
	return unavailable(err)
}
