package evals_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/registry"
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
	for _, expr := range []string{"", "next", "next week", "fortnight", "tomorrow 25:00", "tomorrow 5pm", "now 17:00", "+2h 10:00", "friday 17:00 sharp", "2026-02-30", "+99999999999999999999d", "+2000000h"} {
		_, _, err := evals.ResolveDate(expr, now)
		require.ErrorContains(t, err, "is not a day", "%q", expr)
	}
}

// TestRunPlanScoresAFailingPlanner: a planner that fails (not a question back) fails each case, whatever it
// expected, and the run goes on: a case that expects nothing planned is not passed by a planner that broke.
func TestRunPlanScoresAFailingPlanner(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(`now: 2026-03-02T09:00:00+11:00
timezone: Australia/Sydney
cases:
- message: who won the footy
  calls: []
  split: tune
- message: list my tasks
  calls: [{tool: os.list_tasks}]
  split: tune
- message: send the quote
  asks: quote_id
  split: held_out
`), 0o644))
	suite, err := evals.LoadPlan(dir, reg)
	require.NoError(t, err)
	report, err := evals.RunPlan(context.Background(), suite, reg, func(context.Context, string, time.Time) (*brain.Plan, error) {
		return nil, errors.New("the rules are broken")
	})
	require.NoError(t, err)
	require.Len(t, report.Misses, 3)
	for _, m := range report.Misses {
		require.Equal(t, "the planner failed: the rules are broken", m.Got)
	}
	for metric, want := range map[string]float64{evals.MetricIrrelevance: 0, evals.MetricExact: 0} {
		got, ok := report.Metric(evals.SplitTune, metric)
		require.True(t, ok, metric)
		require.Equal(t, want, got, metric)
	}
}

// TestDateCheckNamesItsPrecision: a date check naming a time fails a bare day (the time was lost) and holds
// for that minute; a check naming a day holds for any time of it.
func TestDateCheckNamesItsPrecision(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(`now: 2026-03-02T09:00:00+11:00
timezone: Australia/Sydney
cases:
- message: day
  calls: [{tool: os.create_task, args: {due_at: {date: tomorrow 17:00}}}]
  split: tune
- message: minute
  calls: [{tool: os.create_task, args: {due_at: {date: tomorrow 17:00}}}]
  split: tune
- message: any time
  calls: [{tool: os.create_task, args: {due_at: {date: tomorrow}}}]
  split: tune
`), 0o644))
	suite, err := evals.LoadPlan(dir, reg)
	require.NoError(t, err)
	due := map[string]string{"day": "2026-03-03", "minute": "2026-03-03T17:00:00+11:00", "any time": "2026-03-03T08:15:00+11:00"}
	report, err := evals.RunPlan(context.Background(), suite, reg, func(_ context.Context, message string, _ time.Time) (*brain.Plan, error) {
		return &brain.Plan{Calls: []brain.PlannedCall{{Tool: "os.create_task", Input: []byte(`{"title": "x", "due_at": "` + due[message] + `"}`)}}}, nil
	})
	require.NoError(t, err)
	require.Len(t, report.Misses, 1, "%+v", report.Misses)
	require.Equal(t, "day", report.Misses[0].Case)
	require.Contains(t, report.Misses[0].Want, "a day, and the check names a time")
}
