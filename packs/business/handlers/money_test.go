package businesshandlers

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLineTotalCents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		quantity string
		price    int64
		want     int64
	}{
		{"1", 12345, 12345},
		{"152.5", 4550, 693875},
		{"18.3", 2999, 54882}, // 54,881.7 → up
		{"2.5", 1001, 2503},   // 2,502.5: a half rounds up
		{"0.001", 499, 0},     // 0.499 → down
		{"0.001", 500, 1},     // 0.5 → up
		{"3.333", 3, 10},      // 9.999 → up
		{"1e2", 100, 10000},   // exponent notation is still exact
		{"100000", 1_000_000_000, 100_000_000_000_000},
	}
	for _, tt := range tests {
		got, err := lineTotalCents(json.Number(tt.quantity), tt.price)
		require.NoError(t, err, tt.quantity)
		require.Equal(t, tt.want, got, "%s × %d", tt.quantity, tt.price)
	}
}

func TestLineTotalCentsRefuses(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"0", "-1", "1.0001", "100000.001", "abc"} {
		_, err := lineTotalCents(json.Number(q), 100)
		require.Error(t, err, q)
	}
	_, err := lineTotalCents("1", -1)
	require.Error(t, err)
	_, err = lineTotalCents("1", maxUnitPriceCents+1)
	require.Error(t, err)
}

func TestGSTCents(t *testing.T) {
	t.Parallel()
	tests := []struct{ subtotal, want int64 }{
		{0, 0},
		{1, 0},   // 0.1
		{4, 0},   // 0.4
		{5, 1},   // 0.5: a half rounds up
		{15, 2},  // 1.5
		{25, 3},  // 2.5 (not banker's rounding, which would give 2)
		{99, 10}, // 9.9
		{936_245, 93_625},
		{933_743, 93_374},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, gstCents(tt.subtotal), "GST on %d", tt.subtotal)
	}
}

func TestFormatAUD(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cents int64
		want  string
	}{
		{0, "$0.00"},
		{5, "$0.05"},
		{100, "$1.00"},
		{35_050, "$350.50"},
		{170_555, "$1,705.55"},
		{100_000_000, "$1,000,000.00"},
		{-2_503, "-$25.03"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, formatAUD(tt.cents))
	}
}

func TestScalePercent(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(23_125), scalePercent(18_500, 125))
	require.Equal(t, int64(7_680), scalePercent(4_800, 160))
	require.Equal(t, int64(2), scalePercent(1, 150), "1.5 cents rounds half up")
	require.Equal(t, int64(1), scalePercent(1, 149))
}
