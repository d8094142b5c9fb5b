package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
)

const (
	// MaxResponseBytes bounds the response body a rest call reads: a larger one ends the call with
	// remote_error instead of filling the executor's memory and the receipt.
	MaxResponseBytes = 8 << 20
	// maxErrorBodyBytes bounds what is read of a response that is not a success: enough for any error
	// message.
	maxErrorBodyBytes = 64 << 10
	// maxMessageRunes bounds the provider's message quoted in a receipt.
	maxMessageRunes = 500
	// minRedactLen: environment values shorter than this are not searched for in responses; they are too
	// short to be secrets and would mangle ordinary text.
	minRedactLen = 8
	// redacted replaces a secret wherever a response repeats it.
	redacted = "[redacted]"
	// maxRedirects bounds the redirects a rest call follows (only within its own scheme and host).
	maxRedirects = 10
)

// templateRe matches the references of a URL or header template: ${NAME} (the environment) and {field}
// (the input).
var templateRe = regexp.MustCompile(`\$\{([^}]*)\}|\{([^{}]*)\}`)

type partKind int

const (
	partLiteral partKind = iota
	partEnv
	partField
)

// part is a piece of a template: text as written, an environment variable's name, or an input field's.
type part struct {
	kind partKind
	text string
}

func parseTemplate(s string) []part {
	var parts []part
	last := 0
	for _, m := range templateRe.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > last {
			parts = append(parts, part{partLiteral, s[last:m[0]]})
		}
		if m[2] >= 0 {
			parts = append(parts, part{partEnv, s[m[2]:m[3]]})
		} else {
			parts = append(parts, part{partField, s[m[4]:m[5]]})
		}
		last = m[1]
	}
	if last < len(s) {
		parts = append(parts, part{partLiteral, s[last:]})
	}
	return parts
}

// queryPair is one name=value of a URL template's query.
type queryPair struct {
	key, value []part
	// fields are the input fields the pair names: it is left out when one is absent or null.
	fields []string
}

type headerTemplate struct {
	name  string
	value []part
}

// restTool is a rest tool's registry entry, parsed once when the executor starts.
type restTool struct {
	tool   *registry.Tool
	method string
	// label names the request in receipts and logs: the method and the URL as the registry writes it, so
	// no value read from the environment can appear.
	label      string
	path       []part
	query      []queryPair
	fragment   string
	headers    []headerTemplate
	bodyMode   string
	body       any
	env        []string
	repeatable bool
	client     *http.Client
	getenv     func(string) string
}

// restHandler makes the handler of a rest tool: one HTTP request per call, described by the tool's
// implementation entry.
func restHandler(t *registry.Tool, opts Options) executor.Handler {
	r := newRESTTool(t, opts)
	return executor.Handler{Run: r.run, RequiredEnv: r.env, Isolated: true}
}

func newRESTTool(t *registry.Tool, opts Options) *restTool {
	im := t.Implementation
	r := &restTool{
		tool:     t,
		method:   im.Method,
		label:    im.Method + " " + im.URL,
		bodyMode: im.BodyMode(),
		getenv:   opts.Getenv,
		// A tool may be run again only when its mode says running twice is harmless and the executor
		// does not hold it to one run (outside effects that people see twice).
		repeatable: (t.Idempotency.Mode == registry.ModeSafeRetry || t.Idempotency.Mode == registry.ModeKeyed) && !t.RunsAtMostOnce(),
	}
	raw, fragment, _ := strings.Cut(im.URL, "#")
	r.fragment = fragment
	pathT, queryT, _ := strings.Cut(raw, "?")
	r.path = parseTemplate(pathT)
	if queryT != "" {
		for _, pair := range strings.Split(queryT, "&") {
			if pair == "" {
				continue
			}
			k, v, hasValue := strings.Cut(pair, "=")
			q := queryPair{key: parseTemplate(k)}
			if hasValue {
				q.value = parseTemplate(v)
			}
			for _, p := range slices.Concat(q.key, q.value) {
				if p.kind == partField {
					q.fields = append(q.fields, p.text)
				}
			}
			r.query = append(r.query, q)
		}
	}
	names := make([]string, 0, len(im.Headers))
	for name := range im.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r.headers = append(r.headers, headerTemplate{name: name, value: parseTemplate(im.Headers[name])})
	}
	if r.bodyMode == "template" {
		r.body, _ = decodeJSON(im.Body) // the registry check made sure it is JSON
	}

	env := registry.EnvRefs(im.URL)
	for _, v := range im.Headers {
		env = append(env, registry.EnvRefs(v)...)
	}
	sort.Strings(env)
	r.env = slices.Compact(env)

	client := *opts.HTTPClient
	// Redirects stay on the tool's own scheme and host: headers that carry secrets must not follow a
	// provider's redirect elsewhere (Go keeps custom headers such as X-Api-Key across hosts).
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects || req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}
	r.client = &client
	return r
}

