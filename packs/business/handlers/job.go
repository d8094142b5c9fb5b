package businesshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerJob(h executor.Handlers, p *pack) {
	h.Func(businesspack.CreateJobFromAcceptedQuote, executor.Typed(createJobFromQuote))
	h.Func(businesspack.AssignJobDates, executor.Typed(assignJobDates))
	h.Func(businesspack.AddSiteNotes, executor.Typed(addSiteNotes))
	h.Func(businesspack.AddProgressUpdate, executor.Typed(p.addProgressUpdate))
	h.Func(businesspack.AddBeforeAfterRefs, executor.Typed(p.addBeforeAfterRefs))
	h.Func(businesspack.CompleteJob, executor.Typed(p.completeJob))
	h.Func(businesspack.CreateJobCard, executor.Typed(p.createJobCard))
	h.Func(businesspack.GenerateWarrantyCertificate, executor.Typed(p.generateWarrantyCertificate))
	h.Add(businesspack.RequestReview, executor.Handler{Run: executor.Typed(p.requestReview), Isolated: true,
		RequiredEnv: append(append([]string{}, businesspack.SMSRequiredEnv...), businesspack.EmailRequiredEnv...)})
}

// job is a job as the job tools return it.
// jobSelect reads jobs from jrows (a CTE returning rows of jobs), with their quote's lead and customer.
const jobSelect = `SELECT j.id, j.number, j.quote_id, q.lead_id, q.customer_id, j.status, j.start_date, j.end_date, j.notes,
	j.schedule_notes, j.completed_at, j.completion_notes, j.review_requested_at, j.created_at, j.updated_at
	FROM jrows j JOIN quotes q ON q.id = j.quote_id`

func scanJob(row pgx.Row) (businesspack.Job, error) {
	var j businesspack.Job
	err := row.Scan(&j.JobID, &j.Number, &j.QuoteID, &j.LeadID, &j.CustomerID, &j.Status, &j.StartDate, &j.EndDate, &j.Notes,
		&j.ScheduleNotes, &j.CompletedAt, &j.CompletionNotes, &j.ReviewRequestedAt, &j.CreatedAt, &j.UpdatedAt)
	return j, err
}

// jobLabel is how paperwork and messages name a job.
func jobLabel(number int64) string { return fmt.Sprintf("J-%04d", number) }

// lockJob locks a job for the rest of the call and returns it.
func lockJob(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Job, error) {
	j, err := scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (SELECT * FROM jobs WHERE id = $1 FOR UPDATE) `+jobSelect, id))
	if err != nil {
		return businesspack.Job{}, executor.NotFoundIfNoRows(err, "job", id)
	}
	return j, nil
}

// shareJob reads a job, keeping it from being deleted or changed until the call ends (FOR SHARE): for
// tools that add to a job or read it for a document.
func shareJob(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Job, error) {
	j, err := scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (SELECT * FROM jobs WHERE id = $1 FOR SHARE) `+jobSelect, id))
	if err != nil {
		return businesspack.Job{}, executor.NotFoundIfNoRows(err, "job", id)
	}
	return j, nil
}

