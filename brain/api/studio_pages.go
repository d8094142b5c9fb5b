package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/labstack/echo/v4"
)

// mountStudio adds the studio's routes. River UI, when given, is served under /studio/river to admins.
func (s *Server) mountStudio(e *echo.Echo, river http.Handler) {
	e.GET(studioPrefix, func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, studioPrefix+"/calls") })
	e.GET(studioPrefix+"/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, studioPrefix+"/calls") })
	e.GET(studioPrefix+"/static/*", studioStatic())
	e.GET(studioPrefix+"/login", s.studioLoginPage)
	e.POST(studioPrefix+"/login", s.studioLogin)
	auth := s.studioAuth
	e.POST(studioPrefix+"/logout", s.studioLogout, auth)
	e.GET(studioPrefix+"/calls", s.studioCalls, auth)
	e.GET(studioPrefix+"/calls/events", s.studioCallEvents, auth)
	e.GET(studioPrefix+"/calls/:id", s.studioCall, auth)
	e.GET(studioPrefix+"/runs", s.studioRuns, auth)
	e.GET(studioPrefix+"/runs/:id", s.studioRun, auth)
	e.GET(studioPrefix+"/stumbles", s.studioStumbles, auth)
	e.GET(studioPrefix+"/approvals", s.studioApprovals, auth, requirePermission(registry.PermissionApprove))
	e.GET(studioPrefix+"/agents", s.studioAgents, auth)
	e.GET(studioPrefix+"/agents/:slug", s.studioAgent, auth)
	e.GET(studioPrefix+"/skills", s.studioSkills, auth)
	e.GET(studioPrefix+"/skills/:slug", s.studioSkill, auth)
	e.GET(studioPrefix+"/chat", s.studioChat, auth)
	e.GET(studioPrefix+"/registry", s.studioRegistry, auth)
	e.GET(studioPrefix+"/registry/:tool", s.studioTool, auth)
	e.GET(studioPrefix+"/executors", s.studioExecutors, auth)
	e.GET(studioPrefix+"/architecture", s.studioArchitecture, auth)
	e.GET(studioPrefix+"/queue", s.studioQueue, auth)
	if river != nil {
		admin := requirePermission(registry.PermissionAdmin)
		h := echo.WrapHandler(river)
		e.Any(studioPrefix+"/river", h, auth, admin, s.studioRiverGuard)
		e.Any(studioPrefix+"/river/*", h, auth, admin, s.studioRiverGuard)
	}
}

// studioRiverGuard lets River UI's own requests that change jobs (cancel, retry, delete) through only from
// this origin, since they carry no CSRF token of ours (the SameSite=Strict cookie already keeps other sites'
// requests from carrying the session).
func (s *Server) studioRiverGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if unsafeMethod(c.Request().Method) && (c.Request().Header.Get("Origin") == "" || !sameOrigin(c.Request())) &&
			!s.cfg.AuthDisabled {
			return brain.Errorf(brain.EFORBIDDEN, "River UI's changes must come from the studio's own pages")
		}
		return next(c)
	}
}

// callFilter is the calls page's filter, from its query.
type callFilter struct {
	Tool, Status, Caller, Agent, Device string
}

func parseCallFilter(c echo.Context) (callFilter, error) {
	f := callFilter{Tool: c.QueryParam("tool"), Status: c.QueryParam("status"), Caller: c.QueryParam("caller"),
		Agent: c.QueryParam("agent"), Device: c.QueryParam("device")}
	if f.Status != "" && !slices.Contains(callStatuses, f.Status) {
		return f, &brain.Error{Code: brain.EINVALID, Message: "status must be one of " + strings.Join(callStatuses, ", "),
			Details: map[string]any{"field": "status"}}
	}
	for _, v := range []string{f.Tool, f.Caller, f.Agent, f.Device} {
		if len(v) > 200 {
			return f, brain.Errorf(brain.EINVALID, "a filter is at most 200 characters")
		}
	}
	return f, nil
}

