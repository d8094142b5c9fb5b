// Package settingstest is what the packs' settings tests share: each pack's Variables are the variables its
// ConfigFromEnv reads, and its docs page lists each of them with its default.
package settingstest

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gemhq/gem/registry/settings"
	"github.com/stretchr/testify/require"
)

// RequireVariablesRead requires the names configFromEnv reads through its getenv to be those of vars, each
// listed once.
func RequireVariablesRead(t *testing.T, configFromEnv func(getenv func(string) string), vars []settings.Variable) {
	t.Helper()
	read := map[string]bool{}
	configFromEnv(func(name string) string { read[name] = true; return "" })
	var listed []string
	for _, v := range vars {
		require.NotContains(t, listed, v.Name, "listed twice")
		listed = append(listed, v.Name)
		require.NotEmpty(t, v.Default, v.Name)
		require.NotEmpty(t, v.Description, v.Name)
	}
	slices.Sort(listed)
	require.Equal(t, slices.Sorted(maps.Keys(read)), listed, "the variables ConfigFromEnv reads are Variables()")
}

// RequireDocumented requires the docs page at path to have a table row naming each variable (`NAME`) that
// gives its default (backquotes aside); a variable without one (settings.Unset) needs only its row.
func RequireDocumented(t *testing.T, path string, vars []settings.Variable) {
	t.Helper()
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, v := range vars {
		var rows []string
		for line := range strings.Lines(string(doc)) {
			if strings.HasPrefix(line, "|") && strings.Contains(line, "`"+v.Name+"`") {
				rows = append(rows, line)
			}
		}
		require.NotEmpty(t, rows, "%s has no row for %s", path, v.Name)
		if v.Default == settings.Unset {
			continue
		}
		found := false
		for _, row := range rows {
			found = found || strings.Contains(strings.ReplaceAll(row, "`", ""), v.Default)
		}
		require.True(t, found, "%s gives %s's default, %q: %q", path, v.Name, v.Default, rows)
	}
}
