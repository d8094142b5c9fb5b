package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
)

// Skills by progressive disclosure, as the Agent Skills format intends. An agent's always-on skills (see
// brain.AgentSkill.AlwaysOn) put their instructions in every system prompt and their tools on the function
// list; every other skill shows only its name and description until the LLM loads it with load_skill, which
// answers with the instructions and the list of the skill's files and offers the skill's tools from then on.
// Both meta-tools are answered by the brain itself (they only read skills), so they are not calls and have
// no receipts. Loading widens what the LLM is shown, never what the agent may call: the executor checks
// every call against the agent's skills (gem_agent_may_call) whatever was loaded.
const (
	metaLoadSkill     = "load_skill"
	metaReadSkillFile = "read_skill_file"
)

// Refusals of the skill meta-tools and of tools whose skill is not loaded.
const (
	codeSkillNotLoaded registry.ErrorCode = "skill_not_loaded"
	codeUnknownSkill   registry.ErrorCode = "unknown_skill"
	codeInvalidPath    registry.ErrorCode = "invalid_path"
	codeNoSuchFile     registry.ErrorCode = "file_not_found"
)

const (
	// skillPage is the most text, in bytes, one load_skill or read_skill_file answer carries; longer text
	// comes in parts (next_offset). It is larger than toolResultMax because instructions are meant to be read
	// whole.
	skillPage = 32 << 10
	// skillFilesListed is the most files a load_skill answer lists.
	skillFilesListed = 200
)

// loadSkillGuide tells the LLM, under the skills it has not loaded, how to use them.
const loadSkillGuide = "These skills show only their names and descriptions. Before you act on a request one of them covers, " +
	"call load_skill with its name: you get its instructions and the list of its files, and its tools become available. " +
	"read_skill_file reads one of those files. A skill's scripts are text to read: GEM never runs anything from a skill."

// writeSkills writes the skills' part of the system prompt: each always-on skill's instructions (as the
// prompt has always shown every skill), then the name and description of each skill to load.
func writeSkills(b *strings.Builder, skills []brain.AgentSkill) {
	var onDemand []brain.AgentSkill
	header := false
	for _, s := range skills {
		if !s.AlwaysOn() {
			onDemand = append(onDemand, s)
			continue
		}
		if strings.TrimSpace(s.Instructions) == "" {
			continue
		}
		if !header {
			b.WriteString("\n\n# Skills\n")
			header = true
		}
		fmt.Fprintf(b, "\n## %s\n\n%s\n", s.Name, strings.TrimSpace(s.Instructions))
		if s.Files > 0 {
			fmt.Fprintf(b, "\nThis skill has %d more files: load_skill(%q) lists them, read_skill_file reads one.\n", s.Files, s.Slug)
		}
	}
	if len(onDemand) == 0 {
		return
	}
	b.WriteString("\n\n# Skills to load\n\n" + loadSkillGuide + "\n")
	for _, s := range onDemand {
		label := s.Slug
		if s.Name != s.Slug {
			label += " (" + s.Name + ")"
		}
		fmt.Fprintf(b, "\n- %s: %s", label, strings.Join(strings.Fields(s.Description), " "))
	}
}

// skillMetaOffered says whether the run offers load_skill and read_skill_file: when a skill is to be
// loaded, or has files to read.
func (r *chatRun) skillMetaOffered() bool {
	for _, s := range r.skills {
		if !s.AlwaysOn() || s.Files > 0 {
			return true
		}
	}
	return false
}

// discloseSkills sets what the LLM is shown first: the tools of always-on skills, and those of the skills
// loaded earlier in the session (their load_skill answers are in the history it is sent).
func (r *chatRun) discloseSkills() {
	r.loaded, r.visible = map[string]bool{}, map[string]bool{}
	for i := range r.skills {
		if r.skills[i].AlwaysOn() {
			r.showTools(&r.skills[i])
		}
	}
	answers := map[string]string{}
	for _, m := range r.history {
		if m.Role == "tool" {
			answers[m.ToolCallID] = m.Content
		}
	}
	for _, m := range r.history {
		for _, tc := range m.ToolCalls {
			if tc.Name != metaLoadSkill {
				continue
			}
			var answer struct {
				Status string `json:"status"`
				Result struct {
					Skill string `json:"skill"`
				} `json:"result"`
			}
			if json.Unmarshal([]byte(answers[tc.ID]), &answer) == nil && answer.Status == "succeeded" {
				if s := r.skill(answer.Result.Skill); s != nil {
					r.loaded[s.Slug] = true
					r.showTools(s)
				}
			}
		}
	}
}

