package planner

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/registry/phone"
)

// What a pack's rules build their tools' inputs with, besides Match.Group, ID, When, DateTime and Since
// (rules.go) and the text helpers there (HasWord, CleanTitle, Cut, PriorityOf, DomainOf, EnumValue, …).

// Period reads the group "period" as a report's dates ("last month", "this financial year", "the last 90
// days"), as from and to days (2006-01-02). With required, a message naming no period gets the last 30
// days; without, it gets "" for both (the tool's own default). Words that are not a period are ErrNoMatch.
func (m *Match) Period(required bool) (from, to string, err error) {
	f, t, err := periodOf(m.Group("period"), m.Now)
	if err != nil {
		return "", "", err
	}
	if f.IsZero() {
		if !required {
			return "", "", nil
		}
		t = time.Date(m.Now.Year(), m.Now.Month(), m.Now.Day(), 0, 0, 0, 0, m.Now.Location())
		f = t.AddDate(0, 0, -defaultReportDays)
	}
	return f.Format(time.DateOnly), t.Format(time.DateOnly), nil
}

// Window is a stretch of time a message names for something to happen in: an hour from the time named, or
// the working day (8:00 to 17:00) of the day named; zero times when the text names neither.
func (m *Match) Window(text, field string) (start, end time.Time, err error) {
	start, _, err = extractDateTime(text, field, m.Now, m.Location, -1)
	if err != nil || start.IsZero() {
		return time.Time{}, time.Time{}, err
	}
	end = start.Add(time.Hour)
	if start.Hour() == 0 && start.Minute() == 0 && !timeOfDayRe.MatchString(text) {
		start = time.Date(start.Year(), start.Month(), start.Day(), 8, 0, 0, 0, m.Location)
		end = time.Date(start.Year(), start.Month(), start.Day(), 17, 0, 0, 0, m.Location)
	}
	return start, end, nil
}

// DayPattern matches a day written year first (2026-12-01, 2026-2-3) in a rule's pattern: Match.Day reads it.
const DayPattern = isoDatePattern

// Day reads a day written year first (2026-12-01) at hour, in the match's zone; one that cannot be is a
// question about field.
func (m *Match) Day(said, field string, hour int) (time.Time, error) {
	return isoDay(field, said, hour, m.Now, m.Location)
}

// Phone is the group's phone number as typed, when it is one in the match's region; otherwise a question
// about field, saying why.
func (m *Match) Phone(group, field string) (string, error) {
	typed := m.Group(group)
	if _, err := phone.Parse(typed, m.PhoneRegion); err != nil {
		return "", notANumber(field, err)
	}
	return typed, nil
}

// PhoneIn finds the first phone number in text, read as the executor reads it (in the match's region):
// where it is and the number; no number is loc nil (see phoneIn).
func (m *Match) PhoneIn(text, field string) (loc []int, n phone.Number, err error) {
	return phoneIn(text, field, m.PhoneRegion)
}

// EnumValues are the values the rule's tool allows for a top-level input property (its schema's enum),
// or none when it has no enum.
func (m *Match) EnumValues(prop string) []string { return enumOf(m.Tool, prop) }

// Enum is v when the rule's tool allows it for prop (or prop has no enum); otherwise a question about prop
// (a MissingError) naming the values it allows.
func (m *Match) Enum(prop, v string) (string, error) {
	allowed := enumOf(m.Tool, prop)
	if len(allowed) == 0 || slices.Contains(allowed, v) {
		return v, nil
	}
	return "", Missing(prop, fmt.Sprintf("%q is not a %s; use one of %s", v, prop, strings.Join(allowed, ", ")))
}

var placeInRe = regexp.MustCompile(`\bin\s+([A-Z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+){0,2})`)

// PlaceIn is the capitalised place after "in" ("leads in Newtown" → Newtown), or "".
func PlaceIn(text string) string {
	if sm := placeInRe.FindStringSubmatch(text); sm != nil {
		return sm[1]
	}
	return ""
}

// IDRule is a rule whose tool's only input is one id, from the message (an id after the pattern) or the
// run's context; input makes the tool's input of it ("" when the message names none).
func IDRule[In any](name, tool, help string, examples []string, pattern string, input func(id string) In) Rule {
	return Rule{
		Name: name, Tool: tool, Help: help, Examples: examples,
		Patterns: []string{pattern + `(?:\s+(?P<id3>` + UUIDPattern + `))?\s*[.!]*$`},
		Build:    func(m *Match) (any, error) { return input(m.ID()), nil },
	}
}

// NoInputRule is a rule whose tool takes no input.
func NoInputRule(name, tool, help string, examples []string, patterns ...string) Rule {
	return Rule{Name: name, Tool: tool, Help: help, Examples: examples, Patterns: patterns,
		Build: func(*Match) (any, error) { return struct{}{}, nil }}
}

// Patterns a rule's own pattern can hold, for what messages write the same way whichever tool they are for.
const (
	// PhonePattern matches a phone number as typed; Match.Phone then reads it as the executor does.
	PhonePattern = `(?:\+|\()?\d[\d\s().-]{6,}\d`
	// EmailPattern matches an email address.
	EmailPattern = `[\w.+-]+@[\w-]+(?:\.[\w-]+)+`
	// FileRefPattern matches a file's reference: a URL of any scheme (gemfs://, https://) or a file name
	// with a photo, video or document extension.
	FileRefPattern = `[a-z][a-z0-9+.-]*://\S+|\S+\.(?:jpe?g|png|heic|webp|gif|mp4|mov|pdf|docx?)`
)

var emailRe = regexp.MustCompile(EmailPattern)

// EmailIn is the first email address in text, or "".
func EmailIn(text string) string { return emailRe.FindString(text) }

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

// Slug makes a key from text: "I prefer mornings" → i-prefer-mornings.
func Slug(text string) string {
	return strings.Trim(slugRe.ReplaceAllString(strings.ToLower(text), "-"), "-")
}

var linkRe = regexp.MustCompile(`https?://[^\s,]+`)

// LinksIn lists the web links (http, https) in text.
func LinksIn(s string) []string { return linkRe.FindAllString(s, -1) }
