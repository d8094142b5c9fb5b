package business

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerOS(h executor.Handlers, p *pack) {
	h.Func("os.health_check", executor.Typed(p.healthCheck))
	h.Func("os.create_note", executor.Typed(createNote))
	h.Func("os.search_notes", executor.Typed(searchNotes))
	h.Func("os.create_task", executor.Typed(createTask))
	h.Func("os.update_task", executor.Typed(updateTask))
	h.Func("os.complete_task", executor.Typed(completeTask))
	h.Func("os.list_tasks", executor.Typed(listTasks))
	h.Func("os.defer_task", executor.Typed(deferTask))
}

// Domains of notes, tasks and reminders (GEM's domain property).
const (
	domainBusiness = "business"
	domainPersonal = "personal"
	domainBoth     = "both"
)

// domainFilterSQL is the condition "the row belongs to the domain $n": business and personal also match rows
// of both; both (or no domain) matches every row.
func domainFilterSQL(column string, param int) string {
	return fmt.Sprintf("($%[2]d = '' OR $%[2]d = 'both' OR %[1]s = $%[2]d OR %[1]s = 'both')", column, param)
}

// invalidField ends a call with validation_error about one input field, named in the details.
func invalidField(field, format string, args ...any) error {
	return &executor.Error{Code: registry.CodeValidation, Message: field + " " + fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field}}
}

// refTables are the record types whose references are checked: a reference to a missing lead is not_found.
// References of other types (records kept elsewhere) are stored as given.
var refTables = map[string]string{
	"lead": "leads", "entity": "entities", "customer": "entities", "supplier": "entities", "site": "entities",
	"inspection": "inspections", "quote": "quotes", "job": "jobs", "invoice": "invoices",
	"task": "os_tasks", "note": "os_notes", "reminder": "os_reminders", "media": "media_assets",
	"commitment": "personal_commitments", "memory": "identity_memories", "checkin": "personal_checkins",
}

// normalize trims the reference and lower-cases its type. An empty reference ({}) is nil; half of one is a
// validation_error naming field.
func (r *contextRef) normalize(field string) (*contextRef, error) {
	if r == nil {
		return nil, nil
	}
	n := contextRef{Type: strings.ToLower(strings.TrimSpace(r.Type)), ID: strings.TrimSpace(r.ID)}
	switch {
	case n.Type == "" && n.ID == "":
		return nil, nil
	case n.Type == "" || n.ID == "":
		return nil, invalidField(field, "needs both a type and an id")
	}
	return &n, nil
}

