package businesshandlers

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	oshandlers "github.com/gemhq/gem/packs/os/handlers"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The calendar is kept in PostgreSQL (calendar_events): events with their times, place and status, tied to
// a lead and a job. Free slots are found within the business's working hours (GEM_BUSINESS_HOURS) in its
// time zone (GEM_BUSINESS_TIMEZONE), around the scheduled events.

func registerCalendar(h executor.Handlers, p *pack) {
	h.Func(businesspack.FindSlots, executor.Typed(p.findSlots))
	h.Func(businesspack.CreateEvent, executor.Typed(createEvent))
	h.Func(businesspack.UpdateEvent, executor.Typed(updateEvent))
	h.Func(businesspack.CancelEvent, executor.Typed(cancelEvent))
	h.Func(businesspack.AttachJobToEvent, executor.Typed(attachJobToEvent))
}

// workingHours are the business's working hours (businesspack.ParseWorkingHours), with the handlers'
// methods.
type workingHours businesspack.WorkingHours

// businessHours are the configured working hours, or not_configured when GEM_BUSINESS_HOURS or the time zone
// cannot be used.
func (p *pack) businessHours() (workingHours, error) {
	if _, err := p.today(); err != nil {
		return workingHours{}, err
	}
	spec := p.cfg.BusinessHours
	if strings.TrimSpace(spec) == "" {
		spec = businesspack.BusinessHoursDefault
	}
	wh, err := businesspack.ParseWorkingHours(spec)
	if err != nil {
		return workingHours(wh), executor.NotConfigured(err.Error(), []string{businesspack.EnvBusinessHours},
			"Set "+businesspack.EnvBusinessHours+" to working hours like \"Mon-Fri 07:00-17:00; Sat 08:00-12:00\", or unset it for "+businesspack.BusinessHoursDefault+".")
	}
	return workingHours(wh), nil
}

// wallClock is the time of a day's minute in the time zone; a time that does not exist on that day (a DST change)
// moves forward as time.Date does.
func wallClock(d businesspack.Date, minutes int, loc *time.Location) time.Time {
	y, m, day := d.Time().Date()
	return time.Date(y, m, day, minutes/60, minutes%60, 0, 0, loc)
}

// partOfDay is a date's morning (opening to noon), afternoon (noon to closing) or whole working day.
func (wh workingHours) partOfDay(d businesspack.Date, part string, loc *time.Location) (time.Time, time.Time, error) {
	day := wh.Days[d.Time().Weekday()]
	if day == nil {
		return time.Time{}, time.Time{}, executor.Invalid("preferred_window.date %s is a %s, not a working day (%s)", d, d.Time().Weekday(), wh.Spec)
	}
	open, closing := day.Open, day.Close
	switch part {
	case "morning":
		closing = min(closing, 12*60)
	case "afternoon":
		open = max(open, 12*60)
	}
	if closing <= open {
		return time.Time{}, time.Time{}, executor.Invalid("preferred_window.date %s has no working hours in the %s (%s)", d, part, wh.Spec)
	}
	return wallClock(d, open, loc), wallClock(d, closing, loc), nil
}

// calendarEvent is an event as the calendar tools return it.
type calendarEvent struct {
	EventID      uuid.UUID   `json:"event_id"`
	Title        string      `json:"title"`
	StartAt      time.Time   `json:"start_at"`
	EndAt        time.Time   `json:"end_at"`
	Location     *string     `json:"location"`
	Status       string      `json:"status"`
	CancelReason *string     `json:"cancel_reason"`
	CancelledAt  *time.Time  `json:"cancelled_at"`
	LeadID       *uuid.UUID  `json:"lead_id"`
	JobID        *uuid.UUID  `json:"job_id"`
	ContextRef   *contextRef `json:"context_ref"`
	CreatedAt    time.Time   `json:"created_at"`
	UpdatedAt    time.Time   `json:"updated_at"`
}

const eventColumns = `id, title, start_at, end_at, location, status, cancel_reason, cancelled_at, lead_id, job_id, context_type,
	context_id, created_at, updated_at`

