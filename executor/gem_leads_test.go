package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestGEMLeadsCreateOnePerPhone(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	first := b.call(t, ctx, "leads.create", `{"name": "Tom Nguyen", "phone": "0400 111 222", "suburb": "Newtown", "source": "referral"}`)
	r1 := b.waitOne(t, ctx, first)
	require.Equal(t, registry.StatusSucceeded, r1.Status, "%+v", r1.Error)
	require.False(t, r1.IdempotencyHit)
	require.Equal(t, map[string]int{"leads insert": 1}, writes(r1))
	res1 := decodeResult(t, r1)
	require.Equal(t, true, res1.get(t, "created"))
	require.Equal(t, "new", res1.str(t, "lead.stage"))
	require.Equal(t, "referral", res1.str(t, "lead.source"))

	// The same phone: the executor answers with the first call's receipt (keyed on phone).
	second := b.call(t, ctx, "leads.create", `{"name": "Tom N.", "phone": "0400 111 222", "suburb": "Enmore", "source": "meta"}`)
	r2 := b.waitOne(t, ctx, second)
	require.Equal(t, registry.StatusSucceeded, r2.Status)
	require.True(t, r2.IdempotencyHit)
	require.Equal(t, &first, r2.IdempotencyOf)
	require.Equal(t, "+61400111222", r2.IdempotencyKey, "keyed by the number in E.164")
	require.JSONEq(t, string(r1.Result), string(r2.Result), "the second call answers with the first call's result")
	require.Empty(t, r2.Effects.DBWrites, "the handler did not run again")

	// The same number typed differently is the same key: the first call's receipt again.
	r3, rc := b.ok(t, ctx, "leads.create", J{"name": "Tom", "phone": "+61 400 111 222", "suburb": "Newtown"})
	require.Equal(t, res1.str(t, "lead_id"), r3.str(t, "lead_id"))
	require.True(t, rc.IdempotencyHit)
	require.Equal(t, &first, rc.IdempotencyOf)
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads`))
	require.Equal(t, "Tom Nguyen", b.str(t, ctx, `SELECT name FROM leads`))

	r4, _ := b.ok(t, ctx, "leads.create", J{"name": "Ann Lee", "phone": newPhone(), "suburb": " Dulwich Hill ", "email": "Ann <ann@example.com>",
		"notes": "Leaking skylight", "address": "3 Elm St"})
	require.Equal(t, "other", r4.str(t, "lead.source"), "the default source")
	require.Equal(t, "Dulwich Hill", r4.str(t, "lead.suburb"))
	require.Equal(t, "ann@example.com", r4.str(t, "lead.email"))
	require.Equal(t, "3 Elm St", r4.str(t, "lead.address"))

	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "x", "phone": newPhone()})
	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "x", "phone": newPhone(), "suburb": " "})
	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "x", "phone": "12", "suburb": "Newtown"})
	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "x", "phone": newPhone(), "suburb": "Newtown", "email": "nope"})
	b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "x", "phone": newPhone(), "suburb": "Newtown", "source": "website"})
}

func TestGEMLeadsStagesListAndLoss(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	mk := func(name, suburb, source string) string {
		r, _ := b.ok(t, ctx, "leads.create", J{"name": name, "phone": newPhone(), "suburb": suburb, "source": source})
		return r.str(t, "lead_id")
	}
	ann, bob, cat := mk("Ann", "Newtown", "gmb"), mk("Bob", "Enmore", "meta"), mk("Cat", "newtown", "gmb")

	r, rc := b.ok(t, ctx, "leads.update_stage", J{"lead_id": ann, "stage": "contacted", "notes": "Called, keen"})
	require.Equal(t, "new", r.str(t, "previous_stage"))
	require.Equal(t, "contacted", r.str(t, "stage"))
	require.Equal(t, "Called, keen", r.str(t, "lead.stage_reason"))
	require.Equal(t, map[string]int{"leads update": 1, "lead_stage_changes insert": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "leads.update_stage", J{"lead_id": ann, "stage": "contacted", "notes": "Called, keen"})
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites, "the same stage and notes again")
	r, rc = b.ok(t, ctx, "leads.update_stage", J{"lead_id": ann, "stage": "contacted"})
	require.Empty(t, rc.Effects.DBWrites, "the same stage without notes")
	b.ok(t, ctx, "leads.update_stage", J{"lead_id": bob, "stage": "quoted"})
	b.refused(t, ctx, registry.CodeValidation, "leads.update_stage", J{"lead_id": bob, "stage": "inspected"})
	b.refused(t, ctx, registry.CodeNotFound, "leads.update_stage", J{"lead_id": uuid.NewString(), "stage": "won"})

	list := func(in J) []string {
		r, rc := b.ok(t, ctx, "leads.list_by_stage", in)
		require.Empty(t, rc.Effects.DBWrites)
		var ids []string
		for _, l := range r.list(t, "leads") {
			ids = append(ids, l.(map[string]any)["lead_id"].(string))
		}
		require.Equal(t, int64(len(ids)), r.int(t, "count"))
		return ids
	}
	require.Equal(t, []string{cat, bob, ann}, list(J{}), "newest first")
	require.Equal(t, []string{ann}, list(J{"stage": "contacted"}))
	require.Equal(t, []string{cat, ann}, list(J{"suburb": "NEWTOWN"}), "any case")
	require.Equal(t, []string{cat}, list(J{"suburb": "Newtown", "source": "gmb", "stage": "new"}))
	require.Equal(t, []string{cat}, list(J{"limit": 1}))
	b.refused(t, ctx, registry.CodeValidation, "leads.list_by_stage", J{"stage": "hot"})
	b.refused(t, ctx, registry.CodeValidation, "leads.list_by_stage", J{"source": "--"})

	// Lost: the reason and notes go into the history; its booked visit and the visit's event are cancelled.
	start := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Hour)
	s, _ := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": ann, "preferred_window": J{"start": rfc3339(start)}})
	r, rc = b.ok(t, ctx, "leads.mark_lost", J{"lead_id": ann, "reason": "Went with a cheaper quote", "notes": "Price was $2k under", "reason_code": "price"})
	require.Equal(t, "lost", r.str(t, "stage"))
	require.Equal(t, "inspection_scheduled", r.str(t, "previous_stage"))
	require.Equal(t, int64(1), r.int(t, "cancelled_appointments"))
	require.Equal(t, int64(1), r.int(t, "cancelled_events"))
	require.Equal(t, map[string]int{"leads update": 1, "lead_stage_changes insert": 1, "inspection_appointments update": 1, "calendar_events update": 1}, writes(rc))
	require.Equal(t, "cancelled", b.str(t, ctx, `SELECT status FROM calendar_events WHERE id = $1`, s.str(t, "event_id")))
	require.Equal(t, "Price was $2k under", b.str(t, ctx, `SELECT notes FROM lead_stage_changes WHERE lead_id = $1 AND to_stage = 'lost'`, ann))
	r, rc = b.ok(t, ctx, "leads.mark_lost", J{"lead_id": ann, "reason": "Went with a cheaper quote", "reason_code": "price"})
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites, "already lost for this reason")
	b.refused(t, ctx, registry.CodeValidation, "leads.mark_lost", J{"lead_id": ann, "reason": " "})
	b.refused(t, ctx, registry.CodeNotFound, "leads.mark_lost", J{"lead_id": uuid.NewString(), "reason": "x"})

	// Back in play: the reason code goes with the loss. A won lead cannot be lost.
	b.ok(t, ctx, "leads.update_stage", J{"lead_id": ann, "stage": "contacted", "notes": "Changed their mind"})
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM leads WHERE lost_reason_code IS NOT NULL`))
	b.ok(t, ctx, "leads.update_stage", J{"lead_id": bob, "stage": "won"})
	b.refused(t, ctx, registry.CodeConflict, "leads.mark_lost", J{"lead_id": bob, "reason": "x"})
	require.Equal(t, []string{"new→contacted", "inspection_scheduled→lost", "lost→contacted"}, b.strs(t, ctx,
		`SELECT from_stage || '→' || to_stage FROM lead_stage_changes WHERE lead_id = $1 ORDER BY created_at`, ann),
		"the changes made by the stage tools (schedule_inspection's advance is not one)")
}

