package evals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
)

// PlanSuite is the plan suite's name and file (evals/plan.yaml).
const PlanSuite = "plan"

// The plan suite's metrics (irrelevance is the search suite's MetricIrrelevance: nothing planned where the case
// expects no call).
const (
	// MetricExact is the share of cases with calls planned exactly: the calls in order, every argument check held.
	MetricExact = "exact"
	// MetricPartial is the share of cases with calls whose planned tools are the right ones, in order.
	MetricPartial = "partial"
	// MetricAsks is the share of cases expecting a question back that asked about the right field.
	MetricAsks = "asks"
)

// PlanCases is the plan suite as loaded: its fixed clock and zone, and its cases in file order.
type PlanCases struct {
	// Now is the suite's "now": every date in a message and in a date check is read relative to it.
	Now time.Time
	// Location is the zone the messages' dates are read in (the planner's) and date checks are written in.
	Location *time.Location
	Cases    []PlanCase
}

// PlanCase is a message to the planner and what it should make of it: calls (none when no rule should plan
// anything), or a question back about a field (Asks).
type PlanCase struct {
	Message string
	Calls   []PlanCall
	Asks    string
	Split   string
}

// PlanCall is a call a case expects: its tool, and a check per argument it cares about (arguments without a
// check are not checked).
type PlanCall struct {
	Tool string
	// Args holds the checks, sorted by property.
	Args []ArgCheck
}

// ArgCheck is one argument's check. Property is a top-level input property, or a dotted path into one
// (patch.priority).
type ArgCheck struct {
	Property string
	// Kind is exact, one_of, pattern, date or present.
	Kind string
	// Written is the check as written in the suite, for a miss.
	Written string

	values  []any // exact (one), one_of
	pattern *regexp.Regexp
	date    time.Time
	// dateHasTime says the date check names a time of day: without one, only the day is compared.
	dateHasTime bool
}

// The argument checks a plan case may use.
const (
	CheckExact   = "exact"
	CheckOneOf   = "one_of"
	CheckPattern = "pattern"
	CheckDate    = "date"
	CheckPresent = "present"
)

var checkKinds = []string{CheckExact, CheckOneOf, CheckPattern, CheckDate, CheckPresent}

// planFile is the suite as written.
type planFile struct {
	Now      string         `yaml:"now"`
	Timezone string         `yaml:"timezone"`
	Cases    []planCaseFile `yaml:"cases"`
}

type planCaseFile struct {
	Message string          `yaml:"message"`
	Calls   *[]planCallFile `yaml:"calls"`
	Asks    string          `yaml:"asks"`
	Split   string          `yaml:"split"`
}

type planCallFile struct {
	Tool string                    `yaml:"tool"`
	Args map[string]map[string]any `yaml:"args"`
}

// LoadPlan reads dir/plan.yaml: a mapping with the suite's now (RFC 3339), its timezone (an IANA name) and its
// cases. Every case needs its message, its split, and either calls ([] when no rule should plan anything) or
// asks (the field the planner should ask about). A call's tool must be in reg and each checked property in the
// tool's input schema; a check must be one of exact, one_of, pattern, date or present. A problem names its case.
func LoadPlan(dir string, reg *registry.Registry) (*PlanCases, error) {
	var file planFile
	if err := readSuite(dir, PlanSuite, &file); err != nil {
		return nil, err
	}
	var problems []string
	suite := &PlanCases{}
	loc, err := time.LoadLocation(file.Timezone)
	switch {
	case file.Timezone == "":
		problems = append(problems, "timezone is missing (the zone the messages' dates are read in, e.g. Australia/Sydney)")
	case err != nil:
		problems = append(problems, fmt.Sprintf("timezone %q: %v", file.Timezone, err))
	default:
		suite.Location = loc
	}
	if now, err := time.Parse(time.RFC3339, file.Now); err != nil {
		problems = append(problems, fmt.Sprintf("now %q is not a time in RFC 3339 (2026-03-02T09:00:00+11:00)", file.Now))
	} else if suite.Location != nil {
		suite.Now = now.In(suite.Location)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s.yaml: %s", PlanSuite, strings.Join(problems, "; "))
	}
	if len(file.Cases) == 0 {
		return nil, fmt.Errorf("%s.yaml: no cases", PlanSuite)
	}
	seen := map[string]int{}
	for i, c := range file.Cases {
		at := fmt.Sprintf("case %d (%q)", i+1, c.Message)
		msg := strings.TrimSpace(c.Message)
		switch key := strings.ToLower(msg); {
		case msg == "":
			problems = append(problems, fmt.Sprintf("case %d: message is empty", i+1))
		case seen[key] > 0:
			problems = append(problems, fmt.Sprintf("%s: the same message as case %d", at, seen[key]))
		default:
			seen[key] = i + 1
		}
		if err := checkSplit(c.Split); err != nil {
			problems = append(problems, at+": "+err.Error())
		}
		pc := PlanCase{Message: msg, Asks: strings.TrimSpace(c.Asks), Split: c.Split}
		switch {
		case c.Calls == nil && pc.Asks == "":
			problems = append(problems, at+": calls or asks is missing (calls: [] when no rule should plan anything)")
		case c.Calls != nil && pc.Asks != "":
			problems = append(problems, at+": calls and asks both given (a case expects calls or a question back)")
		}
		if c.Calls != nil {
			pc.Calls = []PlanCall{}
			for j, call := range *c.Calls {
				got, errs := loadPlanCall(call, suite.Now, reg)
				for _, e := range errs {
					problems = append(problems, fmt.Sprintf("%s: call %d: %s", at, j+1, e))
				}
				pc.Calls = append(pc.Calls, got)
			}
		}
		suite.Cases = append(suite.Cases, pc)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s.yaml: %s", PlanSuite, strings.Join(problems, "; "))
	}
	return suite, nil
}

