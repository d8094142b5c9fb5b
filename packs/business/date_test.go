package businesspack_test

import (
	"encoding/json"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/stretchr/testify/require"
)

// TestDateIsADayOnTheWire: a Date is "YYYY-MM-DD" both ways, whatever the time and zone it was taken from;
// an optional one is left out of an input and null in a result; text that is not a day is refused saying so.
func TestDateIsADayOnTheWire(t *testing.T) {
	t.Parallel()

	sydney, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	// 23:30 UTC on 30 November is 1 December in Sydney.
	d := businesspack.DateOf(time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC).In(sydney))
	require.Equal(t, "2026-12-01", d.String())
	b, err := json.Marshal(businesspack.JobAssignDatesInput{StartDate: d})
	require.NoError(t, err)
	require.JSONEq(t, `{"start_date": "2026-12-01"}`, string(b), "a zero end_date is left out")

	var in businesspack.JobAssignDatesInput
	require.NoError(t, json.Unmarshal([]byte(`{"start_date": "2026-12-01", "end_date": "2026-12-03"}`), &in))
	require.Equal(t, d, in.StartDate, "one day is one value")
	require.Equal(t, 2, in.EndDate.DaysSince(in.StartDate))
	require.True(t, in.StartDate.Before(in.EndDate))

	b, err = json.Marshal(businesspack.Job{StartDate: &d})
	require.NoError(t, err)
	var job map[string]any
	require.NoError(t, json.Unmarshal(b, &job))
	require.Equal(t, "2026-12-01", job["start_date"])
	require.Nil(t, job["end_date"])

	err = json.Unmarshal([]byte(`{"start_date": "1/12/2026"}`), &in)
	require.ErrorContains(t, err, `"1/12/2026" is not a date (YYYY-MM-DD)`)

	require.Equal(t, businesspack.DateOf(time.Date(2027, 2, 28, 0, 0, 0, 0, time.UTC)), d.AddDate(0, 2, 27))
	require.Equal(t, "", businesspack.Date{}.String(), "the zero Date is no day")

	// The first day of year one is a day, not the zero Date: it is kept in an input and told from no day.
	first, err := businesspack.ParseDate("0001-01-01")
	require.NoError(t, err)
	require.False(t, first.IsZero())
	require.False(t, first.Equal(businesspack.Date{}))
	require.Equal(t, "0001-01-01", first.String())
	require.NoError(t, json.Unmarshal([]byte(`{"start_date": "2026-12-01", "end_date": "0001-01-01"}`), &in))
	require.Equal(t, first, in.EndDate)
	b, err = json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"start_date": "2026-12-01", "end_date": "0001-01-01"}`, string(b))
}

// TestDaysSince counts days across any span the schemas accept, from the first day of year one to the last of
// 9999 (a time.Duration between them saturates at about 292 years).
func TestDaysSince(t *testing.T) {
	t.Parallel()
	day := func(s string) businesspack.Date {
		d, err := businesspack.ParseDate(s)
		require.NoError(t, err)
		return d
	}
	require.Equal(t, 1, day("2026-03-01").DaysSince(day("2026-02-28")))
	require.Equal(t, -366, day("2024-01-01").DaysSince(day("2025-01-01")))
	require.Equal(t, 739_955, day("2026-12-06").DaysSince(day("0001-01-01")))
	require.Equal(t, 3_652_058, day("9999-12-31").DaysSince(day("0001-01-01")))
}