func TestGEMLeadsSourcesAndPhotos(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	r, rc := b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "google_ads", "campaign": J{"name": "winter roofs", "keyword": "roof leak"}})
	require.Equal(t, true, r.get(t, "added"))
	require.Equal(t, "google_ads", r.str(t, "lead_source"), "a lead from other takes the source")
	require.Equal(t, map[string]int{"lead_sources insert": 1, "leads update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "google_ads", "campaign": J{"name": "winter roofs", "keyword": "roof leak"}})
	require.Equal(t, false, r.get(t, "added"))
	require.Equal(t, false, r.get(t, "updated"))
	require.Empty(t, rc.Effects.DBWrites, "the same attribution again")
	r, rc = b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "google_ads", "campaign": J{"name": "winter roofs", "keyword": "leaking roof"}})
	require.Equal(t, true, r.get(t, "updated"))
	require.Equal(t, map[string]int{"lead_sources update": 1}, writes(rc))
	r, _ = b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "Referral"})
	require.Equal(t, "google_ads", r.str(t, "lead_source"), "the lead keeps its first real source")
	require.Len(t, r.list(t, "sources"), 2)
	require.Equal(t, "leaking roof", r.str(t, "sources.0.campaign.keyword"))

	// GEM's contract takes any channel: a new one is kept, in one spelling.
	r, _ = b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "Local TV-ad", "campaign": J{"name": "spring", "budget": "100"}})
	require.Equal(t, "local_tv_ad", r.str(t, "source"))
	require.Equal(t, "100", r.str(t, "sources.2.campaign.budget"))
	rr := b.refused(t, ctx, registry.CodeValidation, "leads.add_source", J{"lead_id": lead, "source": " -- "})
	require.Contains(t, rr.Error.Message, "names no channel")
	b.refused(t, ctx, registry.CodeValidation, "leads.add_source", J{"lead_id": lead, "source": "meta", "campaign": J{"name": 5}})
	b.refused(t, ctx, registry.CodeNotFound, "leads.add_source", J{"lead_id": uuid.NewString(), "source": "meta"})

	a, b2 := "https://photos.example.com/share/abc", "https://drive.example.com/folder/xyz"
	r, rc = b.ok(t, ctx, "leads.add_photos_link", J{"lead_id": lead, "links": []string{a, b2, a}, "label": "leak photos"})
	require.Equal(t, int64(2), r.int(t, "added"))
	require.Equal(t, map[string]int{"lead_photo_links insert": 2}, writes(rc))
	r, rc = b.ok(t, ctx, "leads.add_photos_link", J{"lead_id": lead, "links": []string{b2}})
	require.Equal(t, int64(0), r.int(t, "added"))
	require.Len(t, r.list(t, "links"), 2)
	require.Equal(t, "leak photos", r.str(t, "links.0.label"))
	require.Empty(t, rc.Effects.DBWrites)
	rr = b.refused(t, ctx, registry.CodeValidation, "leads.add_photos_link", J{"lead_id": lead, "links": []string{a, "ftp://example.com/x"}})
	require.Contains(t, rr.Error.Message, "links[1]")
	b.refused(t, ctx, registry.CodeValidation, "leads.add_photos_link", J{"lead_id": lead, "links": []string{}})
	b.refused(t, ctx, registry.CodeNotFound, "leads.add_photos_link", J{"lead_id": uuid.NewString(), "links": []string{a}})
}

