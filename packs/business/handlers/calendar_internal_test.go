package businesshandlers

import (
	"strings"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/stretchr/testify/require"
)

func TestPartOfDayAcrossDST(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	wh := parseMust(t, "Mon-Sun 07:00-17:00")
	// Daylight saving ends at 03:00 on Sunday 4 April 2027: the day has 25 hours.
	d := businesspack.DateOf(time.Date(2027, 4, 4, 0, 0, 0, 0, time.UTC))
	start, end, err := wh.partOfDay(d, "any", loc)
	require.NoError(t, err)
	require.Equal(t, "2027-04-03T21:00:00Z", start.UTC().Format(time.RFC3339), "07:00 AEST")
	require.Equal(t, 10*time.Hour, end.Sub(start))
	start, end, err = wh.partOfDay(d, "afternoon", loc)
	require.NoError(t, err)
	require.Equal(t, "12:00 17:00", start.Format("15:04")+" "+end.Format("15:04"))
	_, _, err = parseMust(t, "Mon 13:00-17:00").partOfDay(businesspack.DateOf(time.Date(2027, 4, 5, 0, 0, 0, 0, time.UTC)), "morning", loc)
	require.ErrorContains(t, err, "no working hours in the morning")
}

func parseMust(t *testing.T, spec string) workingHours {
	wh, err := businesspack.ParseWorkingHours(spec)
	require.NoError(t, err)
	return workingHours(wh)
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
