package evals

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// CheckInput checks the argument at c.Property of a call's input: an absent argument fails every check. A
// pattern matches a string, or the JSON of any other value; a date-only value is read in loc.
func (c ArgCheck) CheckInput(input map[string]any, loc *time.Location) error {
	if ok, got := c.holds(input, loc); !ok {
		return fmt.Errorf("%s is %s, not %s", c.Property, got, c.Written)
	}
	return nil
}

// loadChecks reads a call's checks as written (property → {kind: value}), sorted by property, dates relative
// to now; has says whether the tool's input has a top-level property, so a misspelt one fails the load.
func loadChecks(written map[string]map[string]any, has func(prop string) bool, now time.Time) ([]ArgCheck, []string) {
	props := make([]string, 0, len(written))
	for p := range written {
		props = append(props, p)
	}
	sort.Strings(props)
	var checks []ArgCheck
	var problems []string
	for _, prop := range props {
		top, _, _ := strings.Cut(prop, ".")
		if !has(top) {
			problems = append(problems, fmt.Sprintf("no input property %q", top))
			continue
		}
		c, err := loadCheck(prop, written[prop], now)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", prop, err))
			continue
		}
		checks = append(checks, c)
	}
	return checks, problems
}

// Values are the values an exact or one_of check allows, as JSON reads them back (numbers are float64).
func (c ArgCheck) Values() []any { return c.values }

// Pattern is a pattern check's regular expression; nil for other kinds.
func (c ArgCheck) Pattern() *regexp.Regexp { return c.pattern }
