package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// osLead inserts a lead with plain SQL (outside any call) and returns its id.
func (b *testBundle) osLead(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	return b.str(t, ctx, `INSERT INTO leads (name, phone) VALUES ($1, $2) RETURNING id::text`, name, newPhone())
}

// runKeyed makes a call with an explicit idempotency key and waits for its receipt.
func (b *testBundle) runKeyed(t *testing.T, ctx context.Context, tool string, input J, key string) *registry.Receipt {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: tool, Input: raw, IdempotencyKey: key}))
	require.NoError(t, err)
	return b.waitOne(t, ctx, id)
}

// osHas reports whether a dotted path exists in a result.
func osHas(r res, path string) bool {
	var v any = map[string]any(r)
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// fieldOf is the input field a validation_error names.
func fieldOf(t *testing.T, r *registry.Receipt) string {
	t.Helper()
	d := decodeDetails(t, r)
	if f, ok := d["field"].(string); ok {
		return f
	}
	// The registry's schema declares the keys of the objects handlers read (a patch, a context_ref), and
	// refuses a value of the wrong type before the handler sees it: its violation's path names the field.
	if vs, _ := d["violations"].([]any); len(vs) > 0 {
		path, _ := vs[0].(map[string]any)["path"].(string)
		return dottedField(path)
	}
	return ""
}

// dottedField writes a violation's JSON pointer the way handlers name a field: /patch/title is patch.title,
// /line_items/1/unit_price_cents is line_items[1].unit_price_cents.
func dottedField(pointer string) string {
	var b strings.Builder
	for _, step := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if _, err := strconv.Atoi(step); err == nil {
			b.WriteString("[" + step + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(step)
	}
	return b.String()
}

// requireNamesField: a refusal's message names the field, in the handler's words or as the schema's
// violation (see fieldOf).
func requireNamesField(t *testing.T, r *registry.Receipt, field string) {
	t.Helper()
	require.NotNil(t, r.Error)
	if !strings.Contains(r.Error.Message, field) {
		require.Equal(t, field, fieldOf(t, r), "the refusal names %s: %s", field, r.Error.Message)
	}
}

func titlesOf(t *testing.T, r res, path string) []string {
	t.Helper()
	out := []string{}
	for _, x := range r.list(t, path) {
		out = append(out, x.(map[string]any)["title"].(string))
	}
	return out
}

func TestGEMOSNotes(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	lead := b.osLead(t, ctx, "Ann Lee")

	n, rc := b.ok(t, ctx, "os.create_note", J{"domain": "business", "title": "Gutter colour", "content": "Ann wants Monument gutters.",
		"entity_refs": []J{{"type": "Lead", "id": lead}, {"type": "lead", "id": lead}, {"type": "highlevel_contact", "id": "hl-42"}}})
	noteID := n.str(t, "note_id")
	require.Equal(t, "business", n.str(t, "domain"))
	require.Equal(t, []any{map[string]any{"type": "lead", "id": lead}, map[string]any{"type": "highlevel_contact", "id": "hl-42"}},
		n.list(t, "entity_refs"), "types lower-cased, repeats dropped, unknown kinds kept as given")
	require.Equal(t, map[string]int{"os_notes insert": 1}, writes(rc))
	require.Equal(t, lead, b.str(t, ctx, `SELECT lead_id::text FROM os_notes WHERE id = $1`, noteID))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_undo_log`), "an insert-only call writes no before-image")

	b.ok(t, ctx, "os.create_note", J{"domain": "personal", "title": "Dentist", "content": "Book a check-up for the kids."})
	b.ok(t, ctx, "os.create_note", J{"domain": "both", "title": "Gutter ideas for home", "content": "Same gutters at home?", "tags": []string{"home", " home ", ""}})

	r := b.refused(t, ctx, registry.CodeNotFound, "os.create_note", J{"domain": "business", "title": "x", "content": "y",
		"entity_refs": []J{{"type": "lead", "id": uuid.NewString()}}})
	require.Contains(t, r.Error.Message, "lead")
	b.refused(t, ctx, registry.CodeNotFound, "os.create_note", J{"domain": "business", "title": "x", "content": "y",
		"entity_refs": []J{{"type": "job", "id": "not-a-uuid"}}})
	r = b.refused(t, ctx, registry.CodeValidation, "os.create_note", J{"domain": "business", "title": "x", "content": "y",
		"entity_refs": []J{{"type": "lead", "id": ""}}})
	require.Equal(t, "entity_refs[0]", fieldOf(t, r))
	b.refused(t, ctx, registry.CodeValidation, "os.create_note", J{"domain": "business", "title": " ", "content": ""})
	b.refused(t, ctx, registry.CodeValidation, "os.create_note", J{"title": "no domain", "content": "GEM requires it"})

	search := func(in J) res {
		r, rc := b.ok(t, ctx, "os.search_notes", in)
		require.Empty(t, rc.Effects.DBWrites)
		return r
	}
	got := search(J{"query": "gutters"})
	require.ElementsMatch(t, []string{"Gutter colour", "Gutter ideas for home"}, titlesOf(t, got, "results"))
	require.Contains(t, got.str(t, "results.0.snippet"), "«")
	require.Equal(t, []string{"Gutter ideas for home"}, titlesOf(t, search(J{"query": "gutters", "domain": "personal"}), "results"),
		"personal includes notes of both")
	require.Len(t, titlesOf(t, search(J{"query": "gutters", "domain": "both"}), "results"), 2)
	require.Equal(t, []string{"Gutter colour"}, titlesOf(t, search(J{"query": "", "entity_ref": J{"type": "lead", "id": lead}}), "results"))
	require.Len(t, titlesOf(t, search(J{"query": "", "limit": 2}), "results"), 2, "an empty query lists the newest")
	require.Equal(t, int64(1), search(J{"query": "check-up"}).int(t, "count"))
}

// TestGEMOSSearchIsLiteral checks that % and _ in a search match only themselves: they are LIKE's wildcards,
// and a search for either matched every note or receipt. A backslash, LIKE's escape character, matches only
// itself too.
func TestGEMOSSearchIsLiteral(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	for _, title := range []string{"100% done", "snake_case names", "other", `back\slash`} {
		b.ok(t, ctx, "os.create_note", J{"domain": "business", "title": title, "content": "nothing special"})
	}
	titles := func(query string) []string {
		r, _ := b.ok(t, ctx, "os.search_notes", J{"query": query})
		return titlesOf(t, r, "results")
	}
	require.Equal(t, []string{"100% done"}, titles("%"))
	require.Equal(t, []string{"snake_case names"}, titles("_"))
	require.Equal(t, []string{"100% done"}, titles("0%"))
	require.Equal(t, []string{`back\slash`}, titles(`k\s`), "a backslash is LIKE's escape character: it matches itself too")
	require.Len(t, titles("o"), 4, "a plain substring still matches (every note's content has an o)")

	// A domain is a name prefix: "o_" is not "os".
	r, _ := b.ok(t, ctx, "os.audit_log_search", J{"event_type": "o_"})
	require.Equal(t, int64(0), r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"event_type": "os"})
	require.Positive(t, r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"query": "100%"})
	require.Equal(t, int64(1), r.int(t, "count"), "only the note titled 100%% done has 100%% in its input")
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"query": "1_0"})
	require.Equal(t, int64(0), r.int(t, "count"), "_ matches only itself")
}

func TestGEMOSTasks(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	lead := b.osLead(t, ctx, "Tom Nguyen")
	due := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)

	task, rc := b.ok(t, ctx, "os.create_task", J{"title": "Call Tom about the ridge", "domain": "business", "priority": "high",
		"due_at": rfc3339(due), "description": "He asked after 4pm", "context_ref": J{"type": "lead", "id": lead}})
	id := task.str(t, "task_id")
	require.Equal(t, map[string]int{"os_tasks insert": 1}, writes(rc))
	require.Equal(t, "open", task.str(t, "status"))
	require.Equal(t, "high", task.str(t, "priority"))
	require.Equal(t, map[string]any{"type": "lead", "id": lead}, task.get(t, "context_ref"))
	require.Equal(t, lead, b.str(t, ctx, `SELECT lead_id::text FROM os_tasks WHERE id = $1`, id))

	personal, _ := b.ok(t, ctx, "os.create_task", J{"title": "Renew passport", "domain": "personal"})
	b.ok(t, ctx, "os.create_task", J{"title": "Plan the holiday", "domain": "both", "context_ref": J{}})
	b.refused(t, ctx, registry.CodeNotFound, "os.create_task", J{"title": "x", "domain": "business", "context_ref": J{"type": "quote", "id": uuid.NewString()}})
	r := b.refused(t, ctx, registry.CodeValidation, "os.create_task", J{"title": "x", "domain": "business", "context_ref": J{"type": "lead"}})
	require.Equal(t, "context_ref", fieldOf(t, r))
	b.refused(t, ctx, registry.CodeValidation, "os.create_task", J{"title": "  ", "domain": "business"})
	b.refused(t, ctx, registry.CodeValidation, "os.create_task", J{"title": "x", "domain": "business", "priority": "urgent"})

	// update_task: the patch is checked key by key.
	for _, tt := range []struct {
		patch J
		field string
	}{
		{J{"colour": "red"}, "patch.colour"},
		{J{"title": 7}, "patch.title"},
		{J{"title": ""}, "patch.title"},
		{J{"priority": "urgent"}, "patch.priority"},
		{J{"due_at": "tomorrow"}, "patch.due_at"},
		{J{"domain": "work"}, "patch.domain"},
		{J{"context_ref": "lead"}, "patch.context_ref"},
		{J{"context_ref": J{"type": "lead", "id": lead, "extra": 1}}, "patch.context_ref"},
		{J{"status": "done"}, "patch.status"},
		{J{"description": 3, "title": "ok"}, "patch.description"},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "os.update_task", J{"task_id": id, "patch": tt.patch})
		require.Equal(t, tt.field, fieldOf(t, r), "%v: %s", tt.patch, r.Error.Message)
	}
	b.refused(t, ctx, registry.CodeNotFound, "os.update_task", J{"task_id": uuid.NewString(), "patch": J{"title": "x"}})
	b.refused(t, ctx, registry.CodeNotFound, "os.update_task", J{"task_id": "task-1", "patch": J{"title": "x"}})
	b.refused(t, ctx, registry.CodeNotFound, "os.update_task", J{"task_id": id, "patch": J{"context_ref": J{"type": "job", "id": uuid.NewString()}}})

	u, rc := b.ok(t, ctx, "os.update_task", J{"task_id": id, "patch": J{"title": "Call Tom back", "priority": "normal",
		"description": nil, "due_at": nil, "domain": "both", "context_ref": nil}})
	require.Equal(t, []any{"context_ref", "description", "domain", "due_at", "priority", "title"}, u.list(t, "updated_fields"))
	require.Equal(t, map[string]int{"os_tasks update": 1}, writes(rc))
	require.Nil(t, u.get(t, "task.context_ref"))
	require.Nil(t, u.get(t, "task.due_at"))
	require.Equal(t, "", b.str(t, ctx, `SELECT coalesce(lead_id::text, '') FROM os_tasks WHERE id = $1`, id), "clearing the lead clears lead_id")
	u, rc = b.ok(t, ctx, "os.update_task", J{"task_id": id, "patch": J{"title": "Call Tom back", "priority": "normal"}})
	require.Empty(t, u.list(t, "updated_fields"))
	require.Empty(t, rc.Effects.DBWrites, "the same update again writes nothing")
	_, rc = b.ok(t, ctx, "os.update_task", J{"task_id": id})
	require.Empty(t, rc.Effects.DBWrites, "no patch, no change")

	// defer_task and complete_task.
	later := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	d, rc := b.ok(t, ctx, "os.defer_task", J{"task_id": id, "due_at": rfc3339(later), "reason": "Tom is away"})
	require.Equal(t, "deferred", d.str(t, "task.status"))
	require.Equal(t, "open", d.str(t, "previous_status"))
	require.Equal(t, "Tom is away", d.str(t, "task.defer_reason"))
	require.Equal(t, map[string]int{"os_tasks update": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "os.defer_task", J{"task_id": id, "due_at": rfc3339(later)})
	require.Empty(t, rc.Effects.DBWrites, "deferring to the same time again writes nothing")
	r = b.refused(t, ctx, registry.CodeValidation, "os.defer_task", J{"task_id": id, "due_at": rfc3339(time.Now().Add(-time.Hour))})
	require.Contains(t, r.Error.Message, "in the past")
	require.Equal(t, "due_at", fieldOf(t, r))

	list, rc := b.ok(t, ctx, "os.list_tasks", J{})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, int64(3), list.int(t, "count"), "open includes deferred")
	list, _ = b.ok(t, ctx, "os.list_tasks", J{"domain": "personal"})
	require.ElementsMatch(t, []string{"Renew passport", "Plan the holiday", "Call Tom back"}, titlesOf(t, list, "tasks"),
		"personal includes tasks of both")
	list, _ = b.ok(t, ctx, "os.list_tasks", J{"domain": "business", "limit": 1})
	require.Equal(t, int64(1), list.int(t, "count"))

	c, rc := b.ok(t, ctx, "os.complete_task", J{"task_id": personal.str(t, "task_id"), "note": "Done at the post office"})
	require.Equal(t, "done", c.str(t, "task.status"))
	require.Equal(t, "Done at the post office", c.str(t, "task.completion_note"))
	require.Equal(t, false, c.get(t, "already_completed"))
	require.Equal(t, map[string]int{"os_tasks update": 1}, writes(rc))
	c, rc = b.ok(t, ctx, "os.complete_task", J{"task_id": personal.str(t, "task_id")})
	require.Equal(t, true, c.get(t, "already_completed"))
	require.Empty(t, rc.Effects.DBWrites)
	r = b.refused(t, ctx, registry.CodeConflict, "os.defer_task", J{"task_id": personal.str(t, "task_id"), "due_at": rfc3339(later)})
	require.Contains(t, r.Error.Message, "done")
	b.refused(t, ctx, registry.CodeNotFound, "os.complete_task", J{"task_id": uuid.NewString()})
	b.refused(t, ctx, registry.CodeNotFound, "os.defer_task", J{"task_id": uuid.NewString(), "due_at": rfc3339(later)})

	list, _ = b.ok(t, ctx, "os.list_tasks", J{"status": "done"})
	require.Equal(t, []string{"Renew passport"}, titlesOf(t, list, "tasks"))
	list, _ = b.ok(t, ctx, "os.list_tasks", J{"status": "all", "priority": "normal"})
	require.Equal(t, int64(3), list.int(t, "count"))

	// A task about a lead deleted since (lead_id set null, the reference kept) still takes a patch that leaves
	// its reference alone: the deleted lead's id is not written back into lead_id.
	gone := b.osLead(t, ctx, "Gone Lead")
	orphan, _ := b.ok(t, ctx, "os.create_task", J{"title": "Call Gone", "domain": "business", "context_ref": J{"type": "lead", "id": gone}})
	_, err := b.pool.Exec(ctx, `DELETE FROM leads WHERE id = $1`, gone)
	require.NoError(t, err)
	u, _ = b.ok(t, ctx, "os.update_task", J{"task_id": orphan.str(t, "task_id"), "patch": J{"title": "Call Gone again"}})
	require.Equal(t, []any{"title"}, u.list(t, "updated_fields"))
	require.Equal(t, "", b.str(t, ctx, `SELECT coalesce(lead_id::text, '') FROM os_tasks WHERE id = $1`, orphan.str(t, "task_id")))
}

func TestGEMOSReminders(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.osLead(t, ctx, "Ann Lee")
	now := time.Now()
	due, rc := b.ok(t, ctx, "os.create_reminder", J{"title": "Call Ann back", "remind_at": rfc3339(now.Add(-time.Minute)),
		"context_ref": J{"type": "lead", "id": lead}, "notes": "About the valley iron"})
	require.Equal(t, "pending", due.str(t, "status"))
	require.Equal(t, "business", due.str(t, "domain"), "business is the default")
	require.Equal(t, map[string]any{"type": "lead", "id": lead}, due.get(t, "context_ref"))
	require.Equal(t, map[string]int{"os_reminders insert": 1}, writes(rc))
	require.Equal(t, lead, b.str(t, ctx, `SELECT lead_id::text FROM os_reminders WHERE id = $1`, due.str(t, "reminder_id")))
	soon, _ := b.ok(t, ctx, "os.create_reminder", J{"title": "Chase supplier", "remind_at": rfc3339(now.Add(3 * time.Hour)), "domain": "business"})
	b.ok(t, ctx, "os.create_reminder", J{"title": "Warranty check", "remind_at": rfc3339(now.AddDate(0, 1, 0))})
	b.ok(t, ctx, "os.create_reminder", J{"title": "Pick up the kids", "remind_at": rfc3339(now.Add(time.Hour)), "domain": "personal"})
	b.refused(t, ctx, registry.CodeNotFound, "os.create_reminder", J{"title": "x", "remind_at": rfc3339(now), "context_ref": J{"type": "lead", "id": uuid.NewString()}})
	b.refused(t, ctx, registry.CodeValidation, "os.create_reminder", J{"title": " ", "remind_at": rfc3339(now)})

	r, _ := b.ok(t, ctx, "os.list_reminders", J{})
	require.Equal(t, []string{"Call Ann back"}, titlesOf(t, r, "reminders"), "due is the default")
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "upcoming", "within_hours": 24})
	require.Equal(t, []string{"Pick up the kids", "Chase supplier"}, titlesOf(t, r, "reminders"))
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "upcoming", "within_hours": 24, "domain": "business"})
	require.Equal(t, []string{"Chase supplier"}, titlesOf(t, r, "reminders"))
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "pending"})
	require.Equal(t, []string{"Call Ann back", "Pick up the kids", "Chase supplier", "Warranty check"}, titlesOf(t, r, "reminders"))

	r, rc = b.ok(t, ctx, "os.complete_reminder", J{"reminder_id": due.str(t, "reminder_id")})
	require.Equal(t, "done", r.str(t, "reminder.status"))
	require.NotNil(t, r.get(t, "reminder.resolved_at"))
	require.Equal(t, map[string]int{"os_reminders update": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "os.complete_reminder", J{"reminder_id": due.str(t, "reminder_id")})
	require.Equal(t, true, r.get(t, "already_resolved"))
	require.Empty(t, rc.Effects.DBWrites)
	r2 := b.refused(t, ctx, registry.CodeConflict, "os.dismiss_reminder", J{"reminder_id": due.str(t, "reminder_id")})
	require.Contains(t, r2.Error.Message, "done")

	r, _ = b.ok(t, ctx, "os.dismiss_reminder", J{"reminder_id": soon.str(t, "reminder_id")})
	require.Equal(t, "dismissed", r.str(t, "reminder.status"))
	r2 = b.refused(t, ctx, registry.CodeConflict, "os.complete_reminder", J{"reminder_id": soon.str(t, "reminder_id")})
	require.Contains(t, r2.Error.Message, "dismissed")
	r, _ = b.ok(t, ctx, "os.list_reminders", J{"when": "pending"})
	require.Equal(t, []string{"Pick up the kids", "Warranty check"}, titlesOf(t, r, "reminders"))
	b.refused(t, ctx, registry.CodeNotFound, "os.complete_reminder", J{"reminder_id": uuid.NewString()})
	b.refused(t, ctx, registry.CodeNotFound, "os.dismiss_reminder", J{"reminder_id": uuid.NewString()})
}

func TestGEMOSAuditLogSearch(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	start := time.Now().Add(-time.Second)
	for i := range 5 {
		b.ok(t, ctx, "os.create_note", J{"domain": "business", "title": fmt.Sprintf("note %d", i), "content": "audit me"})
	}
	failed := b.run(t, ctx, "os.complete_task", J{"task_id": "00000000-0000-0000-0000-000000000001"})
	b.ok(t, ctx, "os.create_task", J{"title": "Order the flashing", "domain": "business"})

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
		for _, e := range r.list(t, "items") {
			m := e.(map[string]any)
			require.Equal(t, "os.create_note", m["tool"])
			require.Equal(t, true, m["undoable"])
			require.Equal(t, []any{map[string]any{"table": "os_notes", "op": "insert", "count": json.Number("1")}}, m["db_writes"])
			seen = append(seen, m["call_id"].(string))
		}
		before = r.get(t, "next_before_id")
		if before == nil {
			require.Equal(t, 2, page, "pages of 2, 2 and 1")
			break
		}
	}
	require.Len(t, seen, 5)
	slices.Sort(seen)
	require.Len(t, slices.Compact(seen), 5, "no receipt on two pages")

	r, _ := b.ok(t, ctx, "os.audit_log_search", J{"event_type": "not_found"})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, failed.CallID.String(), r.str(t, "items.0.call_id"))
	require.Contains(t, r.str(t, "items.0.error_message"), "does not exist")
	require.Equal(t, false, r.get(t, "items.0.undoable"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"event_type": "failed"})
	require.Equal(t, int64(1), r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"call_id": failed.CallID.String()})
	require.Equal(t, int64(1), r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"query": "FLASHING"})
	require.Equal(t, int64(1), r.int(t, "count"), "query matches the input, ignoring case")
	require.Equal(t, "os.create_task", r.str(t, "items.0.tool"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"query": "00000000-0000-0000-0000-000000000001"})
	require.Equal(t, int64(1), r.int(t, "count"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"query": "create_task", "event_type": "succeeded"})
	require.Equal(t, int64(1), r.int(t, "count"), "query matches tool names")
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"since": rfc3339(start), "until": rfc3339(time.Now().Add(time.Minute)), "limit": 100})
	require.GreaterOrEqual(t, r.int(t, "count"), int64(7))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"until": rfc3339(start)})
	require.Equal(t, int64(0), r.int(t, "count"))
	require.Nil(t, r.get(t, "next_before_id"))
	v := b.refused(t, ctx, registry.CodeValidation, "os.audit_log_search", J{"call_id": "yesterday's call"})
	require.Equal(t, "call_id", fieldOf(t, v))
	b.refused(t, ctx, registry.CodeValidation, "os.audit_log_search", J{"since": rfc3339(time.Now()), "until": rfc3339(start)})

	// Who asked is shown too.
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant('ops-ann', '{read:*}')`)
	require.NoError(t, err)
	id, err := insertedID(gemsql.CallInsert(ctx, b.pool, gemsql.CallInsertParams{ToolName: "os.health_check", RequestedBy: "ops-ann"}))
	require.NoError(t, err)
	b.waitOne(t, ctx, id)
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"tool": "os.health_check"})
	require.Equal(t, "ops-ann", r.str(t, "items.0.requested_by"))
	require.Equal(t, false, r.get(t, "items.0.undoable"), "a read wrote nothing to undo")

	// A rolled-back call says so.
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"tool": "os.create_task"})
	task := r.str(t, "items.0.call_id")
	rb, _ := b.ok(t, ctx, "os.rollback_last_action", J{"call_id": task})
	require.Equal(t, true, rb.get(t, "rolled_back"))
	r, _ = b.ok(t, ctx, "os.audit_log_search", J{"event_type": "rolled_back"})
	require.Equal(t, int64(1), r.int(t, "count"))
	require.Equal(t, task, r.str(t, "items.0.call_id"))
	require.NotNil(t, r.get(t, "items.0.rolled_back_by"))
	require.Equal(t, false, r.get(t, "items.0.undoable"))
}

