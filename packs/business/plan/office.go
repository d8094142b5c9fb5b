package businessplan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"

	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
)

// officeRules plan messages, the calendar, contacts, personal routines and the brain's memory of you. What
// a call is about (a tool's context_ref) comes from the run's context.
var officeRules = []planner.Rule{
	// Calls and messages.
	{
		Name: "log_call_outcome", Tool: businesspack.LogCallOutcome,
		Help:     "log how a call went (answered, no answer, left a message, busy)",
		Examples: []string{"log a call with 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10: no answer", "log call: left a message, will try Monday"},
		Patterns: []string{
			`^(?:please\s+)?(?:log|record)\s+(?:a\s+|the\s+)?(?:phone\s+)?call(?:\s+(?:with|to)\s+(?:the\s+)?(?:entity\s+|client\s+|customer\s+|contact\s+)?(?P<id>` + planner.UUIDPattern + `))?\s*[:\-]?\s*(?P<outcome>` + callOutcomePattern + `)\b\s*(?:[,:\-]\s*(?P<notes>.+))?$`,
			`^(?:i\s+)?called\s+(?:the\s+)?(?:entity\s+|client\s+|customer\s+|contact\s+)?(?P<id>` + planner.UUIDPattern + `)?\s*[:\-]?\s*(?P<outcome>` + callOutcomePattern + `)\b\s*(?:[,:\-]\s*(?P<notes>.+))?$`,
		},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.LogCallOutcomeInput{EntityID: m.ID(), Outcome: callOutcome(m.Group("outcome")), Notes: m.Group("notes")}, nil
		},
	},
	{
		Name: "send_sms", Tool: businesspack.SendSMS,
		Help:     "send an SMS about a lead, quote, job or invoice (from the context)",
		Examples: []string{"text 0412 345 678: running 10 minutes late, see you soon"},
		Patterns: []string{`^(?:please\s+)?(?:send\s+(?:an?\s+)?(?:sms|text)(?:\s+message)?\s+to|text|sms)\s+(?P<to>` + planner.PhonePattern + `)\s*[:\-,]\s*(?P<message>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			to, err := m.Phone("to", "to")
			if err != nil {
				return nil, err
			}
			return businesspack.SendSMSInput{To: to, Message: planner.Cut(m.Group("message"), 1000)}, nil
		},
	},
	{
		Name: "send_email", Tool: businesspack.SendEmail,
		Help:     "send an email about a record (from the context), with its subject",
		Examples: []string{"email ann@example.com about Your roof quote: the quote is attached, call me with any questions"},
		Patterns: []string{`^(?:please\s+)?(?:send\s+(?:an?\s+)?e-?mail\s+to|e-?mail)\s+(?P<to>` + planner.EmailPattern + `)\s*(?:(?:about|re|subject:?)\s+(?P<subject>[^:]+?))?\s*[:\-]\s*(?P<body>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			subject := m.Group("subject")
			if subject == "" {
				return nil, planner.Missing("subject", `what is the subject? For example "email ann@example.com about Your quote: ..."`)
			}
			return businesspack.SendEmailInput{To: m.Group("to"), Subject: planner.Cut(subject, 160), Body: m.Group("body")}, nil
		},
	},
	{
		Name: "compose_sms", Tool: businesspack.ComposeSMS,
		Help:     "draft an SMS (not sent) about a record, for a purpose",
		Examples: []string{"draft a friendly sms to confirm the inspection time"},
		Patterns: []string{`^(?:please\s+)?(?:draft|compose|write|prepare)\s+(?:an?\s+|the\s+)?(?P<tone>` + tonePattern + `)?\s*(?:sms|text)(?:\s+message)?\s*(?:to|for|about|that|:|-)?\s*(?P<purpose>.+)$`},
		Build:    func(m *planner.Match) (any, error) { return composeInput(m), nil },
	},
	{
		Name: "compose_email", Tool: businesspack.ComposeEmail,
		Help:     "draft an email (not sent) about a record, for a purpose",
		Examples: []string{"draft a formal email to follow up on the quote"},
		Patterns: []string{`^(?:please\s+)?(?:draft|compose|write|prepare)\s+(?:an?\s+|the\s+)?(?P<tone>` + tonePattern + `)?\s*e-?mail\s*(?:to|for|about|that|:|-)?\s*(?P<purpose>.+)$`},
		Build:    func(m *planner.Match) (any, error) { return composeInput(m), nil },
	},
	{
		Name: "followup_task", Tool: businesspack.CreateFollowupTask,
		Help:     "make a follow-up task about a record (from the context)",
		Examples: []string{"follow up with Ann about the quote on friday", "create a follow-up task to call back tomorrow"},
		Patterns: []string{
			`^(?:please\s+)?(?:create|add|make|set\s+up)\s+(?:an?\s+)?follow[\s-]*up(?:\s+task)?\s*(?:to|for|:|-)?\s*(?P<title>.+)$`,
			`^(?:please\s+)?follow[\s-]*up\s*(?P<title>(?:with|on)\s+.+)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			due, title, err := m.When(m.Group("title"), "due_at")
			if err != nil {
				return nil, err
			}
			title = planner.CleanTitle(title)
			if strings.HasPrefix(strings.ToLower(m.Clause), "follow") || strings.HasPrefix(strings.ToLower(m.Clause), "please follow") {
				title = "Follow up " + title
			}
			if title == "" {
				return nil, planner.Missing("title", `what is the follow-up? For example "follow up with Ann about the quote on friday"`)
			}
			in := businesspack.CreateFollowupTaskInput{Title: planner.Capitalize(title)}
			if !due.IsZero() {
				in.DueAt = &due
			}
			return in, nil
		},
	},
	// Calendar.
	{
		Name: "find_slots", Tool: businesspack.FindSlots,
		Help:     "find free time in working hours (for how long, and when)",
		Examples: []string{"find a free slot of 2 hours tomorrow", "when am I free next week?"},
		Patterns: []string{
			`^(?:please\s+)?(?:find|show|get|what\s+are|list)\s+(?:me\s+)?(?:an?\s+|some\s+|my\s+)?(?:free|open|available)\s*(?:time\s*)?(?:slots?|times?|gaps?|openings?|time)\b(?P<rest>.*)$`,
			`^when\s+am\s+i\s+(?:free|available)\b(?P<rest>.*)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			minutes, rest := durationIn(m.Group("rest"))
			from, to, err := slotRange(m, rest, "from")
			if err != nil {
				return nil, err
			}
			// From is now unless the message names a later day: to the second, as the input always was.
			in := businesspack.FindSlotsInput{From: from.Truncate(time.Second), To: to.Truncate(time.Second)}
			if minutes > 0 {
				in.DurationMinutes = min(max(minutes, businesspack.SlotMinMinutes), businesspack.SlotMaxMinutes)
			}
			return in, nil
		},
	},
	{
		Name: "create_event", Tool: businesspack.CreateEvent,
		Help:     "put an event in the calendar (an hour unless you say how long)",
		Examples: []string{"book a meeting with the supplier on friday at 2pm for 2 hours at the depot", "add an appointment: dentist tomorrow at 9am"},
		Patterns: []string{
			`^(?:please\s+)?(?:add|create|book|schedule|set\s+up)\s+(?:an?\s+|the\s+)?(?:calendar\s+)?(?P<kind>event|appointment|(?:(?:site|client|team|on-?site|phone|video|zoom|quick)\s+)?(?:meeting|call|visit|catch[\s-]?up))\b\s*[:\-]?(?P<rest>.*)$`,
			`^(?:please\s+)?put\s+(?P<title>.+?)\s+in\s+(?:the|my)\s+(?:calendar|diary)(?P<rest>.*)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			minutes, text := durationIn(m.Group("title") + " " + m.Group("rest"))
			start, text, err := m.DateTime(text, "start_at", 9)
			if err != nil {
				return nil, err
			}
			if start.IsZero() {
				return nil, planner.Missing("start_at", `when is it? Say a day and a time, like "friday at 2pm"`)
			}
			if minutes == 0 {
				minutes = 60
			}
			in := businesspack.CreateEventInput{StartAt: start, EndAt: start.Add(time.Duration(minutes) * time.Minute)}
			if loc := locationRe.FindStringSubmatchIndex(text); loc != nil {
				where := planner.CleanTitle(text[loc[2]:loc[3]])
				in.Location = &where
				text = text[:loc[0]]
			}
			title := planner.CleanTitle(text)
			if kind := m.Group("kind"); kind != "" && !strings.HasPrefix(strings.ToLower(title), strings.ToLower(kind)) {
				title = strings.TrimSpace(kind + " " + title)
			}
			in.Title = planner.Capitalize(title)
			return in, nil
		},
	},
	{
		Name: "move_event", Tool: businesspack.UpdateEvent,
		Help:     "move an event to another time",
		Examples: []string{"move event 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to friday at 3pm"},
		Patterns: []string{`^(?:please\s+)?(?:move|reschedule|shift)\s+(?:the\s+)?(?:event|appointment|meeting)(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:to\s+)?(?P<when>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			minutes, text := durationIn(m.Group("when"))
			start, _, err := m.DateTime(text, "patch", 9)
			if err != nil {
				return nil, err
			}
			if start.IsZero() {
				return nil, planner.Missing("patch", `to when? Say a day and a time, like "friday at 3pm"`)
			}
			patch := businesspack.EventPatch{StartAt: &start}
			if minutes > 0 {
				end := start.Add(time.Duration(minutes) * time.Minute)
				patch.EndAt = &end
			}
			return businesspack.UpdateEventInput{EventID: m.ID(), Patch: patch}, nil
		},
	},
	{
		Name: "cancel_event", Tool: businesspack.CancelEvent,
		Help:     "cancel an event",
		Examples: []string{"cancel event 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10: client is away"},
		Patterns: []string{`^(?:please\s+)?cancel\s+(?:the\s+)?(?:event|appointment|meeting)(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*(?:(?:[:,-]|because|as|reason:?)\s*(?P<reason>.+?))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.CancelEventInput{EventID: m.ID(), Reason: m.Group("reason")}, nil
		},
	},
	{
		Name: "attach_to_event", Tool: businesspack.AttachJobToEvent,
		Help:     "link a job (or lead, quote, invoice) to an event",
		Examples: []string{"attach the job to event 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:attach|link)\s+(?:the\s+)?(?P<type>job|lead|quote|invoice)(?:\s+(?P<ref>` + planner.UUIDPattern + `))?\s+to\s+(?:the\s+)?(?:event|appointment|meeting)(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.AttachJobToEventInput{EventID: m.ID()}
			if ref := m.Group("ref"); ref != "" {
				in.ContextRef = &businesspack.Ref{Type: strings.ToLower(m.Group("type")), ID: strings.ToLower(ref)}
			}
			return in, nil
		},
	},
	// Contacts.
	{
		Name: "create_contact", Tool: businesspack.CreateEntity,
		Help:     "add a client, supplier, partner or friend (with phone and email)",
		Examples: []string{"add a supplier named Roof Supplies Co 02 9555 1234 sales@roofsupplies.example"},
		Patterns: []string{`^(?:please\s+)?(?:add|create|new|record)\s+(?:an?\s+)?(?:new\s+)?(?P<type>client|customer|supplier|partner|friend|contact)\b\s*(?:named|called|:|-)?\s*(?P<rest>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			rest := m.Group("rest")
			var contact businesspack.Contact
			loc, number, err := m.PhoneIn(rest, "contact")
			if err != nil {
				return nil, err
			}
			if loc != nil {
				contact.Phone = number.Typed
				rest = rest[:loc[0]] + " " + rest[loc[1]:]
			}
			if e := planner.EmailIn(rest); e != "" {
				contact.Email = e
				rest = strings.Replace(rest, e, " ", 1)
			}
			name := planner.CleanTitle(strings.Split(rest, ",")[0])
			if name == "" {
				return nil, planner.Missing("name", `what is their name? For example "add a supplier named Roof Supplies Co"`)
			}
			in := businesspack.CreateEntityInput{EntityType: entityType(m.Group("type")), Name: planner.Cut(name, 200)}
			if contact != (businesspack.Contact{}) {
				in.Contact = &contact
			}
			return in, nil
		},
	},
	{
		Name: "search_contacts", Tool: businesspack.SearchEntities,
		Help:     "find clients, suppliers and other contacts",
		Examples: []string{"find supplier roof supplies", "search contacts for Nguyen"},
		Patterns: []string{`^(?:please\s+)?(?:find|search(?:\s+for)?|look\s*up|look\s+for)\s+(?:the\s+|a\s+|my\s+)?(?P<type>client|customer|supplier|partner|friend|contact|entit(?:y|ie))s?\s*(?:named|called|for|:)?\s*(?P<query>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.SearchEntitiesInput{Query: strings.Trim(m.Group("query"), " .?!\"'")}
			if t := strings.ToLower(m.Group("type")); t != "contact" && !strings.HasPrefix(t, "entit") {
				in.EntityType = entityType(t)
			}
			return in, nil
		},
	},
	{
		Name: "get_contact", Tool: businesspack.GetEntity,
		Help:     "show a contact by id",
		Examples: []string{"show contact 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:show|get|open)\s+(?:the\s+)?(?:entity|client|customer|supplier|contact|partner|friend)\s+(?P<id>` + planner.UUIDPattern + `)\s*[.!]*$`},
		Build:    func(m *planner.Match) (any, error) { return businesspack.GetEntityInput{EntityID: m.ID()}, nil },
	},
	{
		Name: "log_interaction", Tool: businesspack.AddInteraction,
		Help:     "log a meeting, site visit, email or other contact with someone",
		Examples: []string{"log a site visit with 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10: measured the back section"},
		Patterns: []string{`^(?:please\s+)?(?:log|record|add)\s+(?:an?\s+)?(?P<type>phone\s+call|call|sms|text|email|meeting|site\s+visit|visit|interaction)\s+(?:with|to|from)\s+(?:the\s+)?(?:entity\s+|client\s+|customer\s+|supplier\s+|contact\s+)?(?P<id>` + planner.UUIDPattern + `)?\s*[:\-]\s*(?P<summary>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.AddInteractionInput{EntityID: m.ID(), InteractionType: interactionType(m.Group("type")), Summary: planner.Cut(m.Group("summary"), 400)}, nil
		},
	},
	// Personal.
	{
		Name: "check_in", Tool: businesspack.CheckIn,
		Help:     "a personal check-in: energy, stress (low, medium, high) and focus (scattered, ok, locked in)",
		Examples: []string{"check in: energy high, stress low, focus locked in"},
		Patterns: []string{`^(?:please\s+)?(?:personal\s+|daily\s+)?check[\s-]*in\b\s*[:\-]?\s*(?P<rest>.*)$`},
		Build: func(m *planner.Match) (any, error) {
			rest := m.Group("rest")
			var in businesspack.CheckInInput
			if n := checkInNotesRe.FindStringSubmatch(rest); n != nil {
				in.Notes = n[1]
				rest = rest[:strings.Index(rest, n[0])]
			}
			var said [len(checkInLevels)]string
			for i, f := range checkInLevels {
				sm := f.re.FindStringSubmatch(rest)
				if sm == nil {
					return nil, planner.Missing(f.field, f.question)
				}
				v := strings.ToLower(sm[1] + sm[2])
				switch {
				case v == "okay":
					v = businesspack.FocusOK
				case strings.HasPrefix(v, "locked"):
					v = businesspack.FocusLockedIn
				}
				said[i] = v
			}
			in.Energy, in.Stress, in.Focus = said[0], said[1], said[2]
			return in, nil
		},
	},
	{
		Name: "create_commitment", Tool: businesspack.CreateCommitment,
		Help:     "make a personal commitment (with a day to review it)",
		Examples: []string{"I commit to no work on Sundays, review next week"},
		Patterns: []string{`^(?:please\s+)?(?:i\s+(?:commit|promise)\s+(?:myself\s+)?to|(?:create|add|make|new)\s+(?:a\s+)?commitment\s*(?:to|:|-)?|commitment\s*[:\-])\s*(?P<title>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			text := m.Group("title")
			var in businesspack.CreateCommitmentInput
			if loc := reviewRe.FindStringSubmatchIndex(text); loc != nil {
				when, _, err := m.When(text[loc[2]:loc[3]], "review_at")
				if err != nil {
					return nil, err
				}
				if !when.IsZero() {
					in.ReviewAt = &when
					text = text[:loc[0]]
				}
			}
			title := planner.CleanTitle(text)
			if title == "" {
				return nil, planner.Missing("title", `what do you commit to? For example "I commit to no work on Sundays"`)
			}
			in.Title = planner.Capitalize(title)
			return in, nil
		},
	},
	{
		Name: "review_commitments", Tool: businesspack.ReviewCommitments,
		Help:     "review your commitments (active, closed or all)",
		Examples: []string{"review my commitments"},
		Patterns: []string{`^(?:please\s+)?(?:review|list|show|check)\s+(?:my\s+|the\s+)?(?:(?P<status>active|open|current|closed|done|finished|all)\s+)?commitments\s*[.!?]*$`},
		Build: func(m *planner.Match) (any, error) {
			status := businesspack.CommitmentsActive
			switch strings.ToLower(m.Group("status")) {
			case "closed", "done", "finished":
				status = businesspack.CommitmentsClosed
			case "all":
				status = businesspack.CommitmentsAll
			}
			return businesspack.ReviewCommitmentsInput{Status: status}, nil
		},
	},
	{
		Name: "decision_support", Tool: businesspack.DecisionSupport,
		Help:     "lay out a decision and its options",
		Examples: []string{"help me decide: hire an apprentice or a second roofer", "should I buy a new ute or lease one?"},
		Patterns: []string{
			`^(?:please\s+)?help\s+me\s+(?:decide|choose)\s*(?:whether\s+|between\s+|on\s+|:)?\s*(?P<rest>.+)$`,
			`^(?P<should>should\s+i)\s+(?P<rest>.+?)\?*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			rest := strings.TrimRight(m.Group("rest"), "?. ")
			in := businesspack.DecisionSupportInput{Decision: planner.Capitalize(rest)}
			if m.Group("should") != "" {
				in.Decision = "Should I " + rest + "?"
			}
			var options []string
			for _, o := range optionSepRe.Split(rest, -1) {
				if o = strings.TrimSpace(o); o != "" {
					options = append(options, o)
				}
			}
			if len(options) >= 2 {
				in.Options = options
			}
			return in, nil
		},
	},
	{
		Name: "set_boundary", Tool: businesspack.BoundarySet,
		Help:     "set a personal boundary",
		Examples: []string{"set a boundary on work calls: none after 6pm"},
		Patterns: []string{`^(?:please\s+)?(?:set|add|create|make)\s+(?:a\s+)?(?:personal\s+)?boundary\s*(?:(?:on|about|for)\s+(?P<key>[\w\s-]+?))?\s*[:\-]\s*(?P<text>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			text := planner.CleanTitle(m.Group("text"))
			key := m.Group("key")
			if key == "" {
				words := strings.Fields(text)
				key = strings.Join(words[:min(4, len(words))], " ")
			}
			return businesspack.BoundarySetInput{Key: planner.Slug(key), Value: businesspack.Boundary{Rule: text}}, nil
		},
	},
	// The brain's memory of you.
	{
		Name: "list_memories", Tool: businesspack.ListMemories,
		Help:     "what the brain remembers about you",
		Examples: []string{"what do you remember about me?", "list preference memories"},
		Patterns: []string{
			`^(?:please\s+)?(?:list|show)\s+(?:your\s+|my\s+|the\s+)?(?:(?P<type>preference|fact|boundary|commitment|pattern)\s+)?memories\s*[.!?]*$`,
			`^what\s+do\s+you\s+(?:remember|know)(?:\s+about\s+me)?\s*\??$`,
		},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.ListMemoriesInput{MemoryType: strings.ToLower(m.Group("type"))}, nil
		},
	},
	planner.NoInputRule("self_model", businesspack.GetSelfModel, "how the brain sees itself: persona, values, boundaries, goals",
		[]string{"show your self model"},
		`^(?:please\s+)?(?:show|get|what(?:'s|\s+is))\s+(?:me\s+)?(?:your|the)\s+self[\s-]*model\s*[.!?]*$`, `^who\s+are\s+you\s*\??$`),
}

// officeSentences are what the answer says of the office's succeeded calls.
var officeSentences = run.Sentences{
	businesspack.CheckIn: run.Says(func(in businesspack.CheckInInput, _ struct{}, _ run.When) string {
		var parts []string
		for _, level := range []struct{ name, value string }{{"energy", in.Energy}, {"stress", in.Stress}, {"focus", in.Focus}} {
			if level.value != "" {
				parts = append(parts, level.name+" "+strings.ReplaceAll(level.value, "_", " "))
			}
		}
		return "Checked in: " + strings.Join(parts, ", ") + "."
	}, nil),
	businesspack.CreateEvent: run.Says(func(in businesspack.CreateEventInput, _ struct{}, when run.When) string {
		return fmt.Sprintf("Booked “%s” for %s.", in.Title, when(in.StartAt))
	}, nil),
	businesspack.FindSlots: run.Says(func(_ businesspack.FindSlotsInput, out businesspack.FindSlotsOutput, when run.When) string {
		return run.List(out.Slots, "free slot", "free slots", func(s businesspack.FreeSlot) string {
			return when(s.StartAt) + " to " + when(s.EndAt)
		})
	}, nil),
}

const (
	callOutcomePattern = `answered|picked\s+up|no\s+answer|didn'?t\s+answer|did\s+not\s+answer|left\s+(?:a\s+)?(?:message|voicemail)|voicemail|busy|engaged`
	tonePattern        = `friendly|formal|casual|firm|polite|warm|short|professional`
)

var (
	locationRe     = regexp.MustCompile(`(?i)\s+(?:at|in)\s+(.+?)\s*$`)
	checkInNotesRe = regexp.MustCompile(`(?i)[,;]?\s*notes?\s*[:\-]\s*(.+)$`)
	reviewRe       = regexp.MustCompile(`(?i)[,;]?\s*(?:review(?:\s+it)?|check\s+in)\s+(?:on\s+|by\s+)?(.+)$`)
	durationRe     = regexp.MustCompile(`(?i)\s*\b(?:for|of|lasting)?\s*(an?|\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m)\b`)
	optionSepRe    = regexp.MustCompile(`(?i)\s*(?:,|\bor\b|\band\b|\bvs\.?\b|\bversus\b)\s*`)
)

// checkInLevels are what a check-in says, in the order asked for (energy, stress, focus): how each is said
// (its value in either of two groups), and the question when it is not.
var checkInLevels = [...]struct {
	field    string
	re       *regexp.Regexp
	question string
}{
	{"energy", regexp.MustCompile(`(?i)\benergy\s*(?:is\s+|[:=]\s*)?(low|medium|high)\b|\b(low|medium|high)\s+energy\b`), "how is your energy: low, medium or high?"},
	{"stress", regexp.MustCompile(`(?i)\bstress\s*(?:is\s+|[:=]\s*)?(low|medium|high)\b|\b(low|medium|high)\s+stress\b`), "how is your stress: low, medium or high?"},
	{"focus", regexp.MustCompile(`(?i)\bfocus\s*(?:is\s+|[:=]\s*)?(scattered|ok|okay|locked[\s_-]*in)\b|\b(scattered|locked[\s_-]*in)\b`), "how is your focus: scattered, ok or locked in?"},
}

// callOutcome is comms.log_call_outcome's outcome for the words a call was described with.
func callOutcome(said string) string {
	said = strings.ToLower(said)
	switch {
	case strings.Contains(said, "answered") && !strings.Contains(said, "n't") && !strings.Contains(said, "not"), strings.Contains(said, "picked"):
		return businesspack.CallAnswered
	case strings.HasPrefix(said, "left") || said == "voicemail":
		return businesspack.CallLeftMessage
	case said == "busy" || said == "engaged":
		return businesspack.CallBusy
	}
	return businesspack.CallNoAnswer
}

// composeInput is a draft's purpose and tone; what it is about comes from the context.
func composeInput(m *planner.Match) businesspack.ComposeInput {
	return businesspack.ComposeInput{Purpose: planner.CleanTitle(m.Group("purpose")), Tone: strings.ToLower(m.Group("tone"))}
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
func slotRange(m *planner.Match, text, field string) (time.Time, time.Time, error) {
	now, loc := m.Now, m.Location
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	switch {
	case planner.HasWord(text, "next week"):
		monday := today.AddDate(0, 0, 7-((int(today.Weekday())+6)%7))
		return monday, monday.AddDate(0, 0, 7), nil
	case planner.HasWord(text, "this week"):
		monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
		return now, monday.AddDate(0, 0, 7), nil
	}
	day, _, err := m.When(text, field)
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

// entityType is entity.create's entity_type for the word a contact was called by.
func entityType(said string) string {
	switch t := strings.ToLower(said); t {
	case "customer":
		return businesspack.EntityClient
	case businesspack.EntityClient, businesspack.EntitySupplier, businesspack.EntityPartner, businesspack.EntityFriend, businesspack.EntityLead:
		return t
	}
	return businesspack.EntityOther
}

// interactionType is entity.add_interaction's interaction_type for the word it was logged as.
func interactionType(said string) string {
	switch t := strings.ToLower(said); {
	case strings.Contains(t, "call"):
		return businesspack.InteractionCall
	case t == "sms" || t == "text":
		return businesspack.InteractionSMS
	case t == "email":
		return businesspack.InteractionEmail
	case t == "meeting":
		return businesspack.InteractionMeeting
	case strings.Contains(t, "visit"):
		return businesspack.InteractionSiteVisit
	}
	return businesspack.InteractionOther
}