// request is one call's request, with the secrets it was built from.
type request struct {
	url     string
	headers http.Header
	body    []byte
	secrets []string
}

func (r *restTool) run(ctx context.Context, c *executor.Call) (any, error) {
	env, err := r.readEnv()
	if err != nil {
		return nil, err
	}
	input := map[string]any{}
	if v, ok := decodeJSON(c.Input); ok {
		if m, ok := v.(map[string]any); ok {
			input = m
		}
	}
	req, err := r.build(input, c.Input, env)
	if err != nil {
		return nil, err
	}
	return r.send(ctx, c, req)
}

// readEnv reads the environment variables the tool names. A missing one stops the call before anything is
// sent: a request without its secret would fail at the provider, or worse, reach it unauthenticated.
func (r *restTool) readEnv() (map[string]string, error) {
	env := make(map[string]string, len(r.env))
	var missing []string
	for _, name := range r.env {
		v := r.getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		env[name] = v
	}
	if len(missing) > 0 {
		return nil, executor.NotConfigured(
			fmt.Sprintf("tool %s needs %s in the executor's environment", r.tool.Name, strings.Join(missing, ", ")),
			missing,
			fmt.Sprintf("Set %s in the executor's environment and restart it.", strings.Join(missing, ", ")),
			"The registry names the variables in the tool's implementation (url and headers); their values are never stored in the registry or in receipts.")
	}
	return env, nil
}

// build fills the tool's templates for one call.
func (r *restTool) build(input map[string]any, rawInput json.RawMessage, env map[string]string) (*request, error) {
	req := &request{headers: http.Header{}}
	// Secrets are every value read from the environment but the URL's leading ${NAME}: that is the
	// provider's base URL, which responses often link back to.
	for i, p := range r.path {
		if p.kind == partEnv && i > 0 {
			req.secrets = append(req.secrets, env[p.text])
		}
	}

	path, err := r.renderPath(env, func(field string) (string, error) {
		s, err := pathValue(field, input)
		return url.PathEscape(s), err
	})
	if err != nil {
		return nil, err
	}
	var u strings.Builder
	u.WriteString(path)
	sep := "?"
pairs:
	for _, q := range r.query {
		for _, f := range q.fields {
			if input[f] == nil {
				continue pairs
			}
		}
		u.WriteString(sep)
		sep = "&"
		if err := r.writeQuery(&u, q.key, input, env, req); err != nil {
			return nil, err
		}
		if q.value != nil {
			u.WriteByte('=')
			if err := r.writeQuery(&u, q.value, input, env, req); err != nil {
				return nil, err
			}
		}
	}
	if r.fragment != "" {
		u.WriteString("#" + r.fragment)
	}
	req.url = u.String()
	if err := r.checkAuthority(req.url, env); err != nil {
		return nil, err
	}

	for _, h := range r.headers {
		var v strings.Builder
		for _, p := range h.value {
			if p.kind == partEnv {
				v.WriteString(env[p.text])
				req.secrets = append(req.secrets, env[p.text])
			} else {
				// Headers take no input: {field} is text like any other.
				v.WriteString(renderPart(p))
			}
		}
		if strings.ContainsAny(v.String(), "\r\n\x00") {
			return nil, executor.NotConfigured(fmt.Sprintf("header %s of tool %s holds a line break once its environment variables are read", h.name, r.tool.Name),
				r.env, "Check the values of "+strings.Join(r.env, ", ")+": a header value is one line.")
		}
		req.headers.Set(h.name, v.String())
	}

	switch r.bodyMode {
	case "input":
		req.body = rawInput
	case "template":
		v, _ := fillBody(r.body, input)
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("error encoding the body of %s: %w", r.label, err)
		}
		req.body = b
	}
	for _, def := range [][2]string{{"Accept", "application/json"}, {"User-Agent", "GEM-executor/" + executor.Version + " (rest tool " + r.tool.Name + ")"}} {
		if req.headers.Get(def[0]) == "" {
			req.headers.Set(def[0], def[1])
		}
	}
	if req.body != nil && req.headers.Get("Content-Type") == "" {
		req.headers.Set("Content-Type", "application/json")
	}
	return req, nil
}

