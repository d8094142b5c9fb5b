// Package gemcontract is the original GEM's tool contract, kept in the repository as facts only, for the
// tests that hold our registry to it. GEM's registry itself (tools.registry.json of the Node system) is not in
// the repository; `make gem-contract` extracts from it, with Extract:
//
//   - testdata/gem-contract.json: every tool's name, input and output schemas without their description and
//     title annotations, idempotency, permissions, timeout_ms and receipt_fields;
//   - testdata/gem-prose-shingles.txt: the SHA-256 of every normalised 5-word run of GEM's description and
//     title texts (Shingles), so a test can tell that one of our texts repeats GEM's wording without the
//     repository holding that wording.
//
// Both files are embedded, so the tests of every module read them without a path.
package gemcontract

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/gemhq/gem/registry"
)

// ContractFile and ShinglesFile are the extract's files, under testdata/ in this package's folder.
const (
	ContractFile = "gem-contract.json"
	ShinglesFile = "gem-prose-shingles.txt"
)

var (
	//go:embed testdata/gem-contract.json
	contractJSON []byte
	//go:embed testdata/gem-prose-shingles.txt
	shinglesText string
)

// Contract is the extract's document: GEM's registry with no prose in it.
type Contract struct {
	// Version is GEM's registry's version.
	Version string `json:"version"`
	// SourceSHA256 is the SHA-256 of the GEM registry file the extract was made from.
	SourceSHA256 string `json:"source_sha256"`
	// Tools are GEM's tools in its registry's order, each with the fields of a registry entry but the
	// description.
	Tools []json.RawMessage `json:"tools"`
}

// Load returns the committed extract.
var Load = sync.OnceValues(func() (*Contract, error) {
	var c Contract
	if err := json.Unmarshal(contractJSON, &c); err != nil {
		return nil, fmt.Errorf("error reading GEM's contract (%s): %w", ContractFile, err)
	}
	return &c, nil
})

// ProseShingles returns the committed hashes of GEM's 5-word runs.
var ProseShingles = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for line := range strings.Lines(shinglesText) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			set[line] = true
		}
	}
	return set
})

// Registry is GEM's contract as a registry: GEM's tools, each with GEM's schemas, modes, permissions, timeout
// and receipt fields. A registry entry needs a description and the extract keeps none of GEM's, so each tool
// is described in the words of ours, the registry document in our repository (a GEM tool ours lacks says so).
func Registry(ours []byte) (*registry.Registry, error) {
	doc, err := document(ours, false)
	if err != nil {
		return nil, err
	}
	return registry.Parse(doc)
}

// WithOurTools is Registry with every tool of ours that GEM has not added as ours has it: every GEM tool with
// exactly GEM's contract, whatever state our registry's GEM tools are in.
func WithOurTools(ours []byte) (*registry.Registry, error) {
	doc, err := document(ours, true)
	if err != nil {
		return nil, err
	}
	return registry.Parse(doc)
}

// Document is the registry document Registry parses, for a process that loads a registry file itself.
func Document(ours []byte) ([]byte, error) { return document(ours, false) }

func document(ours []byte, addOurs bool) ([]byte, error) {
	c, err := Load()
	if err != nil {
		return nil, err
	}
	var ourDoc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(ours, &ourDoc); err != nil {
		return nil, fmt.Errorf("error reading our registry: %w", err)
	}
	type named struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	ourDescriptions := map[string]string{}
	for _, raw := range ourDoc.Tools {
		var t named
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("error reading our registry: %w", err)
		}
		ourDescriptions[t.Name] = t.Description
	}
	gemNames := map[string]bool{}
	tools := make([]json.RawMessage, 0, len(c.Tools)+len(ourDoc.Tools))
	for _, raw := range c.Tools {
		var entry map[string]json.RawMessage
		if err := json.Unmarshal(raw, &entry); err != nil {
			return nil, fmt.Errorf("error reading GEM's contract: %w", err)
		}
		var name string
		_ = json.Unmarshal(entry["name"], &name)
		gemNames[name] = true
		description, ok := ourDescriptions[name]
		if !ok {
			description = name + ": a GEM tool missing from our registry"
		}
		entry["description"], _ = json.Marshal(description)
		raw, _ = json.Marshal(entry)
		tools = append(tools, raw)
	}
	if addOurs {
		for _, raw := range ourDoc.Tools {
			var t named
			_ = json.Unmarshal(raw, &t)
			if !gemNames[t.Name] {
				tools = append(tools, raw)
			}
		}
	}
	return json.Marshal(map[string]any{"version": c.Version, "tools": tools})
}
