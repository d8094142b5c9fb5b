package evals_test

import (
	"testing"
	"time"

	"github.com/gemhq/gem/brain/evals"
	"github.com/stretchr/testify/require"
)

// TestResolveDate: the date checks' grammar, relative to Monday 2 March 2026, 09:00 in Sydney; a weekday is
// the first after today, so "monday" is a week on.
func TestResolveDate(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	now := time.Date(2026, 3, 2, 9, 0, 30, 0, loc)
	for expr, want := range map[string]string{
		"today":             "2026-03-02",
		"tomorrow":          "2026-03-03",
		"yesterday":         "2026-03-01",
		"friday":            "2026-03-06",
		"next friday 17:00": "2026-03-06 17:00",
		"monday":            "2026-03-09",
		"Next Monday":       "2026-03-09",
		"+3d":               "2026-03-05",
		"-2d 8:30":          "2026-02-28 08:30",
		"+1w":               "2026-03-09",
		"2026-04-01 23:59":  "2026-04-01 23:59",
		"now":               "2026-03-02 09:00",
		"+2h":               "2026-03-02 11:00",
		// Daylight saving ends on 5 April in Sydney: a day on is the same time of day.
		"2026-04-04 17:00": "2026-04-04 17:00",
		"+34d 17:00":       "2026-04-05 17:00",
	} {
		got, hasTime, err := evals.ResolveDate(expr, now)
		require.NoError(t, err, expr)
		require.Equal(t, loc, got.Location(), expr)
		layout := time.DateOnly
		if hasTime {
			layout = "2006-01-02 15:04"
		}
		require.Equal(t, want, got.Format(layout), expr)
	}
	for _, expr := range []string{"", "next", "next week", "fortnight", "tomorrow 25:00", "tomorrow 5pm", "now 17:00", "+2h 10:00", "friday 17:00 sharp", "2026-02-30"} {
		_, _, err := evals.ResolveDate(expr, now)
		require.ErrorContains(t, err, "is not a day", "%q", expr)
	}
}