// showTools makes a skill's tools visible, and offers them unless the run finds tools with search_tools
// and describe_tool (then describing a visible tool offers it).
func (r *chatRun) showTools(s *brain.AgentSkill) {
	for _, name := range s.Tools {
		if _, ok := r.tools.Function(name); !ok {
			continue // not in the registry any more, or not the agent's for this user
		}
		r.visible[name] = true
		if !r.meta {
			r.offered[name] = true
		}
	}
}

// skill finds an available skill by slug or, failing that, by name (ignoring case).
func (r *chatRun) skill(name string) *brain.AgentSkill {
	for i := range r.skills {
		if r.skills[i].Slug == name {
			return &r.skills[i]
		}
	}
	for i := range r.skills {
		if strings.EqualFold(r.skills[i].Name, strings.TrimSpace(name)) {
			return &r.skills[i]
		}
	}
	return nil
}

// notLoaded explains a tool the LLM is not shown yet: which skills give it.
func (r *chatRun) notLoaded(tool string) string {
	var from []string
	for _, s := range r.skills {
		for _, t := range s.Tools {
			if t == tool {
				from = append(from, s.Slug)
			}
		}
	}
	return fmt.Sprintf("%s comes with skill %s, which is not loaded: call %s first, then the tool", tool, strings.Join(from, " or "), metaLoadSkill)
}

func skillMetaToolDefs() []llm.ToolDef {
	return []llm.ToolDef{
		{Name: metaLoadSkill, Description: "Load a skill listed under \"Skills to load\": returns its instructions and the list of its files, and makes its tools available for the rest of this conversation.", Strict: true,
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"}, "properties": map[string]any{
				"name": map[string]any{"type": "string", "description": "the skill's name, as the list gives it"},
			}}},
		{Name: metaReadSkillFile, Description: "Read one file of a skill by its path in the skill's folder, as load_skill lists it (\"SKILL.md\" is the instructions). " +
			"Long text comes in parts: pass next_offset as offset. Binary files are described, not shown. Scripts are shown as text and are never run.", Strict: true,
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"skill", "path", "offset"}, "properties": map[string]any{
				"skill":  map[string]any{"type": "string", "description": "the skill's name"},
				"path":   map[string]any{"type": "string", "description": "the file's path in the skill's folder, like references/forms.md"},
				"offset": map[string]any{"type": []any{"integer", "null"}, "description": "where to start, in bytes (next_offset of the previous part; default 0)"},
			}}},
	}
}

