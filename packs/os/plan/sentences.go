package osplan

import (
	"fmt"
	"strings"

	ospack "github.com/gemhq/gem/packs/os"

	"github.com/gemhq/gem/brain/run"
)

// Sentences are what the answer says of the pack's succeeded calls.
var Sentences = run.Sentences{
	ospack.HealthCheck: run.Says(func(_ struct{}, out ospack.HealthCheckOutput, _ run.When) string {
		return fmt.Sprintf("GEM is %s.", out.Status)
	}, nil),
	ospack.CreateTask: run.Says(func(in ospack.CreateTaskInput, _ ospack.Task, when run.When) string {
		var details []string
		if in.Priority != "" {
			details = append(details, in.Priority+" priority")
		}
		if in.Domain == ospack.DomainPersonal {
			details = append(details, ospack.DomainPersonal)
		}
		if in.DueAt != nil {
			details = append(details, "due "+when(*in.DueAt))
		}
		return fmt.Sprintf("Created task “%s”%s.", in.Title, inBrackets(details))
	}, func(_ ospack.CreateTaskInput, out ospack.Task, has func(string) bool) []string {
		if !has(ospack.CompleteTask) {
			return nil
		}
		return []string{fmt.Sprintf("when it is done: \"complete task %s\"", out.TaskID)}
	}),
	ospack.CreateNote: run.Says(func(in ospack.CreateNoteInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Saved a %s note: “%s”.", in.Domain, in.Title)
	}, nil),
	ospack.CompleteTask: run.Says(func(_ ospack.CompleteTaskInput, out ospack.CompleteTaskOutput, _ run.When) string {
		if out.Task.Title != "" {
			return fmt.Sprintf("Marked task “%s” done.", out.Task.Title)
		}
		return fmt.Sprintf("Marked task %s done.", out.TaskID)
	}, nil),
	ospack.ListTasks: run.Says(func(_ ospack.ListTasksInput, out ospack.ListTasksOutput, when run.When) string {
		return run.List(out.Tasks, "task", "tasks", func(t ospack.Task) string {
			var details []string
			if t.Priority != "" {
				details = append(details, t.Priority)
			}
			if t.DueAt != nil {
				details = append(details, "due "+when(*t.DueAt))
			}
			return t.Title + inBrackets(details)
		})
	}, nil),
	ospack.SearchNotes: run.Says(func(_ ospack.SearchNotesInput, out ospack.SearchNotesOutput, _ run.When) string {
		return run.List(out.Results, "note", "notes", func(n ospack.NoteHit) string { return n.Title })
	}, nil),
	ospack.CreateReminder: run.Says(func(in ospack.CreateReminderInput, _ struct{}, when run.When) string {
		return fmt.Sprintf("I will remind you to %s on %s.", in.Title, when(in.RemindAt))
	}, nil),
}

// inBrackets is " (a, b)", or "" for no details.
func inBrackets(details []string) string {
	if len(details) == 0 {
		return ""
	}
	return " (" + strings.Join(details, ", ") + ")"
}