// loadPlanCall reads a call's tool and checks, returning every problem.
func loadPlanCall(call planCallFile, now time.Time, reg *registry.Registry) (PlanCall, []string) {
	pc := PlanCall{Tool: call.Tool}
	tool, ok := reg.Tool(call.Tool)
	if !ok {
		return pc, []string{fmt.Sprintf("unknown tool %q", call.Tool)}
	}
	checks, problems := loadChecks(call.Args, tool.HasInputProperty, now)
	for i, p := range problems {
		if strings.HasPrefix(p, "no input property") {
			problems[i] = tool.Name + " has " + p
		}
	}
	pc.Args = checks
	return pc, problems
}

// loadCheck reads one argument's check: a mapping of one check kind to its value.
func loadCheck(prop string, written map[string]any, now time.Time) (ArgCheck, error) {
	if len(written) != 1 {
		return ArgCheck{}, fmt.Errorf("a check is one of %s, with its value ({exact: 3}), not %d of them", strings.Join(checkKinds, ", "), len(written))
	}
	var kind string
	for k := range written {
		kind = k
	}
	v := written[kind]
	c := ArgCheck{Property: prop, Kind: kind, Written: fmt.Sprintf("%s %s", kind, compactJSON(v))}
	switch kind {
	case CheckExact:
		if err := notJSON(v); err != nil {
			return c, fmt.Errorf("exact: %w", err)
		}
		c.values = []any{jsonValue(v)}
	case CheckOneOf:
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return c, errors.New("one_of takes a list of the values allowed")
		}
		for _, x := range list {
			if err := notJSON(x); err != nil {
				return c, fmt.Errorf("one_of: %w", err)
			}
			c.values = append(c.values, jsonValue(x))
		}
	case CheckPattern:
		s, ok := v.(string)
		if !ok {
			return c, errors.New("pattern takes a regular expression")
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return c, fmt.Errorf("pattern: %w", err)
		}
		c.pattern = re
	case CheckDate:
		if now.IsZero() {
			return c, errors.New("date checks need a suite's now (the plan suite's header); this suite has none")
		}
		s, ok := v.(string)
		if !ok {
			return c, errors.New("date takes a date relative to the suite's now (tomorrow 17:00, next friday, +3d)")
		}
		t, hasTime, err := ResolveDate(s, now)
		if err != nil {
			return c, err
		}
		c.date, c.dateHasTime = t, hasTime
		c.Written = "date " + s
	case CheckPresent:
		if v != true {
			return c, errors.New("present takes true (an argument the case does not care about goes unchecked)")
		}
	default:
		return c, fmt.Errorf("unknown check %q (one of %s)", kind, strings.Join(checkKinds, ", "))
	}
	return c, nil
}