func TestGEMLeadsScheduleInspection(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil) // the default business: Australia/Sydney, Mon-Fri 07:00-17:00

	lead, _ := b.ok(t, ctx, "leads.create", J{"name": "Ann Lee", "phone": newPhone(), "suburb": "Newtown", "address": "3 Elm St"})
	leadID := lead.str(t, "lead_id")
	other, _ := b.ok(t, ctx, "calendar.create_event", J{"title": "Gutter job", "start_at": "2027-03-02T09:30:00+11:00", "end_at": "2027-03-02T11:00:00+11:00"})

	// A time range: a visit, a draft inspection for it, a calendar event (overlaps reported), the lead moves on.
	win := J{"start": "2027-03-02T09:00:00+11:00", "end": "2027-03-02T10:00:00+11:00"}
	r, rc := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": win, "notes": "Dog in the yard"})
	inspection := r.str(t, "inspection_id")
	require.Equal(t, true, r.get(t, "created"))
	require.Equal(t, true, r.get(t, "window.timed"))
	require.Equal(t, "2027-03-02", r.str(t, "window.date"))
	require.Equal(t, "3 Elm St, Newtown", r.str(t, "address"))
	require.Equal(t, "new", r.str(t, "previous_stage"))
	require.Equal(t, "inspection_scheduled", r.str(t, "lead_stage"))
	require.Len(t, r.list(t, "overlaps"), 1)
	require.Equal(t, other.str(t, "event_id"), r.str(t, "overlaps.0.event_id"))
	require.Equal(t, map[string]int{"inspection_appointments insert": 1, "inspections insert": 1, "calendar_events insert": 1, "leads update": 1}, writes(rc))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM inspections i JOIN inspection_appointments a ON a.id = i.appointment_id
		WHERE i.id = $1 AND i.status = 'draft' AND i.lead_id = $2 AND a.status = 'scheduled' AND a.duration_minutes = 60
		AND a.notes = 'Dog in the yard' AND a.calendar_event_id = $3 AND i.site_address = '3 Elm St, Newtown'`, inspection, leadID, r.str(t, "event_id")))

	// The same window again is the same booking.
	again, rc := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": win})
	require.Equal(t, false, again.get(t, "created"))
	require.Equal(t, inspection, again.str(t, "inspection_id"))
	require.Empty(t, rc.Effects.DBWrites)

	// A date and part of the day: working hours in Sydney, to be confirmed, no calendar event.
	r, rc = b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": J{"date": "2027-03-05", "part_of_day": "morning"}})
	require.Equal(t, false, r.get(t, "window.timed"))
	require.Equal(t, "morning", r.str(t, "window.part_of_day"))
	require.Equal(t, "2027-03-04T20:00:00Z", rfc3339(mustTime(t, r.str(t, "window.start_at"))), "07:00 in Sydney (UTC+11)")
	require.Equal(t, "2027-03-05T01:00:00Z", rfc3339(mustTime(t, r.str(t, "window.end_at"))), "noon")
	require.Nil(t, r.get(t, "event_id"))
	require.Equal(t, map[string]int{"inspection_appointments insert": 1, "inspections insert": 1}, writes(rc))
	r, _ = b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": J{"date": "2027-03-05"}})
	require.Equal(t, "any", r.str(t, "window.part_of_day"))
	require.Equal(t, "2027-03-05T06:00:00Z", rfc3339(mustTime(t, r.str(t, "window.end_at"))), "17:00 in Sydney")

	// A range longer than 8 hours ("any time on Tuesday") is a preference to confirm: no calendar event.
	r, rc = b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": J{"start": "2027-03-09T08:00:00+11:00", "end": "2027-03-09T17:00:00+11:00"}})
	require.Equal(t, false, r.get(t, "window.timed"))
	require.Nil(t, r.get(t, "window.part_of_day"))
	require.Nil(t, r.get(t, "event_id"))
	require.Equal(t, map[string]int{"inspection_appointments insert": 1, "inspections insert": 1}, writes(rc))
	require.Equal(t, 60, b.count(t, ctx, `SELECT duration_minutes FROM inspection_appointments WHERE id = $1`, r.str(t, "appointment_id")))

	for what, w := range map[string]J{
		"a Saturday":        {"date": "2027-03-06", "part_of_day": "afternoon"},
		"an unknown key":    {"day": "monday"},
		"start and date":    {"start": "2027-03-02T09:00:00+11:00", "date": "2027-03-02"},
		"end before start":  {"start": "2027-03-02T09:00:00+11:00", "end": "2027-03-02T08:00:00+11:00"},
		"over a day":        {"start": "2027-03-02T06:00:00+11:00", "end": "2027-03-03T07:00:00+11:00"},
		"under 15 minutes":  {"start": "2027-03-02T06:00:00+11:00", "end": "2027-03-02T06:10:00+11:00"},
		"no start":          {"end": "2027-03-02T08:00:00+11:00"},
		"a bad part of day": {"date": "2027-03-05", "part_of_day": "evening"},
		"a bad date":        {"date": "5 March"},
		"empty":             {},
	} {
		rr := b.refused(t, ctx, registry.CodeValidation, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": w})
		require.Contains(t, rr.Error.Message, "preferred_window", what)
	}
	b.refused(t, ctx, registry.CodeNotFound, "leads.schedule_inspection", J{"lead_id": uuid.NewString(), "preferred_window": win})
	b.ok(t, ctx, "leads.update_stage", J{"lead_id": leadID, "stage": "won"})
	b.refused(t, ctx, registry.CodeConflict, "leads.schedule_inspection", J{"lead_id": leadID, "preferred_window": J{"date": "2027-03-08"}})
}

// strs returns a column of text values from SQL.
func (b *testBundle) strs(t *testing.T, ctx context.Context, sql string, args ...any) []string {
	t.Helper()
	rows, err := b.pool.Query(ctx, sql, args...)
	require.NoError(t, err)
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return list
}