// Query is the filter as a query string (for the event stream and links).
func (f callFilter) Query() string {
	q := make([]string, 0, 5)
	for _, kv := range [][2]string{{"tool", f.Tool}, {"status", f.Status}, {"caller", f.Caller}, {"agent", f.Agent}, {"device", f.Device}} {
		if kv[1] != "" {
			q = append(q, kv[0]+"="+url.QueryEscape(kv[1]))
		}
	}
	return strings.Join(q, "&")
}

// matches applies the filter to a call (for the event stream).
func (f callFilter) matches(call *gemsql.Call) bool {
	return (f.Tool == "" || call.ToolName == f.Tool) && (f.Status == "" || string(call.Status) == f.Status) &&
		(f.Caller == "" || call.RequestedBy == f.Caller) && (f.Agent == "" || call.Agent == f.Agent) &&
		(f.Device == "" || call.Device == f.Device || call.RanOnDevice == f.Device)
}

var callStatuses = []string{"awaiting_approval", "queued", "running", "succeeded", "failed", "not_configured"}

func (s *Server) studioCalls(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	f, err := parseCallFilter(c)
	if err != nil {
		return err
	}
	p := gemsql.CallListParams{ToolName: f.Tool, Status: registry.CallStatus(f.Status), RequestedBy: f.Caller, Agent: f.Agent,
		Device: f.Device, Viewer: principalOf(c).reader().Viewer(), Limit: 100, MaxInputBytes: 300}
	if cur := c.QueryParam("cursor"); cur != "" {
		if p.After, err = decodeCursor(cur); err != nil {
			return err
		}
	}
	calls, err := gemsql.CallList(ctx, s.pool, p)
	if err != nil {
		return err
	}
	next := ""
	if len(calls) == p.Limit {
		last := calls[len(calls)-1]
		next = encodeCursor(last.CreatedAt, last.ID)
	}
	return s.render(c, http.StatusOK, "calls.html", &studioPage{Title: "Calls", Nav: "calls", Data: map[string]any{
		"Calls": calls, "Filter": f, "Statuses": callStatuses, "Tools": s.toolNames(), "Next": next,
		"Paged": c.QueryParam("cursor") != ""}})
}

func (s *Server) studioCall(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	id, err := parseID(c, "call")
	if err != nil {
		return err
	}
	call, err := postgres.CallReadable(ctx, s.pool, principalOf(c).reader(), id)
	if err != nil {
		return err
	}
	data := map[string]any{"Call": call}
	receipt, err := gemsql.ReceiptGet(ctx, s.pool, id)
	switch {
	case err == nil:
		data["Receipt"] = receipt
	case !errors.Is(err, gemsql.ErrNotFound):
		return err
	}
	if approval, err := gemsql.ApprovalGet(ctx, s.pool, id); err == nil {
		data["Approval"] = approval
	} else if !errors.Is(err, gemsql.ErrNotFound) {
		return err
	}
	if call.JobID != 0 {
		attempts, err := gemsql.CallAttempts(ctx, s.pool, call.JobID)
		if err != nil {
			return err
		}
		data["Attempts"] = attempts
	}
	hits, err := gemsql.CallIdempotencyHits(ctx, s.pool, id, 50)
	if err != nil {
		return err
	}
	data["Hits"] = hits
	return s.render(c, http.StatusOK, "call.html", &studioPage{Title: "Call " + call.ToolName, Nav: "calls", Data: data})
}

func (s *Server) studioRuns(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	status := c.QueryParam("status")
	if status != "" && !slices.Contains(runStatuses, status) {
		return &brain.Error{Code: brain.EINVALID, Message: "status must be one of " + strings.Join(runStatuses, ", "), Details: map[string]any{"field": "status"}}
	}
	runs, err := postgres.RunList(ctx, s.pool, postgres.RunFilter{Status: status, Limit: 100}, principalOf(c).reader())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "runs.html", &studioPage{Title: "Runs", Nav: "runs",
		Data: map[string]any{"Runs": runs, "Status": status, "Statuses": runStatuses}})
}

