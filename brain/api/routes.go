package api

import (
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
)

// routes lists every route of the API (the studio's pages aside: studio_pages.go): each entry registers the
// route, with the middleware its access and admission call for, and describes it in GET /openapi.json.
func (s *Server) routes(p *Params) []route {
	callerQuery := param{name: "caller", description: "only those the named caller made (requested_by)", schema: map[string]any{"type": "string", "maxLength": 200}}
	agentQuery := param{name: "agent", description: "only those made for the named agent", schema: map[string]any{"type": "string", "maxLength": 200}}
	userQuery := param{name: "user_id", description: "the user the agent works for: their skills' allowed_users decide what is available", schema: map[string]any{"type": "string", "maxLength": 200}}
	sinceQuery := param{name: "since", description: "only those since an RFC 3339 time, or a duration back from now (1h)", schema: map[string]any{"type": "string", "examples": []string{"1h", "2026-01-31T09:00:00Z"}}}
	cursorQuery := param{name: "cursor", description: "where the page starts: the next_cursor of the page before", schema: map[string]any{"type": "string"}}
	listLimit := param{name: "limit", description: "the most rows (default 50)", schema: integer(1, 1000)}
	agentHeaderParam := param{name: agentHeader, description: "the agent the request acts as (its calls are made for it: its skills must enable each tool)",
		schema: map[string]any{"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"}}
	page := func(name, item string) map[string]any {
		return okWith(map[string]any{name: arrayOf(ref(item)),
			"next_cursor": map[string]any{"type": []string{"string", "null"}, "description": "the next page's cursor; null after the last page"}})
	}
	callAnswer := map[string]any{"type": "object", "required": []string{"ok", "call", "receipt"}, "properties": map[string]any{
		"ok":       map[string]any{"type": "boolean", "description": "false when the receipt failed, the wait ended first (errors: wait_timeout) or the call awaits approval (errors: awaiting_approval)"},
		"call":     ref("Call"),
		"receipt":  map[string]any{"anyOf": []any{ref("Receipt"), map[string]any{"type": "null"}}, "description": "null until the call ends"},
		"approval": ref("Approval"),
		"errors":   arrayOf(ref("Error")),
	}}
	location := map[string]any{"Location": map[string]any{"description": "where to go", "schema": map[string]any{"type": "string"}}}
	healthSchema := map[string]any{"type": "object", "required": []string{"ok", "version", "database", "executors", "registry", "planner", "llm"},
		"properties": map[string]any{"ok": map[string]any{"type": "boolean"}, "version": str("the brain's version"),
			"database": map[string]any{"type": "object"},
			"executors": map[string]any{"type": "object", "description": "how many are alive and gone lately; with a token, the list",
				"properties": map[string]any{"alive": map[string]any{"type": "integer"}, "gone_recently": map[string]any{"type": "integer"}, "list": arrayOf(ref("Executor"))}}, "registry": map[string]any{"type": "object"},
			"planner": str("rules or llm"), "llm": map[string]any{"type": "object"}, "problems": arrayOf(map[string]any{"type": "string"})}}
	ex := p.Examples
	var runExample, callExample any
	if ex.RunMessage != "" {
		runExample = map[string]any{"message": ex.RunMessage, "mode": "enqueue_and_wait"}
	}
	runEventsExample := "id: 1\nevent: run_started\ndata: {\"mode\": \"enqueue_and_wait\"}\n\n"
	if ex.RunTool != "" {
		runEventsExample += "id: 2\nevent: call_enqueued\ndata: {\"call_id\": \"…\", \"tool\": " + strconv.Quote(ex.RunTool) + "}\n\n"
	}
	if ex.CallTool != "" {
		callExample = map[string]any{"tool": ex.CallTool, "input": ex.CallInput, "wait_timeout_ms": 30000}
	}
	// skillExample is a skill's example with the tools it enables: the call example's tool.
	skillExample := func(skill map[string]any) map[string]any {
		if ex.CallTool != "" {
			skill["tools"] = []string{ex.CallTool}
		}
		return skill
	}
	chatExample := map[string]any{"message": "what is on today?", "user_id": "ann", "session_id": "kitchen-1"}

	return []route{
		{method: http.MethodGet, path: "/", handler: s.home, op: operation{id: "home", tag: "service",
			summary: "Go to the studio", description: "A browser that opens the brain's address lands in the studio (docs/studio.md).",
			status: http.StatusSeeOther, more: map[int]response{http.StatusSeeOther: {description: "to the studio", headers: location}}}},
		{method: http.MethodGet, path: "/favicon.ico", handler: serveFavicon, op: operation{id: "favicon", tag: "service",
			summary: "The brain's icon", media: map[string]any{"image/svg+xml": str("an SVG image")}}},
		{method: http.MethodGet, path: OpenAPIPath, handler: s.openAPI, op: operation{id: "openapi", tag: "service",
			summary: "This description", description: "The API's OpenAPI 3.1 description, built from the routes the brain serves and the schemas it checks requests with. Public: it says what the API takes, nothing of what is stored.",
			answer: map[string]any{"type": "object", "description": "an OpenAPI 3.1 document"}}},
		{method: http.MethodGet, path: "/health", handler: s.health, op: operation{id: "health", tag: "service",
			summary: "Whether the brain can work", description: "200 when the database answers and an executor is alive, 503 otherwise with the problems. Anyone may ask; with a token the answer also lists the executors and the registry's path.",
			answer: healthSchema, more: map[int]response{http.StatusServiceUnavailable: {description: "the database is away or no executor is alive: problems say which", schema: healthSchema}}}},
		{method: http.MethodGet, path: MetricsPath, registered: true, off: p.Telemetry == nil || p.Telemetry.Registry == nil, access: accessCaller, op: operation{id: "metrics", tag: "service",
			summary: "Metrics in Prometheus's text format", description: "Any caller's token opens it, or GEM_METRICS_TOKEN, which opens nothing else (docs/observability.md).",
			media: map[string]any{"text/plain": str("Prometheus exposition format")}}},
		{method: http.MethodPost, path: HighLevelWebhookPath, handler: s.highLevelWebhook(s.cfg.HighLevel), op: operation{id: "highLevelWebhook", tag: "service",
			summary:     "HighLevel's webhook",
			description: "Signed by HighLevel (X-GHL-Signature, or X-WH-Signature), not by a bearer token; contact and opportunity events become calls (docs/integrations.md).",
			otherBodies: map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object", "description": "HighLevel's event"}}},
			answer:      map[string]any{"type": "object"}, errors: []int{http.StatusBadRequest, http.StatusUnauthorized}}},

		{method: http.MethodPost, path: "/brain/run", handler: s.run, access: accessCaller, admit: s.admit, op: operation{id: "run", tag: "runs",
			summary: "Ask the brain", description: "The brain plans tool calls for the message (by its rules, or an LLM) and, by mode, answers what it would do (answer, the default), stores the plan for approval (plan), makes the calls (enqueue) or makes them and waits for their receipts (enqueue_and_wait). A refused plan makes no call. ok false with 200 is an answer too: nothing understood (no_plan), a call that failed (call_failed), receipts that did not come in time (wait_timeout).",
			body: runSchema, example: runExample, keyed: true, async: true, headers: []param{agentHeaderParam},
			answer: ref("RunResponse"), answerExample: ex.RunAnswer, errors: []int{http.StatusConflict}}},
		{method: http.MethodGet, path: "/brain/help", handler: s.help, access: accessCaller, op: operation{id: "help", tag: "runs",
			summary: "What the brain understands", query: []param{{name: "format", description: "json (the default) or text; Accept: text/plain asks for text too", schema: enum("json", "text")}},
			media: map[string]any{"application/json": okWith(map[string]any{"help": str("the text"), "planner": str("rules or llm"), "modes": arrayOf(map[string]any{}), "domains": arrayOf(map[string]any{})}),
				"text/plain": str("the help as text")}}},
		{method: http.MethodGet, path: "/brain/tools", handler: s.tools, access: accessCaller, op: operation{id: "tools", tag: "runs",
			summary:     "The registry's tools, or the best for a query",
			description: "Every tool (or an agent's), in GEM's format or exported as the LLM loop sends them (openai, anthropic, mcp); with q, the best of them for a request in words, ranked by the tool search agents use (docs/tool-search.md).",
			query: []param{
				{name: "q", description: "what the tool should do, in words", schema: map[string]any{"type": "string", "minLength": 1, "maxLength": toolsQueryMax}},
				{name: "limit", description: "the most matches of q (default 5)", schema: integer(1, llm.ToolSearchLimitMax)},
				{name: "format", description: "gem (the default) or an LLM provider's", schema: enum(llm.ExportFormats...)},
				{name: "agent", description: "only the tools this agent's skills enable", schema: map[string]any{"type": "string"}},
				{name: "user_id", description: "with agent: for this user", schema: map[string]any{"type": "string"}},
			},
			answer: optional(okWith(map[string]any{"version": str("the registry's version"), "format": str("the format of tools"),
				"tools": map[string]any{"type": "array", "description": "in format gem, Tool objects; otherwise the provider's tool definitions", "items": map[string]any{"anyOf": []any{ref("Tool"), map[string]any{"type": "object"}}}},
				"agent": str("the agent asked about"), "query": str("q"), "limit": map[string]any{"type": "integer"},
				"matches": arrayOf(ref("ToolMatch"))}), "agent", "query", "limit", "matches")}},
		{method: http.MethodGet, path: "/brain/runs", handler: s.findRun, access: accessCaller, op: operation{id: "listRuns", tag: "runs",
			summary:     "Find a run by its request's key, or list runs",
			description: "With idempotency_key: the caller's run its request with that key made, as GET /brain/runs/{id} answers it (404 when none: the request never arrived). Without: the newest runs the caller may read.",
			query: []param{
				{name: "idempotency_key", description: "the key a request was sent with", schema: map[string]any{"type": "string", "minLength": 1, "maxLength": brain.RequestKeyMaxLen}},
				{name: "status", description: "only runs of this status", schema: enum(runStatuses...)},
				{name: "mode", description: "only runs of this mode", schema: enum(runModes...)},
				agentQuery, callerQuery,
				{name: "limit", description: "the most runs (default 50)", schema: integer(1, postgres.RunListMax)},
			},
			answer: map[string]any{"oneOf": []any{ref("RunResponse"), okWith(map[string]any{"runs": arrayOf(ref("RunSummary"))})}}}},
		{method: http.MethodGet, path: "/brain/runs/{id}", handler: s.getRun, access: accessCaller, op: operation{id: "getRun", tag: "runs",
			summary: "A run and its answer", answer: ref("RunResponse")}},
		{method: http.MethodGet, path: "/brain/runs/{id}/events", handler: s.getRunEvents, access: accessCaller, op: operation{id: "getRunEvents", tag: "runs",
			summary:     "A run's events, as they come",
			description: "Server-sent events: each has an id (its number in the run), an event (its kind: run_started, llm_started, text, llm_ended, call_enqueued, receipt, answer, run_ended, ...) and data (JSON); text events carry the text the model writes, as it writes it (a client empties what it shows at each llm_started). The stream ends after run_ended, or when the caller may no longer read the run (its token revoked, its studio session ended); a client that lost it reconnects with Last-Event-ID and misses nothing (any brain serves it).",
			query:       []param{{name: "after", description: "start after this event (as Last-Event-ID)", schema: map[string]any{"type": "integer", "minimum": 0, "maximum": math.MaxInt32}}},
			headers:     []param{{name: "Last-Event-ID", description: "start after this event", schema: map[string]any{"type": "string", "pattern": "^[0-9]{1,10}$"}}},
			more:        map[int]response{http.StatusNoContent: {description: "the run has ended and has no event after Last-Event-ID: nothing more will come (an EventSource stops reconnecting)"}},
			media: map[string]any{"text/event-stream": map[string]any{"type": "string", "description": "server-sent events",
				"examples": []string{runEventsExample}}}}},
		{method: http.MethodPost, path: "/brain/runs/{id}/approve", handler: s.approve, access: accessCaller, admit: s.admit, op: operation{id: "approveRun", tag: "runs",
			summary: "Run a stored plan", description: "Makes the calls of a run planned with mode plan, with no more than its author and the approver both hold; its author, or a caller holding approve, may.",
			body: approveSchema, bodyOptional: true, example: map[string]any{"wait": true, "wait_timeout_ms": 30000},
			answer: ref("RunResponse"), errors: []int{http.StatusForbidden, http.StatusConflict}}},
		{method: http.MethodPost, path: "/operator/chat", handler: s.operatorChat, access: accessCaller, admit: s.admit, op: operation{id: "operatorChat", tag: "agents",
			summary:     "Talk to the default agent",
			description: "GEM's operator chat: a message to the default agent (GEM_BRAIN_DEFAULT_AGENT) in a session that goes on with session_id; with no LLM configured the rules planner answers (mode rules).",
			body:        operatorChatSchema, example: map[string]any{"message": "create a task to call John tomorrow"}, keyed: true, async: true, stream: true,
			headers: []param{agentHeaderParam}, answer: ref("OperatorChatResponse")}},

		{method: http.MethodGet, path: "/calls", handler: s.listCalls, access: accessCaller, op: operation{id: "listCalls", tag: "calls",
			summary: "Calls, newest first", description: "The calls the caller may read. A large input is listed as {\"truncated\": true, \"bytes\": N}: GET /calls/{id} has it whole.",
			query: []param{{name: "tool", description: "only calls of this tool", schema: map[string]any{"type": "string", "maxLength": 200}},
				{name: "status", description: "only calls of this status", schema: enum(callStatuses...)},
				callerQuery, agentQuery, {name: "device", description: "only calls naming, or run on, this device", schema: map[string]any{"type": "string", "maxLength": 200}},
				sinceQuery, listLimit, cursorQuery},
			answer: page("calls", "Call")}},
		{method: http.MethodPost, path: "/calls", handler: s.createCall, access: accessCaller, admit: s.admit, op: operation{id: "createCall", tag: "calls",
			summary:     "Call a tool",
			description: "One call of a named tool, its input checked against the tool's schema first; with wait_timeout_ms, the answer waits for its receipt. A call held for approval answers ok false with awaiting_approval.",
			body:        callSchema, example: callExample,
			keyed: true, headers: []param{agentHeaderParam}, answer: callAnswer, errors: []int{http.StatusForbidden}}},
		{method: http.MethodGet, path: "/calls/{id}", handler: s.getCall, access: accessCaller, op: operation{id: "getCall", tag: "calls",
			summary: "A call and its receipt", query: []param{{name: "wait", description: "wait up to this long for the receipt (a duration up to 60s, like 5s)", schema: map[string]any{"type": "string", "examples": []string{"5s"}}}},
			answer: callAnswer}},
		{method: http.MethodPost, path: "/calls/{id}/approve", handler: s.decide(true), access: accessApprover, admit: s.admit, op: operation{id: "approveCall", tag: "calls",
			summary: "Approve a held call", description: "It is enqueued at once, in the approver's name.",
			body: decisionSchema, bodyOptional: true, example: map[string]any{"reason": "checked with the client"},
			answer: okWith(map[string]any{"call": ref("Call"), "approval": ref("Approval")}), errors: []int{http.StatusConflict}}},
		{method: http.MethodPost, path: "/calls/{id}/reject", handler: s.decide(false), access: accessApprover, admit: s.admit, op: operation{id: "rejectCall", tag: "calls",
			summary: "Reject a held call", description: "Its receipt (rejected) says why: a reason is required.",
			body: decisionSchema, example: map[string]any{"reason": "wrong client"},
			answer: okWith(map[string]any{"call": ref("Call"), "approval": ref("Approval")}), errors: []int{http.StatusConflict}}},
		{method: http.MethodGet, path: "/approvals", handler: s.listApprovals, access: accessApprover, op: operation{id: "listApprovals", tag: "calls",
			summary: "Calls awaiting a decision, the soonest to expire first", query: []param{{name: "limit", description: "the most (default 100)", schema: integer(1, 1000)}},
			answer: okWith(map[string]any{"approvals": arrayOf(ref("PendingApproval"))})}},
		{method: http.MethodGet, path: "/receipts", handler: s.listReceipts, access: accessCaller, op: operation{id: "listReceipts", tag: "calls",
			summary: "Receipts, newest first",
			query: []param{{name: "tool", description: "only receipts of this tool", schema: map[string]any{"type": "string", "maxLength": 200}},
				{name: "status", description: "only receipts of this status", schema: enum("succeeded", "failed", "not_configured")},
				{name: "error_code", description: "only receipts with this error code", schema: map[string]any{"type": "string"}},
				sinceQuery, listLimit, cursorQuery},
			answer: page("receipts", "Receipt")}},

		{method: http.MethodGet, path: "/agents", handler: s.listAgents, access: accessCaller, op: operation{id: "listAgents", tag: "agents",
			summary: "Agents", answer: okWith(map[string]any{"agents": arrayOf(ref("Agent"))})}},
		{method: http.MethodPost, path: "/agents", handler: s.createAgent, access: accessAdmin, op: operation{id: "createAgent", tag: "agents",
			summary: "Make an agent", body: agentSchema, example: map[string]any{"slug": "front-desk", "name": "Front desk", "instructions": "Answer customers kindly."},
			status: http.StatusCreated, answer: okWith(map[string]any{"agent": ref("Agent")}), errors: []int{http.StatusConflict}}},
		{method: http.MethodGet, path: "/agents/{slug}", handler: s.getAgent, access: accessCaller, op: operation{id: "getAgent", tag: "agents",
			summary: "An agent, its skills and the tools it may call", query: []param{userQuery},
			answer: okWith(map[string]any{"agent": ref("Agent"), "skills": arrayOf(ref("Assignment")), "tools": arrayOf(map[string]any{"type": "string"})})}},
		{method: http.MethodPatch, path: "/agents/{slug}", handler: s.updateAgent, access: accessAdmin, op: operation{id: "updateAgent", tag: "agents",
			summary: "Change an agent", description: "Fields left out keep their value; model and temperature null clear them.",
			body: agentSchema, example: map[string]any{"max_tool_iterations": 8}, answer: okWith(map[string]any{"agent": ref("Agent")})}},
		{method: http.MethodDelete, path: "/agents/{slug}", handler: s.deleteAgent, access: accessAdmin, op: operation{id: "deleteAgent", tag: "agents",
			summary: "Delete an agent", answer: okWith(map[string]any{"deleted": str("its slug")})}},
		{method: http.MethodGet, path: "/agents/{slug}/skills", handler: s.listAssignments, access: accessCaller, op: operation{id: "listAgentSkills", tag: "agents",
			summary: "An agent's skills", query: []param{userQuery}, answer: okWith(map[string]any{"skills": arrayOf(ref("Assignment"))})}},
		{method: http.MethodPut, path: "/agents/{slug}/skills/{skill}", handler: s.assignSkill, access: accessAdmin, op: operation{id: "assignSkill", tag: "agents",
			summary: "Give an agent a skill, or change how it has it", query: []param{userQuery},
			body: assignmentSchema, bodyOptional: true, example: map[string]any{"priority": 10, "allowed_users": []string{"ann"}},
			answer: okWith(map[string]any{"skills": arrayOf(ref("Assignment"))})}},
		{method: http.MethodDelete, path: "/agents/{slug}/skills/{skill}", handler: s.unassignSkill, access: accessAdmin, op: operation{id: "unassignSkill", tag: "agents",
			summary: "Take a skill from an agent", answer: okWith(map[string]any{"removed": str("the skill's slug")})}},
		{method: http.MethodPost, path: "/agents/{slug}/chat", handler: s.chatWithAgent, access: accessCaller, admit: s.admit, op: operation{id: "chat", tag: "agents",
			summary:     "Chat with an agent",
			description: "One turn of the LLM tool loop: the agent answers, calling the tools its skills enable; the session goes on with session_id. One turn at a time per session (if_busy: reject answers 409, enqueue queues it). A turn still running when a repeat arrives answers 202.",
			body:        chatSchema, example: chatExample, keyed: true, async: true, stream: true,
			answer: ref("ChatResponse"), errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity}}},

		{method: http.MethodGet, path: "/skills", handler: s.listSkills, access: accessCaller, op: operation{id: "listSkills", tag: "skills",
			summary: "Skills", answer: okWith(map[string]any{"skills": arrayOf(ref("Skill"))})}},
		{method: http.MethodPost, path: "/skills", handler: s.createSkill, access: accessAdmin, op: operation{id: "createSkill", tag: "skills",
			summary: "Make a skill", body: skillSchema, example: skillExample(map[string]any{"slug": "notes", "name": "Notes", "instructions": "Keep notes short."}),
			status: http.StatusCreated, answer: okWith(map[string]any{"skill": ref("Skill")}), errors: []int{http.StatusConflict}}},
		{method: http.MethodPost, path: "/skills/import", handler: s.importSkill, access: accessAdmin, op: operation{id: "importSkill", tag: "skills",
			summary:     "Import a skill folder (Agent Skills format)",
			description: "SKILL.md as content and its other files in files, or the folder as a zip archive (Content-Type application/zip, ?source= naming it). It makes or replaces the skill its front matter names.",
			query:       []param{{name: "source", description: "where a zip archive came from", schema: map[string]any{"type": "string", "maxLength": 1000}}},
			body:        skillImportSchema, example: map[string]any{"source": "skills/notes/SKILL.md", "content": "---\nname: notes\ndescription: Keep notes.\n---\nKeep notes short."},
			otherBodies: map[string]any{"application/zip": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "application/zip"}}},
			answer:      okWith(map[string]any{"skill": ref("Skill"), "notes": arrayOf(map[string]any{"type": "string"}), "files": arrayOf(ref("SkillFile"))})}},
		{method: http.MethodGet, path: "/skills/{slug}", handler: s.getSkill, access: accessCaller, op: operation{id: "getSkill", tag: "skills",
			summary: "A skill", answer: okWith(map[string]any{"skill": ref("Skill")})}},
		{method: http.MethodPut, path: "/skills/{slug}", handler: s.upsertSkill, access: accessAdmin, op: operation{id: "putSkill", tag: "skills",
			summary: "Make or replace a skill", body: skillSchema, example: skillExample(map[string]any{"name": "Notes", "instructions": "Keep notes short."}),
			answer: okWith(map[string]any{"skill": ref("Skill")})}},
		{method: http.MethodPatch, path: "/skills/{slug}", handler: s.patchSkill, access: accessAdmin, op: operation{id: "patchSkill", tag: "skills",
			summary: "Change a skill", body: skillSchema, example: map[string]any{"description": "Short notes."}, answer: okWith(map[string]any{"skill": ref("Skill")})}},
		{method: http.MethodDelete, path: "/skills/{slug}", handler: s.deleteSkill, access: accessAdmin, op: operation{id: "deleteSkill", tag: "skills",
			summary: "Delete a skill", answer: okWith(map[string]any{"deleted": str("its slug")}), errors: []int{http.StatusConflict}}},

		{method: http.MethodGet, path: "/devices", handler: s.listDevices, access: accessCaller, op: operation{id: "listDevices", tag: "devices",
			summary: "Devices", answer: okWith(map[string]any{"devices": arrayOf(ref("Device"))})}},
		{method: http.MethodPost, path: "/devices", handler: s.createDevice, access: accessAdmin, op: operation{id: "createDevice", tag: "devices",
			summary: "Add a device", description: "The answer carries its token, this once.", body: deviceSchema, example: map[string]any{"name": "laptop", "owner": "ann"},
			status: http.StatusCreated, answer: okWith(map[string]any{"device": ref("Device"), "token": str("the device's token, shown only now"), "note": str("what it means, what to do next")}), errors: []int{http.StatusConflict}}},
		{method: http.MethodGet, path: DeviceConnectPath, handler: echo.WrapHandler(p.Devices), off: p.Devices == nil, op: operation{id: "connectDevice", tag: "devices",
			summary:     "A device connects (WebSocket)",
			description: "executor device connects here with its own token (Authorization: Bearer), which opens no other route, and serves its tools over the socket (docs/devices.md).",
			status:      http.StatusSwitchingProtocols, errors: []int{http.StatusUnauthorized}}},
		{method: http.MethodGet, path: "/devices/{name}", handler: s.getDevice, access: accessCaller, op: operation{id: "getDevice", tag: "devices",
			summary: "A device", answer: okWith(map[string]any{"device": ref("Device")})}},
		{method: http.MethodPatch, path: "/devices/{name}", handler: s.grantDevice, access: accessAdmin, op: operation{id: "grantDevice", tag: "devices",
			summary: "Change what a device's tools may declare", body: deviceGrantSchema, example: map[string]any{"permissions": []string{"read:*", "write:files"}},
			answer: okWith(map[string]any{"device": ref("Device"), "note": str("what it means, what to do next")})}},
		{method: http.MethodDelete, path: "/devices/{name}", handler: s.deleteDevice, access: accessAdmin, op: operation{id: "deleteDevice", tag: "devices",
			summary: "Remove a device", answer: okWith(map[string]any{"deleted": str("its name")})}},
		{method: http.MethodPost, path: "/devices/{name}/token", handler: s.rotateDeviceToken, access: accessAdmin, op: operation{id: "rotateDeviceToken", tag: "devices",
			summary: "Give a device a new token", answer: okWith(map[string]any{"device": str("its name"), "token": str("shown only now"), "note": str("what it means, what to do next")})}},

		{method: http.MethodGet, path: "/callers", handler: s.listCallers, access: accessAdmin, op: operation{id: "listCallers", tag: "governance",
			summary: "Callers and their permissions", answer: okWith(map[string]any{"callers": arrayOf(ref("Caller"))})}},
		{method: http.MethodPost, path: "/callers", handler: s.createCaller, access: accessAdmin, op: operation{id: "createCaller", tag: "governance",
			summary: "Add a caller", description: "A token caller's answer carries its token, this once; a name sql:ROLE gives a database role permissions.",
			body: callerSchema, example: map[string]any{"name": "ops-ann", "permissions": []string{"read:*", "write:db"}, "note": "Ann in operations"},
			status: http.StatusCreated, answer: optional(okWith(map[string]any{"caller": ref("Caller"), "note": str("what it means, what to do next"), "token": str("a token caller's token, shown only now")}), "token"),
			errors: []int{http.StatusConflict}}},
		{method: http.MethodGet, path: "/callers/{name}", handler: s.getCaller, access: accessAdmin, op: operation{id: "getCaller", tag: "governance",
			summary: "A caller", answer: okWith(map[string]any{"caller": ref("Caller")})}},
		{method: http.MethodPatch, path: "/callers/{name}", handler: s.updateCaller, access: accessAdmin, op: operation{id: "updateCaller", tag: "governance",
			summary: "Change a caller's permissions, agents or note", body: callerPatchSchema, example: map[string]any{"permissions": []string{"read:*"}, "agents": nil},
			answer: optional(okWith(map[string]any{"caller": ref("Caller"), "note": str("said when the caller stays revoked")}), "note")}},
		{method: http.MethodDelete, path: "/callers/{name}", handler: s.revokeCaller, access: accessAdmin, op: operation{id: "revokeCaller", tag: "governance",
			summary: "Revoke a caller", answer: okWith(map[string]any{"revoked": str("its name"), "note": str("what it means, what to do next")}), errors: []int{http.StatusConflict}}},
		{method: http.MethodPost, path: "/callers/{name}/token", handler: s.rotateCallerToken, access: accessAdmin, op: operation{id: "rotateCallerToken", tag: "governance",
			summary: "Give a caller a new token", answer: okWith(map[string]any{"caller": ref("Caller"), "token": str("shown only now"), "note": str("what it means, what to do next")})}},
		{method: http.MethodPost, path: "/callers/{name}/enable", handler: s.enableCaller, access: accessAdmin, op: operation{id: "enableCaller", tag: "governance",
			summary: "Bring a revoked caller back, with a new token",
			answer:  optional(okWith(map[string]any{"caller": ref("Caller"), "token": str("its new token, shown only now"), "note": str("what it means")}), "token", "note"),
			errors:  []int{http.StatusConflict}}},
		s.mcpRoute(p, http.MethodPost, "mcpPost", "Model Context Protocol (streamable HTTP)",
			"JSON-RPC 2.0 messages of MCP: initialize, tools/list, tools/call (each call with its receipt), resources, prompts (docs/mcp-server.md)."),
		s.mcpRoute(p, http.MethodGet, "mcpGet", "MCP: the server's stream", "The streamable HTTP transport's GET: a stream of server messages (docs/mcp-server.md)."),
		s.mcpRoute(p, http.MethodDelete, "mcpDelete", "MCP: end a session", "The streamable HTTP transport's DELETE (docs/mcp-server.md)."),
	}
}

