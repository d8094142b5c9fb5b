package executor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGEMEntityCreateUpdateGet(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	client, rc := b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Rossi Family Trust", "notes": "Owns three rentals",
		"contact": J{"phone": "(02) 9555 1234", "email": " Accounts <accounts@rossi.example> ", "address": "12 Station St", "suburb": "Marrickville", "postcode": "2204"}})
	clientID := client.str(t, "entity_id")
	require.Equal(t, map[string]int{"entities insert": 1}, writes(rc))
	require.Equal(t, []string{clientID}, wroteIDs(rc, "entities", "insert"))
	require.Equal(t, "client", client.str(t, "entity.entity_type"))
	require.Equal(t, "accounts@rossi.example", client.str(t, "entity.contact.email"), "the bare address")
	require.Nil(t, client.get(t, "entity.contact.state"))
	b.ok(t, ctx, "entity.create", J{"entity_type": "supplier", "name": "Metroll Sydney"})

	// The contact's keys and values are checked; so is the name.
	r := b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "client", "name": "x", "contact": J{"mobile": "0412 345 678"}})
	require.Contains(t, r.Error.Message, "contact.mobile")
	r = b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "client", "name": "x", "contact": J{"email": "not an address"}})
	require.Contains(t, r.Error.Message, "contact.email")
	b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "client", "name": "x", "contact": J{"phone": 412345678}})
	b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "client", "name": "x", "contact": J{"phone": "12"}})
	b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "client", "name": "  "})
	b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "customer", "name": "x"})
	b.refused(t, ctx, registry.CodeNotFound, "entity.create", J{"entity_type": "client", "name": "x", "lead_id": uuid.NewString()})

	// A patch changes what differs; repeating it writes nothing.
	u, rc := b.ok(t, ctx, "entity.update", J{"entity_id": clientID, "patch": J{"name": "Rossi Family Trust",
		"contact": J{"email": "rossi@example.com", "phone": "(02) 9555 1234", "postcode": nil}}})
	require.Equal(t, []any{"contact.email", "contact.postcode"}, u.list(t, "updated_fields"), "only what changed")
	require.Equal(t, "rossi@example.com", u.str(t, "entity.contact.email"))
	require.Nil(t, u.get(t, "entity.contact.postcode"), "null clears")
	require.Equal(t, "12 Station St", u.str(t, "entity.contact.address"), "keys left out stay")
	require.Equal(t, map[string]int{"entities update": 1}, writes(rc))
	u, rc = b.ok(t, ctx, "entity.update", J{"entity_id": clientID, "patch": J{"contact": J{"email": "rossi@example.com"}}})
	require.Empty(t, u.list(t, "updated_fields"))
	require.Empty(t, rc.Effects.DBWrites)
	u, _ = b.ok(t, ctx, "entity.update", J{"entity_id": clientID, "patch": J{"entity_type": "partner", "notes": nil}})
	require.Equal(t, []any{"entity_type", "notes"}, u.list(t, "updated_fields"))
	require.Nil(t, u.get(t, "entity.notes"))

	for key, patch := range map[string]J{
		"patch.colour":        {"colour": "red"},
		"patch.name":          {"name": 5},
		"patch.entity_type":   {"entity_type": "site"},
		"patch.contact.phone": {"contact": J{"phone": []string{"1"}}},
		"patch.contact.fax":   {"contact": J{"fax": "1"}},
		"patch.lead_id":       {"lead_id": 7},
		"patch is empty":      {},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "entity.update", J{"entity_id": clientID, "patch": patch})
		requireNamesField(t, r, key)
	}
	missing := uuid.NewString()
	r = b.refused(t, ctx, registry.CodeNotFound, "entity.update", J{"entity_id": missing, "patch": J{"name": "x"}})
	require.Contains(t, r.Error.Message, missing)
	b.refused(t, ctx, registry.CodeNotFound, "entity.get", J{"entity_id": missing})
	b.refused(t, ctx, registry.CodeNotFound, "entity.get", J{"entity_id": "E-12"})

	// A site recorded under its client before GEM's types (plain SQL): listed with the client; its type stays.
	site := b.str(t, ctx, `INSERT INTO entities (kind, name, address, parent_id) VALUES ('site', 'Rossi rental', '7 Wardell Rd', $1)
		RETURNING id::text`, clientID)
	g, rc := b.ok(t, ctx, "entity.get", J{"entity_id": clientID})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "Rossi Family Trust", g.str(t, "entity.name"))
	require.Len(t, g.list(t, "entity.sites"), 1)
	require.Equal(t, site, g.str(t, "entity.sites.0.entity_id"))
	require.Equal(t, "site", g.str(t, "entity.sites.0.entity_type"))
	require.Empty(t, g.list(t, "entity.interactions"))
	require.Empty(t, g.list(t, "entity.conversations"))
	b.refused(t, ctx, registry.CodeConflict, "entity.update", J{"entity_id": site, "patch": J{"entity_type": "client"}})

	// A lead that became a client.
	lead := b.newLead(t, ctx)
	u, _ = b.ok(t, ctx, "entity.update", J{"entity_id": clientID, "patch": J{"lead_id": lead}})
	require.Equal(t, lead, u.str(t, "entity.lead_id"))
	b.refused(t, ctx, registry.CodeNotFound, "entity.update", J{"entity_id": clientID, "patch": J{"lead_id": missing}})
}

