package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/gemhq/gem/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// DefaultImportTimeoutMS is the timeout_ms Import gives every tool unless told otherwise.
const DefaultImportTimeoutMS = 30000

// Permissions Import gives a remote tool, from its MCP annotations.
const (
	// PermissionReadExternal: the tool says it only reads (readOnlyHint).
	PermissionReadExternal = "read:external"
	// PermissionWriteExternal: the tool may change something outside GEM (every other tool), which the
	// executor treats as an effect outside the database.
	PermissionWriteExternal = "write:external"
)

// ImportOptions configure Import.
type ImportOptions struct {
	// Prefix is the tool names' domain: one or more dot-separated segments. Defaults to the server's name
	// made a valid segment.
	Prefix string
	// TimeoutMS is every tool's timeout_ms. Defaults to DefaultImportTimeoutMS.
	TimeoutMS int64
	// Version is the document's version. Defaults to "1".
	Version string
	// Getenv reads the server's ${NAME} references. Defaults to os.Getenv.
	Getenv func(string) string
	// HTTPClient's Transport reaches an HTTP server. Defaults to http.DefaultTransport.
	HTTPClient *http.Client
	// Log receives the connection's events.
	Log zerolog.Logger
}

// ImportDocument is a registry document holding one server's entry and its tools: it loads on its own
// (registry.Parse), and merges into a registry by adding its mcp_servers entry and its tools.
type ImportDocument struct {
	Version    string                         `json:"version"`
	MCPServers map[string]*registry.MCPServer `json:"mcp_servers"`
	Tools      []*registry.Tool               `json:"tools"`
}

// ImportedTool pairs a registry tool with the remote tool it calls.
type ImportedTool struct {
	Name       string `json:"name"`
	RemoteTool string `json:"tool"`
}

// ImportResult is what Import found.
type ImportResult struct {
	// Document holds the entries to review.
	Document *ImportDocument
	// Tools lists the imported tools, in the server's order.
	Tools []ImportedTool
	// Notes are what a reviewer should look at: renamed tools, tools left out and why.
	Notes []string
}

var segmentRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Import connects to an MCP server, lists its tools (every page of tools/list) and writes a registry entry
// for each: input_schema from its inputSchema, output_schema from its outputSchema (or {}: any result),
// permissions and idempotency from its annotations, an mcp implementation naming the server and the tool.
// docs/mcp-tools.md gives the mapping. The document is checked with registry.Parse; a tool the checker
// refuses is left out with a note.
func Import(ctx context.Context, server *registry.MCPServer, opts ImportOptions) (*ImportResult, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.TimeoutMS == 0 {
		opts.TimeoutMS = DefaultImportTimeoutMS
	}
	if opts.Version == "" {
		opts.Version = "1"
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = segment(server.Name)
		prefix = strings.TrimRight(prefix[:min(len(prefix), registry.PortableNameMaxLen-2-minImportedSegment)], "_")
	}
	for _, seg := range strings.Split(prefix, ".") {
		if !segmentRe.MatchString(seg) {
			return nil, fmt.Errorf("prefix %q is not a tool domain: dot-separated segments of letters, digits, '_' or '-', each starting with a letter", prefix)
		}
	}
	// A tool's name, exported with each dot as "__", fits in the 64 characters model APIs take.
	budget := registry.PortableNameMaxLen - len(registry.PortableName(prefix+"."))
	if err := registry.CheckToolName(prefix + ".x"); err != nil || budget < minImportedSegment {
		return nil, fmt.Errorf("prefix %q cannot name tools model APIs and MCP clients take: no segment may hold \"__\" or end with \"_\", "+
			"the domain gem is GEM's own, and it must leave %d of the 64 characters to the tool (each dot counting as two)", prefix, minImportedSegment)
	}

	pool := newMCPPool(nil, Options{Getenv: opts.Getenv, HTTPClient: opts.HTTPClient, Log: opts.Log})
	defer pool.cancel()
	s, err := pool.conn(server).connect(ctx)
	if err != nil {
		var me *missingEnvError
		if errors.As(err, &me) {
			return nil, me
		}
		return nil, fmt.Errorf("error connecting to MCP server %s: %w", server.Name, err)
	}
	defer s.close()

	res := &ImportResult{Document: &ImportDocument{Version: opts.Version, MCPServers: map[string]*registry.MCPServer{server.Name: server}, Tools: []*registry.Tool{}}}
	taken := map[string]string{}
	for remote, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("error listing the tools of MCP server %s: %w", server.Name, err)
		}
		seg := segment(remote.Name)
		seg = seg[:min(len(seg), budget)]
		name := prefix + "." + seg
		for n := 2; taken[name] != ""; n++ {
			suffix := fmt.Sprintf("_%d", n)
			name = prefix + "." + strings.TrimRight(seg[:min(len(seg), budget-len(suffix))], "_") + suffix
		}
		if segment(remote.Name) != remote.Name || name != prefix+"."+remote.Name {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: named for remote tool %q, whose name is not a valid name segment as it is", name, remote.Name))
		}
		taken[name] = remote.Name
		t, err := importTool(server.Name, name, remote, opts.TimeoutMS)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("remote tool %q left out: %v", remote.Name, err))
			continue
		}
		res.Document.Tools = append(res.Document.Tools, t)
	}

	// Leave out what the registry check refuses, so the document always loads.
	for {
		data, err := json.Marshal(res.Document)
		if err != nil {
			return nil, fmt.Errorf("error encoding the imported tools: %w", err)
		}
		_, err = registry.Parse(data)
		if err == nil {
			break
		}
		ce, ok := registry.AsCheckError(err)
		if !ok {
			return nil, err
		}
		bad := map[string][]string{}
		for _, p := range ce.Problems {
			if _, ok := taken[p.Tool]; !ok {
				return nil, fmt.Errorf("the imported document does not load: %w", err)
			}
			bad[p.Tool] = append(bad[p.Tool], p.Field+" "+p.Message)
		}
		kept := res.Document.Tools[:0]
		for _, t := range res.Document.Tools {
			if problems, ok := bad[t.Name]; ok {
				res.Notes = append(res.Notes, fmt.Sprintf("remote tool %q left out: the registry check refuses it: %s", taken[t.Name], strings.Join(problems, "; ")))
				continue
			}
			kept = append(kept, t)
		}
		res.Document.Tools = kept
	}
	for _, t := range res.Document.Tools {
		res.Tools = append(res.Tools, ImportedTool{Name: t.Name, RemoteTool: t.Implementation.RemoteTool})
	}
	return res, nil
}

