package planner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Every day, time of day and period the rules read from a message is made here, from numbers checked first:
// a date or a time that cannot be (99pm, 25:61, 30 February, the year 0) is asked about with a question
// naming the input field it was for, like a missing suburb. time.Date would roll it over into another day
// without a word, and a date the rules could not read would stay in a task's title.

// yearsAway bounds the dates the rules accept: one further than this from today is a typo, not a plan.
const yearsAway = 100

// isoDatePattern is a date written year first, the one numeric form the rules read ("2026-12-01", "2026-2-3").
const isoDatePattern = `\d{4}-\d{1,2}-\d{1,2}`

var isoDateRe = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})$`)

// dayExample and timeExample end the questions: what to say instead.
const (
	dayExample  = `Say a day like "friday" or 2026-12-01`
	timeExample = `Say a time like "3pm", "10:30am" or "at 15:30"`
)

// notADay is the question about a date that cannot be.
func notADay(field, said, why string) error {
	return Missing(field, fmt.Sprintf("%s is not a day I can use (%s): which day do you mean? %s", said, why, dayExample))
}

// NotATime is the question about a time of day that cannot be.
func NotATime(field, said, why string) error {
	return Missing(field, fmt.Sprintf("%s is not a time of day (%s): at what time? %s", said, why, timeExample))
}

// calendarDay is the day y-mo-d at hour:min in loc; a day the calendar lacks, or one more than yearsAway
// from now, is a question.
func calendarDay(field, said string, y, mo, d, hour, minute int, now time.Time, loc *time.Location) (time.Time, error) {
	if mo < 1 || mo > 12 {
		return time.Time{}, notADay(field, said, "months go from 1 to 12")
	}
	if last := time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day(); d < 1 || d > last {
		return time.Time{}, notADay(field, said, fmt.Sprintf("%s %d has %d days", time.Month(mo), y, last))
	}
	t := time.Date(y, time.Month(mo), d, hour, minute, 0, 0, loc)
	return t, withinReach(field, said, t, now)
}

// withinReach refuses a time more than yearsAway from now, however it was reached ("0000-01-01", "100000
// days ago").
func withinReach(field, said string, t, now time.Time) error {
	if t.Before(now.AddDate(-yearsAway, 0, 0)) || t.After(now.AddDate(yearsAway, 0, 0)) {
		return notADay(field, said, fmt.Sprintf("it is more than %d years from today", yearsAway))
	}
	return nil
}

// isoDay reads a date written year first (isoDatePattern) as that day at hour:00 in loc.
func isoDay(field, said string, hour int, now time.Time, loc *time.Location) (time.Time, error) {
	m := isoDateRe.FindStringSubmatch(said)
	if m == nil {
		return time.Time{}, notADay(field, said, "write it year first, like 2026-12-01")
	}
	y, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	d, _ := strconv.Atoi(m[3])
	return calendarDay(field, said, y, mo, d, hour, 0, now, loc)
}

// clockTime reads a time of day from its hour and minute digits and its am or pm ("" for a 24-hour time).
// Minutes are two digits; hours 1 to 12 with am or pm, else 0 to 23.
func clockTime(field, said, hourDigits, minuteDigits, meridiem string) (hour, minute int, err error) {
	hour, herr := strconv.Atoi(hourDigits)
	if minuteDigits != "" {
		minute, err = strconv.Atoi(minuteDigits)
		if err != nil || len(minuteDigits) != 2 || minute > 59 {
			return 0, 0, NotATime(field, said, "minutes go from 00 to 59")
		}
	}
	switch meridiem = strings.ToLower(meridiem); {
	case meridiem == "":
		if herr != nil || len(hourDigits) > 2 || hour > 23 {
			return 0, 0, NotATime(field, said, "hours go from 0 to 23")
		}
	case herr != nil || len(hourDigits) > 2 || hour < 1 || hour > 12:
		return 0, 0, NotATime(field, said, "hours go from 1 to 12 before am or pm")
	case meridiem == "pm" && hour < 12:
		hour += 12
	case meridiem == "am" && hour == 12:
		hour = 0
	}
	return hour, minute, nil
}

var whenRe = regexp.MustCompile(`(?i)[,]?\s*\b(?:(?:by|on|due|before|for|until|till|to)\s+)?(today|tonight|tomorrow|next\s+week|(?:next\s+|this\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|in\s+(\d{1,3})\s+days?|` + isoDatePattern + `)\b`)

// extractWhen finds a day in text and returns it (at 17:00 that day) and the text without it; no day is the
// zero time. A day that cannot be is a question about field.
func extractWhen(text, field string, now time.Time, loc *time.Location) (time.Time, string, error) {
	m := whenRe.FindStringSubmatchIndex(text)
	if m == nil {
		return time.Time{}, text, nil
	}
	phrase := strings.ToLower(text[m[2]:m[3]])
	day := time.Date(now.Year(), now.Month(), now.Day(), 17, 0, 0, 0, loc)
	switch {
	case phrase == "today" || phrase == "tonight":
	case phrase == "tomorrow":
		day = day.AddDate(0, 0, 1)
	case strings.HasPrefix(phrase, "next") && strings.HasSuffix(phrase, "week"):
		day = day.AddDate(0, 0, 7)
	case strings.HasPrefix(phrase, "in "):
		n, _ := strconv.Atoi(text[m[4]:m[5]])
		day = day.AddDate(0, 0, n)
	case isoDateRe.MatchString(phrase):
		var err error
		if day, err = isoDay(field, phrase, 17, now, loc); err != nil {
			return time.Time{}, text, err
		}
	default:
		name := phrase[strings.LastIndexByte(phrase, ' ')+1:]
		wd := weekdays[name]
		ahead := (int(wd) - int(now.Weekday()) + 7) % 7
		if ahead == 0 || strings.HasPrefix(phrase, "next") {
			ahead += 7
		}
		day = day.AddDate(0, 0, ahead)
	}
	return day, text[:m[0]] + text[m[1]:], nil
}

// timeOfDayRe finds a time of day: "3pm", "10:30 am", "at 15:30", "noon". Its numbers are any digits, so an
// impossible time ("99pm", "at 25:61") is found and asked about rather than left in the text.
var timeOfDayRe = regexp.MustCompile(`(?i)\s*\b(?:at\s+)?(\d+)(?::(\d+))?\s*(am|pm)\b|\s*\bat\s+(\d+):(\d+)\b|\s*\b(noon|midday)\b`)

// extractDateTime finds a day (and a time of day, else defaultHour; -1 for midnight) in text, and returns it
// and the text without them. Neither is the zero time; a time alone is today's, or tomorrow's once it has
// passed. A day or time that cannot be is a question about field.
func extractDateTime(text, field string, now time.Time, loc *time.Location, defaultHour int) (time.Time, string, error) {
	day, rest, err := extractWhen(text, field, now, loc)
	if err != nil {
		return time.Time{}, text, err
	}
	hour, minute, found := max(defaultHour, 0), 0, false
	if tm := timeOfDayRe.FindStringSubmatchIndex(rest); tm != nil {
		sub := func(i int) string {
			if tm[2*i] < 0 {
				return ""
			}
			return rest[tm[2*i]:tm[2*i+1]]
		}
		found = true
		said := strings.TrimSpace(rest[tm[0]:tm[1]])
		switch {
		case sub(6) != "":
			hour, minute = 12, 0
		case sub(4) != "":
			hour, minute, err = clockTime(field, said, sub(4), sub(5), "")
		default:
			hour, minute, err = clockTime(field, said, sub(1), sub(2), sub(3))
		}
		if err != nil {
			return time.Time{}, text, err
		}
		rest = rest[:tm[0]] + rest[tm[1]:]
	}
	if day.IsZero() {
		if !found {
			return time.Time{}, text, nil
		}
		day = time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, loc)
		if !day.After(now) {
			day = day.AddDate(0, 0, 1)
		}
		return day, rest, nil
	}
	return time.Date(day.Year(), day.Month(), day.Day(), hour, minute, 0, 0, loc), rest, nil
}

var sinceAgoRe = regexp.MustCompile(`^(?:in\s+)?(?:the\s+)?(?:last|past)\s+(\d+)\s+(hours?|days?)$|^(\d+)\s+(hours?|days?)\s+ago$`)

// sinceOf reads "today", "yesterday", "this week", "the last 3 hours", "2 days ago" or a date. Words that
// are not a time are ErrNoMatch; a time that cannot be is a question about field.
func sinceOf(text, field string, now time.Time, loc *time.Location) (time.Time, error) {
	text = strings.ToLower(strings.Trim(text, " ?.!"))
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	switch text {
	case "today":
		return today, nil
	case "yesterday":
		return today.AddDate(0, 0, -1), nil
	case "this week":
		return today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7)), nil
	}
	if m := sinceAgoRe.FindStringSubmatch(text); m != nil {
		n, err := strconv.Atoi(m[1] + m[3])
		if err != nil || n > yearsAway*366*24 {
			return time.Time{}, notADay(field, text, fmt.Sprintf("it is more than %d years ago", yearsAway))
		}
		since := today.AddDate(0, 0, -n)
		if strings.HasPrefix(m[2]+m[4], "h") {
			since = now.Add(-time.Duration(n) * time.Hour)
		}
		return since, withinReach(field, text, since, now)
	}
	if isoDateRe.MatchString(text) {
		return isoDay(field, text, 0, now, loc)
	}
	return time.Time{}, ErrNoMatch
}