// renderPart writes a template part back as the registry has it.
func renderPart(p part) string {
	switch p.kind {
	case partEnv:
		return "${" + p.text + "}"
	case partField:
		return "{" + p.text + "}"
	}
	return p.text
}

func (r *restTool) writeQuery(u *strings.Builder, parts []part, input map[string]any, env map[string]string, req *request) error {
	for _, p := range parts {
		switch p.kind {
		case partLiteral:
			u.WriteString(p.text)
		case partEnv:
			u.WriteString(url.QueryEscape(env[p.text]))
			req.secrets = append(req.secrets, env[p.text])
		case partField:
			s, ok := scalarText(input[p.text])
			if !ok {
				return invalidField(p.text, "%s is an %s; a URL takes only strings, numbers and booleans", p.text, jsonKind(input[p.text]))
			}
			u.WriteString(url.QueryEscape(s))
		}
	}
	return nil
}

// renderPath writes the URL's path template: literals as they are, ${NAME} from env, and each {field} as
// field returns it.
func (r *restTool) renderPath(env map[string]string, field func(name string) (string, error)) (string, error) {
	var b strings.Builder
	for _, p := range r.path {
		switch p.kind {
		case partLiteral:
			b.WriteString(p.text)
		case partEnv:
			b.WriteString(env[p.text])
		case partField:
			s, err := field(p.text)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		}
	}
	return b.String(), nil
}

// checkAuthority makes sure the input did not change where the request goes: a field placed right after
// the base URL ("${API}{path}") could otherwise send the tool's headers to another host ("@evil.example").
func (r *restTool) checkAuthority(full string, env map[string]string) error {
	got, err := url.Parse(full)
	if err != nil {
		return executor.Invalid("the input makes %s an invalid URL: %v", r.label, err)
	}
	want, _ := r.renderPath(env, func(string) (string, error) { return "x", nil })
	expected, err := url.Parse(want)
	if err != nil || (expected.Scheme != "http" && expected.Scheme != "https") || expected.Host == "" {
		return executor.NotConfigured(fmt.Sprintf("the URL of tool %s is not an absolute http or https URL once its environment variables are read", r.tool.Name),
			r.env, "Check the values of "+strings.Join(r.env, ", ")+": the URL must start with http:// or https:// and a host.")
	}
	if got.Scheme != expected.Scheme || got.Host != expected.Host || got.User.String() != expected.User.String() {
		return executor.Invalid("the input would send %s to another host; input values may only fill the URL's path and query", r.label)
	}
	return nil
}

// pathValue is the text of a field that fills a path segment.
func pathValue(field string, input map[string]any) (string, error) {
	v := input[field]
	if v == nil {
		return "", invalidField(field, "%s is needed: it fills the URL's path", field)
	}
	s, ok := scalarText(v)
	if !ok {
		return "", invalidField(field, "%s is an %s; a URL takes only strings, numbers and booleans", field, jsonKind(v))
	}
	switch s {
	case "":
		return "", invalidField(field, "%s is empty; it fills a segment of the URL's path", field)
	case ".", "..":
		return "", invalidField(field, "%s is %q, which would move up the URL's path", field, s)
	}
	return s, nil
}

func invalidField(field, format string, args ...any) error {
	return &executor.Error{Code: registry.CodeValidation, Message: fmt.Sprintf(format, args...), Details: map[string]any{"field": field}}
}

// scalarText is a string, number or boolean as URL text; false for an object, array or null.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return "scalar"
}

