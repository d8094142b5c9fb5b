package businesspack_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/stretchr/testify/require"
)

// TestLeadStagesAreTheRegistrys: every lead stage enum of the pack's registry entries is LeadStages, in its
// order (null aside, where a stage may be absent), but leads.update_stage's input, which is
// SettableLeadStages: the Go list and the schemas cannot drift apart.
func TestLeadStagesAreTheRegistrys(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("tools", "*.json"))
	require.NoError(t, err)
	stageEnums, settable := 0, 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(b, &doc), file)
		name := doc.(map[string]any)["name"]
		walkEnums(doc, func(enum []string) {
			if !slices.Contains(enum, businesspack.StageNew) || !slices.Contains(enum, businesspack.StageWon) {
				return
			}
			stageEnums++
			if name == businesspack.UpdateLeadStage && !slices.Contains(enum, businesspack.StageInspected) {
				settable++
				require.Equal(t, businesspack.SettableLeadStages, enum, "%s: the stage to move to", name)
				return
			}
			require.Equal(t, businesspack.LeadStages, enum, name)
		})
	}
	require.Greater(t, stageEnums, 10, "the pack's entries name lead stages")
	require.Equal(t, 1, settable, "leads.update_stage's input")
}

// walkEnums calls f with each enum of a schema document, its null left out.
func walkEnums(doc any, f func([]string)) {
	switch v := doc.(type) {
	case map[string]any:
		for k, child := range v {
			if k == "enum" {
				f(stringsOf(child))
				continue
			}
			walkEnums(child, f)
		}
	case []any:
		for _, child := range v {
			walkEnums(child, f)
		}
	}
}

// stringsOf is a JSON list's strings, in order.
func stringsOf(list any) []string {
	var out []string
	items, _ := list.([]any)
	for _, item := range items {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
