package remote

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// EnvBase64MinBytes names the length from which a base64 string an MCP server's structuredContent does not
// declare is taken for a file (Base64MinBytesDefault; 0 never takes one).
const EnvBase64MinBytes = "GEM_MCP_BASE64_MIN_BYTES"

// Base64MinBytesDefault is EnvBase64MinBytes's default: 16 KiB of base64, 12 KiB of bytes. Shorter strings
// (cursors, tokens, signatures) are left as they are; longer ones that look like base64 are files.
const Base64MinBytesDefault = 16 << 10

// guessMinSymbols is how many different base64 symbols an undeclared string must use to be taken for a file:
// hex (at most 22), base32 and decimal digits use fewer, the base64 of any real file many more.
const guessMinSymbols = 24

// base64MinBytes reads EnvBase64MinBytes.
func base64MinBytes(getenv func(string) string) (int, error) {
	s := strings.TrimSpace(getenv(EnvBase64MinBytes))
	if s == "" {
		return Base64MinBytesDefault, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not a whole number of bytes (0 turns the guess off)", EnvBase64MinBytes, s)
	}
	return n, nil
}

// payloads turns the binary payloads of one answer of an MCP server into files of GEM's file store: base64
// in structuredContent, and image, audio and resource blob content blocks. A result's files are staged on
// the call (executor.Call.StageFile: written once the call has succeeded, listed in effects.files_written)
// and the result names them by their gemfs:// refs; an answer that fails the call (isError) keeps none, and
// its payloads are only described.
type payloads struct {
	store *filestore.Store
	// call stages the files; nil keeps nothing.
	call *executor.Call
	// tool is the remote tool, which names files that have no name of their own.
	tool string
	// schema is the tool's output schema (GEM's, which executor mcp import copies from the server's
	// outputSchema), compiled; nil when it has none.
	schema *jsonschema.Schema
	// guessMin is EnvBase64MinBytes.
	guessMin int
}

// keep stores data as a file of mediaType named name (for people) and returns its ref, or "" when the answer
// keeps nothing.
func (p *payloads) keep(name, mediaType string, data []byte) (string, error) {
	if p.call == nil {
		return "", nil
	}
	ext := extensionOf(mediaType)
	if name == "" {
		name = p.tool
	}
	if own := path.Ext(name); !strings.EqualFold(own, ext) && mime.TypeByExtension(own) == "" {
		name += ext // a name without an extension of its own
	}
	f, err := p.store.Prepare(name, ext, mediaType, data)
	if err != nil {
		return "", err
	}
	p.call.StageFile(f)
	return f.Ref, nil
}

// dropped stands in for a payload of a failed call, which is not kept.
func dropped(mediaType string, n int) string {
	return fmt.Sprintf("(%s, %d bytes, not kept: the call failed)", mediaType, n)
}

// structured returns v, an answer's structuredContent, with every binary payload in it replaced by its
// file's ref (see docs/mcp-tools.md): a string the output schema declares base64 (contentEncoding base64 or
// base64url, format byte, or a binary contentMediaType), a base64 data: URL, the data or blob of an object
// shaped as MCP's image, audio or blob resource contents, and an undeclared string of at least guessMin
// characters that decodes as base64 and uses guessMinSymbols symbols of both cases. A ref is a string too, so
// the result keeps the shape the output schema gives it.
func (p *payloads) structured(v any) (any, error) {
	return p.walk(v, applying(p.schema), "", nil)
}

// walk converts v, found at pointer (a JSON pointer) in parent (the object holding it, if any), where the
// schemas ss apply.
func (p *payloads) walk(v any, ss schemaSet, pointer string, parent map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		return p.convertString(v, ss, pointer, parent)
	case map[string]any:
		shapedKey, shapedType := mcpShaped(v)
		out := make(map[string]any, len(v))
		for k, child := range v {
			where := pointer + "/" + k
			if k == shapedKey {
				s := child.(string)
				if data, ok := decodeBase64(s); ok {
					name := fileName(v, p.tool, where)
					media := mediaTypeOf(shapedType, data)
					ref, err := p.keep(name, media, data)
					if err != nil {
						return nil, err
					}
					if ref == "" {
						ref = dropped(media, len(data))
					}
					out[k] = ref
					continue
				}
			}
			conv, err := p.walk(child, ss.property(k), where, v)
			if err != nil {
				return nil, err
			}
			out[k] = conv
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, child := range v {
			conv, err := p.walk(child, ss.item(i), pointer+"/"+strconv.Itoa(i), nil)
			if err != nil {
				return nil, err
			}
			out[i] = conv
		}
		return out, nil
	default:
		return v, nil
	}
}

