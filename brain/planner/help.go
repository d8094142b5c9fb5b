package planner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
)

// Help is what the brain can do: its modes, the messages it understands by domain, and every tool of the
// registry by domain (GET /brain/help).
type Help struct {
	Modes   []brain.ModeHelp `json:"modes"`
	Domains []DomainHelp     `json:"domains"`
}

// DomainHelp is one domain (a tool name's first part: os, leads, quote, integrations, ...).
type DomainHelp struct {
	Domain string `json:"domain"`
	// Rules are the messages the rules planner understands for the domain, with examples.
	Rules []RuleHelp `json:"rules"`
	// Tools are the registry's tools of the domain; any of them can be called by name (POST /calls) or by an
	// agent.
	Tools []ToolHelp `json:"tools"`
}

// RuleHelp is a rule for people.
type RuleHelp struct {
	Rule     string   `json:"rule"`
	Tool     string   `json:"tool"`
	Help     string   `json:"help"`
	Examples []string `json:"examples"`
}

// ToolHelp is a tool for people: what it does and what it needs.
type ToolHelp struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Required    []string `json:"required"`
}

// domainOfTool is a tool's domain for people: the first part of its name.
func domainOfTool(name string) string {
	d, _, _ := strings.Cut(name, ".")
	return d
}

// Help describes the modes, the enabled rules and the registry's tools, by domain.
func (p *RulesPlanner) Help() *Help {
	byDomain := map[string]*DomainHelp{}
	get := func(d string) *DomainHelp {
		if byDomain[d] == nil {
			byDomain[d] = &DomainHelp{Domain: d, Rules: []RuleHelp{}, Tools: []ToolHelp{}}
		}
		return byDomain[d]
	}
	for _, r := range p.rules {
		dh := get(domainOfTool(r.Tool))
		dh.Rules = append(dh.Rules, RuleHelp{Rule: r.Name, Tool: r.Tool, Help: r.Help, Examples: slices.Clone(r.Examples)})
	}
	for _, t := range p.reg.Tools() {
		dh := get(domainOfTool(t.Name))
		dh.Tools = append(dh.Tools, toolHelp(t))
	}
	h := &Help{Modes: slices.Clone(brain.Modes)} // the caller's own: nothing it does reaches the next request
	for _, d := range domainOrder(byDomain) {
		dh := *byDomain[d]
		sort.SliceStable(dh.Rules, func(i, j int) bool { return featuredRank(dh.Rules[i].Rule) < featuredRank(dh.Rules[j].Rule) })
		h.Domains = append(h.Domains, dh)
	}
	return h
}

// featuredRules come first in their domain's help: what people ask for most.
var featuredRules = []string{"create_task", "list_tasks", "create_note", "search_notes", "health_check", "create_lead", "list_leads",
	"schedule_inspection", "start_inspection", "add_measurement", "add_defect", "quote_from_inspection", "add_line_item", "calculate_totals",
	"job_from_quote", "schedule_job", "invoice_job", "record_payment", "send_sms", "create_event", "find_slots", "create_contact", "search_contacts"}

func featuredRank(rule string) int {
	if i := slices.Index(featuredRules, rule); i >= 0 {
		return i
	}
	return len(featuredRules)
}

// domainOrder puts the everyday domains first, then the rest alphabetically.
func domainOrder(byDomain map[string]*DomainHelp) []string {
	first := []string{"os", "leads", "inspection", "quote", "job", "invoice", "finance", "comms", "calendar", "entity", "personal", "identity", "media", "marketing", "integrations"}
	var rest []string
	for d := range byDomain {
		if !slices.Contains(first, d) {
			rest = append(rest, d)
		}
	}
	sort.Strings(rest)
	var out []string
	for _, d := range append(first, rest...) {
		if byDomain[d] != nil {
			out = append(out, d)
		}
	}
	return out
}

func toolHelp(t *registry.Tool) ToolHelp {
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.InputSchema, &s)
	if s.Required == nil {
		s.Required = []string{}
	}
	return ToolHelp{Name: t.Name, Description: t.Description, Required: s.Required}
}

// exampleTool is a tool to show asking about: the first domain's first rule's.
func (h *Help) exampleTool() string {
	for _, d := range h.Domains {
		if len(d.Rules) > 0 {
			return d.Rules[0].Tool
		}
	}
	return ""
}

