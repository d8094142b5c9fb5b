package brain

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckSkillPath(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path, problem string
	}{
		{"references/forms.md", ""},
		{"scripts/fill form.py", ""},
		{".hidden/notes.txt", ""},
		{"a/b/c/d.tar.gz", ""},
		{"", "empty"},
		{"../other/SKILL.md", `".." segment`},
		{"references/../../x", `".." segment`},
		{"./x.md", `"." segment`},
		{"/etc/passwd", "absolute"},
		{`refs\x.md`, "backslash"},
		{"a//b", "empty segment"},
		{"refs/", "empty segment"},
		{"refs/naïve.md", "may hold only"},
		{"refs/x-y z.md", ""},
		{"refs/-x.md", "after its first character"},
		{" x.md", "may hold only"},
		{strings.Repeat("a", 401), "longer than 400"},
	} {
		err := CheckSkillPath(tt.path)
		if tt.problem == "" {
			require.NoError(t, err, tt.path)
			continue
		}
		require.Error(t, err, tt.path)
		require.Contains(t, err.Error(), tt.problem, tt.path)
	}
}

func TestSkillImportFolder(t *testing.T) {
	t.Parallel()
	text := func(s string) *string { return &s }
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00"))

	files, err := (&SkillImportParams{Files: []SkillImportFile{
		{Path: "scripts/run.py", Content: text("print('hi')")},
		{Path: "assets/logo.png", ContentBase64: &png},
		{Path: "LICENSE", Content: text("terms")},
		{Path: "data.bin", ContentBase64: &png},
	}}).Folder()
	require.NoError(t, err)
	got := map[string]string{}
	for _, f := range files {
		got[f.Path] = f.MediaType + " " + SkillFileKind(f.Path, f.MediaType)
	}
	require.Equal(t, map[string]string{
		"scripts/run.py":  "text/x-python script",
		"assets/logo.png": "image/png asset",
		"LICENSE":         "text/plain reference",
		"data.bin":        "application/octet-stream asset",
	}, got)
	require.Equal(t, "LICENSE", files[0].Path, "sorted by path")

	for _, tt := range []struct {
		name    string
		files   []SkillImportFile
		problem string
	}{
		{"SKILL.md again", []SkillImportFile{{Path: "SKILL.md", Content: text("x")}}, "SKILL.md is the skill itself"},
		{"twice", []SkillImportFile{{Path: "a.md", Content: text("x")}, {Path: "a.md", Content: text("y")}}, `"a.md" is in the folder twice`},
		{"both contents", []SkillImportFile{{Path: "a.md", Content: text("x"), ContentBase64: &png}}, "exactly one of content"},
		{"no content", []SkillImportFile{{Path: "a.md"}}, "exactly one of content"},
		{"bad base64", []SkillImportFile{{Path: "a.png", ContentBase64: text("%%%")}}, "not standard base64"},
		{"escape", []SkillImportFile{{Path: "../a.md", Content: text("x")}}, `files[0]: path "../a.md"`},
		{"too large", []SkillImportFile{{Path: "big.txt", Content: text(strings.Repeat("x", SkillFileSizeMax+1))}}, "at most 8388608"},
		{"too many", make([]SkillImportFile, SkillFilesMax+1), "at most 500 are imported"},
	} {
		_, err := (&SkillImportParams{Files: tt.files}).Folder()
		require.Error(t, err, tt.name)
		require.Equal(t, EINVALID, ErrorCode(err), tt.name)
		require.Contains(t, err.Error(), tt.problem, tt.name)
	}

	var many []SkillImportFile
	for i := range 5 {
		many = append(many, SkillImportFile{Path: strings.Repeat("f", i+1), Content: text(strings.Repeat("x", SkillFileSizeMax))})
	}
	_, err = (&SkillImportParams{Files: many}).Folder()
	require.ErrorContains(t, err, "more than 33554432 bytes together")
}

// zipOf builds a zip archive of name → content.
func zipOf(t *testing.T, entries [][2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func TestSkillImportFromZip(t *testing.T) {
	t.Parallel()
	skill := "---\nname: zipped\ndescription: d\n---\nbody"

	// SKILL.md in one top folder, with macOS litter beside it.
	p, err := SkillImportFromZip(zipOf(t, [][2]string{
		{"zipped/SKILL.md", skill}, {"zipped/references/a.md", "# A"}, {"zipped/assets/x.bin", "\x00\x01"},
		{"__MACOSX/zipped/._SKILL.md", "junk"}, {"zipped/.DS_Store", "junk"},
	}), "zipped.zip")
	require.NoError(t, err)
	require.Equal(t, skill, p.Content)
	require.Equal(t, "zipped.zip", p.Source)
	require.Len(t, p.Files, 2)
	require.Equal(t, "references/a.md", p.Files[0].Path)
	require.Equal(t, "# A", *p.Files[0].Content)
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte("\x00\x01")), *p.Files[1].ContentBase64, "bytes that are not text travel as base64")

	// SKILL.md at the root.
	p, err = SkillImportFromZip(zipOf(t, [][2]string{{"SKILL.md", skill}, {"b.md", "B"}}), "")
	require.NoError(t, err)
	require.Equal(t, "b.md", p.Files[0].Path)

	// A second SKILL.md is a file named SKILL.md, which Folder refuses.
	p, err = SkillImportFromZip(zipOf(t, [][2]string{{"SKILL.md", skill}, {"SKILL.md", skill}}), "")
	require.NoError(t, err)
	_, err = p.Folder()
	require.ErrorContains(t, err, "SKILL.md is the skill itself")

	for _, tt := range []struct {
		name    string
		data    []byte
		problem string
	}{
		{"not a zip", []byte("PK? no"), "not a zip archive"},
		{"no SKILL.md", zipOf(t, [][2]string{{"a/b.md", "x"}}), "no SKILL.md"},
		{"two top folders", zipOf(t, [][2]string{{"a/SKILL.md", skill}, {"b/c.md", "x"}}), "no SKILL.md at its root or in a single top folder"},
		// 9 MiB of zeros compresses to a few KiB: the bound is on what is read, not on the archive's size.
		{"bomb", zipOf(t, [][2]string{{"SKILL.md", skill}, {"zeros.bin", strings.Repeat("\x00", 9<<20)}}), `"zeros.bin" is more than 8388608 bytes`},
	} {
		_, err := SkillImportFromZip(tt.data, "")
		require.Error(t, err, tt.name)
		require.Equal(t, EINVALID, ErrorCode(err), tt.name)
		require.Contains(t, err.Error(), tt.problem, tt.name)
	}
}

func TestAgentSkillAlwaysOn(t *testing.T) {
	t.Parallel()
	short, long := "Be brief.", strings.Repeat("x", SkillInlineMax+1)
	for _, tt := range []struct {
		skill AgentSkill
		want  bool
	}{
		{AgentSkill{Instructions: short}, true},
		{AgentSkill{Instructions: long}, false},
		{AgentSkill{Instructions: short, Files: 1}, false},
		{AgentSkill{Instructions: long, Files: 3, Disclosure: SkillDisclosureAlways}, true},
		{AgentSkill{Instructions: short, Disclosure: SkillDisclosureOnDemand}, false},
	} {
		require.Equal(t, tt.want, tt.skill.AlwaysOn(), "%+v", tt.skill)
	}
	require.NoError(t, CheckDisclosure(map[string]any{"gem-disclosure": "always"}))
	require.ErrorContains(t, CheckDisclosure(map[string]any{"gem-disclosure": "sometimes"}), `"always" or "on-demand"`)
}