// updateJob runs an UPDATE ... RETURNING * on jobs and reads the job it returns.
func updateJob(ctx context.Context, c *executor.Call, update string, args ...any) (businesspack.Job, error) {
	return scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (`+update+` RETURNING *) `+jobSelect, args...))
}

// jobChanged is a job and whether the call changed it.
type jobChanged struct {
	businesspack.Job
	Changed bool `json:"changed"`
}

type createJobFromQuoteInput struct {
	QuoteID uuid.UUID `json:"quote_id"`
	Notes   *string   `json:"notes"`
}

// createJobFromQuote makes the job for an accepted quote. A quote has one job: asking for a second is a
// conflict that names the first, never a second job.
func createJobFromQuote(ctx context.Context, c *executor.Call, in createJobFromQuoteInput) (*businesspack.Job, error) {
	var status string
	if err := c.DB.QueryRow(ctx, `SELECT status FROM quotes WHERE id = $1 FOR UPDATE`, in.QuoteID).Scan(&status); err != nil {
		return nil, executor.NotFoundIfNoRows(err, "quote", in.QuoteID)
	}
	if status != "accepted" {
		return nil, executor.Conflict("quote %s is %s: a job is made only from an accepted quote", in.QuoteID, status)
	}
	var existing uuid.UUID
	var number int64
	err := c.DB.QueryRow(ctx, `SELECT id, number FROM jobs WHERE quote_id = $1`, in.QuoteID).Scan(&existing, &number)
	switch {
	case err == nil:
		return nil, &executor.Error{Code: registry.CodeConflict, Details: map[string]any{"job_id": existing},
			Message: fmt.Sprintf("quote %s already has job %s (%s): a quote has one job", in.QuoteID, existing, jobLabel(number))}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, err
	}
	j, err := scanJob(c.DB.QueryRow(ctx, `WITH jrows AS (INSERT INTO jobs (quote_id, notes) VALUES ($1, $2) RETURNING *) `+jobSelect,
		in.QuoteID, in.Notes))
	if err != nil {
		return nil, err
	}
	return &j, nil
}

type assignJobDatesInput struct {
	JobID     uuid.UUID          `json:"job_id"`
	StartDate businesspack.Date  `json:"start_date"`
	EndDate   *businesspack.Date `json:"end_date"`
	Notes     *string            `json:"notes"`
}

// assignJobDates sets the days a job runs (end_date defaults to start_date) and schedules it; notes, when
// given, replace the scheduling note. A completed job's dates cannot change.
func assignJobDates(ctx context.Context, c *executor.Call, in assignJobDatesInput) (*jobChanged, error) {
	end := in.StartDate
	if in.EndDate != nil {
		end = *in.EndDate
	}
	if end.Before(in.StartDate) {
		return nil, executor.Invalid("end_date %s is before start_date %s", end, in.StartDate)
	}
	j, err := lockJob(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	notes := j.ScheduleNotes
	if in.Notes != nil {
		notes = in.Notes
	}
	switch {
	case j.Status == "completed":
		return nil, executor.Conflict("job %s is completed: its dates cannot change", in.JobID)
	case j.Status == "scheduled" && executor.SamePtr(j.StartDate, &in.StartDate) && executor.SamePtr(j.EndDate, &end) &&
		executor.SamePtr(j.ScheduleNotes, notes):
		return &jobChanged{Job: j}, nil
	}
	j, err = updateJob(ctx, c, `UPDATE jobs SET status = 'scheduled', start_date = $2, end_date = $3, schedule_notes = $4,
		updated_at = now() WHERE id = $1`, in.JobID, in.StartDate, end, notes)
	if err != nil {
		return nil, err
	}
	return &jobChanged{Job: j, Changed: true}, nil
}

// sameInstant compares times at PostgreSQL's precision (microseconds).
func sameInstant(a, b time.Time) bool {
	return a.Round(time.Microsecond).Equal(b.Round(time.Microsecond))
}

// isBlankText reports whether s has nothing but white space.
func isBlankText(s string) bool { return strings.TrimSpace(s) == "" }

// isFileStoreRef reports whether ref names a file of GEM's file store.
func isFileStoreRef(ref string) bool { return strings.HasPrefix(ref, filestore.Scheme) }

type addSiteNotesInput struct {
	JobID  uuid.UUID `json:"job_id"`
	Notes  string    `json:"notes"`
	Author *string   `json:"author"`
}

type addSiteNotesOutput struct {
	JobID     uuid.UUID `json:"job_id"`
	NoteID    uuid.UUID `json:"note_id"`
	Notes     string    `json:"notes"`
	Author    *string   `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	NoteCount int       `json:"note_count"`
}

