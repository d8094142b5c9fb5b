package business

import (
	"context"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerReminders(h executor.Handlers) {
	h.Func("os.create_reminder", executor.Typed(createReminder))
	h.Func("os.list_reminders", executor.Typed(listReminders))
	h.Func("os.complete_reminder", executor.Typed(resolveReminder("done")))
	h.Func("os.dismiss_reminder", executor.Typed(resolveReminder("dismissed")))
}

type reminder struct {
	ReminderID uuid.UUID   `json:"reminder_id"`
	Title      string      `json:"title"`
	Notes      *string     `json:"notes"`
	RemindAt   time.Time   `json:"remind_at"`
	Domain     string      `json:"domain"`
	ContextRef *contextRef `json:"context_ref"`
	Status     string      `json:"status"`
	ResolvedAt *time.Time  `json:"resolved_at"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
}

// reminderColumns are the columns scanReminder reads. A reminder written with only a lead_id or task_id is
// about that record.
const reminderColumns = `id, title, notes, remind_at, domain,
	coalesce(context_type, CASE WHEN task_id IS NOT NULL THEN 'task' WHEN lead_id IS NOT NULL THEN 'lead' END),
	coalesce(context_id, task_id::text, lead_id::text), status, resolved_at, created_at, updated_at`

func scanReminder(row pgx.Row) (reminder, error) {
	var r reminder
	var refType, refID *string
	err := row.Scan(&r.ReminderID, &r.Title, &r.Notes, &r.RemindAt, &r.Domain, &refType, &refID, &r.Status, &r.ResolvedAt,
		&r.CreatedAt, &r.UpdatedAt)
	r.ContextRef = refFromColumns(refType, refID)
	return r, err
}

// newReminder is a reminder to insert (os.create_reminder, and tools that schedule one, such as
// personal.boundary_set).
type newReminder struct {
	Title      string
	RemindAt   time.Time
	Domain     string
	Notes      *string
	ContextRef *contextRef
}

// insertReminder checks a new reminder's context_ref and inserts it; a reference to a lead or task also
// fills lead_id or task_id, so deleting that record clears the link.
func insertReminder(ctx context.Context, db executor.DB, in newReminder) (reminder, error) {
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return reminder{}, invalidField("title", "is blank")
	}
	ref, err := in.ContextRef.normalize("context_ref")
	if err != nil {
		return reminder{}, err
	}
	var leadID, taskID *uuid.UUID
	if ref != nil {
		id, err := ref.check(ctx, db)
		if err != nil {
			return reminder{}, err
		}
		switch ref.Type {
		case "lead":
			leadID = id
		case "task":
			taskID = id
		}
	}
	if in.Domain == "" {
		in.Domain = domainBusiness
	}
	refType, refID := refColumns(ref)
	return scanReminder(db.QueryRow(ctx, `INSERT INTO os_reminders (title, remind_at, domain, notes, context_type, context_id, lead_id, task_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+reminderColumns,
		title, in.RemindAt, in.Domain, in.Notes, refType, refID, leadID, taskID))
}

type createReminderInput struct {
	Title      string      `json:"title"`
	RemindAt   time.Time   `json:"remind_at"`
	Domain     string      `json:"domain"`
	ContextRef *contextRef `json:"context_ref"`
	Notes      *string     `json:"notes"`
}

func createReminder(ctx context.Context, c *executor.Call, in createReminderInput) (*reminder, error) {
	r, err := insertReminder(ctx, c.DB, newReminder{Title: in.Title, RemindAt: in.RemindAt, Domain: in.Domain,
		Notes: in.Notes, ContextRef: in.ContextRef})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

type listRemindersOutput struct {
	Reminders []reminder `json:"reminders"`
	Count     int        `json:"count"`
	AsOf      time.Time  `json:"as_of"`
}

type listRemindersInput struct {
	When        string `json:"when"`
	WithinHours int    `json:"within_hours"`
	Domain      string `json:"domain"`
	Limit       int    `json:"limit"`
}

// listReminders lists pending reminders: due (the time has come), upcoming (due within the next
// within_hours) or pending (all of them), soonest first.
func listReminders(ctx context.Context, c *executor.Call, in listRemindersInput) (*listRemindersOutput, error) {
	if in.When == "" {
		in.When = "due"
	}
	var asOf time.Time
	if err := c.DB.QueryRow(ctx, `SELECT now()`).Scan(&asOf); err != nil {
		return nil, err
	}
	list, err := queryList(ctx, c, scanReminder, `SELECT `+reminderColumns+` FROM os_reminders
		WHERE status = 'pending'
		  AND CASE $1
		      WHEN 'due' THEN remind_at <= $2
		      WHEN 'upcoming' THEN remind_at > $2 AND remind_at <= $2 + make_interval(hours => $3)
		      ELSE true END
		  AND `+domainFilterSQL("domain", 5)+`
		ORDER BY remind_at, created_at LIMIT $4`, in.When, asOf, limitOr(in.WithinHours, 24*7), limitOr(in.Limit, 50), in.Domain)
	if err != nil {
		return nil, err
	}
	return &listRemindersOutput{Reminders: list, Count: len(list), AsOf: asOf}, nil
}

type resolveReminderInput struct {
	ReminderID uuid.UUID `json:"reminder_id"`
}

type resolveReminderOutput struct {
	Reminder        reminder `json:"reminder"`
	AlreadyResolved bool     `json:"already_resolved"`
}

// resolveReminder completes or dismisses a pending reminder. Doing the same again changes nothing; a
// reminder already resolved the other way is a conflict.
func resolveReminder(status string) func(ctx context.Context, c *executor.Call, in resolveReminderInput) (*resolveReminderOutput, error) {
	return func(ctx context.Context, c *executor.Call, in resolveReminderInput) (*resolveReminderOutput, error) {
		r, err := scanReminder(c.DB.QueryRow(ctx, `SELECT `+reminderColumns+` FROM os_reminders WHERE id = $1 FOR UPDATE`, in.ReminderID))
		if err != nil {
			return nil, notFoundIfNoRows(err, "reminder", in.ReminderID)
		}
		switch r.Status {
		case status:
			return &resolveReminderOutput{Reminder: r, AlreadyResolved: true}, nil
		case "pending":
		default:
			return nil, executor.Conflict("reminder %s is already %s", in.ReminderID, r.Status)
		}
		r, err = scanReminder(c.DB.QueryRow(ctx, `UPDATE os_reminders SET status = $2, resolved_at = now(), updated_at = now()
			WHERE id = $1 RETURNING `+reminderColumns, in.ReminderID, status))
		if err != nil {
			return nil, err
		}
		return &resolveReminderOutput{Reminder: r}, nil
	}
}
