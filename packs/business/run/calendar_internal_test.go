package businessrun

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseWorkingHours(t *testing.T) {
	t.Parallel()
	wh, err := parseWorkingHours(BusinessHoursDefault)
	require.NoError(t, err)
	require.Nil(t, wh.days[time.Sunday])
	require.Nil(t, wh.days[time.Saturday])
	require.Equal(t, &workingDay{7 * 60, 17 * 60}, wh.days[time.Monday])
	require.Equal(t, &workingDay{7 * 60, 17 * 60}, wh.days[time.Friday])

	wh, err = parseWorkingHours("Fri-Mon 08:30-12:00; wed 13:00-24:00")
	require.NoError(t, err)
	for _, d := range []time.Weekday{time.Friday, time.Saturday, time.Sunday, time.Monday} {
		require.Equal(t, &workingDay{8*60 + 30, 12 * 60}, wh.days[d], d)
	}
	require.Nil(t, wh.days[time.Tuesday])
	require.Equal(t, &workingDay{13 * 60, 24 * 60}, wh.days[time.Wednesday])

	for _, bad := range []string{"", "Mon-Fri", "Mon-Fri 9-5", "Mon-Fri 17:00-07:00", "Mon-Fri 07:00-17:00; Fri 08:00-09:00",
		"Funday 07:00-17:00", "Mon 07:60-08:00", "Mon 07:00-25:00"} {
		_, err := parseWorkingHours(bad)
		require.ErrorContains(t, err, EnvBusinessHours, bad)
	}
}

func TestPartOfDayAcrossDST(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	wh, err := parseWorkingHours("Mon-Sun 07:00-17:00")
	require.NoError(t, err)
	// Daylight saving ends at 03:00 on Sunday 4 April 2027: the day has 25 hours.
	d := dateOf(time.Date(2027, 4, 4, 0, 0, 0, 0, time.UTC))
	start, end, err := wh.partOfDay(d, "any", loc)
	require.NoError(t, err)
	require.Equal(t, "2027-04-03T21:00:00Z", start.UTC().Format(time.RFC3339), "07:00 AEST")
	require.Equal(t, 10*time.Hour, end.Sub(start))
	start, end, err = wh.partOfDay(d, "afternoon", loc)
	require.NoError(t, err)
	require.Equal(t, "12:00 17:00", start.Format("15:04")+" "+end.Format("15:04"))
	_, _, err = parseMust(t, "Mon 13:00-17:00").partOfDay(dateOf(time.Date(2027, 4, 5, 0, 0, 0, 0, time.UTC)), "morning", loc)
	require.ErrorContains(t, err, "no working hours in the morning")
}

func parseMust(t *testing.T, spec string) workingHours {
	wh, err := parseWorkingHours(spec)
	require.NoError(t, err)
	return wh
}

func TestSubtractBusy(t *testing.T) {
	t.Parallel()
	h := func(n int) time.Time { return time.Date(2027, 1, 1, n, 0, 0, 0, time.UTC) }
	free := subtractBusy(h(7), h(17), [][2]time.Time{{h(5), h(8)}, {h(9), h(10)}, {h(9), h(11)}, {h(16), h(20)}})
	require.Equal(t, [][2]time.Time{{h(8), h(9)}, {h(11), h(16)}}, free)
	require.Equal(t, [][2]time.Time{{h(7), h(17)}}, subtractBusy(h(7), h(17), nil))
	require.Empty(t, subtractBusy(h(7), h(17), [][2]time.Time{{h(6), h(18)}}))
}

func TestSMSSegments(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, smsSegments(strings.Repeat("a", 160)))
	require.Equal(t, 2, smsSegments(strings.Repeat("a", 161)))
	require.Equal(t, 3, smsSegments(strings.Repeat("a", 307)))
	require.Equal(t, 2, smsSegments(strings.Repeat("a", 150)+"{}[]~|"), "extension characters take two septets")
	require.Equal(t, 1, smsSegments(strings.Repeat("é", 70)), "é is in the GSM alphabet")
	require.Equal(t, 2, smsSegments(strings.Repeat("a", 70)+"–"), "an en dash needs UCS-2: 70 units per single segment")
	require.Equal(t, 1, smsSegments("🙂"))
}