func TestGEMOSHealthCheck(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	r, rc := b.ok(t, ctx, "os.health_check", J{})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "ok", r.str(t, "status"))
	require.Equal(t, true, r.get(t, "checks.database.ok"))
	require.Equal(t, true, r.get(t, "checks.queue.ok"))
	require.GreaterOrEqual(t, r.int(t, "checks.executors.live"), int64(1))
	require.Equal(t, businesspack.TimeZoneDefault, r.str(t, "checks.time_zone.name"))
	providers := map[string]map[string]any{}
	for _, p := range r.list(t, "checks.providers") {
		m := p.(map[string]any)
		providers[m["name"].(string)] = m
	}
	require.Equal(t, false, providers["sms"]["configured"])
	require.Contains(t, providers["sms"]["missing"], businesspack.EnvTwilioAccountSID)
	require.Equal(t, false, providers["email"]["configured"])
	require.Equal(t, false, providers["llm"]["configured"])

	// A configured provider whose value cannot be used, or a time zone that does not resolve: degraded.
	ctx2, b2 := setup(t)
	b2.business = businesspack.Config{TimeZone: "Mars/Olympus_Mons", SMS: businesspack.TwilioConfig{AccountSID: "AC1", AuthToken: "t", From: "+61400000000", BaseURL: "ftp://twilio"}}
	b2.startExecutor(t, nil)
	r, _ = b2.ok(t, ctx2, "os.health_check", J{})
	require.Equal(t, "degraded", r.str(t, "status"))
	require.Equal(t, false, r.get(t, "checks.time_zone.ok"))
	for _, p := range r.list(t, "checks.providers") {
		if m := p.(map[string]any); m["name"] == "sms" {
			require.Equal(t, false, m["configured"])
			require.Contains(t, m["error"], businesspack.EnvTwilioBaseURL)
		}
	}
}

