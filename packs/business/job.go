package businesspack

import "time"

// The job tools: an accepted quote's work, from the dates on site to the warranty and the review.
const (
	CreateJobFromAcceptedQuote  = "job.create_from_accepted_quote"
	AssignJobDates              = "job.assign_dates"
	CreateJobCard               = "job.create_job_card"
	AddSiteNotes                = "job.add_site_notes"
	AddProgressUpdate           = "job.add_progress_update"
	AddBeforeAfterRefs          = "job.add_before_after_refs"
	CompleteJob                 = "job.complete"
	GenerateWarrantyCertificate = "job.generate_warranty_certificate"
	RequestReview               = "job.request_review"
)

// JobTools are the job tools, in the registry's order.
var JobTools = []string{CreateJobFromAcceptedQuote, AssignJobDates, CreateJobCard, AddSiteNotes, AddProgressUpdate, AddBeforeAfterRefs,
	CompleteJob, GenerateWarrantyCertificate, RequestReview}

// Job is a job as the job tools return it, with its quote's lead and customer.
type Job struct {
	JobID      string  `json:"job_id"`
	Number     int64   `json:"number"`
	QuoteID    string  `json:"quote_id"`
	LeadID     string  `json:"lead_id"`
	CustomerID *string `json:"customer_id"`
	Status     string  `json:"status"`
	// StartDate and EndDate are the first and last days on site, nil until it is scheduled.
	StartDate         *Date      `json:"start_date"`
	EndDate           *Date      `json:"end_date"`
	Notes             *string    `json:"notes"`
	ScheduleNotes     *string    `json:"schedule_notes"`
	CompletedAt       *time.Time `json:"completed_at"`
	CompletionNotes   *string    `json:"completion_notes"`
	ReviewRequestedAt *time.Time `json:"review_requested_at"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// JobCreateFromAcceptedQuoteInput is job.create_from_accepted_quote's input.
type JobCreateFromAcceptedQuoteInput struct {
	QuoteID string `json:"quote_id,omitempty"`
	Notes   string `json:"notes,omitempty"`
}

// JobAssignDatesInput is job.assign_dates's input: the first and last days on site (the last left out for
// a day's job).
type JobAssignDatesInput struct {
	JobID     string `json:"job_id,omitempty"`
	StartDate Date   `json:"start_date"`
	EndDate   Date   `json:"end_date,omitzero"`
	Notes     string `json:"notes,omitempty"`
}

// JobCreateJobCardInput is job.create_job_card's input.
type JobCreateJobCardInput struct {
	JobID  string `json:"job_id,omitempty"`
	Format string `json:"format,omitempty"`
}

// JobAddSiteNotesInput is job.add_site_notes's input.
type JobAddSiteNotesInput struct {
	JobID  string `json:"job_id,omitempty"`
	Notes  string `json:"notes"`
	Author string `json:"author,omitempty"`
}

// JobAddProgressUpdateInput is job.add_progress_update's input.
type JobAddProgressUpdateInput struct {
	JobID     string         `json:"job_id,omitempty"`
	Summary   string         `json:"summary"`
	Details   map[string]any `json:"details,omitempty"`
	PhotoRefs []string       `json:"photo_refs,omitempty"`
}

// JobCompleteInput is job.complete's input.
type JobCompleteInput struct {
	JobID       string     `json:"job_id,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	Notes       string     `json:"notes,omitempty"`
}

// JobGenerateWarrantyCertificateInput is job.generate_warranty_certificate's input.
type JobGenerateWarrantyCertificateInput struct {
	JobID        string `json:"job_id,omitempty"`
	WarrantyTerm string `json:"warranty_term"`
	Template     string `json:"template,omitempty"`
}

// JobRequestReviewInput is job.request_review's input.
type JobRequestReviewInput struct {
	JobID           string `json:"job_id,omitempty"`
	Channel         string `json:"channel"`
	MessageOverride string `json:"message_override,omitempty"`
	ReviewURL       string `json:"review_url,omitempty"`
}
