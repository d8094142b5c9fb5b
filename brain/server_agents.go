package brain

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (s *Server) agentRoutes(auth echo.MiddlewareFunc) {
	e := s.echo
	e.GET("/agents", s.listAgents, auth)
	e.POST("/agents", s.createAgent, auth)
	e.GET("/agents/:slug", s.getAgent, auth)
	e.PATCH("/agents/:slug", s.updateAgent, auth)
	e.DELETE("/agents/:slug", s.deleteAgent, auth)
	e.GET("/agents/:slug/skills", s.listAssignments, auth)
	e.PUT("/agents/:slug/skills/:skill", s.assignSkill, auth)
	e.DELETE("/agents/:slug/skills/:skill", s.unassignSkill, auth)
	e.POST("/agents/:slug/chat", s.chatWithAgent, auth)
	e.GET("/skills", s.listSkills, auth)
	e.POST("/skills", s.createSkill, auth)
	e.POST("/skills/import", s.importSkill, auth)
	e.GET("/skills/:slug", s.getSkill, auth)
	e.PUT("/skills/:slug", s.upsertSkill, auth)
	e.PATCH("/skills/:slug", s.patchSkill, auth)
	e.DELETE("/skills/:slug", s.deleteSkill, auth)
}

func ok(c echo.Context, status int, body map[string]any) error {
	body["ok"] = true
	return c.JSON(status, body)
}

func (s *Server) listAgents(c echo.Context) error {
	agents, err := s.agents.AgentList(c.Request().Context())
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"agents": agents})
}

func (s *Server) createAgent(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	a, err := s.agents.AgentCreate(c.Request().Context(), body)
	if err != nil {
		return err
	}
	return ok(c, http.StatusCreated, map[string]any{"agent": a})
}

// getAgent returns the agent, its skills and the tools it may call (for ?user_id=, default no user).
func (s *Server) getAgent(c echo.Context) error {
	ctx := c.Request().Context()
	slug, user := c.Param("slug"), c.QueryParam("user_id")
	a, err := s.agents.AgentGet(ctx, s.pool, slug)
	if err != nil {
		return err
	}
	skills, err := s.agents.Assignments(ctx, slug, user)
	if err != nil {
		return err
	}
	tools, err := s.agents.AgentTools(ctx, s.pool, slug, user)
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
	body, err := readBody(c)
	if err != nil {
		return err
	}
	a, err := s.agents.AgentUpdate(c.Request().Context(), c.Param("slug"), body)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"agent": a})
}

func (s *Server) deleteAgent(c echo.Context) error {
	if err := s.agents.AgentDelete(c.Request().Context(), c.Param("slug")); err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"deleted": c.Param("slug")})
}

func (s *Server) listAssignments(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.agents.AgentGet(ctx, s.pool, c.Param("slug")); err != nil {
		return err
	}
	skills, err := s.agents.Assignments(ctx, c.Param("slug"), c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skills": skills})
}

func (s *Server) assignSkill(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.agents.Assign(ctx, c.Param("slug"), c.Param("skill"), body); err != nil {
		return err
	}
	skills, err := s.agents.Assignments(ctx, c.Param("slug"), c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skills": skills})
}

func (s *Server) unassignSkill(c echo.Context) error {
	if err := s.agents.Unassign(c.Request().Context(), c.Param("slug"), c.Param("skill")); err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"removed": c.Param("skill")})
}

func (s *Server) chatWithAgent(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	resp, err := s.chat.Chat(c.Request().Context(), c.Param("slug"), body, requester(c))
	if err != nil {
		if resp != nil {
			return c.JSON(HTTPStatus(ErrorCode(err)), resp)
		}
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

func (s *Server) listSkills(c echo.Context) error {
	skills, err := s.agents.SkillList(c.Request().Context())
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skills": skills})
}

func (s *Server) getSkill(c echo.Context) error {
	sk, err := s.agents.SkillGet(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skill": sk})
}

func (s *Server) saveSkill(c echo.Context, mode string, status int) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	sk, err := s.agents.SkillSave(c.Request().Context(), c.Param("slug"), body, mode)
	if err != nil {
		return err
	}
	return ok(c, status, map[string]any{"skill": sk})
}

func (s *Server) createSkill(c echo.Context) error {
	return s.saveSkill(c, "create", http.StatusCreated)
}
func (s *Server) upsertSkill(c echo.Context) error { return s.saveSkill(c, "upsert", http.StatusOK) }
func (s *Server) patchSkill(c echo.Context) error  { return s.saveSkill(c, "patch", http.StatusOK) }

func (s *Server) deleteSkill(c echo.Context) error {
	if err := s.agents.SkillDelete(c.Request().Context(), c.Param("slug")); err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"deleted": c.Param("slug")})
}

func (s *Server) importSkill(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	res, err := s.agents.SkillImport(c.Request().Context(), body)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"skill": res.Skill, "notes": res.Notes})
}