// fillBody replaces the fields of a body template. A string that is exactly "{field}" becomes the field's
// value with its JSON type (absent: left out of an object, null elsewhere); in other strings each {field}
// becomes the value as text. The second result is false for an absent whole-string field.
func fillBody(tmpl any, input map[string]any) (any, bool) {
	switch t := tmpl.(type) {
	case string:
		parts := parseTemplate(t)
		if len(parts) == 1 && parts[0].kind == partField {
			v, ok := input[parts[0].text]
			return v, ok
		}
		var b strings.Builder
		for _, p := range parts {
			if p.kind == partField {
				b.WriteString(bodyText(input[p.text]))
			} else {
				b.WriteString(renderPart(p))
			}
		}
		return b.String(), true
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			if filled, ok := fillBody(v, input); ok {
				out[k] = filled
			}
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			out[i], _ = fillBody(v, input)
		}
		return out, true
	}
	return tmpl, true
}

// bodyText is a value inside a body string: scalars as text, objects and arrays as JSON, null as nothing.
func bodyText(v any) string {
	if s, ok := scalarText(v); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// send makes the request and turns the response into the call's result or error.
func (r *restTool) send(ctx context.Context, c *executor.Call, req *request) (any, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hreq, err := http.NewRequestWithContext(ctx, r.method, req.url, body)
	if err != nil {
		return nil, executor.Invalid("cannot make the request %s: %v", r.label, stripURL(err))
	}
	hreq.Header = req.headers
	if host := req.headers.Get("Host"); host != "" {
		hreq.Host = host
	}
	red := newRedactor(req.secrets)

	resp, err := r.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			// The tool's timeout (the executor writes the timeout receipt) or a shutdown (another
			// attempt follows): either way the executor decides.
			return nil, ctx.Err()
		}
		msg := fmt.Sprintf("%s could not be completed: %s", r.label, red.text(stripURL(err).Error()))
		if r.repeatable {
			return nil, executor.Retryable(errors.New(msg))
		}
		return nil, r.remoteError(msg+r.notRetried(), map[string]any{"error": red.text(stripURL(err).Error())})
	}
	defer resp.Body.Close()

	if !r.tool.Implementation.Succeeded(resp.StatusCode) {
		return nil, r.failure(ctx, resp, red)
	}
	if resp.ContentLength > MaxResponseBytes {
		return nil, r.tooLarge(resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := fmt.Sprintf("%s answered HTTP %d but its body could not be read: %s", r.label, resp.StatusCode, red.text(stripURL(err).Error()))
		if r.repeatable {
			return nil, executor.Retryable(errors.New(msg))
		}
		return nil, r.remoteError(msg+r.notRetried(), map[string]any{"status": resp.StatusCode})
	}
	if len(data) > MaxResponseBytes {
		return nil, r.tooLarge(resp.StatusCode)
	}

	result := red.value(responseValue(data))
	if p := r.tool.Implementation.ResultPath; p != "" {
		v, missing := lookupPath(result, p)
		if missing != "" {
			return nil, r.remoteError(fmt.Sprintf("%s answered HTTP %d without %s (the tool's result_path): the response has no %q", r.label, resp.StatusCode, p, missing),
				map[string]any{"status": resp.StatusCode, "result_path": p})
		}
		result = v
	}
	if r.tool.HasOutsideEffects() {
		c.RecordOutside(registry.OutsideEffect{Kind: "http", Target: r.label, Reference: "HTTP " + strconv.Itoa(resp.StatusCode)})
	}
	return result, nil
}

// failure is the error for a response whose status is not a success: a retry for a passing trouble (5xx,
// 429, 408) of a tool that may run again, remote_error otherwise.
func (r *restTool) failure(ctx context.Context, resp *http.Response, red *redactor) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	decoded, isJSON := decodeJSON(data)
	if !isJSON {
		decoded = string(data)
	}
	decoded = red.value(decoded)
	message := providerMessage(decoded)
	if message == "" {
		message = http.StatusText(resp.StatusCode)
	}
	text := fmt.Sprintf("%s answered HTTP %d: %s", r.label, resp.StatusCode, message)
	transient := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout
	details := map[string]any{"status": resp.StatusCode, "message": message}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		details["retry_after"] = ra
	}
	if transient && r.repeatable {
		// The last attempt's retries_exhausted receipt keeps the status and Retry-After.
		details["method"], details["url"] = r.method, r.tool.Implementation.URL
		return executor.RetryableWith(errors.New(text), details)
	}
	if isJSON && len(data) <= 4<<10 {
		details["response"] = decoded
	}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		details["location"] = red.text(loc)
		text += " (redirects are followed only within the tool's own host)"
	}
	if transient {
		text += r.notRetried()
	}
	return r.remoteError(text, details)
}