func scanEvent(row pgx.Row) (calendarEvent, error) {
	var e calendarEvent
	var ctxType, ctxID *string
	err := row.Scan(&e.EventID, &e.Title, &e.StartAt, &e.EndAt, &e.Location, &e.Status, &e.CancelReason, &e.CancelledAt,
		&e.LeadID, &e.JobID, &ctxType, &ctxID, &e.CreatedAt, &e.UpdatedAt)
	e.ContextRef = oshandlers.RefFromColumns(ctxType, ctxID)
	return e, err
}

// lockEvent locks an event for the rest of the call and returns it.
func lockEvent(ctx context.Context, c *executor.Call, id uuid.UUID) (calendarEvent, error) {
	e, err := scanEvent(c.DB.QueryRow(ctx, `SELECT `+eventColumns+` FROM calendar_events WHERE id = $1 FOR UPDATE`, id))
	return e, executor.NotFoundIfNoRows(err, "calendar event", id)
}

// overlappingEvents lists the scheduled events that share time with [start, end), other than except.
func overlappingEvents(ctx context.Context, c *executor.Call, start, end time.Time, except uuid.UUID) ([]businesspack.EventOverlap, error) {
	return executor.QueryList(ctx, c.DB, func(r pgx.Row) (businesspack.EventOverlap, error) {
		var o businesspack.EventOverlap
		return o, r.Scan(&o.EventID, &o.Title, &o.StartAt, &o.EndAt)
	}, `SELECT id, title, start_at, end_at FROM calendar_events
		WHERE status = 'scheduled' AND tstzrange(start_at, end_at) && tstzrange($1, $2) AND id <> $3
		ORDER BY start_at, id LIMIT 50`, start, end, except)
}

// eventDraft is a new event.
type eventDraft struct {
	Title          string
	StartAt, EndAt time.Time
	Location       *string
	LeadID, JobID  *uuid.UUID
	Ref            *contextRef
}

// eventLongest bounds an event's length: a longer one is a typo (a wrong year), and would cover every free
// slot find_slots could offer for as long as it lasts.
const eventLongest = 31 * 24 * time.Hour

