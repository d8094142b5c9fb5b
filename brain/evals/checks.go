package evals

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
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

// notJSON says where and how a value read from YAML is not the JSON a model writes or reads, nil when it is:
// YAML reads an unquoted date as a time (JSON would say 2026-12-01T00:00:00Z), has numbers JSON has not (.nan,
// .inf), and keys of any type. A check of such a value could never hold; a result would say something else
// than written.
func notJSON(v any) error {
	var walk func(path string, v any) error
	at := func(path, problem string) error {
		if path == "" {
			return errors.New(problem)
		}
		return fmt.Errorf("%s: %s", path, problem)
	}
	join := func(path string, key any) string {
		if path == "" {
			return fmt.Sprint(key)
		}
		return fmt.Sprintf("%s.%v", path, key)
	}
	walk = func(path string, v any) error {
		switch x := v.(type) {
		case time.Time:
			written := x.Format(time.RFC3339Nano)
			if x.Equal(x.Truncate(24*time.Hour)) && x.Location() == time.UTC {
				written = x.Format(time.DateOnly)
			}
			return at(path, fmt.Sprintf("%s is a date in YAML, read as a time: quote it (%q)", written, written))
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return at(path, fmt.Sprintf("%v is not a JSON value", x))
			}
		case []any:
			for i, e := range x {
				if err := walk(join(path, i), e); err != nil {
					return err
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if err := walk(join(path, k), x[k]); err != nil {
					return err
				}
			}
		case map[any]any:
			for k := range x {
				if _, isString := k.(string); !isString {
					return at(path, fmt.Sprintf("a key %v is not a string (JSON's keys are): quote it", k))
				}
			}
			for k, e := range x {
				if err := walk(join(path, k), e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("", v)
}
