package executor_test

import (
	"encoding/json"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGEMIdentitySelfModel(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	m, rc := b.ok(t, ctx, "identity.get_self_model", J{})
	require.Empty(t, rc.Effects.DBWrites)
	for _, s := range []string{"persona", "values", "boundaries", "goals"} {
		require.Equal(t, map[string]any{}, m.get(t, s), "%s is empty before anything is set", s)
	}
	require.Nil(t, m.get(t, "updated_at"))

	u, rc := b.ok(t, ctx, "identity.update_self_model", J{"patch": J{"persona": J{"name": "Kai", "tone": "direct", "style": J{"emoji": false}},
		"goals": J{"this_year": "two crews"}}, "reason": "first setup"})
	require.Equal(t, true, u.get(t, "changed"))
	require.Equal(t, []any{"persona", "goals"}, u.list(t, "changed_sections"))
	require.Equal(t, map[string]int{"identity_self_model insert": 1, "identity_self_model_changes insert": 1}, writes(rc))
	require.Equal(t, "first setup", b.str(t, ctx, `SELECT reason FROM identity_self_model_changes`))

	// A merge patch: null removes a key, objects merge, other values replace.
	u, rc = b.ok(t, ctx, "identity.update_self_model", J{"patch": J{"persona": J{"tone": nil, "style": J{"length": "short"}}}})
	require.Equal(t, map[string]int{"identity_self_model update": 1, "identity_self_model_changes insert": 1}, writes(rc))
	require.Equal(t, map[string]any{"name": "Kai", "style": map[string]any{"emoji": false, "length": "short"}}, u.get(t, "self_model.persona"))
	require.Equal(t, map[string]any{"this_year": "two crews"}, u.get(t, "self_model.goals"), "sections not in the patch stay")
	mergeRC := rc

	u, rc = b.ok(t, ctx, "identity.update_self_model", J{"patch": J{"persona": J{"tone": nil, "name": "Kai"}}})
	require.Equal(t, false, u.get(t, "changed"))
	require.Empty(t, u.list(t, "changed_sections"))
	require.Empty(t, rc.Effects.DBWrites, "a patch that changes nothing writes nothing")

	for _, tt := range []struct {
		patch J
		field string
	}{
		{J{}, "patch"},
		{J{"mood": J{"today": "good"}}, "patch.mood"},
		{J{"persona": "friendly"}, "patch.persona"},
		{J{"goals": J{}, "values": []string{"honesty"}}, "patch.values"},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "identity.update_self_model", J{"patch": tt.patch})
		require.Equal(t, tt.field, fieldOf(t, r), r.Error.Message)
	}

	s, rc := b.ok(t, ctx, "identity.set_boundaries", J{"boundaries": J{"no_sms_after": "18:00", "never": []string{"pay without asking"}},
		"reason": "family time"})
	require.Equal(t, []any{"boundaries"}, s.list(t, "changed_sections"))
	require.Equal(t, map[string]int{"identity_self_model update": 1, "identity_self_model_changes insert": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "identity.set_boundaries", J{"boundaries": J{"never": []string{"pay without asking"}, "no_sms_after": "18:00"}})
	require.Empty(t, rc.Effects.DBWrites, "the same boundaries again write nothing")
	s, _ = b.ok(t, ctx, "identity.set_boundaries", J{"boundaries": J{"quiet_hours": "21:00-07:00"}})
	require.Equal(t, map[string]any{"quiet_hours": "21:00-07:00"}, s.get(t, "self_model.boundaries"), "set replaces the whole section")

	m, _ = b.ok(t, ctx, "identity.get_self_model", J{})
	require.Equal(t, map[string]any{"quiet_hours": "21:00-07:00"}, m.get(t, "boundaries"))
	require.Equal(t, "Kai", m.str(t, "persona.name"))
	require.NotNil(t, m.get(t, "updated_at"))

	// Rolling back the merge is refused while later changes stand.
	r := b.refused(t, ctx, registry.CodeConflict, "os.rollback_last_action", J{"call_id": mergeRC.CallID.String()})
	require.Contains(t, r.Error.Message, "identity.set_boundaries")
}

func TestGEMIdentityMemories(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	first, rc := b.ok(t, ctx, "identity.add_memory", J{"memory_type": "preference", "key": "contact.time", "value": J{"after": "16:00"}})
	firstID := first.str(t, "memory_id")
	require.Equal(t, true, first.get(t, "changed"))
	require.Nil(t, first.get(t, "superseded_memory_id"))
	require.Equal(t, "user", first.str(t, "memory.source"))
	require.Equal(t, json.Number("1"), first.get(t, "memory.confidence"))
	require.Equal(t, true, first.get(t, "memory.current"))
	require.Equal(t, map[string]int{"identity_memories insert": 1}, writes(rc))

	// Keyed on key: the same key again answers with the first call's receipt.
	again := b.run(t, ctx, "identity.add_memory", J{"memory_type": "preference", "key": "contact.time", "value": J{"after": "18:00"}})
	require.True(t, again.IdempotencyHit)
	require.Empty(t, again.Effects.DBWrites)

	// With a key of its own, a new value supersedes the old one, which stays in the history.
	second := b.runKeyed(t, ctx, "identity.add_memory", J{"memory_type": "preference", "key": "contact.time", "value": J{"after": "18:00"},
		"confidence": 0.8, "source": "inferred"}, "contact.time@2")
	require.Equal(t, registry.StatusSucceeded, second.Status, "%+v", second.Error)
	s := decodeResult(t, second)
	require.Equal(t, firstID, s.str(t, "superseded_memory_id"))
	require.Equal(t, firstID, s.str(t, "memory.supersedes"))
	require.Equal(t, map[string]int{"identity_memories update": 1, "identity_memories insert": 1}, writes(second))
	require.Equal(t, "superseded", b.str(t, ctx, `SELECT end_reason FROM identity_memories WHERE id = $1`, firstID))
	same := b.runKeyed(t, ctx, "identity.add_memory", J{"memory_type": "preference", "key": "contact.time", "value": J{"after": "18:00"},
		"confidence": 0.8, "source": "inferred"}, "contact.time@3")
	require.Equal(t, false, decodeResult(t, same).get(t, "changed"))
	require.Empty(t, same.Effects.DBWrites, "the current value again changes nothing")

	l, _ := b.ok(t, ctx, "identity.list_memories", J{"key_prefix": "contact."})
	require.Equal(t, int64(1), l.int(t, "count"), "current memories only")
	require.Equal(t, s.str(t, "memory_id"), l.str(t, "memories.0.memory_id"))
	l, _ = b.ok(t, ctx, "identity.list_memories", J{"key_prefix": "contact.", "include_expired": true})
	require.Equal(t, int64(2), l.int(t, "count"))
	require.Equal(t, firstID, l.str(t, "memories.1.memory_id"))
	require.Equal(t, s.str(t, "memory_id"), l.str(t, "memories.1.superseded_by"))
	require.Equal(t, false, l.get(t, "memories.1.current"))

	// Rolling the supersede back makes the first value current again.
	rb, _ := b.ok(t, ctx, "os.rollback_last_action", J{"call_id": second.CallID.String()})
	require.Equal(t, true, rb.get(t, "rolled_back"))
	l, _ = b.ok(t, ctx, "identity.list_memories", J{"key_prefix": "contact."})
	require.Equal(t, firstID, l.str(t, "memories.0.memory_id"))
	require.Nil(t, l.get(t, "memories.0.valid_to"))

	b.ok(t, ctx, "identity.add_memory", J{"memory_type": "fact", "key": "crew.size", "value": J{"people": 4}})
	b.ok(t, ctx, "identity.add_memory", J{"memory_type": "fact", "key": "crew_lead", "value": J{"name": "Sam"}})
	l, _ = b.ok(t, ctx, "identity.list_memories", J{"key_prefix": "crew_"})
	require.Equal(t, int64(1), l.int(t, "count"), "_ in a prefix matches only itself")
	l, _ = b.ok(t, ctx, "identity.list_memories", J{"memory_type": "fact", "limit": 1})
	require.Equal(t, int64(1), l.int(t, "count"))
	v := b.refused(t, ctx, registry.CodeValidation, "identity.list_memories", J{"memory_type": "mood"})
	require.Equal(t, "memory_type", fieldOf(t, v))

	// expire_memory.
	e, rc := b.ok(t, ctx, "identity.expire_memory", J{"selector": J{"key": "crew.size"}, "reason": "crew grew"})
	require.Equal(t, true, e.get(t, "expired"))
	require.Equal(t, int64(1), e.int(t, "expired_count"))
	require.Equal(t, map[string]int{"identity_memories update": 1}, writes(rc))
	require.Equal(t, "crew grew", b.str(t, ctx, `SELECT end_reason FROM identity_memories WHERE key = 'crew.size'`))
	e, rc = b.ok(t, ctx, "identity.expire_memory", J{"selector": J{"key": "crew.size"}})
	require.Equal(t, false, e.get(t, "expired"))
	require.Empty(t, rc.Effects.DBWrites)
	e, _ = b.ok(t, ctx, "identity.expire_memory", J{"selector": J{"key_prefix": "c", "memory_type": "preference"}})
	require.Equal(t, []any{firstID}, e.list(t, "memory_ids"))
	b.refused(t, ctx, registry.CodeNotFound, "identity.expire_memory", J{"selector": J{"memory_id": uuid.NewString()}})
	b.refused(t, ctx, registry.CodeNotFound, "identity.expire_memory", J{"selector": J{"key": "never.set"}})
	for _, tt := range []struct {
		selector J
		field    string
	}{
		{J{}, "selector"},
		{J{"colour": "red"}, "selector.colour"},
		{J{"key": 7}, "selector.key"},
		{J{"memory_type": "mood"}, "selector.memory_type"},
		{J{"key_prefix": ""}, "selector.key_prefix"},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "identity.expire_memory", J{"selector": tt.selector})
		require.Equal(t, tt.field, fieldOf(t, r), r.Error.Message)
	}
}

