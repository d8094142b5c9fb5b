// Package registry is GEM's contract: it loads and checks tools.registry.json, compiles every tool's input
// and output JSON Schema once, and owns every type that crosses the queue between the brain and the executor
// (job args, calls, receipts, statuses and error codes).
//
// A registry is a JSON document:
//
//	{ "version": "1", "tools": [ { "name": "os.create_note", "description": "...",
//	    "input_schema": {...}, "output_schema": {...}, "permissions": ["write:notes"],
//	    "idempotency": {"mode": "keyed", "key_field": "phone"}, "timeout_ms": 5000,
//	    "receipt_fields": ["result.note_id"] } ] }
//
// A tool that is not a Go handler carries an "implementation" (rest or mcp, see Implementation); MCP servers
// are declared once in the document's "mcp_servers" (see MCPServer).
//
// Load and Parse reject a broken registry with a *CheckError that lists every problem, each naming the tool
// and the field.
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds for a tool's timeout_ms.
const (
	// TimeoutMin is the smallest timeout_ms a tool may declare.
	TimeoutMin = 10 * time.Millisecond
	// TimeoutMax is the largest timeout_ms a tool may declare. Calls are waited on by people and agents, and a
	// crashed executor's calls are taken up again only after the longest timeout, so it is kept short.
	TimeoutMax = 15 * time.Minute
)

// DefaultPath is the registry file GEM loads when no other path is configured.
const DefaultPath = "tools.registry.json"

// Mode is a tool's idempotency mode.
type Mode string

// Idempotency modes.
const (
	// ModeNone runs every call. A call is still never run twice: if an earlier attempt may have had effects
	// outside the database, the call ends with an outcome_unknown receipt instead of a second run.
	ModeNone Mode = "none"
	// ModeSafeRetry marks a tool that is safe to run again. A call with a caller-given idempotency key gets the
	// receipt of the earlier succeeded call with that key instead of running again.
	ModeSafeRetry Mode = "safe-retry"
	// ModeKeyed takes the idempotency key from the input's key_field (or the call's explicit key): two calls
	// with the same tool and key run the handler once.
	ModeKeyed Mode = "keyed"
)

// Idempotency is a tool's idempotency declaration.
type Idempotency struct {
	Mode     Mode   `json:"mode"`
	KeyField string `json:"key_field,omitempty"`
}

// Tool is one registry entry. The schema fields keep the registry's bytes; the compiled schemas are private.
type Tool struct {
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	InputSchema   json.RawMessage `json:"input_schema"`
	OutputSchema  json.RawMessage `json:"output_schema"`
	Permissions   []string        `json:"permissions"`
	Idempotency   Idempotency     `json:"idempotency"`
	TimeoutMS     int64           `json:"timeout_ms"`
	ReceiptFields []string        `json:"receipt_fields"`

	// OutsideEffects overrides what the permissions say about effects outside the database (an optional GEM
	// extension; registries without it load unchanged).
	OutsideEffects *bool `json:"outside_effects,omitempty"`

	// Implementation says how a tool that is not a Go handler runs (rest or mcp); nil for a Go handler.
	Implementation *Implementation `json:"implementation,omitempty"`

	// DeviceAgnostic marks a tool that devices serve and any of them may run: a call that names no device
	// goes to the connected device with the freshest heartbeat that serves it (docs/devices.md).
	DeviceAgnostic bool `json:"device_agnostic,omitempty"`

	// Limits bound the tool's calls (sizes); nil: the executor's defaults.
	Limits *Limits `json:"limits,omitempty"`

	// Approval makes every call of the tool wait for a person's decision; nil: none (policies by
	// permission may still require one).
	Approval *Approval `json:"approval,omitempty"`

	input  *schema
	output *schema
	// inputProps is the input schema's top-level property names, used to merge context ids into inputs.
	inputProps []string
	// secretPaths are the paths of the secret input properties (see SecretPaths).
	secretPaths [][]string
}

// Domain is the part of the name before the last dot: "leads" for "leads.create",
// "integrations.highlevel" for "integrations.highlevel.sync_contacts".
func (t *Tool) Domain() string { return t.Name[:strings.LastIndexByte(t.Name, '.')] }

// Method is the part of the name after the last dot.
func (t *Tool) Method() string { return t.Name[strings.LastIndexByte(t.Name, '.')+1:] }

