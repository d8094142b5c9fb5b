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
	"github.com/gemhq/gem/sql/gemsql"
)

// entries are every pack's registry entries: PACK/tools/NAME.json.
//
//go:embed */tools/*.json
var entries embed.FS

// migrations are every pack's migration line (PACK/migrations), and the built-in agents' (migrations).
//
//go:embed */migrations/*.sql migrations/*.sql
var migrations embed.FS

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

// Migrations are the pack's migration line: its tables, functions and built-in skills (goose's format).
func (p Pack) Migrations() gemsql.Line {
	return line(p.Name, p.Name+"/migrations")
}

// Lines are the migration lines of every pack, in the registry's order (a pack's tables reference only the
// core's and earlier packs'), then the built-in agents' line, whose agents hold skills of several packs.
// Both binaries hand them to gemsql.Migrate.
func Lines() []gemsql.Line {
	var lines []gemsql.Line
	for _, p := range All {
		lines = append(lines, p.Migrations())
	}
	return append(lines, line("agents", "migrations"))
}

// madeByLegacy are the lines that began when the legacy migrations stopped: their first migration restates
// what those made, so a database they made adopts it (gemsql.Line.FromLegacy). A pack added later is not
// here: its line runs from its first migration everywhere.
var madeByLegacy = map[string]bool{"os": true, "business": true, "integrations": true, "agentskills": true, "agents": true}

// line is the migration line named name, in dir.
func line(name, dir string) gemsql.Line {
	files, err := fs.Sub(migrations, dir)
	if err != nil {
		panic(err) // a constant, valid path: fs.Sub refuses only invalid ones
	}
	l := gemsql.Line{Name: name, Table: "gem_pack_" + name + "_migrations", Files: files}
	if madeByLegacy[name] {
		l.FromLegacy = 1
	}
	return l
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
