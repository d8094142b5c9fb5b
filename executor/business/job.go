package business

import (
	"context"
	"errors"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerJob(h executor.Handlers) {
	h.Func("job.create_from_accepted_quote", executor.Typed(createJobFromQuote))
	h.Func("job.assign_dates", executor.Typed(assignJobDates))
	h.Func("job.add_site_notes", executor.Typed(addSiteNotes))
	h.Func("job.complete", executor.Typed(completeJob))
}

type job struct {
	JobID           uuid.UUID  `json:"job_id"`
	Number          int64      `json:"number"`
	QuoteID         uuid.UUID  `json:"quote_id"`
	LeadID          uuid.UUID  `json:"lead_id"`
	Status          string     `json:"status"`
	StartDate       *civilDate `json:"start_date"`
	EndDate         *civilDate `json:"end_date"`
	CompletedAt     *time.Time `json:"completed_at"`
	CompletionNotes *string    `json:"completion_notes"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// jobSelect reads jobs from jrows (a CTE returning rows of jobs), with their lead.
const jobSelect = `SELECT j.id, j.number, j.quote_id, q.lead_id, j.status, j.start_date, j.end_date, j.completed_at,
	j.completion_notes, j.created_at, j.updated_at FROM jrows j JOIN quotes q ON q.id = j.quote_id`

func scanJob(row pgx.Row) (job, error) {
	var j job
	err := row.Scan(&j.JobID, &j.Number, &j.QuoteID, &j.LeadID, &j.Status, &j.StartDate, &j.EndDate, &j.CompletedAt,
		&j.CompletionNotes, &j.CreatedAt, &j.UpdatedAt)
	return j, err
}

// lockJob locks a job for the rest of the call and returns it.
func lockJob(ctx context.Context, c *executor.Call, id uuid.UUID) (job, error) {
	j, err := scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (SELECT * FROM jobs WHERE id = $1 FOR UPDATE) `+jobSelect, id))
	if err != nil {
		return job{}, notFoundIfNoRows(err, "job", id)
	}
	return j, nil
}

// updateJob runs an UPDATE ... RETURNING * on jobs and reads the job it returns.
func updateJob(ctx context.Context, c *executor.Call, update string, args ...any) (job, error) {
	j, err := scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (`+update+` RETURNING *) `+jobSelect, args...))
	return j, err
}

type jobCreated struct {
	Job     job  `json:"job"`
	Created bool `json:"created"`
}

type createJobFromQuoteInput struct {
	QuoteID uuid.UUID `json:"quote_id"`
}

// createJobFromQuote makes the job for an accepted quote. A quote has one job: asking again returns it.
func createJobFromQuote(ctx context.Context, c *executor.Call, in createJobFromQuoteInput) (*jobCreated, error) {
	q, err := lockQuote(ctx, c, in.QuoteID)
	if err != nil {
		return nil, err
	}
	if q.Status != "accepted" {
		return nil, executor.Conflict("quote %s is %s: a job is made only from an accepted quote", in.QuoteID, q.Status)
	}
	j, err := scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (SELECT * FROM jobs WHERE quote_id = $1) `+jobSelect, in.QuoteID))
	if err == nil {
		return &jobCreated{Job: j}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	j, err = scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (INSERT INTO jobs (quote_id) VALUES ($1) RETURNING *) `+jobSelect, in.QuoteID))
	if err != nil {
		return nil, err
	}
	return &jobCreated{Job: j, Created: true}, nil
}

type jobChanged struct {
	Job     job  `json:"job"`
	Changed bool `json:"changed"`
}

type assignJobDatesInput struct {
	JobID     uuid.UUID  `json:"job_id"`
	StartDate civilDate  `json:"start_date"`
	EndDate   *civilDate `json:"end_date"`
}

// assignJobDates sets the days a job runs (end_date defaults to start_date) and schedules it. A completed
// job's dates cannot change.
func assignJobDates(ctx context.Context, c *executor.Call, in assignJobDatesInput) (*jobChanged, error) {
	end := in.StartDate
	if in.EndDate != nil {
		end = *in.EndDate
	}
	if end.before(in.StartDate) {
		return nil, executor.Invalid("end_date %s is before start_date %s", end, in.StartDate)
	}
	j, err := lockJob(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	switch {
	case j.Status == "completed":
		return nil, executor.Conflict("job %s is completed: its dates cannot change", in.JobID)
	case j.Status == "scheduled" && j.StartDate.equal(in.StartDate) && j.EndDate.equal(end):
		return &jobChanged{Job: j}, nil
	}
	j, err = updateJob(ctx, c, `UPDATE jobs SET status = 'scheduled', start_date = $2, end_date = $3, updated_at = now() WHERE id = $1`,
		in.JobID, in.StartDate, end)
	if err != nil {
		return nil, err
	}
	return &jobChanged{Job: j, Changed: true}, nil
}

type siteNote struct {
	NoteID    uuid.UUID `json:"note_id"`
	Note      string    `json:"note"`
	Author    *string   `json:"author"`
	CreatedAt time.Time `json:"created_at"`
}

type addSiteNotesOutput struct {
	JobID     uuid.UUID `json:"job_id"`
	Note      siteNote  `json:"note"`
	NoteCount int       `json:"note_count"`
}

type addSiteNotesInput struct {
	JobID  uuid.UUID `json:"job_id"`
	Note   string    `json:"note"`
	Author *string   `json:"author"`
}

// addSiteNotes adds a note about the site (access, hazards, what was found) to a job, at any stage.
func addSiteNotes(ctx context.Context, c *executor.Call, in addSiteNotesInput) (*addSiteNotesOutput, error) {
	var found bool
	if err := c.DB.QueryRow(ctx, `SELECT true FROM jobs WHERE id = $1 FOR SHARE`, in.JobID).Scan(&found); err != nil {
		return nil, notFoundIfNoRows(err, "job", in.JobID)
	}
	var n siteNote
	err := c.DB.QueryRow(ctx, `INSERT INTO job_site_notes (job_id, note, author) VALUES ($1, $2, $3)
		RETURNING id, note, author, created_at`, in.JobID, in.Note, in.Author).Scan(&n.NoteID, &n.Note, &n.Author, &n.CreatedAt)
	if err != nil {
		return nil, err
	}
	var count int
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM job_site_notes WHERE job_id = $1`, in.JobID).Scan(&count); err != nil {
		return nil, err
	}
	return &addSiteNotesOutput{JobID: in.JobID, Note: n, NoteCount: count}, nil
}

type completeJobInput struct {
	JobID           uuid.UUID `json:"job_id"`
	CompletionNotes *string   `json:"completion_notes"`
}

// completeJob marks a scheduled job done. Completing it again changes nothing; a job without dates is
// refused.
func completeJob(ctx context.Context, c *executor.Call, in completeJobInput) (*jobChanged, error) {
	j, err := lockJob(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	switch j.Status {
	case "completed":
		return &jobChanged{Job: j}, nil
	case "unscheduled":
		return nil, executor.Conflict("job %s has no dates: assign them with job.assign_dates before completing it", in.JobID)
	}
	j, err = updateJob(ctx, c, `UPDATE jobs SET status = 'completed', completed_at = now(), completion_notes = $2, updated_at = now()
		WHERE id = $1`, in.JobID, in.CompletionNotes)
	if err != nil {
		return nil, err
	}
	return &jobChanged{Job: j, Changed: true}, nil
}
