package ospack

import (
	"encoding/json"
	"time"
)

// The tools' inputs and results, as their registry entries declare them (tools/*.json): the planner's
// rules build the inputs and the answer's sentences read both; the executor's handlers (oshandlers) decode the
// inputs and return the results. A field an input leaves optional is omitted when empty, so a rule that does
// not know a value leaves it to the tool's default or the run's context. A result's fields are in the order
// the handler has always written them, and a nullable one is written as null.

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

// Ref names a record a task, note or reminder is about: {"type": "lead", "id": "…"}. Every pack keeps its
// records' references in this form (a context_ref).
type Ref struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Health.

// HealthCheckOutput is os.health_check's result.
type HealthCheckOutput struct {
	// Status is ok, degraded or down.
	Status          string       `json:"status"`
	Checks          HealthChecks `json:"checks"`
	ServerTime      time.Time    `json:"server_time"`
	ExecutorVersion string       `json:"executor_version"`
}

// HealthChecks are what the health check looked at.
type HealthChecks struct {
	Database  HealthDatabase   `json:"database"`
	Queue     HealthQueue      `json:"queue"`
	Executors HealthExecutors  `json:"executors"`
	TimeZone  HealthTimeZone   `json:"time_zone"`
	Providers []ProviderHealth `json:"providers"`
}

// HealthDatabase is the database's part of the health check.
type HealthDatabase struct {
	OK            bool    `json:"ok"`
	LatencyMS     float64 `json:"latency_ms"`
	ServerVersion string  `json:"server_version"`
}

// HealthQueue is the call queue's part: calls waiting and running (each counted up to a bound), and how
// long the oldest has waited.
type HealthQueue struct {
	OK               bool     `json:"ok"`
	Queued           int64    `json:"queued"`
	Running          int64    `json:"running"`
	OldestQueuedSecs *float64 `json:"oldest_queued_seconds"`
}

// HealthExecutors counts the executors alive.
type HealthExecutors struct {
	OK   bool  `json:"ok"`
	Live int64 `json:"live"`
}

// HealthTimeZone says whether the business's time zone (EnvTimeZone) resolves.
type HealthTimeZone struct {
	OK    bool    `json:"ok"`
	Name  string  `json:"name"`
	Error *string `json:"error"`
}

// ProviderHealth says whether an outside provider a pack's tools need is configured; the tools that need
// it answer not_configured until it is.
type ProviderHealth struct {
	Name        string   `json:"name"`
	Configured  bool     `json:"configured"`
	RequiredEnv []string `json:"required_env"`
	Missing     []string `json:"missing"`
	Error       *string  `json:"error"`
}

// Tasks.

