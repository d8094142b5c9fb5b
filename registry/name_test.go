package registry

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortableNames: every tool of the repository's registry has a name model APIs accept, which reads back
// as GEM's name; the longest a registry may hold is exactly what the APIs take.
func TestPortableNames(t *testing.T) {
	t.Parallel()
	reg, err := Load(repoRegistry)
	require.NoError(t, err)
	seen := map[string]string{}
	for _, tool := range reg.Tools() {
		portable := PortableName(tool.Name)
		require.Regexp(t, PortableNameRe, portable, tool.Name)
		require.NotContains(t, portable, ".")
		require.Equal(t, tool.Name, DottedName(portable), "reads back")
		require.Equal(t, tool.Name, DottedName(tool.Name), "a GEM name is its own dotted name")
		require.NotContains(t, seen, portable, "%s and %s", tool.Name, seen[portable])
		seen[portable] = tool.Name
	}
	require.Equal(t, "os__create_note", PortableName("os.create_note"))
	require.Equal(t, "integrations__highlevel__sync_contacts", PortableName("integrations.highlevel.sync_contacts"))
	require.Equal(t, "integrations.highlevel.sync_contacts", DottedName("integrations__highlevel__sync_contacts"))

	// 64 characters exported (two dots, four characters) load; 65 do not.
	longest := "integrations.highlevel." + strings.Repeat("a", 64-len("integrations__highlevel__"))
	require.Len(t, PortableName(longest), PortableNameMaxLen)
	_, err = Parse(registryDoc(tool(longest), tool("crm.add-lead_"), tool("crm.x-_y")))
	require.NoError(t, err, "a last segment may end with _, and - stays as it is")
	_, err = Parse(registryDoc(tool(longest + "a")))
	require.ErrorContains(t, err, "longer than model APIs accept")
}
