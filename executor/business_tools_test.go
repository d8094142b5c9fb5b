package executor_test

import (
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/stretchr/testify/require"
)

func TestBusinessReminders(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	now := time.Now()
	due, rc := b.ok(t, ctx, "os.create_reminder", J{"title": "Call Ann back", "remind_at": rfc3339(now.Add(-time.Minute)), "lead_id": lead})
	require.Equal(t, "pending", due.str(t, "status"))
	require.Equal(t, map[string]int{"os_reminders insert": 1}, writes(rc))
	soon, _ := b.ok(t, ctx, "os.create_reminder", J{"title": "Chase supplier", "remind_at": rfc3339(now.Add(3 * time.Hour))})
	b.ok(t, ctx, "os.create_reminder", J{"title": "Warranty check", "remind_at": rfc3339(now.AddDate(0, 1, 0))})

	titles := func(r res) []string {
		var out []string
		for _, x := range r.list(t, "reminders") {
			out = append(out, x.(map[string]any)["title"].(string))
		}
		return out
	}
	r, _ := b.ok(t, ctx, "os.list_reminders", J{})
	require.Equal(t, []string{"Call Ann back"}, titles(r), "due is the default")
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "upcoming", "within_hours": 24})
	require.Equal(t, []string{"Chase supplier"}, titles(r))
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "pending"})
	require.Equal(t, []string{"Call Ann back", "Chase supplier", "Warranty check"}, titles(r))

	r, rc = b.ok(t, ctx, "os.complete_reminder", J{"reminder_id": due.str(t, "reminder_id")})
	require.Equal(t, "done", r.str(t, "reminder.status"))
	require.NotNil(t, r.get(t, "reminder.resolved_at"))
	require.Equal(t, map[string]int{"os_reminders update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "os.complete_reminder", J{"reminder_id": due.str(t, "reminder_id")})
	require.Equal(t, true, r.get(t, "already_resolved"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "os.dismiss_reminder", J{"reminder_id": due.str(t, "reminder_id")})

	r, _ = b.ok(t, ctx, "os.dismiss_reminder", J{"reminder_id": soon.str(t, "reminder_id")})
	require.Equal(t, "dismissed", r.str(t, "reminder.status"))
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "pending"})
	require.Equal(t, []string{"Warranty check"}, titles(r))
}

func TestBusinessDeferTask(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	task, _ := b.ok(t, ctx, "os.create_task", J{"title": "Order flashing"})
	id := task.str(t, "task_id")
	until := rfc3339(time.Now().Add(72 * time.Hour))

	r, rc := b.ok(t, ctx, "os.defer_task", J{"task_id": id, "until": until})
	require.Equal(t, "deferred", r.str(t, "task.status"))
	require.Equal(t, "open", r.str(t, "previous_status"))
	require.Equal(t, map[string]int{"os_tasks update": 1}, writes(rc))
	due, err := time.Parse(time.RFC3339, r.str(t, "task.due_at"))
	require.NoError(t, err)
	require.Equal(t, until, rfc3339(due))

	_, rc = b.ok(t, ctx, "os.defer_task", J{"task_id": id, "until": until})
	require.Empty(t, rc.Effects.DBWrites, "deferring to the same time again writes nothing")

	r2 := b.refused(t, ctx, registry.CodeValidation, "os.defer_task", J{"task_id": id, "until": rfc3339(time.Now().Add(-time.Hour))})
	require.Contains(t, r2.Error.Message, "in the past")
}