// convertString returns s, or the ref of the file it holds.
func (p *payloads) convertString(s string, ss schemaSet, pointer string, parent map[string]any) (any, error) {
	var (
		data  []byte
		media string
		ok    bool
	)
	if declared, declaredMedia := ss.binary(); declared {
		data, ok = decodeBase64(s)
		media = declaredMedia
	}
	if !ok {
		data, media, ok = decodeDataURL(s)
	}
	if !ok && looksLikeBase64File(s, p.guessMin) {
		data, ok = decodeBase64(s)
		media = ""
	}
	if !ok {
		return s, nil
	}
	media = mediaTypeOf(media, data)
	ref, err := p.keep(fileName(parent, p.tool, pointer), media, data)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		return dropped(media, len(data)), nil
	}
	return ref, nil
}

// mcpShaped returns the key of an object's base64 payload when the object has the shape of MCP's image or
// audio content ({"type": "image", "data", "mimeType"}) or blob resource contents ({"uri", "blob",
// "mimeType"}), with its media type.
func mcpShaped(obj map[string]any) (key, mediaType string) {
	mediaType, _ = obj["mimeType"].(string)
	kind, _ := obj["type"].(string)
	if _, ok := obj["data"].(string); ok && (kind == "image" || kind == "audio") && mediaType != "" {
		return "data", mediaType
	}
	if _, ok := obj["blob"].(string); ok {
		if _, hasURI := obj["uri"].(string); hasURI {
			return "blob", mediaType
		}
	}
	return "", ""
}

// contentBlock keeps the data of one binary content block (an image, audio or a resource's blob) and
// describes it: its type, media type, size and ref, or only the first three when the answer keeps nothing.
func (p *payloads) contentBlock(kind, mediaType, name string, data []byte, item map[string]any) error {
	media := mediaTypeOf(mediaType, data)
	item["type"], item["mimeType"], item["bytes"] = kind, media, len(data)
	ref, err := p.keep(name, media, data)
	if err != nil {
		return err
	}
	if ref != "" {
		item["ref"] = ref
	}
	return nil
}

// fileName is a file's name for people: the "name" or "filename" its object gives, else the last segment of
// its "uri", else the remote tool's name and where the file was in the answer ("shot-page-0-image").
func fileName(obj map[string]any, tool, pointer string) string {
	for _, k := range []string{"name", "filename", "fileName", "file_name"} {
		if s, ok := obj[k].(string); ok && cleanName(s) != "" {
			return cleanName(s)
		}
	}
	if s, ok := obj["uri"].(string); ok {
		if name := uriName(s); name != "" {
			return name
		}
	}
	return cleanName(tool + strings.ReplaceAll(pointer, "/", "-"))
}

// uriName is the last segment of a URI's path ("" when it has none).
func uriName(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	return cleanName(path.Base(u.Path))
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// cleanName makes s a short file name without folders or odd characters ("" when nothing is left).
func cleanName(s string) string {
	s = strings.Trim(unsafeNameChars.ReplaceAllString(s, "_"), "._")
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// mediaTypeOf is the declared media type when it is one, else the one the data's first bytes show.
func mediaTypeOf(declared string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(declared); err == nil && strings.Count(mt, "/") == 1 {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return mt
}

// preferredExtensions are the usual extensions of common media types (mime's table lists several, in
// alphabetical order: .jfif before .jpg).
var preferredExtensions = map[string]string{
	"application/octet-stream": ".bin", "application/pdf": ".pdf", "application/zip": ".zip", "application/gzip": ".gz",
	"application/json": ".json", "image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp",
	"image/svg+xml": ".svg", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg",
	"video/mp4": ".mp4", "text/plain": ".txt", "text/csv": ".csv", "text/html": ".html",
}

var extensionRe = regexp.MustCompile(`^\.[a-z0-9]{1,8}$`)

// extensionOf is a stored file's extension for a media type (".bin" when it has none), so the store's
// readers see the type in the ref.
func extensionOf(mediaType string) string {
	if ext, ok := preferredExtensions[mediaType]; ok {
		return ext
	}
	exts, _ := mime.ExtensionsByType(mediaType)
	for _, ext := range exts {
		if extensionRe.MatchString(ext) {
			return ext
		}
	}
	return ".bin"
}

// textual reports whether a media type is text, which a JSON string may hold as it is.
func textual(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") ||
		mt == "application/json" || mt == "application/xml" || mt == "application/javascript" || mt == "image/svg+xml"
}

// decodeBase64 decodes s in the standard or URL-safe alphabet, padded or not, with or without line breaks
// (MIME base64).
func decodeBase64(s string) ([]byte, bool) {
	if s == "" {
		return nil, false
	}
	if strings.ContainsAny(s, "\r\n\t ") {
		s = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' || r == '\t' || r == ' ' {
				return -1
			}
			return r
		}, s)
	}
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	data, err := enc.DecodeString(s)
	return data, err == nil
}