// Task is a task as the task tools return it.
type Task struct {
	TaskID         string     `json:"task_id"`
	Title          string     `json:"title"`
	Description    *string    `json:"description"`
	Domain         string     `json:"domain"`
	Priority       string     `json:"priority"`
	Status         string     `json:"status"`
	DueAt          *time.Time `json:"due_at"`
	ContextRef     *Ref       `json:"context_ref"`
	CompletionNote *string    `json:"completion_note"`
	DeferReason    *string    `json:"defer_reason"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	CompletedAt    *time.Time `json:"completed_at"`
}

// CreateTaskInput is os.create_task's input; its result is the Task.
type CreateTaskInput struct {
	Title       string     `json:"title"`
	Domain      string     `json:"domain"`
	Description *string    `json:"description,omitempty"`
	DueAt       *time.Time `json:"due_at,omitempty"`
	ContextRef  *Ref       `json:"context_ref,omitempty"`
	Priority    string     `json:"priority,omitempty"`
}

// TaskPatch is what os.update_task changes, as a rule builds it: the fields it sets, and no others. (The
// handler reads a patch key by key, since null and left out mean different things.)
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

// UpdateTaskOutput is os.update_task's result.
type UpdateTaskOutput struct {
	TaskID        string   `json:"task_id"`
	Task          Task     `json:"task"`
	UpdatedFields []string `json:"updated_fields"`
}

// CompleteTaskInput is os.complete_task's input.
type CompleteTaskInput struct {
	TaskID string  `json:"task_id,omitempty"`
	Note   *string `json:"note,omitempty"`
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
	Reason *string   `json:"reason,omitempty"`
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

// Notes.

// Note is a note as os.create_note returns it.
type Note struct {
	NoteID     string    `json:"note_id"`
	Domain     string    `json:"domain"`
	Title      string    `json:"title"`
	EntityRefs []Ref     `json:"entity_refs"`
	Tags       []string  `json:"tags"`
	CreatedAt  time.Time `json:"created_at"`
}

// CreateNoteInput is os.create_note's input; its result is the Note.
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

// NoteHit is a note os.search_notes found: the note, the words that matched and how well.
type NoteHit struct {
	Note
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}

// SearchNotesOutput is os.search_notes's result.
type SearchNotesOutput struct {
	Results []NoteHit `json:"results"`
	Count   int       `json:"count"`
}

// Reminders.

// Reminder is a reminder as the reminder tools return it.
type Reminder struct {
	ReminderID string     `json:"reminder_id"`
	Title      string     `json:"title"`
	Notes      *string    `json:"notes"`
	RemindAt   time.Time  `json:"remind_at"`
	Domain     string     `json:"domain"`
	ContextRef *Ref       `json:"context_ref"`
	Status     string     `json:"status"`
	ResolvedAt *time.Time `json:"resolved_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// CreateReminderInput is os.create_reminder's input; its result is the Reminder.
type CreateReminderInput struct {
	Title      string    `json:"title"`
	RemindAt   time.Time `json:"remind_at"`
	Domain     string    `json:"domain,omitempty"`
	ContextRef *Ref      `json:"context_ref,omitempty"`
	Notes      *string   `json:"notes,omitempty"`
}

// Which reminders os.list_reminders lists (its when).
const (
	RemindersDue      = "due"
	RemindersUpcoming = "upcoming"
	RemindersPending  = "pending"
)

// ListRemindersInput is os.list_reminders's input.
type ListRemindersInput struct {
	When        string `json:"when,omitempty"`
	WithinHours int    `json:"within_hours,omitempty"`
	Domain      string `json:"domain,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// ListRemindersOutput is os.list_reminders's result.
type ListRemindersOutput struct {
	Reminders []Reminder `json:"reminders"`
	Count     int        `json:"count"`
	AsOf      time.Time  `json:"as_of"`
}

// ResolveReminderInput is the input of os.complete_reminder and os.dismiss_reminder.
type ResolveReminderInput struct {
	ReminderID string `json:"reminder_id"`
}

// ResolveReminderOutput is the result of os.complete_reminder and os.dismiss_reminder.
type ResolveReminderOutput struct {
	Reminder        Reminder `json:"reminder"`
	AlreadyResolved bool     `json:"already_resolved"`
}

// The audit log.

// AuditLogSearchInput is os.audit_log_search's input.
type AuditLogSearchInput struct {
	Query     string     `json:"query,omitempty"`
	EventType string     `json:"event_type,omitempty"`
	CallID    string     `json:"call_id,omitempty"`
	Tool      string     `json:"tool,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	Limit     int        `json:"limit,omitempty"`
	BeforeID  *int64     `json:"before_id,omitempty"`
}

// AuditWrite is one line of a receipt's effects.db_writes, without the rows' ids.
type AuditWrite struct {
	Table string `json:"table"`
	Op    string `json:"op"`
	Count int    `json:"count"`
}

// AuditItem is one receipt os.audit_log_search found, with what its call was.
type AuditItem struct {
	ReceiptID      int64           `json:"receipt_id"`
	CallID         string          `json:"call_id"`
	Tool           string          `json:"tool"`
	Status         string          `json:"status"`
	ErrorCode      *string         `json:"error_code"`
	ErrorMessage   *string         `json:"error_message"`
	IdempotencyHit bool            `json:"idempotency_hit"`
	Attempt        int             `json:"attempt"`
	DurationMS     float64         `json:"duration_ms"`
	FinishedAt     time.Time       `json:"finished_at"`
	RequestedBy    *string         `json:"requested_by"`
	Agent          *string         `json:"agent"`
	RunID          *string         `json:"run_id"`
	Summary        json.RawMessage `json:"summary"`
	DBWrites       []AuditWrite    `json:"db_writes"`
	OutsideEffects bool            `json:"outside_effects"`
	RolledBackBy   *string         `json:"rolled_back_by"`
	Undoable       bool            `json:"undoable"`
}

// AuditLogSearchOutput is os.audit_log_search's result: a page of receipts, newest first, and the
// before_id of the next page (null on the last).
type AuditLogSearchOutput struct {
	Items        []AuditItem `json:"items"`
	Count        int         `json:"count"`
	NextBeforeID *int64      `json:"next_before_id"`
}

// Snapshots.

// GetStateSnapshotInput is os.get_state_snapshot's input.
type GetStateSnapshotInput struct {
	Domain string `json:"domain"`
}

// Where the state os.get_state_snapshot returns comes from (its source).
const (
	SnapshotStored   = "stored"
	SnapshotComputed = "computed"
)

// GetStateSnapshotOutput is os.get_state_snapshot's result. SnapshotID is null for a state computed now
// (no snapshot was ever stored).
type GetStateSnapshotOutput struct {
	SnapshotID *string         `json:"snapshot_id"`
	Domain     string          `json:"domain"`
	AsOf       time.Time       `json:"as_of"`
	Since      time.Time       `json:"since"`
	Source     string          `json:"source"`
	AgeSeconds float64         `json:"age_seconds"`
	State      json.RawMessage `json:"state"`
}

// RefreshStateSnapshotInput is os.refresh_state_snapshot's input.
type RefreshStateSnapshotInput struct {
	Domain string     `json:"domain"`
	Since  *time.Time `json:"since,omitempty"`
}

// RefreshStateSnapshotOutput is os.refresh_state_snapshot's result.
type RefreshStateSnapshotOutput struct {
	SnapshotID string          `json:"snapshot_id"`
	Domain     string          `json:"domain"`
	AsOf       time.Time       `json:"as_of"`
	Since      time.Time       `json:"since"`
	State      json.RawMessage `json:"state"`
}

// Rollback.

// RollbackInput is os.rollback_last_action's input.
type RollbackInput struct {
	CallID string `json:"call_id,omitempty"`
}

// RollbackOutput is os.rollback_last_action's result. Reason says why nothing was rolled back (null when
// it was).
type RollbackOutput struct {
	RolledBack   bool     `json:"rolled_back"`
	CallID       string   `json:"call_id"`
	ToolName     string   `json:"tool_name"`
	Reason       *string  `json:"reason"`
	RowsDeleted  int      `json:"rows_deleted"`
	RowsRestored int      `json:"rows_restored"`
	Tables       []string `json:"tables"`
}
