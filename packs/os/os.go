// Package ospack is the os pack: notes, tasks, reminders, the state snapshot, the audit log and its
// rollback, health. Its tools' registry entries are files of tools/ (packs embeds them); this is their
// order in the registry.
package ospack

// Tools are the pack's tools, in the registry's order (the order of tools/list, of the LLM's tools and of the
// help).
var Tools = []string{
	"os.health_check",
	"os.get_state_snapshot",
	"os.refresh_state_snapshot",
	"os.create_note",
	"os.search_notes",
	"os.create_task",
	"os.update_task",
	"os.complete_task",
	"os.defer_task",
	"os.list_tasks",
	"os.create_reminder",
	"os.audit_log_search",
	"os.rollback_last_action",
	"os.list_reminders",
	"os.complete_reminder",
	"os.dismiss_reminder",
}
