package business

import (
	"context"
	"errors"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerLeads(h executor.Handlers) {
	h.Func("leads.create", executor.Typed(createLead))
	h.Func("leads.update_stage", executor.Typed(updateLeadStage))
	h.Func("leads.list_by_stage", executor.Typed(listLeadsByStage))
	h.Func("leads.add_source", executor.Typed(addLeadSource))
	h.Func("leads.add_photos_link", executor.Typed(addLeadPhotosLink))
	h.Func("leads.schedule_inspection", executor.Typed(scheduleInspection))
	h.Func("leads.mark_lost", executor.Typed(markLeadLost))
}

type lead struct {
	LeadID    uuid.UUID `json:"lead_id"`
	Name      string    `json:"name"`
	Phone     string    `json:"phone"`
	Email     *string   `json:"email"`
	Suburb    *string   `json:"suburb"`
	Source    string    `json:"source"`
	Stage     string    `json:"stage"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const leadColumns = `id, name, phone, email, suburb, source, stage, created_at, updated_at`

func scanLead(row pgx.Row) (lead, error) {
	var l lead
	err := row.Scan(&l.LeadID, &l.Name, &l.Phone, &l.Email, &l.Suburb, &l.Source, &l.Stage, &l.CreatedAt, &l.UpdatedAt)
	return l, err
}

type leadCreated struct {
	Lead    lead `json:"lead"`
	Created bool `json:"created"`
}

type createLeadInput struct {
	Name    string  `json:"name"`
	Phone   string  `json:"phone"`
	Email   *string `json:"email"`
	Suburb  *string `json:"suburb"`
	Address *string `json:"address"`
	Source  string  `json:"source"`
	Notes   *string `json:"notes"`
}

// createLead records a lead; a phone number already on file (however it is formatted) returns that lead.
func createLead(ctx context.Context, c *executor.Call, in createLeadInput) (*leadCreated, error) {
	if in.Source == "" {
		in.Source = "other"
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `INSERT INTO leads (name, phone, email, suburb, address, source, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (phone_digits) DO NOTHING
		RETURNING `+leadColumns, in.Name, in.Phone, in.Email, in.Suburb, in.Address, in.Source, in.Notes))
	if err == nil {
		return &leadCreated{Lead: l, Created: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	l, err = scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads
		WHERE phone_digits = regexp_replace($1, '[^0-9+]', '', 'g')`, in.Phone))
	if err != nil {
		return nil, err
	}
	return &leadCreated{Lead: l}, nil
}

type updateLeadStageOutput struct {
	Lead          lead   `json:"lead"`
	PreviousStage string `json:"previous_stage"`
}

type updateLeadStageInput struct {
	LeadID uuid.UUID `json:"lead_id"`
	Stage  string    `json:"stage"`
	Reason *string   `json:"reason"`
}

func updateLeadStage(ctx context.Context, c *executor.Call, in updateLeadStageInput) (*updateLeadStageOutput, error) {
	current, err := lockLead(ctx, c, in.LeadID)
	if err != nil {
		return nil, err
	}
	if current.Stage == in.Stage {
		return &updateLeadStageOutput{Lead: current, PreviousStage: current.Stage}, nil
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `UPDATE leads SET stage = $2, stage_reason = $3, lost_reason_code = NULL, updated_at = now()
		WHERE id = $1 RETURNING `+leadColumns, in.LeadID, in.Stage, in.Reason))
	if err != nil {
		return nil, err
	}
	return &updateLeadStageOutput{Lead: l, PreviousStage: current.Stage}, nil
}

type listLeadsOutput struct {
	Leads []lead `json:"leads"`
	Count int    `json:"count"`
}

type listLeadsByStageInput struct {
	Stage string `json:"stage"`
	Limit int    `json:"limit"`
}

func listLeadsByStage(ctx context.Context, c *executor.Call, in listLeadsByStageInput) (*listLeadsOutput, error) {
	leads, err := queryList(ctx, c, scanLead, `SELECT `+leadColumns+` FROM leads WHERE ($1 = '' OR stage = $1)
		ORDER BY created_at DESC LIMIT $2`, in.Stage, limitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &listLeadsOutput{Leads: leads, Count: len(leads)}, nil
}

// lockLead locks a lead for the rest of the call and returns it.
func lockLead(ctx context.Context, c *executor.Call, id uuid.UUID) (lead, error) {
	l, err := scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return lead{}, notFoundIfNoRows(err, "lead", id)
	}
	return l, nil
}

