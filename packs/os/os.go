// Package ospack is the os pack: notes, tasks, reminders, the state snapshot, the audit log and its
// rollback, health. Its tools' registry entries are files of tools/ (packs embeds them); this is their
// order in the registry.
package ospack

// The pack's tools.
const (
	HealthCheck          = "os.health_check"
	GetStateSnapshot     = "os.get_state_snapshot"
	RefreshStateSnapshot = "os.refresh_state_snapshot"
	CreateNote           = "os.create_note"
	SearchNotes          = "os.search_notes"
	CreateTask           = "os.create_task"
	UpdateTask           = "os.update_task"
	CompleteTask         = "os.complete_task"
	DeferTask            = "os.defer_task"
	ListTasks            = "os.list_tasks"
	CreateReminder       = "os.create_reminder"
	AuditLogSearch       = "os.audit_log_search"
	RollbackLastAction   = "os.rollback_last_action"
	ListReminders        = "os.list_reminders"
	CompleteReminder     = "os.complete_reminder"
	DismissReminder      = "os.dismiss_reminder"
)

// Tools are the pack's tools, in the registry's order (the order of tools/list, of the LLM's tools and of the
// help).
var Tools = []string{
	HealthCheck,
	GetStateSnapshot,
	RefreshStateSnapshot,
	CreateNote,
	SearchNotes,
	CreateTask,
	UpdateTask,
	CompleteTask,
	DeferTask,
	ListTasks,
	CreateReminder,
	AuditLogSearch,
	RollbackLastAction,
	ListReminders,
	CompleteReminder,
	DismissReminder,
}
