package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gemhq/gem/registry/script"
)

// Implementation types. A tool without an implementation object is ImplGo.
const (
	// ImplGo is a handler compiled into the executor (the default).
	ImplGo = "go"
	// ImplREST is one HTTP request per call, described entirely by the registry entry.
	ImplREST = "rest"
	// ImplMCP is a tool of an MCP server named in the registry's mcp_servers.
	ImplMCP = "mcp"
	// ImplScript is a JavaScript function in the entry itself, run in GEM's sandbox (docs/code-mode.md).
	ImplScript = "script"
)

// Implementation says how the executor runs a tool's calls when it is not a Go handler. Every field but Type
// belongs to one type: Method, URL, Headers, Body, SuccessStatus and ResultPath to rest; Server and RemoteTool
// to mcp.
//
// Strings may name environment variables as ${NAME} (a REST URL, header values, an MCP server's env, URL and
// headers): the executor reads them when it calls, so secrets live in the executor's environment, never in
// the registry or in receipts.
type Implementation struct {
	Type string `json:"type"`

	// Method is the HTTP method (GET, POST, PUT, PATCH, DELETE).
	Method string `json:"method,omitempty"`
	// URL is the request URL. {field} is replaced by the input's top-level field, escaped for where it
	// stands: as a path segment in the path, as a query value in the query (a query pair whose field is
	// absent from the input is left out).
	URL string `json:"url,omitempty"`
	// Headers are sent with every request; values may name ${ENV} variables.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is "input" (the call's input as JSON; the default for POST, PUT and PATCH), "none" (the default
	// for GET and DELETE), or a JSON template whose strings "{field}" are replaced by the input's values
	// (keeping their JSON type), and whose other strings have {field} replaced by the value as text.
	Body json.RawMessage `json:"body,omitempty"`
	// SuccessStatus lists the HTTP statuses that count as success (default: every 2xx).
	SuccessStatus []int `json:"success_status,omitempty"`
	// ResultPath is a dotted path to the result inside the JSON response ("data.items"); empty: the whole
	// response. A response that is not JSON gives {"text": body} as the whole response.
	ResultPath string `json:"result_path,omitempty"`

	// Server names an entry of the registry's mcp_servers.
	Server string `json:"server,omitempty"`
	// RemoteTool is the tool's name on that server.
	RemoteTool string `json:"tool,omitempty"`

	// Source is a script tool's JavaScript: it defines function main(input), which returns the result.
	Source string `json:"source,omitempty"`
	// Calls names the registry tools the script may call (as gem.<domain>.<method>(input)), each call with
	// a receipt of its own.
	Calls []string `json:"calls,omitempty"`

	program *script.Program
}

// Program is a script tool's compiled source (nil for other types).
func (im *Implementation) Program() *script.Program { return im.program }

