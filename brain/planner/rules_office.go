package planner

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// officeRules plan messages, the calendar, contacts, personal routines, the brain's memory of you and the
// rest of the office tools. What a call is about (a tool's context_ref) comes from the run's context.
var officeRules = []Rule{
	// Calls and messages.
	{
		Name: "log_call_outcome", Tool: "comms.log_call_outcome",
		Help:     "log how a call went (answered, no answer, left a message, busy)",
		Examples: []string{"log a call with 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10: no answer", "log call: left a message, will try Monday"},
		Patterns: []string{
			`^(?:please\s+)?(?:log|record)\s+(?:a\s+|the\s+)?(?:phone\s+)?call(?:\s+(?:with|to)\s+(?:the\s+)?(?:entity\s+|client\s+|customer\s+|contact\s+)?(?P<id>` + UUIDPattern + `))?\s*[:\-]?\s*(?P<outcome>` + outcomePattern + `)\b\s*(?:[,:\-]\s*(?P<notes>.+))?$`,
			`^(?:i\s+)?called\s+(?:the\s+)?(?:entity\s+|client\s+|customer\s+|contact\s+)?(?P<id>` + UUIDPattern + `)?\s*[:\-]?\s*(?P<outcome>` + outcomePattern + `)\b\s*(?:[,:\-]\s*(?P<notes>.+))?$`,
		},
		Build: func(m *Match) (any, error) {
			in := map[string]any{"outcome": callOutcome(m.Group("outcome"))}
			return withID(m, "entity_id", withGroup(m, "notes", "notes", in)), nil
		},
	},
	{
		Name: "send_sms", Tool: "comms.send_sms",
		Help:     "send an SMS about a lead, quote, job or invoice (from the context)",
		Examples: []string{"text 0412 345 678: running 10 minutes late, see you soon"},
		Patterns: []string{`^(?:please\s+)?(?:send\s+(?:an?\s+)?(?:sms|text)(?:\s+message)?\s+to|text|sms)\s+(?P<to>` + phonePattern + `)\s*[:\-,]\s*(?P<message>.+)$`},
		Build: func(m *Match) (any, error) {
			to, err := m.Phone("to", "to")
			if err != nil {
				return nil, err
			}
			return map[string]any{"to": to, "message": Cut(m.Group("message"), 1000)}, nil
		},
	},
	{
		Name: "send_email", Tool: "comms.send_email",
		Help:     "send an email about a record (from the context), with its subject",
		Examples: []string{"email ann@example.com about Your roof quote: the quote is attached, call me with any questions"},
		Patterns: []string{`^(?:please\s+)?(?:send\s+(?:an?\s+)?e-?mail\s+to|e-?mail)\s+(?P<to>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)\s*(?:(?:about|re|subject:?)\s+(?P<subject>[^:]+?))?\s*[:\-]\s*(?P<body>.+)$`},
		Build: func(m *Match) (any, error) {
			subject := m.Group("subject")
			if subject == "" {
				return nil, Missing("subject", `what is the subject? For example "email ann@example.com about Your quote: ..."`)
			}
			return map[string]any{"to": m.Group("to"), "subject": Cut(subject, 160), "body": m.Group("body")}, nil
		},
	},
	{
		Name: "compose_sms", Tool: "comms.compose_sms",
		Help:     "draft an SMS (not sent) about a record, for a purpose",
		Examples: []string{"draft a friendly sms to confirm the inspection time"},
		Patterns: []string{`^(?:please\s+)?(?:draft|compose|write|prepare)\s+(?:an?\s+|the\s+)?(?P<tone>` + tonePattern + `)?\s*(?:sms|text)(?:\s+message)?\s*(?:to|for|about|that|:|-)?\s*(?P<purpose>.+)$`},
		Build:    func(m *Match) (any, error) { return composeInput(m) },
	},
	{
		Name: "compose_email", Tool: "comms.compose_email",
		Help:     "draft an email (not sent) about a record, for a purpose",
		Examples: []string{"draft a formal email to follow up on the quote"},
		Patterns: []string{`^(?:please\s+)?(?:draft|compose|write|prepare)\s+(?:an?\s+|the\s+)?(?P<tone>` + tonePattern + `)?\s*e-?mail\s*(?:to|for|about|that|:|-)?\s*(?P<purpose>.+)$`},
		Build:    func(m *Match) (any, error) { return composeInput(m) },
	},
	{
		Name: "followup_task", Tool: "comms.create_followup_task_from_message",
		Help:     "make a follow-up task about a record (from the context)",
		Examples: []string{"follow up with Ann about the quote on friday", "create a follow-up task to call back tomorrow"},
		Patterns: []string{
			`^(?:please\s+)?(?:create|add|make|set\s+up)\s+(?:an?\s+)?follow[\s-]*up(?:\s+task)?\s*(?:to|for|:|-)?\s*(?P<title>.+)$`,
			`^(?:please\s+)?follow[\s-]*up\s*(?P<title>(?:with|on)\s+.+)$`,
		},
		Build: func(m *Match) (any, error) {
			due, title, err := extractWhen(m.Group("title"), "due_at", m.Now, m.Location)
			if err != nil {
				return nil, err
			}
			title = CleanTitle(title)
			if strings.HasPrefix(strings.ToLower(m.Clause), "follow") || strings.HasPrefix(strings.ToLower(m.Clause), "please follow") {
				title = "Follow up " + title
			}
			if title == "" {
				return nil, Missing("title", `what is the follow-up? For example "follow up with Ann about the quote on friday"`)
			}
			in := map[string]any{"title": Capitalize(title)}
			if !due.IsZero() {
				in["due_at"] = due.Format(time.RFC3339)
			}
			return in, nil
		},
	},
	// Calendar.
	{
		Name: "find_slots", Tool: "calendar.find_slots",
		Help:     "find free time in working hours (for how long, and when)",
		Examples: []string{"find a free slot of 2 hours tomorrow", "when am I free next week?"},
		Patterns: []string{
			`^(?:please\s+)?(?:find|show|get|what\s+are|list)\s+(?:me\s+)?(?:an?\s+|some\s+|my\s+)?(?:free|open|available)\s*(?:time\s*)?(?:slots?|times?|gaps?|openings?|time)\b(?P<rest>.*)$`,
			`^when\s+am\s+i\s+(?:free|available)\b(?P<rest>.*)$`,
		},
		Build: func(m *Match) (any, error) {
			rest := m.Group("rest")
			minutes, rest := durationIn(rest)
			from, to, err := slotRange(rest, "from", m.Now, m.Location)
			if err != nil {
				return nil, err
			}
			in := map[string]any{"from": from.Format(time.RFC3339), "to": to.Format(time.RFC3339)}
			if minutes > 0 {
				in["duration_minutes"] = min(max(minutes, 15), 480)
			}
			return in, nil
		},
	},
	{
		Name: "create_event", Tool: "calendar.create_event",
		Help:     "put an event in the calendar (an hour unless you say how long)",
		Examples: []string{"book a meeting with the supplier on friday at 2pm for 2 hours at the depot", "add an appointment: dentist tomorrow at 9am"},
		Patterns: []string{
			`^(?:please\s+)?(?:add|create|book|schedule|set\s+up)\s+(?:an?\s+|the\s+)?(?:calendar\s+)?(?P<kind>event|appointment|meeting|call|site\s+visit)\b\s*[:\-]?(?P<rest>.*)$`,
			`^(?:please\s+)?put\s+(?P<title>.+?)\s+in\s+(?:the|my)\s+(?:calendar|diary)(?P<rest>.*)$`,
		},
		Build: func(m *Match) (any, error) {
			text := m.Group("title") + " " + m.Group("rest")
			minutes, text := durationIn(text)
			start, text, err := extractDateTime(text, "start_at", m.Now, m.Location, 9)
			if err != nil {
				return nil, err
			}
			if start.IsZero() {
				return nil, Missing("start_at", `when is it? Say a day and a time, like "friday at 2pm"`)
			}
			if minutes == 0 {
				minutes = 60
			}
			in := map[string]any{"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Duration(minutes) * time.Minute).Format(time.RFC3339)}
			if loc := locationRe.FindStringSubmatchIndex(text); loc != nil {
				in["location"] = CleanTitle(text[loc[2]:loc[3]])
				text = text[:loc[0]]
			}
			title := CleanTitle(text)
			if kind := m.Group("kind"); kind != "" && !strings.HasPrefix(strings.ToLower(title), strings.ToLower(kind)) {
				title = strings.TrimSpace(kind + " " + title)
			}
			in["title"] = Capitalize(title)
			return in, nil
		},
	},
	{
		Name: "move_event", Tool: "calendar.update_event",
		Help:     "move an event to another time",
		Examples: []string{"move event 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to friday at 3pm"},
		Patterns: []string{`^(?:please\s+)?(?:move|reschedule|shift)\s+(?:the\s+)?(?:event|appointment|meeting)(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:to\s+)?(?P<when>.+)$`},
		Build: func(m *Match) (any, error) {
			minutes, text := durationIn(m.Group("when"))
			start, _, err := extractDateTime(text, "patch", m.Now, m.Location, 9)
			if err != nil {
				return nil, err
			}
			if start.IsZero() {
				return nil, Missing("patch", `to when? Say a day and a time, like "friday at 3pm"`)
			}
			patch := map[string]any{"start_at": start.Format(time.RFC3339)}
			if minutes > 0 {
				patch["end_at"] = start.Add(time.Duration(minutes) * time.Minute).Format(time.RFC3339)
			}
			return withID(m, "event_id", map[string]any{"patch": patch}), nil
		},
	},
	{
		Name: "cancel_event", Tool: "calendar.cancel_event",
		Help:     "cancel an event",
		Examples: []string{"cancel event 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10: client is away"},
		Patterns: []string{`^(?:please\s+)?cancel\s+(?:the\s+)?(?:event|appointment|meeting)(?:\s+(?P<id>` + UUIDPattern + `))?\s*(?:(?:[:,-]|because|as|reason:?)\s*(?P<reason>.+?))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			return withGroup(m, "reason", "reason", withID(m, "event_id", map[string]any{})), nil
		},
	},
	{
		Name: "attach_to_event", Tool: "calendar.attach_job_to_event",
		Help:     "link a job (or lead, quote, invoice) to an event",
		Examples: []string{"attach the job to event 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:attach|link)\s+(?:the\s+)?(?P<type>job|lead|quote|invoice)(?:\s+(?P<ref>` + UUIDPattern + `))?\s+to\s+(?:the\s+)?(?:event|appointment|meeting)(?:\s+(?P<id>` + UUIDPattern + `))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "event_id", map[string]any{})
			if ref := m.Group("ref"); ref != "" {
				in["context_ref"] = map[string]any{"type": strings.ToLower(m.Group("type")), "id": strings.ToLower(ref)}
			}
			return in, nil
		},
	},
	// Contacts.
	{
		Name: "create_contact", Tool: "entity.create",
		Help:     "add a client, supplier, partner or friend (with phone and email)",
		Examples: []string{"add a supplier named Roof Supplies Co 02 9555 1234 sales@roofsupplies.example"},
		Patterns: []string{`^(?:please\s+)?(?:add|create|new|record)\s+(?:an?\s+)?(?:new\s+)?(?P<type>client|customer|supplier|partner|friend|contact)\b\s*(?:named|called|:|-)?\s*(?P<rest>.+)$`},
		Build: func(m *Match) (any, error) {
			rest := m.Group("rest")
			contact := map[string]any{}
			loc, number, err := phoneIn(rest, "contact", m.PhoneRegion)
			if err != nil {
				return nil, err
			}
			if loc != nil {
				contact["phone"] = number.Typed
				rest = rest[:loc[0]] + " " + rest[loc[1]:]
			}
			if e := emailRe.FindString(rest); e != "" {
				contact["email"] = e
				rest = strings.Replace(rest, e, " ", 1)
			}
			name := CleanTitle(strings.Split(rest, ",")[0])
			if name == "" {
				return nil, Missing("name", `what is their name? For example "add a supplier named Roof Supplies Co"`)
			}
			in := map[string]any{"entity_type": entityType(m.Group("type")), "name": Cut(name, 200)}
			if len(contact) > 0 {
				in["contact"] = contact
			}
			return in, nil
		},
	},
	{
		Name: "search_contacts", Tool: "entity.search",
		Help:     "find clients, suppliers and other contacts",
		Examples: []string{"find supplier roof supplies", "search contacts for Nguyen"},
		Patterns: []string{`^(?:please\s+)?(?:find|search(?:\s+for)?|look\s*up|look\s+for)\s+(?:the\s+|a\s+|my\s+)?(?P<type>client|customer|supplier|partner|friend|contact|entit(?:y|ie))s?\s*(?:named|called|for|:)?\s*(?P<query>.+)$`},
		Build: func(m *Match) (any, error) {
			in := map[string]any{"query": strings.Trim(m.Group("query"), " .?!\"'")}
			if t := strings.ToLower(m.Group("type")); t != "contact" && !strings.HasPrefix(t, "entit") {
				in["entity_type"] = entityType(t)
			}
			return in, nil
		},
	},
	{
		Name: "get_contact", Tool: "entity.get",
		Help:     "show a contact by id",
		Examples: []string{"show contact 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:show|get|open)\s+(?:the\s+)?(?:entity|client|customer|supplier|contact|partner|friend)\s+(?P<id>` + UUIDPattern + `)\s*[.!]*$`},
		Build:    func(m *Match) (any, error) { return withID(m, "entity_id", map[string]any{}), nil },
	},
	{
		Name: "log_interaction", Tool: "entity.add_interaction",
		Help:     "log a meeting, site visit, email or other contact with someone",
		Examples: []string{"log a site visit with 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10: measured the back section"},
		Patterns: []string{`^(?:please\s+)?(?:log|record|add)\s+(?:an?\s+)?(?P<type>phone\s+call|call|sms|text|email|meeting|site\s+visit|visit|interaction)\s+(?:with|to|from)\s+(?:the\s+)?(?:entity\s+|client\s+|customer\s+|supplier\s+|contact\s+)?(?P<id>` + UUIDPattern + `)?\s*[:\-]\s*(?P<summary>.+)$`},
		Build: func(m *Match) (any, error) {
			return withID(m, "entity_id", map[string]any{"interaction_type": interactionType(m.Group("type")), "summary": Cut(m.Group("summary"), 400)}), nil
		},
	},
	// Personal.
	{
		Name: "check_in", Tool: "personal.check_in",
		Help:     "a personal check-in: energy, stress (low, medium, high) and focus (scattered, ok, locked in)",
		Examples: []string{"check in: energy high, stress low, focus locked in"},
		Patterns: []string{`^(?:please\s+)?(?:personal\s+|daily\s+)?check[\s-]*in\b\s*[:\-]?\s*(?P<rest>.*)$`},
		Build: func(m *Match) (any, error) {
			rest := m.Group("rest")
			in := map[string]any{}
			if n := notesRe.FindStringSubmatch(rest); n != nil {
				in["notes"] = n[1]
				rest = rest[:strings.Index(rest, n[0])]
			}
			for _, f := range []struct{ field, re, question string }{
				{"energy", `(?i)\benergy\s*(?:is\s+|[:=]\s*)?(low|medium|high)\b|\b(low|medium|high)\s+energy\b`, "how is your energy: low, medium or high?"},
				{"stress", `(?i)\bstress\s*(?:is\s+|[:=]\s*)?(low|medium|high)\b|\b(low|medium|high)\s+stress\b`, "how is your stress: low, medium or high?"},
				{"focus", `(?i)\bfocus\s*(?:is\s+|[:=]\s*)?(scattered|ok|okay|locked[\s_-]*in)\b|\b(scattered|locked[\s_-]*in)\b`, "how is your focus: scattered, ok or locked in?"},
			} {
				sm := regexp.MustCompile(f.re).FindStringSubmatch(rest)
				if sm == nil {
					return nil, Missing(f.field, f.question)
				}
				v := strings.ToLower(sm[1] + sm[2])
				switch {
				case v == "okay":
					v = "ok"
				case strings.HasPrefix(v, "locked"):
					v = "locked_in"
				}
				in[f.field] = v
			}
			return in, nil
		},
	},
	{
		Name: "create_commitment", Tool: "personal.create_commitment",
		Help:     "make a personal commitment (with a day to review it)",
		Examples: []string{"I commit to no work on Sundays, review next week"},
		Patterns: []string{`^(?:please\s+)?(?:i\s+(?:commit|promise)\s+(?:myself\s+)?to|(?:create|add|make|new)\s+(?:a\s+)?commitment\s*(?:to|:|-)?|commitment\s*[:\-])\s*(?P<title>.+)$`},
		Build: func(m *Match) (any, error) {
			text := m.Group("title")
			in := map[string]any{}
			if loc := reviewRe.FindStringSubmatchIndex(text); loc != nil {
				when, _, err := extractWhen(text[loc[2]:loc[3]], "review_at", m.Now, m.Location)
				if err != nil {
					return nil, err
				}
				if !when.IsZero() {
					in["review_at"] = when.Format(time.RFC3339)
					text = text[:loc[0]]
				}
			}
			title := CleanTitle(text)
			if title == "" {
				return nil, Missing("title", `what do you commit to? For example "I commit to no work on Sundays"`)
			}
			in["title"] = Capitalize(title)
			return in, nil
		},
	},
	{
		Name: "review_commitments", Tool: "personal.review_commitments",
		Help:     "review your commitments (active, closed or all)",
		Examples: []string{"review my commitments"},
		Patterns: []string{`^(?:please\s+)?(?:review|list|show|check)\s+(?:my\s+|the\s+)?(?:(?P<status>active|open|current|closed|done|finished|all)\s+)?commitments\s*[.!?]*$`},
		Build: func(m *Match) (any, error) {
			status := "active"
			switch strings.ToLower(m.Group("status")) {
			case "closed", "done", "finished":
				status = "closed"
			case "all":
				status = "all"
			}
			return map[string]any{"status": status}, nil
		},
	},
	{
		Name: "decision_support", Tool: "personal.decision_support",
		Help:     "lay out a decision and its options",
		Examples: []string{"help me decide: hire an apprentice or a second roofer", "should I buy a new ute or lease one?"},
		Patterns: []string{
			`^(?:please\s+)?help\s+me\s+(?:decide|choose)\s*(?:whether\s+|between\s+|on\s+|:)?\s*(?P<rest>.+)$`,
			`^(?P<should>should\s+i)\s+(?P<rest>.+?)\?*$`,
		},
		Build: func(m *Match) (any, error) {
			rest := strings.TrimRight(m.Group("rest"), "?. ")
			decision := Capitalize(rest)
			if m.Group("should") != "" {
				decision = "Should I " + rest + "?"
			}
			in := map[string]any{"decision": decision}
			var options []string
			for _, o := range optionSepRe.Split(rest, -1) {
				if o = strings.TrimSpace(o); o != "" {
					options = append(options, o)
				}
			}
			if len(options) >= 2 {
				in["options"] = options
			}
			return in, nil
		},
	},
	{
		Name: "set_boundary", Tool: "personal.boundary_set",
		Help:     "set a personal boundary",
		Examples: []string{"set a boundary on work calls: none after 6pm"},
		Patterns: []string{`^(?:please\s+)?(?:set|add|create|make)\s+(?:a\s+)?(?:personal\s+)?boundary\s*(?:(?:on|about|for)\s+(?P<key>[\w\s-]+?))?\s*[:\-]\s*(?P<text>.+)$`},
		Build: func(m *Match) (any, error) {
			text := CleanTitle(m.Group("text"))
			key := m.Group("key")
			if key == "" {
				key = strings.Join(strings.Fields(text)[:min(4, len(strings.Fields(text)))], " ")
			}
			return map[string]any{"key": Slug(key), "value": map[string]any{"rule": text}}, nil
		},
	},
	// The brain's memory of you, and the office's bookkeeping.
	{
		Name: "list_memories", Tool: "identity.list_memories",
		Help:     "what the brain remembers about you",
		Examples: []string{"what do you remember about me?", "list preference memories"},
		Patterns: []string{
			`^(?:please\s+)?(?:list|show)\s+(?:your\s+|my\s+|the\s+)?(?:(?P<type>preference|fact|boundary|commitment|pattern)\s+)?memories\s*[.!?]*$`,
			`^what\s+do\s+you\s+(?:remember|know)(?:\s+about\s+me)?\s*\??$`,
		},
		Build: func(m *Match) (any, error) {
			in := map[string]any{}
			if t := strings.ToLower(m.Group("type")); t != "" {
				in["memory_type"] = t
			}
			return in, nil
		},
	},
	NoInputRule("self_model", "identity.get_self_model", "how the brain sees itself: persona, values, boundaries, goals",
		[]string{"show your self model"},
		`^(?:please\s+)?(?:show|get|what(?:'s|\s+is))\s+(?:me\s+)?(?:your|the)\s+self[\s-]*model\s*[.!?]*$`, `^who\s+are\s+you\s*\??$`),
}

const (
	outcomePattern = `answered|picked\s+up|no\s+answer|didn'?t\s+answer|did\s+not\s+answer|left\s+(?:a\s+)?(?:message|voicemail)|voicemail|busy|engaged`
	tonePattern    = `friendly|formal|casual|firm|polite|warm|short|professional`
)

var (
	locationRe  = regexp.MustCompile(`(?i)\s+(?:at|in)\s+(.+?)\s*$`)
	notesRe     = regexp.MustCompile(`(?i)[,;]?\s*notes?\s*[:\-]\s*(.+)$`)
	reviewRe    = regexp.MustCompile(`(?i)[,;]?\s*(?:review(?:\s+it)?|check\s+in)\s+(?:on\s+|by\s+)?(.+)$`)
	durationRe  = regexp.MustCompile(`(?i)\s*\b(?:for|of|lasting)?\s*(an?|\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m)\b`)
	optionSepRe = regexp.MustCompile(`(?i)\s*(?:,|\bor\b|\band\b|\bvs\.?\b|\bversus\b)\s*`)
)

func callOutcome(said string) string {
	said = strings.ToLower(said)
	switch {
	case strings.Contains(said, "answered") && !strings.Contains(said, "n't") && !strings.Contains(said, "not"), strings.Contains(said, "picked"):
		return "answered"
	case strings.HasPrefix(said, "left") || said == "voicemail":
		return "left_message"
	case said == "busy" || said == "engaged":
		return "busy"
	}
	return "no_answer"
}

// composeInput is a draft's {purpose, tone}; what it is about comes from the context.
func composeInput(m *Match) (map[string]any, error) {
	in := map[string]any{"purpose": CleanTitle(m.Group("purpose"))}
	if t := m.Group("tone"); t != "" {
		in["tone"] = strings.ToLower(t)
	}
	return in, nil
}

// durationIn finds "for 2 hours" / "90 minutes" / "an hour" in text: minutes and the text without it.
func durationIn(text string) (int, string) {
	loc := durationRe.FindStringSubmatchIndex(text)
	if loc == nil {
		return 0, text
	}
	n := 1.0
	if num := text[loc[2]:loc[3]]; num != "a" && num != "an" {
		n, _ = strconv.ParseFloat(num, 64)
	}
	minutes := int(n)
	if strings.HasPrefix(strings.ToLower(text[loc[4]:loc[5]]), "h") {
		minutes = int(n * 60)
	}
	return minutes, text[:loc[0]] + text[loc[1]:]
}

// slotRange is where to look for free time: the day named, this or next week, or the next 7 days. A day
// that cannot be is a question about field.
func slotRange(text, field string, now time.Time, loc *time.Location) (time.Time, time.Time, error) {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	switch {
	case HasWord(text, "next week"):
		monday := today.AddDate(0, 0, 7-((int(today.Weekday())+6)%7))
		return monday, monday.AddDate(0, 0, 7), nil
	case HasWord(text, "this week"):
		monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
		return now, monday.AddDate(0, 0, 7), nil
	}
	day, _, err := extractWhen(text, field, now, loc)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !day.IsZero() {
		start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
		if start.Before(now) {
			return now, start.AddDate(0, 0, 1), nil
		}
		return start, start.AddDate(0, 0, 1), nil
	}
	return now, today.AddDate(0, 0, 8), nil
}

func entityType(said string) string {
	switch t := strings.ToLower(said); t {
	case "customer":
		return "client"
	case "client", "supplier", "partner", "friend", "lead":
		return t
	}
	return "other"
}

func interactionType(said string) string {
	switch t := strings.ToLower(said); {
	case strings.Contains(t, "call"):
		return "call"
	case t == "sms" || t == "text":
		return "sms"
	case t == "email":
		return "email"
	case t == "meeting":
		return "meeting"
	case strings.Contains(t, "visit"):
		return "site_visit"
	}
	return "other"
}
