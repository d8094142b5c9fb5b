package executor_test

import (
	"encoding/json"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/stretchr/testify/require"
)

// TestStatementErrorCodes makes calls whose handler's statement fails, with plain SQL as a person would, and
// checks the receipt code the executor chose from the SQLSTATE the handler returned as it was.
func TestStatementErrorCodes(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, batched)

	tests := []struct {
		kind       string
		code       registry.ErrorCode
		sqlstate   string
		constraint string
	}{
		{"unique", registry.CodeConflict, "23505", "os_notes_pkey"},
		{"foreign_key", registry.CodeNotFound, "23503", "os_tasks_lead_id_fkey"},
		{"check", registry.CodeValidation, "23514", "os_tasks_priority_check"},
		{"not_null", registry.CodeValidation, "23502", ""},
		{"guard", registry.CodeConflict, "55000", ""},
		{"bad_text", registry.CodeValidation, "22P02", ""},
		{"out_of_range", registry.CodeValidation, "22003", ""},
		{"div_zero", registry.CodeHandlerError, "22012", ""},
	}
	var params []gemsql.CallInsertParams
	for _, tt := range tests {
		params = append(params, gemsql.CallInsertParams{ToolName: "test.sql_error", Input: json.RawMessage(`{"kind": "` + tt.kind + `"}`)})
	}
	ids, err := insertedIDs(gemsql.CallInsert(ctx, b.pool, params...))
	require.NoError(t, err)
	rs := b.wait(t, ctx, ids...)
	for i, tt := range tests {
		r := rs[ids[i]]
		require.Equal(t, registry.StatusFailed, r.Status, tt.kind)
		require.Equal(t, tt.code, r.Error.Code, "%s: %s", tt.kind, r.Error.Message)
		d := decodeDetails(t, r)
		require.Equal(t, tt.sqlstate, d["sqlstate"], tt.kind)
		if tt.constraint != "" {
			require.Equal(t, tt.constraint, d["constraint"], tt.kind)
		}
		require.Empty(t, r.Effects.DBWrites, "%s: the note written first was rolled back", tt.kind)
	}
	require.Contains(t, rs[ids[0]].Error.Message, "already exists", "a unique violation names the key")
	require.Contains(t, rs[ids[1]].Error.Message, "is not present in table \"leads\"", "a foreign key violation names the key")
	require.Equal(t, "inspection x is locked", rs[ids[4]].Error.Message)

	// Through real tools: a task about a lead that does not exist (the handler looks for the lead), and an
	// asset of a lead that does not exist (left to the foreign key, whose violation becomes not_found).
	missing := ids[0].String()
	r := b.waitOne(t, ctx, b.call(t, ctx, "os.create_task",
		`{"title": "Call back", "domain": "business", "context_ref": {"type": "lead", "id": "`+missing+`"}}`))
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeNotFound, r.Error.Code, r.Error.Message)
	require.Contains(t, r.Error.Message, missing)

	r = b.waitOne(t, ctx, b.call(t, ctx, "media.register_asset",
		`{"file_ref": "photos/roof-1.jpg", "asset_type": "photo", "suburb": "Newtown", "lead_id": "`+missing+`"}`))
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeNotFound, r.Error.Code, r.Error.Message)
	d := decodeDetails(t, r)
	require.Equal(t, "23503", d["sqlstate"])
	require.Equal(t, "media_assets_lead_id_fkey", d["constraint"])
	require.Contains(t, r.Error.Message, missing)
	require.Empty(t, r.Effects.DBWrites)
}

// TestTypedHandler runs a handler made with executor.Typed: its input is decoded for it, an input that does
// not decode is a validation_error naming the field, and its typed result is checked against the output
// schema like any other.
func TestTypedHandler(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	r := b.waitOne(t, ctx, b.call(t, ctx, "test.typed", `{"n": 3, "label": "three"}`))
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.JSONEq(t, `{"n": 3, "label": "three", "tags": []}`, string(r.Result))
	require.Equal(t, map[string]any{"result.n": float64(3)}, r.Summary)

	r = b.waitOne(t, ctx, b.call(t, ctx, "test.typed", `{"n": "three"}`))
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeValidation, r.Error.Code)
	require.Equal(t, `input does not fit test.typed: n is a JSON string, which the handler cannot read as int`, r.Error.Message)
	require.Equal(t, map[string]any{"field": "n"}, decodeDetails(t, r))

	r = b.waitOne(t, ctx, b.call(t, ctx, "test.typed", `{"n": 1, "label": "nil"}`))
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeOutputContract, r.Error.Code, r.Error.Message)
}
