package ospack

import "time"

// The tools' inputs and results, as their registry entries declare them (tools/*.json): the planner's
// rules build the inputs, the answer's sentences read both. A field the entry leaves optional is omitted
// when empty, so a rule that does not know a value leaves it to the tool's default or the run's context.

// Domains of notes, tasks, reminders and snapshots.
const (
	DomainBusiness = "business"
	DomainPersonal = "personal"
	DomainBoth     = "both"
)

// Task priorities (os.create_task's enum; os.list_tasks also filters on urgent, which older tasks have).
const (
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
	PriorityUrgent = "urgent"
)

// Task statuses os.list_tasks filters on.
const (
	StatusOpen = "open"
	StatusDone = "done"
	StatusAll  = "all"
)

// Ref names a record a task, note or reminder is about: {"type": "lead", "id": "…"}.
type Ref struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// HealthCheckOutput is os.health_check's result (what the answer reads of it).
type HealthCheckOutput struct {
	// Status is ok, degraded or down.
	Status string `json:"status"`
}

// Task is a task as the task tools return it.
type Task struct {
	TaskID      string     `json:"task_id"`
	Title       string     `json:"title"`
	Description *string    `json:"description,omitempty"`
	Domain      string     `json:"domain"`
	Priority    string     `json:"priority"`
	Status      string     `json:"status"`
	DueAt       *time.Time `json:"due_at,omitempty"`
	ContextRef  *Ref       `json:"context_ref,omitempty"`
}

// CreateTaskInput is os.create_task's input.
type CreateTaskInput struct {
	Title       string     `json:"title"`
	Domain      string     `json:"domain"`
	Description *string    `json:"description,omitempty"`
	DueAt       *time.Time `json:"due_at,omitempty"`
	ContextRef  *Ref       `json:"context_ref,omitempty"`
	Priority    string     `json:"priority,omitempty"`
}

// TaskPatch is what os.update_task changes: the fields it sets, and no others.
type TaskPatch struct {
	Title       *string    `json:"title,omitempty"`
	Description *string    `json:"description,omitempty"`
	Priority    *string    `json:"priority,omitempty"`
	DueAt       *time.Time `json:"due_at,omitempty"`
}

// UpdateTaskInput is os.update_task's input.
type UpdateTaskInput struct {
	TaskID string    `json:"task_id,omitempty"`
	Patch  TaskPatch `json:"patch"`
}

// CompleteTaskInput is os.complete_task's input.
type CompleteTaskInput struct {
	TaskID string `json:"task_id,omitempty"`
	Note   string `json:"note,omitempty"`
}

// CompleteTaskOutput is os.complete_task's result.
type CompleteTaskOutput struct {
	TaskID           string `json:"task_id"`
	Task             Task   `json:"task"`
	AlreadyCompleted bool   `json:"already_completed"`
}

// DeferTaskInput is os.defer_task's input.
type DeferTaskInput struct {
	TaskID string    `json:"task_id,omitempty"`
	DueAt  time.Time `json:"due_at"`
	Reason string    `json:"reason,omitempty"`
}

// DeferTaskOutput is os.defer_task's result.
type DeferTaskOutput struct {
	TaskID         string    `json:"task_id"`
	Task           Task      `json:"task"`
	PreviousStatus string    `json:"previous_status"`
	DeferredUntil  time.Time `json:"deferred_until"`
}

// ListTasksInput is os.list_tasks's input.
type ListTasksInput struct {
	Status   string `json:"status,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Priority string `json:"priority,omitempty"`
}

// ListTasksOutput is os.list_tasks's result.
type ListTasksOutput struct {
	Tasks []Task `json:"tasks"`
	Count int    `json:"count"`
}

// CreateNoteInput is os.create_note's input.
type CreateNoteInput struct {
	Domain     string   `json:"domain"`
	Title      string   `json:"title"`
	Content    string   `json:"content"`
	EntityRefs []Ref    `json:"entity_refs,omitempty"`
	Tags       []string `json:"tags,omitempty"`
}

// SearchNotesInput is os.search_notes's input.
type SearchNotesInput struct {
	Query     string `json:"query"`
	Domain    string `json:"domain,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	EntityRef *Ref   `json:"entity_ref,omitempty"`
}

// NoteHit is a note os.search_notes found.
type NoteHit struct {
	NoteID  string `json:"note_id"`
	Domain  string `json:"domain"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
}

// SearchNotesOutput is os.search_notes's result.
type SearchNotesOutput struct {
	Results []NoteHit `json:"results"`
	Count   int       `json:"count"`
}

// CreateReminderInput is os.create_reminder's input.
type CreateReminderInput struct {
	Title      string    `json:"title"`
	RemindAt   time.Time `json:"remind_at"`
	Domain     string    `json:"domain,omitempty"`
	ContextRef *Ref      `json:"context_ref,omitempty"`
	Notes      string    `json:"notes,omitempty"`
}

// AuditLogSearchInput is os.audit_log_search's input.
type AuditLogSearchInput struct {
	Query     string     `json:"query,omitempty"`
	EventType string     `json:"event_type,omitempty"`
	CallID    string     `json:"call_id,omitempty"`
	Tool      string     `json:"tool,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	Limit     int        `json:"limit,omitempty"`
	BeforeID  int64      `json:"before_id,omitempty"`
}

// GetStateSnapshotInput is os.get_state_snapshot's input.
type GetStateSnapshotInput struct {
	Domain string `json:"domain"`
}

// RefreshStateSnapshotInput is os.refresh_state_snapshot's input.
type RefreshStateSnapshotInput struct {
	Domain string     `json:"domain"`
	Since  *time.Time `json:"since,omitempty"`
}

// RollbackInput is os.rollback_last_action's input.
type RollbackInput struct {
	CallID string `json:"call_id,omitempty"`
}
