package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/labstack/echo/v4"
)

// AnonymousCaller is the caller of every request when authentication is off (GEM_BRAIN_AUTH=off).
const AnonymousCaller = "anonymous"

// principal is who a request comes from: a caller (core_callers) and what it may do.
type principal struct {
	name   string
	grants registry.Grants
	// agents, when not nil, are the only agents the caller may act as.
	agents []string
}

func principalOf(c echo.Context) *principal {
	p, _ := c.Get("principal").(*principal)
	return p
}

// mayActAs reports whether the caller may act as the agent.
func (p *principal) mayActAs(agent string) bool {
	return p.agents == nil || slices.Contains(p.agents, agent)
}

// reader is the caller as a reader of calls, receipts and runs (brain.Reader: its own, or everyone's with
// audit).
func (p *principal) reader() brain.Reader { return brain.ReaderOf(p.name, p.grants) }

// callAgent is the agent a call or run of the caller is made for (brain.CallAgent).
func (p *principal) callAgent(named string) (string, error) {
	return brain.CallAgent(p.name, p.agents, named)
}

// agentHeader names the agent a request is made for.
const agentHeader = brain.AgentHeader

// actAs refuses an agent the caller may not act as (403), as the executor would refuse its calls.
func (p *principal) actAs(agent string) error {
	_, err := p.callAgent(agent)
	return err
}

// ensureCallers records the callers the brain's configuration names: its tokens, which may do everything
// unless an operator narrowed them, the HighLevel webhook, and "anonymous" when authentication is off.
func (s *Server) ensureCallers(ctx context.Context) error {
	type want struct {
		name, kind, note string
		permissions      []string
	}
	var wants []want
	for _, t := range s.cfg.Tokens {
		wants = append(wants, want{t.Name, gemsql.CallerToken, "a token of the brain's configuration (GEM_BRAIN_TOKENS)", []string{"*"}})
	}
	if s.cfg.AuthDisabled {
		wants = append(wants, want{AnonymousCaller, gemsql.CallerToken, "every request while authentication is off (GEM_BRAIN_AUTH=off)", []string{"*"}})
	}
	if s.highLevel != nil {
		// Recorded once with the permissions of the tools its planning calls: a brain without the planning
		// must not record it with none, which a later brain would keep.
		wants = append(wants, want{highLevelRequester, gemsql.CallerService, "HighLevel's signed webhook deliveries", s.highLevelPermissions()})
	}
	for _, w := range wants {
		if err := gemsql.CallerEnsure(ctx, s.pool, w.name, w.kind, w.permissions, w.note); err != nil {
			return err
		}
	}
	return nil
}

// authenticate finds the request's caller: a configured token (compared in constant time with every one),
// else a token made by POST /callers. The scheme is case-insensitive (RFC 9110, section 11.1).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.requestPrincipal(c)
		if err != nil {
			return err
		}
		c.Set("principal", p)
		return next(c)
	}
}

// requestPrincipal is the request's caller: "anonymous" when authentication is off, else its bearer
// token's (or, without one, its studio login's).
func (s *Server) requestPrincipal(c echo.Context) (*principal, error) {
	ctx := c.Request().Context()
	if s.cfg.AuthDisabled {
		return s.principal(ctx, AnonymousCaller, "", "")
	}
	authorization := strings.TrimSpace(c.Request().Header.Get(echo.HeaderAuthorization))
	if authorization == "" {
		// The studio's pages call the API with their login's cookie (and CSRF token) instead.
		if p, found, err := s.cookiePrincipal(c, c.Request().Header.Get(csrfHeader)); found {
			return p, err
		}
	}
	scheme, token, _ := strings.Cut(authorization, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="gem"`)
		return nil, brain.Errorf(brain.EUNAUTHORIZED, "missing bearer token (send Authorization: Bearer <token>)")
	}
	p, err := s.principal(ctx, s.configuredName(token), token, c.Request().RemoteAddr)
	switch brain.ErrorCode(err) {
	case brain.EUNAUTHORIZED:
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="gem", error="invalid_token"`)
	case brain.ETOOMANY:
		c.Response().Header().Set("Retry-After", throttledFor(err))
		tarpit(ctx, err)
	}
	return p, err
}

// configuredName is the name of the configured token a token is (compared in constant time with every
// one), or "".
func (s *Server) configuredName(token string) string {
	name := ""
	for _, t := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(token), []byte(t.Value)) == 1 {
			name = t.Name
		}
	}
	return name
}