// check confirms that a reference of a known type names an existing row and returns that row's id (nil for
// types that are not checked).
func (r *contextRef) check(ctx context.Context, db executor.DB) (*uuid.UUID, error) {
	table, known := refTables[r.Type]
	if !known {
		return nil, nil
	}
	id, err := uuid.Parse(r.ID)
	if err != nil {
		return nil, executor.NotFound("%s %q does not exist (not a UUID)", r.Type, r.ID)
	}
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1)`, id).Scan(&exists); err != nil {
		return nil, fmt.Errorf("error checking %s %s: %w", r.Type, id, err)
	}
	if !exists {
		return nil, executor.NotFound("%s %s does not exist", r.Type, id)
	}
	return &id, nil
}

// resolveRef normalizes and checks a context_ref; leadID is set when it names a lead.
func resolveRef(ctx context.Context, db executor.DB, field string, in *contextRef) (ref *contextRef, leadID *uuid.UUID, err error) {
	if ref, err = in.normalize(field); err != nil || ref == nil {
		return nil, nil, err
	}
	id, err := ref.check(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	if ref.Type == "lead" {
		leadID = id
	}
	return ref, leadID, nil
}

// refFromColumns is the reference kept in a row's context_type and context_id columns, or nil.
func refFromColumns(typ, id *string) *contextRef {
	if typ == nil || id == nil {
		return nil
	}
	return &contextRef{Type: *typ, ID: *id}
}

func refColumns(r *contextRef) (typ, id *string) {
	if r == nil {
		return nil, nil
	}
	return &r.Type, &r.ID
}

// parseRecordID reads a GEM id (a string) as the UUID of a record; anything else names no record.
func parseRecordID(what, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return uuid.Nil, executor.NotFound("%s %q does not exist (not a UUID)", what, s)
	}
	return id, nil
}

// Notes.

type note struct {
	NoteID     uuid.UUID    `json:"note_id"`
	Domain     string       `json:"domain"`
	Title      string       `json:"title"`
	EntityRefs []contextRef `json:"entity_refs"`
	Tags       []string     `json:"tags"`
	CreatedAt  time.Time    `json:"created_at"`
}

type createNoteInput struct {
	Domain     string        `json:"domain"`
	Title      string        `json:"title"`
	Content    string        `json:"content"`
	EntityRefs []*contextRef `json:"entity_refs"`
	Tags       []string      `json:"tags"`
}

// createNote saves a note. Its entity_refs are checked (a missing lead is not_found) and kept; the first
// lead among them is also the note's lead_id.
func createNote(ctx context.Context, c *executor.Call, in createNoteInput) (*note, error) {
	if strings.TrimSpace(in.Title) == "" && strings.TrimSpace(in.Content) == "" {
		return nil, invalidField("title", "and content are both blank: a note needs one of them")
	}
	refs := []contextRef{}
	var leadID *uuid.UUID
	for i, r := range in.EntityRefs {
		ref, lead, err := resolveRef(ctx, c.DB, fmt.Sprintf("entity_refs[%d]", i), r)
		if err != nil {
			return nil, err
		}
		if ref != nil && !slices.Contains(refs, *ref) {
			refs = append(refs, *ref)
		}
		if leadID == nil {
			leadID = lead
		}
	}
	refsJSON, err := json.Marshal(refs)
	if err != nil {
		return nil, err
	}
	tags := normalizeNoteTags(in.Tags)
	n := note{EntityRefs: refs}
	err = c.DB.QueryRow(ctx, `INSERT INTO os_notes (domain, title, content, entity_refs, tags, lead_id)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, domain, title, tags, created_at`,
		in.Domain, strings.TrimSpace(in.Title), in.Content, refsJSON, tags, leadID).
		Scan(&n.NoteID, &n.Domain, &n.Title, &n.Tags, &n.CreatedAt)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// normalizeNoteTags trims and drops empty and repeated tags, keeping their order.
func normalizeNoteTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

type searchNotesInput struct {
	Query     string      `json:"query"`
	Domain    string      `json:"domain"`
	Limit     int         `json:"limit"`
	EntityRef *contextRef `json:"entity_ref"`
}

type noteHit struct {
	note
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}

type searchNotesOutput struct {
	Results []noteHit `json:"results"`
	Count   int       `json:"count"`
}

// searchNotes finds notes by full-text match (stemmed words, websearch syntax) or a plain substring for
// partial words; full-text matches rank first. An empty query lists the newest notes.
func searchNotes(ctx context.Context, c *executor.Call, in searchNotesInput) (*searchNotesOutput, error) {
	ref, err := in.EntityRef.normalize("entity_ref")
	if err != nil {
		return nil, err
	}
	var refFilter []byte
	if ref != nil {
		if refFilter, err = json.Marshal([]contextRef{*ref}); err != nil {
			return nil, err
		}
	}
	results, err := queryList(ctx, c, func(r pgx.Row) (noteHit, error) {
		var h noteHit
		var rank float32
		var refs []byte
		err := r.Scan(&h.NoteID, &h.Domain, &h.Title, &refs, &h.Tags, &h.CreatedAt, &h.Snippet, &rank)
		if err == nil {
			err = json.Unmarshal(refs, &h.EntityRefs)
		}
		h.Rank = float64(rank)
		return h, err
	}, `
		WITH q AS (SELECT websearch_to_tsquery('english', $1) AS tsq, $4 AS like)
		SELECT n.id, n.domain, n.title, n.entity_refs, n.tags, n.created_at,
			ts_headline('english', CASE WHEN n.content = '' THEN n.title ELSE n.content END, q.tsq,
				'MaxWords=24, MinWords=8, StartSel=«, StopSel=»') AS snippet,
			ts_rank(gem_note_document(n.title, n.content, n.tags), q.tsq)
				+ CASE WHEN n.title ILIKE q.like THEN 0.05 ELSE 0 END AS rank
		FROM os_notes n, q
		WHERE (gem_note_document(n.title, n.content, n.tags) @@ q.tsq OR n.title ILIKE q.like OR n.content ILIKE q.like)
		  AND `+domainFilterSQL("n.domain", 2)+`
		  AND ($5::jsonb IS NULL OR n.entity_refs @> $5::jsonb)
		ORDER BY rank DESC, n.created_at DESC
		LIMIT $3`, in.Query, in.Domain, limitOr(in.Limit, 20), likeContains(in.Query), refFilter)
	if err != nil {
		return nil, err
	}
	return &searchNotesOutput{Results: results, Count: len(results)}, nil
}

// Tasks.

type task struct {
	TaskID         uuid.UUID   `json:"task_id"`
	Title          string      `json:"title"`
	Description    *string     `json:"description"`
	Domain         string      `json:"domain"`
	Priority       string      `json:"priority"`
	Status         string      `json:"status"`
	DueAt          *time.Time  `json:"due_at"`
	ContextRef     *contextRef `json:"context_ref"`
	CompletionNote *string     `json:"completion_note"`
	DeferReason    *string     `json:"defer_reason"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	CompletedAt    *time.Time  `json:"completed_at"`
}

