package integrationspack_test

import (
	"testing"

	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/packs/internal/settingstest"
	"github.com/stretchr/testify/require"
)

// TestStageIDsReadOneWay: the brain's webhook maps HighLevel's stage ids back with the same reading of
// GEM_HIGHLEVEL_STAGE_IDS the executor moves opportunities with: a value the executor refuses (and reports
// at start) maps no stage, rather than the pairs one side happened to keep.
func TestStageIDsReadOneWay(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == integrationspack.EnvHighLevelStageIDs {
				return v
			}
			return ""
		}
	}
	p := integrationspack.HighLevelPipelineFromEnv(env(" new = s1 , quoted=s2,"))
	require.Equal(t, map[string]string{"s1": "new", "s2": "quoted"}, p.StageByID)

	for _, bad := range []string{"new=s1,quoted", "new=s1,heaven=s3", "new=s1,=s4"} {
		_, err := integrationspack.ParseStageIDs(bad)
		require.ErrorContains(t, err, integrationspack.EnvHighLevelStageIDs, bad)
		require.Empty(t, integrationspack.HighLevelPipelineFromEnv(env(bad)).StageByID, "%s: the executor refuses it whole", bad)
	}
}

// TestHighLevelPipelineReadsTwoVariables: the brain, which reads the pipeline through
// HighLevelPipelineFromEnv, reads none of the pack's other settings (its tokens among them).
func TestHighLevelPipelineReadsTwoVariables(t *testing.T) {
	t.Parallel()
	read := map[string]bool{}
	p := integrationspack.HighLevelPipelineFromEnv(func(k string) string {
		read[k] = true
		return map[string]string{integrationspack.EnvHighLevelPipelineID: " p1 ", integrationspack.EnvHighLevelStageIDs: "won=s1"}[k]
	})
	require.Equal(t, integrationspack.HighLevelPipeline{ID: "p1", StageByID: map[string]string{"s1": "won"}}, p)
	require.Equal(t, map[string]bool{integrationspack.EnvHighLevelPipelineID: true, integrationspack.EnvHighLevelStageIDs: true}, read)
}

// TestConfigProblems: Problems lists each setting ConfigFromEnv could not read, naming its variable, in the
// variables' order, and nothing for settings that are unset or fine. GEM_PHONE_REGION is the business
// pack's: read and reported there, once (TestRegistryCheckListsPackSettings), and handed to this pack's
// Register by Main (TestPhoneRegionThatCannotBeUsed).
func TestConfigProblems(t *testing.T) {
	t.Parallel()
	problems := func(env map[string]string) []string {
		var out []string
		for _, err := range integrationspack.ConfigFromEnv(func(k string) string { return env[k] }).Problems() {
			out = append(out, err.Error())
		}
		return out
	}
	require.Empty(t, problems(nil))
	require.Empty(t, problems(map[string]string{integrationspack.EnvHighLevelTaskDueDays: "3", integrationspack.EnvHighLevelRetryBaseDelay: "1m",
		integrationspack.EnvHighLevelStageIDs: "won=s1", integrationspack.EnvGA4BaseURL: "http://127.0.0.1:1", "GEM_PHONE_REGION": "NZ"}))

	got := problems(map[string]string{integrationspack.EnvHighLevelTaskDueDays: "0", integrationspack.EnvHighLevelRetryBaseDelay: "often",
		integrationspack.EnvHighLevelStageIDs: "sold=s1", integrationspack.EnvGA4BaseURL: "ftp://ga4", "GEM_PHONE_REGION": "ZZ"})
	require.Len(t, got, 4, "%q", got)
	for i, env := range []string{integrationspack.EnvGA4BaseURL, integrationspack.EnvHighLevelRetryBaseDelay, integrationspack.EnvHighLevelStageIDs,
		integrationspack.EnvHighLevelTaskDueDays} {
		require.Contains(t, got[i], env)
	}
}

// TestVariables: Variables are what ConfigFromEnv reads, and docs/integrations.md lists each with its default.
func TestVariables(t *testing.T) {
	t.Parallel()
	settingstest.RequireVariablesRead(t, func(getenv func(string) string) { integrationspack.ConfigFromEnv(getenv) }, integrationspack.Variables())
	settingstest.RequireDocumented(t, "../../docs/integrations.md", integrationspack.Variables())
}