// checkEventTimes refuses an event that does not end after it starts or lasts longer than eventLongest.
func checkEventTimes(start, end time.Time) error {
	if !end.After(start) {
		return executor.Invalid("end_at (%s) must be after start_at (%s)", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	if end.Sub(start) > eventLongest {
		return executor.Invalid("the event lasts %s, longer than %d days: check start_at (%s) and end_at (%s)",
			end.Sub(start).Round(time.Hour), int(eventLongest.Hours()/24), start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	return nil
}

// insertEvent books an event and returns the scheduled events it overlaps (booked anyway: overlaps are
// reported, not refused).
func insertEvent(ctx context.Context, c *executor.Call, d eventDraft) (uuid.UUID, []businesspack.EventOverlap, error) {
	if err := checkEventTimes(d.StartAt, d.EndAt); err != nil {
		return uuid.Nil, nil, err
	}
	ctxType, ctxID := oshandlers.RefColumns(d.Ref)
	var id uuid.UUID
	err := c.DB.QueryRow(ctx, `INSERT INTO calendar_events (title, start_at, end_at, location, lead_id, job_id, context_type, context_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, d.Title, d.StartAt, d.EndAt, d.Location, d.LeadID, d.JobID, ctxType, ctxID).Scan(&id)
	if err != nil {
		return uuid.Nil, nil, err
	}
	overlaps, err := overlappingEvents(ctx, c, d.StartAt, d.EndAt, id)
	return id, overlaps, err
}

type eventCreated struct {
	EventID  uuid.UUID                   `json:"event_id"`
	Event    calendarEvent               `json:"event"`
	Overlaps []businesspack.EventOverlap `json:"overlaps"`
}

// createEvent books an event, tied to the lead and job its context_ref reaches. Overlapping events are
// reported in the result, not refused.
func createEvent(ctx context.Context, c *executor.Call, in businesspack.CreateEventInput) (*eventCreated, error) {
	title, err := checkEntityName("title", in.Title)
	if err != nil {
		return nil, err
	}
	ref, err := resolveRefIfSet(ctx, c, in.ContextRef, "lead", "job", "quote", "invoice", "inspection", "entity", "personal")
	if err != nil {
		return nil, err
	}
	d := eventDraft{Title: title, StartAt: in.StartAt, EndAt: in.EndAt, Location: trimmedText(in.Location)}
	if ref != nil {
		d.LeadID, d.JobID, d.Ref = ref.LeadID, ref.JobID, &ref.contextRef
	}
	id, overlaps, err := insertEvent(ctx, c, d)
	if err != nil {
		return nil, err
	}
	e, err := scanEvent(c.DB.QueryRow(ctx, `SELECT `+eventColumns+` FROM calendar_events WHERE id = $1`, id))
	if err != nil {
		return nil, err
	}
	return &eventCreated{EventID: id, Event: e, Overlaps: overlaps}, nil
}

// eventPatchKeys are the keys calendar.update_event's patch may hold.
var eventPatchKeys = []string{"title", "start_at", "end_at", "location"}

// updateEventInput is calendar.update_event's input as the handler reads it: the patch key by key, since a
// key left out keeps a field and null clears the location (businesspack.EventPatch cannot say null).
type updateEventInput struct {
	businesspack.UpdateEventInput
	Patch map[string]json.RawMessage `json:"patch"`
}

type eventUpdated struct {
	EventID       uuid.UUID                   `json:"event_id"`
	UpdatedFields []string                    `json:"updated_fields"`
	Event         calendarEvent               `json:"event"`
	Overlaps      []businesspack.EventOverlap `json:"overlaps"`
}

// updateEvent changes an event's title, times or location (null clears the location). A cancelled event
// is a conflict. Moving an inspection visit's event moves the visit. Only what changes is written.
func updateEvent(ctx context.Context, c *executor.Call, in updateEventInput) (*eventUpdated, error) {
	eventID, err := executor.RecordID("event_id", in.EventID)
	if err != nil {
		return nil, err
	}
	if err := checkPatchKeys(in.Patch, eventPatchKeys); err != nil {
		return nil, err
	}
	e, err := lockEvent(ctx, c, eventID)
	if err != nil {
		return nil, err
	}
	if e.Status == "cancelled" {
		return nil, executor.Conflict("calendar event %s is cancelled; create a new event instead", eventID)
	}
	next := e
	if raw, ok := in.Patch["title"]; ok {
		if next.Title, err = readPatchName("patch.title", raw); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"start_at", "end_at"} {
		raw, ok := in.Patch[k]
		if !ok {
			continue
		}
		var s string
		var t time.Time
		if err := json.Unmarshal(raw, &s); err == nil {
			t, err = time.Parse(time.RFC3339Nano, s)
		}
		if s == "" || t.IsZero() {
			return nil, executor.Invalid("patch.%s must be an RFC 3339 date-time", k)
		}
		if k == "start_at" {
			next.StartAt = t
		} else {
			next.EndAt = t
		}
	}
	if raw, ok := in.Patch["location"]; ok {
		if next.Location, err = readPatchText("patch.location", raw); err != nil {
			return nil, err
		}
	}
	if !next.EndAt.After(next.StartAt) {
		return nil, executor.Invalid("the event would end (%s) before it starts (%s)", next.EndAt.Format(time.RFC3339), next.StartAt.Format(time.RFC3339))
	}
	if err := checkEventTimes(next.StartAt, next.EndAt); err != nil {
		return nil, err
	}
	out := &eventUpdated{EventID: eventID, UpdatedFields: []string{}, Event: e}
	if next.Title != e.Title {
		out.UpdatedFields = append(out.UpdatedFields, "title")
	}
	if !next.StartAt.Equal(e.StartAt) {
		out.UpdatedFields = append(out.UpdatedFields, "start_at")
	}
	if !next.EndAt.Equal(e.EndAt) {
		out.UpdatedFields = append(out.UpdatedFields, "end_at")
	}
	if !executor.SamePtr(next.Location, e.Location) {
		out.UpdatedFields = append(out.UpdatedFields, "location")
	}
	if len(out.UpdatedFields) > 0 {
		if out.Event, err = scanEvent(c.DB.QueryRow(ctx, `UPDATE calendar_events SET title = $2, start_at = $3, end_at = $4, location = $5,
				updated_at = now()
			WHERE id = $1 RETURNING `+eventColumns, eventID, next.Title, next.StartAt, next.EndAt, next.Location)); err != nil {
			return nil, err
		}
		// An inspection visit booked with this event moves with it.
		if _, err := c.DB.Exec(ctx, `UPDATE inspection_appointments SET scheduled_for = $2, window_end = $3,
				duration_minutes = least(480, greatest(15, extract(epoch FROM $3::timestamptz - $2::timestamptz)::integer / 60)), updated_at = now()
			WHERE calendar_event_id = $1 AND status = 'scheduled' AND (scheduled_for, window_end) IS DISTINCT FROM ($2, $3)`,
			eventID, next.StartAt, next.EndAt); err != nil {
			return nil, err
		}
	}
	if out.Overlaps, err = overlappingEvents(ctx, c, out.Event.StartAt, out.Event.EndAt, eventID); err != nil {
		return nil, err
	}
	return out, nil
}

type eventCancelled struct {
	Cancelled             bool          `json:"cancelled"`
	EventID               uuid.UUID     `json:"event_id"`
	AlreadyCancelled      bool          `json:"already_cancelled"`
	CancelledAppointments int           `json:"cancelled_appointments"`
	Event                 calendarEvent `json:"event"`
}

// cancelEvent cancels an event, with the reason; an inspection visit booked with it is cancelled too.
// Cancelling it again changes nothing.
func cancelEvent(ctx context.Context, c *executor.Call, in businesspack.CancelEventInput) (*eventCancelled, error) {
	eventID, err := executor.RecordID("event_id", in.EventID)
	if err != nil {
		return nil, err
	}
	e, err := lockEvent(ctx, c, eventID)
	if err != nil {
		return nil, err
	}
	out := &eventCancelled{Cancelled: true, EventID: eventID, Event: e}
	if e.Status == "cancelled" {
		out.AlreadyCancelled = true
		return out, nil
	}
	if out.Event, err = scanEvent(c.DB.QueryRow(ctx, `UPDATE calendar_events SET status = 'cancelled', cancel_reason = $2,
			cancelled_at = now(), updated_at = now()
		WHERE id = $1 RETURNING `+eventColumns, eventID, trimmedText(&in.Reason))); err != nil {
		return nil, err
	}
	tag, err := c.DB.Exec(ctx, `UPDATE inspection_appointments SET status = 'cancelled', updated_at = now()
		WHERE calendar_event_id = $1 AND status = 'scheduled'`, eventID)
	if err != nil {
		return nil, err
	}
	out.CancelledAppointments = int(tag.RowsAffected())
	return out, nil
}

type jobAttached struct {
	Attached bool          `json:"attached"`
	EventID  uuid.UUID     `json:"event_id"`
	Changed  bool          `json:"changed"`
	Event    calendarEvent `json:"event"`
}

// attachJobToEvent ties an event to a job (and the job's lead, when the event has none) or to a lead. A
// cancelled event is a conflict; attaching what is attached already changes nothing.
func attachJobToEvent(ctx context.Context, c *executor.Call, in businesspack.AttachJobToEventInput) (*jobAttached, error) {
	eventID, err := executor.RecordID("event_id", in.EventID)
	if err != nil {
		return nil, err
	}
	ref, err := resolveRef(ctx, c, executor.ValueOr(in.ContextRef, contextRef{}), "job", "lead")
	if err != nil {
		return nil, err
	}
	e, err := lockEvent(ctx, c, eventID)
	if err != nil {
		return nil, err
	}
	if e.Status == "cancelled" {
		return nil, executor.Conflict("calendar event %s is cancelled", eventID)
	}
	jobID, leadID := e.JobID, e.LeadID
	if ref.Type == "job" {
		jobID = &ref.RecordID
		if leadID == nil {
			leadID = ref.LeadID
		}
	} else {
		leadID = &ref.RecordID
	}
	out := &jobAttached{Attached: true, EventID: eventID, Event: e}
	if executor.SamePtr(jobID, e.JobID) && executor.SamePtr(leadID, e.LeadID) {
		return out, nil
	}
	out.Changed = true
	if out.Event, err = scanEvent(c.DB.QueryRow(ctx, `UPDATE calendar_events SET job_id = $2, lead_id = $3, updated_at = now()
		WHERE id = $1 RETURNING `+eventColumns, eventID, jobID, leadID)); err != nil {
		return nil, err
	}
	return out, nil
}

// findSlotsMax is the most slots calendar.find_slots returns; findSlotsMaxRange the longest range it searches.
const (
	findSlotsMax      = 100
	findSlotsMaxRange = 92 * 24 * time.Hour
)

// findSlots lists free times of the duration asked for (60 minutes unless said) between from and to,
// within working hours and around scheduled events. Slots start on the quarter hour and follow each other
// back to back; times are given in the business's time zone.
func (p *pack) findSlots(ctx context.Context, c *executor.Call, in businesspack.FindSlotsInput) (*businesspack.FindSlotsOutput, error) {
	wh, err := p.businessHours()
	if err != nil {
		return nil, err
	}
	if !in.To.After(in.From) {
		return nil, executor.Invalid("to (%s) must be after from (%s)", in.To.Format(time.RFC3339), in.From.Format(time.RFC3339))
	}
	if in.To.Sub(in.From) > findSlotsMaxRange {
		return nil, executor.Invalid("the range is longer than %d days: search a shorter one", int(findSlotsMaxRange.Hours()/24))
	}
	duration := time.Duration(executor.LimitOr(in.DurationMinutes, 60)) * time.Minute
	maxSlots := executor.LimitOr(in.MaxSlots, 50)
	busy, err := executor.QueryList(ctx, c.DB, func(r pgx.Row) ([2]time.Time, error) {
		var b [2]time.Time
		return b, r.Scan(&b[0], &b[1])
	}, `SELECT start_at, end_at FROM calendar_events
		WHERE status = 'scheduled' AND tstzrange(start_at, end_at) && tstzrange($1, $2) ORDER BY start_at`, in.From, in.To)
	if err != nil {
		return nil, err
	}
	out := &businesspack.FindSlotsOutput{Slots: []businesspack.FreeSlot{}, DurationMinutes: int(duration.Minutes()), TimeZone: p.loc.String(), BusinessHours: wh.Spec}
	last := businesspack.DateOf(in.To.In(p.loc))
	for d := businesspack.DateOf(in.From.In(p.loc)); !last.Before(d); d = d.AddDays(1) {
		day := wh.Days[d.Time().Weekday()]
		if day == nil {
			continue
		}
		start, end := laterOf(wallClock(d, day.Open, p.loc), in.From), earlierOf(wallClock(d, day.Close, p.loc), in.To)
		for _, free := range subtractBusy(start, end, busy) {
			// Quarter hours are whole in every zone's offset, so truncating the instant keeps local quarter hours.
			s := free[0].Truncate(15 * time.Minute)
			if s.Before(free[0]) {
				s = s.Add(15 * time.Minute)
			}
			for ; !s.Add(duration).After(free[1]); s = s.Add(duration) {
				if len(out.Slots) == maxSlots {
					out.Truncated = true
					out.Count = len(out.Slots)
					return out, nil
				}
				local := s.In(p.loc)
				out.Slots = append(out.Slots, businesspack.FreeSlot{StartAt: local, EndAt: s.Add(duration).In(p.loc), Date: businesspack.DateOf(local),
					Weekday: local.Weekday().String()})
			}
		}
	}
	out.Count = len(out.Slots)
	return out, nil
}

// subtractBusy is [start, end) without the busy intervals (sorted by start), as free intervals.
func subtractBusy(start, end time.Time, busy [][2]time.Time) [][2]time.Time {
	var free [][2]time.Time
	for _, b := range busy {
		if !b[1].After(start) || !b[0].Before(end) {
			continue
		}
		if b[0].After(start) {
			free = append(free, [2]time.Time{start, b[0]})
		}
		start = laterOf(start, b[1])
	}
	if end.After(start) {
		free = append(free, [2]time.Time{start, end})
	}
	return free
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlierOf(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