// taskColumns are the columns scanTask reads. A task made with only a lead_id is about that lead.
const taskColumns = `id, title, description, domain, priority, status, due_at,
	coalesce(context_type, CASE WHEN lead_id IS NOT NULL THEN 'lead' END), coalesce(context_id, lead_id::text),
	completion_note, defer_reason, created_at, updated_at, completed_at`

func scanTask(row pgx.Row) (task, error) {
	var t task
	var refType, refID *string
	err := row.Scan(&t.TaskID, &t.Title, &t.Description, &t.Domain, &t.Priority, &t.Status, &t.DueAt, &refType, &refID,
		&t.CompletionNote, &t.DeferReason, &t.CreatedAt, &t.UpdatedAt, &t.CompletedAt)
	t.ContextRef = refFromColumns(refType, refID)
	return t, err
}

// lockTask locks a task for the rest of the call and returns it.
func lockTask(ctx context.Context, c *executor.Call, taskID string) (task, error) {
	id, err := parseRecordID("task", taskID)
	if err != nil {
		return task{}, err
	}
	t, err := scanTask(c.DB.QueryRow(ctx, `SELECT `+taskColumns+` FROM os_tasks WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return task{}, notFoundIfNoRows(err, "task", id)
	}
	return t, nil
}

// newTask is a task to insert (os.create_task, and other tools that create tasks).
type newTask struct {
	Title       string
	Domain      string
	Description *string
	Priority    string
	DueAt       *time.Time
	ContextRef  *contextRef
}

// insertTask checks a new task's context_ref and inserts the task.
func insertTask(ctx context.Context, db executor.DB, t newTask) (task, error) {
	title := strings.TrimSpace(t.Title)
	if title == "" {
		return task{}, invalidField("title", "is blank")
	}
	ref, leadID, err := resolveRef(ctx, db, "context_ref", t.ContextRef)
	if err != nil {
		return task{}, err
	}
	if t.Priority == "" {
		t.Priority = "normal"
	}
	if t.Domain == "" {
		t.Domain = domainBusiness
	}
	refType, refID := refColumns(ref)
	return scanTask(db.QueryRow(ctx, `INSERT INTO os_tasks (title, domain, description, priority, due_at, context_type, context_id, lead_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+taskColumns,
		title, t.Domain, t.Description, t.Priority, t.DueAt, refType, refID, leadID))
}

type createTaskInput struct {
	Title       string      `json:"title"`
	Domain      string      `json:"domain"`
	Description *string     `json:"description"`
	DueAt       *time.Time  `json:"due_at"`
	ContextRef  *contextRef `json:"context_ref"`
	Priority    string      `json:"priority"`
}

func createTask(ctx context.Context, c *executor.Call, in createTaskInput) (*task, error) {
	t, err := insertTask(ctx, c.DB, newTask{Title: in.Title, Domain: in.Domain, Description: in.Description,
		Priority: in.Priority, DueAt: in.DueAt, ContextRef: in.ContextRef})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

type updateTaskInput struct {
	TaskID string                     `json:"task_id"`
	Patch  map[string]json.RawMessage `json:"patch"`
}

type updateTaskOutput struct {
	TaskID        uuid.UUID `json:"task_id"`
	Task          task      `json:"task"`
	UpdatedFields []string  `json:"updated_fields"`
}

// taskPatchFields are the fields os.update_task's patch may set.
var taskPatchFields = []string{"context_ref", "description", "domain", "due_at", "priority", "title"}

// taskPatch is a checked os.update_task patch: the new value of each field it sets.
type taskPatch struct {
	title       *string
	description optional[string]
	priority    *string
	dueAt       optional[time.Time]
	domain      *string
	contextRef  optional[contextRef]
}

// parseTaskPatch checks every key and value of a patch; a key that is not a task field, or a value of the
// wrong type, is a validation_error naming it.
func parseTaskPatch(patch map[string]json.RawMessage) (taskPatch, error) {
	var p taskPatch
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		raw := patch[k]
		field := "patch." + k
		isNull := string(raw) == "null"
		var s string
		stringValue := func() error {
			if err := json.Unmarshal(raw, &s); err != nil || isNull {
				return invalidField(field, "must be a string")
			}
			return nil
		}
		switch k {
		case "title":
			if err := stringValue(); err != nil {
				return p, err
			}
			s = strings.TrimSpace(s)
			if s == "" || utf8.RuneCountInString(s) > 200 {
				return p, invalidField(field, "must be 1 to 200 characters")
			}
			p.title = &s
		case "description":
			p.description.Set = true
			if !isNull {
				if err := stringValue(); err != nil {
					return p, invalidField(field, "must be a string or null")
				}
				p.description.Value = &s
			}
		case "priority":
			if err := stringValue(); err != nil || !slices.Contains([]string{"low", "normal", "high"}, s) {
				return p, invalidField(field, "must be low, normal or high")
			}
			p.priority = &s
		case "domain":
			if err := stringValue(); err != nil || !slices.Contains([]string{domainBusiness, domainPersonal, domainBoth}, s) {
				return p, invalidField(field, "must be business, personal or both")
			}
			p.domain = &s
		case "due_at":
			p.dueAt.Set = true
			if !isNull {
				t, err := time.Parse(time.RFC3339Nano, strings.Trim(string(raw), `"`))
				if err != nil || raw[0] != '"' {
					return p, invalidField(field, "must be an RFC 3339 date-time or null")
				}
				p.dueAt.Value = &t
			}
		case "context_ref":
			p.contextRef.Set = true
			if !isNull {
				var r contextRef
				dec := json.NewDecoder(strings.NewReader(string(raw)))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&r); err != nil {
					return p, invalidField(field, "must be an object {type, id} of strings, or null")
				}
				ref, err := r.normalize(field)
				if err != nil {
					return p, err
				}
				p.contextRef.Value = ref
			}
		default:
			return p, invalidField(field, "is not a task field that can be changed (%s)", strings.Join(taskPatchFields, ", "))
		}
	}
	return p, nil
}