// Text is the help for people: the modes, then what the brain understands by domain with an example each.
func (h *Help) Text() string {
	var b strings.Builder
	b.WriteString("I turn plain words into GEM tool calls, check them against the registry and run them.\n\nModes (\"mode\" of POST /brain/run):\n")
	for _, m := range h.Modes {
		def := ""
		if m.Default {
			def = " (the default)"
		}
		fmt.Fprintf(&b, "  %s%s: %s\n", m.Mode, def, m.Does)
	}
	b.WriteString("\nWhat I understand, by domain (ids come from the message or from the request's context):\n")
	for _, d := range h.Domains {
		if len(d.Rules) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", d.Domain)
		for _, r := range d.Rules {
			fmt.Fprintf(&b, "  - %s", r.Help)
			if len(r.Examples) > 0 {
				fmt.Fprintf(&b, ": %q", r.Examples[0])
			}
			b.WriteString("\n")
		}
	}
	var without []string
	for _, d := range h.Domains {
		for _, t := range d.Tools {
			if !slices.ContainsFunc(d.Rules, func(r RuleHelp) bool { return r.Tool == t.Name }) {
				without = append(without, t.Name)
			}
		}
	}
	if len(without) > 0 {
		fmt.Fprintf(&b, "\nTools with no wording of their own (call them by name with POST /calls, or through an agent): %s.\n", strings.Join(without, ", "))
	}
	if example := h.exampleTool(); example != "" {
		fmt.Fprintf(&b, "\nAsk \"what is %s?\" or \"how do I record a payment?\" for one thing; several requests can go on separate lines.\n", example)
	}
	return b.String()
}

// shortHelp answers a message nothing matched: one example per domain, and where to find the rest.
func (p *RulesPlanner) shortHelp() string {
	var lines []string
	for _, d := range p.Help().Domains {
		var ex []string
		for _, r := range d.Rules {
			if len(r.Examples) > 0 && len(ex) < 2 {
				ex = append(ex, fmt.Sprintf("%q", r.Examples[0]))
			}
		}
		if len(ex) > 0 {
			lines = append(lines, fmt.Sprintf("- %s: %s", d.Domain, strings.Join(ex, ", ")))
		}
	}
	return "I did not understand that. I can, for example (create a task, record a lead, quote a job...):\n" + strings.Join(lines, "\n") +
		"\nSay \"help\" (or GET /brain/help) for everything I understand."
}

var (
	fullHelpRe = regexp.MustCompile(`(?i)^(?:please\s+)?(?:help|\?+|commands|menu|usage|what\s+can\s+you\s+do|what\s+can\s+i\s+(?:ask|say|do)(?:\s+you)?|what\s+do\s+you\s+(?:do|understand)|how\s+do\s+i\s+use\s+(?:you|this|gem|the\s+brain)|show\s+(?:me\s+)?(?:the\s+)?help)\s*[.!?]*$`)
	topicRe    = regexp.MustCompile(`(?i)^(?:please\s+)?(?:help\s+(?:me\s+)?(?:with|on|about)\s+|how\s+(?:do|can|would|should)\s+i\s+|how\s+to\s+|explain\s+|describe\s+|tell\s+me\s+about\s+|what\s+(?:tools?\s+)?(?:is|are|does|do)\s+(?:the\s+)?(?:tool\s+)?)(?P<topic>.+?)(?:\s+(?:do|work|mean|for))?\s*[.!?]*$`)
	toolsForRe = regexp.MustCompile(`(?i)^(?:please\s+)?(?:(?:list|show)\s+(?:me\s+)?(?:the\s+|all\s+)?tools|(?:what|which)\s+tools\s+(?:do\s+you\s+have|are\s+there|can\s+you\s+use|exist))(?:\s+(?:for|about|in)\s+(?P<topic>.+?))?\s*[.!?]*$`)
)

// domainWords name domains the way people do.
var domainWords = map[string]string{
	"task": "os", "tasks": "os", "note": "os", "notes": "os", "reminder": "os", "reminders": "os", "os": "os", "audit": "os",
	"lead": "leads", "leads": "leads", "inspection": "inspection", "inspections": "inspection",
	"quote": "quote", "quotes": "quote", "quoting": "quote", "job": "job", "jobs": "job",
	"invoice": "invoice", "invoices": "invoice", "invoicing": "invoice", "payments": "invoice", "payment": "invoice",
	"finance": "finance", "money": "finance", "cash flow": "finance", "profit": "finance",
	"comms": "comms", "sms": "comms", "email": "comms", "emails": "comms", "messages": "comms", "texts": "comms",
	"calendar": "calendar", "events": "calendar", "appointments": "calendar", "diary": "calendar",
	"contacts": "entity", "entity": "entity", "entities": "entity", "clients": "entity", "suppliers": "entity",
	"personal": "personal", "identity": "identity", "memory": "identity", "memories": "identity",
	"media": "media", "photos": "media", "pictures": "media", "marketing": "marketing", "ads": "marketing",
	"integrations": "integrations", "highlevel": "integrations", "ghl": "integrations", "google drive": "integrations",
}