// principal reads the caller named (a configured token's), or else the one the token authenticates, for a
// request from remoteAddr (tokenGuard: what is kept, and how failures from one address are slowed).
func (s *Server) principal(ctx context.Context, name, token, remoteAddr string) (*principal, error) {
	var (
		caller *gemsql.Caller
		err    error
	)
	if name != "" {
		caller, err = s.tokens.byName(ctx, s.pool, name)
	} else {
		caller, err = s.tokens.byToken(ctx, s.pool, token, remoteAddr)
	}
	switch {
	case err != nil:
		return nil, principalErr(err, name)
	case caller.Revoked():
		return nil, brain.Errorf(brain.EUNAUTHORIZED, "the caller of this token, %q, is revoked", caller.Name)
	}
	return &principal{name: caller.Name, grants: caller.Permissions, agents: caller.Agents}, nil
}

// requirePermission lets through only callers granted the permission (403 otherwise).
func requirePermission(permission string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p := principalOf(c)
			if p == nil || !p.grants.Allows(permission) {
				name := ""
				if p != nil {
					name = p.name
				}
				return &brain.Error{Code: brain.EFORBIDDEN, Message: fmt.Sprintf("caller %q lacks permission %s, which this request needs", name, permission),
					Details: map[string]any{"caller": name, "missing": []string{permission}}}
			}
			return next(c)
		}
	}
}

// The callers' routes (admin only).

var callerSchema = mustRequestSchema("CallerRequest", "caller", `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"},
		"permissions": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 200},
		"agents": {"type": ["array", "null"], "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"}, "maxItems": 200},
		"note": {"type": "string", "maxLength": 1000}
	},
	"required": ["name", "permissions"],
	"additionalProperties": false
}`)

var callerPatchSchema = mustRequestSchema("CallerPatchRequest", "caller-patch", `{
	"type": "object",
	"properties": {
		"permissions": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 200},
		"agents": {"type": ["array", "null"], "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"}, "maxItems": 200},
		"note": {"type": "string", "maxLength": 1000}
	},
	"additionalProperties": false
}`)

type callerParams struct {
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
	// Agents: absent (keep, or any when creating), null (any agent) or a list.
	Agents json.RawMessage `json:"agents"`
	Note   *string         `json:"note"`
}

// agents reads Agents: whether it was given, and the list (nil: any agent).
func (p *callerParams) agents() (given bool, agents []string) {
	if len(p.Agents) == 0 {
		return false, nil
	}
	if string(p.Agents) == "null" {
		return true, nil
	}
	_ = json.Unmarshal(p.Agents, &agents) // the schema checked it is an array of slugs
	return true, nonNilStrings(agents)
}

func (s *Server) listCallers(c echo.Context) error {
	list, err := gemsql.CallerList(c.Request().Context(), s.pool)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"callers": list})
}

func (s *Server) getCaller(c echo.Context) error {
	caller, err := gemsql.CallerGet(c.Request().Context(), s.pool, c.Param("name"))
	if err != nil {
		return callerError(c.Param("name"), err)
	}
	return ok(c, http.StatusOK, map[string]any{"caller": caller})
}

// createCaller makes a caller: a token caller's token is answered this once; an SQL caller ("sql:<role>")
// gets grants for a database role that logs in itself.
func (s *Server) createCaller(c echo.Context) error {
	p, _, err := decodeBody[callerParams](c, callerSchema, "")
	if err != nil {
		return err
	}
	if why := reservedCallerName(p.Name); why != "" {
		return &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("name %q: %s", p.Name, why), Details: map[string]any{"field": "name"}}
	}
	if err := registry.CheckGrants(p.Permissions); err != nil {
		return &brain.Error{Code: brain.EINVALID, Message: "permissions: " + err.Error(), Details: map[string]any{"field": "permissions"}}
	}
	params := gemsql.CallerParams{Name: p.Name, Permissions: p.Permissions}
	_, params.Agents = p.agents()
	if p.Note != nil {
		params.Note = *p.Note
	}
	caller, token, err := gemsql.CallerCreate(c.Request().Context(), s.pool, params)
	if err != nil {
		return callerError(p.Name, err)
	}
	body := map[string]any{"caller": caller}
	if token != "" {
		body["token"] = token
		body["note"] = "the token is shown only now: give it to whoever acts as " + caller.Name
	} else {
		body["note"] = fmt.Sprintf("calls inserted by database role %q now run with these permissions (docs/governance.md)", strings.TrimPrefix(caller.Name, "sql:"))
	}
	return ok(c, http.StatusCreated, body)
}

