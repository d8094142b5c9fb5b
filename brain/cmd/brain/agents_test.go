package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

const fakeKey = "sk-fake-0123456789"

// llmBrain starts a brain on the shared database whose LLM is a fake.
func llmBrain(t *testing.T, provider string, fake *llmfake.Server, chatCfg chat.Config) *testAPI {
	t.Helper()
	return llmBrainWith(t, provider, fake, func(c *Config) { c.Chat = chatCfg })
}

// uniq makes a slug unique to the test (tests share one database).
func uniq(prefix string) string {
	return prefix + "-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
}

// agentWithSkills creates an agent and a skill per entry of skills (slug → tools), all assigned.
func agentWithSkills(t *testing.T, a *testAPI, maxIterations int, skills map[string][]string) string {
	t.Helper()
	slug := uniq("agent")
	var resp map[string]any
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{
		"slug": slug, "name": "Test agent", "instructions": "You help a roofing business.", "max_tool_iterations": maxIterations}, &resp), "%v", resp)
	for skill, tools := range skills {
		require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{
			"slug": skill, "name": skill, "description": "test skill", "instructions": "Use " + skill + " well.", "tools": tools}, &resp), "%v", resp)
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+slug+"/skills/"+skill, nil, &resp), "%v", resp)
	}
	return slug
}

func chatWith(t *testing.T, a *testAPI, agent, message, session string) (*brain.ChatResponse, int) {
	t.Helper()
	body := map[string]any{"message": message, "user_id": "user-1"}
	if session != "" {
		body["session_id"] = session
	}
	var resp brain.ChatResponse
	status := a.do(http.MethodPost, "/agents/"+agent+"/chat", body, &resp)
	return &resp, status
}

func resultOf(t require.TestingT, m llmfake.Message) map[string]any {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(m.Content), &v), m.Content)
	return v
}

func TestChatWithoutLLM(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	agent := agentWithSkills(t, a, 3, nil)
	var e errorResponse
	require.Equal(t, http.StatusServiceUnavailable, a.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hi", "user_id": "u"}, &e))
	require.Equal(t, brain.ENOLLM, e.Errors[0].Code)
	require.Contains(t, e.Errors[0].Message, "GEM_LLM_MODEL")

	require.Equal(t, http.StatusNotFound, a.do(http.MethodPost, "/agents/"+uniq("nobody")+"/chat", map[string]any{"message": "hi", "user_id": "u"}, &e))
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"message": "hi"}, &e), "user_id is required")
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/agents/"+agent+"/chat", map[string]any{"resume": true, "user_id": "user-1"}, &e),
		"a resume names its session")
}

func TestAgentsAndSkillsCRUD(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	var body map[string]any
	var e errorResponse

	// Validation: every problem of an agent is reported; a skill naming unknown tools is refused with them.
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/agents", map[string]any{"slug": "Bad Slug", "name": "", "temperature": 3}, &e))
	require.Len(t, e.Errors[0].Details.(map[string]any)["violations"], 3)
	skill := uniq("crm")
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "CRM",
		"tools": []string{"leads.create", "leads.teleport", "crm.magic"}}, &e))
	require.Contains(t, e.Errors[0].Message, "leads.teleport, crm.magic")

	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "CRM", "tools": []string{"leads.create"}}, &body))
	require.Equal(t, http.StatusConflict, a.do(http.MethodPost, "/skills", map[string]any{"slug": skill, "name": "again"}, &e))

	agent := uniq("sales")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "Sales", "model": "gpt-x", "temperature": 0.2}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+skill, map[string]any{"priority": 5, "allowed_users": []string{"ann"}}, &body))
	require.Equal(t, http.StatusNotFound, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+uniq("nope"), nil, &e))

	var got struct {
		Agent  brain.Agent        `json:"agent"`
		Skills []brain.Assignment `json:"skills"`
		Tools  []string           `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent+"?user_id=ann", nil, &got))
	require.Equal(t, "gpt-x", *got.Agent.Model)
	require.Equal(t, []string{"leads.create"}, got.Tools)
	require.True(t, got.Skills[0].Available)
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent+"?user_id=bob", nil, &got))
	require.Empty(t, got.Tools, "bob is not an allowed user")

	var sk struct {
		Skill brain.Skill `json:"skill"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/skills/"+skill, nil, &sk))
	require.Equal(t, 1, sk.Skill.AgentCount)

	require.Equal(t, http.StatusOK, a.do(http.MethodPatch, "/agents/"+agent, map[string]any{"enabled": false, "model": nil}, &got))
	require.False(t, got.Agent.Enabled)
	require.Nil(t, got.Agent.Model)
	require.Equal(t, http.StatusOK, a.do(http.MethodDelete, "/agents/"+agent+"/skills/"+skill, nil, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodDelete, "/agents/"+agent, nil, &body))
	require.Equal(t, http.StatusNotFound, a.do(http.MethodGet, "/agents/"+agent, nil, &e))
	require.Equal(t, http.StatusOK, a.do(http.MethodDelete, "/skills/"+skill, nil, &body))
}

func TestSkillImport(t *testing.T) {
	t.Parallel()
	a := newAPI(t)

	content, err := os.ReadFile("testdata/skills/quoting-helper/SKILL.md")
	require.NoError(t, err)
	var body struct {
		Skill brain.Skill `json:"skill"`
		Notes []string    `json:"notes"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "testdata/skills/quoting-helper/SKILL.md", "content": string(content)}, &body))
	require.Equal(t, "quoting-helper", body.Skill.Slug)
	require.Equal(t, "Helps turn inspections into quotes. Use when the user asks to price a job or draft a quote.", body.Skill.Description)
	require.True(t, strings.HasPrefix(body.Skill.Instructions, "# Quoting"))
	// gem-tools lists three tools; allowed-tools narrows them to two and names one the registry lacks.
	require.Equal(t, []string{"quote.create_from_inspection", "quote.calculate_totals"}, body.Skill.Tools)
	require.Equal(t, "quoting", body.Skill.Category)
	require.ElementsMatch(t, []string{
		"quote.mark_sent: left out, allowed-tools does not list it",
		"quote.teleport: left out, allowed-tools does not list it",
	}, body.Notes)
	require.Equal(t, "Apache-2.0", body.Skill.Metadata["license"])

	// A skill written for another product: its allowed-tools name nothing in the registry, so it gives no tools.
	content, err = os.ReadFile("testdata/skills/pdf-notes/SKILL.md")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "pdf-notes", "content": string(content)}, &body))
	require.Empty(t, body.Skill.Tools)
	require.Contains(t, body.Notes, "Read: left out, not a tool in the registry")

	var e errorResponse
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "x", "content": "no front matter"}, &e))
	require.Contains(t, e.Errors[0].Message, "front matter")
}
