package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// readBody reads the request body (bounded by the body limit).
func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, echo.ErrStatusRequestEntityTooLarge
		}
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, brain.Errorf(brain.EINVALID, "error reading the request body: %v", err)
	}
	return body, nil
}

// decodeBody reads the body and decodes it into T after checking its text (brain.CheckText) and validating
// it against schema, so every mistake in a request is reported at once. An empty body is emptyBody
// ("" to require one).
func decodeBody[T any](c echo.Context, schema *requestSchema, emptyBody string) (*T, []byte, error) {
	body, err := readBody(c)
	if err != nil {
		return nil, nil, err
	}
	if len(strings.TrimSpace(string(body))) == 0 && emptyBody != "" {
		body = []byte(emptyBody)
	}
	if err := brain.CheckText(body); err != nil {
		return nil, nil, err
	}
	if err := schema.Validate(body); err != nil {
		return nil, nil, invalidRequest(err)
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, nil, brain.Errorf(brain.EINVALID, "the request body does not fit: %v", err)
	}
	return &v, body, nil
}

// invalidRequest lists every violation of a request's schema.
func invalidRequest(err error) *brain.Error {
	var ve *registry.ValidationError
	if errors.As(err, &ve) {
		n := len(ve.Violations)
		return &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("the request does not match its schema (%d %s)", n, brain.Plural(n, "violation", "violations")),
			Details: map[string]any{"violations": ve.Violations}}
	}
	return brain.Errorf(brain.EINVALID, "%v", err)
}

// checkParams refuses query parameters and path segments that are not text PostgreSQL can store (%00,
// %FF), naming the parameter, before any handler sees them. The whole path is checked too: echo keeps a
// wildcard's segments escaped (/studio/static/%ff reached the file server, which answered 500).
func checkParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for name, values := range c.QueryParams() {
			if problem := gemsql.PlainTextProblem(name); problem != "" {
				return brain.Errorf(brain.EINVALID, "a query parameter name %s", problem)
			}
			for _, v := range values {
				if problem := gemsql.PlainTextProblem(v); problem != "" {
					return &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("query parameter %s %s", name, problem),
						Details: map[string]any{"parameter": name, "problem": problem}}
				}
			}
		}
		for i, name := range c.ParamNames() {
			if i < len(c.ParamValues()) {
				if problem := gemsql.PlainTextProblem(c.ParamValues()[i]); problem != "" {
					return &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("path parameter %s %s", name, problem),
						Details: map[string]any{"parameter": name, "problem": problem}}
				}
			}
		}
		if problem := gemsql.PlainTextProblem(c.Request().URL.Path); problem != "" {
			return &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("the path %s", problem), Details: map[string]any{"problem": problem}}
		}
		return next(c)
	}
}

func parseID(c echo.Context, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, brain.Errorf(brain.EINVALID, "%q is not a %s id (a UUID)", c.Param("id"), what)
	}
	return id, nil
}

// requestSchema is a request body's JSON Schema: compiled, to check requests with, and as written, for the
// API's description (GET /openapi.json, openapi.go), which so cannot drift from what the brain checks.
type requestSchema struct {
	*registry.Schema
	// name is the schema's name among the description's components ("RunRequest").
	name string
	doc  json.RawMessage
}

// mustRequestSchema compiles a request body's schema; label names it in violations.
func mustRequestSchema(name, label, doc string) *requestSchema {
	return &requestSchema{Schema: registry.MustCompileSchema(label, []byte(doc)), name: name, doc: json.RawMessage(doc)}
}

