package executor_test

import (
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGEMPersonalCheckIns(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	first, rc := b.ok(t, ctx, "personal.check_in", J{"energy": "high", "stress": "low", "focus": "locked_in"})
	require.Nil(t, first.get(t, "previous"))
	require.Nil(t, first.get(t, "notes"))
	require.Equal(t, map[string]int{"personal_checkins insert": 1}, writes(rc))
	second, _ := b.ok(t, ctx, "personal.check_in", J{"energy": "low", "stress": "high", "focus": "scattered", "notes": "Long week"})
	require.Equal(t, first.str(t, "checkin_id"), second.str(t, "previous.checkin_id"))
	require.Equal(t, "Long week", second.str(t, "notes"))
	b.refused(t, ctx, registry.CodeValidation, "personal.check_in", J{"energy": "medium", "stress": "low"})
}

func TestGEMPersonalCommitments(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	review := time.Now().Add(7 * 24 * time.Hour).UTC().Truncate(time.Second)
	walk, rc := b.ok(t, ctx, "personal.create_commitment", J{"title": "Walk every morning", "details": "30 minutes", "review_at": rfc3339(review)})
	walkID := walk.str(t, "commitment_id")
	require.Equal(t, "active", walk.str(t, "commitment.status"))
	require.Equal(t, false, walk.get(t, "commitment.overdue_for_review"))
	require.Equal(t, map[string]int{"personal_commitments insert": 1, "os_reminders insert": 1}, writes(rc))
	reminder := walk.str(t, "reminder_id")
	require.Equal(t, "personal commitment "+walkID, b.str(t, ctx,
		`SELECT domain || ' ' || context_type || ' ' || context_id FROM os_reminders WHERE id = $1`, reminder))

	read, rc := b.ok(t, ctx, "personal.create_commitment", J{"title": "Read before bed"})
	require.Nil(t, read.get(t, "reminder_id"))
	require.Equal(t, map[string]int{"personal_commitments insert": 1}, writes(rc))
	b.refused(t, ctx, registry.CodeValidation, "personal.create_commitment", J{"title": " "})
	v := b.refused(t, ctx, registry.CodeValidation, "personal.create_commitment", J{"title": "x", "review_at": rfc3339(time.Now().Add(-time.Hour))})
	require.Equal(t, "review_at", fieldOf(t, v))

	// A review time that has passed (set here by hand) puts the commitment first, flagged.
	_, err := b.pool.Exec(ctx, `UPDATE personal_commitments SET review_at = now() - interval '1 day' WHERE id = $1`, read.str(t, "commitment_id"))
	require.NoError(t, err)
	r, rc := b.ok(t, ctx, "personal.review_commitments", J{})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, int64(2), r.int(t, "count"))
	require.Equal(t, int64(1), r.int(t, "overdue_count"))
	require.Equal(t, "Read before bed", r.str(t, "commitments.0.title"))
	require.Equal(t, true, r.get(t, "commitments.0.overdue_for_review"))
	require.Equal(t, false, r.get(t, "commitments.1.overdue_for_review"))

	c, rc := b.ok(t, ctx, "personal.close_commitment", J{"commitment_id": walkID, "outcome": "kept", "note": "Six weeks straight"})
	require.Equal(t, "closed", c.str(t, "commitment.status"))
	require.Equal(t, "kept", c.str(t, "commitment.outcome"))
	require.Equal(t, int64(1), c.int(t, "reminders_resolved"))
	require.Equal(t, map[string]int{"personal_commitments update": 1, "os_reminders update": 1}, writes(rc))
	require.Equal(t, "dismissed", b.str(t, ctx, `SELECT status FROM os_reminders WHERE id = $1`, reminder))
	c, rc = b.ok(t, ctx, "personal.close_commitment", J{"commitment_id": walkID, "outcome": "kept"})
	require.Equal(t, true, c.get(t, "already_closed"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "personal.close_commitment", J{"commitment_id": walkID, "outcome": "broken"})
	b.refused(t, ctx, registry.CodeNotFound, "personal.close_commitment", J{"commitment_id": uuid.NewString(), "outcome": "done"})

	r, _ = b.ok(t, ctx, "personal.review_commitments", J{"status": "closed"})
	require.Equal(t, []string{"Walk every morning"}, titlesOf(t, r, "commitments"))
	require.Equal(t, false, r.get(t, "commitments.0.overdue_for_review"), "a closed commitment is never overdue")
	r, _ = b.ok(t, ctx, "personal.review_commitments", J{"status": "all", "limit": 1})
	require.Equal(t, int64(1), r.int(t, "count"))
}

func TestGEMPersonalBoundaries(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	at := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	s, rc := b.ok(t, ctx, "personal.boundary_set", J{"key": "no_weekend_work", "value": J{"rule": "no site work on weekends"}, "remind_at": rfc3339(at)})
	id := s.str(t, "memory_id")
	require.Equal(t, "boundary", s.str(t, "memory.memory_type"))
	require.Equal(t, map[string]int{"identity_memories insert": 1, "os_reminders insert": 1}, writes(rc))
	require.Equal(t, "personal memory "+id, b.str(t, ctx,
		`SELECT domain || ' ' || context_type || ' ' || context_id FROM os_reminders WHERE id = $1`, s.str(t, "reminder_id")))

	l, _ := b.ok(t, ctx, "identity.list_memories", J{"memory_type": "boundary"})
	require.Equal(t, id, l.str(t, "memories.0.memory_id"), "a boundary is one of identity's memories")

	hit := b.run(t, ctx, "personal.boundary_set", J{"key": "no_weekend_work", "value": J{"rule": "no work at all on weekends"}})
	require.True(t, hit.IdempotencyHit, "keyed on key")
	changed := b.runKeyed(t, ctx, "personal.boundary_set", J{"key": "no_weekend_work", "value": J{"rule": "no work at all on weekends"}}, "no_weekend_work@2")
	require.Equal(t, registry.StatusSucceeded, changed.Status, "%+v", changed.Error)
	require.Equal(t, id, decodeResult(t, changed).str(t, "superseded_memory_id"))
	require.Nil(t, decodeResult(t, changed).get(t, "reminder_id"))
	v := b.refused(t, ctx, registry.CodeValidation, "personal.boundary_set", J{"key": "x", "value": J{}, "remind_at": rfc3339(time.Now().Add(-time.Hour))})
	require.Equal(t, "remind_at", fieldOf(t, v))
	b.refused(t, ctx, registry.CodeInvalidCall, "personal.boundary_set", J{"key": "  ", "value": J{}}) // the executor: a keyed call needs a key
}

func TestGEMPersonalDecisionSupport(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	b.ok(t, ctx, "personal.boundary_set", J{"key": "no_weekend_work", "value": J{"rule": "no site work on weekends"}})
	b.ok(t, ctx, "identity.set_boundaries", J{"boundaries": J{"never_borrow": "no new loans"}})
	b.ok(t, ctx, "personal.create_commitment", J{"title": "Coach the kids' footy on Saturdays"})
	b.ok(t, ctx, "personal.check_in", J{"energy": "low", "stress": "high", "focus": "ok"})

	in := J{"decision": "How to finish the Smith re-roof before Christmas",
		"options":     []string{"Work weekends to finish", "Hire a second crew", " "},
		"constraints": J{"budget_aud": 8000, "family_time": true, "overtime": false, "deadline": "before 20 December", "crew": []string{"Sam", "Lee"}, "notes": J{"x": 1}}}
	r, rc := b.ok(t, ctx, "personal.decision_support", in)
	require.Empty(t, rc.Effects.DBWrites, "decision support writes nothing")
	a := r.get(t, "analysis").(map[string]any)
	options := r.list(t, "analysis.options")
	require.Len(t, options, 2, "blank options are dropped")
	require.Equal(t, "Work weekends to finish", r.str(t, "analysis.options.0.option"))
	require.Len(t, r.list(t, "analysis.options.0.checks"), 6, "one check per constraint")
	kinds := map[string]string{}
	for _, c := range r.list(t, "analysis.constraints") {
		m := c.(map[string]any)
		kinds[m["name"].(string)] = m["kind"].(string)
	}
	require.Equal(t, map[string]string{"budget_aud": "limit", "family_time": "must", "overtime": "avoid", "deadline": "requirement",
		"crew": "one_of", "notes": "context"}, kinds)
	require.Contains(t, r.str(t, "analysis.options.0.checks.0.question"), "8000")
	require.Equal(t, []any{"no_weekend_work"}, r.list(t, "analysis.options.0.related_boundaries"))
	require.Empty(t, r.list(t, "analysis.options.1.related_boundaries"))
	require.Len(t, r.list(t, "analysis.boundaries"), 2, "memories and the self-model's")
	require.Equal(t, "high", r.str(t, "analysis.latest_check_in.stress"))
	require.NotEmpty(t, r.list(t, "analysis.cautions"))
	require.Contains(t, r.str(t, "analysis.next_step"), "no_weekend_work")
	require.Equal(t, "Coach the kids' footy on Saturdays", r.str(t, "analysis.commitments.0.title"))

	again, _ := b.ok(t, ctx, "personal.decision_support", in)
	require.Equal(t, a, again.get(t, "analysis"), "the same input and records give the same analysis")

	r, _ = b.ok(t, ctx, "personal.decision_support", J{"decision": "Buy a new ute?"})
	require.Empty(t, r.list(t, "analysis.options"))
	require.Contains(t, r.str(t, "analysis.next_step"), "List the options")
	r, _ = b.ok(t, ctx, "personal.decision_support", J{"decision": "Buy a new ute?", "options": []string{"Buy the Hilux"}})
	require.Contains(t, r.str(t, "analysis.next_step"), "alternative")
	r, _ = b.ok(t, ctx, "personal.decision_support", J{"decision": "Which supplier?", "options": []string{"Bunnings", "Bowens"}})
	require.Contains(t, r.str(t, "analysis.next_step"), "constraints")

	v := b.refused(t, ctx, registry.CodeValidation, "personal.decision_support", J{"decision": "x", "options": []string{"A", "a"}})
	require.Equal(t, "options[1]", fieldOf(t, v))
	b.refused(t, ctx, registry.CodeValidation, "personal.decision_support", J{"decision": "  "})
}
