package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// The API's OpenAPI 3.1 description, served at OpenAPIPath. It is built from the routes the server registers
// (routes.go: each route's registration and its description are one entry), the request schemas the brain
// validates bodies with (decode.go) and the Go types it answers with, so what it says cannot drift from what
// the brain does.

// OpenAPIPath serves the API's description. It is public: it says what the API takes and answers, as the
// docs do, and nothing of what is stored; client generators and API tools fetch it without a token.
const OpenAPIPath = "/openapi.json"

// access is who may call a route.
type access int

const (
	// accessPublic: no token (the route checks what it needs itself: a signature, a device's token).
	accessPublic access = iota
	// accessCaller: a caller's bearer token (or a studio login).
	accessCaller
	// accessApprover: a caller holding approve.
	accessApprover
	// accessAdmin: a caller holding admin.
	accessAdmin
)

// route is one route of the API: what registers it and what the description says of it.
type route struct {
	method string
	// path is the route's template as OpenAPI writes it (/brain/runs/{id}); echo's is derived from it.
	path    string
	handler echo.HandlerFunc
	access  access
	// admit is the admission limiter the route passes (overload.go), nil for none: the routes that plan,
	// enqueue and wait, which answer 503 overloaded when it is full.
	admit echo.MiddlewareFunc
	// registered says another part of the server registers it (metrics.go's /metrics): it is described only.
	registered bool
	// off says this brain does not serve the route (no MCP, no devices' hub, no metrics): neither registered
	// nor described.
	off bool
	op  operation
}

// operation is what the description says of a route beyond what its registration gives.
type operation struct {
	id, tag, summary, description string
	query                         []param
	headers                       []param
	// body is the JSON body's schema; bodyOptional says an empty body is {} (decodeBody's emptyBody).
	body         *requestSchema
	bodyOptional bool
	// otherBodies are more media types the body may have (a skill folder as application/zip).
	otherBodies map[string]any
	// example is an example request body.
	example any
	// keyed: the route takes the Idempotency-Key header (a retry with the same key repeats nothing).
	keyed bool
	// async: Prefer: respond-async (or the body's "async": true) answers 202 with the run at once.
	async bool
	// stream: Accept: text/event-stream answers the run's events as they come.
	stream bool
	// status is the success status (200 by default); answer its JSON body's schema, or media (a media type
	// to schema) for answers that are not JSON; answerExample an example of it.
	status        int
	answer        any
	media         map[string]any
	answerExample any
	// more are further answers by status (a 200 that is ok false, a redirect).
	more map[int]response
	// errors are error statuses the route answers besides those its access, parameters and body imply.
	errors []int
}

type param struct {
	name, description string
	schema            any
	required          bool
}

type response struct {
	description string
	schema      any
	headers     map[string]any
}

// echoPath turns an OpenAPI path template into echo's: /brain/runs/{id} → /brain/runs/:id.
func echoPath(path string) string {
	return pathParamRe.ReplaceAllString(path, ":$1")
}

var pathParamRe = regexp.MustCompile(`\{([a-z_]+)\}`)

// register adds a route to echo with the middleware its access and admission call for.
func (s *Server) register(e *echo.Echo, r route) {
	var mw []echo.MiddlewareFunc
	if r.access >= accessCaller {
		mw = append(mw, s.authenticate)
	}
	switch r.access {
	case accessApprover:
		mw = append(mw, requirePermission(registry.PermissionApprove))
	case accessAdmin:
		mw = append(mw, requirePermission(registry.PermissionAdmin))
	}
	if r.admit != nil {
		mw = append(mw, r.admit)
	}
	e.Add(r.method, echoPath(r.path), r.handler, mw...)
}

// optional leaves names out of an object schema's required properties.
func optional(schema map[string]any, names ...string) map[string]any {
	schema["required"] = slices.DeleteFunc(slices.Clone(schema["required"].([]string)), func(n string) bool { return slices.Contains(names, n) })
	return schema
}