// jsonValue is v as encoding/json would read it back (numbers as float64), so values compare as JSON.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var (
	weekdayNames = map[string]time.Weekday{
		"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
		"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	}
	offsetRe    = regexp.MustCompile(`^([+-])(\d+)([dwh])$`)
	timeOfDayRe = regexp.MustCompile(`^([01]?\d|2[0-3]):([0-5]\d)$`)
)

// dateGrammar is the date check's grammar, for an error.
const dateGrammar = `a day (today, tomorrow, yesterday, friday or next friday: the first after today, +3d, -2d, +1w, ` +
	`2026-03-20), then optionally a time of day (17:00); or now, or +2h (from now)`

// ResolveDate reads a date check relative to now, in now's zone: a day (today, tomorrow, yesterday, a weekday
// or "next" and a weekday: the first such day after today; +Nd, -Nd, +Nw; or 2006-01-02), optionally followed
// by a time of day (17:00); or now, or +Nh (hours from now). It says whether a time of day was given: without
// one, only the day is compared.
func ResolveDate(expr string, now time.Time) (t time.Time, hasTime bool, err error) {
	fields := strings.Fields(strings.ToLower(expr))
	bad := fmt.Errorf("date %q is not %s", expr, dateGrammar)
	if len(fields) == 0 {
		return time.Time{}, false, bad
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	day, rest := fields[0], fields[1:]
	switch {
	case day == "now" || strings.HasSuffix(day, "h") && offsetRe.MatchString(day):
		if len(rest) > 0 {
			return time.Time{}, false, bad
		}
		t = now.Truncate(time.Minute)
		if day != "now" {
			n, ok := offset(day)
			if !ok {
				return time.Time{}, false, bad
			}
			t = t.Add(time.Duration(n) * time.Hour)
		}
		return t, true, nil
	case day == "today":
		t = today
	case day == "tomorrow":
		t = today.AddDate(0, 0, 1)
	case day == "yesterday":
		t = today.AddDate(0, 0, -1)
	case day == "next" && len(rest) > 0:
		wd, ok := weekdayNames[rest[0]]
		if !ok {
			return time.Time{}, false, bad
		}
		t, rest = nextWeekday(today, wd), rest[1:]
	case offsetRe.MatchString(day):
		n, ok := offset(day)
		if !ok {
			return time.Time{}, false, bad
		}
		if strings.HasSuffix(day, "w") {
			n *= 7
		}
		t = today.AddDate(0, 0, n)
	default:
		if wd, ok := weekdayNames[day]; ok {
			t = nextWeekday(today, wd)
			break
		}
		d, err := time.ParseInLocation(time.DateOnly, day, now.Location())
		if err != nil {
			return time.Time{}, false, bad
		}
		t = d
	}
	switch len(rest) {
	case 0:
		return t, false, nil
	case 1:
		sm := timeOfDayRe.FindStringSubmatch(rest[0])
		if sm == nil {
			return time.Time{}, false, bad
		}
		hour, _ := strconv.Atoi(sm[1]) // two digits at most, by the pattern
		minute, _ := strconv.Atoi(sm[2])
		return time.Date(t.Year(), t.Month(), t.Day(), hour, minute, 0, 0, t.Location()), true, nil
	}
	return time.Time{}, false, bad
}

// nextWeekday is the first day after today that is wd.
func nextWeekday(today time.Time, wd time.Weekday) time.Time {
	n := (int(wd) - int(today.Weekday()) + 7) % 7
	if n == 0 {
		n = 7
	}
	return today.AddDate(0, 0, n)
}

// offset is the signed count of an offset (+3d, -2w, +2h), false when it is not one or too large to be a date.
func offset(s string) (int, bool) {
	sm := offsetRe.FindStringSubmatch(s)
	if sm == nil {
		return 0, false
	}
	n, err := strconv.Atoi(sm[1] + sm[2])
	return n, err == nil && n > -1_000_000 && n < 1_000_000
}

// holds says whether the check holds for the planned input, and when not, what the input has instead.
func (c ArgCheck) holds(input map[string]any, loc *time.Location) (bool, string) {
	v, ok := lookup(input, c.Property)
	if !ok {
		return false, "absent"
	}
	return c.holdsValue(v, loc)
}

// holdsValue says whether the check holds for an argument's value, and what the value is, for a miss.
func (c ArgCheck) holdsValue(v any, loc *time.Location) (bool, string) {
	got := compactJSON(v)
	switch c.Kind {
	case CheckPresent:
		return true, got
	case CheckExact, CheckOneOf:
		return slices.ContainsFunc(c.values, func(want any) bool { return reflect.DeepEqual(want, v) }), got
	case CheckPattern:
		s, isString := v.(string)
		if !isString {
			s = got
		}
		return c.pattern.MatchString(s), got
	case CheckDate:
		s, _ := v.(string)
		var at time.Time
		valueHasTime := true
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			valueHasTime = false
			if at, err = time.ParseInLocation(time.DateOnly, s, loc); err != nil {
				return false, got + " (not a date)"
			}
		}
		at = at.In(loc)
		want := c.date.In(loc)
		switch {
		case c.dateHasTime && !valueHasTime:
			return false, got + " (a day, and the check names a time)"
		case c.dateHasTime:
			return at.Truncate(time.Minute).Equal(want.Truncate(time.Minute)), got
		}
		return at.Format(time.DateOnly) == want.Format(time.DateOnly), got
	}
	return false, got
}

