package oshandlers

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// taskColumns are the columns scanTask reads. A task made with only a lead_id is about that lead.
const taskColumns = `id, title, description, domain, priority, status, due_at,
	coalesce(context_type, CASE WHEN lead_id IS NOT NULL THEN 'lead' END), coalesce(context_id, lead_id::text),
	completion_note, defer_reason, created_at, updated_at, completed_at`

func scanTask(row pgx.Row) (ospack.Task, error) {
	var t ospack.Task
	var refType, refID *string
	err := row.Scan(&t.TaskID, &t.Title, &t.Description, &t.Domain, &t.Priority, &t.Status, &t.DueAt, &refType, &refID,
		&t.CompletionNote, &t.DeferReason, &t.CreatedAt, &t.UpdatedAt, &t.CompletedAt)
	t.ContextRef = RefFromColumns(refType, refID)
	return t, err
}

// lockTask locks a task for the rest of the call and returns it.
func lockTask(ctx context.Context, c *executor.Call, taskID string) (ospack.Task, error) {
	id, err := executor.RecordID("task_id", taskID)
	if err != nil {
		return ospack.Task{}, err
	}
	t, err := scanTask(c.DB.QueryRow(ctx, `SELECT `+taskColumns+` FROM os_tasks WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return ospack.Task{}, executor.NotFoundIfNoRows(err, "task", id)
	}
	return t, nil
}

// createTask checks a new task's context_ref and inserts the task.
func (p *pack) createTask(ctx context.Context, c *executor.Call, in ospack.CreateTaskInput) (*ospack.Task, error) {
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return nil, executor.InvalidField("title", "is blank")
	}
	ref, recordID, err := p.records.resolve(ctx, c.DB, "context_ref", in.ContextRef)
	if err != nil {
		return nil, err
	}
	var leadID *uuid.UUID
	if ref != nil && ref.Type == refLead {
		leadID = recordID
	}
	if in.Priority == "" {
		in.Priority = ospack.PriorityNormal
	}
	if in.Domain == "" {
		in.Domain = ospack.DomainBusiness
	}
	refType, refID := RefColumns(ref)
	t, err := scanTask(c.DB.QueryRow(ctx, `INSERT INTO os_tasks (title, domain, description, priority, due_at, context_type, context_id, lead_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+taskColumns,
		title, in.Domain, in.Description, in.Priority, in.DueAt, refType, refID, leadID))
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// updateTaskInput is os.update_task's input as the handler reads it: the patch key by key, since a key left
// out keeps a field and null clears it (ospack.TaskPatch, which rules build, cannot say null).
type updateTaskInput struct {
	TaskID string                     `json:"task_id"`
	Patch  map[string]json.RawMessage `json:"patch"`
}

// taskPatchFields are the fields os.update_task's patch may set.
var taskPatchFields = []string{"context_ref", "description", "domain", "due_at", "priority", "title"}

// taskPatch is a checked os.update_task patch: the new value of each field it sets.
type taskPatch struct {
	title       *string
	description executor.Optional[string]
	priority    *string
	dueAt       executor.Optional[time.Time]
	domain      *string
	contextRef  executor.Optional[ospack.Ref]
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
				return executor.InvalidField(field, "must be a string")
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
				return p, executor.InvalidField(field, "must be 1 to 200 characters")
			}
			p.title = &s
		case "description":
			p.description.Set = true
			if !isNull {
				if err := stringValue(); err != nil {
					return p, executor.InvalidField(field, "must be a string or null")
				}
				p.description.Value = &s
			}
		case "priority":
			if err := stringValue(); err != nil || !slices.Contains([]string{ospack.PriorityLow, ospack.PriorityNormal, ospack.PriorityHigh}, s) {
				return p, executor.InvalidField(field, "must be low, normal or high")
			}
			p.priority = &s
		case "domain":
			if err := stringValue(); err != nil || !slices.Contains([]string{ospack.DomainBusiness, ospack.DomainPersonal, ospack.DomainBoth}, s) {
				return p, executor.InvalidField(field, "must be business, personal or both")
			}
			p.domain = &s
		case "due_at":
			p.dueAt.Set = true
			if !isNull {
				t, err := time.Parse(time.RFC3339Nano, strings.Trim(string(raw), `"`))
				if err != nil || raw[0] != '"' {
					return p, executor.InvalidField(field, "must be an RFC 3339 date-time or null")
				}
				p.dueAt.Value = &t
			}
		case "context_ref":
			p.contextRef.Set = true
			if !isNull {
				var r ospack.Ref
				dec := json.NewDecoder(strings.NewReader(string(raw)))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&r); err != nil {
					return p, executor.InvalidField(field, "must be an object {type, id} of strings, or null")
				}
				ref, err := normalizeRef(field, &r)
				if err != nil {
					return p, err
				}
				p.contextRef.Value = ref
			}
		default:
			return p, executor.InvalidField(field, "is not a task field that can be changed (%s)", strings.Join(taskPatchFields, ", "))
		}
	}
	return p, nil
}

