package mcpserver

import (
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestMCPRenderSkillFile: a stored skill renders as a SKILL.md whose front matter reads back (as YAML, and as
// the brain's import reads it) exactly as the listing shows it, whatever its text holds.
func TestMCPRenderSkillFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		skill brain.Skill
	}{
		{"built-in", brain.Skill{Slug: "notes-tasks", Name: "Notes and tasks", Category: "office",
			Description:  "Save and search notes; create, update, defer, complete and list tasks.",
			Instructions: "Keep the user's notes.\n\n- Search notes first.", Tools: []string{"os.create_note", "os.search_notes"}}},
		{"no description", brain.Skill{Slug: "bare", Name: "Bare skill", Category: "general"}},
		{"text YAML would misread", brain.Skill{Slug: "tricky", Name: "Tricky", Category: "imported",
			Description: "yes: it has a colon # and a hash\nand a second line", Instructions: "---\nnot front matter\n---",
			Tools: []string{"os.create_task"}, Requires: []string{"notes-tasks"},
			Metadata: map[string]any{"format": "agent-skills", "source": "/home/someone/skills/tricky/SKILL.md", "license": "Apache-2.0",
				"allowed-tools": "os.create_task", "version": "1.0", "owner": "true", "quote": `say "hi"`, "emoji": "roofs 🏠", "number": 3.0,
				"gem-tools": "stale.value"}}},
		{"long description", brain.Skill{Slug: "long", Name: "Long", Category: "general", Description: strings.Repeat("é", 1500)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			content, front := RenderSkillFile(&tt.skill)
			again, _ := RenderSkillFile(&tt.skill)
			require.Equal(t, content, again, "deterministic")

			text := string(content)
			require.True(t, strings.HasPrefix(text, "---\n"))
			end := strings.Index(text[4:], "\n---\n")
			require.Positive(t, end)
			var parsed map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(text[4:4+end]), &parsed), text)
			require.Equal(t, front, parsed, text)

			require.Equal(t, tt.skill.Slug, front["name"])
			require.NotEmpty(t, front["description"])
			require.LessOrEqual(t, len([]rune(front["description"].(string))), skillDescriptionMax)
			require.NotContains(t, text, "source", "GEM's bookkeeping is not served")

			sf, err := brain.ParseSkillFile(content)
			require.NoError(t, err, text)
			require.Equal(t, tt.skill.Slug, sf.Name)
			require.Equal(t, strings.TrimSpace(tt.skill.Instructions), sf.Body)
			require.Equal(t, strings.Join(tt.skill.Tools, " "), sf.Metadata["gem-tools"])
			require.Equal(t, strings.Join(tt.skill.Requires, " "), sf.Metadata["gem-requires"])
			require.Equal(t, tt.skill.Category, sf.Metadata["gem-category"])
		})
	}
}

// TestMCPSkillURI: file paths round-trip through their URIs, spaces and all.
func TestMCPSkillURI(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"SKILL.md", "references/forms.md", "assets/a b.png", "scripts/fill_100%.py"} {
		uri := skillURI("pdf-notes", path)
		slug, got, ok := parseSkillURI(uri)
		require.True(t, ok, uri)
		require.Equal(t, "pdf-notes", slug)
		require.Equal(t, path, got)
	}
	for _, uri := range []string{"file:///x/SKILL.md", "skill://", "skill://name", "skill:///SKILL.md", "skill://x/%zz"} {
		_, _, ok := parseSkillURI(uri)
		require.False(t, ok, uri)
	}
}
