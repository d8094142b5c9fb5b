package business

import (
	"context"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerOS(h executor.Handlers) {
	h.Func("os.health_check", executor.Typed(healthCheck))
	h.Func("os.create_note", executor.Typed(createNote))
	h.Func("os.search_notes", executor.Typed(searchNotes))
	h.Func("os.create_task", executor.Typed(createTask))
	h.Func("os.update_task", executor.Typed(updateTask))
	h.Func("os.complete_task", executor.Typed(completeTask))
	h.Func("os.list_tasks", executor.Typed(listTasks))
	h.Func("os.defer_task", executor.Typed(deferTask))
}

func healthCheck(ctx context.Context, c *executor.Call, _ struct{}) (map[string]any, error) {
	start := time.Now()
	var version string
	var now time.Time
	if err := c.DB.QueryRow(ctx, `SELECT current_setting('server_version'), now()`).Scan(&version, &now); err != nil {
		return nil, err
	}
	return map[string]any{
		"status": "ok",
		"database": map[string]any{
			"reachable":      true,
			"latency_ms":     float64(time.Since(start).Microseconds()) / 1000,
			"server_version": version,
		},
		"server_time":      now.UTC(),
		"executor_version": executor.Version,
	}, nil
}

type note struct {
	NoteID    uuid.UUID `json:"note_id"`
	Title     string    `json:"title"`
	Kind      string    `json:"kind"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
}

type createNoteInput struct {
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Kind   string   `json:"kind"`
	Tags   []string `json:"tags"`
	LeadID *string  `json:"lead_id"`
}

func createNote(ctx context.Context, c *executor.Call, in createNoteInput) (*note, error) {
	if in.Kind == "" {
		in.Kind = "business"
	}
	if in.Tags == nil {
		in.Tags = []string{}
	}
	leadID, err := nullableUUID(in.LeadID)
	if err != nil {
		return nil, err
	}
	var n note
	err = c.DB.QueryRow(ctx, `INSERT INTO os_notes (kind, title, body, tags, lead_id) VALUES ($1, $2, $3, $4, $5)
		RETURNING id, title, kind, tags, created_at`, in.Kind, in.Title, in.Body, in.Tags, leadID).
		Scan(&n.NoteID, &n.Title, &n.Kind, &n.Tags, &n.CreatedAt)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

type searchNotesInput struct {
	Query string `json:"query"`
	Kind  string `json:"kind"`
	Limit int    `json:"limit"`
}

type noteHit struct {
	note
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}

type searchNotesOutput struct {
	Notes []noteHit `json:"notes"`
	Count int       `json:"count"`
}

func searchNotes(ctx context.Context, c *executor.Call, in searchNotesInput) (*searchNotesOutput, error) {
	// Full-text match (stemmed words, websearch syntax), or a plain substring for partial words; full-text
	// matches rank first.
	notes, err := queryList(ctx, c, func(r pgx.Row) (noteHit, error) {
		var h noteHit
		var rank float32
		err := r.Scan(&h.NoteID, &h.Title, &h.Kind, &h.Tags, &h.CreatedAt, &h.Snippet, &rank)
		h.Rank = float64(rank)
		return h, err
	}, `
		WITH q AS (SELECT websearch_to_tsquery('english', $1) AS tsq, $4 AS like)
		SELECT n.id, n.title, n.kind, n.tags, n.created_at,
			ts_headline('english', CASE WHEN n.body = '' THEN n.title ELSE n.body END, q.tsq,
				'MaxWords=24, MinWords=8, StartSel=«, StopSel=»') AS snippet,
			ts_rank(gem_note_document(n.title, n.body, n.tags), q.tsq)
				+ CASE WHEN n.title ILIKE q.like THEN 0.05 ELSE 0 END AS rank
		FROM os_notes n, q
		WHERE (gem_note_document(n.title, n.body, n.tags) @@ q.tsq OR n.title ILIKE q.like OR n.body ILIKE q.like)
		  AND ($2 = '' OR n.kind = $2)
		ORDER BY rank DESC, n.created_at DESC
		LIMIT $3`, in.Query, in.Kind, limitOr(in.Limit, 20), likeContains(in.Query))
	if err != nil {
		return nil, err
	}
	return &searchNotesOutput{Notes: notes, Count: len(notes)}, nil
}

type task struct {
	TaskID      uuid.UUID  `json:"task_id"`
	Title       string     `json:"title"`
	Description *string    `json:"description"`
	Priority    string     `json:"priority"`
	Status      string     `json:"status"`
	DueAt       *time.Time `json:"due_at"`
	LeadID      *uuid.UUID `json:"lead_id"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

const taskColumns = `id, title, description, priority, status, due_at, lead_id, created_at, updated_at, completed_at`

func scanTask(row pgx.Row) (task, error) {
	var t task
	err := row.Scan(&t.TaskID, &t.Title, &t.Description, &t.Priority, &t.Status, &t.DueAt, &t.LeadID,
		&t.CreatedAt, &t.UpdatedAt, &t.CompletedAt)
	return t, err
}

// lockTask locks a task for the rest of the call and returns it.
func lockTask(ctx context.Context, c *executor.Call, id uuid.UUID) (task, error) {
	t, err := scanTask(c.DB.QueryRow(ctx, `SELECT `+taskColumns+` FROM os_tasks WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return task{}, notFoundIfNoRows(err, "task", id)
	}
	return t, nil
}

type createTaskInput struct {
	Title       string  `json:"title"`
	Description *string `json:"description"`
	Priority    string  `json:"priority"`
	DueAt       *string `json:"due_at"`
	LeadID      *string `json:"lead_id"`
}

func createTask(ctx context.Context, c *executor.Call, in createTaskInput) (*task, error) {
	if in.Priority == "" {
		in.Priority = "normal"
	}
	due, err := parseTime(in.DueAt)
	if err != nil {
		return nil, err
	}
	leadID, err := nullableUUID(in.LeadID)
	if err != nil {
		return nil, err
	}
	t, err := scanTask(c.DB.QueryRow(ctx, `INSERT INTO os_tasks (title, description, priority, due_at, lead_id)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+taskColumns, in.Title, in.Description, in.Priority, due, leadID))
	if err != nil {
		return nil, err
	}
	return &t, nil
}

type updateTaskInput struct {
	TaskID      uuid.UUID        `json:"task_id"`
	Title       optional[string] `json:"title"`
	Description optional[string] `json:"description"`
	Priority    optional[string] `json:"priority"`
	DueAt       optional[string] `json:"due_at"`
}

type updateTaskOutput struct {
	Task          task     `json:"task"`
	UpdatedFields []string `json:"updated_fields"`
}

func updateTask(ctx context.Context, c *executor.Call, in updateTaskInput) (*updateTaskOutput, error) {
	due, err := parseTime(in.DueAt.Value)
	if err != nil {
		return nil, err
	}
	current, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	// Only fields that change are written, so a repeated update writes nothing.
	updated := []string{}
	if in.Title.Set && in.Title.Value != nil && *in.Title.Value != current.Title {
		updated = append(updated, "title")
	}
	if in.Description.Set && !equalPtr(in.Description.Value, current.Description) {
		updated = append(updated, "description")
	}
	if in.Priority.Set && in.Priority.Value != nil && *in.Priority.Value != current.Priority {
		updated = append(updated, "priority")
	}
	if in.DueAt.Set && !equalTime(due, current.DueAt) {
		updated = append(updated, "due_at")
	}
	if len(updated) == 0 {
		return &updateTaskOutput{Task: current, UpdatedFields: updated}, nil
	}
	t, err := scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET
			title = CASE WHEN $2 THEN $3 ELSE title END,
			description = CASE WHEN $4 THEN $5 ELSE description END,
			priority = CASE WHEN $6 THEN $7 ELSE priority END,
			due_at = CASE WHEN $8 THEN $9 ELSE due_at END,
			updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns,
		in.TaskID, in.Title.Value != nil, in.Title.Value, in.Description.Set, in.Description.Value,
		in.Priority.Value != nil, in.Priority.Value, in.DueAt.Set, due))
	if err != nil {
		return nil, err
	}
	return &updateTaskOutput{Task: t, UpdatedFields: updated}, nil
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

type completeTaskInput struct {
	TaskID uuid.UUID `json:"task_id"`
}

type completeTaskOutput struct {
	Task             task `json:"task"`
	AlreadyCompleted bool `json:"already_completed"`
}

func completeTask(ctx context.Context, c *executor.Call, in completeTaskInput) (*completeTaskOutput, error) {
	t, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status == "done" {
		return &completeTaskOutput{Task: t, AlreadyCompleted: true}, nil
	}
	t, err = scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'done', completed_at = now(), updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns, in.TaskID))
	if err != nil {
		return nil, err
	}
	return &completeTaskOutput{Task: t}, nil
}

