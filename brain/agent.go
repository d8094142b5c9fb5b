package brain

import (
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
)

// Agent is an agents row.
type Agent struct {
	ID                uuid.UUID `json:"id"`
	Slug              string    `json:"slug"`
	Name              string    `json:"name"`
	Instructions      string    `json:"instructions"`
	Model             *string   `json:"model"`
	Temperature       *float64  `json:"temperature"`
	MaxToolIterations int       `json:"max_tool_iterations"`
	Enabled           bool      `json:"enabled"`
	// CodeMode gives the agent run_code: it may write a JavaScript program that calls its tools (docs/code-mode.md).
	CodeMode  bool      `json:"code_mode"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Skill is a skills row with its dependencies and how many agents have it.
type Skill struct {
	ID           uuid.UUID      `json:"id"`
	Slug         string         `json:"slug"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Instructions string         `json:"instructions"`
	Tools        []string       `json:"tools"`
	Category     string         `json:"category"`
	IsBuiltin    bool           `json:"is_builtin"`
	Metadata     map[string]any `json:"metadata"`
	Requires     []string       `json:"requires"`
	AgentCount   int            `json:"agent_count"`
	CreatedAt    time.Time      `json:"created_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
}

// Assignment is a skill given to an agent.
type Assignment struct {
	Skill           string         `json:"skill"`
	ConfigOverrides map[string]any `json:"config_overrides"`
	Priority        int            `json:"priority"`
	Enabled         bool           `json:"enabled"`
	AllowedUsers    []string       `json:"allowed_users"`
	CallSettings
	// Available says whether the skill counts for the user asked about: enabled, the user allowed, and every
	// skill it requires available too.
	Available bool `json:"available"`
}

// AgentParams create or change an agent; nil fields keep their value (or take their default on create).
type AgentParams struct {
	Slug              *string  `json:"slug"`
	Name              *string  `json:"name"`
	Instructions      *string  `json:"instructions"`
	Model             *string  `json:"model"`
	Temperature       *float64 `json:"temperature"`
	MaxToolIterations *int     `json:"max_tool_iterations"`
	Enabled           *bool    `json:"enabled"`
	CodeMode          *bool    `json:"code_mode"`
	// ModelSet and TemperatureSet say that the request named the field, so a nil Model or Temperature
	// clears it (JSON null) rather than keeping it.
	ModelSet       bool `json:"-"`
	TemperatureSet bool `json:"-"`
}

// AssignmentParams give a skill to an agent: the body of PUT /agents/{slug}/skills/{skill}.
type AssignmentParams struct {
	ConfigOverrides map[string]any `json:"config_overrides"`
	Priority        *int           `json:"priority"`
	Enabled         *bool          `json:"enabled"`
	AllowedUsers    []string       `json:"allowed_users"`
	CallSettings
}

// CallSettings narrow, for the agent's calls of an assignment's tools, what the tools' registry entries say
// (docs/governance.md#per-assignment-settings): a shorter timeout and fewer attempts (never longer or
// more: the shorter of the two applies), and River's priority (1 runs first, 4 last). nil: the tool's.
type CallSettings struct {
	CallTimeoutMS   *int `json:"call_timeout_ms"`
	CallMaxAttempts *int `json:"call_max_attempts"`
	CallPriority    *int `json:"call_priority"`
}

// SkillParams create, replace or change a skill; nil fields keep their value (or take their default).
type SkillParams struct {
	Slug         *string        `json:"slug,omitempty"`
	Name         *string        `json:"name,omitempty"`
	Description  *string        `json:"description,omitempty"`
	Instructions *string        `json:"instructions,omitempty"`
	Tools        []string       `json:"tools,omitempty"`
	Category     *string        `json:"category,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Requires     []string       `json:"requires,omitempty"`
}

// SkillSaveMode is how a skill is saved.
type SkillSaveMode string

// Skill save modes.
const (
	// SkillCreate creates a skill (the slug comes from the params); an existing slug is a conflict.
	SkillCreate SkillSaveMode = "create"
	// SkillUpsert creates or replaces the skill at a slug.
	SkillUpsert SkillSaveMode = "upsert"
	// SkillPatch changes the fields given.
	SkillPatch SkillSaveMode = "patch"
)

// Check refuses params the mode cannot use, and tool names the registry does not have. slug is the path's
// slug (for create, the params' slug is used). It returns the slug to save under.
func (p *SkillParams) Check(reg *registry.Registry, slug string, mode SkillSaveMode) (string, error) {
	if err := CheckTools(reg, p.Tools); err != nil {
		return "", err
	}
	if err := CheckDisclosure(p.Metadata); err != nil {
		return "", err
	}
	switch {
	case mode == SkillCreate && p.Slug == nil:
		return "", &Error{Code: EINVALID, Message: "a skill needs a slug"}
	case mode == SkillCreate:
		slug = *p.Slug
	case mode == SkillUpsert && p.Slug != nil && *p.Slug != slug:
		return "", Errorf(EINVALID, "the body's slug %q differs from the path's %q", *p.Slug, slug)
	}
	if mode != SkillPatch && p.Name == nil {
		return "", &Error{Code: EINVALID, Message: "a skill needs a name"}
	}
	return slug, nil
}