// updateTask applies a patch to a task. Only fields that change are written, so repeating an update (or an
// empty patch) writes nothing.
func (p *pack) updateTask(ctx context.Context, c *executor.Call, in updateTaskInput) (*ospack.UpdateTaskOutput, error) {
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
	// lead_id follows context_ref only when the patch changes it: a lead deleted since left lead_id null
	// (ON DELETE SET NULL) and its id in context_ref, which must not be written back.
	var nextLead *uuid.UUID
	if patch.contextRef.Set {
		if v := patch.contextRef.Value; v != nil {
			id, err := p.records.check(ctx, c.DB, "patch.context_ref", v)
			if err != nil {
				return nil, err
			}
			if v.Type == refLead {
				nextLead = id
			}
		}
		if !executor.SamePtr(patch.contextRef.Value, current.ContextRef) {
			next.ContextRef = patch.contextRef.Value
			updated = append(updated, "context_ref")
		}
	}
	if patch.description.Set && !executor.SamePtr(patch.description.Value, current.Description) {
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
		return &ospack.UpdateTaskOutput{TaskID: current.TaskID, Task: current, UpdatedFields: updated}, nil
	}
	refType, refID := RefColumns(next.ContextRef)
	t, err := scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET title = $2, description = $3, domain = $4, priority = $5,
			due_at = $6, context_type = $7, context_id = $8, lead_id = CASE WHEN $10 THEN $9 ELSE lead_id END, updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns,
		current.TaskID, next.Title, next.Description, next.Domain, next.Priority, next.DueAt, refType, refID, nextLead,
		slices.Contains(updated, "context_ref")))
	if err != nil {
		return nil, err
	}
	return &ospack.UpdateTaskOutput{TaskID: t.TaskID, Task: t, UpdatedFields: updated}, nil
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// completeTask marks a task done, keeping the note given. Completing a done task again changes nothing.
func completeTask(ctx context.Context, c *executor.Call, in ospack.CompleteTaskInput) (*ospack.CompleteTaskOutput, error) {
	t, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status == ospack.StatusDone {
		return &ospack.CompleteTaskOutput{TaskID: t.TaskID, Task: t, AlreadyCompleted: true}, nil
	}
	t, err = scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'done', completed_at = now(), completion_note = $2,
			updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns, t.TaskID, in.Note))
	if err != nil {
		return nil, err
	}
	return &ospack.CompleteTaskOutput{TaskID: t.TaskID, Task: t}, nil
}

// listTasks lists tasks, most urgent and soonest due first. Open means not done: open and deferred tasks.
func listTasks(ctx context.Context, c *executor.Call, in ospack.ListTasksInput) (*ospack.ListTasksOutput, error) {
	if in.Status == "" {
		in.Status = ospack.StatusOpen
	}
	tasks, err := executor.QueryList(ctx, c.DB, scanTask, `SELECT `+taskColumns+` FROM os_tasks
		WHERE CASE $1 WHEN 'open' THEN status <> 'done' WHEN 'done' THEN status = 'done' ELSE true END
		  AND `+domainFilterSQL("domain", 2)+`
		  AND ($3 = '' OR priority = $3)
		ORDER BY array_position(ARRAY['urgent', 'high', 'normal', 'low'], priority), due_at NULLS LAST, created_at
		LIMIT $4`, in.Status, in.Domain, in.Priority, executor.LimitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &ospack.ListTasksOutput{Tasks: tasks, Count: len(tasks)}, nil
}

// deferTask pushes a task back to a later time: its status becomes deferred and its due time the new one.
// Deferring again to the same time changes nothing; a done task cannot be deferred.
func deferTask(ctx context.Context, c *executor.Call, in ospack.DeferTaskInput) (*ospack.DeferTaskOutput, error) {
	if in.DueAt.Before(time.Now()) {
		return nil, executor.InvalidField("due_at", "(%s) is in the past: a task is deferred to a later time", in.DueAt.Format(time.RFC3339))
	}
	t, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	previous := t.Status
	switch {
	case t.Status == ospack.StatusDone:
		return nil, executor.Conflict("task %s is done; it cannot be deferred", t.TaskID)
	case t.Status == "deferred" && t.DueAt != nil && t.DueAt.Equal(in.DueAt) && (in.Reason == nil || executor.SamePtr(in.Reason, t.DeferReason)):
		return &ospack.DeferTaskOutput{TaskID: t.TaskID, Task: t, PreviousStatus: previous, DeferredUntil: in.DueAt}, nil
	}
	t, err = scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'deferred', due_at = $2, defer_reason = coalesce($3, defer_reason),
			updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns, t.TaskID, in.DueAt, in.Reason))
	if err != nil {
		return nil, err
	}
	return &ospack.DeferTaskOutput{TaskID: t.TaskID, Task: t, PreviousStatus: previous, DeferredUntil: in.DueAt}, nil
}