type leadSource struct {
	SourceID  uuid.UUID `json:"source_id"`
	Source    string    `json:"source"`
	Detail    string    `json:"detail"`
	CreatedAt time.Time `json:"created_at"`
}

type addLeadSourceInput struct {
	LeadID uuid.UUID `json:"lead_id"`
	Source string    `json:"source"`
	Detail string    `json:"detail"`
}

// addLeadSource records a channel that brought a lead in (a lead may have several). The same source and
// detail again is recorded once.
func addLeadSource(ctx context.Context, c *executor.Call, in addLeadSourceInput) (any, error) {
	if _, err := lockLead(ctx, c, in.LeadID); err != nil {
		return nil, err
	}
	tag, err := c.DB.Exec(ctx, `INSERT INTO lead_sources (lead_id, source, detail) VALUES ($1, $2, $3)
		ON CONFLICT ON CONSTRAINT lead_sources_once DO NOTHING`, in.LeadID, in.Source, in.Detail)
	if err != nil {
		return nil, err
	}
	sources, err := queryList(ctx, c, func(r pgx.Row) (leadSource, error) {
		var s leadSource
		return s, r.Scan(&s.SourceID, &s.Source, &s.Detail, &s.CreatedAt)
	}, `SELECT id, source, detail, created_at FROM lead_sources WHERE lead_id = $1 ORDER BY created_at, source, detail`, in.LeadID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"lead_id": in.LeadID, "added": tag.RowsAffected() == 1, "sources": sources}, nil
}

type addLeadPhotosLinkInput struct {
	LeadID uuid.UUID `json:"lead_id"`
	URL    string    `json:"url"`
	Label  *string   `json:"label"`
}