// Timeout is the tool's timeout_ms as a duration.
func (t *Tool) Timeout() time.Duration { return time.Duration(t.TimeoutMS) * time.Millisecond }

// HasOutsideEffects reports whether a call may change something outside GEM's database (send a message,
// write a file, call an integration), which a rolled-back transaction cannot undo. It is what the tool's
// outside_effects field says, or else whether a permission matches OutsideEffectPermissions. A script that
// calls other tools always has.
func (t *Tool) HasOutsideEffects() bool {
	if t.ImplementationType() == ImplScript && len(t.Implementation.Calls) > 0 {
		// The calls a script makes commit on their own, outside its transaction: a second run makes them
		// again, whatever the script's own permissions say.
		return true
	}
	if t.OutsideEffects != nil {
		return *t.OutsideEffects
	}
	for _, p := range t.Permissions {
		if PermissionHasOutsideEffects(p) {
			return true
		}
	}
	return false
}

// InputProperties returns the input schema's top-level property names, sorted, in a slice of the caller's own.
func (t *Tool) InputProperties() []string { return slices.Clone(t.inputProps) }

// HasInputProperty reports whether the input schema declares a top-level property name.
func (t *Tool) HasInputProperty(name string) bool {
	_, found := slices.BinarySearch(t.inputProps, name)
	return found
}

// OutsideEffectPermissions are the permission patterns that mean effects outside the database. A pattern
// ending in ":*" matches every permission with that verb.
var OutsideEffectPermissions = []string{
	"send:*", "publish:*", "pay:*", "call:*",
	"write:files", "write:integrations", "write:external", "write:web", "delete:files", "delete:integrations",
}

// PermissionHasOutsideEffects reports whether one permission matches OutsideEffectPermissions.
func PermissionHasOutsideEffects(permission string) bool {
	return permissionMatches(OutsideEffectPermissions, permission)
}

// UnrepeatablePermissions are the outside effects that a second run repeats where people see it (a second
// SMS, a second payment), whatever the tool's idempotency mode says: GEM's registry marks its sends
// safe-retry, meaning a caller may retry with the same idempotency key and get the first receipt, not that
// the message may go out twice.
var UnrepeatablePermissions = []string{"send:*", "publish:*", "pay:*", "call:*"}

// RunsAtMostOnce reports whether the handler of a call must never start twice, even after a crash: it has
// outside effects and either its mode is not safe-retry or an effect is in UnrepeatablePermissions. Such a
// call whose earlier attempt died mid-run ends outcome_unknown instead of running again.
func (t *Tool) RunsAtMostOnce() bool {
	if !t.HasOutsideEffects() {
		return false
	}
	if t.Idempotency.Mode != ModeSafeRetry {
		return true
	}
	for _, p := range t.Permissions {
		if permissionMatches(UnrepeatablePermissions, p) {
			return true
		}
	}
	return false
}

// permissionMatches reports whether permission matches one of patterns; a pattern ending in ":*" matches
// every permission with that verb.
func permissionMatches(patterns []string, permission string) bool {
	for _, pattern := range patterns {
		if verb, ok := strings.CutSuffix(pattern, ":*"); ok {
			if strings.HasPrefix(permission, verb+":") {
				return true
			}
		} else if permission == pattern {
			return true
		}
	}
	return false
}

// Registry is a loaded, checked registry. It is safe for concurrent use: what its accessors return is the
// caller's own (a fresh slice or map) or shared and never changed (a *Tool: read it, never change it), so no
// reader can change what another sees.
type Registry struct {
	// Version is the registry document's version string.
	Version string
	// Path is the file the registry was loaded from, if any.
	Path string

	tools      []*Tool
	byName     map[string]*Tool
	mcpServers map[string]*MCPServer

	// devices are the tools connected devices serve, which a brain's registry shows beside its own (see
	// SetDeviceTools); nil in an executor.
	devices atomic.Pointer[deviceCatalog]

	// secrets seals the secret inputs of calls made through this registry (see SetSecrets); nil: no key.
	secrets *Secrets
}

// deviceCatalog is the registry's own tools with those devices serve.
type deviceCatalog struct {
	all      []*Tool             // every tool, sorted by name
	byName   map[string]*Tool    // the devices' tools that are not the registry's
	servedBy map[string][]string // tool name → devices serving it (registry tools too)
}