func TestBusinessAuditLogSearch(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	start := time.Now().Add(-time.Second)
	for range 5 {
		b.ok(t, ctx, "os.create_note", J{"title": "note"})
	}
	failed := b.run(t, ctx, "os.complete_task", J{"task_id": "00000000-0000-0000-0000-000000000001"})
	b.ok(t, ctx, "leads.create", J{"name": "Audit Lead", "phone": newPhone()})

	// Paginate through the five notes, two at a time.
	var seen []string
	var before any
	for page := 0; ; page++ {
		in := J{"tool": "os.create_note", "limit": 2}
		if before != nil {
			in["before_id"] = before
		}
		r, rc := b.ok(t, ctx, "os.audit_log_search", in)
		require.Empty(t, rc.Effects.DBWrites, "read-only")
		for _, e := range r.list(t, "receipts") {
			m := e.(map[string]any)
			require.Equal(t, "os.create_note", m["tool"])
			seen = append(seen, m["call_id"].(string))
		}
		before = r.get(t, "next_before_id")
		if before == nil {
			require.Equal(t, 2, page, "pages of 2, 2 and 1")
			break
		}
	}
	require.Len(t, seen, 5)
	require.Len(t, uniq(seen), 5, "no receipt on two pages")

	r, _ := b.ok(t, ctx, "os.audit_log_search", J{"status": "failed", "error_code": "not_found"})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, failed.CallID.String(), r.str(t, "receipts.0.call_id"))
	require.Contains(t, r.str(t, "receipts.0.error_message"), "does not exist")

	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"call_id": failed.CallID.String()})
	require.Equal(t, int64(1), r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"domain": "leads"})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, "leads.create", r.str(t, "receipts.0.tool"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"since": rfc3339(start), "until": rfc3339(time.Now().Add(time.Minute)), "limit": 200})
	require.GreaterOrEqual(t, r.int(t, "count"), int64(7))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"until": rfc3339(start)})
	require.Equal(t, int64(0), r.int(t, "count"))
	require.Nil(t, r.get(t, "next_before_id"))

	// Who asked is shown too.
	id, err := gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: "ops:ann"})
	require.NoError(t, err)
	b.waitOne(t, ctx, id)
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"tool": "os.health_check"})
	require.Equal(t, "ops:ann", r.str(t, "receipts.0.requested_by"))
}

