package postgres_test

import (
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// TestBuiltinSkills checks the skills the migrations install: every tool they name is in the registry, the
// office assistant gets the business tools through them, and built-in skills cannot be deleted.
func TestBuiltinSkills(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, _ := sqltest.NewDB(t)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)

	skills, err := postgres.SkillList(ctx, pool)
	require.NoError(t, err)
	builtin := map[string]*brain.Skill{}
	for _, s := range skills {
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

	tools, err := postgres.AgentTools(ctx, pool, reg, "office-assistant", "")
	require.NoError(t, err)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	for _, tool := range []string{"leads.create", "inspection.submit", "quote.calculate_totals", "invoice.add_payment", "memory.recall", "lore.query"} {
		require.Contains(t, names, tool)
	}
	require.NotContains(t, names, "image.generate", "the assistant does not generate images")

	err = postgres.SkillDelete(ctx, pool, "memory")
	require.Equal(t, brain.ECONFLICT, brain.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "built in")
}

// TestSkillDependencies: a skill requires others; a cycle or a skill that does not exist is refused when it is
// written, and an agent has a skill's tools only while what it requires is assigned and enabled.
func TestSkillDependencies(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, _ := sqltest.NewDB(t)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	// save checks a skill's params and saves it, as POST and PATCH /skills do.
	save := func(slug string, params *brain.SkillParams, mode brain.SkillSaveMode) error {
		slug, err := params.Check(reg, slug, mode)
		if err != nil {
			return err
		}
		_, err = postgres.SkillSave(ctx, pool, slug, params, mode)
		return err
	}
	named := func(slug, name string, tools []string, requires ...string) *brain.SkillParams {
		return &brain.SkillParams{Slug: &slug, Name: &name, Tools: tools, Requires: requires}
	}
	base, crm, extra := "dep-base", "dep-crm", "dep-extra"
	require.NoError(t, save("", named(base, "Base", []string{"os.health_check"}), brain.SkillCreate))
	require.NoError(t, save("", named(crm, "CRM", []string{"leads.create"}, base), brain.SkillCreate))
	require.NoError(t, save("", named(extra, "Extra", []string{"os.list_tasks"}, crm), brain.SkillCreate))

	// A cycle is refused when it is written, naming the loop.
	err = save(base, &brain.SkillParams{Requires: []string{extra}}, brain.SkillPatch)
	require.Equal(t, brain.ECONFLICT, brain.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "cycle")
	require.Contains(t, err.Error(), base)
	err = save(base, &brain.SkillParams{Requires: []string{"ghost"}}, brain.SkillPatch)
	require.Equal(t, brain.EINVALID, brain.ErrorCode(err), "%v", err)

	// A skill is available only when what it requires is: without base, crm and extra give nothing.
	agent, name := "agent", "A"
	_, err = postgres.AgentCreate(ctx, pool, &brain.AgentParams{Slug: &agent, Name: &name})
	require.NoError(t, err)
	for _, s := range []string{crm, extra} {
		require.NoError(t, postgres.Assign(ctx, pool, agent, s, &brain.AssignmentParams{}))
	}
	tools := func() []string {
		got, err := postgres.AgentTools(ctx, pool, reg, agent, "")
		require.NoError(t, err)
		names := []string{}
		for _, tool := range got {
			names = append(names, tool.Name)
		}
		return names
	}
	require.Empty(t, tools())
	enabled := false
	require.NoError(t, postgres.Assign(ctx, pool, agent, base, &brain.AssignmentParams{Enabled: &enabled}))
	require.Empty(t, tools(), "a disabled requirement is not available either")
	enabled = true
	require.NoError(t, postgres.Assign(ctx, pool, agent, base, &brain.AssignmentParams{Enabled: &enabled}))
	require.Equal(t, []string{"leads.create", "os.health_check", "os.list_tasks"}, tools())
}
