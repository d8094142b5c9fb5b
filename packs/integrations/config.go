package integrationspack

import (
	"fmt"
	"slices"
	"strings"
)

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

// GEMStages are the lead stages a HighLevel pipeline stage can be mapped to (GEM_HIGHLEVEL_STAGE_IDS).
var GEMStages = []string{"new", "contacted", "inspection_scheduled", "inspected", "quoted", "won", "lost"}

// HighLevelPipelineFromEnv reads the pipeline through getenv: GEM_HIGHLEVEL_PIPELINE_ID, and
// GEM_HIGHLEVEL_STAGE_IDS read as the executor reads it (ParseStageIDs). A value the executor refuses maps
// no stage here either; the executor reports it at start.
func HighLevelPipelineFromEnv(getenv func(string) string) HighLevelPipeline {
	p := HighLevelPipeline{ID: strings.TrimSpace(getenv(EnvHighLevelPipelineID)), StageByID: map[string]string{}}
	stages, _ := ParseStageIDs(getenv(EnvHighLevelStageIDs))
	for stage, id := range stages {
		p.StageByID[id] = stage
	}
	return p
}

// ParseStageIDs reads GEM_HIGHLEVEL_STAGE_IDS: comma-separated stage=id pairs, such as
// "new=5f1c...,quoted=9a2b...,won=77de...". Stages are those of GEMStages.
func ParseStageIDs(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		stage, id, ok := strings.Cut(pair, "=")
		stage, id = strings.TrimSpace(stage), strings.TrimSpace(id)
		if !ok || id == "" {
			return nil, fmt.Errorf("%s: %q is not stage=pipeline_stage_id", EnvHighLevelStageIDs, pair)
		}
		if !slices.Contains(GEMStages, stage) {
			return nil, fmt.Errorf("%s: %q is not a GEM stage (%s)", EnvHighLevelStageIDs, stage, strings.Join(GEMStages, ", "))
		}
		m[stage] = id
	}
	return m, nil
}
