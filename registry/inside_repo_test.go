package registry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestNoTestReadsOutsideTheRepository is a cheap static guard beside the CI's run in a fresh clone: no Go
// source of the repository names a path that resolves outside the repository's root (the folder beside it
// where the original GEM's registry sits on the machines that have it included). It reads every Go file's string
// literals: relative paths ("../../x", resolved from the file's folder, which is a test's working folder),
// filepath.Join and path.Join calls whose parts climb with ".." (from the file's folder, or from the root
// after a call named repoRoot or RepoRoot), and any mention of shared/gem.
func TestNoTestReadsOutsideTheRepository(t *testing.T) {
	root := repositoryRoot(t)
	files := 0
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		problems = append(problems, pathsOutside(t, root, path, src)...)
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Greater(t, files, 300, "every Go file of the repository was read")
}

// TestOutsidePathGuardCanFail: the guard finds each way a test has named a path outside the repository, and
// lets the paths inside it be. SHARED stands for GEM's folder beside the repository, so this file names none.
func TestOutsidePathGuardCanFail(t *testing.T) {
	root := filepath.FromSlash("/repo")
	for _, tt := range []struct {
		file, code string
		outside    bool
	}{
		{"registry/gem_contract_test.go", `const p = "../../SHARED/tools.registry.json"`, true},
		{"packs/integrations/handlers/helpers_test.go", `const p = "../../../../SHARED/tools.registry.json"`, true},
		{"brain/internal/testenv/testenv.go", `func f() string { return filepath.Join(RepoRoot(), "..", SHARED_PARTS, "tools.registry.json") }`, true},
		{"brain/cmd/brain/mcp_test.go", `func f(t *testing.T) string { return filepath.Join(repoRoot(t), "..", "x.json") }`, true},
		{"registry/x_test.go", `func f(name string) string { return filepath.Join("..", "..", "docs", name) }`, true},
		{"registry/x_test.go", `const p = "/home/someone/SHARED/tools.registry.json"`, true},
		{"brain/cmd/brain/x_test.go", `func f(name string) string { return filepath.Join("..", "..", "..", "docs", name) }`, false},
		{"brain/cmd/brain/x_test.go", `const p = "../../../docs/observability.md"`, false},
		{"brain/internal/testenv/testenv.go", `func f(file string) string { return filepath.Join(filepath.Dir(file), "..", "..", "..") }`, false},
		{"executor/x_test.go", `const p = "../tools.registry.json"`, false},
		{"registry/x_test.go", `const p = "testdata/varied.registry.json"`, false},
	} {
		code := strings.ReplaceAll(tt.code, "SHARED_PARTS", gemFolderParts)
		src := "package p\n\n" + strings.ReplaceAll(code, "SHARED", gemFolder) + "\n"
		got := pathsOutside(t, root, filepath.Join(root, filepath.FromSlash(tt.file)), []byte(src))
		require.Equal(t, tt.outside, len(got) > 0, "%s: %s: %v", tt.file, tt.code, got)
	}
}

// gemFolder is where the original GEM's registry sits beside the repository on machines that have it, and
// gemFolderParts its folders as a join's arguments.
var gemFolder = path.Join("shared", "gem")

const gemFolderParts = `"shared", "gem"`

// repositoryRoot is the folder holding go.work, above the test's working folder.
func repositoryRoot(t *testing.T) string {
	t.Helper()
	work, err := registry.Find("go.work")
	require.NoError(t, err)
	root, err := filepath.Abs(filepath.Dir(work))
	require.NoError(t, err)
	return root
}

// pathsOutside lists the string literals and path joins of a Go file that name a place outside root.
func pathsOutside(t *testing.T, root, file string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	require.NoError(t, err, file)
	dir := filepath.Dir(file)
	outside := func(base string, parts ...string) bool {
		rel, err := filepath.Rel(root, filepath.Join(append([]string{base}, parts...)...))
		return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	var problems []string
	report := func(n ast.Node, what string) {
		problems = append(problems, fset.Position(n.Pos()).String()+": "+what)
	}
	joined := map[*ast.BasicLit]bool{} // literals judged as parts of a join
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Join" || len(n.Args) == 0 {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || (pkg.Name != "filepath" && pkg.Name != "path") {
				return true
			}
			base, args := dir, n.Args
			if callName(args[0]) == "repoRoot" || callName(args[0]) == "RepoRoot" {
				base, args = root, args[1:]
			}
			var parts []string
			for _, a := range args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					parts = append(parts, s)
					joined[lit] = true
				} else {
					parts = append(parts, "_") // a value not known here: one folder down
				}
			}
			if outside(base, parts...) {
				report(n, "joins a path outside the repository: "+strings.Join(parts, ", "))
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || joined[n] {
				return true
			}
			s, _ := strconv.Unquote(n.Value)
			switch {
			case strings.Contains(s, gemFolder):
				report(n, "names GEM's registry beside the repository: "+s)
			case strings.HasPrefix(s, "..") && outside(dir, s):
				report(n, "a relative path outside the repository: "+s)
			}
		}
		return true
	})
	return problems
}

// callName is the name of the function a call expression calls ("" for anything else).
func callName(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	}
	return ""
}