// osBusinessFixture inserts, with plain SQL, a won lead with a locked inspection, an accepted quote, a job
// and an invoice of totalCents overdue since yesterday, plus a new lead; it returns the invoice's id.
func (b *testBundle) osBusinessFixture(t *testing.T, ctx context.Context, totalCents int64) string {
	t.Helper()
	lead := b.str(t, ctx, `INSERT INTO leads (name, phone, stage) VALUES ('Won Lead', $1, 'won') RETURNING id::text`, newPhone())
	b.osLead(t, ctx, "New Lead")
	inspection := b.str(t, ctx, `INSERT INTO inspections (lead_id, status, submitted_at, locked_at) VALUES ($1, 'locked', now(), now())
		RETURNING id::text`, lead)
	subtotal := totalCents * 10 / 11
	quote := b.str(t, ctx, `INSERT INTO quotes (lead_id, inspection_id, status, subtotal_cents, gst_cents, total_cents, valid_until,
		sent_at, accepted_at) VALUES ($1, $2, 'accepted', $3, $4, $5, current_date + 30, now(), now()) RETURNING id::text`,
		lead, inspection, subtotal, totalCents-subtotal, totalCents)
	job := b.str(t, ctx, `INSERT INTO jobs (quote_id) VALUES ($1) RETURNING id::text`, quote)
	return b.str(t, ctx, `INSERT INTO invoices (job_id, subtotal_cents, gst_cents, total_cents, issued_on, due_on)
		VALUES ($1, $2, $3, $4, current_date - 30, current_date - 1) RETURNING id::text`, job, subtotal, totalCents-subtotal, totalCents)
}

