// Package planner turns a message into tool calls: the rules planner (deterministic, no LLM; rules are
// data, in rules.go and rules_business.go) and the LLM planner (one LLM turn over the registry's tools).
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
)

// Rule is one thing the rules planner understands. Rules are data: to teach the planner something new,
// add a Rule to Rules. A rule whose tool is not in the registry is switched off, so rules for tools that
// are not deployed yet are harmless.
type Rule struct {
	// Name identifies the rule in a run's decision.
	Name string
	// Tool is the registry tool the rule calls.
	Tool string
	// Help says what the rule does, with an example message.
	Help string
	// Patterns match one clause of a message, case-insensitively; the first that matches wins and its named
	// groups are passed to Build.
	Patterns []string
	// Build makes the tool's input from the match. An error is shown to the person (say what is missing).
	Build func(m *Match) (map[string]any, error)

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
}

// Group returns a named group, trimmed.
func (m *Match) Group(name string) string { return strings.TrimSpace(m.Groups[name]) }

const uuidPattern = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

// Rules is the rules planner's knowledge, tried in order for every clause of a message: the business
// workflow's rules (rules_business.go), then the core ones.
var Rules = append(append([]Rule{}, businessRules...), coreRules...)

var coreRules = []Rule{
	{
		Name: "health_check", Tool: "os.health_check",
		Help:     `check that GEM is working — "health check"`,
		Patterns: []string{`^(?:(?:run\s+a\s+)?health(?:\s*check)?|status|system\s+(?:status|check)|ping|are\s+you\s+(?:up|ok|okay|alive|there)|check\s+(?:the\s+)?(?:system|health))\s*[.!?]*$`},
		Build:    func(m *Match) (map[string]any, error) { return map[string]any{}, nil },
	},
	{
		Name: "complete_task", Tool: "os.complete_task",
		Help: `complete a task by its id — "complete task <task id>"`,
		Patterns: []string{
			`^(?:please\s+)?(?:complete|finish|close|tick\s+off|mark)\s+(?:the\s+)?task\s+(?P<id>` + uuidPattern + `)(?:\s+(?:as\s+)?(?:done|complete|completed|finished))?\s*[.!]*$`,
			`^task\s+(?P<id>` + uuidPattern + `)\s+is\s+(?:done|complete|completed|finished)\s*[.!]*$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			return map[string]any{"task_id": strings.ToLower(m.Group("id"))}, nil
		},
	},
	{
		Name: "list_tasks", Tool: "os.list_tasks",
		Help: `list tasks, most urgent first — "list my urgent tasks", "show done tasks"`,
		Patterns: []string{
			`^(?:please\s+)?(?:list|show|get|give\s+me|what\s+are|what's|whats|which\s+are)\b(?P<filters>.*?)\b(?:tasks|to-?dos)\b(?P<more>.*)$`,
			`^(?:my\s+)?(?P<filters>(?:\w+\s+)?)tasks\s*\??$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			words := strings.ToLower(m.Group("filters") + " " + m.Group("more"))
			in := map[string]any{}
			switch {
			case hasWord(words, "done", "completed", "finished"):
				in["status"] = "done"
			case hasWord(words, "deferred", "postponed"):
				in["status"] = "deferred"
			case hasWord(words, "all", "every"):
				in["status"] = "any"
			}
			if p := priorityOf(words); p != "" && p != "normal" {
				in["priority"] = p
			}
			return in, nil
		},
	},
	{
		Name: "create_task", Tool: "os.create_task",
		Help: `create a task, with its priority and due date — "create a task to call John tomorrow, urgent"`,
		Patterns: []string{
			`^(?:please\s+)?(?:create|add|make|new|set\s+up)\s+(?:an?\s+)?(?P<pre>(?:(?:new|urgent|important|high|low|priority|asap)\s+)*)(?:task|todo|to-do)\b\s*(?:to\b|for\b|:|-)?\s*(?P<title>.+)$`,
			`^(?:todo|to-do|task)\s*[:\-]\s*(?P<title>.+)$`,
			`^remind\s+me\s+to\s+(?P<title>.+)$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			title := m.Group("title")
			priority := priorityOf(m.Group("pre") + " " + title)
			title = stripPriorityWords(title)
			due, title := extractWhen(title, m.Now, m.Location)
			title = cleanTitle(title)
			if title == "" {
				return nil, fmt.Errorf("what is the task? Say it after \"create a task to\"")
			}
			in := map[string]any{"title": title, "priority": priority}
			if !due.IsZero() {
				in["due_at"] = due.Format(time.RFC3339)
			}
			return in, nil
		},
	},
	{
		Name: "search_notes", Tool: "os.search_notes",
		Help: `search notes — "find notes about gutters"`,
		Patterns: []string{
			`^(?:please\s+)?(?:search|find|look\s*up|look\s+for)\s+(?:my\s+|the\s+)?(?:(?P<kind>personal|business)\s+)?notes?\s*(?:for|about|on|with|mentioning|that\s+mention|containing)?\s*(?P<query>.+)$`,
			`^(?:what|which)\s+notes?\s+(?:do\s+i\s+have\s+)?(?:about|on|mention(?:ing)?)\s+(?P<query>.+?)\??$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			q := strings.Trim(m.Group("query"), " .?!\"'")
			if q == "" {
				return nil, fmt.Errorf("what should I search the notes for?")
			}
			in := map[string]any{"query": q}
			if k := strings.ToLower(m.Group("kind")); k != "" {
				in["kind"] = k
			}
			return in, nil
		},
	},
	{
		Name: "create_note", Tool: "os.create_note",
		Help: `save a note, business or personal (from its words) — "note that the Smiths' gutters need replacing"`,
		Patterns: []string{
			`^(?:please\s+)?(?:create|add|make|save|write|take|jot\s+down)\s+(?:an?\s+)?(?:new\s+)?(?:(?P<kind>personal|private|business|work)\s+)?note\b\s*(?:that\b|about\b|saying\b|:|-)?\s*(?P<body>.+)$`,
			`^note(?:\s+that)?\s*[:\-]?\s+(?P<body>.+)$`,
			`^(?:remember|jot\s+down)\s+that\s+(?P<body>.+)$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			body := strings.TrimSpace(m.Group("body"))
			if body == "" {
				return nil, fmt.Errorf("what should the note say?")
			}
			kind := noteKind(m.Group("kind"), body)
			return map[string]any{"title": noteTitle(body), "body": body, "kind": kind}, nil
		},
	},
	{
		Name: "update_lead_stage", Tool: "leads.update_stage",
		Help: `move a lead along the pipeline — "move lead <lead id> to quoted"`,
		Patterns: []string{
			`^(?:please\s+)?(?:move|set|change|mark|update)\s+(?:the\s+)?lead\s+(?P<id>` + uuidPattern + `)\s+(?:to|as|into)\s+(?:stage\s+)?(?P<stage>[\w\s-]+?)\s*[.!]*$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			stage, err := enumValue(m.Tool, "stage", m.Group("stage"))
			if err != nil {
				return nil, err
			}
			return map[string]any{"lead_id": strings.ToLower(m.Group("id")), "stage": stage}, nil
		},
	},
	{
		Name: "list_leads", Tool: "leads.list_by_stage",
		Help: `list leads, optionally in one stage — "list new leads", "show leads in quoted"`,
		Patterns: []string{
			`^(?:please\s+)?(?:list|show|get|give\s+me|what\s+are|which\s+are)\b(?P<filters>.*?)\bleads\b(?P<more>.*)$`,
			`^(?P<filters>(?:\w+\s+)?)leads\s*\??$`,
		},
		Build: func(m *Match) (map[string]any, error) {
			words := strings.ToLower(m.Group("filters") + " " + m.Group("more"))
			in := map[string]any{}
			for _, stage := range enumOf(m.Tool, "stage") {
				if hasWord(words, stage, strings.ReplaceAll(stage, "_", " ")) {
					in["stage"] = stage
					break
				}
			}
			return in, nil
		},
	},
	{
		Name: "create_lead", Tool: "leads.create",
		Help: `record a new lead with name, phone, suburb and source — "new lead Ann Lee 0412 345 678 in Newtown, referral"`,
		Patterns: []string{
			`^(?:please\s+)?(?:new|add|create|record|log)\s+(?:an?\s+)?(?:new\s+)?lead\b\s*(?:for\b|:|-|,)?\s*(?P<rest>.+)$`,
			`^lead\s*[:\-]\s*(?P<rest>.+)$`,
		},
		Build: func(m *Match) (map[string]any, error) { return parseLead(m) },
	},
}

// RulesPlanner plans with Rules. It needs no LLM and always answers the same way.
type RulesPlanner struct {
	reg      *registry.Registry
	rules    []Rule
	location *time.Location
}

// NewRulesPlanner compiles rules (Rules when nil) against the registry; rules whose tool is missing are off.
func NewRulesPlanner(reg *registry.Registry, rules []Rule, loc *time.Location) (*RulesPlanner, error) {
	if rules == nil {
		rules = Rules
	}
	if loc == nil {
		loc = time.Local
	}
	p := &RulesPlanner{reg: reg, location: loc}
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

// Capabilities lists what the planner can do, one line per enabled rule.
func (p *RulesPlanner) Capabilities() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.Help
	}
	return out
}

// Plan matches each clause of the message against the rules.
func (p *RulesPlanner) Plan(_ context.Context, req brain.PlanRequest) (*brain.Plan, error) {
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	plan := &brain.Plan{}
	var buildErrs []string
	for _, clause := range splitClauses(req.Message) {
		matched := false
		for _, r := range p.rules {
			groups, ok := matchRule(&r, clause)
			if !ok {
				continue
			}
			matched = true
			tool, _ := p.reg.Tool(r.Tool)
			in, err := r.Build(&Match{Clause: clause, Groups: groups, Tool: tool, Now: now.In(p.location), Location: p.location})
			if errors.Is(err, ErrNoMatch) {
				matched = false
				continue
			}
			if err != nil {
				buildErrs = append(buildErrs, fmt.Sprintf("%s (%q): %v", r.Name, clause, err))
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
	case len(buildErrs) > 0:
		return nil, &brain.Error{Code: brain.EINVALID, Message: "I understood the request but cannot plan it: " + strings.Join(buildErrs, "; "),
			Details: map[string]any{"problems": buildErrs}}
	case len(plan.Calls) == 0:
		plan.Reason = "no rule matched the message"
		plan.Help = "I did not understand that. I can:\n- " + strings.Join(p.Capabilities(), "\n- ")
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
			if name != "" {
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

// hasWord reports whether text contains one of the words (or phrases) as whole words, ignoring case.
func hasWord(text string, words ...string) bool {
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

var priorityWords = []struct {
	priority string
	words    []string
}{
	{"urgent", []string{"urgent", "urgently", "asap", "a.s.a.p", "immediately", "right away", "right now", "critical", "emergency"}},
	{"low", []string{"low priority", "low-priority", "whenever", "no rush", "no hurry", "someday", "when you can", "not urgent"}},
	{"high", []string{"high priority", "high-priority", "important", "soon", "priority"}},
}

// priorityOf reads a task's priority from its words: urgent, high, low, or normal.
func priorityOf(text string) string {
	for _, p := range priorityWords {
		if hasWord(text, p.words...) {
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

func stripPriorityWords(text string) string { return priorityStripRe.ReplaceAllString(text, "") }

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

var whenRe = regexp.MustCompile(`(?i)[,]?\s*\b(?:(?:by|on|due|before|for)\s+)?(today|tonight|tomorrow|next\s+week|(?:next\s+|this\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|in\s+(\d{1,3})\s+days?|\d{4}-\d{2}-\d{2})\b`)

// extractWhen finds a due date in text and returns it (at 17:00 that day) and the text without it.
func extractWhen(text string, now time.Time, loc *time.Location) (time.Time, string) {
	m := whenRe.FindStringSubmatchIndex(text)
	if m == nil {
		return time.Time{}, text
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
		var n int
		fmt.Sscanf(text[m[4]:m[5]], "%d", &n)
		day = day.AddDate(0, 0, n)
	case len(phrase) == 10 && phrase[4] == '-':
		d, err := time.ParseInLocation("2006-01-02", phrase, loc)
		if err != nil {
			return time.Time{}, text
		}
		day = d.Add(17 * time.Hour)
	default:
		name := phrase[strings.LastIndexByte(phrase, ' ')+1:]
		wd := weekdays[name]
		ahead := (int(wd) - int(now.Weekday()) + 7) % 7
		if ahead == 0 || strings.HasPrefix(phrase, "next") {
			ahead += 7
		}
		day = day.AddDate(0, 0, ahead)
	}
	return day, text[:m[0]] + text[m[1]:]
}

var (
	spacesRe         = regexp.MustCompile(`\s{2,}`)
	trailingPleaseRe = regexp.MustCompile(`(?i)\s+(?:please|pls)$`)
)

// cleanTitle trims filler and punctuation from a task title.
func cleanTitle(s string) string {
	s = strings.TrimSpace(s)
	s = strings.Trim(s, " ,.;:-!")
	s = spacesRe.ReplaceAllString(s, " ")
	s = trailingPleaseRe.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}

var personalWords = []string{"personal", "private", "my wife", "my husband", "my partner", "my kids", "kids", "family",
	"birthday", "anniversary", "gym", "doctor", "dentist", "groceries", "shopping list", "holiday", "vacation", "mum", "mom", "dad"}

// noteKind is the explicit kind, else personal when the words say so, else business.
func noteKind(explicit, body string) string {
	switch strings.ToLower(explicit) {
	case "personal", "private":
		return "personal"
	case "business", "work":
		return "business"
	}
	if hasWord(body, personalWords...) {
		return "personal"
	}
	return "business"
}

// noteTitle is the first sentence of a note, cut to about 60 characters at a word.
func noteTitle(body string) string {
	title := body
	if i := strings.IndexAny(title, ".!?\n"); i > 0 {
		title = title[:i]
	}
	if len(title) > 60 {
		cut := strings.LastIndexByte(title[:60], ' ')
		if cut < 20 {
			cut = 60
		}
		title = title[:cut] + "…"
	}
	if r := []rune(title); len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
		title = string(r)
	}
	return title
}

// enumOf returns the enum of a top-level input property, from the registry.
func enumOf(t *registry.Tool, prop string) []string {
	var s struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(t.InputSchema, &s)
	return s.Properties[prop].Enum
}

// enumValue matches free text ("inspection scheduled") to a registry enum value ("inspection_scheduled").
func enumValue(t *registry.Tool, prop, text string) (string, error) {
	want := strings.ToLower(strings.Join(strings.Fields(strings.NewReplacer("-", " ", "_", " ").Replace(text)), "_"))
	values := enumOf(t, prop)
	for _, v := range values {
		if v == want {
			return v, nil
		}
	}
	return "", fmt.Errorf("%q is not a %s; use one of %s", text, prop, strings.Join(values, ", "))
}

var (
	phoneAURe    = regexp.MustCompile(`(?:\+?61[\s-]?|\b0)[2-478](?:[\s-]?\d){8}\b`)
	phoneOtherRe = regexp.MustCompile(`\+?\d(?:[\s()-]?\d){6,14}\b`)
	emailRe      = regexp.MustCompile(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`)
	suburbRe     = regexp.MustCompile(`\b(?:in|at|from|suburb:?)\s+([A-Z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+){0,2})`)
	namedRe      = regexp.MustCompile(`(?i)\b(?:named|called|name:?)\s+([A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*){0,3})`)
)

// sourceSynonyms maps the words people use to lead sources; only values the registry accepts are used.
var sourceSynonyms = []struct {
	source string
	words  []string
}{
	{"referral", []string{"referral", "referred", "word of mouth", "recommendation", "recommended", "ref"}},
	{"facebook", []string{"facebook", "fb", "instagram", "social media"}},
	{"google", []string{"google", "google ads", "search", "adwords"}},
	{"website", []string{"website", "web site", "web form", "online form", "our site", "web"}},
	{"walk_in", []string{"walk in", "walk-in", "walked in", "walkin"}},
	{"phone", []string{"phone call", "called in", "rang", "phoned", "cold call"}},
}

// sourceStripRe matches source phrases ("from a referral", "via facebook") so they are not read as a name.
var sourceStripRe = func() *regexp.Regexp {
	var alts []string
	for _, s := range sourceSynonyms {
		for _, w := range s.words {
			alts = append(alts, regexp.QuoteMeta(w))
		}
	}
	return regexp.MustCompile(`(?i)(?:\b(?:from|via|through|source:?)\s+)?(?:an?\s+|the\s+)?\b(?:` + strings.Join(alts, "|") + `)\b`)
}()

// parseLead reads a lead's name, phone, email, suburb and source from free text.
func parseLead(m *Match) (map[string]any, error) {
	rest := m.Group("rest")
	in := map[string]any{}

	phoneLoc := phoneAURe.FindStringIndex(rest)
	if phoneLoc == nil {
		phoneLoc = phoneOtherRe.FindStringIndex(rest)
	}
	if phoneLoc == nil {
		return nil, fmt.Errorf("a lead needs a phone number, for example \"new lead Ann Lee 0412 345 678\"")
	}
	in["phone"] = strings.TrimSpace(rest[phoneLoc[0]:phoneLoc[1]])
	before := rest[:phoneLoc[0]]
	rest = rest[:phoneLoc[0]] + " " + rest[phoneLoc[1]:]

	if e := emailRe.FindString(rest); e != "" {
		in["email"] = e
		rest = strings.Replace(rest, e, " ", 1)
		before = strings.Replace(before, e, " ", 1)
	}

	allowed := enumOf(m.Tool, "source")
	lower := strings.ToLower(rest)
	for _, s := range sourceSynonyms {
		if slices.Contains(allowed, s.source) && hasWord(lower, s.words...) {
			in["source"] = s.source
			rest = sourceStripRe.ReplaceAllString(rest, " ")
			break
		}
	}
	if _, ok := in["source"]; !ok && slices.Contains(allowed, "other") {
		in["source"] = "other"
	}

	if sm := suburbRe.FindStringSubmatch(rest); sm != nil {
		in["suburb"] = sm[1]
		before = strings.Replace(before, sm[0], " ", 1)
	}

	if nm := namedRe.FindStringSubmatch(rest); nm != nil {
		in["name"] = strings.TrimSpace(nm[1])
	} else {
		// The name is what comes before the phone number, up to a comma: "Ann Lee, 0412 ...".
		words := strings.Fields(strings.Split(before, ",")[0])
		name := strings.Trim(strings.Join(words[:min(len(words), 4)], " "), " ,.:-")
		if name == "" {
			return nil, fmt.Errorf("a lead needs a name, for example \"new lead Ann Lee 0412 345 678\"")
		}
		in["name"] = name
	}
	if _, ok := in["suburb"]; !ok {
		// "Ann Lee, 0412 345 678, Newtown": a capitalised part after the name and phone.
		for _, part := range strings.Split(rest, ",")[1:] {
			part = strings.Trim(part, " .")
			if part != "" && unicode.IsUpper([]rune(part)[0]) && len(strings.Fields(part)) <= 3 && !strings.ContainsAny(part, "0123456789@") {
				in["suburb"] = part
				break
			}
		}
	}
	return in, nil
}
