package api

import (
	"encoding/json"
	"mime"
	"net/http"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/labstack/echo/v4"
)

func (s *Server) listAgents(c echo.Context) error {
	agents, err := postgres.AgentList(c.Request().Context(), s.pool)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"agents": agents})
}

// decodeAgent decodes an agent's params, noting whether model and temperature were named (null clears them).
func decodeAgent(c echo.Context) (*brain.AgentParams, error) {
	params, body, err := decodeBody[brain.AgentParams](c, agentSchema, "")
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	_, params.ModelSet = raw["model"]
	_, params.TemperatureSet = raw["temperature"]
	return params, nil
}

func (s *Server) createAgent(c echo.Context) error {
	params, err := decodeAgent(c)
	if err != nil {
		return err
	}
	a, err := postgres.AgentCreate(c.Request().Context(), s.pool, params)
	if err != nil {
		return err
	}
	return ok(c, http.StatusCreated, map[string]any{"agent": a})
}

// getAgent returns the agent, its skills and the tools it may call (for ?user_id=, default no user).
func (s *Server) getAgent(c echo.Context) error {
	ctx := c.Request().Context()
	slug, user := c.Param("slug"), c.QueryParam("user_id")
	a, err := postgres.AgentGet(ctx, s.pool, slug)
	if err != nil {
		return err
	}
	skills, err := postgres.AssignmentList(ctx, s.pool, slug, user)
	if err != nil {
		return err
	}
	tools, err := postgres.AgentTools(ctx, s.pool, s.reg, slug, user)
	if err != nil {
		return err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return ok(c, http.StatusOK, map[string]any{"agent": a, "skills": skills, "tools": names})
}

func (s *Server) updateAgent(c echo.Context) error {
	params, err := decodeAgent(c)
	if err != nil {
		return err
	}
	a, err := postgres.AgentUpdate(c.Request().Context(), s.pool, c.Param("slug"), params)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"agent": a})
}

func (s *Server) deleteAgent(c echo.Context) error {
	if err := postgres.AgentDelete(c.Request().Context(), s.pool, c.Param("slug")); err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"deleted": c.Param("slug")})
}

func (s *Server) listAssignments(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := postgres.AgentGet(ctx, s.pool, c.Param("slug")); err != nil {
		return err
	}
	skills, err := postgres.AssignmentList(ctx, s.pool, c.Param("slug"), c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skills": skills})
}

func (s *Server) assignSkill(c echo.Context) error {
	params, _, err := decodeBody[brain.AssignmentParams](c, assignmentSchema, "{}")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := postgres.Assign(ctx, s.pool, c.Param("slug"), c.Param("skill"), params); err != nil {
		return err
	}
	skills, err := postgres.AssignmentList(ctx, s.pool, c.Param("slug"), c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skills": skills})
}

func (s *Server) unassignSkill(c echo.Context) error {
	if err := postgres.Unassign(c.Request().Context(), s.pool, c.Param("slug"), c.Param("skill")); err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"removed": c.Param("skill")})
}

func (s *Server) chatWithAgent(c echo.Context) error {
	if err := principalOf(c).actAs(c.Param("slug")); err != nil {
		return err
	}
	params, _, err := decodeBody[brain.ChatParams](c, chatSchema, "")
	if err != nil {
		return err
	}
	if params.Fingerprint, err = requestKey(c, &params.IdempotencyKey, &params.Async, params, c.Param("slug")); err != nil {
		return err
	}
	respond := func(resp *brain.ChatResponse, err error) error {
		if err != nil {
			if resp != nil {
				setRetryAfter(c, brain.AsError(err))
				return c.JSON(HTTPStatus(brain.ErrorCode(err)), resp)
			}
			return err
		}
		return c.JSON(chatStatus(resp), resp)
	}
	if async, stream := wantsAsync(c, params.Async), wantsStream(c); async || stream {
		return s.chatLive(c, c.Param("slug"), params, stream && !async, respond, func(resp *brain.ChatResponse) any { return resp })
	}
	resp, err := s.chat.Chat(c.Request().Context(), c.Param("slug"), params, requester(c))
	return respond(resp, err)
}

// chatStatus is a chat answer's HTTP status: 202 for a turn still queued or running (a repeated request's,
// a queued one's; its run_id says where to look); for a turn that ended, the status its first answer had —
// 422 when the LLM refused it, 503 when the LLM or the database was unavailable — else 200.
func chatStatus(resp *brain.ChatResponse) int {
	switch resp.Status {
	case brain.RunQueued, brain.RunPlanning, brain.RunWaiting:
		return http.StatusAccepted
	case brain.RunFailed:
		for _, e := range resp.Errors {
			if e.Code == brain.ELLMREJECTED || e.Code == brain.EUNAVAILABLE {
				return HTTPStatus(e.Code)
			}
		}
	}
	return http.StatusOK
}

