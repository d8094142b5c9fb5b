// Package planner turns a message into tool calls: the rules planner (deterministic, no LLM; rules are
// data, in the rules_*.go files) and the LLM planner (one LLM turn over the registry's tools).
package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/phone"
)

// Rule is one thing the rules planner understands. Rules are data: to teach the planner something new,
// add a Rule to one of the tables. A rule whose tool is not in the registry is switched off, so rules for
// tools that are not deployed yet are harmless. Inputs follow the tool's contract (GEM's, for GEM's tools).
type Rule struct {
	// Name identifies the rule in a run's decision.
	Name string
	// Tool is the registry tool the rule calls.
	Tool string
	// Help says what the rule does, for people.
	Help string
	// Examples are messages the rule understands; GET /brain/help shows them, and a test plans each one.
	Examples []string
	// Patterns match one clause of a message, case-insensitively; the first that matches wins and its named
	// groups are passed to Build.
	Patterns []string
	// Build makes the tool's input from the match. An error is shown to the person: say what is missing
	// (Missing) rather than invent it. ErrNoMatch lets the next rule try the clause.
	Build func(m *Match) (any, error)

	compiled []*regexp.Regexp
}

// Match is a clause a rule matched.
type Match struct {
	// Clause is the clause as written.
	Clause string
	// Groups are the pattern's named groups.
	Groups map[string]string
	// Tool is the rule's registry tool.
	Tool *registry.Tool
	// Now and Location interpret dates ("tomorrow", "friday").
	Now      time.Time
	Location *time.Location
	// PhoneRegion is the region phone numbers without a country code are read in (package phone).
	PhoneRegion string
}

// Group returns a named group, trimmed.
func (m *Match) Group(name string) string { return strings.TrimSpace(m.Groups[name]) }

// ID is the record id the clause names (its first non-empty group of id, id2, id3 or id4), lower-cased, or
// "" when it names none: the run's context then supplies it, or the run reports it missing.
func (m *Match) ID() string {
	for _, g := range []string{"id", "id2", "id3", "id4"} {
		if id := m.Group(g); id != "" {
			return strings.ToLower(id)
		}
	}
	return ""
}

// When finds a day in text ("friday", "in 3 days", "2026-12-24") and returns it at 17:00 that day, and
// the text without it; no day is the zero time. A day that cannot be is a question about field.
func (m *Match) When(text, field string) (time.Time, string, error) {
	return extractWhen(text, field, m.Now, m.Location)
}

// DateTime finds a day and a time of day in text ("tomorrow at 3pm"); a day without a time is at
// defaultHour. It returns the time and the text without it; no day is the zero time.
func (m *Match) DateTime(text, field string, defaultHour int) (time.Time, string, error) {
	return extractDateTime(text, field, m.Now, m.Location, defaultHour)
}

// Since reads the group "since" as a past time ("today", "in the last 3 days", "2026-11-01"), to the
// second; no group is nil, and words that are not a time are ErrNoMatch.
func (m *Match) Since(field string) (*time.Time, error) {
	s := m.Group("since")
	if s == "" {
		return nil, nil
	}
	since, err := sinceOf(s, field, m.Now, m.Location)
	if err != nil {
		return nil, err
	}
	since = since.Truncate(time.Second)
	return &since, nil
}

// ErrNoMatch returned by a rule's Build lets the next rule try the clause.
var ErrNoMatch = errors.New("rule does not apply")

// MissingError says what a request the planner understood lacks, or names but cannot be (30 February,
// 99pm), as a question to the person. The run answers 400 with it and runs nothing: the brain asks rather
// than invents.
type MissingError struct {
	// Field is the input property that is missing.
	Field string
	// Question asks for it, with an example.
	Question string
}

func (e *MissingError) Error() string { return e.Question }

// Missing returns a MissingError for field.
func Missing(field, question string) error { return &MissingError{Field: field, Question: question} }

// UUIDPattern matches a record id in a rule's pattern.
const UUIDPattern = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

// RulesPlanner plans with the packs' rules (packs/plans gathers them). It needs no LLM and always answers the same way.
type RulesPlanner struct {
	reg         *registry.Registry
	rules       []Rule
	location    *time.Location
	phoneRegion string
}

