package oshandlers

import (
	"context"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// reminderColumns are the columns scanReminder reads. A reminder written with only a lead_id or task_id is
// about that record.
const reminderColumns = `id, title, notes, remind_at, domain,
	coalesce(context_type, CASE WHEN task_id IS NOT NULL THEN 'task' WHEN lead_id IS NOT NULL THEN 'lead' END),
	coalesce(context_id, task_id::text, lead_id::text), status, resolved_at, created_at, updated_at`

func scanReminder(row pgx.Row) (ospack.Reminder, error) {
	var r ospack.Reminder
	var refType, refID *string
	err := row.Scan(&r.ReminderID, &r.Title, &r.Notes, &r.RemindAt, &r.Domain, &refType, &refID, &r.Status, &r.ResolvedAt,
		&r.CreatedAt, &r.UpdatedAt)
	r.ContextRef = RefFromColumns(refType, refID)
	return r, err
}

// InsertReminder inserts a reminder in the caller's transaction, for a tool of a later pack that schedules
// one (personal.create_commitment and personal.boundary_set set one to review what they wrote). Only the os
// pack's own records are known to it: a reference to a task, note or reminder is checked (not_found when it
// is missing), and one to a task fills task_id, so deleting the task clears the link. A reference of any
// other type, a lead's included, is kept as given and fills no column: the caller checks it (or has just
// written the record).
func InsertReminder(ctx context.Context, db executor.DB, in ospack.CreateReminderInput) (ospack.Reminder, error) {
	return insertReminder(ctx, db, ownRecords, in)
}

// insertReminder checks a new reminder's context_ref against rs and inserts it; a reference to a task, or
// to a lead when rs declares leads, also fills task_id or lead_id, so deleting that record clears the link.
func insertReminder(ctx context.Context, db executor.DB, rs records, in ospack.CreateReminderInput) (ospack.Reminder, error) {
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return ospack.Reminder{}, executor.InvalidField("title", "is blank")
	}
	ref, recordID, err := rs.resolve(ctx, db, "context_ref", in.ContextRef)
	if err != nil {
		return ospack.Reminder{}, err
	}
	var leadID, taskID *uuid.UUID
	if ref != nil {
		switch ref.Type {
		case refLead:
			leadID = recordID
		case refTask:
			taskID = recordID
		}
	}
	if in.Domain == "" {
		in.Domain = ospack.DomainBusiness
	}
	refType, refID := RefColumns(ref)
	return scanReminder(db.QueryRow(ctx, `INSERT INTO os_reminders (title, remind_at, domain, notes, context_type, context_id, lead_id, task_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+reminderColumns,
		title, in.RemindAt, in.Domain, in.Notes, refType, refID, leadID, taskID))
}

func (p *pack) createReminder(ctx context.Context, c *executor.Call, in ospack.CreateReminderInput) (*ospack.Reminder, error) {
	r, err := insertReminder(ctx, c.DB, p.records, in)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// listReminders lists pending reminders: due (the time has come), upcoming (due within the next
// within_hours) or pending (all of them), soonest first.
func listReminders(ctx context.Context, c *executor.Call, in ospack.ListRemindersInput) (*ospack.ListRemindersOutput, error) {
	if in.When == "" {
		in.When = ospack.RemindersDue
	}
	var asOf time.Time
	if err := c.DB.QueryRow(ctx, `SELECT now()`).Scan(&asOf); err != nil {
		return nil, err
	}
	list, err := executor.QueryList(ctx, c.DB, scanReminder, `SELECT `+reminderColumns+` FROM os_reminders
		WHERE status = 'pending'
		  AND CASE $1
		      WHEN 'due' THEN remind_at <= $2
		      WHEN 'upcoming' THEN remind_at > $2 AND remind_at <= $2 + make_interval(hours => $3)
		      ELSE true END
		  AND `+domainFilterSQL("domain", 5)+`
		ORDER BY remind_at, created_at LIMIT $4`, in.When, asOf, executor.LimitOr(in.WithinHours, 24*7), executor.LimitOr(in.Limit, 50), in.Domain)
	if err != nil {
		return nil, err
	}
	return &ospack.ListRemindersOutput{Reminders: list, Count: len(list), AsOf: asOf}, nil
}

// resolveReminder completes or dismisses a pending reminder. Doing the same again changes nothing; a
// reminder already resolved the other way is a conflict.
func resolveReminder(status string) func(ctx context.Context, c *executor.Call, in ospack.ResolveReminderInput) (*ospack.ResolveReminderOutput, error) {
	return func(ctx context.Context, c *executor.Call, in ospack.ResolveReminderInput) (*ospack.ResolveReminderOutput, error) {
		id, err := executor.RecordID("reminder_id", in.ReminderID)
		if err != nil {
			return nil, err
		}
		r, err := scanReminder(c.DB.QueryRow(ctx, `SELECT `+reminderColumns+` FROM os_reminders WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return nil, executor.NotFoundIfNoRows(err, "reminder", id)
		}
		switch r.Status {
		case status:
			return &ospack.ResolveReminderOutput{Reminder: r, AlreadyResolved: true}, nil
		case "pending":
		default:
			return nil, executor.Conflict("reminder %s is already %s", id, r.Status)
		}
		r, err = scanReminder(c.DB.QueryRow(ctx, `UPDATE os_reminders SET status = $2, resolved_at = now(), updated_at = now()
			WHERE id = $1 RETURNING `+reminderColumns, id, status))
		if err != nil {
			return nil, err
		}
		return &ospack.ResolveReminderOutput{Reminder: r}, nil
	}
}
