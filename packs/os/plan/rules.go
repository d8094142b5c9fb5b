// Package osplan is the os pack's side in the brain: the rules planner's rules for its tools, and the
// sentences the answer says of their calls. Both are typed against the pack's contract (ospack).
package osplan

import (
	"regexp"
	"slices"
	"strings"

	ospack "github.com/gemhq/gem/packs/os"

	"github.com/gemhq/gem/brain/planner"
)

const id = planner.UUIDPattern

// Rules are the pack's rules, in the order they are tried. They come after the other packs' rules: theirs
// are more specific, and "remind me to …", "note …" and "list …" are the os pack's catch-alls.
var Rules = []planner.Rule{
	{
		// Before create_task: a reminder needs a time; without one, create_task makes it a task.
		Name: "create_reminder", Tool: ospack.CreateReminder,
		Help:     "set a reminder for a time (without a time it is a task)",
		Examples: []string{"remind me to call Ann tomorrow at 3pm"},
		Patterns: []string{
			`^(?:please\s+)?(?:remind\s+me\s+to|set\s+a\s+reminder\s+to)\s+(?P<title>.+)$`,
			// The time said first: "remind me on thursday to …", "remind me tomorrow at 8 to …".
			`^(?:please\s+)?(?:remind\s+me|set\s+a\s+reminder)\s+(?P<when>(?:on|at|by|this|next|tomorrow|today|tonight|in)\b.*?)\s+to\s+(?P<title>.+)$`,
			`^(?:please\s+)?remind\s+me\s+(?:about|of)\s+(?P<title>.+)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			when, title, err := m.DateTime(strings.TrimSpace(m.Group("when")+" "+m.Group("title")), "remind_at", 9)
			if err != nil {
				return nil, err
			}
			if when.IsZero() {
				return nil, planner.ErrNoMatch
			}
			title = planner.CleanTitle(title)
			return ospack.CreateReminderInput{Title: planner.Cut(title, 200), RemindAt: when, Domain: planner.DomainOf("", title)}, nil
		},
	},
	{
		Name: "health_check", Tool: ospack.HealthCheck,
		Help:     "check that GEM is working",
		Examples: []string{"health check", "system status", "are you up?"},
		Patterns: []string{`^(?:(?:run\s+a\s+)?health(?:\s*check)?|(?:system\s+)?status|system\s+check|ping|are\s+you\s+(?:up|ok|okay|alive|there)|check\s+(?:the\s+)?(?:system\s+)?(?:health|status)|check\s+(?:the\s+)?system|how(?:'s|\s+is)\s+the\s+system(?:\s+doing)?)\s*[.!?]*$`},
		Build:    func(*planner.Match) (any, error) { return struct{}{}, nil },
	},
	{
		Name: "complete_task", Tool: ospack.CompleteTask,
		Help:     "complete a task by its id",
		Examples: []string{"complete task 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{
			`^(?:please\s+)?(?:complete|finish|close|tick\s+off|mark)\s+(?:the\s+)?task\s+(?P<id>` + id + `)(?:\s+(?:as\s+)?(?:done|complete|completed|finished))?\s*(?:[:,-]\s*(?P<note>.+?))?\s*[.!]*$`,
			`^task\s+(?P<id>` + id + `)\s+is\s+(?:done|complete|completed|finished)\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			return ospack.CompleteTaskInput{TaskID: m.ID(), Note: said(m.Group("note"))}, nil
		},
	},
	{
		Name: "list_tasks", Tool: ospack.ListTasks,
		Help:     "list tasks (open unless you say done or all; personal or business)",
		Examples: []string{"list my tasks", "show done tasks", "list all personal tasks"},
		Patterns: []string{
			`^(?:please\s+)?(?:list|show|get|give\s+me|what\s+are|what's|whats|which\s+are)\b(?P<filters>.*?)\b(?:tasks|to-?dos)\b(?P<more>.*)$`,
			`^(?:my\s+)?(?P<filters>(?:\w+\s+)?)(?:tasks|to-?dos)\s*\??$`,
			`^(?:my\s+)?(?:todo|to-do)\s+list\s*\??$`,
			`^(?:what(?:'s|s|\s+is)|show\s+me\s+what(?:'s|s|\s+is))\s+on\s+(?:my|the)\s+(?:list|plate|(?:todo|to-do|task)\s+list)\s*[.!?]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			words := strings.ToLower(m.Group("filters") + " " + m.Group("more"))
			var in ospack.ListTasksInput
			status := ospack.StatusOpen
			switch {
			case planner.HasWord(words, "done", "completed", "finished", "closed"):
				status = ospack.StatusDone
			case planner.HasWord(words, "all", "every"):
				status = ospack.StatusAll
			}
			if slices.Contains(m.EnumValues("status"), status) {
				in.Status = status
			}
			if planner.HasWord(words, "personal", "private", "home") {
				in.Domain = ospack.DomainPersonal
			} else if planner.HasWord(words, "business", "work") {
				in.Domain = ospack.DomainBusiness
			}
			// A priority filter, where the tool has one (GEM's own list_tasks has none).
			if p := planner.PriorityOf(words); p != ospack.PriorityNormal && m.Tool.HasInputProperty("priority") {
				in.Priority = priorityInput(m, p)
			}
			return in, nil
		},
	},
	{
		Name: "create_task", Tool: ospack.CreateTask,
		Help:     "create a task, with its priority (low, normal, high), due date and domain (business or personal)",
		Examples: []string{"create a task to call John tomorrow, urgent", "todo: measure the Baker roof by friday", "create task: book the dentist, personal"},
		Patterns: []string{
			`^(?:please\s+)?(?:create|add|make|new|set\s+up)\s+(?:an?\s+)?(?P<pre>(?:(?:new|urgent|important|high|low|priority|asap|personal|private|home|business|work)\s+)*)(?:task|todo|to-do)\b\s*(?:to\b|for\b|:|-)?\s*(?P<title>.+)$`,
			`^(?:todo|to-do|task)\s*[:\-]?\s+(?P<title>.+)$`,
			`^remind\s+me\s+to\s+(?P<title>.+)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			pre, title := m.Group("pre"), m.Group("title")
			priority := priorityInput(m, planner.PriorityOf(pre+" "+title))
			domain := planner.DomainOf(domainWord(pre+" "+title), title)
			title = planner.StripPriorityWords(title)
			title = domainTagRe.ReplaceAllString(title, "")
			due, title, err := m.When(title, "due_at")
			if err != nil {
				return nil, err
			}
			title = planner.CleanTitle(title)
			if title == "" {
				return nil, planner.Missing("title", `what is the task? Say it after "create a task to"`)
			}
			in := ospack.CreateTaskInput{Title: planner.Cut(title, 200), Domain: domain, Priority: priority}
			if !due.IsZero() {
				in.DueAt = &due
			}
			return in, nil
		},
	},
	{
		Name: "search_notes", Tool: ospack.SearchNotes,
		Help:     "search notes",
		Examples: []string{"find notes about gutters", "notes about asbestos", "search personal notes for gym"},
		Patterns: []string{
			`^(?:please\s+)?(?:search|find|look\s*up|look\s+for)\s+(?:my\s+|the\s+)?(?:(?P<kind>personal|private|business|work)\s+)?notes?\s*(?:for|about|on|with|mentioning|that\s+mention|containing)?\s*(?P<query>.+)$`,
			`^(?:what|which)\s+notes?\s+(?:do\s+i\s+have\s+)?(?:about|on|mention(?:ing)?)\s+(?P<query>.+?)\??$`,
			`^(?:my\s+)?(?:(?P<kind>personal|private|business|work)\s+)?notes\s+(?:about|for|on|mentioning|containing)\s+(?P<query>.+?)\??$`,
			// What people recall writing: "what did I write about …", "have I noted anything on …".
			`^(?:what\s+(?:did|have)\s+i|(?:did|have)\s+i)\s+(?:write|written|note|noted|jot|jotted|save|saved)(?:\s+down)?(?:\s+(?:anything|something))?\s+(?:about|on|regarding|re)\s+(?P<query>.+?)\??$`,
		},
		Build: func(m *planner.Match) (any, error) {
			q := strings.Trim(m.Group("query"), " .?!\"'")
			if q == "" {
				return nil, planner.Missing("query", "what should I search the notes for?")
			}
			in := ospack.SearchNotesInput{Query: planner.Cut(q, 240)}
			if k := m.Group("kind"); k != "" {
				in.Domain = planner.DomainOf(k, "")
			}
			return in, nil
		},
	},
	{
		Name: "create_note", Tool: ospack.CreateNote,
		Help:     "save a note, business or personal (from its words)",
		Examples: []string{"note that the Smiths' gutters need replacing", "create note: Monument or Surfmist for the Baker job", "add a personal note: renew gym membership"},
		Patterns: []string{
			`^(?:please\s+)?(?:create|add|make|new|save|write|take|jot\s+down)\s+(?:an?\s+)?(?:new\s+)?(?:(?P<kind>personal|private|home|business|work)\s+)?note\b\s*(?:that\b|about\b|saying\b|:|-)?\s*(?P<body>.+)$`,
			`^note(?:\s+that)?\s*[:\-]?\s+(?P<body>.+)$`,
			`^(?:remember|jot\s+down)\s+that\s+(?P<body>.+)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			body := strings.TrimSpace(m.Group("body"))
			if body == "" {
				return nil, planner.Missing("content", "what should the note say?")
			}
			return ospack.CreateNoteInput{Domain: planner.DomainOf(m.Group("kind"), body), Title: noteTitle(body), Content: body}, nil
		},
	},
	{
		Name: "defer_task", Tool: ospack.DeferTask,
		Help:     "put a task off to a later day",
		Examples: []string{"defer task 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to friday: waiting on parts"},
		Patterns: []string{`^(?:please\s+)?(?:defer|postpone|push\s+back|delay|reschedule|push|move|bump)\s+(?:the\s+)?task(?:\s+(?P<id>` + id + `))?(?:\s+(?:back|out))?\s+(?P<when>.+?)(?:(?:\s+(?:because|reason:?|-)|\s*[:,])\s*(?P<reason>[^:]+))?$`},
		Build: func(m *planner.Match) (any, error) {
			due, _, err := m.DateTime(m.Group("when"), "due_at", 17)
			if err != nil {
				return nil, err
			}
			if due.IsZero() {
				return nil, planner.Missing("due_at", `until when? For example "defer task <id> to friday"`)
			}
			return ospack.DeferTaskInput{TaskID: m.ID(), DueAt: due, Reason: said(m.Group("reason"))}, nil
		},
	},
	{
		Name: "update_task", Tool: ospack.UpdateTask,
		Help:     "change a task's title, priority, due date or description",
		Examples: []string{"set task 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 priority to high", "rename task 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to call the Smiths"},
		Patterns: []string{
			`^(?:please\s+)?(?:set|change|update)\s+(?:the\s+)?task(?:\s+(?P<id>` + id + `))?(?:'s)?\s+(?P<field>priority|title|due\s+date|due|description)\s+(?:to|as)\s+(?P<value>.+?)\s*[.!]*$`,
			`^(?:please\s+)?rename\s+(?:the\s+)?task(?:\s+(?P<id>` + id + `))?\s+(?:to|as)\s+(?P<value>.+?)\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			value := m.Group("value")
			var patch ospack.TaskPatch
			switch field := strings.ToLower(m.Group("field")); {
			case field == "priority":
				p, err := planner.EnumValue([]string{ospack.PriorityLow, ospack.PriorityNormal, ospack.PriorityHigh, ospack.PriorityUrgent}, "priority", value)
				if err != nil {
					return nil, err
				}
				p = taskPriority(p)
				patch.Priority = &p
			case strings.HasPrefix(field, "due"):
				due, _, err := m.When(value, "patch")
				if err != nil {
					return nil, err
				}
				if due.IsZero() {
					return nil, planner.Missing("patch", `to which day? For example "set task <id> due date to friday"`)
				}
				patch.DueAt = &due
			case field == "description":
				patch.Description = &value
			default:
				title := planner.Cut(planner.CleanTitle(value), 200)
				patch.Title = &title
			}
			return ospack.UpdateTaskInput{TaskID: m.ID(), Patch: patch}, nil
		},
	},
	{
		Name: "audit_log", Tool: ospack.AuditLogSearch,
		Help:     "search the audit log of calls (what happened, when)",
		Examples: []string{"what happened today?", "search the audit log for leads.create", "show the audit log since yesterday"},
		Patterns: []string{
			`^(?:please\s+)?(?:search|show|check|get|list)\s+(?:the\s+)?audit(?:\s+log|\s+trail)?(?:\s+(?:for|about|of)\s+(?P<query>.+?))?(?:\s+(?:since|from)\s+(?P<since>.+?))?\s*[.!?]*$`,
			`^(?:please\s+)?audit\s+call\s+(?P<id>` + id + `)\s*[.!?]*$`,
			`^what\s+(?:happened|did\s+you\s+do|was\s+done)\s+(?P<since>today|yesterday|this\s+week|in\s+the\s+last\s+\d+\s+(?:hours?|days?)|.+?)\s*\??$`,
		},
		Build: func(m *planner.Match) (any, error) {
			in := ospack.AuditLogSearchInput{CallID: m.ID()}
			if q := m.Group("query"); q != "" {
				if ids := planner.UUIDsIn(q); len(ids) > 0 {
					in.CallID = ids[0]
				} else {
					in.Query = q
				}
			}
			var err error
			in.Since, err = m.Since("since")
			return in, err
		},
	},
	{
		Name: "state_snapshot", Tool: ospack.GetStateSnapshot,
		Help:     "how things stand, business or personal (or both)",
		Examples: []string{"how is the business going?", "show the personal snapshot"},
		Patterns: []string{
			`^(?:please\s+)?(?:(?:show|get|give\s+me|what(?:'s|\s+is))\s+)?(?:me\s+)?(?:the\s+|my\s+)?(?:(?P<domain>business|personal|overall|full|whole)\s+)?(?:state(?:\s+snapshot)?|snapshot|overview|situation)\s*[.!?]*$`,
			`^how(?:'s|\s+is|\s+are)\s+(?:the\s+)?(?P<domain>business|things|everything)(?:\s+(?:going|doing|looking|tracking|travelling|traveling))?\s*\??$`,
		},
		Build: func(m *planner.Match) (any, error) {
			return ospack.GetStateSnapshotInput{Domain: snapshotDomain(m.Group("domain"))}, nil
		},
	},
	{
		Name: "refresh_snapshot", Tool: ospack.RefreshStateSnapshot,
		Help:     "rebuild the state snapshot from recent events",
		Examples: []string{"refresh the business snapshot"},
		Patterns: []string{`^(?:please\s+)?(?:refresh|rebuild|update|recompute)\s+(?:the\s+|my\s+)?(?:(?P<domain>business|personal|overall|full|whole)\s+)?(?:state(?:\s+snapshot)?|snapshot)(?:\s+since\s+(?P<since>.+?))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := ospack.RefreshStateSnapshotInput{Domain: snapshotDomain(m.Group("domain"))}
			var err error
			in.Since, err = m.Since("since")
			return in, err
		},
	},
	{
		Name: "rollback", Tool: ospack.RollbackLastAction,
		Help:     "undo a call (rows it made are removed, rows it changed restored)",
		Examples: []string{"undo call 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:undo|roll\s*back|revert|reverse)\s+(?:the\s+)?(?:last\s+(?:action|call)|call|that|action)(?:\s+(?P<id>` + id + `))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			if m.ID() == "" {
				return nil, planner.Missing("call_id", `which call should I undo? Give its id: "undo call <call id>" (GET /calls lists the latest)`)
			}
			return ospack.RollbackInput{CallID: m.ID()}, nil
		},
	},
}

// priorityInput is the priority the tool's enum has for one people said: urgent is high where there is no
// urgent (os.create_task has low, normal and high); "" where the enum has neither.
func priorityInput(m *planner.Match, p string) string {
	allowed := m.EnumValues("priority")
	switch {
	case len(allowed) == 0 || slices.Contains(allowed, p):
		return p
	case p == ospack.PriorityUrgent && slices.Contains(allowed, ospack.PriorityHigh):
		return ospack.PriorityHigh
	}
	return ""
}

// taskPriority is a priority a task can have: urgent is high (os.create_task has low, normal and high).
func taskPriority(p string) string {
	if p == ospack.PriorityUrgent {
		return ospack.PriorityHigh
	}
	return p
}

// domainTagRe matches a domain said as a tag on a task ("..., personal"), so it is not part of the title.
var domainTagRe = regexp.MustCompile(`(?i)[,(]?\s*\b(?:it'?s\s+)?(?:personal|private|business|work)\b\)?\s*$`)

// domainWord is the explicit domain word in text (personal, private, home, business, work), or "".
func domainWord(text string) string {
	for _, w := range []string{"personal", "private", "home", "business", "work"} {
		if planner.HasWord(text, w) {
			return w
		}
	}
	return ""
}

// noteTitle is the first sentence of a note, cut to about 60 characters at a word.
func noteTitle(body string) string {
	title := body
	if i := strings.IndexAny(title, ".!?\n"); i > 0 {
		title = title[:i]
	}
	return planner.Capitalize(planner.Cut(title, 60))
}

// said is a value the message gave, or nil (left out of the input) when it gave none.
func said(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// snapshotDomain is the snapshot's domain the words name: business unless they say personal or everything.
func snapshotDomain(said string) string {
	switch strings.ToLower(said) {
	case "personal":
		return ospack.DomainPersonal
	case "overall", "full", "whole", "things", "everything":
		return ospack.DomainBoth
	}
	return ospack.DomainBusiness
}