// lookup finds a property, or a dotted path into one, in a JSON object.
func lookup(input map[string]any, path string) (any, bool) {
	var v any = input
	for _, key := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// PlanFunc plans a message as a run would, at now (the rules planner, built as brain serve builds it, in the
// suite's zone).
type PlanFunc func(ctx context.Context, message string, now time.Time) (*brain.Plan, error)

// RunPlan plans every case and scores each split: exact (the expected calls in order, every argument check
// held) and partial (the expected tools in order) over the cases with calls, asks (the planner asked back about
// the case's field) over the cases that expect a question, irrelevance (no call planned) over the cases with
// calls: []. The planner asks by naming a missing field (an EINVALID error whose details list what is
// missing) or by planning a call without a property its tool requires (the run then answers with that
// violation). A planner error other than a question fails the case; a miss says what was planned instead.
func RunPlan(ctx context.Context, suite *PlanCases, reg *registry.Registry, plan PlanFunc) (*Report, error) {
	type tally struct {
		cases, withCalls, asks, irrelevant, exact, partial, asked, rejected int
	}
	tallies := map[string]*tally{}
	report := &Report{Suite: PlanSuite, Misses: []Miss{}}
	for _, c := range suite.Cases {
		t := tallies[c.Split]
		if t == nil {
			t = &tally{}
			tallies[c.Split] = t
		}
		t.cases++
		out := runPlanCase(ctx, c, suite, reg, plan)
		if out.err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("planning %q: %w", c.Message, out.err)
		}
		miss := func(want string) {
			report.Misses = append(report.Misses, Miss{Split: c.Split, Case: c.Message, Want: want, Got: out.got})
		}
		switch {
		case out.err != nil:
			// A planner that fails (not a question back) fails the case, whatever it expected.
			out.got = "the planner failed: " + out.err.Error()
			switch {
			case c.Asks != "":
				t.asks++
				miss("a question about " + c.Asks)
			case len(c.Calls) == 0:
				t.irrelevant++
				miss("nothing planned")
			default:
				t.withCalls++
				miss(describeWant(c.Calls))
			}
		case c.Asks != "":
			t.asks++
			if slices.Contains(out.asked, c.Asks) {
				t.asked++
			} else {
				miss("a question about " + c.Asks)
			}
		case len(c.Calls) == 0:
			t.irrelevant++
			if len(out.calls) == 0 {
				t.rejected++
			} else {
				miss("nothing planned")
			}
		default:
			t.withCalls++
			t.partial += b2i(out.rightTools)
			t.exact += b2i(out.exact)
			if !out.exact {
				want := describeWant(c.Calls)
				if out.failed != "" {
					want += "; " + out.failed
				}
				miss(want)
			}
		}
	}
	for _, split := range Splits {
		t := tallies[split]
		if t == nil {
			continue
		}
		m := map[string]float64{}
		if t.withCalls > 0 {
			m[MetricExact] = float64(t.exact) / float64(t.withCalls)
			m[MetricPartial] = float64(t.partial) / float64(t.withCalls)
		}
		if t.asks > 0 {
			m[MetricAsks] = float64(t.asked) / float64(t.asks)
		}
		if t.irrelevant > 0 {
			m[MetricIrrelevance] = float64(t.rejected) / float64(t.irrelevant)
		}
		report.Splits = append(report.Splits, SplitReport{Split: split, Cases: t.cases, Relevant: t.withCalls, Asks: t.asks,
			Irrelevant: t.irrelevant, Metrics: m})
	}
	return report, nil
}