// updateCaller changes a caller's permissions, agents or note (what the body leaves out stays). A revoked
// caller stays revoked: POST /callers/{name}/enable brings it back, with a new token.
func (s *Server) updateCaller(c echo.Context) error {
	p, _, err := decodeBody[callerParams](c, callerPatchSchema, "")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	name := c.Param("name")
	cur, err := gemsql.CallerGet(ctx, s.pool, name)
	if err != nil {
		return callerError(name, err)
	}
	params := gemsql.CallerParams{Name: name, Permissions: cur.Permissions, Agents: cur.Agents, Note: cur.Note}
	if p.Permissions != nil {
		if err := registry.CheckGrants(p.Permissions); err != nil {
			return &brain.Error{Code: brain.EINVALID, Message: "permissions: " + err.Error(), Details: map[string]any{"field": "permissions"}}
		}
		params.Permissions = p.Permissions
	}
	if given, agents := p.agents(); given {
		params.Agents = agents
	}
	if p.Note != nil {
		params.Note = *p.Note
	}
	caller, err := gemsql.CallerUpdate(ctx, s.pool, params)
	if err != nil {
		return callerError(name, err)
	}
	body := map[string]any{"caller": caller}
	if caller.Revoked() {
		body["note"] = "the caller stays revoked: POST /callers/" + name + "/enable (brain callers enable) brings it back with a new token"
	}
	return ok(c, http.StatusOK, body)
}

// enableCaller lifts a revocation. A token caller gets a new token, answered this once: the token it had
// (revoked, perhaps because it leaked) never authenticates again.
func (s *Server) enableCaller(c echo.Context) error {
	name := c.Param("name")
	caller, token, err := gemsql.CallerEnable(c.Request().Context(), s.pool, name)
	switch {
	case errors.Is(err, gemsql.ErrNotRevoked):
		return brain.Errorf(brain.ECONFLICT, "caller %q is not revoked (POST /callers/%s/token gives it a new token)", name, name)
	case errors.Is(err, gemsql.ErrConfiguredToken):
		return brain.Errorf(brain.ECONFLICT, "caller %q's token is in the brain's configuration (GEM_BRAIN_TOKENS), and a revoked configured token stays revoked: configure a new token under another name", name)
	case err != nil:
		return callerError(name, err)
	}
	body := map[string]any{"caller": caller}
	if token != "" {
		body["token"] = token
		body["note"] = "the token is shown only now; the one revoked never works again"
	}
	return ok(c, http.StatusOK, body)
}

// reservedCallerName says why a name cannot be a caller's made by hand ("" when it can): GEM's own callers,
// and an SQL caller without a role.
func reservedCallerName(name string) string {
	switch {
	case name == AnonymousCaller || name == highLevelRequester || name == StdioCaller:
		return "it is GEM's own caller's: choose another"
	case name == "sql:":
		return "an SQL caller names its database role: sql:<role>"
	}
	return ""
}

// StdioCaller is the caller `brain mcp` makes its calls as without -as.
const StdioCaller = "stdio"

func (s *Server) revokeCaller(c echo.Context) error {
	name := c.Param("name")
	if p := principalOf(c); p != nil && p.name == name {
		return brain.Errorf(brain.ECONFLICT, "a caller may not revoke itself (%q): ask another admin", name)
	}
	if err := gemsql.CallerRevoke(c.Request().Context(), s.pool, name); err != nil {
		return callerError(name, err)
	}
	return ok(c, http.StatusOK, map[string]any{"revoked": name,
		"note": "its token stops working within " + callerTTL.String() + "; its calls not yet run are refused"})
}

func (s *Server) rotateCallerToken(c echo.Context) error {
	name := c.Param("name")
	token, err := gemsql.CallerRotateToken(c.Request().Context(), s.pool, name)
	if err != nil {
		if errors.Is(err, gemsql.ErrNotFound) {
			return brain.Errorf(brain.ENOTFOUND, "no token caller named %q (SQL callers log in to PostgreSQL; configured tokens live in GEM_BRAIN_TOKENS)", name)
		}
		return callerError(name, err)
	}
	caller, err := gemsql.CallerGet(c.Request().Context(), s.pool, name)
	if err != nil {
		return callerError(name, err)
	}
	return ok(c, http.StatusOK, map[string]any{"caller": caller, "token": token,
		"note": "the old token stops working within " + callerTTL.String() + "; the token is shown only now"})
}

func callerError(name string, err error) error {
	var clash *gemsql.NameClashError
	switch {
	case errors.As(err, &clash):
		return &brain.Error{Code: brain.EINVALID, Message: clash.Error() + ": choose another name", Details: map[string]any{"field": "name", "existing": clash.Existing}}
	case errors.Is(err, gemsql.ErrNotFound):
		return brain.Errorf(brain.ENOTFOUND, "no caller named %q", name)
	case errors.Is(err, gemsql.ErrExists):
		return brain.Errorf(brain.ECONFLICT, "a caller named %q already exists", name)
	}
	return err
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