// Tool returns the tool with the given name: the registry's, or one a connected device serves.
func (r *Registry) Tool(name string) (*Tool, bool) {
	t, ok := r.byName[name]
	if !ok {
		if d := r.devices.Load(); d != nil {
			t, ok = d.byName[name]
		}
	}
	return t, ok
}

// Tools returns every tool, sorted by name: the registry's and those connected devices serve, in a slice of
// the caller's own (sort or filter it freely).
func (r *Registry) Tools() []*Tool { return slices.Clone(r.all()) }

// all is every tool, in the registry's own slice: for reading here, never handed out.
func (r *Registry) all() []*Tool {
	if d := r.devices.Load(); d != nil {
		return d.all
	}
	return r.tools
}

// OwnTool returns the registry document's tool with the given name, not a device's.
func (r *Registry) OwnTool(name string) (*Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// OwnTools returns the registry document's tools, sorted by name, without devices' tools, in a slice of the
// caller's own.
func (r *Registry) OwnTools() []*Tool { return slices.Clone(r.tools) }

// Len is the number of tools (Tools).
func (r *Registry) Len() int { return len(r.all()) }

// SetDeviceTools makes the tools connected devices serve part of Tool and Tools (replacing those set
// before): tools, each once by name, and servedBy, the devices serving each tool name (registry tools
// included). A device tool named like a registry tool is the registry's. Safe to call while others read; the
// registry keeps copies of tools and servedBy, so the caller may reuse them.
func (r *Registry) SetDeviceTools(tools []*Tool, servedBy map[string][]string) {
	if len(tools) == 0 && len(servedBy) == 0 {
		r.devices.Store(nil)
		return
	}
	d := &deviceCatalog{all: slices.Clone(r.tools), byName: map[string]*Tool{}, servedBy: make(map[string][]string, len(servedBy))}
	for name, devices := range servedBy {
		d.servedBy[name] = slices.Clone(devices)
	}
	for _, t := range tools {
		if _, own := r.byName[t.Name]; own {
			continue
		}
		if _, dup := d.byName[t.Name]; dup {
			continue
		}
		d.byName[t.Name] = t
		d.all = append(d.all, t)
	}
	sort.Slice(d.all, func(i, j int) bool { return d.all[i].Name < d.all[j].Name })
	r.devices.Store(d)
}

// ServedBy names the connected devices that serve a tool (as SetDeviceTools last said), or nil, in a slice of
// the caller's own.
func (r *Registry) ServedBy(name string) []string {
	if d := r.devices.Load(); d != nil {
		return slices.Clone(d.servedBy[name])
	}
	return nil
}

// LongestTimeout is the largest tool timeout, or zero for an empty registry.
func (r *Registry) LongestTimeout() time.Duration {
	var longest time.Duration
	for _, t := range r.all() {
		longest = max(longest, t.Timeout())
	}
	return longest
}

// Domains returns the tools grouped by domain, with domains sorted.
func (r *Registry) Domains() ([]string, map[string][]*Tool) {
	byDomain := make(map[string][]*Tool)
	for _, t := range r.all() {
		byDomain[t.Domain()] = append(byDomain[t.Domain()], t)
	}
	domains := make([]string, 0, len(byDomain))
	for d := range byDomain {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	return domains, byDomain
}

// Load reads, parses and checks the registry file at path.
func Load(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading registry: %w", err)
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", path, err)
	}
	r.Path = path
	return r, nil
}

// Find locates a registry file: path itself if it exists, else, for a relative path, the same path in the
// nearest parent folder (so commands and tests run from a module folder find the repository's registry).
func Find(path string) (string, error) {
	if _, err := os.Stat(path); err == nil || filepath.IsAbs(path) {
		return path, err
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("error finding registry: %w", err)
	}
	for {
		candidate := filepath.Join(dir, path)
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("registry %s not found in the working folder or its parents", path)
		}
		dir = parent
	}
}

// document is the registry file's shape. Tools are decoded one by one so an error names the tool.
type document struct {
	Version    *string           `json:"version"`
	Tools      []json.RawMessage `json:"tools"`
	MCPServers json.RawMessage   `json:"mcp_servers"`
}