// Shorthands for the description's schemas.
func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func arrayOf(items any) map[string]any { return map[string]any{"type": "array", "items": items} }

func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

func enum(values ...string) map[string]any { return map[string]any{"type": "string", "enum": values} }

func integer(lo, hi int) map[string]any {
	return map[string]any{"type": "integer", "minimum": lo, "maximum": hi}
}

// okWith is a success answer: "ok": true and the properties given, all present.
func okWith(props map[string]any) map[string]any {
	all := map[string]any{"ok": map[string]any{"const": true}}
	maps.Copy(all, props)
	required := slices.Sorted(maps.Keys(all))
	return map[string]any{"type": "object", "properties": all, "required": required}
}

// answerTypes are the Go types the API answers with, by their name among the description's components:
// their schemas are derived from the types themselves.
var answerTypes = map[string]reflect.Type{
	"RunResponse":          reflect.TypeFor[brain.RunResponse](),
	"ChatResponse":         reflect.TypeFor[brain.ChatResponse](),
	"OperatorChatResponse": reflect.TypeFor[brain.OperatorChatResponse](),
	"Call":                 reflect.TypeFor[gemsql.Call](),
	"Receipt":              reflect.TypeFor[registry.Receipt](),
	"Approval":             reflect.TypeFor[gemsql.Approval](),
	"PendingApproval":      reflect.TypeFor[gemsql.PendingApproval](),
	"RunSummary":           reflect.TypeFor[postgres.RunSummary](),
	"Agent":                reflect.TypeFor[brain.Agent](),
	"Skill":                reflect.TypeFor[brain.Skill](),
	"Assignment":           reflect.TypeFor[brain.Assignment](),
	"SkillFile":            reflect.TypeFor[brain.SkillResource](),
	"Device":               reflect.TypeFor[gemsql.Device](),
	"Caller":               reflect.TypeFor[gemsql.Caller](),
	"Executor":             reflect.TypeFor[gemsql.Executor](),
	"Tool":                 reflect.TypeFor[toolView](),
	"ToolMatch":            reflect.TypeFor[toolMatch](),
}

// typeSchemas are the schemas of types whose JSON is not what their Go shape says.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[uuid.UUID]():       {Type: "string", Format: "uuid"},
	reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
}

// errorSchema is GEM's error: a code clients match on (each maps to one HTTP status, errorStatus), a message
// for people, and details (every schema violation with its JSON pointer, the suggestions, ...).
func errorSchema() map[string]any {
	codes := slices.Sorted(maps.Keys(errorStatus))
	return map[string]any{
		"type":        "object",
		"description": "An error: its code (each maps to one HTTP status), a message for people, and details such as every schema violation with its JSON pointer.",
		"properties": map[string]any{
			"code":    map[string]any{"type": "string", "enum": codes},
			"message": map[string]any{"type": "string"},
			"details": map[string]any{"description": "structured details: violations, problems, did_you_mean, retry_after_s, ..."},
		},
		"required": []string{"code", "message"},
	}
}