// addSiteNotes adds a note about the site (access, hazards, what was found) to a job, at any stage.
func addSiteNotes(ctx context.Context, c *executor.Call, in addSiteNotesInput) (*addSiteNotesOutput, error) {
	if isBlankText(in.Notes) {
		return nil, executor.Invalid("notes is empty: there is nothing to add")
	}
	if _, err := shareJob(ctx, c, in.JobID); err != nil {
		return nil, err
	}
	out := addSiteNotesOutput{JobID: in.JobID}
	err := c.DB.QueryRow(ctx, `INSERT INTO job_site_notes (job_id, note, author) VALUES ($1, $2, $3)
		RETURNING id, note, author, created_at`, in.JobID, in.Notes, in.Author).Scan(&out.NoteID, &out.Notes, &out.Author, &out.CreatedAt)
	if err != nil {
		return nil, err
	}
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM job_site_notes WHERE job_id = $1`, in.JobID).Scan(&out.NoteCount); err != nil {
		return nil, err
	}
	return &out, nil
}

type addProgressUpdateInput struct {
	JobID     uuid.UUID       `json:"job_id"`
	Summary   string          `json:"summary"`
	Details   json.RawMessage `json:"details"`
	PhotoRefs []string        `json:"photo_refs"`
}

type addProgressUpdateOutput struct {
	UpdateID    uuid.UUID       `json:"update_id"`
	JobID       uuid.UUID       `json:"job_id"`
	JobStatus   string          `json:"job_status"`
	Summary     string          `json:"summary"`
	Details     json.RawMessage `json:"details"`
	PhotoRefs   []string        `json:"photo_refs"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdateCount int             `json:"update_count"`
}