func TestGEMOSStateSnapshot(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	// Nothing stored yet: computed now, not stored.
	r, rc := b.ok(t, ctx, "os.get_state_snapshot", J{"domain": "business"})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "computed", r.str(t, "source"))
	require.Nil(t, r.get(t, "snapshot_id"))
	require.Equal(t, int64(0), r.int(t, "state.business.leads.open"))
	require.False(t, osHas(r, "state.personal"), "business only")

	b.osBusinessFixture(t, ctx, 110000)
	b.ok(t, ctx, "os.create_task", J{"title": "Order tiles", "domain": "business", "due_at": rfc3339(time.Now().Add(-time.Hour))})
	b.ok(t, ctx, "os.create_task", J{"title": "Book the car service", "domain": "personal"})
	b.ok(t, ctx, "os.create_reminder", J{"title": "Chase the council", "remind_at": rfc3339(time.Now().Add(-time.Minute))})
	b.ok(t, ctx, "personal.check_in", J{"energy": "low", "stress": "high", "focus": "ok"})
	b.ok(t, ctx, "personal.create_commitment", J{"title": "Walk every morning"})
	b.ok(t, ctx, "personal.boundary_set", J{"key": "no_calls_after_6pm", "value": J{"rule": "no work calls after 6pm"}})
	_, err := b.pool.Exec(ctx, `INSERT INTO calendar_events (title, start_at, end_at) VALUES ('Site visit', now() + interval '1 day', now() + interval '25 hours')`)
	require.NoError(t, err)

	s, rc := b.ok(t, ctx, "os.refresh_state_snapshot", J{"domain": "business"})
	require.Equal(t, map[string]int{"os_state_snapshots insert": 1}, writes(rc))
	snapshot := s.str(t, "snapshot_id")
	require.Equal(t, int64(1), s.int(t, "state.business.leads.open"))
	require.Equal(t, int64(1), s.int(t, "state.business.leads.by_stage.won"))
	require.Equal(t, int64(1), s.int(t, "state.business.tasks.open"))
	require.Equal(t, int64(1), s.int(t, "state.business.tasks.overdue"))
	require.Equal(t, int64(1), s.int(t, "state.business.reminders.due"))
	require.Equal(t, int64(1), s.int(t, "state.business.quotes.by_status.accepted"))
	require.Equal(t, int64(1), s.int(t, "state.business.invoices.overdue_count"))
	require.Equal(t, int64(110000), s.int(t, "state.business.invoices.outstanding_cents"))
	require.Equal(t, int64(110000), s.int(t, "state.business.invoices.overdue_cents"))
	require.GreaterOrEqual(t, s.int(t, "state.activity.by_domain.os"), int64(3))
	require.Equal(t, int64(1), s.int(t, "state.business.calendar.next_7_days"))
	require.Equal(t, "Site visit", s.str(t, "state.business.calendar.upcoming.0.title"))

	g, rc := b.ok(t, ctx, "os.get_state_snapshot", J{"domain": "business"})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "stored", g.str(t, "source"))
	require.Equal(t, snapshot, g.str(t, "snapshot_id"))
	require.Equal(t, s.get(t, "state"), g.get(t, "state"), "the stored state, as refreshed")

	// Later data shows only after a refresh.
	b.osLead(t, ctx, "Another Lead")
	g, _ = b.ok(t, ctx, "os.get_state_snapshot", J{"domain": "business"})
	require.Equal(t, int64(1), g.int(t, "state.business.leads.open"))

	p, _ := b.ok(t, ctx, "os.refresh_state_snapshot", J{"domain": "personal", "since": rfc3339(time.Now().Add(-time.Hour))})
	require.Equal(t, int64(1), p.int(t, "state.personal.tasks.open"))
	require.Equal(t, "high", p.str(t, "state.personal.latest_check_in.stress"))
	require.Equal(t, int64(1), p.int(t, "state.personal.commitments.active"))
	require.Equal(t, "no_calls_after_6pm", p.str(t, "state.personal.boundaries.0.key"))
	require.False(t, osHas(p, "state.business"))

	both, _ := b.ok(t, ctx, "os.refresh_state_snapshot", J{"domain": "both"})
	require.Equal(t, int64(2), both.int(t, "state.business.leads.open"))
	require.Equal(t, int64(1), both.int(t, "state.personal.tasks.open"))
	g, _ = b.ok(t, ctx, "os.get_state_snapshot", J{"domain": "business"})
	require.Equal(t, both.str(t, "snapshot_id"), g.str(t, "snapshot_id"), "a newer snapshot of both serves business")
	require.False(t, osHas(g, "state.personal"), "trimmed to the domain asked for")

	v := b.refused(t, ctx, registry.CodeValidation, "os.refresh_state_snapshot", J{"domain": "business", "since": rfc3339(time.Now().Add(time.Hour))})
	require.Equal(t, "since", fieldOf(t, v))
}