// importTool is the registry entry for one remote tool.
func importTool(server, name string, remote *mcp.Tool, timeoutMS int64) (*registry.Tool, error) {
	input, err := json.Marshal(remote.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("its inputSchema cannot be encoded: %w", err)
	}
	if string(input) == "null" {
		input = []byte(`{"type":"object"}`)
	}
	output := json.RawMessage(`{}`)
	if remote.OutputSchema != nil {
		if output, err = json.Marshal(remote.OutputSchema); err != nil {
			return nil, fmt.Errorf("its outputSchema cannot be encoded: %w", err)
		}
	}

	// The spec's defaults for absent hints: not read-only, destructive, not idempotent, open world.
	a := remote.Annotations
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	destructive := a.DestructiveHint == nil || *a.DestructiveHint
	openWorld := a.OpenWorldHint == nil || *a.OpenWorldHint
	t := &registry.Tool{
		Name:           name,
		InputSchema:    input,
		OutputSchema:   output,
		TimeoutMS:      timeoutMS,
		ReceiptFields:  []string{},
		Implementation: &registry.Implementation{Type: registry.ImplMCP, Server: server, RemoteTool: remote.Name},
	}
	var hints []string
	switch {
	case a.ReadOnlyHint:
		t.Permissions = []string{PermissionReadExternal}
		t.Idempotency = registry.Idempotency{Mode: registry.ModeSafeRetry}
		hints = append(hints, "read-only")
	default:
		t.Permissions = []string{PermissionWriteExternal}
		t.Idempotency = registry.Idempotency{Mode: registry.ModeNone}
		if a.IdempotentHint {
			t.Idempotency.Mode = registry.ModeSafeRetry
			hints = append(hints, "idempotent")
		}
		if destructive {
			hints = append(hints, "destructive")
		} else {
			hints = append(hints, "additive")
		}
	}
	if openWorld {
		hints = append(hints, "open world")
	} else {
		hints = append(hints, "closed world")
	}

	desc := strings.TrimSpace(remote.Description)
	if desc == "" {
		desc = strings.TrimSpace(remote.Title)
	}
	if desc == "" && a.Title != "" {
		desc = strings.TrimSpace(a.Title)
	}
	if desc == "" {
		desc = fmt.Sprintf("Runs %s.", remote.Name)
	}
	t.Description = fmt.Sprintf("%s\n\n(MCP tool %q of server %q; its description and hints (%s) are the server's, imported by executor mcp import.)",
		desc, remote.Name, server, strings.Join(hints, ", "))
	return t, nil
}

var notSegmentChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// underscores are runs of "_", which a name segment holds one at a time (registry.PortableName writes a dot
// as "__").
var underscores = regexp.MustCompile(`__+`)

// minImportedSegment is the least room a prefix must leave to an imported tool's own segment.
const minImportedSegment = 8

// segment makes s a valid name segment: other characters become "_", runs of "_" one, and a segment not
// starting with a letter gets "t_" in front.
func segment(s string) string {
	s = underscores.ReplaceAllString(notSegmentChars.ReplaceAllString(s, "_"), "_")
	if s == "" || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		s = "t_" + s
	}
	return s
}
