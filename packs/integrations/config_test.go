package integrationspack_test

import (
	"testing"

	integrationspack "github.com/gemhq/gem/packs/integrations"
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