func uniq(s []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

func TestBusinessEntities(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	customer, rc := b.ok(t, ctx, "entity.create", J{"kind": "customer", "name": "Rossi Family Trust", "phone": "(02) 9555 1234",
		"email": "accounts@rossi.example", "address": "12 Station St", "suburb": "Marrickville", "postcode": "2204"})
	customerID := customer.str(t, "entity_id")
	require.Equal(t, map[string]int{"entities insert": 1}, writes(rc))
	site, _ := b.ok(t, ctx, "entity.create", J{"kind": "site", "name": "Rossi rental, Dulwich Hill", "address": "7 Wardell Rd",
		"suburb": "Dulwich Hill", "parent_id": customerID})
	supplier, _ := b.ok(t, ctx, "entity.create", J{"kind": "supplier", "name": "Metroll Sydney", "phone": "1300 000 111"})

	// Only sites have parents, and a site's parent is a customer.
	b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"kind": "customer", "name": "x", "parent_id": customerID})
	b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"kind": "site", "name": "x", "parent_id": supplier.str(t, "entity_id")})

	r, _ := b.ok(t, ctx, "entity.get", J{"entity_id": customerID})
	require.Equal(t, "Rossi Family Trust", r.str(t, "entity.name"))
	require.Len(t, r.list(t, "children"), 1)
	require.Equal(t, site.str(t, "entity_id"), r.str(t, "children.0.entity_id"))

	r, rc = b.ok(t, ctx, "entity.update", J{"entity_id": customerID, "email": "rossi@example.com", "notes": nil, "name": "Rossi Family Trust"})
	require.Equal(t, []any{"email"}, r.list(t, "updated_fields"), "only changed fields")
	require.Equal(t, "rossi@example.com", r.str(t, "entity.email"))
	require.Equal(t, map[string]int{"entities update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "entity.update", J{"entity_id": customerID, "email": "rossi@example.com"})
	require.Empty(t, r.list(t, "updated_fields"))
	require.Empty(t, rc.Effects.DBWrites)
	r, _ = b.ok(t, ctx, "entity.update", J{"entity_id": customerID, "postcode": nil})
	require.Nil(t, r.get(t, "entity.postcode"), "null clears")

	search := func(in J) []string {
		r, _ := b.ok(t, ctx, "entity.search", in)
		var names []string
		for _, e := range r.list(t, "entities") {
			names = append(names, e.(map[string]any)["name"].(string))
		}
		return names
	}
	require.Equal(t, []string{"Rossi Family Trust", "Rossi rental, Dulwich Hill"}, search(J{"query": "rossi"}))
	require.Equal(t, []string{"Rossi rental, Dulwich Hill"}, search(J{"query": "rossi", "kind": "site"}))
	require.Equal(t, []string{"Rossi Family Trust"}, search(J{"query": "9555-1234"}), "by phone digits, however typed")
	require.Equal(t, []string{"Rossi Family Trust"}, search(J{"query": "ROSSI@EXAMPLE"}), "by email")
	require.Equal(t, []string{"Rossi rental, Dulwich Hill"}, search(J{"query": "wardell"}), "by address")
	require.Equal(t, []string{"Metroll Sydney"}, search(J{"query": "metroll"}))
	require.Empty(t, search(J{"query": "100%"}), "wildcards are literal")
}

func TestBusinessMediaAssets(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	in := J{"file_ref": "s3://gem-media/leads/ann/roof-1.jpg", "kind": "photo", "content_type": "image/jpeg", "size_bytes": 482113,
		"lead_id": lead, "tags": []string{"Roof", "north face", "roof"}}
	first, r1 := b.ok(t, ctx, "media.register_asset", in)
	require.Equal(t, true, first.get(t, "created"))
	require.Equal(t, []any{"roof", "north face"}, first.list(t, "asset.tags"))
	require.Equal(t, map[string]int{"media_assets insert": 1}, writes(r1))

	_, r2 := b.ok(t, ctx, "media.register_asset", in)
	require.True(t, r2.IdempotencyHit, "keyed by file_ref")
	require.Equal(t, &r1.CallID, r2.IdempotencyOf)
	require.Equal(t, "s3://gem-media/leads/ann/roof-1.jpg", r2.IdempotencyKey)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM media_assets`))

	asset := first.str(t, "asset.asset_id")
	r, rc := b.ok(t, ctx, "media.tag_asset", J{"asset_id": asset, "add": []string{"Rust", "roof"}, "remove": []string{"north face"}})
	require.Equal(t, []any{"rust"}, r.list(t, "added"))
	require.Equal(t, []any{"north face"}, r.list(t, "removed"))
	require.Equal(t, []any{"roof", "rust"}, r.list(t, "asset.tags"))
	require.Equal(t, map[string]int{"media_assets update": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "media.tag_asset", J{"asset_id": asset, "add": []string{"rust"}})
	require.Empty(t, rc.Effects.DBWrites)

}

func TestBusinessLeadSourcesPhotosAndLoss(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	r, rc := b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "google", "detail": "winter roof ads"})
	require.Equal(t, true, r.get(t, "added"))
	require.Equal(t, map[string]int{"lead_sources insert": 1}, writes(rc))
	b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "referral", "detail": "neighbour at no. 14"})
	r, rc = b.ok(t, ctx, "leads.add_source", J{"lead_id": lead, "source": "google", "detail": "winter roof ads"})
	require.Equal(t, false, r.get(t, "added"))
	require.Empty(t, rc.Effects.DBWrites)
	require.Len(t, r.list(t, "sources"), 2)

	url := "https://photos.example.com/share/abc"
	r, rc = b.ok(t, ctx, "leads.add_photos_link", J{"lead_id": lead, "url": url, "label": "leak photos"})
	require.Equal(t, true, r.get(t, "created"))
	require.Equal(t, map[string]int{"lead_photo_links insert": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "leads.add_photos_link", J{"lead_id": lead, "url": url})
	require.Equal(t, false, r.get(t, "created"))
	require.Equal(t, "leak photos", r.str(t, "label"))
	require.Empty(t, rc.Effects.DBWrites)
	r, rc = b.ok(t, ctx, "leads.add_photos_link", J{"lead_id": lead, "url": url, "label": "ceiling stain"})
	require.Equal(t, "ceiling stain", r.str(t, "label"))
	require.Equal(t, map[string]int{"lead_photo_links update": 1}, writes(rc))
	b.refused(t, ctx, registry.CodeValidation, "leads.add_photos_link", J{"lead_id": lead, "url": "ftp://example.com/x"})

	when := rfc3339(time.Now().Add(24 * time.Hour))
	first, _ := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": lead, "scheduled_for": when, "address": "3 Elm St"})
	again, rc := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": lead, "scheduled_for": when})
	require.Equal(t, false, again.get(t, "created"), "the same slot again is the same booking")
	require.Equal(t, first.str(t, "appointment.appointment_id"), again.str(t, "appointment.appointment_id"))
	require.Empty(t, rc.Effects.DBWrites)

	r, rc = b.ok(t, ctx, "leads.mark_lost", J{"lead_id": lead, "reason": "Went with a cheaper quote", "reason_code": "price"})
	require.Equal(t, "lost", r.str(t, "lead.stage"))
	require.Equal(t, "inspection_scheduled", r.str(t, "previous_stage"))
	require.Equal(t, int64(1), r.int(t, "cancelled_appointments"))
	require.Equal(t, map[string]int{"leads update": 1, "inspection_appointments update": 1}, writes(rc))
	require.Equal(t, "price", b.str(t, ctx, `SELECT lost_reason_code FROM leads WHERE id = $1`, lead))
	_, rc = b.ok(t, ctx, "leads.mark_lost", J{"lead_id": lead, "reason": "Went with a cheaper quote", "reason_code": "price"})
	require.Empty(t, rc.Effects.DBWrites, "already lost for this reason")

	// Back in play: the reason code goes with the loss.
	b.ok(t, ctx, "leads.update_stage", J{"lead_id": lead, "stage": "contacted"})
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM leads WHERE lost_reason_code IS NOT NULL`))
}

