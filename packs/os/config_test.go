package ospack_test

import (
	"testing"

	"github.com/gemhq/gem/packs/internal/settingstest"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/stretchr/testify/require"
)

func TestConfig(t *testing.T) {
	env := func(tz string) func(string) string {
		return func(k string) string {
			if k == ospack.EnvTimeZone {
				return tz
			}
			return ""
		}
	}
	require.Equal(t, ospack.Config{TimeZone: "Australia/Perth"}, ospack.ConfigFromEnv(env(" Australia/Perth ")))
	require.Equal(t, ospack.TimeZoneDefault, ospack.ConfigFromEnv(env("")).WithDefaults().TimeZone)
	require.Equal(t, "Australia/Perth", ospack.Config{TimeZone: "Australia/Perth"}.WithDefaults().TimeZone)

	require.Empty(t, ospack.Config{}.Problems(), "the default works")
	require.Empty(t, ospack.ConfigFromEnv(env("Pacific/Auckland")).Problems())
	problems := ospack.ConfigFromEnv(env("Mars/Olympus")).Problems()
	require.Len(t, problems, 1)
	require.ErrorContains(t, problems[0], `GEM_BUSINESS_TIMEZONE="Mars/Olympus" is not a time zone`)

	loc, err := ospack.LoadTimeZone("Australia/Sydney")
	require.NoError(t, err)
	require.Equal(t, "Australia/Sydney", loc.String())
}

// TestVariables: Variables are what ConfigFromEnv reads, and the docs list each with its default.
func TestVariables(t *testing.T) {
	t.Parallel()
	settingstest.RequireVariablesRead(t, func(getenv func(string) string) { ospack.ConfigFromEnv(getenv) }, ospack.Variables())
	settingstest.RequireDocumented(t, "../../docs/business-pack.md", ospack.Variables())
}