// describe builds the description of the routes served.
func (s *Server) describe(routes []route) ([]byte, error) {
	schemas := map[string]any{
		"Error": errorSchema(),
		"ErrorResponse": map[string]any{"type": "object", "description": "Every error answer: ok false and the errors.",
			"properties": map[string]any{"ok": map[string]any{"const": false}, "errors": arrayOf(ref("Error"))},
			"required":   []string{"ok", "errors"},
			"examples": []any{map[string]any{"ok": false, "errors": []any{map[string]any{"code": brain.EINVALID,
				"message": "the request does not match its schema (1 violation)",
				"details": map[string]any{"violations": []any{map[string]any{"path": "/context/lead_id", "message": "'nope' is not valid 'uuid'",
					"keyword": "format", "schema_path": "/properties/context/properties/lead_id/format"}}}}}}}},
		"Accepted": okWith(map[string]any{
			"run_id":   map[string]any{"type": "string", "format": "uuid"},
			"location": str("the run: GET it for its answer"),
			"events":   str("the run's events: GET it for a text/event-stream"),
		}),
	}
	accepted := schemas["Accepted"].(map[string]any)
	accepted["description"] = "An async request's answer (202): its run, where to read it and its events. A repeat of a keyed request says repeated; a chat's carries its session."
	accepted["examples"] = []any{map[string]any{"ok": true, "run_id": "01a244c8-4ddf-70ef-a662-e80cbaad7975",
		"location": "/brain/runs/01a244c8-4ddf-70ef-a662-e80cbaad7975", "events": "/brain/runs/01a244c8-4ddf-70ef-a662-e80cbaad7975/events"}}
	props := accepted["properties"].(map[string]any)
	props["session_id"] = str("the chat's session")
	props["repeated"] = map[string]any{"type": "boolean", "description": "the request repeated an earlier one's key: this is that request's run"}
	for name, t := range answerTypes {
		sch, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas})
		if err != nil {
			return nil, fmt.Errorf("describing %s: %w", name, err)
		}
		schemas[name] = sch
	}
	paths := map[string]map[string]any{}
	tags := map[string]bool{}
	for _, r := range routes {
		op, err := s.describeRoute(r, schemas)
		if err != nil {
			return nil, err
		}
		if paths[r.path] == nil {
			paths[r.path] = map[string]any{}
		}
		paths[r.path][strings.ToLower(r.method)] = op
		tags[r.op.tag] = true
	}
	var tagList []map[string]any
	for _, t := range apiTags {
		if tags[t.name] {
			tagList = append(tagList, map[string]any{"name": t.name, "description": t.description})
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "GEM brain",
			"version": brain.Version,
			"summary": "Plan tool calls, make them, and read their receipts.",
			"description": "The HTTP API of GEM's brain (docs/brain.md). Every call of a tool is a row in PostgreSQL and ends with exactly one receipt. " +
				"Errors answer {\"ok\": false, \"errors\": [{\"code\", \"message\", \"details\"}]}, each code with one HTTP status. " +
				"Requests that do work take an Idempotency-Key: a retry with the same key repeats nothing. " +
				"The studio's pages (/studio, HTML for browsers, docs/studio.md) are not described here.",
		},
		"servers": []map[string]any{{"url": "/", "description": "the brain that served this description"}},
		"tags":    tagList,
		"paths":   paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer",
					"description": "A caller's token: one of GEM_BRAIN_TOKENS (make run writes one to .gem/brain-token: the part after the colon), or one made by POST /callers. What it may do follows its caller's permissions (docs/governance.md)."},
			},
		},
		"security": []map[string]any{{"bearer": []string{}}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// apiTags group the routes, in the order the description lists them.
var apiTags = []struct{ name, description string }{
	{"runs", "Ask the brain in words: it plans tool calls, makes them and answers from their receipts."},
	{"calls", "Calls of named tools and their receipts, and approvals of held calls."},
	{"agents", "Agents, their skills, and chat with them (the LLM tool loop)."},
	{"skills", "Skills: instructions and the tools they enable."},
	{"governance", "Callers (tokens and database roles) and their permissions: admin only."},
	{"devices", "Devices that serve tools from people's machines."},
	{"service", "Health, metrics, the description itself, MCP, and webhooks."},
}

// describeRoute builds one operation.
func (s *Server) describeRoute(r route, schemas map[string]any) (map[string]any, error) {
	o := r.op
	op := map[string]any{"operationId": o.id, "summary": o.summary, "tags": []string{o.tag}}
	if o.description != "" {
		op["description"] = o.description
	}
	if r.access == accessPublic {
		op["security"] = []map[string]any{}
	}
	var params []map[string]any
	for _, m := range pathParamRe.FindAllStringSubmatch(r.path, -1) {
		sch, ok := pathParams[m[1]]
		if !ok {
			return nil, fmt.Errorf("%s %s: no schema for path parameter %s", r.method, r.path, m[1])
		}
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": sch.schema, "description": sch.description})
	}
	for _, q := range o.query {
		params = append(params, map[string]any{"name": q.name, "in": "query", "required": q.required, "schema": q.schema, "description": q.description})
	}
	headers := o.headers
	if o.keyed {
		headers = append(headers, param{name: brain.IdempotencyKeyHeader, schema: map[string]any{"type": "string", "minLength": 1, "maxLength": brain.RequestKeyMaxLen},
			description: "your key for this request (or the body's idempotency_key; both must agree): a retry with the same key within its window answers the first request's run and makes nothing again; the same key with another request is 422 idempotency_conflict (docs/durable-runs.md)"})
	}
	if o.async {
		headers = append(headers, param{name: "Prefer", schema: enum("respond-async"),
			description: "respond-async (RFC 7240), or \"async\": true in the body: answer 202 with the run at once; its answer is at the Location, its events at location + /events"})
	}
	if o.stream {
		headers = append(headers, param{name: "Accept", schema: map[string]any{"type": "string", "examples": []string{"text/event-stream"}},
			description: "text/event-stream: answer the turn's events as they come (server-sent events), ending with one event `response` holding the answer"},
			param{name: "Last-Event-ID", schema: map[string]any{"type": "string", "pattern": "^[0-9]{1,10}$"},
				description: "with the request's key, on a retry of a streamed turn whose stream broke: stream the same turn from after this event"})
	}
	for _, h := range headers {
		params = append(params, map[string]any{"name": h.name, "in": "header", "required": h.required, "schema": h.schema, "description": h.description})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if o.body != nil {
		if prev, dup := schemas[o.body.name]; dup && !jsonEqual(prev, o.body.doc) {
			return nil, fmt.Errorf("two request schemas are named %s", o.body.name)
		}
		schemas[o.body.name] = o.body.doc
		media := map[string]any{"schema": ref(o.body.name)}
		if o.example != nil {
			media["example"] = o.example
		}
		content := map[string]any{"application/json": media}
		maps.Copy(content, o.otherBodies)
		body := map[string]any{"required": !o.bodyOptional, "content": content}
		if o.bodyOptional {
			body["description"] = "optional: an empty body is {}"
		}
		op["requestBody"] = body
	} else if o.otherBodies != nil {
		op["requestBody"] = map[string]any{"required": true, "content": o.otherBodies}
	}
	responses := map[string]any{}
	status := o.status
	if status == 0 {
		status = http.StatusOK
	}
	success := map[string]any{"description": http.StatusText(status)}
	switch {
	case o.media != nil:
		content := map[string]any{}
		for mt, sch := range o.media {
			content[mt] = map[string]any{"schema": sch}
		}
		success["content"] = content
	case o.answer != nil:
		media := map[string]any{"schema": o.answer}
		if o.answerExample != nil {
			media["example"] = o.answerExample
		}
		content := map[string]any{"application/json": media}
		if o.stream {
			content["text/event-stream"] = map[string]any{"schema": str("server-sent events: id (the event's number), event (its kind), data (JSON); the last is `response`, the answer"),
				"example": "id: 1\nevent: run_started\ndata: {\"mode\": \"chat\", \"agent\": \"office-assistant\", \"session_id\": \"…\", \"status\": \"planning\"}\n\nevent: response\ndata: {\"ok\": true, …}\n\n"}
			success["headers"] = map[string]any{"Content-Location": map[string]any{"schema": map[string]any{"type": "string"},
				"description": "a stream's: its run's events, /brain/runs/{id}/events, where a client that lost the stream reads the rest"}}
		}
		success["content"] = content
	}
	if status != http.StatusNoContent || success["content"] != nil {
		responses[fmt.Sprint(status)] = success
	}
	for code, resp := range o.more {
		out := map[string]any{"description": resp.description}
		if resp.schema != nil {
			out["content"] = map[string]any{"application/json": map[string]any{"schema": resp.schema}}
		}
		if resp.headers != nil {
			out["headers"] = resp.headers
		}
		responses[fmt.Sprint(code)] = out
	}
	if o.async {
		responses["202"] = map[string]any{"description": "Accepted: the request goes on; its run is at the Location",
			"headers": map[string]any{"Location": map[string]any{"description": "the run: /brain/runs/{id}", "schema": map[string]any{"type": "string"}}},
			"content": map[string]any{"application/json": map[string]any{"schema": ref("Accepted")}}}
	}
	// Any request may be refused 400: a query parameter or the path holding text GEM cannot store (checkParams).
	errs := append(slices.Clone(o.errors), http.StatusBadRequest)
	if r.access >= accessCaller {
		errs = append(errs, http.StatusUnauthorized, http.StatusTooManyRequests)
	}
	if r.access >= accessApprover {
		errs = append(errs, http.StatusForbidden)
	}
	if strings.Contains(r.path, "{") {
		errs = append(errs, http.StatusNotFound)
	}
	if o.body != nil {
		errs = append(errs, http.StatusRequestEntityTooLarge)
	}
	if o.keyed {
		errs = append(errs, http.StatusUnprocessableEntity)
	}
	if r.admit != nil {
		errs = append(errs, http.StatusServiceUnavailable)
	}
	for _, code := range errs {
		if _, set := responses[fmt.Sprint(code)]; !set {
			responses[fmt.Sprint(code)] = errorResponse(code)
		}
	}
	responses["default"] = map[string]any{"description": "an error (every error answers this shape; 503 when the database is away, with Retry-After)",
		"content": map[string]any{"application/json": map[string]any{"schema": ref("ErrorResponse")}}}
	op["responses"] = responses
	return op, nil
}

// errorWhy says when the API answers each error status.
var errorWhy = map[int]string{
	http.StatusBadRequest:            "invalid: the request does not match its schema or parameters (every violation, with its JSON pointer, in details)",
	http.StatusUnauthorized:          "unauthorized: no bearer token, or one no caller holds (WWW-Authenticate says which)",
	http.StatusForbidden:             "forbidden: the caller lacks a permission the request needs (details name it)",
	http.StatusNotFound:              "not_found: no such resource, or one the caller may not read",
	http.StatusConflict:              "conflict: the request does not fit the current state",
	http.StatusRequestEntityTooLarge: "too_large: the body is over GEM_BRAIN_MAX_BODY",
	http.StatusUnprocessableEntity:   "idempotency_conflict: the Idempotency-Key was used with another request (details name its run); or llm_rejected",
	http.StatusTooManyRequests:       "too_many_failures: too many bad tokens from this address; retry after Retry-After",
	http.StatusServiceUnavailable:    "overloaded (retry after Retry-After), unavailable (the database or the LLM is away) or llm_not_configured",
}

func errorResponse(code int) map[string]any {
	why := errorWhy[code]
	if why == "" {
		why = http.StatusText(code)
	}
	out := map[string]any{"description": why, "content": map[string]any{"application/json": map[string]any{"schema": ref("ErrorResponse")}}}
	if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
		out["headers"] = map[string]any{"Retry-After": map[string]any{"description": "seconds to wait before trying again", "schema": map[string]any{"type": "integer"}}}
	}
	return out
}

func jsonEqual(a any, b json.RawMessage) bool {
	x, _ := json.Marshal(a)
	var va, vb any
	_ = json.Unmarshal(x, &va)
	_ = json.Unmarshal(b, &vb)
	return reflect.DeepEqual(va, vb)
}

// pathParams are the schemas of the path parameters, by name.
var pathParams = map[string]param{
	"id":    {description: "a run's or call's id", schema: map[string]any{"type": "string", "format": "uuid"}},
	"slug":  {description: "the agent's or skill's slug", schema: map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"}},
	"skill": {description: "the skill's slug", schema: map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"}},
	"name":  {description: "the device's or caller's name", schema: map[string]any{"type": "string", "minLength": 1, "maxLength": 200}},
}

// openAPI answers GET /openapi.json.
func (s *Server) openAPI(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "application/json", s.description)
}
