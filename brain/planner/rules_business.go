package planner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// businessRules plan the trades workflow: inspections, quotes, jobs, invoices, reminders. Ids may be left
// out of the message when the run's context carries them ("submit the inspection" with context
// inspection_id); an id that is in neither is reported as a missing required property.
var businessRules = []Rule{
	{
		Name: "create_reminder", Tool: "os.create_reminder",
		Help:     `set a reminder for a time — "remind me to call Ann tomorrow at 3pm"`,
		Patterns: []string{`^(?:please\s+)?(?:remind\s+me\s+to|set\s+a\s+reminder\s+to)\s+(?P<title>.+)$`},
		Build: func(m *Match) (map[string]any, error) {
			when, title, ok := extractDateTime(m.Group("title"), m.Now, m.Location, 9)
			if !ok {
				return nil, ErrNoMatch // no time given: the create_task rule makes it a task
			}
			return map[string]any{"title": cleanTitle(title), "remind_at": when.Format(time.RFC3339)}, nil
		},
	},
	{
		Name: "schedule_inspection", Tool: "leads.schedule_inspection",
		Help:     `book an inspection for a lead — "schedule an inspection for lead <id> on friday at 10am"`,
		Patterns: []string{`^(?:please\s+)?(?:schedule|book|arrange|set\s+up)\s+(?:an?\s+|the\s+)?(?:roof\s+)?inspection(?:\s+for\s+lead\s+(?P<id>` + uuidPattern + `))?(?P<when>.*)$`},
		Build: func(m *Match) (map[string]any, error) {
			when, _, ok := extractDateTime(m.Group("when"), m.Now, m.Location, 9)
			if !ok {
				return nil, fmt.Errorf("when should the inspection be? Say a day (and a time), like \"friday at 10am\"")
			}
			return withID(m, "lead_id", map[string]any{"scheduled_for": when.Format(time.RFC3339)}), nil
		},
	},
	{
		Name: "start_inspection", Tool: "inspection.create",
		Help:     `start an inspection for a lead — "start an inspection for lead <id>"`,
		Patterns: []string{`^(?:please\s+)?(?:start|create|begin|open|new)\s+(?:an?\s+|the\s+)?inspection(?:\s+for\s+lead\s+(?P<id>` + uuidPattern + `))?\s*[.!]*$`},
		Build:    func(m *Match) (map[string]any, error) { return withID(m, "lead_id", map[string]any{}), nil },
	},
	{
		Name: "add_measurement", Tool: "inspection.add_measurement",
		Help:     `record a measurement — "add measurement to inspection <id>: roof area 180 m2"`,
		Patterns: []string{`^(?:please\s+)?(?:add|record|log)\s+(?:a\s+)?measurement\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + uuidPattern + `))?)?\s*[:,-]?\s*(?P<what>.+)$`},
		Build:    func(m *Match) (map[string]any, error) { return parseMeasurement(m) },
	},
	{
		Name: "add_defect", Tool: "inspection.add_defect",
		Help:     `record a defect — "add a high defect to inspection <id>: cracked ridge capping"`,
		Patterns: []string{`^(?:please\s+)?(?:add|record|log|note)\s+(?:an?\s+)?(?P<severity>low|medium|high|critical)?\s*(?:severity\s+)?defect\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + uuidPattern + `))?)?\s*[:,-]?\s*(?P<title>.+)$`},
		Build: func(m *Match) (map[string]any, error) {
			severity := strings.ToLower(m.Group("severity"))
			if severity == "" {
				severity = "medium"
			}
			return withID(m, "inspection_id", map[string]any{"title": cleanTitle(m.Group("title")), "severity": severity}), nil
		},
	},
	idRule("submit_inspection", "inspection.submit", "inspection_id", `submit an inspection — "submit inspection <id>"`,
		`^(?:please\s+)?submit\s+(?:the\s+)?inspection`),
	idRule("lock_inspection", "inspection.lock", "inspection_id", `lock an inspection against changes — "lock inspection <id>"`,
		`^(?:please\s+)?lock\s+(?:the\s+)?inspection`),
	idRule("quote_from_inspection", "quote.create_from_inspection", "inspection_id", `draft a quote from an inspection — "create a quote from inspection <id>"`,
		`^(?:please\s+)?(?:create|make|draft|start|prepare)\s+(?:a\s+|the\s+)?quote\s+(?:from|for)\s+(?:the\s+)?inspection`),
	{
		Name: "add_line_item", Tool: "quote.add_line_item",
		Help:     `add a line to a quote — "add line item to quote <id>: 12 x colorbond sheets at $85.50"`,
		Patterns: []string{`^(?:please\s+)?add\s+(?:a\s+)?(?:line\s+item|line|item)\s*(?:(?:to|on)\s+(?:the\s+)?quote(?:\s+(?P<id>` + uuidPattern + `))?)?\s*[:,-]?\s*(?P<what>.+)$`},
		Build:    func(m *Match) (map[string]any, error) { return parseLineItem(m) },
	},
	idRule("calculate_totals", "quote.calculate_totals", "quote_id", `total a quote (GST included) — "calculate totals for quote <id>"`,
		`^(?:please\s+)?(?:calculate|compute|work\s+out|total(?:\s+up)?)\s+(?:the\s+)?(?:totals?\s+(?:for|of|on)\s+)?(?:the\s+)?quote`),
	idRule("send_quote", "quote.mark_sent", "quote_id", `mark a quote sent — "quote <id> was sent"`,
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+uuidPattern+`)?\s+(?:as\s+)?sent|(?:the\s+)?quote\s*(?P<id2>`+uuidPattern+`)?\s+(?:was|is|has\s+been)\s+sent|(?:i\s+)?sent\s+(?:the\s+)?quote)`),
	idRule("accept_quote", "quote.mark_accepted", "quote_id", `mark a quote accepted — "quote <id> was accepted"`,
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+uuidPattern+`)?\s+(?:as\s+)?accepted|(?:the\s+)?quote\s*(?P<id2>`+uuidPattern+`)?\s+(?:was|is|has\s+been)\s+accepted|(?:the\s+)?customer\s+accepted\s+(?:the\s+)?quote|accept\s+(?:the\s+)?quote)`),
	idRule("decline_quote", "quote.mark_declined", "quote_id", `mark a quote declined — "quote <id> was declined"`,
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+uuidPattern+`)?\s+(?:as\s+)?(?:declined|rejected)|(?:the\s+)?quote\s*(?P<id2>`+uuidPattern+`)?\s+(?:was|is|has\s+been)\s+(?:declined|rejected)|(?:the\s+)?customer\s+(?:declined|rejected)\s+(?:the\s+)?quote|decline\s+(?:the\s+)?quote)`),
	idRule("job_from_quote", "job.create_from_accepted_quote", "quote_id", `create the job for an accepted quote — "create a job from quote <id>"`,
		`^(?:please\s+)?(?:create|start|book|make|open)\s+(?:a\s+|the\s+)?job\s+(?:from|for)\s+(?:the\s+)?quote`),
	{
		Name: "schedule_job", Tool: "job.assign_dates",
		Help:     `set a job's start date — "schedule job <id> for monday"`,
		Patterns: []string{`^(?:please\s+)?(?:schedule|assign|set|book)\s+(?:the\s+)?job(?:\s+(?P<id>` + uuidPattern + `))?\s+(?:to\s+start\s+|starting\s+|for\s+|on\s+|dates?\s+)?(?P<when>.+)$`},
		Build: func(m *Match) (map[string]any, error) {
			when, rest := extractWhen(m.Group("when"), m.Now, m.Location)
			if when.IsZero() {
				return nil, fmt.Errorf("when does the job start? Say a day, like \"monday\" or 2026-12-01")
			}
			in := map[string]any{"start_date": when.Format("2006-01-02")}
			if end, _ := extractWhen(rest, m.Now, m.Location); !end.IsZero() && end.After(when) {
				in["end_date"] = end.Format("2006-01-02")
			}
			return withID(m, "job_id", in), nil
		},
	},
	idRule("complete_job", "job.complete", "job_id", `complete a job — "complete job <id>"`,
		`^(?:please\s+)?(?:complete|finish|close|sign\s+off)\s+(?:the\s+)?job`),
	idRule("invoice_job", "invoice.create_from_job", "job_id", `invoice a finished job — "invoice job <id>"`,
		`^(?:please\s+)?(?:invoice|bill|(?:create|raise|make|send)\s+(?:an?\s+|the\s+)?invoice\s+(?:for|from))\s+(?:the\s+)?job`),
	{
		Name: "record_payment", Tool: "invoice.add_payment",
		Help:     `record a payment — "record a payment of $1,500 on invoice <id> by card"`,
		Patterns: []string{`^(?:please\s+)?(?:record|add|log|got|received?)\s+(?:a\s+)?payment\s+(?:of\s+)?(?P<amount>\$?\s?[\d,]+(?:\.\d{1,2})?)\s*(?:(?:on|for|to|against)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + uuidPattern + `))?)?(?:\s+(?:by|via|in|as)\s+(?P<method>[\w\s-]+?))?\s*[.!]*$`},
		Build: func(m *Match) (map[string]any, error) {
			cents, err := parseCents(m.Group("amount"))
			if err != nil {
				return nil, err
			}
			in := map[string]any{"amount_cents": cents}
			if method := paymentMethod(m.Group("method")); method != "" {
				in["method"] = method
			}
			return withID(m, "invoice_id", in), nil
		},
	},
	{
		Name: "list_overdue", Tool: "invoice.list_overdue",
		Help:     `list overdue invoices — "which invoices are overdue?"`,
		Patterns: []string{`^(?:please\s+)?(?:list|show|get|which|what)\b.*\boverdue\b.*$`, `^overdue\s+invoices\s*\??$`},
		Build:    func(m *Match) (map[string]any, error) { return map[string]any{}, nil },
	},
	{
		Name: "mark_lead_lost", Tool: "leads.mark_lost",
		Help:     `mark a lead lost, with the reason — "mark lead <id> lost: went with a competitor"`,
		Patterns: []string{`^(?:please\s+)?(?:mark\s+)?(?:the\s+)?lead(?:\s+(?P<id>` + uuidPattern + `))?\s+(?:as\s+|is\s+)?lost\b\s*(?:[:,-]|because|as|reason:?)?\s*(?P<reason>.*)$`},
		Build: func(m *Match) (map[string]any, error) {
			reason := strings.Trim(m.Group("reason"), " .")
			if reason == "" {
				return nil, fmt.Errorf("why was the lead lost? Say it after \"lost:\"")
			}
			in := map[string]any{"reason": reason}
			for _, c := range lostReasons {
				if hasWord(reason, c.words...) {
					in["reason_code"] = c.code
					break
				}
			}
			return withID(m, "lead_id", in), nil
		},
	},
}

// lostReasons map why a lead was lost to a reason code; the first that matches wins.
var lostReasons = []struct {
	code  string
	words []string
}{
	{"competitor", []string{"competitor", "another company", "someone else", "other quote", "went with"}},
	{"price", []string{"price", "expensive", "cheaper", "cost", "budget"}},
	{"timing", []string{"timing", "later", "next year", "not now"}},
	{"no_response", []string{"no response", "not responding", "ghosted", "never answered"}},
}

// ErrNoMatch returned by a rule's Build lets the next rule try the clause.
var ErrNoMatch = fmt.Errorf("rule does not apply")

// idRule is a rule whose only input is one id, from the message or the run's context.
func idRule(name, tool, idField, help, pattern string) Rule {
	return Rule{
		Name: name, Tool: tool, Help: help,
		Patterns: []string{pattern + `(?:\s+(?P<id3>` + uuidPattern + `))?\s*[.!]*$`},
		Build:    func(m *Match) (map[string]any, error) { return withID(m, idField, map[string]any{}), nil },
	}
}

// withID adds the id the message names (groups id, id2 or id3) to an input.
func withID(m *Match, field string, in map[string]any) map[string]any {
	for _, g := range []string{"id", "id2", "id3"} {
		if id := m.Group(g); id != "" {
			in[field] = strings.ToLower(id)
			break
		}
	}
	return in
}

var timeOfDayRe = regexp.MustCompile(`(?i)\s*\b(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|\s*\bat\s+(\d{1,2}):(\d{2})\b|\s*\b(noon|midday)\b`)

// extractDateTime finds a day (and a time of day, else defaultHour) in text.
func extractDateTime(text string, now time.Time, loc *time.Location, defaultHour int) (time.Time, string, bool) {
	day, rest := extractWhen(text, now, loc)
	hour, minute, found := defaultHour, 0, false
	if tm := timeOfDayRe.FindStringSubmatchIndex(rest); tm != nil {
		sub := func(i int) string {
			if tm[2*i] < 0 {
				return ""
			}
			return rest[tm[2*i]:tm[2*i+1]]
		}
		found = true
		switch {
		case sub(6) != "":
			hour, minute = 12, 0
		case sub(4) != "":
			hour, _ = strconv.Atoi(sub(4))
			minute, _ = strconv.Atoi(sub(5))
		default:
			hour, _ = strconv.Atoi(sub(1))
			minute, _ = strconv.Atoi(sub(2))
			if strings.EqualFold(sub(3), "pm") && hour < 12 {
				hour += 12
			} else if strings.EqualFold(sub(3), "am") && hour == 12 {
				hour = 0
			}
		}
		rest = rest[:tm[0]] + rest[tm[1]:]
	}
	if day.IsZero() {
		if !found {
			return time.Time{}, text, false
		}
		// A time alone is today's, or tomorrow's once it has passed.
		day = time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, loc)
		if !day.After(now) {
			day = day.AddDate(0, 0, 1)
		}
		return day, rest, true
	}
	return time.Date(day.Year(), day.Month(), day.Day(), hour, minute, 0, 0, loc), rest, true
}

var (
	numberUnitRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(m2|m²|sqm|square\s+met(?:re|er)s?|ft2|sq\s*ft|square\s+feet|degrees?|deg|°|mm|millimet(?:re|er)s?|m|met(?:re|er)s?|lm|ft|feet|downpipes?)?`)
	priceRe      = regexp.MustCompile(`\$\s?(\d[\d,]*(?:\.\d{1,2})?)|(\d[\d,]*(?:\.\d{1,2})?)\s*(?:dollars|aud)\b`)
	quantityRe   = regexp.MustCompile(`(?i)^\s*(\d+(?:\.\d{1,3})?)\s*(?:x|×|\*)?\s+|\s(\d+(?:\.\d{1,3})?)\s*(x|×|units?|pcs|pieces|sheets|lengths|hours?|hrs?|m2|lm|metres|meters)\b`)
)