// MCPServer is how the executor reaches an MCP server: a stdio command (Command, Args, Env, Dir) or a
// streamable-HTTP endpoint (URL, Headers), never both.
type MCPServer struct {
	// Name is the server's key in mcp_servers.
	Name    string            `json:"-"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Dir is the command's working folder (default: the executor's).
	Dir     string            `json:"dir,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Transport is "stdio" or "http".
func (s *MCPServer) Transport() string {
	if s.Command != "" {
		return "stdio"
	}
	return "http"
}

// ImplementationType is the tool's implementation type: ImplGo, ImplREST or ImplMCP.
func (t *Tool) ImplementationType() string {
	if t.Implementation == nil {
		return ImplGo
	}
	return t.Implementation.Type
}

// MCPServer returns the mcp_servers entry with the given name.
func (r *Registry) MCPServer(name string) (*MCPServer, bool) {
	s, ok := r.mcpServers[name]
	return s, ok
}

// MCPServers returns every mcp_servers entry, sorted by name.
func (r *Registry) MCPServers() []*MCPServer {
	out := make([]*MCPServer, 0, len(r.mcpServers))
	for _, s := range r.mcpServers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var (
	envRefRe        = regexp.MustCompile(`\$\{([^}]*)\}`)
	envNameRe       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	placeholderRe   = regexp.MustCompile(`\{([^{}]*)\}`)
	fieldNameRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	serverNameRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	headerNameRe    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	restMethods     = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	bodyDefaultNone = []string{http.MethodGet, http.MethodDelete}
)

// EnvRefs returns the environment variable names a string refers to as ${NAME}.
func EnvRefs(s string) []string {
	var names []string
	for _, m := range envRefRe.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

// ExpandEnv replaces every ${NAME} in s with getenv(NAME). It returns the names that were unset or empty,
// so a caller can refuse to send a request with a missing secret.
func ExpandEnv(s string, getenv func(string) string) (string, []string) {
	var missing []string
	out := envRefRe.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v := getenv(name)
		if v == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}

// TemplateFields returns the {field} placeholders of a URL or body string, in order, without ${ENV}
// references.
func TemplateFields(s string) []string {
	s = envRefRe.ReplaceAllString(s, "")
	var names []string
	for _, m := range placeholderRe.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

// BodyMode is "input", "none" or "template" (Body holds a JSON template).
func (im *Implementation) BodyMode() string {
	var s string
	if len(im.Body) == 0 || string(im.Body) == "null" {
		if slices.Contains(bodyDefaultNone, im.Method) {
			return "none"
		}
		return "input"
	}
	if json.Unmarshal(im.Body, &s) == nil && (s == "input" || s == "none") {
		return s
	}
	return "template"
}

// Succeeded reports whether an HTTP status counts as success.
func (im *Implementation) Succeeded(status int) bool {
	if len(im.SuccessStatus) == 0 {
		return status >= 200 && status < 300
	}
	return slices.Contains(im.SuccessStatus, status)
}

// checkMCPServers decodes and checks the document's mcp_servers.
func (c *checker) checkMCPServers(raw json.RawMessage) map[string]*MCPServer {
	servers := map[string]*MCPServer{}
	if len(raw) == 0 || string(raw) == "null" {
		return servers
	}
	var entries map[string]json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		c.add("", "mcp_servers", `must be an object of servers by name ({"name": {"command": ...} or {"url": ...}})`)
		return servers
	}
	for name, entry := range entries {
		field := "mcp_servers." + name
		if !serverNameRe.MatchString(name) {
			c.add("", field, "has a name that is not letters, digits, '_', '.' or '-' (at most 64, starting with a letter or digit)")
			continue
		}
		s := &MCPServer{Name: name}
		dec := json.NewDecoder(strings.NewReader(string(entry)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(s); err != nil {
			c.add("", field, "is not a server object (command, args, env, dir for stdio; url, headers for HTTP): "+err.Error())
			continue
		}
		switch {
		case s.Command == "" && s.URL == "":
			c.add("", field, `needs "command" (a stdio server) or "url" (a streamable-HTTP server)`)
		case s.Command != "" && s.URL != "":
			c.add("", field, `has both "command" and "url"; a server is one or the other`)
		case s.URL != "":
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "" {
				c.add("", field, `is an HTTP server: "args", "env" and "dir" apply only to a stdio "command"`)
			}
			c.checkURL("", field+".url", s.URL)
		default:
			if len(s.Headers) > 0 {
				c.add("", field+".headers", `apply only to an HTTP server ("url")`)
			}
			// A command line is passed as written: a ${NAME} there would reach the server literally.
			for i, arg := range append([]string{s.Command}, s.Args...) {
				at := field + ".command"
				if i > 0 {
					at = fmt.Sprintf("%s.args[%d]", field, i-1)
				}
				if refs := EnvRefs(arg); len(refs) > 0 {
					c.add("", at, fmt.Sprintf(`names ${%s}, but a command line is not expanded: give the server its settings and secrets in "env"`, refs[0]))
				}
			}
		}
		for k, v := range s.Env {
			if !envNameRe.MatchString(k) {
				c.add("", field+".env", fmt.Sprintf("%q is not an environment variable name", k))
			}
			c.checkEnvRefs("", field+".env."+k, v)
		}
		c.checkHeaders("", field+".headers", s.Headers)
		servers[name] = s
	}
	return servers
}

// checkImplementation decodes and checks a tool's implementation object against its input schema and the
// document's MCP servers.
func (c *checker) checkImplementation(label string, raw json.RawMessage, t *Tool, servers map[string]*MCPServer) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	im := &Implementation{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(im); err != nil {
		c.add(label, "implementation", "is not an implementation object: "+err.Error())
		return
	}
	restOnly := im.Method != "" || im.URL != "" || len(im.Headers) > 0 || len(im.Body) > 0 || len(im.SuccessStatus) > 0 || im.ResultPath != ""
	mcpOnly := im.Server != "" || im.RemoteTool != ""
	scriptOnly := im.Source != "" || len(im.Calls) > 0
	if im.Type != ImplScript && scriptOnly {
		c.add(label, "implementation", `"source" and "calls" belong to type "script"`)
	}
	switch im.Type {
	case ImplScript:
		if restOnly || mcpOnly {
			c.add(label, "implementation", `of type "script" takes only "source" and "calls"`)
		}
		c.checkScript(label, im)
	case ImplGo:
		if restOnly || mcpOnly {
			c.add(label, "implementation", `of type "go" takes no other fields`)
		}
	case ImplREST:
		if mcpOnly {
			c.add(label, "implementation", `of type "rest" takes no "server" or "tool" (those are for "mcp")`)
		}
		c.checkREST(label, im, t)
	case ImplMCP:
		if restOnly {
			c.add(label, "implementation", `of type "mcp" takes only "server" and "tool"`)
		}
		switch {
		case im.Server == "":
			c.add(label, "implementation.server", "is required: the name of an entry of mcp_servers")
		case servers[im.Server] == nil:
			known := make([]string, 0, len(servers))
			for n := range servers {
				known = append(known, n)
			}
			sort.Strings(known)
			c.add(label, "implementation.server", fmt.Sprintf("%q is not in mcp_servers (known: %s)", im.Server, orNone(known)))
		}
		if strings.TrimSpace(im.RemoteTool) == "" {
			c.add(label, "implementation.tool", "is required: the tool's name on the MCP server")
		}
	case "":
		c.add(label, "implementation.type", `is required ("rest", "mcp" or "script"; leave implementation out for a Go handler)`)
	default:
		c.add(label, "implementation.type", fmt.Sprintf(`%q is not a known implementation type ("go", "rest", "mcp" or "script")`, im.Type))
	}
	t.Implementation = im
}

// checkScript compiles a script tool's source; the tools it calls are checked once every tool is known
// (checkScriptCalls).
func (c *checker) checkScript(label string, im *Implementation) {
	if strings.TrimSpace(im.Source) == "" {
		c.add(label, "implementation.source", "is required: JavaScript that defines function main(input)")
		return
	}
	p, err := script.CompileModule(label+".js", im.Source)
	if err != nil {
		var se *script.Error
		if errors.As(err, &se) && se.Code == script.CodeNoMain {
			c.add(label, "implementation.source", "defines no function main(input), which a call runs")
		} else if errors.As(err, &se) && se.Line > 0 {
			c.add(label, "implementation.source", fmt.Sprintf("does not compile: line %d, column %d: %s", se.Line, se.Column, se.Message))
		} else {
			c.add(label, "implementation.source", "does not compile: "+err.Error())
		}
		return
	}
	im.program = p
}

// checkScriptCalls checks what script tools call: tools of the registry, and no script calling itself,
// directly or through other scripts (a call would wait on a call that waits on it).
func (c *checker) checkScriptCalls(r *Registry) {
	for _, t := range r.tools {
		if t.ImplementationType() != ImplScript {
			continue
		}
		for _, name := range t.Implementation.Calls {
			if _, ok := r.byName[name]; !ok {
				c.add(t.Name, "implementation.calls", fmt.Sprintf("names %q, which is not a tool of the registry", name))
			}
		}
		if cycle := scriptCycle(r, t.Name, nil); cycle != nil {
			c.add(t.Name, "implementation.calls", "calls itself through "+strings.Join(cycle, " → ")+": a call would wait on itself")
		}
	}
}

// scriptCycle returns a path of script calls from name back to the first name of path, if there is one.
func scriptCycle(r *Registry, name string, path []string) []string {
	path = append(path, name)
	t := r.byName[name]
	if t == nil || t.ImplementationType() != ImplScript {
		return nil
	}
	for _, next := range t.Implementation.Calls {
		if next == path[0] {
			return append(path, next)
		}
		if slices.Contains(path, next) {
			continue
		}
		if cycle := scriptCycle(r, next, path); cycle != nil {
			return cycle
		}
	}
	return nil
}

func (c *checker) checkREST(label string, im *Implementation, t *Tool) {
	if !slices.Contains(restMethods, im.Method) {
		c.add(label, "implementation.method", fmt.Sprintf("%q is not one of %s", im.Method, strings.Join(restMethods, ", ")))
	}
	if im.URL == "" {
		c.add(label, "implementation.url", "is required for a rest tool")
	} else {
		c.checkEnvRefs(label, "implementation.url", im.URL)
		if !strings.HasPrefix(im.URL, "${") {
			// A placeholder stands for a value, so the URL is checked with each replaced by one.
			c.checkURL(label, "implementation.url", placeholderRe.ReplaceAllString(envRefRe.ReplaceAllString(im.URL, "x"), "x"))
		}
		c.checkTemplateFields(label, "implementation.url", TemplateFields(im.URL), t)
		c.checkURLAuthority(label, im.URL)
	}
	c.checkHeaders(label, "implementation.headers", im.Headers)
	switch im.BodyMode() {
	case "template":
		var tmpl any
		if json.Unmarshal(im.Body, &tmpl) != nil {
			c.add(label, "implementation.body", `must be "input", "none" or a JSON template`)
			break
		}
		if s, ok := tmpl.(string); ok && !strings.Contains(s, "{") {
			c.add(label, "implementation.body", fmt.Sprintf(`%q is not "input" or "none", and names no {field}`, s))
		}
		var fields []string
		walkStrings(tmpl, func(s string) {
			fields = append(fields, TemplateFields(s)...)
			for _, name := range EnvRefs(s) {
				c.add(label, "implementation.body", fmt.Sprintf("${%s}: a body template does not read the environment; a secret goes in a header or the URL", name))
			}
		})
		c.checkTemplateFields(label, "implementation.body", fields, t)
	case "input", "none":
		if im.BodyMode() == "input" && slices.Contains(bodyDefaultNone, im.Method) && len(im.Body) > 0 {
			c.add(label, "implementation.body", fmt.Sprintf(`"input" cannot be sent with %s`, im.Method))
		}
	}
	for i, s := range im.SuccessStatus {
		if s < 100 || s > 599 {
			c.add(label, fmt.Sprintf("implementation.success_status[%d]", i), fmt.Sprintf("%d is not an HTTP status", s))
		}
	}
	if im.ResultPath != "" {
		for _, seg := range strings.Split(im.ResultPath, ".") {
			if seg == "" {
				c.add(label, "implementation.result_path", fmt.Sprintf("%q has an empty segment", im.ResultPath))
				break
			}
		}
	}
}

// checkURLAuthority refuses a {field} where the input could choose the request's host: in the scheme or
// host, or right after a leading ${NAME} (the base URL) with no "/" between.
func (c *checker) checkURLAuthority(label, raw string) {
	var authority string
	if base := envRefRe.FindStringIndex(raw); base != nil && base[0] == 0 {
		rest := raw[base[1]:]
		if m := placeholderRe.FindStringIndex(rest); m != nil && m[0] == 0 {
			c.add(label, "implementation.url", fmt.Sprintf(`%s follows the base URL %s directly; put a "/" between so the input fills the path, not the host`,
				rest[m[0]:m[1]], raw[:base[1]]))
		}
		return
	}
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		authority = rest
		if end := strings.IndexAny(rest, "/?#"); end >= 0 {
			authority = rest[:end]
		}
	}
	for _, name := range TemplateFields(authority) {
		c.add(label, "implementation.url", fmt.Sprintf("{%s} stands in the URL's host; input fields may fill only the path and the query", name))
	}
}

// checkURL checks an absolute http(s) URL; a URL that starts with ${ENV} takes its scheme and host from the
// environment and is checked only for its references.
func (c *checker) checkURL(label, field, raw string) {
	c.checkEnvRefs(label, field, raw)
	if strings.HasPrefix(raw, "${") {
		return
	}
	u, err := url.Parse(envRefRe.ReplaceAllString(raw, "x"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.add(label, field, fmt.Sprintf("%q is not an absolute http or https URL", raw))
	}
}

func (c *checker) checkEnvRefs(label, field, s string) {
	for _, name := range EnvRefs(s) {
		if !envNameRe.MatchString(name) {
			c.add(label, field, fmt.Sprintf("${%s} is not an environment variable name", name))
		}
	}
}

func (c *checker) checkHeaders(label, field string, headers map[string]string) {
	for k, v := range headers {
		if !headerNameRe.MatchString(k) {
			c.add(label, field, fmt.Sprintf("%q is not an HTTP header name", k))
		}
		if strings.ContainsAny(v, "\r\n") {
			c.add(label, field+"."+k, "must not contain a line break")
		}
		c.checkEnvRefs(label, field+"."+k, v)
	}
}

// checkTemplateFields checks that each {field} of a template is a top-level property of the input schema.
func (c *checker) checkTemplateFields(label, field string, names []string, t *Tool) {
	for _, name := range names {
		switch {
		case !fieldNameRe.MatchString(name):
			c.add(label, field, fmt.Sprintf("{%s} is not a field name", name))
		case t.InputSchema != nil && !slices.Contains(topLevelProperties(t.InputSchema), name):
			c.add(label, field, fmt.Sprintf("{%s} is not a property of input_schema", name))
		}
	}
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Annotations are the hints an MCP client (or any other exporter) shows for a tool, derived from the
// registry entry.
type Annotations struct {
	// ReadOnly: every permission only reads ("read:db", "calendar:read"), so a call changes nothing.
	ReadOnly bool
	// Destructive: a call may change something outside the database (a send, a file, an integration), which
	// no transaction can take back.
	Destructive bool
	// Idempotent: calling again with the same key is harmless (modes safe-retry and keyed).
	Idempotent bool
	// OpenWorld: a call reaches beyond GEM's database (outside effects, or a rest or mcp implementation).
	OpenWorld bool
}

// Annotations derives the tool's hints from its permissions, idempotency mode and implementation.
func (t *Tool) Annotations() Annotations {
	readOnly := len(t.Permissions) > 0
	for _, p := range t.Permissions {
		verb, object, _ := strings.Cut(p, ":")
		if verb != "read" && object != "read" {
			readOnly = false
			break
		}
	}
	outside := t.HasOutsideEffects()
	return Annotations{
		ReadOnly:    readOnly && !outside,
		Destructive: outside && !readOnly,
		Idempotent:  t.Idempotency.Mode == ModeSafeRetry || t.Idempotency.Mode == ModeKeyed,
		OpenWorld:   outside || t.ImplementationType() != ImplGo,
	}
}
