package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Skills over MCP (SEP-2640): skills/list and skills/get describe each skill (its SKILL.md's front matter
// and every file with its SHA-256 digest and size); the files themselves are resources at
// skill://<name>/SKILL.md and skill://<name>/<path>, read with resources/read.

const (
	skillScheme   = "skill://"
	skillFileName = "SKILL.md"
	// skillDescriptionMax is the Agent Skills limit on a description, in characters.
	skillDescriptionMax = 1024
)

// skillNameRe is the Agent Skills name rule: lowercase letters and digits in hyphen-separated words, at most 64.
var skillNameRe = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// skillEntry is one skill as skills/list and skills/get describe it.
type skillEntry struct {
	URI string `json:"uri"`
	// Frontmatter is the served SKILL.md's front matter, field for field.
	Frontmatter map[string]any `json:"frontmatter"`
	// Resources lists every file of the skill, SKILL.md first.
	Resources []skillResource `json:"resources"`
}

// skillResource is one file of a skill.
type skillResource struct {
	URI      string `json:"uri"`
	Digest   string `json:"digest"`
	Size     int    `json:"size"`
	MIMEType string `json:"mimeType,omitempty"`
}

type listSkillsParams struct {
	mcp.ParamsBase
	// Cursor is accepted and ignored: the catalog comes in one page.
	Cursor string `json:"cursor,omitempty"`
}

type listSkillsResult struct {
	mcp.ResultBase
	mcp.Cacheable
	ResultType string        `json:"resultType,omitempty"`
	Skills     []*skillEntry `json:"skills"`
}

type getSkillParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

type getSkillResult struct {
	mcp.ResultBase
	mcp.Cacheable
	ResultType string      `json:"resultType,omitempty"`
	Skill      *skillEntry `json:"skill"`
}

// resultTypeOf is a result's resultType: "complete" for requests on protocol revision 2026-07-28 or later
// (which require it of every result; their version travels in each request's _meta), nothing before.
func resultTypeOf(ss *mcp.ServerSession, meta map[string]any) string {
	version, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	if p := ss.InitializeParams(); version == "" && p != nil {
		version = p.ProtocolVersion
	}
	if version >= modernProtocol {
		return "complete"
	}
	return ""
}

// modernProtocol is the first protocol revision without the initialize handshake.
const modernProtocol = "2026-07-28"

// privateCache: a catalog depends on who asks (the agent), so only that client may cache it.
var privateCache = mcp.Cacheable{CacheScope: "private"}

// addSkills registers skills/list, skills/get and the skill:// resources.
func (s *Server) addSkills() error {
	if err := mcp.AddReceivingCustomMethod(s.mcp, "skills/list", s.listSkills); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(s.mcp, "skills/get", s.getSkill); err != nil {
		return err
	}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{Name: "skill-file", Title: "A file of a GEM skill",
		URITemplate: skillScheme + "{skill}/{+path}",
		Description: "SKILL.md or another file of a skill listed by skills/list (io.modelcontextprotocol/skills)."}, s.readSkillFile)
	return nil
}

func (s *Server) listSkills(ctx context.Context, ss *mcp.ServerSession, p *listSkillsParams) (*listSkillsResult, error) {
	if p == nil {
		p = &listSkillsParams{} // no params (or null): the whole catalog
	}
	skills, err := s.catalog(ctx)
	if err != nil {
		return nil, err
	}
	slugs := make([]string, len(skills))
	for i, sk := range skills {
		slugs[i] = sk.Slug
	}
	files, err := postgres.SkillResourcesBySkill(ctx, s.pool, slugs)
	if err != nil {
		return nil, s.internal(ctx, err, "error listing the skills' files")
	}
	res := &listSkillsResult{Cacheable: privateCache, ResultType: resultTypeOf(ss, p.GetMeta()), Skills: make([]*skillEntry, 0, len(skills))}
	for _, sk := range skills {
		res.Skills = append(res.Skills, entry(sk, files[sk.Slug]))
	}
	return res, nil
}