// rowJSON is a row as JSON, to compare a row before and after.
func (b *testBundle) rowJSON(t *testing.T, ctx context.Context, table, id string) string {
	t.Helper()
	return b.str(t, ctx, `SELECT to_jsonb(r)::text FROM `+table+` r WHERE id::text = $1`, id)
}

func TestGEMOSRollback(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	rollback := func(call uuid.UUID) (res, *registry.Receipt) {
		t.Helper()
		return b.ok(t, ctx, "os.rollback_last_action", J{"call_id": call.String()})
	}
	refusedRollback := func(call uuid.UUID, want string) *registry.Receipt {
		t.Helper()
		r := b.refused(t, ctx, registry.CodeConflict, "os.rollback_last_action", J{"call_id": call.String()})
		require.Contains(t, r.Error.Message, want)
		return r
	}

	// A create is undone: the row is deleted.
	created, createdRC := b.ok(t, ctx, "os.create_task", J{"title": "Quote the Smith job", "domain": "business"})
	taskID := created.str(t, "task_id")
	createdRow := b.rowJSON(t, ctx, "os_tasks", taskID)
	r, rc := rollback(createdRC.CallID)
	require.Equal(t, true, r.get(t, "rolled_back"))
	require.Equal(t, int64(1), r.int(t, "rows_deleted"))
	require.Equal(t, int64(0), r.int(t, "rows_restored"))
	require.Equal(t, []any{"os_tasks"}, r.list(t, "tables"))
	require.Equal(t, "os.create_task", r.str(t, "tool_name"))
	require.Equal(t, map[string]int{"os_tasks delete": 1, "core_rollbacks insert": 1}, writes(rc))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE id = $1`, taskID))

	// Twice: refused, naming the rollback.
	refusedRollback(createdRC.CallID, "already rolled back, by call "+rc.CallID.String())

	// The rollback is a call too: undoing it puts the task back, as it was.
	r, _ = rollback(rc.CallID)
	require.Equal(t, true, r.get(t, "rolled_back"))
	require.Equal(t, int64(1), r.int(t, "rows_restored"))
	require.Equal(t, int64(1), r.int(t, "rows_deleted"), "the record of the rollback")
	require.Equal(t, createdRow, b.rowJSON(t, ctx, "os_tasks", taskID))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_rollbacks WHERE call_id = $1`, createdRC.CallID))

	// An update is restored field by field.
	before := b.rowJSON(t, ctx, "os_tasks", taskID)
	lead := b.osLead(t, ctx, "Smith")
	_, updateRC := b.ok(t, ctx, "os.update_task", J{"task_id": taskID, "patch": J{"title": "Quote the Smiths", "priority": "high",
		"description": "Two storeys", "due_at": rfc3339(time.Now().Add(24 * time.Hour)), "domain": "both", "context_ref": J{"type": "lead", "id": lead}}})
	require.NotEqual(t, before, b.rowJSON(t, ctx, "os_tasks", taskID))

	// A later change by another call blocks it, naming that call.
	_, deferRC := b.ok(t, ctx, "os.defer_task", J{"task_id": taskID, "due_at": rfc3339(time.Now().Add(96 * time.Hour)), "reason": "waiting on plans"})
	afterDefer := b.rowJSON(t, ctx, "os_tasks", taskID)
	blocked := refusedRollback(updateRC.CallID, deferRC.CallID.String())
	require.Contains(t, blocked.Error.Message, "os.defer_task")
	require.Equal(t, deferRC.CallID.String(), decodeDetails(t, blocked)["later_call_id"])
	require.Equal(t, afterDefer, b.rowJSON(t, ctx, "os_tasks", taskID), "a refused rollback changes nothing")

	// Undone newest first, both go through: the later call's rollback cancels its change out.
	r, rc = rollback(deferRC.CallID)
	require.Equal(t, int64(1), r.int(t, "rows_restored"))
	require.Equal(t, map[string]int{"os_tasks update": 1, "core_rollbacks insert": 1}, writes(rc))
	r, _ = rollback(updateRC.CallID)
	require.Equal(t, true, r.get(t, "rolled_back"))
	require.Equal(t, before, b.rowJSON(t, ctx, "os_tasks", taskID), "every field as it was, updated_at included")

	// A row written later that refers to a created row blocks the rollback too.
	t2, t2RC := b.ok(t, ctx, "os.create_task", J{"title": "Order ridge caps", "domain": "business"})
	_, reminderRC := b.ok(t, ctx, "os.create_reminder", J{"title": "Ridge caps due", "remind_at": rfc3339(time.Now().Add(time.Hour)),
		"context_ref": J{"type": "task", "id": t2.str(t, "task_id")}})
	refusedRollback(t2RC.CallID, reminderRC.CallID.String())
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE id = $1`, t2.str(t, "task_id")))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_reminders WHERE task_id = $1`, t2.str(t, "task_id")))

	// Calls with effects outside the database are refused: by what the receipt recorded, and by the
	// registry's permissions even when nothing was recorded.
	for _, effects := range []string{
		`{"db_writes": [{"table": "comms_log", "op": "insert", "count": 1, "ids": []}], "outside": [{"kind": "sms", "target": "+61400000000", "reference": "SM1"}]}`,
		`{"db_writes": [{"table": "comms_log", "op": "insert", "count": 1, "ids": []}]}`,
	} {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		var send uuid.UUID
		require.NoError(t, tx.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('comms.send_sms', '{}') RETURNING id`).Scan(&send))
		_, err = tx.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, result, effects) VALUES ($1, 'comms.send_sms', 'succeeded', '{}', $2)`, send, effects)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		refusedRollback(send, "outside the database")
	}

	// Nothing to undo: a failed call, a read.
	failed := b.run(t, ctx, "os.complete_task", J{"task_id": uuid.NewString()})
	require.Equal(t, registry.StatusFailed, failed.Status)
	r, rc = rollback(failed.CallID)
	require.Equal(t, false, r.get(t, "rolled_back"))
	require.Contains(t, r.str(t, "reason"), "ended failed")
	require.Empty(t, rc.Effects.DBWrites)
	_, read := b.ok(t, ctx, "os.list_tasks", J{})
	r, _ = rollback(read.CallID)
	require.Equal(t, false, r.get(t, "rolled_back"))
	require.Contains(t, r.str(t, "reason"), "wrote nothing")

	// A call whose before-images are missing (made before they were recorded) is refused, not half undone.
	_, completeRC := b.ok(t, ctx, "os.complete_task", J{"task_id": taskID, "note": "done"})
	_, err := b.pool.Exec(ctx, `DELETE FROM core_undo_log WHERE call_id = $1`, completeRC.CallID)
	require.NoError(t, err)
	refusedRollback(completeRC.CallID, "no before-images")

	b.refused(t, ctx, registry.CodeNotFound, "os.rollback_last_action", J{"call_id": uuid.NewString()})
	b.refused(t, ctx, registry.CodeNotFound, "os.rollback_last_action", J{"call_id": "the last one"})
}