// dataURLRe matches the head of a base64 data: URL (RFC 2397) and captures its media type.
var dataURLRe = regexp.MustCompile(`(?i)^data:([^,;]*)(?:;[^,;]*)*;base64,`)

// decodeDataURL decodes a base64 data: URL.
func decodeDataURL(s string) ([]byte, string, bool) {
	if len(s) < 5 || !strings.EqualFold(s[:5], "data:") {
		return nil, "", false
	}
	m := dataURLRe.FindStringSubmatchIndex(s)
	if m == nil {
		return nil, "", false
	}
	data, ok := decodeBase64(s[m[1]:])
	return data, s[m[2]:m[3]], ok
}

// looksLikeBase64File reports whether an undeclared string is taken for a file: at least min characters, all
// of base64 (or line breaks), using at least guessMinSymbols different symbols of both cases.
func looksLikeBase64File(s string, min int) bool {
	if min <= 0 || len(s) < min {
		return false
	}
	var seen [128]bool
	distinct, upper, lower := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9', c == '+', c == '/', c == '-', c == '_':
		case c == '=', c == '\r', c == '\n':
			continue
		default:
			return false
		}
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	return upper && lower && distinct >= guessMinSymbols
}

// schemaSet are the schemas that apply at one place of a document.
type schemaSet []*jsonschema.Schema

// applying returns roots and every schema they apply at the same place ($ref, allOf, anyOf, oneOf, then,
// else), each once.
func applying(roots ...*jsonschema.Schema) schemaSet {
	var out schemaSet
	seen := map[*jsonschema.Schema]bool{}
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		for _, next := range [][]*jsonschema.Schema{{s.Ref, s.RecursiveRef, s.DynamicRef, s.Then, s.Else}, s.AllOf, s.AnyOf, s.OneOf} {
			for _, n := range next {
				add(n)
			}
		}
	}
	for _, r := range roots {
		add(r)
	}
	return out
}

// property returns the schemas that apply to an object's property.
func (ss schemaSet) property(name string) schemaSet {
	var next []*jsonschema.Schema
	for _, s := range ss {
		if p, ok := s.Properties[name]; ok {
			next = append(next, p)
			continue
		}
		matched := false
		for re, p := range s.PatternProperties {
			if re.MatchString(name) {
				next, matched = append(next, p), true
			}
		}
		if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !matched {
			next = append(next, ap)
		}
	}
	return applying(next...)
}

// item returns the schemas that apply to an array's item i.
func (ss schemaSet) item(i int) schemaSet {
	var next []*jsonschema.Schema
	for _, s := range ss {
		switch {
		case i < len(s.PrefixItems):
			next = append(next, s.PrefixItems[i])
		case s.Items2020 != nil:
			next = append(next, s.Items2020)
		}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			next = append(next, items)
		case []*jsonschema.Schema:
			if i < len(items) {
				next = append(next, items[i])
			} else if more, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				next = append(next, more)
			}
		}
	}
	return applying(next...)
}

// binary reports whether the schemas declare a string to be base64-encoded bytes, and the media type they
// give it ("" when none).
func (ss schemaSet) binary() (declared bool, mediaType string) {
	for _, s := range ss {
		switch strings.ToLower(s.ContentEncoding) {
		case "base64", "base64url":
			declared = true
		}
		if strings.EqualFold(s.Format, "byte") {
			declared = true
		}
		if mediaType == "" {
			mediaType = s.ContentMediaType
		}
	}
	// A JSON string cannot hold an image or a PDF as it is: a binary media type means base64.
	return declared || (mediaType != "" && !textual(mediaType)), mediaType
}

// compileOutputSchema compiles a tool's output schema as the registry does (draft 2020-12, nothing loaded
// from outside), for payloads to read its annotations. A schema that does not compile (the registry would
// have refused it) declares nothing.
func compileOutputSchema(raw json.RawMessage) (compiled *jsonschema.Schema) {
	defer func() {
		if recover() != nil {
			compiled = nil // the library panics on a few malformed schemas
		}
	}()
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("%s: not loaded", u) }
	if err := c.AddResource("gem://output.json", bytes.NewReader(raw)); err != nil {
		return nil
	}
	s, err := c.Compile("gem://output.json")
	if err != nil {
		return nil
	}
	return s
}
