package main

import (
	"time"

	"github.com/gemhq/gem/brain/api"
	ospack "github.com/gemhq/gem/packs/os"
)

// openAPIExamples are the OpenAPI description's examples that name tools, from the os pack's contract: a run
// that makes a task (a real answer of POST /brain/run, recorded once) and a call that saves a note.
func openAPIExamples() api.OpenAPIExamples {
	const callID, taskID = "01a244c8-4ddf-76fb-a15d-a79fb4f9e5df", "fd2760d4-9dd3-480e-bc11-8808e4b9f772"
	dueAt := time.Date(2026, 12, 6, 17, 0, 0, 0, time.FixedZone("AEDT", 11*3600))
	dueUTC := dueAt.UTC()
	input := ospack.CreateTaskInput{Title: "call John", Domain: ospack.DomainBusiness, Priority: ospack.PriorityHigh, DueAt: &dueAt}
	made := time.Date(2026, 12, 5, 5, 58, 27, 619412000, time.UTC) // while the call ran (started_at, finished_at)
	result := ospack.Task{TaskID: taskID, Title: "call John", Domain: ospack.DomainBusiness, Priority: ospack.PriorityHigh,
		Status: ospack.StatusOpen, DueAt: &dueUTC, CreatedAt: made, UpdatedAt: made}
	return api.OpenAPIExamples{
		RunMessage: "create a task to call John tomorrow, urgent",
		RunTool:    ospack.CreateTask,
		RunAnswer: map[string]any{
			"ok": true, "run_id": "01a244c8-4ddf-70ef-a662-e80cbaad7975", "status": "completed", "requested_by": "local",
			"decision": map[string]any{"mode_used": "enqueue_and_wait", "planner": "rules", "reason": "matched create_task", "rules": []string{"create_task"}},
			"planned_tool_calls": []any{map[string]any{"tool_name": ospack.CreateTask, "call_id": callID, "idempotency_key": nil,
				"input":  input,
				"reason": `"create a task to call John tomorrow, urgent" matched rule create_task`, "rule": "create_task"}},
			"enqueued": []any{map[string]any{"call_id": callID, "tool_name": ospack.CreateTask}},
			"receipts": []any{map[string]any{"call_id": callID, "tool": ospack.CreateTask, "tool_name": ospack.CreateTask,
				"status": "succeeded", "attempt": 1, "duration_ms": 18.312, "idempotency_hit": false, "worker": "executor-1",
				"started_at": "2026-12-05T05:58:27.605674Z", "finished_at": "2026-12-05T05:58:27.623986Z",
				"effects": map[string]any{"db_writes": []any{map[string]any{"table": "os_tasks", "op": "insert", "count": 1, "ids": []string{taskID}}}},
				"result":  result,
				"summary": map[string]any{"result.task_id": taskID}}},
			"assistant_message": "Created task “call John” (high priority, due Sun 6 Dec 17:00).",
			"next_actions":      []string{`when it is done: "complete task ` + taskID + `"`},
			"errors":            []any{},
		},
		CallTool:  ospack.CreateNote,
		CallInput: ospack.CreateNoteInput{Domain: ospack.DomainBusiness, Title: "Gutter colours", Content: "Monument or Surfmist"},
	}
}