// Parse parses and checks a registry document. On failure it returns a *CheckError listing every problem.
func Parse(data []byte) (*Registry, error) {
	var doc document
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, &CheckError{Problems: []Problem{{Field: "(document)", Message: "is not a JSON object of the registry format: " + jsonErrorText(data, err)}}}
	}
	if dec.More() {
		return nil, &CheckError{Problems: []Problem{{Field: "(document)", Message: "has data after the registry object"}}}
	}

	c := &checker{}
	if doc.Version == nil || strings.TrimSpace(*doc.Version) == "" {
		c.add("", "version", "is required (a non-empty string)")
	}
	if doc.Tools == nil {
		c.add("", "tools", "is required (an array of tools)")
	}

	r := &Registry{byName: make(map[string]*Tool, len(doc.Tools)), mcpServers: c.checkMCPServers(doc.MCPServers)}
	if doc.Version != nil {
		r.Version = *doc.Version
	}
	comp := newSchemaCompiler()
	for i, raw := range doc.Tools {
		t, ok := c.checkTool(i, raw, comp, r.mcpServers)
		if !ok {
			continue
		}
		if _, dup := r.byName[t.Name]; dup {
			c.add(t.Name, "name", fmt.Sprintf("is a duplicate: tools[%d] has the same name as an earlier tool", i))
			continue
		}
		r.byName[t.Name] = t
		r.tools = append(r.tools, t)
	}
	c.checkScriptCalls(r)
	if len(c.problems) > 0 {
		return nil, &CheckError{Problems: c.problems}
	}
	sort.Slice(r.tools, func(i, j int) bool { return r.tools[i].Name < r.tools[j].Name })
	return r, nil
}

// Problem is one thing wrong with a registry.
type Problem struct {
	// Tool is the tool's name (or "tools[i]" when it has none); empty for document-level problems.
	Tool string `json:"tool,omitempty"`
	// Field is the JSON field, dotted for nested fields ("idempotency.key_field").
	Field string `json:"field"`
	// Message says what is wrong with the field.
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Tool == "" {
		return fmt.Sprintf("field %s %s", p.Field, p.Message)
	}
	return fmt.Sprintf("tool %s: field %s %s", p.Tool, p.Field, p.Message)
}

// CheckError is returned for a registry that fails its checks. It lists every problem found.
type CheckError struct {
	Problems []Problem
}

func (e *CheckError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return "invalid registry: " + lines[0]
	}
	return fmt.Sprintf("invalid registry (%d problems):\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// AsCheckError returns the *CheckError inside err, if any.
func AsCheckError(err error) (*CheckError, bool) {
	var ce *CheckError
	ok := errors.As(err, &ce)
	return ce, ok
}

// jsonErrorText adds the line and column to a JSON syntax error.
func jsonErrorText(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, b := range data[:min(int(se.Offset), len(data))] {
			if b == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Sprintf("%s (line %d, column %d)", se.Error(), line, col)
	}
	return err.Error()
}

// IdempotencyKeyFor returns the tool's own idempotency key of a call (claimed by the executor in
// core_idempotency_keys, across callers), or "" when the call has none. An explicit key (the call's
// idempotency_key) wins for modes keyed and safe-retry, as GEM's contract says; a keyed tool otherwise takes
// the value of its key_field from the decoded input. ModeNone never uses one here. (Every explicit key is
// also its caller's request key, claimed when the call is inserted, for every mode: core_request_keys.)
func (t *Tool) IdempotencyKeyFor(input any, explicit string) (string, error) {
	switch t.Idempotency.Mode {
	case ModeSafeRetry:
		return explicit, nil
	case ModeKeyed:
		if explicit != "" {
			return explicit, nil
		}
		obj, _ := input.(map[string]any)
		v, ok := obj[t.Idempotency.KeyField]
		if !ok || v == nil {
			return "", fmt.Errorf("key field %q is missing from the input", t.Idempotency.KeyField)
		}
		var key string
		switch v := v.(type) {
		case string:
			key = v
		case json.Number:
			key = v.String()
		default:
			b, _ := json.Marshal(v)
			key = string(b)
		}
		if strings.TrimSpace(key) == "" {
			return "", fmt.Errorf("key field %q is empty", t.Idempotency.KeyField)
		}
		return key, nil
	default:
		return "", nil
	}
}
