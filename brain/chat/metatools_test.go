package chat

import (
	"strings"
	"testing"

	"github.com/gemhq/gem/sql/migrations"
	"github.com/stretchr/testify/require"
)

// TestStumblesViewKnowsTheBrainsOwnTools: brain_tool_attempts leaves the brain's own tools out of the attempts at
// registry tools, by name, as the metric does (metaToolNames): a meta-tool added here and not there would be a
// row of its own on the stumbles page.
func TestStumblesViewKnowsTheBrainsOwnTools(t *testing.T) {
	t.Parallel()
	text, err := migrations.FS.ReadFile("00003_stumbles_unknown_tools.sql")
	require.NoError(t, err)
	up, _, ok := strings.Cut(string(text), "-- +goose Down")
	require.True(t, ok)
	for _, name := range metaToolNames {
		require.Contains(t, up, "'"+name+"'::text", "brain_tool_attempts does not leave out %s", name)
	}
}