// planOutcome is what the planner made of a case.
type planOutcome struct {
	calls []brain.PlannedCall
	// asked are the fields the planner asked about.
	asked []string
	// rightTools: the calls' tools are the case's, in order; exact: and every check holds.
	rightTools, exact bool
	// failed says which checks did not hold, when the tools were right.
	failed string
	// got says what the planner did, for a miss.
	got string
	err error
}

func runPlanCase(ctx context.Context, c PlanCase, suite *PlanCases, reg *registry.Registry, plan PlanFunc) planOutcome {
	var out planOutcome
	p, err := plan(ctx, c.Message, suite.Now)
	if err != nil {
		var be *brain.Error
		if !errors.As(err, &be) || be.Code != brain.EINVALID {
			return planOutcome{err: err}
		}
		out.asked = missingFields(be)
		if len(out.asked) > 0 {
			out.got = fmt.Sprintf("asked about %s: %s", strings.Join(out.asked, ", "), be.Message)
		} else {
			out.got = "refused, naming no field: " + be.Message
		}
		return out
	}
	out.calls = p.Calls
	var planned []string
	for _, pc := range p.Calls {
		planned = append(planned, fmt.Sprintf("%s %s", pc.Tool, pc.Input))
		out.asked = append(out.asked, requiredMissing(reg, pc)...)
	}
	switch {
	case len(p.Calls) > 0:
		out.got = strings.Join(planned, "; ")
		if len(out.asked) > 0 {
			out.got += " (lacking " + strings.Join(out.asked, ", ") + ": the run asks for it)"
		}
	case p.Answer != "":
		out.got = "an answer, nothing planned: " + firstLine(p.Answer)
	default:
		out.got = "nothing planned: " + p.Reason
	}
	if len(p.Unmatched) > 0 {
		out.got += fmt.Sprintf(" (not understood: %q)", p.Unmatched)
	}
	if len(c.Calls) == 0 || len(p.Calls) != len(c.Calls) {
		return out
	}
	out.rightTools = true
	for i, want := range c.Calls {
		out.rightTools = out.rightTools && p.Calls[i].Tool == want.Tool
	}
	if !out.rightTools {
		return out
	}
	var failed []string
	for i, want := range c.Calls {
		var input map[string]any
		_ = json.Unmarshal(p.Calls[i].Input, &input)
		for _, check := range want.Args {
			if ok, got := check.holds(input, suite.Location); !ok {
				failed = append(failed, fmt.Sprintf("%s: %s, not %s", check.Property, check.Written, got))
			}
		}
	}
	out.exact = len(failed) == 0
	out.failed = strings.Join(failed, "; ")
	return out
}

// missingFields are the fields a planner's error asks about: its details' missing list, as an API client
// reads it.
func missingFields(e *brain.Error) []string {
	b, err := json.Marshal(e.Details)
	if err != nil {
		return nil
	}
	var d struct {
		Missing []struct {
			Field string `json:"field"`
		} `json:"missing"`
	}
	_ = json.Unmarshal(b, &d)
	var out []string
	for _, m := range d.Missing {
		if m.Field != "" && !slices.Contains(out, m.Field) {
			out = append(out, m.Field)
		}
	}
	return out
}

// requiredMissing are the required properties a planned call's input lacks (with no run context to fill them):
// the run refuses the call naming each, which is the planner asking for them.
func requiredMissing(reg *registry.Registry, pc brain.PlannedCall) []string {
	tool, ok := reg.Tool(pc.Tool)
	if !ok {
		return nil
	}
	var ve *registry.ValidationError
	if err := tool.ValidateInput(pc.Input); !errors.As(err, &ve) {
		return nil
	}
	var out []string
	for _, v := range ve.Violations {
		if v.Keyword == "required" {
			out = append(out, v.Path[strings.LastIndexByte(v.Path, '/')+1:])
		}
	}
	return out
}

// describeWant says what a case expects, for a miss.
func describeWant(calls []PlanCall) string {
	var parts []string
	for _, c := range calls {
		var checks []string
		for _, a := range c.Args {
			checks = append(checks, a.Property+" "+a.Written)
		}
		parts = append(parts, fmt.Sprintf("%s(%s)", c.Tool, strings.Join(checks, ", ")))
	}
	return strings.Join(parts, "; ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return cut(line, 120)
}
