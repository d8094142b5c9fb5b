package chat

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gemhq/gem/brain"
	"github.com/stretchr/testify/require"
)

func TestWriteSkills(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Long instructions. ", 100)
	var b strings.Builder
	writeSkills(&b, []brain.AgentSkill{
		{Slug: "notes-tasks", Name: "Notes & tasks", Description: "Tasks.", Instructions: "Keep tasks short."},
		{Slug: "empty", Name: "empty", Description: "Tools only."},
		{Slug: "pdf", Name: "pdf", Description: "Reads PDFs.\n  Use for any .pdf file.", Instructions: long},
		{Slug: "forms", Name: "Forms", Description: "Fills forms.", Instructions: "Short, but with files.", Files: 2},
		{Slug: "pinned", Name: "pinned", Description: "Pinned.", Instructions: long, Files: 1, Disclosure: brain.SkillDisclosureAlways},
	})
	require.Equal(t, "\n\n# Skills\n"+
		"\n## Notes & tasks\n\nKeep tasks short.\n"+
		"\n## pinned\n\n"+strings.TrimSpace(long)+"\n"+
		"\nThis skill has 1 more files: load_skill(\"pinned\") lists them, read_skill_file reads one.\n"+
		"\n\n# Skills to load\n\n"+loadSkillGuide+"\n"+
		"\n- pdf: Reads PDFs. Use for any .pdf file."+
		"\n- forms (Forms): Fills forms.", b.String())

	// Only always-on skills: exactly the prompt every skill used to get.
	b.Reset()
	writeSkills(&b, []brain.AgentSkill{{Slug: "a", Name: "A", Instructions: "Do a."}, {Slug: "b", Name: "B", Instructions: " Do b. "}})
	require.Equal(t, "\n\n# Skills\n\n## A\n\nDo a.\n\n## B\n\nDo b.\n", b.String())
}

func TestTextPage(t *testing.T) {
	t.Parallel()
	short := "one line\n"
	part, next := textPage(short, 0)
	require.Equal(t, short, part)
	require.Zero(t, next)

	// Parts end after a line, never inside a character, and cover the text exactly once.
	text := strings.Repeat("ligne numéro un, avec des accents é è à\n", 3000) + strings.Repeat("é", skillPage)
	var whole strings.Builder
	offset, parts := 0, 0
	for {
		part, next := textPage(text, offset)
		require.True(t, utf8.ValidString(part))
		require.LessOrEqual(t, len(part), skillPage)
		whole.WriteString(part)
		parts++
		if next == 0 {
			break
		}
		if strings.Contains(part, "\n") && !strings.HasPrefix(text[next:], "é") {
			require.True(t, strings.HasSuffix(part, "\n"), "part %d ends after a line", parts)
		}
		offset = next
	}
	require.Equal(t, text, whole.String())
	require.Greater(t, parts, 4)

	// An offset inside a character moves to the next one.
	part, _ = textPage("éa", 1)
	require.Equal(t, "a", part)
}