var runStatuses = []string{"created", "queued", "planning", "planned", "enqueued", "waiting", "completed", "failed"}

func (s *Server) studioRun(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	id, err := parseID(c, "run")
	if err != nil {
		return err
	}
	p := principalOf(c)
	resp, err := s.runs.GetRun(ctx, id, p.reader())
	if err != nil {
		return err
	}
	run, err := postgres.RunGet(ctx, s.pool, id, false)
	if err != nil {
		return err
	}
	// The button shows to those the API lets approve: the plan's author, and callers holding approve.
	mayApprove := resp.Status == brain.RunPlanned && (run.RequestedBy == p.name || p.grants.Allows(registry.PermissionApprove))
	return s.render(c, http.StatusOK, "run.html", &studioPage{Title: "Run", Nav: "runs", Data: map[string]any{"Run": run, "Response": resp,
		"MayApprove": mayApprove}})
}

func (s *Server) studioApprovals(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	list, err := gemsql.ApprovalsPending(ctx, s.pool, 200)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "approvals.html", &studioPage{Title: "Approvals", Nav: "approvals", Data: map[string]any{"Approvals": list}})
}

func (s *Server) studioAgents(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	agents, err := postgres.AgentList(ctx, s.pool)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "agents.html", &studioPage{Title: "Agents", Nav: "agents", Data: map[string]any{"Agents": agents}})
}

func (s *Server) studioAgent(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	slug, user := c.Param("slug"), c.QueryParam("user_id")
	if len(user) > 200 {
		return brain.Errorf(brain.EINVALID, "user_id is at most 200 characters")
	}
	agent, err := postgres.AgentGet(ctx, s.pool, slug)
	if err != nil {
		return err
	}
	assignments, err := postgres.AssignmentList(ctx, s.pool, slug, user)
	if err != nil {
		return err
	}
	tools, err := postgres.AgentTools(ctx, s.pool, s.reg, slug, user)
	if err != nil {
		return err
	}
	skills, err := postgres.SkillList(ctx, s.pool)
	if err != nil {
		return err
	}
	assigned := map[string]bool{}
	for _, a := range assignments {
		assigned[a.Skill] = true
	}
	var unassigned []*brain.Skill
	for _, sk := range skills {
		if !assigned[sk.Slug] {
			unassigned = append(unassigned, sk)
		}
	}
	return s.render(c, http.StatusOK, "agent.html", &studioPage{Title: "Agent " + agent.Name, Nav: "agents", Data: map[string]any{
		"Agent": agent, "Assignments": assignments, "Tools": tools, "Unassigned": unassigned, "User": user}})
}

func (s *Server) studioSkills(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	skills, err := postgres.SkillList(ctx, s.pool)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "skills.html", &studioPage{Title: "Skills", Nav: "skills", Data: map[string]any{
		"Skills": skills, "Graph": skillGraph(skills, ""), "Tools": s.toolNames()}})
}

func (s *Server) studioSkill(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	skill, err := postgres.SkillGet(ctx, s.pool, c.Param("slug"))
	if err != nil {
		return err
	}
	skills, err := postgres.SkillList(ctx, s.pool)
	if err != nil {
		return err
	}
	var requiredBy []string
	for _, sk := range skills {
		if slices.Contains(sk.Requires, skill.Slug) {
			requiredBy = append(requiredBy, sk.Slug)
		}
	}
	return s.render(c, http.StatusOK, "skill.html", &studioPage{Title: "Skill " + skill.Name, Nav: "skills", Data: map[string]any{
		"Skill": skill, "RequiredBy": requiredBy, "Graph": skillGraph(skills, skill.Slug), "Tools": s.toolNames()}})
}

