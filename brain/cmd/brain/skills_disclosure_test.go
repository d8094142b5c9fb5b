package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/gemhq/gem/brain/internal/testenv"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

// importBody is the answer to POST /skills/import.
type importBody struct {
	Skill brain.Skill           `json:"skill"`
	Notes []string              `json:"notes"`
	Files []brain.SkillResource `json:"files"`
}

func textFile(path, content string) map[string]any {
	return map[string]any{"path": path, "content": content}
}

func binaryFile(path string, content []byte) map[string]any {
	return map[string]any{"path": path, "content_base64": base64.StdEncoding.EncodeToString(content)}
}

// skillMD is a SKILL.md with front matter lines and a body.
func skillMD(name, description, front, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n%s---\n%s\n", name, description, front, body)
}

// storedPaths lists a skill's stored files.
func storedPaths(t *testing.T, slug string) []string {
	t.Helper()
	rows, err := shared.pool.Query(context.Background(), `SELECT f.path FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.slug = $1 ORDER BY f.path`, slug)
	require.NoError(t, err)
	var paths []string
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		paths = append(paths, p)
	}
	require.NoError(t, rows.Err())
	return paths
}

// postZip sends a zip archive to POST /skills/import.
func postZip(t *testing.T, a *testAPI, data []byte, source string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.url+"/skills/import?source="+source, bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/zip")
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, out), "%s", body)
	return resp.StatusCode
}