var measurementKinds = []struct {
	kind  string
	words []string
	unit  string
}{
	{"roof_pitch", []string{"pitch", "slope", "angle"}, "deg"},
	{"roof_area", []string{"roof area", "area", "roof"}, "m2"},
	{"gutter_length", []string{"gutter", "gutters", "guttering"}, "m"},
	{"ridge_length", []string{"ridge", "ridges", "ridge capping"}, "m"},
	{"valley_length", []string{"valley", "valleys"}, "m"},
	{"fascia_length", []string{"fascia", "fascias"}, "m"},
	{"downpipe_count", []string{"downpipe", "downpipes"}, "count"},
}

func parseMeasurement(m *Match) (map[string]any, error) {
	what := m.Group("what")
	num := numberUnitRe.FindStringSubmatch(what)
	if num == nil {
		return nil, fmt.Errorf("what was measured, and how much? For example \"roof area 180 m2\" or \"pitch 22 degrees\"")
	}
	value, _ := strconv.ParseFloat(num[1], 64)
	kind, unit := "other", ""
	for _, k := range measurementKinds {
		if hasWord(what, k.words...) {
			kind, unit = k.kind, k.unit
			break
		}
	}
	switch u := strings.ToLower(num[2]); {
	case u == "m2" || u == "m²" || u == "sqm" || strings.HasPrefix(u, "square m"):
		unit = "m2"
	case u == "ft2" || strings.HasPrefix(u, "sq") || strings.HasPrefix(u, "square f"):
		unit = "ft2"
	case strings.HasPrefix(u, "deg") || u == "°":
		unit = "deg"
	case u == "mm" || strings.HasPrefix(u, "milli"):
		unit = "mm"
	case u == "m" || u == "lm" || strings.HasPrefix(u, "met"):
		unit = "m"
	case u == "ft" || u == "feet":
		unit = "ft"
	case strings.HasPrefix(u, "downpipe"):
		unit = "count"
	}
	if unit == "" {
		return nil, fmt.Errorf("in which unit is %s? Say m2, m, mm, ft, degrees or a count", num[1])
	}
	in := map[string]any{"kind": kind, "value": value, "unit": unit}
	if kind == "other" {
		in["notes"] = strings.TrimSpace(what)
	}
	return withID(m, "inspection_id", in), nil
}

