package executor_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemcontract"
	"github.com/stretchr/testify/require"
)

// gemRegistry is the original GEM's contract (the repository's extract, registry/gemcontract): its output
// schemas are the contract GEM's users read results by.
var gemRegistry = sync.OnceValues(func() (*registry.Registry, error) {
	ours, err := os.ReadFile("../tools.registry.json")
	if err != nil {
		return nil, err
	}
	return gemcontract.Registry(ours)
})

// requireGEMOutput checks a result of a GEM tool against GEM's output schema (as well as ours, which the
// executor checked before writing the receipt). Tools that exist only here, and failed calls, pass.
func requireGEMOutput(t testing.TB, r *registry.Receipt) {
	t.Helper()
	require.NoError(t, gemOutputError(r))
}

func gemOutputError(r *registry.Receipt) error {
	gem, err := gemRegistry()
	if err != nil {
		return fmt.Errorf("GEM's contract: %w", err)
	}
	tool, ok := gem.Tool(r.ToolName)
	if !ok || r.Status != registry.StatusSucceeded {
		return nil
	}
	if err := tool.ValidateOutput(r.Result); err != nil {
		return fmt.Errorf("%s: the result does not match GEM's output schema: %w (result %s)", r.ToolName, err, r.Result)
	}
	return nil
}

// TestGEMOutputCheckCanFail keeps the check honest: a result GEM's schema refuses fails it.
func TestGEMOutputCheckCanFail(t *testing.T) {
	note := func(result string) *registry.Receipt {
		return &registry.Receipt{ToolName: "os.create_note", Status: registry.StatusSucceeded, Result: []byte(result)}
	}
	require.Error(t, gemOutputError(note(`{"id": "n1"}`)), "a note result without note_id fails GEM's output schema")
	require.NoError(t, gemOutputError(note(`{"note_id": "n1"}`)))
}