func zipArchive(t *testing.T, entries map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write(entries[name])
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestSkillFolderImport imports a skill folder as JSON and as a zip archive: files are stored with their
// media types, a re-import replaces them, and every broken rule is a 400 naming what broke it, leaving the
// stored skill as it was.
func TestSkillFolderImport(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	slug := uniq("folder")
	content := skillMD(slug, "A skill with files.", "", "# Folder\n\nRead references/guide.md first.")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

	var body importBody
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"source": "folder", "content": content, "files": []any{
		textFile("references/guide.md", "# Guide\n\nStep one."), textFile("scripts/fill.py", "print('never run')"), binaryFile("assets/logo.png", png),
	}}, &body), "%+v", body)
	require.Equal(t, slug, body.Skill.Slug)
	got := map[string]string{}
	for _, f := range body.Files {
		got[f.Path] = fmt.Sprintf("%s %d", f.MediaType, f.Size)
		require.Len(t, f.SHA256, 64)
	}
	require.Equal(t, map[string]string{"assets/logo.png": fmt.Sprintf("image/png %d", len(png)), "references/guide.md": "text/markdown 18",
		"scripts/fill.py": "text/x-python 18"}, got)

	// A re-import is the folder as it is now: files left out are gone.
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"content": content, "files": []any{
		textFile("references/guide.md", "# Guide v2"), textFile("references/faq.md", "# FAQ"),
	}}, &body))
	require.Equal(t, []string{"references/faq.md", "references/guide.md"}, storedPaths(t, slug))

	// Each broken rule is refused, naming the file; the stored skill and files stay as they were.
	for _, tt := range []struct {
		name    string
		files   []any
		problem string
	}{
		{"parent", []any{textFile("../escape.md", "x")}, `files[0]: path "../escape.md" has a ".." segment`},
		{"absolute", []any{textFile("/etc/passwd", "x")}, `path "/etc/passwd" is absolute`},
		{"SKILL.md twice", []any{textFile("SKILL.md", content)}, "SKILL.md is the skill itself"},
		{"same path twice", []any{textFile("a.md", "x"), textFile("a.md", "y")}, `files[1]: "a.md" is in the folder twice`},
		{"odd characters", []any{textFile("refs/naïve.md", "x")}, "may hold only letters"},
		{"both contents", []any{map[string]any{"path": "a.md", "content": "x", "content_base64": "eA=="}}, "exactly one of content"},
		{"bad base64", []any{map[string]any{"path": "a.bin", "content_base64": "not base64!"}}, "not standard base64"},
		{"too many files", slices.Repeat([]any{textFile("x.md", "x")}, 501), "/files"},
	} {
		var e errorResponse
		require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/skills/import", map[string]any{"content": strings.Replace(content, "# Folder", "# Changed", 1), "files": tt.files}, &e), tt.name)
		require.Contains(t, fmt.Sprint(e.Errors[0].Message, e.Errors[0].Details), tt.problem, tt.name)
	}
	var sk struct {
		Skill brain.Skill `json:"skill"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/skills/"+slug, nil, &sk))
	require.Contains(t, sk.Skill.Instructions, "# Folder", "a refused import changes nothing")
	require.Equal(t, []string{"references/faq.md", "references/guide.md"}, storedPaths(t, slug))

	// A metadata gem-disclosure other than always or on-demand is refused.
	var e errorResponse
	require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/skills/import", map[string]any{
		"content": skillMD(uniq("odd"), "d", "metadata:\n  gem-disclosure: sometimes\n", "body")}, &e))
	require.Contains(t, e.Errors[0].Message, `"always" or "on-demand"`)

	// The same folder as a zip archive, in a top folder, with macOS litter left out.
	zipped := zipArchive(t, map[string][]byte{
		slug + "/SKILL.md": []byte(content), slug + "/references/guide.md": []byte("# Guide v3"), slug + "/assets/logo.png": png,
		"__MACOSX/" + slug + "/._SKILL.md": []byte("junk"), slug + "/.DS_Store": []byte("junk"),
	})
	require.Equal(t, http.StatusOK, postZip(t, a, zipped, slug+".zip", &body), "%+v", body)
	require.Equal(t, []string{"assets/logo.png", "references/guide.md"}, storedPaths(t, slug))
	require.Equal(t, slug+".zip", body.Skill.Metadata["source"])

	// A file that inflates past the bound is refused while it is read, whatever the archive says.
	bomb := zipArchive(t, map[string][]byte{"SKILL.md": []byte(content), "zeros.bin": make([]byte, brain.SkillFileSizeMax+1)})
	require.Less(t, len(bomb), 64<<10)
	require.Equal(t, http.StatusBadRequest, postZip(t, a, bomb, "bomb.zip", &e))
	require.Contains(t, e.Errors[0].Message, `"zeros.bin" is more than 8388608 bytes`)
	require.Equal(t, http.StatusBadRequest, postZip(t, a, []byte("not a zip"), "x.zip", &e))
	require.Contains(t, e.Errors[0].Message, "not a zip archive")
	require.Equal(t, []string{"assets/logo.png", "references/guide.md"}, storedPaths(t, slug))
}

// testProgressiveDisclosure runs one conversation against either provider's wire format: the first request
// shows the on-demand skill by name and description only; calling its tool before loading it is refused;
// load_skill answers with the instructions and files and offers the skill's tools from the next request;
// read_skill_file reads text in parts, describes binary files, shows scripts as text (never running them)
// and refuses paths outside the skill and skills the agent lacks; a second message in the session still has
// the skill loaded.
func testProgressiveDisclosure(t *testing.T, provider string) {
	a := newAPI(t)
	marker := filepath.Join(t.TempDir(), "script-ran")
	roofing, tasks, other := uniq("roofing"), uniq("tasks"), uniq("other")
	instructions := "# Roofing\n\nLOADED-INSTRUCTIONS " + strings.Repeat("Measure every face before quoting. ", 80)
	line := "A line of the inspection guide, long enough to need two parts.\n"
	guide := strings.Repeat(line, 700) + "GUIDE-END\n"
	// A part ends after the last whole line within 32 KiB.
	guideNext := (32 << 10) / len(line) * len(line)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")

	var body importBody
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{
		"content": skillMD(roofing, "Roof inspections step by step. Use when recording an inspection.", "metadata:\n  gem-tools: leads.create\n", instructions),
		"files":   []any{textFile("references/guide.md", guide), textFile("scripts/evil.sh", "#!/bin/sh\ntouch "+marker+"\n"), binaryFile("assets/logo.png", png)},
	}, &body), "%+v", body)
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{
		"content": skillMD(other, "Another agent's skill.", "", "secret instructions"), "files": []any{textFile("references/secret.md", "SECRET")},
	}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": tasks, "name": tasks, "description": "tasks",
		"instructions": "Use tasks well.", "tools": []string{"os.create_task"}}, &body))
	agent := uniq("agent")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "Roofer", "instructions": "You help a roofing business.",
		"max_tool_iterations": 6}, &body))
	for _, s := range []string{roofing, tasks} {
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+s, nil, &body))
	}

	read := func(id, skill, path string, offset any) llmfake.Call {
		args, _ := json.Marshal(map[string]any{"skill": skill, "path": path, "offset": offset})
		return llmfake.Call{ID: id, Name: "read_skill_file", Arguments: string(args)}
	}
	failure := func(t require.TestingT, m llmfake.Message, code string) string {
		r := resultOf(t, m)
		require.Equal(t, "failed", r["status"], m.Content)
		require.True(t, m.IsError || provider == llmconfig.ProviderOpenAI, "failures are marked as errors where the wire format has a place for it")
		e := r["error"].(map[string]any)
		require.Equal(t, code, e["code"], m.Content)
		return e["message"].(string)
	}
	lead := `{"name": "Dana Fox", "phone": "0455 123 987", "email": null, "suburb": "Leichhardt", "source": "referral", "notes": null}`
	newFake := llmfake.NewOpenAI
	if provider == llmconfig.ProviderAnthropic {
		newFake = llmfake.NewAnthropic
	}
	fake := newFake(t, fakeKey,
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Contains(t, req.System, "Use tasks well.", "a short skill without files stays in the prompt")
				require.Contains(t, req.System, "- "+roofing+": Roof inspections step by step.")
				require.NotContains(t, req.System, "LOADED-INSTRUCTIONS", "an on-demand skill shows only its name and description")
				require.Contains(t, req.System, "never runs anything from a skill")
				require.Equal(t, []string{"load_skill", "read_skill_file", "os__create_task"}, req.ToolNames(), "the on-demand skill's tool is not offered yet")
			},
			Calls: []llmfake.Call{{ID: "early", Name: "leads__create", Arguments: lead}, {ID: "load", Name: "load_skill", Arguments: `{"name": "` + roofing + `"}`}},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				results := req.ToolResults()
				require.Contains(t, failure(t, results["early"], "skill_not_loaded"), roofing)
				loaded := resultOf(t, results["load"])["result"].(map[string]any)
				require.Contains(t, loaded["instructions"], "LOADED-INSTRUCTIONS")
				require.Equal(t, []any{"leads__create"}, loaded["tools"])
				kinds := map[string]any{}
				for _, f := range loaded["files"].([]any) {
					kinds[f.(map[string]any)["path"].(string)] = f.(map[string]any)["kind"]
				}
				require.Equal(t, map[string]any{"references/guide.md": "reference", "scripts/evil.sh": "script", "assets/logo.png": "asset"}, kinds)
				require.Contains(t, loaded["note"], "GEM never runs them")
				require.Contains(t, req.ToolNames(), "leads__create", "loading the skill offers its tools")
			},
			Calls: []llmfake.Call{
				read("guide", roofing, "references/guide.md", nil),
				read("parent", roofing, "../"+other+"/references/secret.md", nil),
				read("absolute", roofing, "/etc/passwd", 0),
				read("foreign", other, "references/secret.md", nil),
				read("script", roofing, "scripts/evil.sh", nil),
				read("binary", roofing, "assets/logo.png", nil),
				read("missing", roofing, "references/missing.md", nil),
				{ID: "lead", Name: "leads__create", Arguments: lead},
				{ID: "note", Name: "os__create_note", Arguments: `{"domain": "business", "title": "x", "content": "x"}`},
			},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				results := req.ToolResults()
				part := resultOf(t, results["guide"])["result"].(map[string]any)
				require.Equal(t, "text/markdown", part["media_type"])
				require.NotContains(t, part["content"], "GUIDE-END", "a long file comes in parts")
				require.Equal(t, float64(guideNext), part["next_offset"])
				require.Len(t, part["content"], guideNext)
				require.Contains(t, failure(t, results["parent"], "invalid_path"), `".." segment`)
				require.Contains(t, failure(t, results["absolute"], "invalid_path"), "absolute")
				require.Contains(t, failure(t, results["foreign"], "unknown_skill"), other)
				script := resultOf(t, results["script"])["result"].(map[string]any)
				require.Equal(t, "script", script["kind"])
				require.Contains(t, script["content"], "touch "+marker)
				require.Contains(t, script["note"], "GEM never runs a skill's scripts")
				binary := resultOf(t, results["binary"])["result"].(map[string]any)
				require.Equal(t, true, binary["binary"])
				require.Equal(t, "image/png", binary["media_type"])
				require.NotContains(t, binary, "content")
				failure(t, results["missing"], "file_not_found")
				require.Equal(t, "succeeded", resultOf(t, results["lead"])["status"], "the loaded skill's tool runs through the queue")
				failure(t, results["note"], "tool_not_enabled")
			},
			Calls: []llmfake.Call{read("rest", roofing, "references/guide.md", guideNext)},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				rest := resultOf(t, req.ToolResults()["rest"])["result"].(map[string]any)
				require.True(t, strings.HasSuffix(rest["content"].(string), "GUIDE-END\n"))
				require.NotContains(t, rest, "next_offset")
			},
			Text: "Dana is recorded.",
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Contains(t, req.ToolNames(), "leads__create", "the skill stays loaded while its load_skill answer is in the history")
			},
			Text: "Still here.",
		},
	)
	a = llmBrain(t, provider, fake, chat.Config{})

	resp, status := chatWith(t, a, agent, "new lead Dana Fox 0455 123 987", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp)
	require.True(t, resp.OK, "%+v", resp.Errors)
	statuses := map[string][]string{}
	for _, tc := range resp.ToolCalls {
		statuses[tc.Tool] = append(statuses[tc.Tool], tc.Status)
	}
	require.Equal(t, []string{brain.ChatCallSkillNotLoaded, "succeeded"}, statuses["leads.create"])
	require.Equal(t, []string{brain.ChatCallAnswered}, statuses["load_skill"])
	require.Len(t, statuses["read_skill_file"], 8)
	require.Equal(t, 1, testenv.CountCalls(t, shared.pool, resp.RunID), "only leads.create became a call; the meta-tools are the brain's")
	_, err := os.Stat(marker)
	require.ErrorIs(t, err, os.ErrNotExist, "the skill's script never ran")

	second, status := chatWith(t, a, agent, "still there?", resp.SessionID)
	require.Equal(t, http.StatusOK, status, "%+v", second)
	require.Equal(t, "Still here.", second.Reply)
	require.Equal(t, 0, fake.Remaining())
}

func TestSkillProgressiveDisclosureOpenAI(t *testing.T) {
	t.Parallel()
	testProgressiveDisclosure(t, llmconfig.ProviderOpenAI)
}

func TestSkillProgressiveDisclosureAnthropic(t *testing.T) {
	t.Parallel()
	testProgressiveDisclosure(t, llmconfig.ProviderAnthropic)
}

// TestSkillDisclosureWithToolSearch gives an agent more tools than the search threshold: describe_tool
// refuses a tool of a skill not loaded yet, naming the skill, and describes it once the skill is loaded.
func TestSkillDisclosureWithToolSearch(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	roofing, tasks := uniq("roofing"), uniq("tasks")
	var body importBody
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{
		"content": skillMD(roofing, "Roofing leads.", "metadata:\n  gem-tools: leads.create\n  gem-disclosure: on-demand\n", "Record leads carefully."),
	}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": tasks, "name": tasks,
		"instructions": "Use tasks well.", "tools": []string{"os.create_task", "os.list_tasks"}}, &body))
	agent := uniq("agent")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "Roofer", "max_tool_iterations": 5}, &body))
	for _, s := range []string{roofing, tasks} {
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+s, nil, &body))
	}
	describe := func(id, name string) llmfake.Call {
		return llmfake.Call{ID: id, Name: "describe_tool", Arguments: `{"name": "` + name + `"}`}
	}
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Equal(t, []string{"search_tools", "describe_tool", "load_skill", "read_skill_file"}, req.ToolNames())
			},
			Calls: []llmfake.Call{describe("early", "leads__create"), describe("task", "os__create_task")},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				early := resultOf(t, req.ToolResults()["early"])
				require.Equal(t, "skill_not_loaded", early["error"].(map[string]any)["code"])
				require.Contains(t, early["error"].(map[string]any)["message"], roofing)
				require.Equal(t, "succeeded", resultOf(t, req.ToolResults()["task"])["status"])
				require.Equal(t, []string{"search_tools", "describe_tool", "load_skill", "read_skill_file", "os__create_task"}, req.ToolNames())
			},
			Calls: []llmfake.Call{{ID: "load", Name: "load_skill", Arguments: `{"name": "` + roofing + `"}`}},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Contains(t, resultOf(t, req.ToolResults()["load"])["result"].(map[string]any)["note"], "describe_tool")
				require.NotContains(t, req.ToolNames(), "leads__create", "with tool search, a loaded skill's tools are described before they are offered")
			},
			Calls: []llmfake.Call{describe("late", "leads__create")},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Equal(t, "succeeded", resultOf(t, req.ToolResults()["late"])["status"])
				require.Contains(t, req.ToolNames(), "leads__create")
			},
			Text: "Ready.",
		},
	)
	a = llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{ToolSearchThreshold: 2})
	resp, status := chatWith(t, a, agent, "record a lead", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, 0, fake.Remaining())
}

// turnBytes is what one LLM request carries besides the conversation: the system prompt and the tool
// definitions, as the fake received them.
func turnBytes(t require.TestingT, req *llmfake.Request) (int, int) {
	tools, err := json.Marshal(req.Tools)
	require.NoError(t, err)
	return len(req.System), len(tools)
}

// TestSkillDisclosurePromptSize imports 17 skill folders written for GEM (testdata/skills17) with brain
// skills import, gives them to an agent, and measures one LLM turn's system prompt and tool definitions
// against the same skills shown the way the brain showed every skill before progressive disclosure (every
// skill's instructions in the prompt and every tool offered, which metadata gem-disclosure: always
// reproduces). Progressive disclosure must cut it to under 15%.
func TestSkillDisclosurePromptSize(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	env := map[string]string{"GEM_BRAIN_URL": a.url, "GEM_BRAIN_TOKEN": a.token}
	// The folders as a person has them: the text from testdata, and a binary asset (git keeps no binaries).
	dir := filepath.Join(t.TempDir(), "skills17")
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/skills17")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "site-photo-documentation", "assets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site-photo-documentation", "assets", "example-tag.png"), tinyPNG(t), 0o644))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli([]string{"skills", "import", dir}, func(k string) string { return env[k] }, &out, &errOut), out.String()+errOut.String())
	require.Equal(t, 17, strings.Count(out.String(), "imported "), out.String())
	require.Contains(t, out.String(), "imported roof-inspection-report from "+dir+"/roof-inspection-report/SKILL.md: tools [inspection.create")
	require.Contains(t, out.String(), "2 more files")
	require.Equal(t, []string{"assets/example-tag.png"}, storedPaths(t, "site-photo-documentation"))

	dirs, err := filepath.Glob(filepath.Join(dir, "*", "SKILL.md"))
	require.NoError(t, err)
	require.Len(t, dirs, 17)
	progressive, full := uniq("progressive"), uniq("full")
	var body map[string]any
	for _, agent := range []string{progressive, full} {
		require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "Office", "instructions": "You run a roofing office."}, &body))
	}
	var bodies []string
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		sf, err := brain.ParseSkillFile(data)
		require.NoError(t, err)
		tools, _ := sf.Tools(shared.brain.Registry)
		bodies = append(bodies, sf.Body)
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+progressive+"/skills/"+sf.Name, nil, &body), "%v", body)
		// The same skill shown as before: its instructions in every prompt, its tools always offered.
		old := uniq("full")
		require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": old, "name": sf.Name, "description": sf.Description,
			"instructions": sf.Body, "tools": tools, "metadata": map[string]any{"gem-disclosure": "always"}}, &body), "%v", body)
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+full+"/skills/"+old, nil, &body))
	}

	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Text: "ok", Check: func(t require.TestingT, req *llmfake.Request) {
			for i, b := range bodies {
				require.False(t, strings.Contains(req.System, strings.TrimSpace(b)), "%s: every fixture is longer than brain.SkillInlineMax or has files", dirs[i])
			}
			require.Contains(t, req.System, "- insurance-assessment-reports: Writes roof damage reports")
		}},
		llmfake.Turn{Text: "ok", Check: func(t require.TestingT, req *llmfake.Request) {
			for i, b := range bodies {
				require.True(t, strings.Contains(req.System, strings.TrimSpace(b)), "%s: every skill's instructions, as before", dirs[i])
			}
		}},
	)
	withLLM := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	for _, agent := range []string{progressive, full} {
		resp, status := chatWith(t, withLLM, agent, "what can you do?", "")
		require.Equal(t, http.StatusOK, status, "%+v", resp)
	}
	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	var after, before [2]int
	after[0], after[1] = turnBytes(t, reqs[0])
	before[0], before[1] = turnBytes(t, reqs[1])
	ratio := float64(after[0]+after[1]) / float64(before[0]+before[1])
	t.Logf("one LLM turn with 17 skills: before %d bytes (system %d + tools %d), after %d bytes (system %d + tools %d): %.1f%%",
		before[0]+before[1], before[0], before[1], after[0]+after[1], after[0], after[1], 100*ratio)
	require.Less(t, ratio, 0.15)
}

// tinyPNG is a 4×4 PNG: a binary file for a skill's assets.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 13)
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}