func TestGEMEntitySearch(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Rossi Family Trust", "contact": J{"phone": "(02) 9555 1234",
		"email": "rossi@example.com", "address": "12 Station St", "suburb": "Marrickville"}})
	b.ok(t, ctx, "entity.create", J{"entity_type": "supplier", "name": "Rossi Timber", "contact": J{"address": "7 Wardell Rd"}})
	b.ok(t, ctx, "entity.create", J{"entity_type": "partner", "name": "50% Off Roofing"})
	b.ok(t, ctx, "entity.create", J{"entity_type": "friend", "name": "Other Roofing"})

	search := func(in J) []string {
		r, rc := b.ok(t, ctx, "entity.search", in)
		require.Empty(t, rc.Effects.DBWrites)
		var names []string
		for _, e := range r.list(t, "results") {
			names = append(names, e.(map[string]any)["name"].(string))
		}
		require.Equal(t, int64(len(names)), r.int(t, "count"))
		return names
	}
	require.Equal(t, []string{"Rossi Family Trust", "Rossi Timber"}, search(J{"query": "rossi"}))
	require.Equal(t, []string{"Rossi Timber"}, search(J{"query": "rossi", "entity_type": "supplier"}))
	require.Equal(t, []string{"Rossi Family Trust"}, search(J{"query": "rossi", "entity_type": "customer"}), "the old name of client")
	require.Equal(t, []string{"Rossi Family Trust"}, search(J{"query": "9555-1234"}), "by phone digits, however typed")
	require.Equal(t, []string{"Rossi Family Trust"}, search(J{"query": "ROSSI@EXAMPLE"}), "by email")
	require.Equal(t, []string{"Rossi Timber"}, search(J{"query": "wardell"}), "by address")
	require.Equal(t, []string{"Rossi Family Trust"}, search(J{"query": "rossi", "limit": 1}))
	require.Equal(t, []string{"50% Off Roofing"}, search(J{"query": "%"}), "wildcards are literal")
	require.Empty(t, search(J{"query": "o_"}))
	r := b.refused(t, ctx, registry.CodeValidation, "entity.search", J{"query": "x", "entity_type": "vendor"})
	require.Contains(t, r.Error.Message, "client, supplier, partner, friend, lead, other")
}

