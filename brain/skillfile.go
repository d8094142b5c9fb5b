package brain

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
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

// SkillImportParams are a skill folder to import: the body of POST /skills/import. The folder replaces what
// was stored under the skill's name, files included: files left out are deleted.
type SkillImportParams struct {
	// Source says where the SKILL.md came from (a path), kept in the skill's metadata.
	Source string `json:"source"`
	// Content is the SKILL.md text.
	Content string `json:"content"`
	// Files are the folder's other files (references, assets, scripts), each by its path in the folder.
	Files []SkillImportFile `json:"files,omitempty"`
}

// SkillImportFile is one file of an imported skill folder besides SKILL.md: its text in Content, or its
// bytes in ContentBase64 (standard encoding), exactly one of them.
type SkillImportFile struct {
	Path          string  `json:"path"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
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

// Bounds of an imported skill folder. The skill_files table holds the same bounds on paths and file sizes,
// so nothing the brain accepts is refused by the database.
const (
	// SkillFilesMax is the most files a skill folder may hold besides SKILL.md.
	SkillFilesMax = 500
	// SkillFileSizeMax bounds one file, in bytes.
	SkillFileSizeMax = 8 << 20
	// SkillFolderSizeMax bounds all the files of a folder together, in bytes.
	SkillFolderSizeMax = 32 << 20
	// SkillPathMax bounds a file's path, in bytes.
	SkillPathMax = 400
)

// SkillFileName is the file that makes a folder a skill: its front matter and instructions.
const SkillFileName = "SKILL.md"

// skillMDMax bounds a SKILL.md read from an archive, about what the JSON import's content allows.
const skillMDMax = 1 << 20

// skillPathSegmentRe is one segment of a path inside a skill folder, as the skill_files table allows it.
var skillPathSegmentRe = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_. -]*$`)