// Request schemas, checked before anything else. GEM's brain read a null mode, context or limits as
// absent (its clients send null for what they leave out), so these do too.
var (
	runSchema = mustRequestSchema("RunRequest", "run request", fmt.Sprintf(`{
		"type": "object",
		"properties": {
			"message": {"type": "string", "minLength": 1, "maxLength": 10000},
			"mode": {"type": ["string", "null"], "enum": ["answer", "plan", "enqueue", "enqueue_and_wait", null]},
			"conversation_id": {"type": ["string", "null"], "maxLength": 200},
			"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 1000},
			"async": {"type": "boolean"},
			"context": {
				"type": ["object", "null"],
				"properties": {
					"lead_id": {"type": "string", "format": "uuid"},
					"job_id": {"type": "string", "format": "uuid"},
					"quote_id": {"type": "string", "format": "uuid"},
					"inspection_id": {"type": "string", "format": "uuid"},
					"invoice_id": {"type": "string", "format": "uuid"}
				},
				"propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,63}$"},
				"additionalProperties": {"type": ["string", "number", "boolean"]},
				"maxProperties": 50
			},
			"limits": {
				"type": ["object", "null"],
				"properties": {
					"max_tool_calls": {"type": "integer", "minimum": 1, "maximum": %d},
					"wait_timeout_ms": {"type": "integer", "minimum": %d, "maximum": %d}
				},
				"additionalProperties": false
			}
		},
		"required": ["message"],
		"additionalProperties": false
	}`, brain.MaxToolCallsMax, brain.WaitTimeoutMin.Milliseconds(), brain.WaitTimeoutMax.Milliseconds()))

	approveSchema = mustRequestSchema("ApproveRequest", "approve request", fmt.Sprintf(`{
		"type": "object",
		"properties": {
			"wait": {"type": "boolean"},
			"wait_timeout_ms": {"type": "integer", "minimum": %d, "maximum": %d}
		},
		"additionalProperties": false
	}`, brain.WaitTimeoutMin.Milliseconds(), brain.WaitTimeoutMax.Milliseconds()))

	callSchema = mustRequestSchema("CallRequest", "call request", fmt.Sprintf(`{
		"type": "object",
		"properties": {
			"tool": {"type": "string", "minLength": 1, "maxLength": 200},
			"input": {"type": "object"},
			"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 1000},
			"wait_timeout_ms": {"type": "integer", "minimum": 0, "maximum": %d},
			"device": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"},
			"device_wait_ms": {"type": "integer", "minimum": 0, "maximum": 3600000},
			"agent": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"}
		},
		"required": ["tool"],
		"additionalProperties": false
	}`, brain.WaitTimeoutMax.Milliseconds()))

	agentSchema = mustRequestSchema("AgentRequest", "agent", `{
		"type": "object",
		"properties": {
			"slug": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"},
			"name": {"type": "string", "minLength": 1, "maxLength": 200},
			"instructions": {"type": "string", "maxLength": 100000},
			"model": {"type": ["string", "null"], "maxLength": 200},
			"temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
			"max_tool_iterations": {"type": "integer", "minimum": 1, "maximum": 50},
			"enabled": {"type": "boolean"},
			"code_mode": {"type": "boolean"}
		},
		"additionalProperties": false
	}`)

	assignmentSchema = mustRequestSchema("AssignmentRequest", "assignment", `{
		"type": "object",
		"properties": {
			"config_overrides": {"type": "object"},
			"priority": {"type": "integer", "minimum": 0, "maximum": 10000},
			"enabled": {"type": "boolean"},
			"allowed_users": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}, "maxItems": 1000},
			"call_timeout_ms": {"type": ["integer", "null"], "minimum": 10, "maximum": 900000},
			"call_max_attempts": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
			"call_priority": {"type": ["integer", "null"], "minimum": 1, "maximum": 4}
		},
		"additionalProperties": false
	}`)

	skillSchema = mustRequestSchema("SkillRequest", "skill", `{
		"type": "object",
		"properties": {
			"slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"},
			"name": {"type": "string", "minLength": 1, "maxLength": 200},
			"description": {"type": "string", "maxLength": 2000},
			"instructions": {"type": "string", "maxLength": 200000},
			"tools": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 500},
			"category": {"type": "string", "minLength": 1, "maxLength": 100},
			"metadata": {"type": "object"},
			"requires": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"}, "maxItems": 100}
		},
		"additionalProperties": false
	}`)

	skillImportSchema = mustRequestSchema("SkillImportRequest", "skill import", `{
		"type": "object",
		"properties": {
			"source": {"type": "string", "maxLength": 1000},
			"content": {"type": "string", "minLength": 1, "maxLength": 1000000},
			"files": {"type": ["array", "null"], "maxItems": 500, "items": {
				"type": "object",
				"properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 400},
					"content": {"type": "string"},
					"content_base64": {"type": "string", "contentEncoding": "base64"}
				},
				"required": ["path"],
				"additionalProperties": false
			}}
		},
		"required": ["content"],
		"additionalProperties": false
	}`)

	operatorChatSchema = mustRequestSchema("OperatorChatRequest", "operator chat request", `{
		"type": "object",
		"properties": {
			"message": {"type": "string", "minLength": 1, "maxLength": 10000},
			"session_id": {"type": ["string", "null"], "minLength": 1, "maxLength": 200},
			"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 1000},
			"async": {"type": "boolean"}
		},
		"required": ["message"],
		"additionalProperties": false
	}`)

	// A chat request has a message, or resumes a session ("resume": true) to tell the agent what became of
	// its calls that waited for approval.
	chatSchema = mustRequestSchema("ChatRequest", "chat request", `{
		"type": "object",
		"properties": {
			"message": {"type": "string", "minLength": 1, "maxLength": 20000},
			"user_id": {"type": "string", "minLength": 1, "maxLength": 200},
			"session_id": {"type": "string", "minLength": 1, "maxLength": 200},
			"resume": {"type": "boolean"},
			"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 1000},
			"async": {"type": "boolean"},
			"if_busy": {"type": "string", "enum": ["reject", "enqueue"]}
		},
		"required": ["user_id"],
		"if": {"properties": {"resume": {"const": true}}, "required": ["resume"]},
		"then": {"required": ["session_id"]},
		"else": {"required": ["message"]},
		"additionalProperties": false
	}`)
)
