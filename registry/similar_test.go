package registry

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimilarNames(t *testing.T) {
	t.Parallel()
	r, err := Load(repoRegistry)
	require.NoError(t, err)
	for _, tt := range []struct {
		asked string
		first string
	}{
		{"os.create_tsak", "os.create_task"},
		{"leads.creat", "leads.create"},
		{"lead.create", "leads.create"},
		{"create_lead", "leads.create"},
		{"invoice.pay", "invoice.add_payment"},
		{"LEADS.CREATE ", "leads.create"},
	} {
		got := r.SimilarNames(tt.asked)
		require.NotEmpty(t, got, tt.asked)
		require.Equal(t, tt.first, got[0], "%s: %v", tt.asked, got)
		require.LessOrEqual(t, len(got), 3)
	}
	for _, far := range []string{"nosuch.tool", "", "zzzzzzzzzzzzzzzzzzzz"} {
		require.Empty(t, r.SimilarNames(far), far)
	}
}
