package integrationspack

import "strings"

// The HighLevel pipeline's settings. The executor moves opportunities through the pipeline's stages
// (integrations.highlevel.update_lead_stage); the brain's webhook maps HighLevel's stage moves back to
// GEM's leads.
const (
	EnvHighLevelPipelineID = "GEM_HIGHLEVEL_PIPELINE_ID"
	EnvHighLevelStageIDs   = "GEM_HIGHLEVEL_STAGE_IDS"
)

// HighLevelPipeline is the HighLevel pipeline GEM follows.
type HighLevelPipeline struct {
	// ID is the pipeline whose stage moves become GEM stage moves. No default (any pipeline).
	ID string
	// StageByID maps HighLevel pipeline stage ids to GEM stages. No default (stage moves are ignored).
	StageByID map[string]string
}

// HighLevelPipelineFromEnv reads the pipeline through getenv: GEM_HIGHLEVEL_PIPELINE_ID, and
// GEM_HIGHLEVEL_STAGE_IDS's comma-separated stage=pipeline_stage_id pairs (what is not such a pair is
// skipped).
func HighLevelPipelineFromEnv(getenv func(string) string) HighLevelPipeline {
	p := HighLevelPipeline{ID: strings.TrimSpace(getenv(EnvHighLevelPipelineID)), StageByID: map[string]string{}}
	for _, pair := range strings.Split(getenv(EnvHighLevelStageIDs), ",") {
		if stage, id, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.TrimSpace(id) != "" {
			p.StageByID[strings.TrimSpace(id)] = strings.TrimSpace(stage)
		}
	}
	return p
}
