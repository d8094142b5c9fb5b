package agentskillshandlers_test

import (
	"slices"
	"testing"

	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	agentskillshandlers "github.com/gemhq/gem/packs/agentskills/handlers"
	"github.com/stretchr/testify/require"
)

// TestEveryToolHasAHandler: Register adds a handler for each of the pack's tools (agentskillspack.Tools)
// and for no other tool.
func TestEveryToolHasAHandler(t *testing.T) {
	t.Parallel()
	h := executor.Handlers{}
	agentskillshandlers.Register(h, agentskillspack.Config{})
	require.Equal(t, slices.Sorted(slices.Values(agentskillspack.Tools)), h.Names())
}
