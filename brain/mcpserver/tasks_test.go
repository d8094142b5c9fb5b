package mcpserver

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestDeclaresTasksNeedsARevision: the tasks extension is declared only with a protocol revision of
// 2026-07-28 or later, written as a date; a string that merely sorts after it ("3", "9999") declared it.
func TestDeclaresTasksNeedsARevision(t *testing.T) {
	declared := func(version any) mcp.Meta {
		return mcp.Meta{mcp.MetaKeyProtocolVersion: version,
			mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}
	}
	for version, want := range map[any]bool{modernProtocol: true, "2027-01-15": true, "2025-11-25": false,
		"3": false, "9999": false, "2026-7-28": false, "2026-07-28x": false, "": false, nil: false, 20260728: false} {
		require.Equal(t, want, declaresTasks(declared(version)), "%v", version)
	}
	require.False(t, declaresTasks(mcp.Meta{mcp.MetaKeyProtocolVersion: modernProtocol}), "no extension declared")
}
