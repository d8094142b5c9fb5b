package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
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

func TestSkillDependencies(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	base, crm, extra := uniq("base"), uniq("crm"), uniq("extra")
	var body map[string]any
	var e errorResponse
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": base, "name": "Base", "tools": []string{"os.health_check"}}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": crm, "name": "CRM", "tools": []string{"leads.create"}, "requires": []string{base}}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": extra, "name": "Extra", "tools": []string{"os.list_tasks"}, "requires": []string{crm}}, &body))

	// A cycle is refused when it is written, naming the loop.
	require.Equal(t, http.StatusConflict, a.do(http.MethodPatch, "/skills/"+base, map[string]any{"requires": []string{extra}}, &e))
	require.Contains(t, e.Errors[0].Message, "cycle")
	require.Contains(t, e.Errors[0].Message, base)
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPatch, "/skills/"+base, map[string]any{"requires": []string{uniq("ghost")}}, &e))

	// A skill is available only when what it requires is: without base, crm and extra give nothing.
	agent := uniq("agent")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "A"}, &body))
	for _, s := range []string{crm, extra} {
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+s, nil, &body))
	}
	var got struct {
		Tools []string `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent, nil, &got))
	require.Empty(t, got.Tools)
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+base, map[string]any{"enabled": false}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent, nil, &got))
	require.Empty(t, got.Tools, "a disabled requirement is not available either")
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+base, map[string]any{"enabled": true}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/"+agent, nil, &got))
	require.Equal(t, []string{"leads.create", "os.health_check", "os.list_tasks"}, got.Tools)
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

// TestToolExport exports every registry tool: names map back exactly, every strict schema obeys strict
// mode's rules, and arguments an LLM gives in strict mode (nulls for what it leaves out) become input the
// executor's schema accepts.
func TestToolExport(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	ts := llm.NewToolSet(reg.Tools())
	require.Equal(t, reg.Len(), ts.Len())

	strict := 0
	for _, def := range ts.Defs() {
		tool, ok := ts.Tool(def.Name)
		require.True(t, ok, def.Name)
		fn, _ := ts.Function(tool.Name)
		require.Equal(t, def.Name, fn, "the mapping is exact both ways")
		require.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, def.Name)
		require.Equal(t, registry.PortableName(tool.Name), def.Name, "the name /mcp lists it by")
		require.Equal(t, tool.Name, registry.DottedName(def.Name), "and it reads back by rule")
		if !def.Strict {
			t.Logf("%s is exported without strict mode (its schema has a free-form object or a map)", tool.Name)
			continue
		}
		strict++
		require.Empty(t, llm.StrictProblems(def.Parameters), tool.Name)

		// An LLM in strict mode sends every property; optional ones it does not use are null.
		args := map[string]any{}
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		for name := range schema.Properties {
			args[name] = nil
		}
		raw, _ := json.Marshal(args)
		input, err := llm.InputFromArguments(tool, string(raw))
		require.NoError(t, err)
		// Nulls the registry does not allow were dropped, so what is left to complain about is what is
		// missing (required, minProperties, ...), never a null of the wrong type.
		if err := tool.ValidateInput(input); err != nil {
			var ve *registry.ValidationError
			require.ErrorAs(t, err, &ve)
			for _, v := range ve.Violations {
				require.NotContains(t, []string{"type", "enum", "format", "const"}, v.Keyword, "%s: %s", tool.Name, err)
			}
		}
	}
	require.Greater(t, strict, reg.Len()*3/4, "most tools are strict")

	// Long or clashing names are refused when the registry loads, each named: no function name needs a hash.
	long := strings.Repeat("x", 70)
	_, err = registry.Parse([]byte(fmt.Sprintf(`{"version": "1", "tools": [
		{"name": "a.%s", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000},
		{"name": "a__b.c", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000},
		{"name": "a.b__c", "description": "d", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`, long)))
	require.ErrorContains(t, err, "tool a."+long+": field name is longer than model APIs accept")
	require.ErrorContains(t, err, `tool a__b.c: field name is exported as "a__b__c"`)
	require.ErrorContains(t, err, `tool a.b__c: field name is exported as "a__b__c"`)
}

// TestBuiltinSkills checks the skills the migrations install: every tool they name is in the registry, the
// office assistant gets the business tools through them, and built-in skills cannot be deleted.
func TestBuiltinSkills(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	reg := shared.brain.Registry

	var list struct {
		Skills []brain.Skill `json:"skills"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/skills", nil, &list))
	builtin := map[string]brain.Skill{}
	for _, s := range list.Skills {
		if s.IsBuiltin {
			builtin[s.Slug] = s
			require.NotEmpty(t, s.Instructions, s.Slug)
			for _, tool := range s.Tools {
				_, ok := reg.Tool(tool)
				require.True(t, ok, "built-in skill %s names %s, which the registry lacks", s.Slug, tool)
			}
		}
	}
	for _, slug := range []string{"memory", "lore", "sentiment", "crm", "inspections", "quoting", "jobs", "invoicing", "comms", "notes-tasks"} {
		require.Contains(t, builtin, slug)
	}
	require.Equal(t, []string{"inspections"}, builtin["quoting"].Requires)

	var got struct {
		Tools []string `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/agents/office-assistant", nil, &got))
	for _, tool := range []string{"leads.create", "inspection.submit", "quote.calculate_totals", "invoice.add_payment", "memory.recall", "lore.query"} {
		require.Contains(t, got.Tools, tool)
	}
	require.NotContains(t, got.Tools, "image.generate", "the assistant does not generate images")

	var e errorResponse
	require.Equal(t, http.StatusConflict, a.do(http.MethodDelete, "/skills/memory", nil, &e))
	require.Contains(t, e.Errors[0].Message, "built in")
}
