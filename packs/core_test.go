package packs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/stretchr/testify/require"
)

// movedPacks are the packs whose brain side (rules and sentences) lives in their folder, and the agent
// skills pack, which has none: the brain's core names none of their tools.
var movedPacks = map[string][]string{
	"os":           ospack.Tools,
	"business":     businesspack.Tools,
	"integrations": integrationspack.Tools,
	"agentskills":  agentskillspack.Tools,
}

// coreFolders are the core's folders (and every package under them) that must name no pack's tool.
// proof is left out: its scenarios drive tools as a user does, by name in SQL and JSON (its Go values use the
// packs' constants).
var coreFolders = []string{"brain", "executor", "sql", "registry", "llmconfig"}

// stillNamed are the places of the core that still name a moved pack's tool, and why; each goes when its
// reason does. The test fails on any other, and on one of these that no longer names a tool.
var stillNamed = map[string]string{}

// TestCoreNamesNoMovedTools: no Go string in the brain's core packages (tests aside) names a tool of a pack
// that has moved to its folder; that pack's folder is the one place that names it.
func TestCoreNamesNoMovedTools(t *testing.T) {
	var tools []string
	for _, names := range movedPacks {
		tools = append(tools, names...)
	}
	slices.Sort(tools)
	alts := make([]string, len(tools))
	for i, name := range tools {
		alts[i] = regexp.QuoteMeta(name)
	}
	toolRe := regexp.MustCompile(`(?:^|[^\w.])(` + strings.Join(alts, "|") + `)(?:$|[^\w])`)

	named := map[string][]string{}
	for _, folder := range coreFolders {
		root := filepath.Join("..", folder)
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel := filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, m := range toolRe.FindAllStringSubmatch(s, -1) {
					named[rel] = append(named[rel], m[1])
				}
				return true
			})
			return nil
		}))
	}
	for file, names := range named {
		_, excused := stillNamed[file]
		if !excused {
			t.Errorf("%s names %s: a pack's tools are named only in its folder (packs/)", file, strings.Join(slices.Compact(slices.Sorted(slices.Values(names))), ", "))
		}
	}
	for file, why := range stillNamed {
		if len(named[file]) == 0 {
			t.Errorf("%s names no pack's tool any more: drop it from stillNamed (%s)", file, why)
		}
	}
}