// addLeadPhotosLink records a link to photos of the job a lead shared. The same URL again is recorded once
// (a new label replaces the old).
func addLeadPhotosLink(ctx context.Context, c *executor.Call, in addLeadPhotosLinkInput) (any, error) {
	if _, err := lockLead(ctx, c, in.LeadID); err != nil {
		return nil, err
	}
	var out struct {
		LinkID    uuid.UUID `json:"link_id"`
		LeadID    uuid.UUID `json:"lead_id"`
		URL       string    `json:"url"`
		Label     *string   `json:"label"`
		Created   bool      `json:"created"`
		CreatedAt time.Time `json:"created_at"`
	}
	scan := func(row pgx.Row) error {
		return row.Scan(&out.LinkID, &out.LeadID, &out.URL, &out.Label, &out.CreatedAt)
	}
	// The lead's lock keeps concurrent calls for it apart, so looking first cannot race an insert.
	const columns = `id, lead_id, url, label, created_at`
	err := scan(c.DB.QueryRow(ctx, `SELECT `+columns+` FROM lead_photo_links WHERE lead_id = $1 AND url = $2`, in.LeadID, in.URL))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		out.Created = true
		err = scan(c.DB.QueryRow(ctx, `INSERT INTO lead_photo_links (lead_id, url, label) VALUES ($1, $2, $3)
			RETURNING `+columns, in.LeadID, in.URL, in.Label))
	case err == nil && in.Label != nil && !equalPtr(in.Label, out.Label):
		err = scan(c.DB.QueryRow(ctx, `UPDATE lead_photo_links SET label = $2 WHERE id = $1 RETURNING `+columns, out.LinkID, in.Label))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

type appointment struct {
	AppointmentID   uuid.UUID `json:"appointment_id"`
	LeadID          uuid.UUID `json:"lead_id"`
	ScheduledFor    time.Time `json:"scheduled_for"`
	DurationMinutes int       `json:"duration_minutes"`
	Address         *string   `json:"address"`
	Notes           *string   `json:"notes"`
	Status          string    `json:"status"`
	CreatedAt       time.Time `json:"created_at"`
}

const appointmentColumns = `id, lead_id, scheduled_for, duration_minutes, address, notes, status, created_at`

func scanAppointment(row pgx.Row) (appointment, error) {
	var a appointment
	err := row.Scan(&a.AppointmentID, &a.LeadID, &a.ScheduledFor, &a.DurationMinutes, &a.Address, &a.Notes, &a.Status, &a.CreatedAt)
	return a, err
}

type scheduleInspectionInput struct {
	LeadID          uuid.UUID `json:"lead_id"`
	ScheduledFor    time.Time `json:"scheduled_for"`
	DurationMinutes int       `json:"duration_minutes"`
	Address         *string   `json:"address"`
	Notes           *string   `json:"notes"`
}

// scheduleInspection books an inspection visit for a lead and moves the lead to inspection_scheduled (a
// lead already further along keeps its stage). Booking the same lead at the same time again returns the
// first booking. Won and lost leads are refused.
func scheduleInspection(ctx context.Context, c *executor.Call, in scheduleInspectionInput) (any, error) {
	l, err := lockLead(ctx, c, in.LeadID)
	if err != nil {
		return nil, err
	}
	if l.Stage == "won" || l.Stage == "lost" {
		return nil, executor.Conflict("lead %s is %s; move it back to an open stage with leads.update_stage first", in.LeadID, l.Stage)
	}
	created := true
	a, err := scanAppointment(c.DB.QueryRow(ctx, `INSERT INTO inspection_appointments (lead_id, scheduled_for, duration_minutes, address, notes)
		SELECT $1, $2, $3, coalesce($4, l.address), $5 FROM leads l WHERE l.id = $1
		ON CONFLICT (lead_id, scheduled_for) WHERE status = 'scheduled' DO NOTHING
		RETURNING `+appointmentColumns, in.LeadID, in.ScheduledFor, limitOr(in.DurationMinutes, 60), in.Address, in.Notes))
	if errors.Is(err, pgx.ErrNoRows) {
		created = false
		a, err = scanAppointment(c.DB.QueryRow(ctx, `SELECT `+appointmentColumns+` FROM inspection_appointments
			WHERE lead_id = $1 AND scheduled_for = $2 AND status = 'scheduled'`, in.LeadID, in.ScheduledFor))
	}
	if err != nil {
		return nil, err
	}
	previous, stage, err := advanceLead(ctx, c.DB, in.LeadID, "inspection_scheduled")
	if err != nil {
		return nil, err
	}
	return map[string]any{"appointment": a, "created": created, "previous_stage": previous, "lead_stage": stage}, nil
}

type markLeadLostInput struct {
	LeadID     uuid.UUID `json:"lead_id"`
	Reason     string    `json:"reason"`
	ReasonCode string    `json:"reason_code"`
}

// markLeadLost closes a lead as lost, with the reason. Marking a lost lead lost again updates the reason;
// a won lead is refused. Its scheduled inspection visits are cancelled.
func markLeadLost(ctx context.Context, c *executor.Call, in markLeadLostInput) (any, error) {
	if in.ReasonCode == "" {
		in.ReasonCode = "other"
	}
	current, err := lockLead(ctx, c, in.LeadID)
	if err != nil {
		return nil, err
	}
	if current.Stage == "won" {
		return nil, executor.Conflict("lead %s is won (a quote was accepted); it cannot be lost", in.LeadID)
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `UPDATE leads SET stage = 'lost', stage_reason = $2, lost_reason_code = $3, updated_at = now()
		WHERE id = $1 AND (stage, stage_reason, lost_reason_code) IS DISTINCT FROM ('lost', $2, $3)
		RETURNING `+leadColumns, in.LeadID, in.Reason, in.ReasonCode))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		l = current // already lost for this reason
	case err != nil:
		return nil, err
	}
	tag, err := c.DB.Exec(ctx, `UPDATE inspection_appointments SET status = 'cancelled', updated_at = now()
		WHERE lead_id = $1 AND status = 'scheduled'`, in.LeadID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"lead": l, "previous_stage": current.Stage, "reason": in.Reason, "reason_code": in.ReasonCode,
		"cancelled_appointments": tag.RowsAffected()}, nil
}