func (s *Server) getSkill(ctx context.Context, ss *mcp.ServerSession, p *getSkillParams) (*getSkillResult, error) {
	if p == nil || p.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: skills/get needs {"uri": "skill://<name>/SKILL.md"}`}
	}
	slug, path, ok := parseSkillURI(p.URI)
	if !ok || path != skillFileName {
		return nil, resourceNotFound(p.URI)
	}
	sk, err := s.skill(ctx, slug)
	if err != nil {
		return nil, err
	}
	if sk == nil {
		return nil, resourceNotFound(p.URI)
	}
	files, err := postgres.SkillResources(ctx, s.pool, sk.Slug)
	if err != nil {
		return nil, s.internal(ctx, err, "error listing a skill's files")
	}
	return &getSkillResult{Cacheable: privateCache, ResultType: resultTypeOf(ss, p.GetMeta()), Skill: entry(sk, files)}, nil
}

// resourceNotFound is mcp.ResourceNotFoundError with its data encoded as JSON: the SDK's quotes the URI
// Go's way (a DEL as \x7f), which JSON cannot read, and the answer carrying it could not be written.
func resourceNotFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: "Resource not found", Data: data}
}

// readSkillFile serves a skill's file with exactly the bytes its digest and size describe.
func (s *Server) readSkillFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	slug, path, ok := parseSkillURI(uri)
	if !ok {
		return nil, resourceNotFound(uri)
	}
	sk, err := s.skill(ctx, slug)
	if err != nil {
		return nil, err
	}
	if sk == nil {
		return nil, resourceNotFound(uri)
	}
	var content []byte
	mediaType := "text/markdown"
	if path == skillFileName {
		content, _ = RenderSkillFile(sk)
	} else {
		f, err := postgres.SkillResourceGet(ctx, s.pool, slug, path)
		if brain.ErrorCode(err) == brain.ENOTFOUND {
			return nil, resourceNotFound(uri)
		}
		if err != nil {
			return nil, s.internal(ctx, err, "error reading a skill file")
		}
		content, mediaType = f.Content, f.MediaType
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: mediaType}
	switch {
	case len(content) == 0:
		c.Blob = []byte{} // an empty text would be left out; an empty blob is sent
	case utf8.Valid(content):
		c.Text = string(content)
	default:
		c.Blob = content
	}
	return &mcp.ReadResourceResult{Cacheable: privateCache, Contents: []*mcp.ResourceContents{c}}, nil
}

// catalog is every skill a client may load: all skills, or the agent's available skills for the caller.
// Skills whose slug breaks the Agent Skills name rule are left out: no host could load them.
func (s *Server) catalog(ctx context.Context) ([]*brain.Skill, error) {
	all, err := postgres.SkillList(ctx, s.pool)
	if err != nil {
		return nil, s.internal(ctx, err, "error listing skills")
	}
	available, err := s.availableSkills(ctx)
	if err != nil {
		return nil, err
	}
	var out []*brain.Skill
	for _, sk := range all {
		if skillNameRe.MatchString(sk.Slug) && (available == nil || available[sk.Slug]) {
			out = append(out, sk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

// availableSkills is the set of the caller's agent's available skills, or nil for a caller without an agent.
func (s *Server) availableSkills(ctx context.Context) (map[string]bool, error) {
	c := callerOf(ctx)
	if c.Agent == "" {
		return nil, nil
	}
	assigned, err := postgres.AssignmentList(ctx, s.pool, c.Agent, c.userOf())
	if err != nil {
		return nil, s.internal(ctx, err, "error listing the agent's skills")
	}
	available := map[string]bool{}
	for _, a := range assigned {
		if a.Available {
			available[a.Skill] = true
		}
	}
	return available, nil
}

// skill is one skill of the caller's catalog, or nil.
func (s *Server) skill(ctx context.Context, slug string) (*brain.Skill, error) {
	if !skillNameRe.MatchString(slug) {
		return nil, nil
	}
	available, err := s.availableSkills(ctx)
	if err != nil {
		return nil, err
	}
	if available != nil && !available[slug] {
		return nil, nil
	}
	sk, err := postgres.SkillGet(ctx, s.pool, slug)
	if brain.ErrorCode(err) == brain.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, s.internal(ctx, err, "error reading a skill")
	}
	return sk, nil
}

// entry describes a skill: its front matter, and SKILL.md and its other files with their digests and sizes.
func entry(sk *brain.Skill, files []brain.SkillResource) *skillEntry {
	content, frontmatter := RenderSkillFile(sk)
	sum := sha256.Sum256(content)
	uri := skillURI(sk.Slug, skillFileName)
	e := &skillEntry{URI: uri, Frontmatter: frontmatter,
		Resources: []skillResource{{URI: uri, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: len(content), MIMEType: "text/markdown"}}}
	for _, f := range files {
		e.Resources = append(e.Resources, skillResource{URI: skillURI(sk.Slug, f.Path), Digest: "sha256:" + f.SHA256, Size: f.Size, MIMEType: f.MediaType})
	}
	return e
}

// skillURI is a skill file's URI, each path segment escaped.
func skillURI(slug, path string) string {
	segments := strings.Split(path, "/")
	for i, seg := range segments {
		segments[i] = url.PathEscape(seg)
	}
	return skillScheme + slug + "/" + strings.Join(segments, "/")
}

// parseSkillURI splits skill://<slug>/<path> into the slug and the unescaped path.
func parseSkillURI(uri string) (slug, path string, ok bool) {
	rest, found := strings.CutPrefix(uri, skillScheme)
	if !found {
		return "", "", false
	}
	slug, escaped, found := strings.Cut(rest, "/")
	if !found || slug == "" || escaped == "" {
		return "", "", false
	}
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return "", "", false
	}
	return slug, path, true
}

// Front matter fields GEM keeps in a skill's metadata for its own use, never served.
var privateMetadata = []string{"format", "source"}

// Front matter fields of the Agent Skills format kept in a skill's metadata by an import.
var topLevelMetadata = []string{"license", "compatibility", "allowed-tools"}

// RenderSkillFile renders a stored skill as its SKILL.md (Agent Skills format), deterministically, and returns
// the front matter as the listing shows it. name is the slug; description falls back to the skill's name and
// is cut to 1,024 characters; license, compatibility and allowed-tools come from the metadata an import kept;
// metadata holds the skill's other string metadata and GEM's gem-category, gem-tools and gem-requires, so
// importing the file again (POST /skills/import) gives the same skill.
func RenderSkillFile(sk *brain.Skill) ([]byte, map[string]any) {
	description := strings.TrimSpace(sk.Description)
	if description == "" {
		description = sk.Name
	}
	if utf8.RuneCountInString(description) > skillDescriptionMax {
		description = string([]rune(description)[:skillDescriptionMax-1]) + "…"
	}
	front := map[string]any{"name": sk.Slug, "description": description}
	var b bytes.Buffer
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\ndescription: %s\n", yamlScalar(sk.Slug), yamlScalar(description))
	for _, k := range topLevelMetadata {
		if v, ok := sk.Metadata[k].(string); ok && v != "" {
			front[k] = v
			fmt.Fprintf(&b, "%s: %s\n", k, yamlScalar(v))
		}
	}
	meta := map[string]any{}
	for k, v := range sk.Metadata {
		if v, ok := v.(string); ok && !slices.Contains(privateMetadata, k) && !slices.Contains(topLevelMetadata, k) {
			meta[k] = v
		}
	}
	delete(meta, "gem-tools")
	delete(meta, "gem-requires")
	if len(sk.Tools) > 0 {
		meta["gem-tools"] = strings.Join(sk.Tools, " ")
	}
	if len(sk.Requires) > 0 {
		meta["gem-requires"] = strings.Join(sk.Requires, " ")
	}
	if sk.Category != "" {
		meta["gem-category"] = sk.Category
	}
	if len(meta) > 0 {
		front["metadata"] = meta
		b.WriteString("metadata:\n")
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %s\n", yamlScalar(k), yamlScalar(meta[k].(string)))
		}
	}
	b.WriteString("---\n")
	if body := strings.TrimSpace(sk.Instructions); body != "" {
		b.WriteString("\n" + body + "\n")
	}
	return b.Bytes(), front
}

// yamlScalar writes a string as a YAML scalar every YAML parser reads back as that string: plain when it
// plainly is one (a letter first, no indicator characters, not a word YAML 1.1 reads as a boolean or null),
// double-quoted otherwise (JSON's string syntax is valid YAML).
func yamlScalar(s string) string {
	if plainScalar(s) {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func plainScalar(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') || strings.HasSuffix(s, " ") {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\ufeff' || strings.ContainsRune(":#{}[]\"\\`|>*&!%@", r) {
			return false
		}
	}
	return true
}