// answerSkillMeta answers load_skill and read_skill_file.
func (c *Chat) answerSkillMeta(ctx context.Context, r *chatRun, tc llm.ToolCall) (string, bool) {
	var args struct {
		Name   string `json:"name"`
		Skill  string `json:"skill"`
		Path   string `json:"path"`
		Offset *int   `json:"offset"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		return skillFailure(registry.CodeValidation, "the arguments are not valid JSON: "+err.Error())
	}
	if tc.Name == metaLoadSkill {
		return c.loadSkill(ctx, r, args.Name)
	}
	offset := 0
	if args.Offset != nil {
		offset = *args.Offset
	}
	return c.readSkillFile(ctx, r, args.Skill, args.Path, offset)
}

// loadSkill answers load_skill: the skill's instructions (the first part, when long), its files and its
// tools, which it makes visible for the rest of the run.
func (c *Chat) loadSkill(ctx context.Context, r *chatRun, name string) (string, bool) {
	s := r.skill(name)
	if s == nil {
		return r.unknownSkill(name)
	}
	files, err := postgres.SkillResources(ctx, c.pool, s.Slug)
	if err != nil {
		return skillFailure(brain.EUNAVAILABLE, brain.AsError(err).Message)
	}
	r.loaded[s.Slug] = true
	r.showTools(s)

	type file struct {
		Path      string `json:"path"`
		MediaType string `json:"media_type"`
		Size      int    `json:"size"`
		Kind      string `json:"kind"`
	}
	listed := []file{}
	for _, f := range files[:min(len(files), skillFilesListed)] {
		listed = append(listed, file{Path: f.Path, MediaType: f.MediaType, Size: f.Size, Kind: brain.SkillFileKind(f.Path, f.MediaType)})
	}
	tools := []string{}
	for _, t := range s.Tools {
		if fn, ok := r.tools.Function(t); ok {
			tools = append(tools, fn)
		}
	}
	instructions, next := textPage(strings.TrimSpace(s.Instructions), 0)
	result := map[string]any{"skill": s.Slug, "name": s.Name, "description": s.Description, "instructions": instructions,
		"files": listed, "tools": tools}
	notes := []string{"Read a file with read_skill_file. Scripts are text to read: GEM never runs them, and neither can you."}
	if next > 0 {
		result["instructions_next_offset"] = next
		notes = append(notes, fmt.Sprintf("The instructions go on: read_skill_file(%q, %q, %d) gives the rest.", s.Slug, brain.SkillFileName, next))
	}
	if len(files) > len(listed) {
		notes = append(notes, fmt.Sprintf("Only the first %d of its %d files are listed.", len(listed), len(files)))
	}
	if len(tools) > 0 && r.meta {
		notes = append(notes, "Its tools are yours now: read one's input schema with describe_tool, then call it.")
	} else if len(tools) > 0 {
		notes = append(notes, "Its tools are yours now: call them by these names.")
	}
	result["note"] = strings.Join(notes, " ")
	return skillJSON(map[string]any{"status": "succeeded", "result": result}), false
}

// readSkillFile answers read_skill_file: one part of a file's text (SKILL.md is the instructions), or a
// description of a binary file. Reading needs no load_skill first; it never runs anything.
func (c *Chat) readSkillFile(ctx context.Context, r *chatRun, skill, path string, offset int) (string, bool) {
	s := r.skill(skill)
	if s == nil {
		return r.unknownSkill(skill)
	}
	var f *brain.SkillResource
	if path == brain.SkillFileName {
		text := []byte(strings.TrimSpace(s.Instructions))
		f = &brain.SkillResource{Path: path, MediaType: "text/markdown", Size: len(text), Content: text}
	} else {
		if err := brain.CheckSkillPath(path); err != nil {
			return skillFailure(codeInvalidPath, err.Error())
		}
		var err error
		if f, err = postgres.SkillResourceGet(ctx, c.pool, s.Slug, path); brain.ErrorCode(err) == brain.ENOTFOUND {
			return skillFailure(codeNoSuchFile, fmt.Sprintf("skill %s has no file %q; load_skill(%q) lists its files", s.Slug, path, s.Slug))
		} else if err != nil {
			return skillFailure(brain.EUNAVAILABLE, brain.AsError(err).Message)
		}
	}
	kind := brain.SkillFileKind(f.Path, f.MediaType)
	if f.Path == brain.SkillFileName {
		kind = "instructions"
	}
	result := map[string]any{"skill": s.Slug, "path": f.Path, "media_type": f.MediaType, "size": f.Size, "kind": kind}
	if f.SHA256 != "" {
		result["sha256"] = f.SHA256
	}
	var note string
	switch {
	case !brain.IsText(f.Content):
		result["binary"] = true
		note = "A binary file: its bytes are not shown."
	case offset < 0 || offset > len(f.Content):
		return skillFailure(registry.CodeValidation, fmt.Sprintf("offset %d is outside the file's %d bytes", offset, len(f.Content)))
	default:
		content, next := textPage(string(f.Content), offset)
		result["offset"], result["content"] = offset, content
		if next > 0 {
			result["next_offset"] = next
			note = fmt.Sprintf("The file goes on: read it from offset %d.", next)
		}
	}
	if kind == "script" {
		note = strings.TrimSpace(note + " A script, shown as text to read: GEM never runs a skill's scripts, and neither can you.")
	}
	if note != "" {
		result["note"] = note
	}
	return skillJSON(map[string]any{"status": "succeeded", "result": result}), false
}

// unknownSkill refuses a skill name the agent does not have, naming the ones it has.
func (r *chatRun) unknownSkill(name string) (string, bool) {
	names := make([]string, len(r.skills))
	for i, s := range r.skills {
		names[i] = s.Slug
	}
	return skillFailure(codeUnknownSkill, fmt.Sprintf("no skill %q; yours are: %s", name, strings.Join(names, ", ")))
}

func skillFailure(code registry.ErrorCode, message string) (string, bool) {
	return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": code, "message": message}}), true
}

// textPage returns at most skillPage bytes of text from offset (moved onto a character's start), ending
// after a line when one ends in the page's second half, and where the next part starts (0 at the end).
func textPage(text string, offset int) (string, int) {
	for offset > 0 && offset < len(text) && !utf8.RuneStart(text[offset]) {
		offset++
	}
	end := offset + skillPage
	if end >= len(text) {
		return text[offset:], 0
	}
	if nl := strings.LastIndexByte(text[offset:end], '\n'); nl >= skillPage/2 {
		end = offset + nl + 1
	}
	for end > offset && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[offset:end], end
}

// skillJSON marshals a skill answer without escaping <, > and & (instructions are full of them, and
// escaping would make them longer for the LLM to read); its size is bounded by skillPage, not toolResultMax.
func skillJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