// TestBusinessSearchIsLiteral checks that % and _ in a search match only themselves: they are LIKE's
// wildcards, and a search for either matched every note, entity or receipt. A backslash, LIKE's escape
// character, matches only itself too.
func TestBusinessSearchIsLiteral(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	b.ok(t, ctx, "os.create_note", J{"title": "100% done"})
	b.ok(t, ctx, "os.create_note", J{"title": "snake_case names"})
	b.ok(t, ctx, "os.create_note", J{"title": "other", "body": "nothing special"})
	b.ok(t, ctx, "os.create_note", J{"title": `back\slash`})
	titles := func(query string) []string {
		r, _ := b.ok(t, ctx, "os.search_notes", J{"query": query})
		var out []string
		for _, n := range r.list(t, "notes") {
			out = append(out, n.(map[string]any)["title"].(string))
		}
		return out
	}
	require.Equal(t, []string{"100% done"}, titles("%"))
	require.Equal(t, []string{"snake_case names"}, titles("_"))
	require.Equal(t, []string{"100% done"}, titles("0%"))
	require.Equal(t, []string{`back\slash`}, titles(`k\s`), "a backslash is LIKE's escape character: it matches itself too")
	require.Len(t, titles("o"), 2, "a plain substring still matches")

	b.ok(t, ctx, "entity.create", J{"kind": "customer", "name": "50% Off Roofing"})
	b.ok(t, ctx, "entity.create", J{"kind": "customer", "name": "Other Roofing"})
	r, _ := b.ok(t, ctx, "entity.search", J{"query": "%"})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, "50% Off Roofing", r.str(t, "entities.0.name"))

	// A domain is a name prefix: "o_" is not "os".
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"domain": "o_"})
	require.Equal(t, int64(0), r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"domain": "os"})
	require.Positive(t, r.int(t, "count"))
}
