package executor_test

import (
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestOneLeadPerNumberHoweverTyped: leads.create made with plain SQL with a number typed five ways makes one
// lead; every later call is the first call's receipt (keyed by the number in E.164), and the lead keeps the
// number as first typed. ("+61 499 000 111" made a second lead beside "0499 000 111".)
func TestOneLeadPerNumberHoweverTyped(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	typings := []string{"0499 000 111", "+61 499 000 111", "0499000111", "(04) 9900 0111", "0061 499 000 111", "+61499000111"}
	var first uuid.UUID
	for i, typed := range typings {
		id := b.call(t, ctx, "leads.create", `{"name": "Ann Lee", "suburb": "Newtown", "phone": "`+typed+`"}`)
		r := b.waitOne(t, ctx, id)
		require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %+v", typed, r.Error)
		require.Equal(t, "+61499000111", r.IdempotencyKey, typed)
		if i == 0 {
			first = id
			require.False(t, r.IdempotencyHit)
			continue
		}
		require.True(t, r.IdempotencyHit, typed)
		require.Equal(t, &first, r.IdempotencyOf, typed)
	}
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads`))
	require.Equal(t, "0499 000 111", b.str(t, ctx, `SELECT phone FROM leads`), "the number as typed, for people")
	require.Equal(t, "+61499000111", b.str(t, ctx, `SELECT phone_e164 FROM leads`))

	// A caller's own idempotency key is kept as given; the handler runs and finds the lead on file.
	var own uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, idempotency_key)
		VALUES ('leads.create', '{"name": "Ann", "suburb": "Newtown", "phone": "+61 (0)499 000 111"}', 'client-key-1') RETURNING id`).Scan(&own))
	r := b.waitOne(t, ctx, own)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Equal(t, "client-key-1", r.IdempotencyKey)
	require.Equal(t, false, decodeResult(t, r).get(t, "created"))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads`))

	// A text that is no phone number is a failed receipt saying why, with nothing written.
	for typed, why := range map[string]string{"0499 000 11": "check the digits", "12": "too few digits", "+999 1234 5678": "calling code", "call me": "no digits"} {
		r := b.refused(t, ctx, registry.CodeValidation, "leads.create", J{"name": "Bo", "suburb": "Newtown", "phone": typed})
		require.Contains(t, r.Error.Message, why, typed)
		require.Contains(t, r.Error.Message, "GEM_PHONE_REGION", typed)
		require.JSONEq(t, `{"field": "phone"}`, string(r.Error.Details), typed)
	}
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM leads`))
}

// TestLeadsStoredBeforeKeysAreFound: a lead stored before migration 00039 (no phone_e164) is found by its
// digits whichever way the number is typed again, so no second lead is made.
func TestLeadsStoredBeforeKeysAreFound(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	var legacy, legacyIntl string
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO leads (name, phone, suburb) VALUES ('Old Lead', '0499 000 222', 'Glebe') RETURNING id`).Scan(&legacy))
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO leads (name, phone, suburb) VALUES ('Old Intl', '+61 499 000 333', 'Glebe') RETURNING id`).Scan(&legacyIntl))

	for typed, want := range map[string]string{"+61 499 000 222": legacy, "(04) 9900 0222": legacy, "0499 000 333": legacyIntl, "0061 499 000 333": legacyIntl} {
		res, rc := b.ok(t, ctx, "leads.create", J{"name": "New", "suburb": "Newtown", "phone": typed})
		require.Equal(t, want, res.str(t, "lead_id"), typed)
		require.Equal(t, false, res.get(t, "created"), typed)
		require.Empty(t, rc.Effects.DBWrites, typed)
	}
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM leads`))
}

// TestContactSearchMatchesAnyTyping: entity.search by a whole number finds the contact however either was
// typed, and a contact's phone must be a phone number.
func TestContactSearchMatchesAnyTyping(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	res, _ := b.ok(t, ctx, "entity.create", J{"entity_type": "client", "name": "Kim Nguyen", "contact": J{"phone": "0499 000 444"}})
	id := res.str(t, "entity_id")
	for _, q := range []string{"+61 499 000 444", "0061499000444", "(04) 9900 0444", "9000444"} {
		found, _ := b.ok(t, ctx, "entity.search", J{"query": q})
		require.Equal(t, int64(1), found.int(t, "count"), q)
		require.Equal(t, id, found.str(t, "results.0.entity_id"), q)
	}
	r := b.refused(t, ctx, registry.CodeValidation, "entity.create", J{"entity_type": "client", "name": "Bo", "contact": J{"phone": "0499 000"}})
	require.Contains(t, r.Error.Message, "contact.phone")
}
