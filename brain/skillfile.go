package brain

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gemhq/gem/registry"
	"go.yaml.in/yaml/v3"
)

// SkillFile is a skill in the Agent Skills format: a folder with a SKILL.md whose YAML front matter has
// name, description, optional license, allowed-tools and metadata, and whose Markdown body is the
// instructions.
//
// A skill's GEM tools come from metadata "gem-tools" (registry names, separated by spaces or commas);
// allowed-tools, when present, only narrows them (or, without gem-tools, names them). Either way a tool the
// registry lacks is never granted: it is dropped and reported. metadata "gem-category" and "gem-requires"
// (skill names) fill the category and the dependencies.
type SkillFile struct {
	Name         string            `yaml:"name"`
	Description  string            `yaml:"description"`
	License      string            `yaml:"license"`
	AllowedTools string            `yaml:"allowed-tools"`
	Metadata     map[string]string `yaml:"metadata"`
	Body         string            `yaml:"-"`
}

var skillNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ParseSkillFile reads a SKILL.md.
func ParseSkillFile(data []byte) (*SkillFile, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return nil, fmt.Errorf("SKILL.md must start with YAML front matter between --- lines")
	}
	end := strings.Index(text[4:], "\n---")
	if end < 0 {
		return nil, fmt.Errorf("SKILL.md front matter is not closed with ---")
	}
	front, body := text[4:4+end], text[4+end+4:]
	var sf SkillFile
	if err := yaml.Unmarshal([]byte(front), &sf); err != nil {
		return nil, fmt.Errorf("SKILL.md front matter is not valid YAML: %w", err)
	}
	sf.Body = strings.TrimSpace(strings.TrimPrefix(body, "\n"))
	switch {
	case sf.Name == "":
		return nil, fmt.Errorf("SKILL.md front matter needs a name")
	case !skillNameRe.MatchString(sf.Name):
		return nil, fmt.Errorf("skill name %q must be lowercase letters, digits and hyphens (at most 64)", sf.Name)
	case strings.TrimSpace(sf.Description) == "":
		return nil, fmt.Errorf("skill %s needs a description", sf.Name)
	}
	return &sf, nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' })
}

// Tools resolves the skill's registry tools: gem-tools narrowed by allowed-tools, limited to the registry.
// It returns the tools and what was dropped and why.
func (sf *SkillFile) Tools(reg *registry.Registry) ([]string, []string) {
	declared := splitList(sf.Metadata["gem-tools"])
	allowed := splitList(sf.AllowedTools)
	var candidates, notes []string
	switch {
	case len(declared) > 0 && sf.AllowedTools != "":
		for _, t := range declared {
			if slices.Contains(allowed, t) {
				candidates = append(candidates, t)
			} else {
				notes = append(notes, fmt.Sprintf("%s: left out, allowed-tools does not list it", t))
			}
		}
	case len(declared) > 0:
		candidates = declared
	default:
		candidates = allowed
	}
	var tools []string
	for _, t := range candidates {
		if _, ok := reg.Tool(t); !ok {
			notes = append(notes, fmt.Sprintf("%s: left out, not a tool in the registry", t))
			continue
		}
		if !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	if tools == nil {
		tools = []string{}
	}
	return tools, notes
}

// SkillImportParams are a SKILL.md to import: the body of POST /skills/import.
type SkillImportParams struct {
	// Source says where the SKILL.md came from (a path), kept in the skill's metadata.
	Source string `json:"source"`
	// Content is the SKILL.md text.
	Content string `json:"content"`
}

// ImportResult says what an import did.
type ImportResult struct {
	Skill *Skill   `json:"skill"`
	Notes []string `json:"notes"`
}

// SkillParams turns an imported SKILL.md into the params that save it (under its name, replacing a skill of
// that name), with notes on the tools left out.
func (p *SkillImportParams) SkillParams(reg *registry.Registry) (*SkillParams, []string, error) {
	if p.Content == "" {
		return nil, nil, Errorf(EINVALID, "send {\"source\": \"path/SKILL.md\", \"content\": \"...\"}")
	}
	sf, err := ParseSkillFile([]byte(p.Content))
	if err != nil {
		return nil, nil, Errorf(EINVALID, "%s: %v", orDefault(p.Source, "SKILL.md"), err)
	}
	tools, notes := sf.Tools(reg)
	meta := map[string]any{"format": "agent-skills", "source": p.Source}
	for k, v := range sf.Metadata {
		meta[k] = v
	}
	if sf.License != "" {
		meta["license"] = sf.License
	}
	if sf.AllowedTools != "" {
		meta["allowed-tools"] = sf.AllowedTools
	}
	description, category := strings.TrimSpace(sf.Description), orDefault(sf.Metadata["gem-category"], "imported")
	params := &SkillParams{Slug: &sf.Name, Name: &sf.Name, Description: &description, Instructions: &sf.Body, Tools: tools,
		Category: &category, Metadata: meta}
	if req := splitList(sf.Metadata["gem-requires"]); len(req) > 0 {
		params.Requires = req
	}
	if notes == nil {
		notes = []string{}
	}
	return params, notes, nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