// CheckTools refuses tool names the registry does not have, naming them.
func CheckTools(reg *registry.Registry, tools []string) error {
	var unknown []string
	for _, t := range tools {
		if _, ok := reg.Tool(t); !ok {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		return &Error{Code: EINVALID, Message: fmt.Sprintf("not in the registry: %s", strings.Join(unknown, ", ")),
			Details: map[string]any{"unknown_tools": unknown}}
	}
	return nil
}

// ChatParams are a message to an agent: the body of POST /agents/{slug}/chat.
type ChatParams struct {
	Message   string `json:"message"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id,omitempty"`
	// Resume asks for a turn without a message, to tell the agent the decisions on its calls that waited
	// for approval (every turn tells them; this one only them).
	Resume bool `json:"resume,omitempty"`
	// IdempotencyKey is the client's key for this request (or the Idempotency-Key header): the same caller
	// and key within the window is the same turn, answered again, never made twice (docs/durable-runs.md).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// IfBusy is what to do when the session is answering another message: IfBusyReject (409 naming the
	// running turn's run, the default) or IfBusyEnqueue (the turn waits behind it, then runs).
	IfBusy string `json:"if_busy,omitempty"`
	// Fingerprint is the request's, set by its door (RequestFingerprint) when it has a key.
	Fingerprint []byte `json:"-"`
	// Async asks for 202 and the run's id at once (or Prefer: respond-async); the turn goes on. Not part of
	// the request's fingerprint: how to answer, not what to do.
	Async bool `json:"async,omitempty"`
	// OnBegun, when set, is told the turn's run as soon as it is recorded (or the run a repeat answers).
	OnBegun func(runID uuid.UUID) `json:"-"`
}

// What a chat message does when its session is answering another (ChatParams.IfBusy).
const (
	IfBusyReject  = "reject"
	IfBusyEnqueue = "enqueue"
)

// ChatDecided is a call of the session that waited for approval and was decided (and, if approved, ran)
// since the agent was last told: this turn told it.
type ChatDecided struct {
	CallID    uuid.UUID `json:"call_id"`
	Tool      string    `json:"tool"`
	Status    string    `json:"status"`
	ErrorCode string    `json:"error_code,omitempty"`
}

// ChatToolCall is one tool call of a chat turn.
type ChatToolCall struct {
	// CallID is the GEM call, when one was made (not for refused arguments or meta-tools).
	CallID *uuid.UUID `json:"call_id"`
	Tool   string     `json:"tool"`
	// Status is the receipt's status, or pending, invalid_arguments, not_enabled, unknown_tool,
	// skill_not_loaded, or answered (a meta-tool).
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
	LimitReached bool `json:"limit_reached"`
	// Decided are the calls that waited for approval whose outcome this turn told the agent.
	Decided []ChatDecided `json:"decided"`
	// Finished are the calls still running when an earlier turn answered whose receipts this turn told the
	// agent.
	Finished []ChatDecided `json:"finished,omitempty"`
	Errors   []*Error      `json:"errors"`
	// Status is the turn's run's: completed or failed, or planning or waiting for a repeated request
	// answered before its turn ended (HTTP 202).
	Status string `json:"status,omitempty"`
	// Repeated says the request repeated an earlier one's key: this is the earlier request's turn, and
	// nothing was asked or made again.
	Repeated bool `json:"repeated,omitempty"`
}

// Statuses of a chat tool call other than a receipt's.
const (
	// ChatCallPending: the call was made and has no receipt yet.
	ChatCallPending = "pending"
	// ChatCallAwaitingApproval: the call waits for a person's decision (docs/governance.md#approvals).
	ChatCallAwaitingApproval = "awaiting_approval"
	// ChatCallInvalidArguments: the LLM's arguments were refused before any call was made.
	ChatCallInvalidArguments = "invalid_arguments"
	// ChatCallNotEnabled: the tool exists but the agent's skills do not enable it.
	ChatCallNotEnabled = "not_enabled"
	// ChatCallUnknownTool: no tool has that name.
	ChatCallUnknownTool = "unknown_tool"
	// ChatCallAnswered: a meta-tool the brain answered itself.
	ChatCallAnswered = "answered"
	// ChatCallSkillNotLoaded: the tool comes with a skill the LLM has not loaded (load_skill) yet.
	ChatCallSkillNotLoaded = "skill_not_loaded"
	// ChatCallTooMany: the LLM's answer asked for more tool calls than one answer may make
	// (GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN); this one was not made.
	ChatCallTooMany = "too_many_tool_calls"
)

// OperatorChatParams are a message to the default agent: the body of POST /operator/chat (GEM's).
type OperatorChatParams struct {
	Message string `json:"message"`
	// SessionID continues a conversation; a new one is started when it is empty (or null).
	SessionID string `json:"session_id,omitempty"`
	// IdempotencyKey is the client's key for this request (or the Idempotency-Key header), as for a chat.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Async asks for 202 and the run's id at once, as for a chat.
	Async bool `json:"async,omitempty"`
}

// Operator chat modes: how POST /operator/chat answered.
const (
	// OperatorModeAgent: the default agent (the LLM tool loop) answered.
	OperatorModeAgent = "agent"
	// OperatorModeRules: the rules planner ran the message in mode enqueue_and_wait (no LLM is configured,
	// or the default agent is missing or disabled).
	OperatorModeRules = "rules"
)

// OperatorToolResults sum up the calls a chat turn made: GEM's executed and succeeded counts, and the calls.
type OperatorToolResults struct {
	Executed  int                  `json:"executed"`
	Succeeded int                  `json:"succeeded"`
	Calls     []OperatorToolResult `json:"calls"`
}

// OperatorToolResult is one call a chat turn made, with its receipt's status (or pending).
type OperatorToolResult struct {
	CallID   uuid.UUID `json:"call_id"`
	ToolName string    `json:"tool_name"`
	Status   string    `json:"status"`
}

// OperatorChatResponse is the answer to POST /operator/chat: GEM's fields (ok, response, session_id, mode,
// tool_results — null when no call was made) and ours beside them.
type OperatorChatResponse struct {
	OK          bool                 `json:"ok"`
	Response    string               `json:"response"`
	SessionID   string               `json:"session_id"`
	Mode        string               `json:"mode"`
	ToolResults *OperatorToolResults `json:"tool_results"`
	RunID       uuid.UUID            `json:"run_id"`
	// Agent is the agent that answered (mode agent).
	Agent string `json:"agent,omitempty"`
	// FallbackReason says why the rules planner answered rather than the agent (mode rules).
	FallbackReason string   `json:"fallback_reason,omitempty"`
	Errors         []*Error `json:"errors"`
}

// SkillResource is one file of a skill folder besides SKILL.md (a reference, an asset or a script). Scripts
// are stored and served, never executed.
type SkillResource struct {
	// Path is the file's path inside the skill folder ("references/forms.md").
	Path string `json:"path"`
	// MediaType is the file's MIME type ("text/markdown").
	MediaType string `json:"media_type"`
	// SHA256 is the hex SHA-256 of Content.
	SHA256 string `json:"sha256"`
	// Size is Content's length in bytes.
	Size int `json:"size"`
	// Content is the file's bytes (left empty by listings).
	Content []byte `json:"-"`
}

// How an agent's skill is shown to the LLM, set by a skill's metadata "gem-disclosure".
const (
	// SkillDisclosureAlways puts the skill's instructions in every system prompt and offers its tools from
	// the first turn.
	SkillDisclosureAlways = "always"
	// SkillDisclosureOnDemand lists the skill by name and description; the LLM loads it (load_skill) to read
	// its instructions and be offered its tools.
	SkillDisclosureOnDemand = "on-demand"
	// SkillDisclosureKey is the metadata key that chooses; without it, SkillInlineMax decides.
	SkillDisclosureKey = "gem-disclosure"
	// SkillInlineMax is the longest instructions, in bytes, a skill without other files keeps in every
	// system prompt when its metadata does not choose: about 250 tokens, the size of a few catalog lines and
	// less than a load_skill round trip costs (one more LLM turn, which sends the whole conversation again).
	SkillInlineMax = 1024
)

// AgentSkill is a skill available to an agent for a user, as the chat loop discloses it.
type AgentSkill struct {
	Slug         string
	Name         string
	Description  string
	Instructions string
	// Tools are the registry tools the skill enables.
	Tools []string
	// Disclosure is the skill's metadata "gem-disclosure" ("" when absent).
	Disclosure string
	// Files is how many files the skill has besides SKILL.md.
	Files int
}

// AlwaysOn says whether the skill's instructions go in every system prompt and its tools are offered from
// the first turn: when its metadata says "always", or, unless it says "on-demand", when it has no other
// files and its instructions are at most SkillInlineMax bytes (GEM's built-in skills are all such).
func (s *AgentSkill) AlwaysOn() bool {
	switch s.Disclosure {
	case SkillDisclosureAlways:
		return true
	case SkillDisclosureOnDemand:
		return false
	}
	return s.Files == 0 && len(strings.TrimSpace(s.Instructions)) <= SkillInlineMax
}

// CheckDisclosure refuses a metadata "gem-disclosure" other than "always" or "on-demand".
func CheckDisclosure(metadata map[string]any) error {
	v, ok := metadata[SkillDisclosureKey]
	if !ok {
		return nil
	}
	if s, _ := v.(string); s != SkillDisclosureAlways && s != SkillDisclosureOnDemand {
		return Errorf(EINVALID, "metadata %s is %v; it is %q or %q", SkillDisclosureKey, v, SkillDisclosureAlways, SkillDisclosureOnDemand)
	}
	return nil
}