// notRetried explains why a passing failure was not retried.
func (r *restTool) notRetried() string {
	if r.tool.RunsAtMostOnce() {
		return "; not retried: the tool has effects outside the database and the request may have reached the provider, so a second run could repeat them"
	}
	return fmt.Sprintf("; not retried: the tool's idempotency mode is %s (safe-retry or keyed allow retries)", r.tool.Idempotency.Mode)
}

func (r *restTool) tooLarge(status int) error {
	return r.remoteError(fmt.Sprintf("%s answered HTTP %d with a body over %d MiB, more than a rest tool reads", r.label, status, MaxResponseBytes>>20),
		map[string]any{"status": status, "limit_bytes": MaxResponseBytes})
}

func (r *restTool) remoteError(message string, details map[string]any) error {
	details["method"] = r.method
	details["url"] = r.tool.Implementation.URL
	return &executor.Error{Code: registry.CodeRemoteError, Message: message, Details: details}
}

// stripURL drops the request URL from a client error: it may hold secrets read from the environment.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// decodeJSON decodes one JSON value, keeping numbers as written.
func decodeJSON(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// responseValue is a success's body as the result: its JSON, {} for an empty body, {"text": body} for
// anything else (many APIs label JSON text/plain, so the body decides, not its Content-Type).
func responseValue(data []byte) any {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}
	}
	if v, ok := decodeJSON(data); ok {
		return v
	}
	return map[string]any{"text": string(data)}
}

// lookupPath follows a dotted path through objects (by key) and arrays (by index). It returns the part of
// the path that is missing, or "".
func lookupPath(v any, path string) (any, string) {
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[seg]
			if !ok {
				return nil, strings.Join(segs[:i+1], ".")
			}
			v = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(node) {
				return nil, strings.Join(segs[:i+1], ".")
			}
			v = node[n]
		default:
			return nil, strings.Join(segs[:i+1], ".")
		}
	}
	return v, ""
}

// providerMessage finds the message in an error response's common shapes: {"error": "..."},
// {"error": {"message": "..."}}, {"message": "..."}, {"detail": "..."}, {"title": "..."} (RFC 9457),
// {"errors": [{"message": "..."}]}; a body that is none of them is quoted as text.
func providerMessage(v any) string {
	if m, ok := v.(map[string]any); ok {
		candidates := []any{m["error"], dig(m, "error", "message"), m["message"], m["detail"], m["error_description"], m["title"]}
		if errs, ok := m["errors"].([]any); ok && len(errs) > 0 {
			candidates = append(candidates, dig(errs[0], "message"), errs[0])
		}
		for _, c := range candidates {
			if s, ok := c.(string); ok && strings.TrimSpace(s) != "" {
				return truncate(s)
			}
		}
	}
	if s, ok := v.(string); ok {
		return truncate(s)
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return truncate(string(b))
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func truncate(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if utf8.RuneCountInString(s) <= maxMessageRunes {
		return s
	}
	return string([]rune(s)[:maxMessageRunes]) + "…"
}

// redactor replaces the secrets of a request wherever a response repeats them, so they never reach a
// receipt.
type redactor struct{ r *strings.Replacer }

func newRedactor(secrets []string) *redactor {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= minRedactLen {
			pairs = append(pairs, s, redacted)
			// A secret in a query travels escaped; a response may repeat it that way.
			if e := url.QueryEscape(s); e != s {
				pairs = append(pairs, e, redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return &redactor{}
	}
	return &redactor{strings.NewReplacer(pairs...)}
}

func (r *redactor) text(s string) string {
	if r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// value redacts every string of a decoded JSON value, object keys included.
func (r *redactor) value(v any) any {
	if r.r == nil {
		return v
	}
	switch v := v.(type) {
	case string:
		return r.r.Replace(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.r.Replace(k)] = r.value(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = r.value(e)
		}
		return v
	}
	return v
}