// updateTask applies a patch to a task. Only fields that change are written, so repeating an update (or an
// empty patch) writes nothing.
func updateTask(ctx context.Context, c *executor.Call, in updateTaskInput) (*updateTaskOutput, error) {
	patch, err := parseTaskPatch(in.Patch)
	if err != nil {
		return nil, err
	}
	current, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	next := current
	updated := []string{}
	if patch.contextRef.Set {
		if v := patch.contextRef.Value; v != nil {
			if _, err := v.check(ctx, c.DB); err != nil {
				return nil, err
			}
		}
		if !samePtr(patch.contextRef.Value, current.ContextRef) {
			next.ContextRef = patch.contextRef.Value
			updated = append(updated, "context_ref")
		}
	}
	if patch.description.Set && !samePtr(patch.description.Value, current.Description) {
		next.Description = patch.description.Value
		updated = append(updated, "description")
	}
	if patch.domain != nil && *patch.domain != current.Domain {
		next.Domain = *patch.domain
		updated = append(updated, "domain")
	}
	if patch.dueAt.Set && !equalTime(patch.dueAt.Value, current.DueAt) {
		next.DueAt = patch.dueAt.Value
		updated = append(updated, "due_at")
	}
	if patch.priority != nil && *patch.priority != current.Priority {
		next.Priority = *patch.priority
		updated = append(updated, "priority")
	}
	if patch.title != nil && *patch.title != current.Title {
		next.Title = *patch.title
		updated = append(updated, "title")
	}
	if len(updated) == 0 {
		return &updateTaskOutput{TaskID: current.TaskID, Task: current, UpdatedFields: updated}, nil
	}
	refType, refID := refColumns(next.ContextRef)
	t, err := scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET title = $2, description = $3, domain = $4, priority = $5,
			due_at = $6, context_type = $7, context_id = $8, lead_id = $9, updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns,
		current.TaskID, next.Title, next.Description, next.Domain, next.Priority, next.DueAt, refType, refID, leadOf(next.ContextRef)))
	if err != nil {
		return nil, err
	}
	return &updateTaskOutput{TaskID: t.TaskID, Task: t, UpdatedFields: updated}, nil
}