// addProgressUpdate records how the work on a job is going: a summary, structured details and photos.
// Photos in GEM's file store must exist there; other references (URLs, storage keys) are kept as given.
func (p *pack) addProgressUpdate(ctx context.Context, c *executor.Call, in addProgressUpdateInput) (*addProgressUpdateOutput, error) {
	if isBlankText(in.Summary) {
		return nil, executor.Invalid("summary is empty: say what was done")
	}
	refs, err := p.cleanRefs("photo_refs", in.PhotoRefs)
	if err != nil {
		return nil, err
	}
	details := in.Details
	if len(details) == 0 || string(details) == "null" {
		details = json.RawMessage(`{}`)
	}
	j, err := shareJob(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	out := addProgressUpdateOutput{JobID: in.JobID, JobStatus: j.Status}
	err = c.DB.QueryRow(ctx, `INSERT INTO job_progress_updates (job_id, summary, details, photo_refs) VALUES ($1, $2, $3, $4)
		RETURNING id, summary, details, photo_refs, created_at`, in.JobID, in.Summary, details, refs).
		Scan(&out.UpdateID, &out.Summary, &out.Details, &out.PhotoRefs, &out.CreatedAt)
	if err != nil {
		return nil, err
	}
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM job_progress_updates WHERE job_id = $1`, in.JobID).Scan(&out.UpdateCount); err != nil {
		return nil, err
	}
	return &out, nil
}

type addBeforeAfterRefsInput struct {
	JobID      uuid.UUID `json:"job_id"`
	BeforeRefs []string  `json:"before_refs"`
	AfterRefs  []string  `json:"after_refs"`
}

type addBeforeAfterRefsOutput struct {
	JobID       uuid.UUID `json:"job_id"`
	AddedBefore int       `json:"added_before"`
	AddedAfter  int       `json:"added_after"`
	BeforeRefs  []string  `json:"before_refs"`
	AfterRefs   []string  `json:"after_refs"`
}

// addBeforeAfterRefs attaches photos of the site before and after the work to a job. A reference already
// attached at the same stage is not attached twice; the result lists every reference the job now has.
func (p *pack) addBeforeAfterRefs(ctx context.Context, c *executor.Call, in addBeforeAfterRefsInput) (*addBeforeAfterRefsOutput, error) {
	before, err := p.cleanRefs("before_refs", in.BeforeRefs)
	if err != nil {
		return nil, err
	}
	after, err := p.cleanRefs("after_refs", in.AfterRefs)
	if err != nil {
		return nil, err
	}
	if len(before)+len(after) == 0 {
		return nil, executor.Invalid("before_refs and after_refs are both empty: there is nothing to attach")
	}
	if _, err := shareJob(ctx, c, in.JobID); err != nil {
		return nil, err
	}
	out := addBeforeAfterRefsOutput{JobID: in.JobID}
	for _, s := range []struct {
		stage string
		refs  []string
		added *int
	}{{"before", before, &out.AddedBefore}, {"after", after, &out.AddedAfter}} {
		tag, err := c.DB.Exec(ctx, `INSERT INTO job_media_refs (job_id, stage, ref)
			SELECT $1, $2, r FROM unnest($3::text[]) WITH ORDINALITY AS u(r, n) ORDER BY n
			ON CONFLICT ON CONSTRAINT job_media_refs_once DO NOTHING`, in.JobID, s.stage, s.refs)
		if err != nil {
			return nil, err
		}
		*s.added = int(tag.RowsAffected())
	}
	err = c.DB.QueryRow(ctx, `SELECT
			coalesce(array_agg(ref ORDER BY seq) FILTER (WHERE stage = 'before'), '{}'),
			coalesce(array_agg(ref ORDER BY seq) FILTER (WHERE stage = 'after'), '{}')
		FROM job_media_refs WHERE job_id = $1`, in.JobID).Scan(&out.BeforeRefs, &out.AfterRefs)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// cleanRefs checks file references: none empty, references to GEM's file store naming stored files, each
// once (in the order given). It never returns nil.
func (p *pack) cleanRefs(field string, refs []string) ([]string, error) {
	out := make([]string, 0, len(refs))
	seen := map[string]bool{}
	for _, r := range refs {
		if isBlankText(r) {
			return nil, executor.Invalid("%s has an empty reference", field)
		}
		if err := p.checkStoredRef(field, r); err != nil {
			return nil, err
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

type completeJobInput struct {
	JobID       uuid.UUID  `json:"job_id"`
	CompletedAt *time.Time `json:"completed_at"`
	Notes       *string    `json:"notes"`
}

// completeJob marks a job done, at completed_at (now by default; never in the future). A job that never got
// dates (GEM's callers complete jobs without scheduling them) is dated on the day it was completed, in the
// business's time zone. Completing it again changes nothing; doing so with another time or notes is a
// conflict, since the first completion stands.
func (p *pack) completeJob(ctx context.Context, c *executor.Call, in completeJobInput) (*jobChanged, error) {
	if in.CompletedAt != nil && in.CompletedAt.After(time.Now().Add(time.Minute)) {
		return nil, executor.Invalid("completed_at %s is in the future", in.CompletedAt.Format(time.RFC3339))
	}
	j, err := lockJob(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	switch j.Status {
	case "completed":
		if in.CompletedAt != nil && !sameInstant(*in.CompletedAt, *j.CompletedAt) {
			return nil, executor.Conflict("job %s was already completed at %s", in.JobID, j.CompletedAt.Format(time.RFC3339))
		}
		if in.Notes != nil && !executor.SamePtr(in.Notes, j.CompletionNotes) {
			return nil, executor.Conflict("job %s is already completed, with other completion notes", in.JobID)
		}
		return &jobChanged{Job: j}, nil
	}
	completedAt := time.Now()
	if in.CompletedAt != nil {
		completedAt = *in.CompletedAt
	}
	var day *businesspack.Date
	if j.Status == "unscheduled" {
		if p.locErr != nil {
			_, err := p.today() // the not_configured receipt naming the time zone variable
			return nil, err
		}
		d := businesspack.DateOf(completedAt.In(p.loc))
		day = &d
	}
	j, err = updateJob(ctx, c, `UPDATE jobs SET status = 'completed', completed_at = $2, completion_notes = $3,
		start_date = coalesce(start_date, $4), end_date = coalesce(end_date, $4), updated_at = now() WHERE id = $1`,
		in.JobID, completedAt, in.Notes, day)
	if err != nil {
		return nil, err
	}
	return &jobChanged{Job: j, Changed: true}, nil
}
