package integrationshandlers_test

import (
	"slices"
	"testing"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationshandlers "github.com/gemhq/gem/packs/integrations/handlers"
	"github.com/stretchr/testify/require"
)

// TestEveryToolHasAHandler: Register adds a handler for each of the pack's tools (integrationspack.Tools)
// and for no other tool.
func TestEveryToolHasAHandler(t *testing.T) {
	t.Parallel()
	h := executor.Handlers{}
	integrationshandlers.Register(h, integrationspack.Config{}, businesspack.Config{})
	require.Equal(t, slices.Sorted(slices.Values(integrationspack.Tools)), h.Names())
}
