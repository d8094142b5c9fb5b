package packs_test

import (
	"flag"
	"os"
	"testing"

	"github.com/gemhq/gem/packs"
	"github.com/stretchr/testify/require"
)

// updateRegistry rewrites tools.registry.json from the packs' entries (make registry).
var updateRegistry = flag.Bool("update-registry", false, "write ../tools.registry.json from the packs' entries")

// TestRegistryIsGenerated: the committed tools.registry.json is what the packs' entries make, in their order.
// An entry edited without make registry, or the file edited by hand, fails here.
func TestRegistryIsGenerated(t *testing.T) {
	made, err := packs.Registry()
	require.NoError(t, err)
	if *updateRegistry {
		require.NoError(t, os.WriteFile("../tools.registry.json", made, 0o644))
		return
	}
	committed, err := os.ReadFile("../tools.registry.json")
	require.NoError(t, err)
	require.True(t, string(made) == string(committed),
		"tools.registry.json is not what the packs' entries make: run make registry")
}
