package integrations_test

import (
	"testing"

	"github.com/gemhq/gem/executor/integrations"
	"github.com/stretchr/testify/require"
)

// TestConfigProblems: Problems lists each setting ConfigFromEnv could not read, naming its variable, in the
// variables' order, and nothing for settings that are unset or fine.
func TestConfigProblems(t *testing.T) {
	t.Parallel()
	problems := func(env map[string]string) []string {
		var out []string
		for _, err := range integrations.ConfigFromEnv(func(k string) string { return env[k] }).Problems() {
			out = append(out, err.Error())
		}
		return out
	}
	require.Empty(t, problems(nil))
	require.Empty(t, problems(map[string]string{integrations.EnvHighLevelTaskDueDays: "3", integrations.EnvHighLevelRetryBaseDelay: "1m",
		integrations.EnvHighLevelStageIDs: "won=s1", integrations.EnvGA4BaseURL: "http://127.0.0.1:1", "GEM_PHONE_REGION": "NZ"}))

	got := problems(map[string]string{integrations.EnvHighLevelTaskDueDays: "0", integrations.EnvHighLevelRetryBaseDelay: "often",
		integrations.EnvHighLevelStageIDs: "sold=s1", integrations.EnvGA4BaseURL: "ftp://ga4", "GEM_PHONE_REGION": "ZZ"})
	require.Len(t, got, 5, "%q", got)
	for i, env := range []string{integrations.EnvGA4BaseURL, integrations.EnvHighLevelRetryBaseDelay, integrations.EnvHighLevelStageIDs,
		integrations.EnvHighLevelTaskDueDays, "GEM_PHONE_REGION"} {
		require.Contains(t, got[i], env)
	}
}