type listTasksInput struct {
	Status   string  `json:"status"`
	Priority string  `json:"priority"`
	LeadID   *string `json:"lead_id"`
	Limit    int     `json:"limit"`
}

type listTasksOutput struct {
	Tasks []task `json:"tasks"`
	Count int    `json:"count"`
}

func listTasks(ctx context.Context, c *executor.Call, in listTasksInput) (*listTasksOutput, error) {
	if in.Status == "" {
		in.Status = "open"
	}
	leadID, err := nullableUUID(in.LeadID)
	if err != nil {
		return nil, err
	}
	tasks, err := queryList(ctx, c, scanTask, `SELECT `+taskColumns+` FROM os_tasks
		WHERE ($1 = 'any' OR status = $1) AND ($2 = '' OR priority = $2) AND ($3::uuid IS NULL OR lead_id = $3)
		ORDER BY array_position(ARRAY['urgent', 'high', 'normal', 'low'], priority), due_at NULLS LAST, created_at
		LIMIT $4`, in.Status, in.Priority, leadID, limitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &listTasksOutput{Tasks: tasks, Count: len(tasks)}, nil
}

type deferTaskInput struct {
	TaskID uuid.UUID `json:"task_id"`
	Until  time.Time `json:"until"`
}

type deferTaskOutput struct {
	Task           task      `json:"task"`
	PreviousStatus string    `json:"previous_status"`
	DeferredUntil  time.Time `json:"deferred_until"`
}

// deferTask pushes a task back to a later time: its status becomes deferred and its due time the new one.
// Deferring again to the same time changes nothing; a done task cannot be deferred.
func deferTask(ctx context.Context, c *executor.Call, in deferTaskInput) (*deferTaskOutput, error) {
	if in.Until.Before(time.Now()) {
		return nil, executor.Invalid("until (%s) is in the past: a task is deferred to a later time", in.Until.Format(time.RFC3339))
	}
	t, err := lockTask(ctx, c, in.TaskID)
	if err != nil {
		return nil, err
	}
	previous := t.Status
	switch {
	case t.Status == "done":
		return nil, executor.Conflict("task %s is done; it cannot be deferred", in.TaskID)
	case t.Status == "deferred" && t.DueAt != nil && t.DueAt.Equal(in.Until):
		return &deferTaskOutput{Task: t, PreviousStatus: previous, DeferredUntil: in.Until}, nil
	}
	t, err = scanTask(c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'deferred', due_at = $2, updated_at = now()
		WHERE id = $1 RETURNING `+taskColumns, in.TaskID, in.Until))
	if err != nil {
		return nil, err
	}
	return &deferTaskOutput{Task: t, PreviousStatus: previous, DeferredUntil: in.Until}, nil
}