// NewRulesPlanner compiles rules against the registry, to be tried in their order; rules whose tool is
// missing are off.
// Dates in messages are read in loc (time.Local when nil), phone numbers without a country code in
// phoneRegion (phone.RegionDefault when "").
func NewRulesPlanner(reg *registry.Registry, rules []Rule, loc *time.Location, phoneRegion string) (*RulesPlanner, error) {
	if loc == nil {
		loc = time.Local
	}
	if phoneRegion == "" {
		phoneRegion = phone.RegionDefault
	}
	p := &RulesPlanner{reg: reg, location: loc, phoneRegion: phoneRegion}
	for _, r := range rules {
		if _, ok := reg.Tool(r.Tool); !ok {
			continue
		}
		r.compiled = nil
		for _, pat := range r.Patterns {
			re, err := regexp.Compile(`(?is)` + pat)
			if err != nil {
				return nil, fmt.Errorf("rule %s: error compiling pattern %q: %w", r.Name, pat, err)
			}
			r.compiled = append(r.compiled, re)
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// Name is "rules".
func (p *RulesPlanner) Name() string { return "rules" }

// EnabledRules are the rules whose tools the registry has, in the order they are tried, in a slice of the
// caller's own (each rule's examples and patterns too).
func (p *RulesPlanner) EnabledRules() []Rule {
	out := slices.Clone(p.rules)
	for i := range out {
		out[i].Examples, out[i].Patterns = slices.Clone(out[i].Examples), slices.Clone(out[i].Patterns)
	}
	return out
}

// Capabilities lists what the planner can do, one line per enabled rule.
func (p *RulesPlanner) Capabilities() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.line()
	}
	return out
}

// line is a rule for people: what it does and its first example.
func (r *Rule) line() string {
	if len(r.Examples) == 0 {
		return r.Help
	}
	return fmt.Sprintf("%s — %q", r.Help, r.Examples[0])
}

// Plan answers a request for help or an explanation (Plan.Answer), or matches each clause of the message
// against the rules.
func (p *RulesPlanner) Plan(_ context.Context, req brain.PlanRequest) (*brain.Plan, error) {
	if answer, ok := p.Explain(req.Message); ok {
		return &brain.Plan{Answer: answer, Reason: "the message asked for help or an explanation; nothing to run"}, nil
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	plan := &brain.Plan{}
	var problems []string
	var missing []map[string]string
	for _, clause := range splitClauses(req.Message) {
		matched := false
		for _, r := range p.rules {
			groups, ok := matchRule(&r, clause)
			if !ok {
				continue
			}
			matched = true
			tool, _ := p.reg.Tool(r.Tool)
			in, err := r.Build(&Match{Clause: clause, Groups: groups, Tool: tool, Now: now.In(p.location), Location: p.location, PhoneRegion: p.phoneRegion})
			if errors.Is(err, ErrNoMatch) {
				matched = false
				continue
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s (%q): %v", r.Name, clause, err))
				var me *MissingError
				if errors.As(err, &me) {
					missing = append(missing, map[string]string{"rule": r.Name, "tool": r.Tool, "field": me.Field, "question": me.Question})
				}
				break
			}
			raw, _ := json.Marshal(in)
			plan.Calls = append(plan.Calls, brain.PlannedCall{Tool: r.Tool, Input: raw, Rule: r.Name, Reason: fmt.Sprintf("%q matched rule %s", clause, r.Name)})
			if !slices.Contains(plan.Rules, r.Name) {
				plan.Rules = append(plan.Rules, r.Name)
			}
			break
		}
		if !matched {
			plan.Unmatched = append(plan.Unmatched, clause)
		}
	}
	switch {
	case len(problems) > 0:
		details := map[string]any{"problems": problems}
		if len(missing) > 0 {
			details["missing"] = missing
		}
		return nil, &brain.Error{Code: brain.EINVALID, Message: "I understood the request but cannot plan it: " + strings.Join(problems, "; "),
			Details: details}
	case len(plan.Calls) == 0:
		plan.Reason = "no rule matched the message"
		plan.Help = p.shortHelp()
	default:
		plan.Reason = fmt.Sprintf("matched %s", strings.Join(plan.Rules, ", "))
	}
	return plan, nil
}

func matchRule(r *Rule, clause string) (map[string]string, bool) {
	for _, re := range r.compiled {
		sub := re.FindStringSubmatch(clause)
		if sub == nil {
			continue
		}
		groups := map[string]string{}
		for i, name := range re.SubexpNames() {
			if name != "" && sub[i] != "" {
				groups[name] = sub[i]
			}
		}
		return groups, true
	}
	return nil, false
}

var clauseSepRe = regexp.MustCompile(`\r?\n|;|\s+and\s+then\s+`)

// splitClauses splits a message into requests: at line breaks, semicolons, sentence ends followed by a
// capital letter, and "and then".
func splitClauses(msg string) []string {
	var parts []string
	for _, line := range clauseSepRe.Split(msg, -1) {
		start := 0
		for i := 0; i+2 < len(line); i++ {
			if strings.ContainsRune(".!?", rune(line[i])) && line[i+1] == ' ' && unicode.IsUpper(rune(line[i+2])) {
				parts = append(parts, line[start:i+1])
				start = i + 2
			}
		}
		parts = append(parts, line[start:])
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); strings.Trim(p, ".!? ") != "" {
			out = append(out, p)
		}
	}
	return out
}

// HasWord reports whether text contains one of the words (or phrases) as whole words, ignoring case.
func HasWord(text string, words ...string) bool {
	text = strings.ToLower(text)
	for _, w := range words {
		w = strings.ToLower(w)
		for i := 0; ; {
			j := strings.Index(text[i:], w)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(w)
			if (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end])) {
				return true
			}
			i = start + 1
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// Priority levels people say.
var priorityWords = []struct {
	priority string
	words    []string
}{
	{"urgent", []string{"urgent", "urgently", "asap", "a.s.a.p", "immediately", "right away", "right now", "critical", "emergency"}},
	{"low", []string{"low priority", "low-priority", "whenever", "no rush", "no hurry", "someday", "eventually", "when you can", "not urgent"}},
	{"high", []string{"high priority", "high-priority", "important", "soon", "priority"}},
}

// PriorityOf reads a task's priority from its words: urgent, high, low, or normal.
func PriorityOf(text string) string {
	for _, p := range priorityWords {
		if HasWord(text, p.words...) {
			return p.priority
		}
	}
	return "normal"
}

// priorityStripRe matches the priority words (and "it's ...") so they can be cut from a task's title.
var priorityStripRe = func() *regexp.Regexp {
	var alts []string
	for _, p := range priorityWords {
		for _, w := range p.words {
			alts = append(alts, regexp.QuoteMeta(w))
		}
	}
	return regexp.MustCompile(`(?i)[,(]?\s*\b(?:it'?s\s+|this\s+is\s+)?(?:` + strings.Join(alts, "|") + `)\b\)?`)
}()

// StripPriorityWords cuts the priority words (PriorityOf) from a title.
func StripPriorityWords(text string) string { return priorityStripRe.ReplaceAllString(text, "") }

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

var (
	spacesRe         = regexp.MustCompile(`\s{2,}`)
	trailingPleaseRe = regexp.MustCompile(`(?i)\s+(?:please|pls)$`)
)

// CleanTitle trims filler and punctuation from a title.
func CleanTitle(s string) string {
	s = strings.TrimSpace(s)
	s = strings.Trim(s, " ,.;:-!")
	s = spacesRe.ReplaceAllString(s, " ")
	s = trailingPleaseRe.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}

// Cut shortens s to at most n characters, at a word when one ends late enough, with an ellipsis.
func Cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := string(r[:n-1])
	if i := strings.LastIndexByte(head, ' '); i > n/3 {
		head = head[:i]
	}
	return strings.TrimRight(head, " ,.;:-") + "…"
}

// Capitalize upper-cases the first letter.
func Capitalize(s string) string {
	if r := []rune(s); len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
		return string(r)
	}
	return s
}

