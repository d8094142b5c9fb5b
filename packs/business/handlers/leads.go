package businesshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerLeads(h executor.Handlers, p *pack) {
	// One lead per number however it is typed: the key of a call is the number in E.164, so "+61 499 000 111"
	// after "0499 000 111" is the first call's receipt again.
	h.Add(businesspack.CreateLead, executor.Handler{Run: executor.Typed(p.createLead), Key: func(typed string) (string, error) {
		n, err := p.readPhone("phone", typed)
		return n.E164, err
	}})
	h.Func(businesspack.UpdateLeadStage, executor.Typed(updateLeadStage))
	h.Func(businesspack.ListLeadsByStage, executor.Typed(listLeadsByStage))
	h.Func(businesspack.AddLeadSource, executor.Typed(addLeadSource))
	h.Func(businesspack.AddLeadPhotosLink, executor.Typed(addLeadPhotosLinks))
	h.Func(businesspack.ScheduleInspection, executor.Typed(p.scheduleInspection))
	h.Func(businesspack.MarkLeadLost, executor.Typed(markLeadLost))
}

const leadColumns = `id, name, phone, email, suburb, address, source, stage, stage_reason, notes, created_at, updated_at`

func scanLead(row pgx.Row) (businesspack.Lead, error) {
	var l businesspack.Lead
	err := row.Scan(&l.LeadID, &l.Name, &l.Phone, &l.Email, &l.Suburb, &l.Address, &l.Source, &l.Stage, &l.StageReason, &l.Notes,
		&l.CreatedAt, &l.UpdatedAt)
	return l, err
}

// lockLead locks a lead for the rest of the call and returns it.
func lockLead(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Lead, error) {
	l, err := scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return businesspack.Lead{}, executor.NotFoundIfNoRows(err, "lead", id)
	}
	return l, nil
}

