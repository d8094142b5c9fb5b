// Package packs lists GEM's tool packs (docs/packs.md). Each pack is a folder that holds its tools' registry
// entries, one file per tool; tools.registry.json is made from them (make registry).
package packs

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	ospack "github.com/gemhq/gem/packs/os"
)

// entries are every pack's registry entries: PACK/tools/NAME.json.
//
//go:embed */tools/*.json
var entries embed.FS

// Pack is a tool pack: its name (its folder) and its tools in order.
type Pack struct {
	Name  string
	Tools []string
}

// All are the packs, in the registry's order.
var All = []Pack{
	{"os", ospack.Tools},
	{"business", businesspack.Tools},
	{"integrations", integrationspack.Tools},
	{"agentskills", agentskillspack.Tools},
}

// Entries are a pack's registry entries: NAME.json for each of its tools.
func (p Pack) Entries() fs.FS {
	sub, err := fs.Sub(entries, p.Name+"/tools")
	if err != nil {
		panic(err) // a constant, valid path: fs.Sub refuses only invalid ones
	}
	return sub
}

// registryVersion is the registry document's version.
const registryVersion = "1"

// Registry is the registry document (tools.registry.json) that the packs' entries make: every pack's tools
// in order, formatted as the file is. An entry must be named for its tool, and every entry must be listed.
func Registry() ([]byte, error) {
	var tools [][]byte
	for _, p := range All {
		entries := p.Entries()
		listed := map[string]bool{}
		for _, name := range p.Tools {
			listed[name+".json"] = true
			b, err := fs.ReadFile(entries, name+".json")
			if err != nil {
				return nil, fmt.Errorf("pack %s: tool %s has no entry: %w", p.Name, name, err)
			}
			var entry struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(b, &entry); err != nil {
				return nil, fmt.Errorf("pack %s: %s.json is not JSON: %w", p.Name, name, err)
			}
			if entry.Name != name {
				return nil, fmt.Errorf("pack %s: %s.json is the entry of %q", p.Name, name, entry.Name)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, b); err != nil {
				return nil, err
			}
			tools = append(tools, compact.Bytes())
		}
		files, err := fs.Glob(entries, "*")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if !listed[path.Base(f)] {
				return nil, fmt.Errorf("pack %s: %s is no tool of the pack's Tools list", p.Name, f)
			}
		}
	}
	// Put together by hand: json.Marshal would escape the entries' <, > and & again.
	doc := append([]byte(`{"version":"`+registryVersion+`","tools":[`), bytes.Join(tools, []byte(","))...)
	doc = append(doc, "]}"...)
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