func (s *Server) studioChat(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	agents, err := postgres.AgentList(ctx, s.pool)
	if err != nil {
		return err
	}
	p := principalOf(c)
	agents = slices.DeleteFunc(agents, func(a *brain.Agent) bool { return !p.mayActAs(a.Slug) || !a.Enabled })
	chosen := c.QueryParam("agent")
	if chosen == "" && len(agents) > 0 {
		chosen = agents[0].Slug
		for _, a := range agents {
			if a.Slug == s.cfg.DefaultAgent {
				chosen = a.Slug
			}
		}
	}
	if chosen != "" && !slices.ContainsFunc(agents, func(a *brain.Agent) bool { return a.Slug == chosen }) {
		return brain.Errorf(brain.ENOTFOUND, "no enabled agent %q you may talk to", chosen)
	}
	return s.render(c, http.StatusOK, "chat.html", &studioPage{Title: "Chat", Nav: "chat", Data: map[string]any{
		"Agents": agents, "Agent": chosen, "LLM": s.llm}})
}

// studioToolRow is a tool as the registry page shows it.
type studioToolRow struct {
	Tool *registry.Tool
	// Runs says how a call of it ends up: "real" (a live executor has its handler and everything it
	// needs), "not_configured" (what is missing in Needs), "device" (served by a connected device), or
	// "no_handler".
	Runs  string
	Needs []string
	// Devices are the connected devices serving it.
	Devices []string
}

func (s *Server) toolRows(readiness map[string]gemsql.ToolReadiness, tools []*registry.Tool) []studioToolRow {
	rows := make([]studioToolRow, 0, len(tools))
	for _, t := range tools {
		row := studioToolRow{Tool: t, Devices: s.reg.ServedBy(t.Name)}
		r, handled := readiness[t.Name]
		switch {
		case handled && len(r.MissingEnv) == 0:
			row.Runs = "real"
		case handled:
			row.Runs, row.Needs = "not_configured", r.MissingEnv
		case len(row.Devices) > 0:
			row.Runs = "device"
		default:
			row.Runs = "no_handler"
		}
		rows = append(rows, row)
	}
	return rows
}

func (s *Server) studioRegistry(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	readiness, err := gemsql.ExecutorTools(ctx, s.pool)
	if err != nil {
		return err
	}
	q := strings.ToLower(c.QueryParam("q"))
	tools := slices.DeleteFunc(s.reg.Tools(), func(t *registry.Tool) bool {
		return q != "" && !strings.Contains(strings.ToLower(t.Name), q) && !strings.Contains(strings.ToLower(t.Description), q)
	})
	rows := s.toolRows(readiness, tools)
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Runs]++
	}
	return s.render(c, http.StatusOK, "registry.html", &studioPage{Title: "Registry", Nav: "registry", Data: map[string]any{
		"Rows": rows, "Counts": counts, "Version": s.reg.Version, "Q": c.QueryParam("q")}})
}

func (s *Server) studioTool(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	t, ok := s.reg.Tool(c.Param("tool"))
	if !ok {
		return brain.Errorf(brain.ENOTFOUND, "no tool %q in the registry", c.Param("tool"))
	}
	readiness, err := gemsql.ExecutorTools(ctx, s.pool)
	if err != nil {
		return err
	}
	row := s.toolRows(readiness, []*registry.Tool{t})[0]
	return s.render(c, http.StatusOK, "tool.html", &studioPage{Title: t.Name, Nav: "registry", Data: map[string]any{
		"Row": row, "Input": prettyJSON(t.InputSchema), "Output": prettyJSON(t.OutputSchema), "Required": readiness[t.Name].RequiredEnv}})
}

