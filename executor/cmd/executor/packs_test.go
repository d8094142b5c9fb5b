package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPacksReadNoEnvironment: no tool pack, nor any of this repository's packages it uses, reads the
// environment itself (os.Getenv and its kin): Main reads every setting, once, through packsFromEnv. The
// executor's engine is left out: its one read, executor.MissingEnv, serves registry check.
func TestPacksReadNoEnvironment(t *testing.T) {
	t.Parallel()
	var pkgs []string
	for f := range reflect.TypeFor[packs]().Fields() {
		pkgs = append(pkgs, f.Type.PkgPath())
	}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}	{{.Dir}}	{{join .GoFiles "	"}}{{end}}`}, pkgs...)...).Output()
	require.NoError(t, err)
	reads := map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true}
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSpace(line), "\t")
		if !strings.HasPrefix(fields[0], "github.com/gemhq/gem/") || fields[0] == "github.com/gemhq/gem/executor" {
			continue
		}
		for _, name := range fields[2:] {
			path := filepath.Join(fields[1], name)
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			osName := ""
			for _, imp := range file.Imports {
				if imp.Path.Value == `"os"` {
					osName = "os"
					if imp.Name != nil {
						osName = imp.Name.Name
					}
				}
			}
			checked++
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && osName != "" && reads[sel.Sel.Name] {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName {
						t.Errorf("%s (%s) reads the environment with os.%s: take the setting from the pack's Config", path, fields[0], sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	require.Greater(t, checked, 50, "the packs' files were read")
}