func (s *Server) listSkills(c echo.Context) error {
	skills, err := postgres.SkillList(c.Request().Context(), s.pool)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skills": skills})
}

func (s *Server) getSkill(c echo.Context) error {
	sk, err := postgres.SkillGet(c.Request().Context(), s.pool, c.Param("slug"))
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skill": sk})
}

// decodeSkill reads and checks a skill's body (its tools against the registry): everything a save does
// before the database.
func (s *Server) decodeSkill(c echo.Context, mode brain.SkillSaveMode) (string, *brain.SkillParams, error) {
	params, _, err := decodeBody[brain.SkillParams](c, skillSchema, "")
	if err != nil {
		return "", nil, err
	}
	slug, err := params.Check(s.reg, c.Param("slug"), mode)
	return slug, params, err
}

func (s *Server) saveSkill(c echo.Context, mode brain.SkillSaveMode, status int) error {
	slug, params, err := s.decodeSkill(c, mode)
	if err != nil {
		return err
	}
	sk, err := postgres.SkillSave(c.Request().Context(), s.pool, slug, params, mode)
	if err != nil {
		return err
	}
	return ok(c, status, map[string]any{"skill": sk})
}

func (s *Server) createSkill(c echo.Context) error {
	return s.saveSkill(c, brain.SkillCreate, http.StatusCreated)
}
func (s *Server) upsertSkill(c echo.Context) error {
	return s.saveSkill(c, brain.SkillUpsert, http.StatusOK)
}
func (s *Server) patchSkill(c echo.Context) error {
	return s.saveSkill(c, brain.SkillPatch, http.StatusOK)
}

func (s *Server) deleteSkill(c echo.Context) error {
	if err := postgres.SkillDelete(c.Request().Context(), s.pool, c.Param("slug")); err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"deleted": c.Param("slug")})
}

// importSkill creates or replaces a skill from a skill folder: a JSON body (SKILL.md as content, the other
// files in files) or a zip archive (Content-Type application/zip, ?source= naming it). The skill it makes
// is held to the same schema as one sent to POST /skills; its files replace the skill's stored files.
func (s *Server) importSkill(c echo.Context) error {
	imp, err := s.decodeImport(c)
	if err != nil {
		return err
	}
	slug, params, files, notes := imp.slug, imp.params, imp.files, imp.notes
	ctx := c.Request().Context()
	sk, err := postgres.SkillImport(ctx, s.pool, slug, params, files)
	if err != nil {
		return err
	}
	stored, err := postgres.SkillResources(ctx, s.pool, slug)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skill": sk, "notes": notes, "files": stored})
}

// skillImport is an import request, read and checked.
type skillImport struct {
	slug   string
	params *brain.SkillParams
	files  []brain.SkillResource
	notes  []string
}

// decodeImport reads an import request and makes the skill it holds, checked as a skill sent to POST
// /skills is: everything an import does before the database.
func (s *Server) decodeImport(c echo.Context) (*skillImport, error) {
	in, err := decodeSkillImport(c)
	if err != nil {
		return nil, err
	}
	files, err := in.Folder()
	if err != nil {
		return nil, err
	}
	params, notes, err := in.SkillParams(s.reg)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(params)
	if err := skillSchema.Validate(raw); err != nil {
		return nil, invalidRequest(err)
	}
	slug, err := params.Check(s.reg, *params.Slug, brain.SkillUpsert)
	if err != nil {
		return nil, err
	}
	return &skillImport{slug: slug, params: params, files: files, notes: notes}, nil
}

// decodeSkillImport reads an import request: a zip archive of the folder, or the JSON body.
func decodeSkillImport(c echo.Context) (*brain.SkillImportParams, error) {
	mediaType, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if mediaType != "application/zip" {
		in, _, err := decodeBody[brain.SkillImportParams](c, skillImportSchema, "")
		return in, err
	}
	source := c.QueryParam("source")
	if len(source) > 1000 {
		return nil, brain.Errorf(brain.EINVALID, "source is longer than 1000 characters")
	}
	body, err := readBody(c)
	if err != nil {
		return nil, err
	}
	in, err := brain.SkillImportFromZip(body, source)
	if err != nil {
		return nil, err
	}
	if !brain.IsText([]byte(in.Content)) {
		return nil, brain.Errorf(brain.EINVALID, "SKILL.md is not UTF-8 text (or holds a NUL byte)")
	}
	return in, nil
}
