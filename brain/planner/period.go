package planner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Reports that need a period (analytics, ads) get the last 30 days when the message names none.
const defaultReportDays = 30

var (
	periodRangeRe = regexp.MustCompile(`(?i)^(?:from|between)\s+(` + isoDatePattern + `)\s+(?:to|and|until|-)\s+(` + isoDatePattern + `)$`)
	periodLastRe  = regexp.MustCompile(`(?i)^(?:for\s+|over\s+|in\s+)?(?:the\s+)?(?:last|past)\s+(\d{1,3})\s+(days?|weeks?|months?)$`)
	periodNamedRe = regexp.MustCompile(`(?i)^(?:for\s+|in\s+|of\s+|over\s+)?(?:the\s+)?(this|last|previous)\s+(week|month|quarter|year|financial\s+year|fy)$`)
	periodToDate  = regexp.MustCompile(`(?i)^(?:for\s+)?(?:the\s+)?(year|month)\s+to\s+date$|^(ytd|mtd)$`)
	periodMonthRe = regexp.MustCompile(`(?i)^(?:for\s+|in\s+|of\s+)?(january|february|march|april|may|june|july|august|september|october|november|december)(?:\s+(\d{4}))?$`)
)

// periodOf reads a period from text ("this month", "last quarter", "from 2026-07-01 to 2026-09-30", "the last
// 30 days", "march 2026", "year to date"): its first and last days. Empty text is no period (zero, nil);
// words that are not a period are ErrNoMatch; a day that cannot be, or a period that ends before it starts,
// is a question about from or to.
func periodOf(text string, now time.Time) (from, to time.Time, err error) {
	text = strings.Trim(strings.TrimSpace(text), ".?!,")
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	if text == "" {
		return time.Time{}, time.Time{}, nil
	}
	if m := periodRangeRe.FindStringSubmatch(text); m != nil {
		if from, err = isoDay("from", m[1], 0, now, now.Location()); err != nil {
			return time.Time{}, time.Time{}, err
		}
		if to, err = isoDay("to", m[2], 0, now, now.Location()); err != nil {
			return time.Time{}, time.Time{}, err
		}
		if to.Before(from) {
			return time.Time{}, time.Time{}, Missing("to", fmt.Sprintf("the period ends on %s, before it starts on %s: which days do you mean? Say it like \"from 2026-07-01 to 2026-09-30\"", m[2], m[1]))
		}
		return from, to, nil
	}
	if m := periodLastRe.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n == 0 {
			return time.Time{}, time.Time{}, ErrNoMatch
		}
		switch strings.ToLower(m[2][:1]) {
		case "w":
			return day.AddDate(0, 0, -7*n), day, nil
		case "m":
			return day.AddDate(0, -n, 0), day, nil
		}
		return day.AddDate(0, 0, -n), day, nil
	}
	if m := periodToDate.FindStringSubmatch(text); m != nil {
		if strings.HasPrefix(strings.ToLower(m[1]+m[2]), "y") {
			return time.Date(now.Year(), 1, 1, 0, 0, 0, 0, now.Location()), day, nil
		}
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location()), day, nil
	}
	if m := periodMonthRe.FindStringSubmatch(text); m != nil {
		month, _ := time.Parse("January", Capitalize(strings.ToLower(m[1])))
		year := now.Year()
		if m[2] != "" {
			year, _ = strconv.Atoi(m[2])
		} else if month.Month() > now.Month() {
			year-- // "march" in November is the March just gone
		}
		f, err := calendarDay("from", text, year, int(month.Month()), 1, 0, 0, now, now.Location())
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		return f, f.AddDate(0, 1, -1), nil
	}
	m := periodNamedRe.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, time.Time{}, ErrNoMatch
	}
	back := 0
	if !strings.EqualFold(m[1], "this") {
		back = 1
	}
	switch unit := strings.ToLower(m[2]); {
	case unit == "week":
		monday := day.AddDate(0, 0, -((int(day.Weekday())+6)%7)-7*back)
		return monday, monday.AddDate(0, 0, 6), nil
	case unit == "month":
		f := time.Date(now.Year(), now.Month()-time.Month(back), 1, 0, 0, 0, 0, now.Location())
		return f, f.AddDate(0, 1, -1), nil
	case unit == "quarter":
		q := (int(now.Month())-1)/3 - back
		f := time.Date(now.Year(), time.Month(q*3+1), 1, 0, 0, 0, 0, now.Location())
		return f, f.AddDate(0, 3, -1), nil
	case unit == "year":
		f := time.Date(now.Year()-back, 1, 1, 0, 0, 0, 0, now.Location())
		return f, f.AddDate(1, 0, -1), nil
	default: // the Australian financial year, 1 July to 30 June
		start := now.Year()
		if now.Month() < time.July {
			start--
		}
		f := time.Date(start-back, time.July, 1, 0, 0, 0, 0, now.Location())
		return f, f.AddDate(1, 0, -1), nil
	}
}