// createLead records a lead; a phone number already on file (however it is typed) returns that lead. The
// number is kept as typed, for people, and in E.164 (phone_e164), the key.
func (p *pack) createLead(ctx context.Context, c *executor.Call, in businesspack.LeadsCreateInput) (*businesspack.LeadsCreateOutput, error) {
	name, err := checkEntityName("name", in.Name)
	if err != nil {
		return nil, err
	}
	suburb := strings.TrimSpace(in.Suburb)
	if suburb == "" {
		return nil, executor.Invalid("suburb is empty")
	}
	number, err := p.readPhone("phone", in.Phone)
	if err != nil {
		return nil, err
	}
	email := trimmedText(&in.Email)
	if email != nil {
		a, err := mail.ParseAddress(*email)
		if err != nil {
			return nil, executor.Invalid("email %q is not an email address", *email)
		}
		email = &a.Address
	}
	if in.Source == "" {
		in.Source = "other"
	}
	l, err := scanLead(c.DB.QueryRow(ctx, gemsql.LeadByPhoneSQL(leadColumns, ""), gemsql.LeadByPhoneArgs(number)...))
	if err == nil {
		return leadCreated(l, false), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	l, err = scanLead(c.DB.QueryRow(ctx, `INSERT INTO leads (name, phone, phone_e164, email, suburb, address, source, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (phone_e164) DO NOTHING
		RETURNING `+leadColumns, name, number.Typed, number.E164, email, suburb, trimmedText(&in.Address), in.Source, trimmedText(&in.Notes)))
	if err == nil {
		return leadCreated(l, true), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	// Another call recorded the number between the two statements.
	l, err = scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads WHERE phone_e164 = $1`, number.E164))
	if err != nil {
		return nil, err
	}
	return leadCreated(l, false), nil
}

func leadCreated(l businesspack.Lead, created bool) *businesspack.LeadsCreateOutput {
	return &businesspack.LeadsCreateOutput{LeadID: l.LeadID, Created: &created, Lead: l}
}

// trimmedText is s trimmed, or nil when s is nil or blank: an optional text as stored. A contract's optional
// text (a string, "" when left out) is read with trimmedText(&in.Field).
func trimmedText(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	if t == "" {
		return nil
	}
	return &t
}

// recordStageChange keeps a change of a lead's stage (or of its reason) with its notes.
func recordStageChange(ctx context.Context, c *executor.Call, leadID uuid.UUID, from, to string, reason, notes *string) error {
	_, err := c.DB.Exec(ctx, `INSERT INTO lead_stage_changes (lead_id, from_stage, to_stage, reason, notes) VALUES ($1, $2, $3, $4, $5)`,
		leadID, from, to, reason, notes)
	return err
}

type leadStageChanged struct {
	LeadID        uuid.UUID         `json:"lead_id"`
	Stage         string            `json:"stage"`
	PreviousStage string            `json:"previous_stage"`
	Changed       bool              `json:"changed"`
	Lead          businesspack.Lead `json:"lead"`
}

// updateLeadStage moves a lead to a stage, keeping the notes as the stage's reason. Leaving lost clears the
// loss's reason code. Moving to the stage it is in, with the same notes, writes nothing.
func updateLeadStage(ctx context.Context, c *executor.Call, in businesspack.LeadsUpdateStageInput) (*leadStageChanged, error) {
	id, err := executor.RecordID("lead_id", in.LeadID)
	if err != nil {
		return nil, err
	}
	current, err := lockLead(ctx, c, id)
	if err != nil {
		return nil, err
	}
	notes := trimmedText(&in.Notes)
	out := &leadStageChanged{LeadID: id, Stage: in.Stage, PreviousStage: current.Stage, Lead: current}
	if current.Stage == in.Stage && (notes == nil || executor.SamePtr(notes, current.StageReason)) {
		return out, nil
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `UPDATE leads SET stage = $2, stage_reason = $3,
			lost_reason_code = CASE WHEN $2 = 'lost' THEN lost_reason_code END, updated_at = now()
		WHERE id = $1 RETURNING `+leadColumns, id, in.Stage, notes))
	if err != nil {
		return nil, err
	}
	if err := recordStageChange(ctx, c, id, current.Stage, in.Stage, nil, notes); err != nil {
		return nil, err
	}
	out.Changed, out.Lead = true, l
	return out, nil
}

// listLeadsByStage lists leads, newest first, optionally of one stage, suburb (any case) and source.
func listLeadsByStage(ctx context.Context, c *executor.Call, in businesspack.LeadsListByStageInput) (*businesspack.LeadsListByStageOutput, error) {
	stage, source := strings.TrimSpace(in.Stage), ""
	if strings.TrimSpace(in.Source) != "" {
		var err error
		if source, err = normalizeSource(in.Source); err != nil {
			return nil, err
		}
	}
	if stage != "" && !slices.Contains(businesspack.LeadStages, stage) {
		return nil, executor.Invalid("stage %q is not one of %s", in.Stage, strings.Join(businesspack.LeadStages, ", "))
	}
	leads, err := executor.QueryList(ctx, c.DB, scanLead, `SELECT `+leadColumns+` FROM leads
		WHERE ($1 = '' OR stage = $1) AND ($2 = '' OR lower(suburb) = lower($2)) AND ($3 = '' OR source = $3)
		ORDER BY created_at DESC, id LIMIT $4`, stage, strings.TrimSpace(in.Suburb), source, executor.LimitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &businesspack.LeadsListByStageOutput{Leads: leads, Count: len(leads)}, nil
}

// sourceWordRe splits a source into its words.
var sourceWordRe = regexp.MustCompile(`[^a-z0-9]+`)

// normalizeSource turns a channel as callers name it ("Google Ads", "google-ads") into one form
// ("google_ads"). GEM's contract takes any text, so any channel is kept; one without a letter or digit is
// refused.
func normalizeSource(s string) (string, error) {
	words := strings.Trim(sourceWordRe.ReplaceAllString(strings.ToLower(s), "_"), "_")
	if words == "" {
		return "", executor.Invalid("source %q names no channel (letters or digits)", s)
	}
	if len(words) > 60 {
		return "", executor.Invalid("source %q is longer than 60 characters", s)
	}
	return words, nil
}

type leadSource struct {
	SourceID  uuid.UUID         `json:"source_id"`
	Source    string            `json:"source"`
	Detail    string            `json:"detail"`
	Campaign  map[string]string `json:"campaign"`
	CreatedAt time.Time         `json:"created_at"`
}

// addLeadSourceInput is leads.add_source's input as the handler reads it: each campaign detail is text or
// null, which the contract's map of text cannot say.
type addLeadSourceInput struct {
	businesspack.LeadsAddSourceInput
	Campaign map[string]json.RawMessage `json:"campaign"`
}

type leadSourceAdded struct {
	LeadID       uuid.UUID    `json:"lead_id"`
	Source       string       `json:"source"`
	Added        bool         `json:"added"`
	Updated      bool         `json:"updated"`
	LeadSource   string       `json:"lead_source"`
	Sources      []leadSource `json:"sources"`
	CampaignName string       `json:"campaign_name"`
}

// addLeadSource records a channel that brought a lead in, with its campaign (a lead may have several). The
// same source and campaign name again updates the campaign's details; the lead's own source, when it was
// other, becomes this one.
func addLeadSource(ctx context.Context, c *executor.Call, in addLeadSourceInput) (*leadSourceAdded, error) {
	leadID, err := executor.RecordID("lead_id", in.LeadID)
	if err != nil {
		return nil, err
	}
	source, err := normalizeSource(in.Source)
	if err != nil {
		return nil, err
	}
	campaign := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(in.Campaign)) {
		v, err := readPatchText("campaign."+k, in.Campaign[k])
		if err != nil {
			return nil, err
		}
		if v != nil {
			campaign[k] = *v
		}
	}
	l, err := lockLead(ctx, c, leadID)
	if err != nil {
		return nil, err
	}
	out := &leadSourceAdded{LeadID: leadID, Source: source, LeadSource: l.Source, CampaignName: campaign["name"]}
	// The lead's lock keeps concurrent calls for it apart, so looking first cannot race an insert.
	var id uuid.UUID
	var was map[string]string
	err = c.DB.QueryRow(ctx, `SELECT id, campaign FROM lead_sources WHERE lead_id = $1 AND source = $2 AND detail = $3`,
		leadID, source, out.CampaignName).Scan(&id, &was)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		out.Added = true
		_, err = c.DB.Exec(ctx, `INSERT INTO lead_sources (lead_id, source, detail, campaign) VALUES ($1, $2, $3, $4)`,
			leadID, source, out.CampaignName, campaign)
	case err == nil && !sameJSON(was, campaign):
		out.Updated = true
		_, err = c.DB.Exec(ctx, `UPDATE lead_sources SET campaign = $2, updated_at = now() WHERE id = $1`, id, campaign)
	}
	if err != nil {
		return nil, err
	}
	if l.Source == "other" && source != "other" {
		if _, err := c.DB.Exec(ctx, `UPDATE leads SET source = $2, updated_at = now() WHERE id = $1`, leadID, source); err != nil {
			return nil, err
		}
		out.LeadSource = source
	}
	if out.Sources, err = executor.QueryList(ctx, c.DB, func(r pgx.Row) (leadSource, error) {
		var s leadSource
		return s, r.Scan(&s.SourceID, &s.Source, &s.Detail, &s.Campaign, &s.CreatedAt)
	}, `SELECT id, source, detail, campaign, created_at FROM lead_sources WHERE lead_id = $1 ORDER BY created_at, source, detail`, leadID); err != nil {
		return nil, err
	}
	return out, nil
}

type photoLink struct {
	LinkID    uuid.UUID `json:"link_id"`
	URL       string    `json:"url"`
	Label     *string   `json:"label"`
	CreatedAt time.Time `json:"created_at"`
}

type photosLinksAdded struct {
	LeadID uuid.UUID   `json:"lead_id"`
	Added  int         `json:"added"`
	Links  []photoLink `json:"links"`
}

// addLeadPhotosLinks records links to photos or videos a lead shared (an album, a cloud folder). A link
// already on file is kept once.
func addLeadPhotosLinks(ctx context.Context, c *executor.Call, in businesspack.LeadsAddPhotosLinkInput) (*photosLinksAdded, error) {
	leadID, err := executor.RecordID("lead_id", in.LeadID)
	if err != nil {
		return nil, err
	}
	if len(in.Links) == 0 {
		return nil, executor.Invalid("links is empty: give one or more http(s) links")
	}
	var links []string
	for i, raw := range in.Links {
		s := strings.TrimSpace(raw)
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, executor.Invalid("links[%d] %q is not an http(s) link", i, raw)
		}
		if !slices.Contains(links, s) {
			links = append(links, s)
		}
	}
	if _, err := lockLead(ctx, c, leadID); err != nil {
		return nil, err
	}
	out := &photosLinksAdded{LeadID: leadID}
	for _, link := range links {
		tag, err := c.DB.Exec(ctx, `INSERT INTO lead_photo_links (lead_id, url, label) VALUES ($1, $2, $3)
			ON CONFLICT ON CONSTRAINT lead_photo_links_once DO NOTHING`, leadID, link, trimmedText(&in.Label))
		if err != nil {
			return nil, err
		}
		out.Added += int(tag.RowsAffected())
	}
	if out.Links, err = executor.QueryList(ctx, c.DB, func(r pgx.Row) (photoLink, error) {
		var l photoLink
		return l, r.Scan(&l.LinkID, &l.URL, &l.Label, &l.CreatedAt)
	}, `SELECT id, url, label, created_at FROM lead_photo_links WHERE lead_id = $1 ORDER BY created_at, url`, leadID); err != nil {
		return nil, err
	}
	return out, nil
}

// preferredWindow is when a lead would like the inspection: either a time range (start, and end or an hour
// later), or a date and a part of the day (morning, afternoon or any; any when left out), resolved in the
// business's hours and time zone. A range of up to bookableWindow is the visit itself; a longer one (up to a
// day) is a preference to confirm, like a part of the day.
type preferredWindow struct {
	Start     *time.Time         `json:"start"`
	End       *time.Time         `json:"end"`
	Date      *businesspack.Date `json:"date"`
	PartOfDay *string            `json:"part_of_day"`
}

// preferredWindowKeys are the keys of preferred_window.
var preferredWindowKeys = []string{"start", "end", "date", "part_of_day"}

// readPreferredWindow checks the window's keys and values.
func readPreferredWindow(raw map[string]json.RawMessage) (preferredWindow, error) {
	var w preferredWindow
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !slices.Contains(preferredWindowKeys, k) {
			return w, executor.Invalid("preferred_window.%s is not read; give start (and end) date-times, or a date and a part_of_day", k)
		}
		var err error
		switch k {
		case "start", "end":
			var s string
			if err = json.Unmarshal(raw[k], &s); err == nil {
				var t time.Time
				if t, err = time.Parse(time.RFC3339Nano, s); err == nil {
					if k == "start" {
						w.Start = &t
					} else {
						w.End = &t
					}
				}
			}
			if err != nil {
				return w, executor.Invalid("preferred_window.%s must be an RFC 3339 date-time (2026-03-03T09:00:00+11:00)", k)
			}
		case "date":
			w.Date = new(businesspack.Date)
			if err = json.Unmarshal(raw[k], w.Date); err != nil {
				return w, executor.Invalid("preferred_window.date must be a date (YYYY-MM-DD)")
			}
		case "part_of_day":
			if err = json.Unmarshal(raw[k], &w.PartOfDay); err != nil || w.PartOfDay == nil ||
				!slices.Contains([]string{"morning", "afternoon", "any"}, *w.PartOfDay) {
				return w, executor.Invalid("preferred_window.part_of_day must be morning, afternoon or any")
			}
		}
	}
	switch {
	case w.Start != nil && (w.Date != nil || w.PartOfDay != nil):
		return w, executor.Invalid("preferred_window has both a start and a date: give one")
	case w.Start == nil && w.End != nil:
		return w, executor.Invalid("preferred_window.end needs a start")
	case w.Start == nil && w.Date == nil:
		return w, executor.Invalid("preferred_window needs start (and end) date-times, or a date and a part_of_day")
	case w.Start != nil:
		if w.End == nil {
			end := w.Start.Add(time.Hour)
			w.End = &end
		}
		if !w.End.After(*w.Start) {
			return w, executor.Invalid("preferred_window.end must be after its start")
		}
		if w.End.Sub(*w.Start) > 24*time.Hour {
			return w, executor.Invalid("preferred_window is longer than a day: give the day the lead prefers")
		}
	}
	return w, nil
}

// scheduleInspectionInput is leads.schedule_inspection's input as the handler reads it: the window key by
// key (readPreferredWindow), to name the one that is wrong.
type scheduleInspectionInput struct {
	businesspack.LeadsScheduleInspectionInput
	PreferredWindow map[string]json.RawMessage `json:"preferred_window"`
}

// inspectionVisitMinutes is how long a visit whose time is still to be confirmed is expected to take.
const inspectionVisitMinutes = 60

// bookableWindow is the longest time range booked as the visit itself (in the calendar).
const bookableWindow = 8 * time.Hour

// scheduleInspection books an inspection visit for a lead: an appointment, a draft inspection opened for it
// (inspection.create with the appointment takes it over), and, when the window has times, a calendar event.
// The lead moves to inspection_scheduled (a lead further along keeps its stage). Booking the same lead for
// the same window again returns the first booking. Won and lost leads are a conflict.
func (p *pack) scheduleInspection(ctx context.Context, c *executor.Call, in scheduleInspectionInput) (*businesspack.LeadsScheduleInspectionOutput, error) {
	leadID, err := executor.RecordID("lead_id", in.LeadID)
	if err != nil {
		return nil, err
	}
	w, err := readPreferredWindow(in.PreferredWindow)
	if err != nil {
		return nil, err
	}
	l, err := lockLead(ctx, c, leadID)
	if err != nil {
		return nil, err
	}
	if l.Stage == "won" || l.Stage == "lost" {
		return nil, executor.Conflict("lead %s is %s; move it back to an open stage with leads.update_stage first", leadID, l.Stage)
	}

	win := businesspack.InspectionWindow{PartOfDay: w.PartOfDay, Timed: w.Start != nil && w.End.Sub(*w.Start) <= bookableWindow}
	duration := inspectionVisitMinutes
	if w.Start != nil {
		if _, err := p.today(); err != nil { // the time zone, for the window's date
			return nil, err
		}
		win.StartAt, win.EndAt = *w.Start, *w.End
		win.Date = businesspack.DateOf(w.Start.In(p.loc))
		if w.End.Sub(*w.Start) < 15*time.Minute {
			return nil, executor.Invalid("preferred_window is shorter than 15 minutes")
		}
		if win.Timed {
			duration = int(w.End.Sub(*w.Start).Minutes())
		}
	} else {
		part := "any"
		if w.PartOfDay != nil {
			part = *w.PartOfDay
		}
		win.PartOfDay, win.Date = &part, *w.Date
		hours, err := p.businessHours()
		if err != nil {
			return nil, err
		}
		if win.StartAt, win.EndAt, err = hours.partOfDay(*w.Date, part, p.loc); err != nil {
			return nil, err
		}
	}
	address := trimmedText(&in.Address)
	if address == nil {
		address = joinedAddress(l.Address, l.Suburb)
	}
	out := &businesspack.LeadsScheduleInspectionOutput{LeadID: leadID.String(), Window: win, Address: address, Overlaps: []businesspack.EventOverlap{}, Created: true}

	// The same lead and window again is the same booking.
	var existingEvent *uuid.UUID
	err = c.DB.QueryRow(ctx, `SELECT id, calendar_event_id FROM inspection_appointments
		WHERE lead_id = $1 AND scheduled_for = $2 AND status = 'scheduled'`, leadID, win.StartAt).Scan(&out.AppointmentID, &existingEvent)
	switch {
	case err == nil:
		out.Created = false
	case errors.Is(err, pgx.ErrNoRows):
		if win.Timed {
			title := "Inspection: " + l.Name
			if l.Suburb != nil {
				title += ", " + *l.Suburb
			}
			ev, overlaps, err := insertEvent(ctx, c, eventDraft{Title: truncateRunes(title, 200), StartAt: win.StartAt, EndAt: win.EndAt,
				Location: address, LeadID: &leadID, Ref: &contextRef{Type: "lead", ID: leadID.String()}})
			if err != nil {
				return nil, err
			}
			existingEvent, out.Overlaps = &ev, overlaps
		}
		err = c.DB.QueryRow(ctx, `INSERT INTO inspection_appointments (lead_id, scheduled_for, duration_minutes, address, notes,
				window_end, part_of_day, calendar_event_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			leadID, win.StartAt, duration, address, trimmedText(&in.Notes), win.EndAt, win.PartOfDay, existingEvent).Scan(&out.AppointmentID)
	}
	if err != nil {
		return nil, err
	}
	if existingEvent != nil {
		event := existingEvent.String()
		out.EventID, out.Window.EventID = &event, &event
	}

	// The appointment's inspection: the one opened for it, or a new draft.
	err = c.DB.QueryRow(ctx, `SELECT id FROM inspections WHERE appointment_id = $1`, out.AppointmentID).Scan(&out.InspectionID)
	if errors.Is(err, pgx.ErrNoRows) {
		err = c.DB.QueryRow(ctx, `INSERT INTO inspections (lead_id, appointment_id, site_address) VALUES ($1, $2, $3) RETURNING id`,
			leadID, out.AppointmentID, address).Scan(&out.InspectionID)
	}
	if err != nil {
		return nil, err
	}
	if out.PreviousStage, out.LeadStage, err = advanceLead(ctx, c.DB, in.LeadID, "inspection_scheduled"); err != nil {
		return nil, err
	}
	return out, nil
}

// joinedAddress is "address, suburb" from what is known, or nil.
func joinedAddress(address, suburb *string) *string {
	var parts []string
	for _, s := range []*string{address, suburb} {
		if s != nil && strings.TrimSpace(*s) != "" && !(len(parts) > 0 && strings.Contains(strings.ToLower(parts[0]), strings.ToLower(*s))) {
			parts = append(parts, strings.TrimSpace(*s))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	s := strings.Join(parts, ", ")
	return &s
}

type leadLost struct {
	LeadID                uuid.UUID         `json:"lead_id"`
	Stage                 string            `json:"stage"`
	PreviousStage         string            `json:"previous_stage"`
	Reason                string            `json:"reason"`
	ReasonCode            string            `json:"reason_code"`
	Changed               bool              `json:"changed"`
	CancelledAppointments int               `json:"cancelled_appointments"`
	CancelledEvents       int               `json:"cancelled_events"`
	Lead                  businesspack.Lead `json:"lead"`
}

// markLeadLost closes a lead as lost, with the reason (and its notes, kept in the lead's stage history).
// Marking a lost lead lost again updates the reason; a won lead is a conflict. Its scheduled inspection
// visits, and their calendar events, are cancelled.
func markLeadLost(ctx context.Context, c *executor.Call, in businesspack.LeadsMarkLostInput) (*leadLost, error) {
	leadID, err := executor.RecordID("lead_id", in.LeadID)
	if err != nil {
		return nil, err
	}
	reason := strings.TrimSpace(in.Reason)
	if reason == "" {
		return nil, executor.Invalid("reason is empty: say why the lead was lost")
	}
	if in.ReasonCode == "" {
		in.ReasonCode = "other"
	}
	current, err := lockLead(ctx, c, leadID)
	if err != nil {
		return nil, err
	}
	if current.Stage == "won" {
		return nil, executor.Conflict("lead %s is won (a quote was accepted); it cannot be lost", leadID)
	}
	out := &leadLost{LeadID: leadID, Stage: "lost", PreviousStage: current.Stage, Reason: reason, ReasonCode: in.ReasonCode, Lead: current}
	l, err := scanLead(c.DB.QueryRow(ctx, `UPDATE leads SET stage = 'lost', stage_reason = $2, lost_reason_code = $3, updated_at = now()
		WHERE id = $1 AND (stage, stage_reason, lost_reason_code) IS DISTINCT FROM ('lost', $2, $3)
		RETURNING `+leadColumns, leadID, reason, in.ReasonCode))
	switch {
	case errors.Is(err, pgx.ErrNoRows): // already lost for this reason
	case err != nil:
		return nil, err
	default:
		out.Changed, out.Lead = true, l
		if err := recordStageChange(ctx, c, leadID, current.Stage, "lost", &reason, trimmedText(&in.Notes)); err != nil {
			return nil, err
		}
	}
	tag, err := c.DB.Exec(ctx, `UPDATE calendar_events SET status = 'cancelled', cancelled_at = now(),
			cancel_reason = 'The lead was lost: ' || $2, updated_at = now()
		WHERE status = 'scheduled' AND id IN (SELECT calendar_event_id FROM inspection_appointments
			WHERE lead_id = $1 AND status = 'scheduled')`, leadID, reason)
	if err != nil {
		return nil, err
	}
	out.CancelledEvents = int(tag.RowsAffected())
	tag, err = c.DB.Exec(ctx, `UPDATE inspection_appointments SET status = 'cancelled', updated_at = now()
		WHERE lead_id = $1 AND status = 'scheduled'`, leadID)
	if err != nil {
		return nil, err
	}
	out.CancelledAppointments = int(tag.RowsAffected())
	return out, nil
}
