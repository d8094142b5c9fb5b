package packs_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gemhq/gem/packs"
	"github.com/stretchr/testify/require"
)

// TestContractsImportNeitherSide: a pack's contract (packs/NAME), which the brain's rules and the
// executor's handlers both import, imports neither the brain nor the executor, nor anything else of the
// repository but its leaves (registry, llmconfig) and the contracts of the packs before it (the business
// pack reads the os pack's time zone as the os pack does): the brain never links the executor's code, nor
// the executor the brain's. The packs' shared reading of GEM_LLM_* (packs/internal/llmsettings) is such a
// leaf: its own imports are checked with the contract's.
func TestContractsImportNeitherSide(t *testing.T) {
	t.Parallel()
	allowed := []string{"github.com/gemhq/gem/registry", "github.com/gemhq/gem/llmconfig", "github.com/gemhq/gem/packs/internal/llmsettings"}
	for _, p := range packs.All {
		contract := "github.com/gemhq/gem/packs/" + p.Name
		out, err := exec.Command("go", "list", "-deps", contract).Output()
		require.NoError(t, err, contract)
		for dep := range strings.Lines(string(out)) {
			dep = strings.TrimSpace(dep)
			if !strings.HasPrefix(dep, "github.com/gemhq/gem/") || dep == contract {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || dep == a || strings.HasPrefix(dep, a+"/") && !strings.HasPrefix(a, "github.com/gemhq/gem/packs/")
			}
			require.True(t, ok, "%s imports %s: a contract imports only the standard library, the repository's leaves and the packs' contracts before it", contract, dep)
		}
		allowed = append(allowed, contract)
	}
}