// leadOf is the lead a (checked) reference names, or nil.
func leadOf(r *contextRef) *uuid.UUID {
	if r == nil || r.Type != "lead" {
		return nil
	}
	id, err := uuid.Parse(r.ID)
	if err != nil {
		return nil
	}
	return &id
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

type completeTaskInput struct {
	TaskID string  `json:"task_id"`
	Note   *string `json:"note"`
}

type completeTaskOutput struct {
	TaskID           uuid.UUID `json:"task_id"`
	Task             task      `json:"task"`
	AlreadyCompleted bool      `json:"already_completed"`
}

// completeTask marks a task done, keeping the note given. Completing a done task again changes nothing.
func completeTask(ctx context.Context, c *executor.Call, in completeTaskInput) (*completeTaskOutput, error) {
	t, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status == "done" {
		return &completeTaskOutput{TaskID: t.TaskID, Task: t, AlreadyCompleted: true}, nil
	}
	t, err = scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'done', completed_at = now(), completion_note = $2,
			updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns, t.TaskID, in.Note))
	if err != nil {
		return nil, err
	}
	return &completeTaskOutput{TaskID: t.TaskID, Task: t}, nil
}

type listTasksInput struct {
	Status   string `json:"status"`
	Domain   string `json:"domain"`
	Limit    int    `json:"limit"`
	Priority string `json:"priority"`
}

type listTasksOutput struct {
	Tasks []task `json:"tasks"`
	Count int    `json:"count"`
}