func (s *Server) studioExecutors(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	executors, err := gemsql.ExecutorList(ctx, s.pool)
	if err != nil {
		return err
	}
	devices, err := gemsql.DeviceList(ctx, s.pool)
	if err != nil {
		return err
	}
	running, err := gemsql.CallList(ctx, s.pool, gemsql.CallListParams{Status: registry.CallRunning, Viewer: principalOf(c).reader().Viewer(),
		Limit: 200, MaxInputBytes: 200})
	if err != nil {
		return err
	}
	byWorker := map[string][]*gemsql.Call{}
	for _, call := range running {
		key := call.Worker
		if call.RanOnDevice != "" {
			key = "device:" + call.RanOnDevice
		}
		byWorker[key] = append(byWorker[key], call)
	}
	return s.render(c, http.StatusOK, "executors.html", &studioPage{Title: "Executors and devices", Nav: "executors", Data: map[string]any{
		"Executors": executors, "Devices": devices, "Running": byWorker}})
}

func (s *Server) studioArchitecture(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	q, err := gemsql.QueueStatsGet(ctx, s.pool)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "architecture.html", &studioPage{Title: "Architecture", Nav: "architecture", Data: map[string]any{"Queue": q}})
}

// studioQueue answers the live numbers the architecture page polls.
func (s *Server) studioQueue(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	q, err := gemsql.QueueStatsGet(ctx, s.pool)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, q)
}

// graphNode is a skill placed in the dependency graph: column by depth of requirements, row in its column.
type graphNode struct {
	Slug     string
	X, Y     int
	Selected bool
}

type graphEdge struct{ X1, Y1, X2, Y2 int }

// skillGraphView is the skills' dependency graph, laid out for an SVG: a skill's column is the length of
// its longest chain of requirements, so every arrow points left, to what it requires.
type skillGraphView struct {
	Nodes         []graphNode
	Edges         []graphEdge
	Width, Height int
}

const (
	graphColW, graphRowH, graphNodeW, graphNodeH = 220, 44, 180, 28
)

func skillGraph(skills []*brain.Skill, selected string) *skillGraphView {
	requires := map[string][]string{}
	for _, sk := range skills {
		requires[sk.Slug] = sk.Requires
	}
	depth := map[string]int{}
	var depthOf func(slug string, seen map[string]bool) int
	depthOf = func(slug string, seen map[string]bool) int {
		if d, ok := depth[slug]; ok {
			return d
		}
		if seen[slug] { // a cycle (the API refuses them; a graph never loops forever)
			return 0
		}
		seen[slug] = true
		d := 0
		for _, r := range requires[slug] {
			if _, known := requires[r]; known {
				d = max(d, depthOf(r, seen)+1)
			}
		}
		depth[slug] = d
		return d
	}
	columns := map[int][]string{}
	maxCol := 0
	for _, sk := range skills {
		d := depthOf(sk.Slug, map[string]bool{})
		columns[d] = append(columns[d], sk.Slug)
		maxCol = max(maxCol, d)
	}
	g := &skillGraphView{}
	pos := map[string]graphNode{}
	maxRows := 0
	for col := 0; col <= maxCol; col++ {
		sort.Strings(columns[col])
		for row, slug := range columns[col] {
			n := graphNode{Slug: slug, X: 10 + col*graphColW, Y: 10 + row*graphRowH, Selected: slug == selected}
			pos[slug] = n
			g.Nodes = append(g.Nodes, n)
		}
		maxRows = max(maxRows, len(columns[col]))
	}
	for _, sk := range skills {
		from := pos[sk.Slug]
		for _, r := range sk.Requires {
			if to, ok := pos[r]; ok {
				g.Edges = append(g.Edges, graphEdge{X1: from.X, Y1: from.Y + graphNodeH/2, X2: to.X + graphNodeW, Y2: to.Y + graphNodeH/2})
			}
		}
	}
	g.Width, g.Height = 20+(maxCol+1)*graphColW, 20+max(maxRows, 1)*graphRowH
	return g
}

// prettyJSON indents a JSON document for a page. It leaves <, > and & as they are (the template escapes
// them for HTML), so an operator reads the text a tool got, not \u003c.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return indentJSON(v)
}

func indentJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// toolNames lists the registry's tool names, for the pages' pickers.
func (s *Server) toolNames() []string {
	tools := s.reg.Tools()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}