func parseCents(s string) (int64, error) {
	s = strings.NewReplacer("$", "", ",", "", " ", "").Replace(s)
	dollars, cents, _ := strings.Cut(s, ".")
	d, err := strconv.ParseInt(dollars, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an amount of money", s)
	}
	c := int64(0)
	if cents != "" {
		if len(cents) == 1 {
			cents += "0"
		}
		c, _ = strconv.ParseInt(cents, 10, 64)
	}
	return d*100 + c, nil
}

var paymentMethods = []struct {
	method string
	words  []string
}{
	{"card", []string{"card", "credit card", "debit card", "eftpos", "visa", "mastercard"}},
	{"bank_transfer", []string{"bank transfer", "transfer", "eft", "bank", "direct deposit"}},
	{"cash", []string{"cash"}},
	{"cheque", []string{"cheque", "check"}},
}

func paymentMethod(s string) string {
	for _, m := range paymentMethods {
		if hasWord(s, m.words...) {
			return m.method
		}
	}
	return ""
}

// parseLineItem reads "12 x colorbond sheets at $85.50" or "labour, 16 hours at $95" or "skip bin $450".
func parseLineItem(m *Match) (map[string]any, error) {
	what := m.Group("what")
	price := priceRe.FindStringSubmatchIndex(what)
	if price == nil {
		return nil, fmt.Errorf("what does the item cost? Give a price like $85.50")
	}
	raw := what[price[0]:price[1]]
	cents, err := parseCents(strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(raw), "dollars"), "aud"))
	if err != nil {
		return nil, err
	}
	rest := what[:price[0]] + " " + what[price[1]:]
	quantity, unit := 1.0, ""
	if q := quantityRe.FindStringSubmatchIndex(rest); q != nil {
		if q[2] >= 0 {
			quantity, _ = strconv.ParseFloat(rest[q[2]:q[3]], 64)
		} else {
			quantity, _ = strconv.ParseFloat(rest[q[4]:q[5]], 64)
			if u := strings.ToLower(rest[q[6]:q[7]]); u != "x" && u != "×" {
				unit = map[string]string{"hrs": "hours", "hr": "hour", "meters": "metres"}[u]
				if unit == "" {
					unit = u
				}
			}
		}
		rest = rest[:q[0]] + " " + rest[q[1]:]
	}
	desc := regexp.MustCompile(`(?i)\b(at|@|each|per\s+\w+|for)\s*$`).ReplaceAllString(strings.TrimSpace(rest), "")
	desc = cleanTitle(regexp.MustCompile(`(?i)\s+(at|@|each)\s*($|,)`).ReplaceAllString(desc, " "))
	if desc == "" {
		return nil, fmt.Errorf("what is the item? For example \"12 x colorbond sheets at $85.50\"")
	}
	in := map[string]any{"description": desc, "quantity": quantity, "unit_price_cents": cents}
	if unit != "" {
		in["unit"] = unit
	}
	return withID(m, "quote_id", in), nil
}