func TestGEMEntityInteractionsAndConversations(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	e, _ := b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Ann Lee"})
	id := e.str(t, "entity_id")
	lead := b.newLead(t, ctx)

	when := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
	r, rc := b.ok(t, ctx, "entity.add_interaction", J{"entity_id": id, "interaction_type": "site_visit", "summary": "Measured the roof",
		"details": J{"roof_area_m2": 180, "crew": []string{"Sam"}}, "occurred_at": rfc3339(when), "context_ref": ref("lead", lead)})
	require.Equal(t, map[string]int{"entity_interactions insert": 1}, writes(rc))
	require.Equal(t, r.str(t, "interaction_id"), r.str(t, "interaction.interaction_id"))
	require.Equal(t, rfc3339(when), rfc3339(mustTime(t, r.str(t, "interaction.occurred_at"))))
	require.Equal(t, "lead", r.str(t, "interaction.context_ref.type"))
	r, _ = b.ok(t, ctx, "entity.add_interaction", J{"entity_id": id, "interaction_type": "email", "summary": "Sent the warranty"})
	require.Empty(t, r.get(t, "interaction.details"))
	require.Nil(t, r.get(t, "interaction.context_ref"))

	b.refused(t, ctx, registry.CodeValidation, "entity.add_interaction", J{"entity_id": id, "interaction_type": "call", "summary": strings.Repeat("x", 401)})
	b.refused(t, ctx, registry.CodeValidation, "entity.add_interaction", J{"entity_id": id, "interaction_type": "call", "summary": " "})
	r2 := b.refused(t, ctx, registry.CodeValidation, "entity.add_interaction", J{"entity_id": id, "interaction_type": "meeting", "summary": "Site meeting",
		"occurred_at": rfc3339(time.Now().Add(48 * time.Hour))})
	require.Contains(t, r2.Error.Message, "future")
	b.refused(t, ctx, registry.CodeValidation, "entity.add_interaction", J{"entity_id": id, "interaction_type": "call", "summary": "x", "details": []int{1}})
	b.refused(t, ctx, registry.CodeNotFound, "entity.add_interaction", J{"entity_id": uuid.NewString(), "interaction_type": "call", "summary": "x"})

	// Conversations: linking twice is one link; the brain's runs in it are counted.
	_, err := b.pool.Exec(ctx, `INSERT INTO brain_runs (message, mode, conversation_id) VALUES ('quote for Ann?', 'answer', 'conv-7'), ('send it', 'plan', 'conv-7')`)
	require.NoError(t, err)
	l, rc := b.ok(t, ctx, "entity.link_to_conversation", J{"entity_id": id, "conversation_id": "conv-7"})
	require.Equal(t, true, l.get(t, "linked"))
	require.Equal(t, true, l.get(t, "created"))
	require.Equal(t, map[string]int{"entity_conversations insert": 1}, writes(rc))
	l, rc = b.ok(t, ctx, "entity.link_to_conversation", J{"entity_id": id, "conversation_id": "conv-7"})
	require.Equal(t, true, l.get(t, "linked"))
	require.Equal(t, false, l.get(t, "created"))
	require.Empty(t, rc.Effects.DBWrites, "a repeat adds no row")
	b.ok(t, ctx, "entity.link_to_conversation", J{"entity_id": id, "conversation_id": "conv-8"})
	b.refused(t, ctx, registry.CodeValidation, "entity.link_to_conversation", J{"entity_id": id, "conversation_id": " "})
	b.refused(t, ctx, registry.CodeNotFound, "entity.link_to_conversation", J{"entity_id": uuid.NewString(), "conversation_id": "conv-7"})

	g, _ := b.ok(t, ctx, "entity.get", J{"entity_id": id})
	require.Equal(t, int64(2), g.int(t, "entity.interactions_total"))
	require.Equal(t, "Sent the warranty", g.str(t, "entity.interactions.0.summary"), "newest first")
	require.Equal(t, "site_visit", g.str(t, "entity.interactions.1.interaction_type"))
	requireDecimal(t, "180", g.get(t, "entity.interactions.1.details.roof_area_m2"), "details kept")
	require.Len(t, g.list(t, "entity.conversations"), 2)
	require.Equal(t, "conv-7", g.str(t, "entity.conversations.0.conversation_id"))
	require.Equal(t, int64(2), g.int(t, "entity.conversations.0.runs"))
	require.Equal(t, int64(0), g.int(t, "entity.conversations.1.runs"))
	require.Nil(t, g.get(t, "entity.conversations.1.last_run_at"))
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

func TestGEMEntitySiteDetails(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	e, _ := b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Ann Lee", "contact": J{"suburb": "Newtown"}})
	id := e.str(t, "entity_id")
	details := J{"address": "3 Elm St", "postcode": "2042", "access_notes": "Side gate, code 1234", "storeys": 2,
		"roof_pitch_degrees": 22.5, "hazards": []string{"power lines", "dog", "dog"}, "roof_material": "terracotta tile"}
	r, rc := b.ok(t, ctx, "entity.add_address_site_details", J{"entity_id": id, "site_details": details})
	require.Equal(t, true, r.get(t, "saved"))
	require.Equal(t, []any{"access_notes", "address", "hazards", "postcode", "roof_material", "roof_pitch_degrees", "storeys"}, r.list(t, "updated_fields"))
	require.Equal(t, "3 Elm St", r.str(t, "contact.address"))
	require.Equal(t, "Newtown", r.str(t, "contact.suburb"), "keys left out stay")
	require.Equal(t, []any{"power lines", "dog"}, r.list(t, "site_details.hazards"))
	require.Equal(t, map[string]int{"entities update": 1}, writes(rc))

	// The same again writes nothing; a change writes only it; null removes a detail.
	r, rc = b.ok(t, ctx, "entity.add_address_site_details", J{"entity_id": id, "site_details": details})
	require.Equal(t, true, r.get(t, "saved"))
	require.Empty(t, r.list(t, "updated_fields"))
	require.Empty(t, rc.Effects.DBWrites)
	r, _ = b.ok(t, ctx, "entity.add_address_site_details", J{"entity_id": id, "site_details": J{"storeys": 3, "hazards": nil}})
	require.Equal(t, []any{"hazards", "storeys"}, r.list(t, "updated_fields"))
	require.Equal(t, int64(3), r.int(t, "site_details.storeys"))
	require.NotContains(t, r.get(t, "site_details"), "hazards")

	g, _ := b.ok(t, ctx, "entity.get", J{"entity_id": id})
	require.Equal(t, "Side gate, code 1234", g.str(t, "entity.site_details.access_notes"))
	require.Equal(t, "3 Elm St", g.str(t, "entity.contact.address"))

	for key, sd := range map[string]J{
		"site_details.colour":             {"colour": "red"},
		"site_details.storeys":            {"storeys": 2.5},
		"site_details.roof_pitch_degrees": {"roof_pitch_degrees": 120},
		"site_details.hazards":            {"hazards": "dog"},
		"site_details.parking":            {"parking": 3},
		"site_details is empty":           {},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "entity.add_address_site_details", J{"entity_id": id, "site_details": sd})
		requireNamesField(t, r, key)
	}
	b.refused(t, ctx, registry.CodeNotFound, "entity.add_address_site_details", J{"entity_id": uuid.NewString(), "site_details": J{"parking": "street"}})
}