// listTasks lists tasks, most urgent and soonest due first. Open means not done: open and deferred tasks.
func listTasks(ctx context.Context, c *executor.Call, in listTasksInput) (*listTasksOutput, error) {
	if in.Status == "" {
		in.Status = "open"
	}
	tasks, err := queryList(ctx, c, scanTask, `SELECT `+taskColumns+` FROM os_tasks
		WHERE CASE $1 WHEN 'open' THEN status <> 'done' WHEN 'done' THEN status = 'done' ELSE true END
		  AND `+domainFilterSQL("domain", 2)+`
		  AND ($3 = '' OR priority = $3)
		ORDER BY array_position(ARRAY['urgent', 'high', 'normal', 'low'], priority), due_at NULLS LAST, created_at
		LIMIT $4`, in.Status, in.Domain, in.Priority, limitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &listTasksOutput{Tasks: tasks, Count: len(tasks)}, nil
}

type deferTaskInput struct {
	TaskID string    `json:"task_id"`
	DueAt  time.Time `json:"due_at"`
	Reason *string   `json:"reason"`
}

type deferTaskOutput struct {
	TaskID         uuid.UUID `json:"task_id"`
	Task           task      `json:"task"`
	PreviousStatus string    `json:"previous_status"`
	DeferredUntil  time.Time `json:"deferred_until"`
}

// deferTask pushes a task back to a later time: its status becomes deferred and its due time the new one.
// Deferring again to the same time changes nothing; a done task cannot be deferred.
func deferTask(ctx context.Context, c *executor.Call, in deferTaskInput) (*deferTaskOutput, error) {
	if in.DueAt.Before(time.Now()) {
		return nil, invalidField("due_at", "(%s) is in the past: a task is deferred to a later time", in.DueAt.Format(time.RFC3339))
	}
	t, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	previous := t.Status
	switch {
	case t.Status == "done":
		return nil, executor.Conflict("task %s is done; it cannot be deferred", t.TaskID)
	case t.Status == "deferred" && t.DueAt != nil && t.DueAt.Equal(in.DueAt) && (in.Reason == nil || samePtr(in.Reason, t.DeferReason)):
		return &deferTaskOutput{TaskID: t.TaskID, Task: t, PreviousStatus: previous, DeferredUntil: in.DueAt}, nil
	}
	t, err = scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'deferred', due_at = $2, defer_reason = coalesce($3, defer_reason),
			updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns, t.TaskID, in.DueAt, in.Reason))
	if err != nil {
		return nil, err
	}
	return &deferTaskOutput{TaskID: t.TaskID, Task: t, PreviousStatus: previous, DeferredUntil: in.DueAt}, nil
}

// Health.

// healthQueueLagDegraded is how long the oldest waiting call may have waited before the health check says
// degraded: calls are normally taken up within milliseconds.
const healthQueueLagDegraded = time.Minute

type healthOutput struct {
	Status          string       `json:"status"`
	Checks          healthChecks `json:"checks"`
	ServerTime      time.Time    `json:"server_time"`
	ExecutorVersion string       `json:"executor_version"`
}

type healthChecks struct {
	Database  healthDatabase   `json:"database"`
	Queue     healthQueue      `json:"queue"`
	Executors healthExecutors  `json:"executors"`
	TimeZone  healthTimeZone   `json:"time_zone"`
	Providers []providerHealth `json:"providers"`
}

type healthDatabase struct {
	OK            bool    `json:"ok"`
	LatencyMS     float64 `json:"latency_ms"`
	ServerVersion string  `json:"server_version"`
}

// healthQueueCountCap bounds the health check's counts of waiting and running calls.
const healthQueueCountCap = 100

type healthQueue struct {
	OK               bool     `json:"ok"`
	Queued           int64    `json:"queued"`
	Running          int64    `json:"running"`
	OldestQueuedSecs *float64 `json:"oldest_queued_seconds"`
}

type healthExecutors struct {
	OK   bool  `json:"ok"`
	Live int64 `json:"live"`
}

type healthTimeZone struct {
	OK    bool    `json:"ok"`
	Name  string  `json:"name"`
	Error *string `json:"error"`
}

// providerHealth says whether an outside provider is configured; the tools that need it answer
// not_configured until it is.
type providerHealth struct {
	Name        string   `json:"name"`
	Configured  bool     `json:"configured"`
	RequiredEnv []string `json:"required_env"`
	Missing     []string `json:"missing"`
	Error       *string  `json:"error"`
}