// personalWords make a note or a task personal (GEM's domain personal) rather than business.
var personalWords = []string{"personal", "private", "home", "my wife", "my husband", "my partner", "my kids", "kids", "family",
	"birthday", "anniversary", "gym", "doctor", "dentist", "groceries", "shopping list", "holiday", "vacation", "mum", "mom", "dad"}

// DomainOf is a note's or task's domain: the explicit one, else personal when the words say so, else
// business.
func DomainOf(explicit, text string) string {
	switch strings.ToLower(strings.TrimSpace(explicit)) {
	case "personal", "private", "home":
		return "personal"
	case "business", "work":
		return "business"
	}
	if HasWord(text, personalWords...) {
		return "personal"
	}
	return "business"
}

// schemaProperty returns a top-level input property's schema, from the registry.
func schemaProperty(t *registry.Tool, prop string) map[string]any {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(t.InputSchema, &s)
	return s.Properties[prop]
}

// enumOf returns the enum of a top-level input property, from the registry.
func enumOf(t *registry.Tool, prop string) []string {
	var out []string
	values, _ := schemaProperty(t, prop)["enum"].([]any)
	for _, v := range values {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Normalize turns free text into an enum-like value: "inspection scheduled" → inspection_scheduled.
func Normalize(text string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.NewReplacer("-", " ", "_", " ").Replace(text)), "_"))
}

// EnumValue matches free text ("inspection scheduled") to one of values ("inspection_scheduled"); text that
// is none of them is a question about prop (a MissingError), naming the values.
func EnumValue(values []string, prop, text string) (string, error) {
	want := Normalize(text)
	for _, v := range values {
		if v == want {
			return v, nil
		}
	}
	return "", Missing(prop, fmt.Sprintf("%q is not a %s; use one of %s", text, prop, strings.Join(values, ", ")))
}

var listSepRe = regexp.MustCompile(`\s*(?:,|\band\b|&|\+)\s*`)

// SplitList splits "a, b and c" into its items.
func SplitList(s string) []string {
	var out []string
	for _, part := range listSepRe.Split(s, -1) {
		if part = strings.Trim(part, " .\"'"); part != "" {
			out = append(out, part)
		}
	}
	return out
}

var uuidRe = regexp.MustCompile(UUIDPattern)

// UUIDsIn lists the UUIDs in text, lower-cased.
func UUIDsIn(s string) []string {
	var out []string
	for _, id := range uuidRe.FindAllString(s, -1) {
		out = append(out, strings.ToLower(id))
	}
	return out
}