// Explain answers a request for help or an explanation: everything ("help", "what can you do?"), a tool
// ("what is os.create_task?"), a domain ("help with quotes", "which tools for invoices?") or how to do
// something ("how do I record a payment?"). It reports false for anything else, which is then planned.
func (p *RulesPlanner) Explain(message string) (string, bool) {
	message = strings.TrimSpace(message)
	if strings.ContainsAny(message, "\n;") {
		return "", false
	}
	if fullHelpRe.MatchString(message) {
		return p.Help().Text(), true
	}
	if m := toolsForRe.FindStringSubmatch(message); m != nil {
		if m[1] == "" {
			return p.toolList(""), true
		}
		if d, ok := p.domainNamed(m[1]); ok {
			return p.toolList(d), true
		}
	}
	m := topicRe.FindStringSubmatch(message)
	if m == nil {
		return "", false
	}
	topic := strings.Trim(strings.ToLower(m[1]), " ?.!\"'`")
	if t, ok := p.reg.Tool(topic); ok {
		return p.describeTool(t), true
	}
	// "what is/are ..." is only help for a tool: "what are my tasks" is a request.
	if strings.HasPrefix(strings.ToLower(strings.TrimPrefix(message, "please ")), "what") {
		return "", false
	}
	if d, ok := p.domainNamed(topic); ok {
		return p.describeDomain(d), true
	}
	if best := p.rulesAbout(topic, 3); len(best) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "To %s, say for example:\n", strings.TrimSuffix(topic, "?"))
		for _, r := range best {
			fmt.Fprintf(&b, "- %s: %q (%s)\n", r.Help, r.Examples[0], r.Tool)
		}
		return strings.TrimSpace(b.String()), true
	}
	return "", false
}

// domainNamed is the domain a word names ("quotes" → quote), among those the registry has.
func (p *RulesPlanner) domainNamed(word string) (string, bool) {
	word = strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(word)), "the "), "my ")
	d, ok := domainWords[word]
	if !ok {
		d = word
	}
	for _, t := range p.reg.Tools() {
		if domainOfTool(t.Name) == d {
			return d, true
		}
	}
	return "", false
}

func (p *RulesPlanner) describeTool(t *registry.Tool) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(t.InputSchema, &s)
	var optional []string
	for k := range s.Properties {
		if !slices.Contains(s.Required, k) {
			optional = append(optional, k)
		}
	}
	sort.Strings(optional)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", t.Name, strings.TrimSpace(t.Description))
	if len(s.Required) > 0 {
		fmt.Fprintf(&b, "\nIt needs: %s.", strings.Join(s.Required, ", "))
	}
	if len(optional) > 0 {
		fmt.Fprintf(&b, "\nIt also takes: %s.", strings.Join(optional, ", "))
	}
	var examples []string
	for _, r := range p.rules {
		if r.Tool == t.Name {
			examples = append(examples, r.Examples...)
		}
	}
	if len(examples) > 0 {
		b.WriteString("\nSay, for example:")
		for _, e := range examples {
			fmt.Fprintf(&b, "\n- %q", e)
		}
	} else {
		fmt.Fprintf(&b, "\nNo wording of mine calls it: call it by name (POST /calls {\"tool\": %q, \"input\": {...}}) or through an agent.", t.Name)
	}
	return b.String()
}

func (p *RulesPlanner) describeDomain(d string) string {
	var b strings.Builder
	for _, dh := range p.Help().Domains {
		if dh.Domain != d {
			continue
		}
		fmt.Fprintf(&b, "%s: what I understand\n", d)
		for _, r := range dh.Rules {
			fmt.Fprintf(&b, "- %s: %q\n", r.Help, r.Examples[0])
		}
		if len(dh.Rules) == 0 {
			b.WriteString("- nothing in plain words yet; call its tools by name (POST /calls) or through an agent\n")
		}
		fmt.Fprintf(&b, "Its tools: %s.", strings.Join(toolNames(dh.Tools), ", "))
	}
	return b.String()
}

func (p *RulesPlanner) toolList(d string) string {
	var b strings.Builder
	for _, dh := range p.Help().Domains {
		if d != "" && dh.Domain != d {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", dh.Domain, strings.Join(toolNames(dh.Tools), ", "))
	}
	b.WriteString("Ask \"what is <tool>?\" for what one does and needs.")
	return b.String()
}

func toolNames(tools []ToolHelp) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// rulesAbout ranks the enabled rules by the words they share with a topic, best first; rules sharing none
// are left out.
func (p *RulesPlanner) rulesAbout(topic string, limit int) []Rule {
	words := strings.FieldsFunc(strings.ToLower(topic), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	type scored struct {
		r     Rule
		score int
	}
	var list []scored
	for _, r := range p.rules {
		if len(r.Examples) == 0 {
			continue
		}
		text := strings.ToLower(r.Help + " " + strings.Join(r.Examples, " ") + " " + strings.NewReplacer(".", " ", "_", " ").Replace(r.Tool))
		score := 0
		for _, w := range words {
			if len(w) < 3 || stopWords[w] {
				continue
			}
			if HasWord(text, w) || HasWord(text, strings.TrimSuffix(w, "s")) {
				score++
			}
		}
		if score > 0 {
			list = append(list, scored{r, score})
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].score > list[j].score })
	var out []Rule
	for i := 0; i < len(list) && i < limit; i++ {
		out = append(out, list[i].r)
	}
	return out
}

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "how": true, "can": true, "you": true, "what": true,
	"new": true, "add": true, "get": true, "set": true, "make": true, "one": true, "some": true, "from": true, "into": true, "about": true}