// providers lists the outside providers of the business pack's configuration and what each one lacks.
func (p *pack) providers() []providerHealth {
	errText := func(err error) *string {
		if err == nil {
			return nil
		}
		s := err.Error()
		return &s
	}
	list := []providerHealth{
		{Name: "sms", RequiredEnv: smsRequiredEnv, Missing: p.cfg.SMS.missing()},
		{Name: "email", RequiredEnv: emailRequiredEnv, Missing: p.cfg.Email.missing()},
	}
	if len(list[0].Missing) == 0 {
		list[0].Error = errText(p.cfg.SMS.validate())
	}
	if len(list[1].Missing) == 0 {
		_, err := p.cfg.Email.parse()
		list[1].Error = errText(err)
	}
	llm := providerHealth{Name: "llm", RequiredEnv: []string{llmconfig.EnvModel, llmconfig.EnvAPIKey}, Missing: p.cfg.LLM.Missing(),
		Error: errText(p.cfg.LLMError)}
	list = append(list, llm)
	for i := range list {
		if list[i].Missing == nil {
			list[i].Missing = []string{}
		}
		list[i].Configured = len(list[i].Missing) == 0 && list[i].Error == nil
	}
	return list
}

// healthCheck reports on the database, the call queue, the executors, the business time zone and the
// outside providers. Degraded: calls wait longer than healthQueueLagDegraded, or a configuration value
// cannot be used. It reads only cheap things, in one statement (the queue through River's fetch index).
func (p *pack) healthCheck(ctx context.Context, c *executor.Call, _ struct{}) (*healthOutput, error) {
	out := healthOutput{Status: "ok", ExecutorVersion: executor.Version}
	// One round trip: the health check runs often (monitors, make bench's floor), and each statement is one.
	q := &out.Checks.Queue
	start := time.Now()
	// Every part is bounded by River's fetch index, whatever the queue holds: a health check during a
	// backlog of a million calls costs what it costs on an empty queue (counting the whole queue made each
	// check scan it, and draining a backlog of health checks quadratic). The counts are ordered as the index
	// is, so the planner walks it: with statistics that say most jobs are available, a bare LIMIT chose a
	// sequential scan, which reads every finished job before the first available one (a drain of 100,000
	// health checks fell to 150 calls/s).
	if err := c.DB.QueryRow(ctx, `SELECT current_setting('server_version'), now(),
			(SELECT count(*) FROM (SELECT 1 FROM river_job WHERE state = 'available' AND queue = 'default'
				ORDER BY priority, scheduled_at, id LIMIT $1) a),
			(SELECT count(*) FROM (SELECT 1 FROM river_job WHERE state = 'running' AND queue = 'default'
				ORDER BY priority, scheduled_at, id LIMIT $1) r),
			(SELECT extract(epoch FROM now() - scheduled_at)::float8 FROM river_job
				WHERE state = 'available' AND queue = 'default' AND priority = 1 ORDER BY scheduled_at, id LIMIT 1),
			(SELECT count(*) FROM core_executors WHERE stopped_at IS NULL AND dead_at IS NULL)`, healthQueueCountCap).
		Scan(&out.Checks.Database.ServerVersion, &out.ServerTime, &q.Queued, &q.Running, &q.OldestQueuedSecs,
			&out.Checks.Executors.Live); err != nil {
		return nil, fmt.Errorf("error reading the database's state: %w", err)
	}
	if q.OldestQueuedSecs != nil && *q.OldestQueuedSecs < 0 {
		zero := 0.0 // a call scheduled a moment ahead of the statement's clock has not waited yet
		q.OldestQueuedSecs = &zero
	}
	out.Checks.Database.OK = true
	out.Checks.Database.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	q.OK = q.OldestQueuedSecs == nil || *q.OldestQueuedSecs < healthQueueLagDegraded.Seconds()
	out.Checks.Executors.OK = out.Checks.Executors.Live > 0

	out.Checks.TimeZone = healthTimeZone{OK: p.locErr == nil, Name: p.cfg.TimeZone}
	if p.locErr != nil {
		s := p.locErr.Error()
		out.Checks.TimeZone.Error = &s
	}
	out.Checks.Providers = p.providers()

	healthy := q.OK && out.Checks.Executors.OK && out.Checks.TimeZone.OK
	for _, pr := range out.Checks.Providers {
		healthy = healthy && pr.Error == nil
	}
	if !healthy {
		out.Status = "degraded"
	}
	return &out, nil
}