// CheckSkillPath refuses a path that cannot name a file inside a skill folder: empty, absolute, with a
// backslash, an empty, "." or ".." segment, characters other than letters, digits, "_", "." (and, after a
// segment's first character, "-" and spaces), or longer than SkillPathMax.
func CheckSkillPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("a path is empty")
	case len(p) > SkillPathMax:
		return fmt.Errorf("path %.60q… is longer than %d bytes", p, SkillPathMax)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute; paths are relative to the skill folder, like references/forms.md", p)
	case strings.Contains(p, `\`):
		return fmt.Errorf(`path %q has a backslash; separate folders with "/"`, p)
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("path %q has an empty segment", p)
		case seg == "." || seg == "..":
			return fmt.Errorf("path %q has a %q segment; a path stays inside the skill folder", p, seg)
		case !skillPathSegmentRe.MatchString(seg):
			return fmt.Errorf("path %q: %q may hold only letters, digits, \"_\" and \".\", and after its first character \"-\" and spaces", p, seg)
		}
	}
	return nil
}

// Folder checks the import's files and returns them with their media types: at most SkillFilesMax files of
// at most SkillFileSizeMax bytes each and SkillFolderSizeMax together, valid paths (CheckSkillPath), no
// path twice and no SKILL.md among them (it is Content).
func (p *SkillImportParams) Folder() ([]SkillResource, error) {
	if len(p.Files) > SkillFilesMax {
		return nil, Errorf(EINVALID, "the folder has %d files besides SKILL.md; at most %d are imported", len(p.Files), SkillFilesMax)
	}
	files := make([]SkillResource, 0, len(p.Files))
	seen := map[string]bool{}
	total := 0
	for i, f := range p.Files {
		where := fmt.Sprintf("files[%d]", i)
		if err := CheckSkillPath(f.Path); err != nil {
			return nil, &Error{Code: EINVALID, Message: fmt.Sprintf("%s: %v", where, err), Details: map[string]any{"path": f.Path}}
		}
		switch {
		case f.Path == SkillFileName:
			return nil, Errorf(EINVALID, "%s: SKILL.md is the skill itself; send it as content, not as a file", where)
		case seen[f.Path]:
			return nil, &Error{Code: EINVALID, Message: fmt.Sprintf("%s: %q is in the folder twice", where, f.Path), Details: map[string]any{"path": f.Path}}
		case (f.Content == nil) == (f.ContentBase64 == nil):
			return nil, Errorf(EINVALID, "%s (%s): give exactly one of content (text) and content_base64 (bytes)", where, f.Path)
		}
		seen[f.Path] = true
		var data []byte
		if f.Content != nil {
			data = []byte(*f.Content)
		} else {
			var err error
			if data, err = base64.StdEncoding.DecodeString(*f.ContentBase64); err != nil {
				return nil, Errorf(EINVALID, "%s (%s): content_base64 is not standard base64: %v", where, f.Path, err)
			}
		}
		if len(data) > SkillFileSizeMax {
			return nil, Errorf(EINVALID, "%s (%s) is %d bytes; a file may have at most %d", where, f.Path, len(data), SkillFileSizeMax)
		}
		if total += len(data); total > SkillFolderSizeMax {
			return nil, Errorf(EINVALID, "the folder's files are more than %d bytes together", SkillFolderSizeMax)
		}
		files = append(files, SkillResource{Path: f.Path, MediaType: SkillMediaType(f.Path, data), Size: len(data), Content: data})
	}
	slices.SortFunc(files, func(a, b SkillResource) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// SkippedSkillEntry says whether a path inside a skill folder is left out of an import: it is in __MACOSX or
// .git, or is a .DS_Store, litter that operating systems and tools leave in folders and archives.
func SkippedSkillEntry(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "__MACOSX" || seg == ".DS_Store" || seg == ".git" {
			return true
		}
	}
	return false
}

// SkillImportFromZip reads a skill folder from a zip archive: SKILL.md at the archive's root, or in one
// folder holding everything else. Entries are read up to the folder's bounds, whatever their headers claim.
func SkillImportFromZip(data []byte, source string) (*SkillImportParams, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, Errorf(EINVALID, "the body is not a zip archive: %v", err)
	}
	var entries []*zip.File
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() && !SkippedSkillEntry(f.Name) {
			entries = append(entries, f)
		}
	}
	if len(entries) > SkillFilesMax+1 {
		return nil, Errorf(EINVALID, "the archive has %d files; a skill folder may have SKILL.md and at most %d more", len(entries), SkillFilesMax)
	}
	if len(entries) == 0 {
		return nil, Errorf(EINVALID, "the archive is empty")
	}
	// SKILL.md at the root, or everything in one top folder (how a zipped folder looks).
	prefix := ""
	if !slices.ContainsFunc(entries, func(f *zip.File) bool { return f.Name == SkillFileName }) {
		top, _, _ := strings.Cut(entries[0].Name, "/")
		prefix = top + "/"
		for _, f := range entries {
			if !strings.HasPrefix(f.Name, prefix) {
				return nil, Errorf(EINVALID, "the archive has no SKILL.md at its root or in a single top folder")
			}
		}
	}
	p := &SkillImportParams{Source: source}
	total, sawSkill := 0, false
	for _, f := range entries {
		name := strings.TrimPrefix(f.Name, prefix)
		limit := SkillFileSizeMax
		if name == SkillFileName {
			limit = skillMDMax
		}
		content, err := readZipEntry(f, limit)
		if err != nil {
			return nil, err
		}
		if total += len(content); total > SkillFolderSizeMax+skillMDMax {
			return nil, Errorf(EINVALID, "the archive's files are more than %d bytes together", SkillFolderSizeMax)
		}
		if name == SkillFileName && !sawSkill {
			sawSkill = true
			p.Content = string(content)
			continue
		}
		if IsText(content) {
			text := string(content)
			p.Files = append(p.Files, SkillImportFile{Path: name, Content: &text})
		} else {
			encoded := base64.StdEncoding.EncodeToString(content)
			p.Files = append(p.Files, SkillImportFile{Path: name, ContentBase64: &encoded})
		}
	}
	if !sawSkill {
		return nil, Errorf(EINVALID, "the archive has no %s in %q", SkillFileName, strings.TrimSuffix(prefix, "/"))
	}
	return p, nil
}

// readZipEntry reads one entry, refusing more than limit bytes (read, not declared: headers can lie).
func readZipEntry(f *zip.File, limit int) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, Errorf(EINVALID, "archive entry %q cannot be read: %v", f.Name, err)
	}
	defer rc.Close()
	content, err := io.ReadAll(io.LimitReader(rc, int64(limit)+1))
	if err != nil {
		return nil, Errorf(EINVALID, "archive entry %q cannot be read: %v", f.Name, err)
	}
	if len(content) > limit {
		return nil, Errorf(EINVALID, "archive entry %q is more than %d bytes", f.Name, limit)
	}
	return content, nil
}

// skillMediaTypes are the media types of the files skill folders hold, by extension; Go's mime package
// knows few of them and reads the rest from the machine's own tables, which differ between machines.
var skillMediaTypes = map[string]string{
	".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain", ".rst": "text/x-rst",
	".py": "text/x-python", ".sh": "text/x-shellscript", ".bash": "text/x-shellscript", ".js": "text/javascript",
	".mjs": "text/javascript", ".cjs": "text/javascript", ".ts": "text/x-typescript", ".tsx": "text/x-typescript",
	".jsx": "text/javascript", ".rb": "text/x-ruby", ".go": "text/x-go", ".java": "text/x-java", ".pl": "text/x-perl",
	".ps1": "text/plain", ".bat": "text/plain", ".sql": "application/sql",
	".json": "application/json", ".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
	".xml": "application/xml", ".xsd": "application/xml", ".html": "text/html", ".htm": "text/html", ".css": "text/css",
	".csv": "text/csv", ".tsv": "text/tab-separated-values", ".svg": "image/svg+xml",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".ico": "image/vnd.microsoft.icon", ".pdf": "application/pdf", ".ttf": "font/ttf", ".otf": "font/otf",
	".woff": "font/woff", ".woff2": "font/woff2", ".zip": "application/zip", ".gz": "application/gzip",
	".tar": "application/x-tar", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}

// SkillMediaType guesses a file's media type from its extension; a file of another extension is
// text/plain when its content is UTF-8 text, application/octet-stream otherwise.
func SkillMediaType(p string, content []byte) string {
	if mt, ok := skillMediaTypes[strings.ToLower(path.Ext(p))]; ok {
		return mt
	}
	if IsText(content) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// IsText says whether content can be shown, and stored, as text: valid UTF-8 without NUL bytes, which
// PostgreSQL's text holds (gemsql.PlainTextProblem).
func IsText(content []byte) bool {
	return gemsql.PlainTextProblem(content) == ""
}

// scriptExtensions are the extensions of files a skill runs rather than reads.
var scriptExtensions = map[string]bool{".py": true, ".sh": true, ".bash": true, ".js": true, ".mjs": true, ".cjs": true,
	".ts": true, ".rb": true, ".pl": true, ".ps1": true, ".bat": true}

// SkillFileKind classifies a skill's file as the Agent Skills format does: "script" (in scripts/, or code),
// "reference" (other text) or "asset" (other bytes). GEM never runs scripts; it serves them as text.
func SkillFileKind(p, mediaType string) string {
	switch {
	case strings.HasPrefix(p, "scripts/") || scriptExtensions[strings.ToLower(path.Ext(p))]:
		return "script"
	case strings.HasPrefix(mediaType, "text/") || mediaType == "application/json" || mediaType == "application/yaml" ||
		mediaType == "application/xml" || mediaType == "application/toml" || mediaType == "application/sql":
		return "reference"
	}
	return "asset"
}
