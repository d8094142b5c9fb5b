package integrations_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor/integrations"
	"github.com/stretchr/testify/require"
)

// TestDocsListEveryVariable keeps docs/integrations.md's table of variables true to the code's defaults.
func TestDocsListEveryVariable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/integrations.md")
	require.NoError(t, err)
	for _, v := range integrations.Variables() {
		def := "`" + v.Default + "`"
		if v.Default == "unset" {
			def = "unset"
		}
		require.Contains(t, string(doc), "| `"+v.Name+"` | "+def+" |", "docs/integrations.md lists %s with its default", v.Name)
	}
	require.True(t, strings.Contains(string(doc), "```mermaid"))
}