func TestGEMIdentityPatterns(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	p, rc := b.ok(t, ctx, "identity.score_pattern", J{"key": "quotes.friday", "value": J{"habit": "sends quotes on Fridays"},
		"confidence": 0.4, "evidence_refs": []J{{"type": "quote", "id": "q1"}}})
	id := p.str(t, "memory_id")
	require.Equal(t, "pattern", p.str(t, "memory.memory_type"))
	require.Equal(t, "inferred", p.str(t, "memory.source"))
	require.Equal(t, map[string]int{"identity_memories insert": 1}, writes(rc))

	// Scored again (a key of its own): the same memory, new confidence, evidence added, one more observation.
	again := b.runKeyed(t, ctx, "identity.score_pattern", J{"key": "quotes.friday", "value": J{"habit": "sends quotes on Fridays"},
		"confidence": 0.7, "evidence_refs": []J{{"type": "quote", "id": "q1"}, {"type": "quote", "id": "q2"}}}, "quotes.friday#2")
	require.Equal(t, registry.StatusSucceeded, again.Status, "%+v", again.Error)
	a := decodeResult(t, again)
	require.Equal(t, id, a.str(t, "memory_id"))
	require.Equal(t, json.Number("0.4"), a.get(t, "previous_confidence"))
	require.Equal(t, json.Number("0.7"), a.get(t, "memory.confidence"))
	require.Equal(t, int64(2), a.int(t, "memory.observations"))
	require.Len(t, a.list(t, "memory.evidence_refs"), 2, "q1 once, q2 added")
	require.Equal(t, map[string]int{"identity_memories update": 1}, writes(again))

	changed := b.runKeyed(t, ctx, "identity.score_pattern", J{"key": "quotes.friday", "value": J{"habit": "sends quotes on Mondays"},
		"confidence": 0.5}, "quotes.friday#3")
	require.Equal(t, id, decodeResult(t, changed).str(t, "superseded_memory_id"))

	b.ok(t, ctx, "identity.add_memory", J{"memory_type": "fact", "key": "truck", "value": J{"make": "Isuzu"}})
	r := b.refused(t, ctx, registry.CodeConflict, "identity.score_pattern", J{"key": "truck", "value": J{"drives": "daily"}, "confidence": 0.9})
	require.Contains(t, r.Error.Message, "fact")
}
