package executor_test

import (
	"testing"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGEMCalendarEvents(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	chain := b.salesChainSQL(t, ctx)
	first, rc := b.ok(t, ctx, "calendar.create_event", J{"title": "Roof repair, day 1", "start_at": "2027-03-01T08:00:00+11:00",
		"end_at": "2027-03-01T16:00:00+11:00", "location": "12 Station St, Marrickville", "context_ref": ref("job", chain.job)})
	firstID := first.str(t, "event_id")
	require.Equal(t, map[string]int{"calendar_events insert": 1}, writes(rc))
	require.Equal(t, []string{firstID}, wroteIDs(rc, "calendar_events", "insert"))
	require.Equal(t, chain.job, first.str(t, "event.job_id"))
	require.Equal(t, chain.lead, first.str(t, "event.lead_id"), "the job's lead")
	require.Equal(t, "scheduled", first.str(t, "event.status"))
	require.Empty(t, first.list(t, "overlaps"))

	// An overlapping event is booked, and the overlap reported; one that only touches does not overlap.
	second, _ := b.ok(t, ctx, "calendar.create_event", J{"title": "Quote visit", "start_at": "2027-03-01T15:00:00+11:00", "end_at": "2027-03-01T16:30:00+11:00"})
	secondID := second.str(t, "event_id")
	require.Len(t, second.list(t, "overlaps"), 1)
	require.Equal(t, firstID, second.str(t, "overlaps.0.event_id"))
	require.Equal(t, "Roof repair, day 1", second.str(t, "overlaps.0.title"))
	require.Nil(t, second.get(t, "event.context_ref"))
	touching, _ := b.ok(t, ctx, "calendar.create_event", J{"title": "Supplier call", "start_at": "2027-03-01T16:30:00+11:00", "end_at": "2027-03-01T17:00:00+11:00",
		"context_ref": ref("personal", "phone")})
	require.Empty(t, touching.list(t, "overlaps"))
	require.Equal(t, "personal", touching.str(t, "event.context_ref.type"))

	b.refused(t, ctx, registry.CodeValidation, "calendar.create_event", J{"title": "x", "start_at": "2027-03-01T10:00:00Z", "end_at": "2027-03-01T10:00:00Z"})
	b.refused(t, ctx, registry.CodeValidation, "calendar.create_event", J{"title": "x", "start_at": "2027-03-01T10:00:00Z", "end_at": "2027-03-01T09:00:00Z"})
	b.refused(t, ctx, registry.CodeValidation, "calendar.create_event", J{"title": " ", "start_at": "2027-03-01T10:00:00Z", "end_at": "2027-03-01T11:00:00Z"})
	b.refused(t, ctx, registry.CodeNotFound, "calendar.create_event", J{"title": "x", "start_at": "2027-03-01T10:00:00Z", "end_at": "2027-03-01T11:00:00Z",
		"context_ref": ref("lead", uuid.NewString())})

	// Update: a validated patch; only changes are written; overlaps reported.
	u, rc := b.ok(t, ctx, "calendar.update_event", J{"event_id": secondID, "patch": J{"start_at": "2027-03-01T16:00:00+11:00", "end_at": "2027-03-01T16:45:00+11:00", "location": "3 Elm St"}})
	require.Equal(t, []any{"start_at", "end_at", "location"}, u.list(t, "updated_fields"))
	require.Equal(t, "3 Elm St", u.str(t, "event.location"))
	require.Len(t, u.list(t, "overlaps"), 1, "now it overlaps the supplier call, not the job")
	require.Equal(t, touching.str(t, "event_id"), u.str(t, "overlaps.0.event_id"))
	require.Equal(t, map[string]int{"calendar_events update": 1}, writes(rc))
	u, rc = b.ok(t, ctx, "calendar.update_event", J{"event_id": secondID, "patch": J{"start_at": "2027-03-01T05:00:00Z", "location": "3 Elm St"}})
	require.Empty(t, u.list(t, "updated_fields"), "the same instant, written in UTC")
	require.Empty(t, rc.Effects.DBWrites)
	u, _ = b.ok(t, ctx, "calendar.update_event", J{"event_id": secondID, "patch": J{"location": nil, "title": "Quote visit (Ann)"}})
	require.Nil(t, u.get(t, "event.location"))
	for key, patch := range map[string]J{
		"patch.status":   {"status": "cancelled"},
		"patch.start_at": {"start_at": "tomorrow"},
		"patch.title":    {"title": 7},
		"end":            {"end_at": "2027-03-01T15:00:00+11:00"},
		"patch is empty": {},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "calendar.update_event", J{"event_id": secondID, "patch": patch})
		requireNamesField(t, r, key)
	}
	b.refused(t, ctx, registry.CodeNotFound, "calendar.update_event", J{"event_id": uuid.NewString(), "patch": J{"title": "x"}})

	// Cancel: twice is still cancelled, with no new write; a cancelled event refuses changes.
	c, rc := b.ok(t, ctx, "calendar.cancel_event", J{"event_id": secondID, "reason": "Client postponed"})
	require.Equal(t, true, c.get(t, "cancelled"))
	require.Equal(t, false, c.get(t, "already_cancelled"))
	require.Equal(t, "Client postponed", c.str(t, "event.cancel_reason"))
	require.Equal(t, map[string]int{"calendar_events update": 1}, writes(rc))
	c, rc = b.ok(t, ctx, "calendar.cancel_event", J{"event_id": secondID})
	require.Equal(t, true, c.get(t, "cancelled"))
	require.Equal(t, true, c.get(t, "already_cancelled"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "calendar.update_event", J{"event_id": secondID, "patch": J{"title": "x"}})
	b.refused(t, ctx, registry.CodeConflict, "calendar.attach_job_to_event", J{"event_id": secondID, "context_ref": ref("job", chain.job)})
	b.refused(t, ctx, registry.CodeNotFound, "calendar.cancel_event", J{"event_id": uuid.NewString()})
	third, _ := b.ok(t, ctx, "calendar.create_event", J{"title": "Quote visit", "start_at": "2027-03-01T15:00:00+11:00", "end_at": "2027-03-01T16:30:00+11:00"})
	require.Len(t, third.list(t, "overlaps"), 1, "cancelled events overlap nothing")

	// Attach: a job brings its lead; a lead; repeats write nothing; the record must exist.
	a, rc := b.ok(t, ctx, "calendar.attach_job_to_event", J{"event_id": third.str(t, "event_id"), "context_ref": ref("job", chain.job)})
	require.Equal(t, true, a.get(t, "attached"))
	require.Equal(t, chain.job, a.str(t, "event.job_id"))
	require.Equal(t, chain.lead, a.str(t, "event.lead_id"))
	require.Equal(t, map[string]int{"calendar_events update": 1}, writes(rc))
	a, rc = b.ok(t, ctx, "calendar.attach_job_to_event", J{"event_id": third.str(t, "event_id"), "context_ref": ref("lead", chain.lead)})
	require.Equal(t, true, a.get(t, "attached"))
	require.Equal(t, false, a.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites)
	missing := uuid.NewString()
	r := b.refused(t, ctx, registry.CodeNotFound, "calendar.attach_job_to_event", J{"event_id": third.str(t, "event_id"), "context_ref": ref("job", missing)})
	require.Contains(t, r.Error.Message, missing)
	b.refused(t, ctx, registry.CodeNotFound, "calendar.attach_job_to_event", J{"event_id": missing, "context_ref": ref("job", chain.job)})
	b.refused(t, ctx, registry.CodeValidation, "calendar.attach_job_to_event", J{"event_id": third.str(t, "event_id"), "context_ref": ref("quote", chain.quote)})
}

// TestGEMCalendarInspectionEvent checks that an inspection visit's event carries the visit with it.
func TestGEMCalendarInspectionEvent(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	s, _ := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": lead, "preferred_window": J{"start": "2027-03-02T09:00:00+11:00"}})
	event := s.str(t, "event_id")
	_, rc := b.ok(t, ctx, "calendar.update_event", J{"event_id": event, "patch": J{"start_at": "2027-03-02T13:00:00+11:00", "end_at": "2027-03-02T14:30:00+11:00"}})
	require.Equal(t, map[string]int{"calendar_events update": 1, "inspection_appointments update": 1}, writes(rc))
	require.Equal(t, 90, b.count(t, ctx, `SELECT duration_minutes FROM inspection_appointments WHERE calendar_event_id = $1
		AND scheduled_for = '2027-03-02T13:00:00+11:00'`, event))
	c, rc := b.ok(t, ctx, "calendar.cancel_event", J{"event_id": event, "reason": "Rain"})
	require.Equal(t, int64(1), c.int(t, "cancelled_appointments"))
	require.Equal(t, map[string]int{"calendar_events update": 1, "inspection_appointments update": 1}, writes(rc))
}

func TestGEMCalendarFindSlots(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil) // Australia/Sydney, Mon-Fri 07:00-17:00

	starts := func(r res) []string {
		var out []string
		for _, s := range r.list(t, "slots") {
			out = append(out, s.(map[string]any)["start_at"].(string))
		}
		require.Equal(t, int64(len(out)), r.int(t, "count"))
		return out
	}

	// Friday 2 April 2027 to Monday 5 April 2027: daylight saving ends on the Sunday, so Friday is UTC+11 and
	// Monday UTC+10; the weekend has no working hours. Events on Friday morning are worked around.
	b.ok(t, ctx, "calendar.create_event", J{"title": "Job", "start_at": "2027-04-02T09:00:00+11:00", "end_at": "2027-04-02T10:40:00+11:00"})
	b.ok(t, ctx, "calendar.create_event", J{"title": "Inside the first", "start_at": "2027-04-02T09:30:00+11:00", "end_at": "2027-04-02T10:00:00+11:00"})
	cancelled, _ := b.ok(t, ctx, "calendar.create_event", J{"title": "Off", "start_at": "2027-04-02T13:00:00+11:00", "end_at": "2027-04-02T17:00:00+11:00"})
	b.ok(t, ctx, "calendar.cancel_event", J{"event_id": cancelled.str(t, "event_id")})
	b.ok(t, ctx, "calendar.create_event", J{"title": "Monday job", "start_at": "2027-04-05T07:00:00+10:00", "end_at": "2027-04-05T15:00:00+10:00"})

	r, rc := b.ok(t, ctx, "calendar.find_slots", J{"from": "2027-04-02T00:00:00+11:00", "to": "2027-04-06T00:00:00+10:00", "duration_minutes": 120})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, []string{
		"2027-04-02T07:00:00+11:00", // 07:00-09:00, before the job
		"2027-04-02T10:45:00+11:00", // after it, on the quarter hour
		"2027-04-02T12:45:00+11:00",
		"2027-04-02T14:45:00+11:00", // the cancelled event takes no time; 16:45 would end after 17:00
		"2027-04-05T15:00:00+10:00", // Monday, after the daylight-saving change
	}, starts(r))
	require.Equal(t, "2027-04-05T17:00:00+10:00", r.str(t, "slots.4.end_at"))
	require.Equal(t, "Monday", r.str(t, "slots.4.weekday"))
	require.Equal(t, "2027-04-05", r.str(t, "slots.4.date"))
	require.Equal(t, "Australia/Sydney", r.str(t, "time_zone"))
	require.Equal(t, "Mon-Fri 07:00-17:00", r.str(t, "business_hours"))
	require.Equal(t, false, r.get(t, "truncated"))

	// A range starting mid-day starts there (rounded to the quarter hour); the output is bounded.
	r, _ = b.ok(t, ctx, "calendar.find_slots", J{"from": "2027-04-05T15:05:00+10:00", "to": "2027-04-09T17:00:00+10:00", "max_slots": 3})
	require.Equal(t, []string{"2027-04-05T15:15:00+10:00", "2027-04-06T07:00:00+10:00", "2027-04-06T08:00:00+10:00"}, starts(r),
		"15:15-16:15, then 16:15 would need until 17:15; Tuesday from opening")
	require.Equal(t, true, r.get(t, "truncated"))
	require.Equal(t, int64(60), r.int(t, "duration_minutes"))

	b.refused(t, ctx, registry.CodeValidation, "calendar.find_slots", J{"from": "2027-04-05T00:00:00Z", "to": "2027-04-05T00:00:00Z"})
	b.refused(t, ctx, registry.CodeValidation, "calendar.find_slots", J{"from": "2027-01-01T00:00:00Z", "to": "2027-06-01T00:00:00Z"})
	b.refused(t, ctx, registry.CodeValidation, "calendar.find_slots", J{"from": "2027-04-05T00:00:00Z", "to": "2027-04-06T00:00:00Z", "duration_minutes": 10})
}

func TestGEMCalendarBusinessHours(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.business = businesspack.Config{TimeZone: "Australia/Perth", BusinessHours: "Sat 08:00-12:00; Mon,Wed 09:00-10:00"}
	b.startExecutor(t, nil)

	r, _ := b.ok(t, ctx, "calendar.find_slots", J{"from": "2027-04-02T00:00:00Z", "to": "2027-04-06T00:00:00Z", "duration_minutes": 240})
	require.Len(t, r.list(t, "slots"), 1)
	require.Equal(t, "2027-04-03T08:00:00+08:00", r.str(t, "slots.0.start_at"), "Saturday in Perth")
	require.Equal(t, "Australia/Perth", r.str(t, "time_zone"))

	ctx2, bad := setup(t)
	bad.business = businesspack.Config{BusinessHours: "weekdays 9 to 5"}
	bad.startExecutor(t, nil)
	rr := bad.run(t, ctx2, "calendar.find_slots", J{"from": "2027-04-02T00:00:00Z", "to": "2027-04-06T00:00:00Z"})
	require.Equal(t, registry.StatusNotConfigured, rr.Status)
	require.Contains(t, rr.Error.Message, "GEM_BUSINESS_HOURS")
}