// mcpRoute is one method of /mcp, served when the brain serves MCP (p.MCP).
func (s *Server) mcpRoute(p *Params, method, id, summary, description string) route {
	r := route{method: method, path: "/mcp", access: accessCaller, admit: s.admitToolCalls, off: p.MCP == nil,
		op: operation{id: id, tag: "service", summary: summary, description: description,
			media: map[string]any{"application/json": map[string]any{"type": "object", "description": "a JSON-RPC 2.0 message"},
				"text/event-stream": str("JSON-RPC messages as server-sent events")}}}
	if method == http.MethodPost {
		r.op.otherBodies = map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object", "description": "a JSON-RPC 2.0 message"},
			"example": map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}}
	}
	if p.MCP != nil {
		r.handler = func(c echo.Context) error {
			pr := principalOf(c)
			p.MCP.ServeMCP(c.Response(), c.Request(), pr.name, pr.grants, pr.agents)
			return nil
		}
	}
	return r
}

// OpenAPIExamples are the OpenAPI description's examples that name tools. The api names no tool, so Main
// gives them (from a pack's contract); an empty field leaves its example out.
type OpenAPIExamples struct {
	// RunMessage is POST /brain/run's example request (mode enqueue_and_wait), RunAnswer a real answer to it,
	// and RunTool the tool of the call it makes (the run's events' example shows it enqueued).
	RunMessage string
	RunAnswer  any
	RunTool    string
	// CallTool and CallInput are POST /calls's example; a skill's example enables CallTool.
	CallTool  string
	CallInput any
}
