package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// sqlLead inserts a lead with plain SQL (the inspection and quote tests do not depend on leads.create's
// contract) and returns its id.
func (b *testBundle) sqlLead(t *testing.T, ctx context.Context, name, address string) string {
	t.Helper()
	var addr *string
	if address != "" {
		addr = &address
	}
	return b.str(t, ctx, `INSERT INTO leads (name, phone, email, address) VALUES ($1, $2, $3, $4) RETURNING id::text`,
		name, newPhone(), strings.ToLower(strings.Fields(name)[0])+"@example.com", addr)
}

// inspectionFixture is a draft inspection with a measurement, a defect and a passed check.
func (b *testBundle) inspectionFixture(t *testing.T, ctx context.Context) (lead, inspection string) {
	t.Helper()
	lead = b.sqlLead(t, ctx, "Fixture Lead", "1 Test St, Newtown NSW 2042")
	r, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": lead})
	inspection = r.str(t, "inspection_id")
	b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": inspection, "label": "Roof area", "value": 100, "unit": "m2"})
	b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "category": "tile", "severity": "low", "notes": "One cracked tile"})
	b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "gutters", "status": "pass"})
	return lead, inspection
}

// TestGEMInspectionRecording records an inspection with GEM's inputs, tool by tool, and reads it back.
func TestGEMInspectionRecording(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Maria Rossi", "12 Station St, Marrickville NSW 2204")

	// create: the site address is the lead's unless given.
	r, rc := b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "notes": "Two-storey, tiled", "inspector": "Sam"})
	inspection := r.str(t, "inspection_id")
	require.Equal(t, "draft", r.str(t, "status"))
	require.Equal(t, "12 Station St, Marrickville NSW 2204", r.str(t, "site_address"))
	require.Equal(t, "Two-storey, tiled", r.str(t, "notes"))
	require.Equal(t, map[string]int{"inspections insert": 1}, writes(rc))
	require.Equal(t, inspection, rc.Summary["result.inspection_id"])
	r, _ = b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "site_address": "Unit 2, 14 Station St"})
	require.Equal(t, "Unit 2, 14 Station St", r.str(t, "site_address"))
	require.Nil(t, r.get(t, "notes"))

	// add_checklist_item: one item per key; a status or notes given replace, those left out stay.
	r, rc = b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "flashings", "status": "fail", "notes": "lifting at the chimney"})
	item := r.str(t, "item_id")
	require.Equal(t, true, r.get(t, "created"))
	require.Equal(t, "fail", r.str(t, "status"))
	require.Equal(t, map[string]int{"inspection_checklist_items insert": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "flashings", "notes": "lifting at the chimney, rusted"})
	require.Equal(t, item, r.str(t, "item_id"))
	require.Equal(t, false, r.get(t, "created"))
	require.Equal(t, "fail", r.str(t, "status"), "kept: no status given")
	require.Equal(t, map[string]int{"inspection_checklist_items update": 1}, writes(rc))
	_, rc = b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "flashings", "status": "fail"})
	require.Empty(t, rc.Effects.DBWrites, "the same result again writes nothing")
	b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "gutters_clear", "status": "pass"})
	b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "skylight", "status": "na"})
	r, _ = b.ok(t, ctx, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "valleys"})
	require.Nil(t, r.get(t, "status"), "noted, not yet assessed")
	b.refused(t, ctx, registry.CodeValidation, "inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "  "})

	// add_measurement: kinds from the label and unit, units however spelled, metric kept when known.
	measurements := []struct {
		input                 J
		kind, unit            string
		metric, metricUnit    any
		wantValue, wantMetric string
	}{
		{J{"label": "Roof area", "value": 152.5, "unit": "m2"}, "roof_area", "m2", nil, "m2", "152.5", "152.5"},
		{J{"label": "Verandah", "value": 100, "unit": "sq ft", "notes": "flat, iron"}, "other", "ft2", nil, "m2", "100", "9.29"},
		{J{"label": "Pitch", "value": 22.5, "unit": "degrees"}, "roof_pitch", "deg", nil, "deg", "22.5", "22.5"},
		{J{"label": "Front gutter", "value": 42000, "unit": "mm"}, "gutter_length", "mm", nil, "m", "42000", "42"},
		{J{"label": "Back", "value": 10, "unit": "ft", "kind": "fascia_length"}, "fascia_length", "ft", nil, "m", "10", "3.048"},
		{J{"label": "Downpipes", "value": 4, "unit": "each"}, "downpipe_count", "count", nil, "count", "4", "4"},
		{J{"label": "Ridge", "value": 18.3, "unit": "metres"}, "ridge_length", "m", nil, "m", "18.3", "18.3"},
	}
	for _, m := range measurements {
		m.input["inspection_id"] = inspection
		r, rc = b.ok(t, ctx, "inspection.add_measurement", m.input)
		label := m.input["label"].(string)
		require.Equal(t, m.kind, r.str(t, "kind"), label)
		require.Equal(t, m.unit, r.str(t, "unit"), label)
		require.Equal(t, m.metricUnit, r.str(t, "metric_unit"), label)
		requireDecimal(t, m.wantValue, r.get(t, "value"), label)
		requireDecimal(t, m.wantMetric, r.get(t, "metric_value"), label)
		require.Equal(t, map[string]int{"inspection_measurements insert": 1}, writes(rc))
	}
	r, _ = b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": inspection, "label": "Replacement sheets", "value": 12, "unit": "sheets"})
	require.Equal(t, "other", r.str(t, "kind"))
	require.Equal(t, "sheets", r.str(t, "unit"), "a unit GEM does not convert is kept as given")
	require.Nil(t, r.get(t, "metric_value"))
	require.Nil(t, r.get(t, "metric_unit"))

	// add_photo_ref: a media asset with the same file_ref is linked; the same reference again is one photo.
	photo := "s3://gem-media/marrickville/ridge-north.jpg"
	asset := b.str(t, ctx, `INSERT INTO media_assets (file_ref) VALUES ($1) RETURNING id::text`, photo)
	r, rc = b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": inspection, "file_ref": photo, "label": "North ridge", "tags": []string{"ridge", "defect", "ridge", " "}})
	photoID := r.str(t, "photo_ref_id")
	require.Equal(t, asset, r.str(t, "asset_id"))
	require.Equal(t, []any{"ridge", "defect"}, r.list(t, "tags"))
	require.Equal(t, true, r.get(t, "created"))
	require.Equal(t, map[string]int{"inspection_photos insert": 1}, writes(rc))
	r, rc = b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": inspection, "file_ref": photo})
	require.Equal(t, photoID, r.str(t, "photo_ref_id"))
	require.Equal(t, false, r.get(t, "created"))
	require.Equal(t, "North ridge", r.str(t, "label"))
	require.Empty(t, rc.Effects.DBWrites)
	r, rc = b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": inspection, "file_ref": photo, "tags": []string{"ridge"}})
	require.Equal(t, []any{"ridge"}, r.list(t, "tags"))
	require.Equal(t, map[string]int{"inspection_photos update": 1}, writes(rc))
	b.refused(t, ctx, registry.CodeNotFound, "inspection.add_photo_ref", J{"inspection_id": inspection, "file_ref": "x.jpg", "asset_id": missingID})

	// add_defect: photos by id or file_ref; a new file_ref is attached as a photo; severity medium by default.
	r, rc = b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "category": "ridge", "severity": "high",
		"notes": "Cracked ridge capping along 8 m", "photo_refs": []string{photoID, photo}, "location": "north ridge"})
	require.Equal(t, "ridge", r.str(t, "category"))
	require.Equal(t, []any{photo}, r.list(t, "photo_refs"), "one photo, named twice")
	require.Equal(t, int64(0), r.int(t, "photos_attached"))
	require.Equal(t, map[string]int{"inspection_defects insert": 1}, writes(rc))
	outlet := "https://photos.example/outlet.jpg"
	r, rc = b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "category": "gutter", "notes": "Rusted outlet", "photo_refs": []string{outlet}})
	require.Equal(t, "medium", r.str(t, "severity"))
	require.Equal(t, []any{outlet}, r.list(t, "photo_refs"))
	require.Equal(t, int64(1), r.int(t, "photos_attached"))
	require.Equal(t, map[string]int{"inspection_defects insert": 1, "inspection_photos insert": 1}, writes(rc))
	b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "category": "tile", "severity": "low"})
	refused := b.refused(t, ctx, registry.CodeValidation, "inspection.add_defect", J{"inspection_id": inspection, "category": "leak", "photo_refs": []string{missingID}})
	require.Contains(t, refused.Error.Message, "photo_refs[0]")

	// get: everything, in order, with the scope.
	r, _ = b.ok(t, ctx, "inspection.get", J{"inspection_id": inspection})
	require.Equal(t, "Maria Rossi", r.str(t, "lead_name"))
	require.Equal(t, int64(4), r.int(t, "counts.checklist_items"))
	require.Equal(t, int64(8), r.int(t, "counts.measurements"))
	require.Equal(t, int64(2), r.int(t, "counts.photos"))
	require.Equal(t, int64(3), r.int(t, "counts.defects"))
	require.Equal(t, "flashings", r.str(t, "checklist_items.0.item_key"), "by key")
	require.Equal(t, "lifting at the chimney, rusted", r.str(t, "checklist_items.0.notes"))
	require.Equal(t, "Roof area", r.str(t, "measurements.0.label"))
	getScope := r.str(t, "scope_text")

	// generate_scope_summary: the inspection's own data, the same text every time.
	r, rc = b.ok(t, ctx, "inspection.generate_scope_summary", J{"inspection_id": inspection, "format": "sections"})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, getScope, r.str(t, "scope_text"))
	require.Equal(t, `SCOPE OF WORKS
Site: 12 Station St, Marrickville NSW 2204
Customer: Maria Rossi
Inspector: Sam
Inspection status: draft
Notes: Two-storey, tiled

MEASUREMENTS
- Roof area: 152.5 m2
- Verandah: 100 ft2 (9.29 m2); flat, iron
- Pitch: 22.5 deg
- Front gutter: 42000 mm (42 m)
- Back: 10 ft (3.048 m)
- Downpipes: 4 count
- Ridge: 18.3 m
- Replacement sheets: 12 sheets

DEFECTS (3)
High severity:
- Ridge: Cracked ridge capping along 8 m (at north ridge); 1 photo
Medium severity:
- Gutter: Rusted outlet; 1 photo
Low severity:
- Tile: no notes

CHECKLIST
Failed (1):
- flashings: lifting at the chimney, rusted
Passed: 1. Not applicable: 1. Not assessed: 1.

PHOTOS
2 photos attached.`, r.str(t, "scope_text"))
	require.Equal(t, "sections", r.str(t, "format"))
	require.Equal(t, int64(3), r.int(t, "counts.defects"))

	r, _ = b.ok(t, ctx, "inspection.generate_scope_summary", J{"inspection_id": inspection, "format": "bullet"})
	require.Equal(t, `- Site: 12 Station St, Marrickville NSW 2204
- Customer: Maria Rossi
- Notes: Two-storey, tiled
- Measurement: Roof area: 152.5 m2
- Measurement: Verandah: 100 ft2 (9.29 m2); flat, iron
- Measurement: Pitch: 22.5 deg
- Measurement: Front gutter: 42000 mm (42 m)
- Measurement: Back: 10 ft (3.048 m)
- Measurement: Downpipes: 4 count
- Measurement: Ridge: 18.3 m
- Measurement: Replacement sheets: 12 sheets
- Defect (high, ridge): Cracked ridge capping along 8 m (at north ridge); 1 photo
- Defect (medium, gutter): Rusted outlet; 1 photo
- Defect (low, tile): no notes
- Failed check: flashings: lifting at the chimney, rusted
- Checklist: 1 failed, 1 passed, 1 not applicable, 1 not assessed
- Photos: 2`, r.str(t, "scope_text"))
	r, _ = b.ok(t, ctx, "inspection.generate_scope_summary", J{"inspection_id": inspection})
	require.Equal(t, "sections", r.str(t, "format"), "the default")
}

// TestGEMInspectionMeasurementChecks refuses measurements the schema allows but no roof has.
func TestGEMInspectionMeasurementChecks(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	_, inspection := b.inspectionFixture(t, ctx)
	bad := []J{
		{"label": "Main roof", "kind": "roof_area", "value": 10, "unit": "m"}, // an area in metres
		{"label": "Pitch", "kind": "roof_pitch", "value": 30, "unit": "m2"},   // a pitch in m²
		{"label": "Pitch", "value": 95, "unit": "deg"},                        // steeper than vertical
		{"label": "Downpipes", "value": 2.5, "unit": "count"},                 // half a downpipe
		{"label": "Skylights", "value": 1.5, "unit": "each"},                  // any count is whole
		{"label": "Gutter", "value": 1.0001, "unit": "m"},                     // more than 3 decimals
		{"label": "Gutter", "value": -3, "unit": "m"},                         // negative
		{"label": "Gutter", "value": 5e12, "unit": "m"},                       // beyond any roof
		{"label": "  ", "value": 3, "unit": "m"},                              // says nothing
		{"label": "Gutter", "value": 3, "unit": " "},                          // no unit
	}
	for _, in := range bad {
		in["inspection_id"] = inspection
		b.refused(t, ctx, registry.CodeValidation, "inspection.add_measurement", in)
	}
	r, _ := b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": inspection, "label": "Hip angle", "value": 135, "unit": "deg"})
	require.Equal(t, "other", r.str(t, "kind"), "only a pitch is capped at 90 degrees")
	r, _ = b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": inspection, "label": "Gutter brackets", "value": 14, "unit": "count"})
	require.Equal(t, "other", r.str(t, "kind"), "a gutter word with a count is not a gutter length")
	r, _ = b.ok(t, ctx, "inspection.get", J{"inspection_id": inspection})
	require.Len(t, r.list(t, "measurements"), 3, "the fixture's and the two above")
}

// TestGEMInspectionLockRefusesEdits locks an inspection and checks that every change is then refused, by the
// tools and by the database.
func TestGEMInspectionLockRefusesEdits(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead, inspection := b.inspectionFixture(t, ctx)

	// Submitted: edits are refused until it is reopened.
	r, rc := b.ok(t, ctx, "inspection.submit", J{"inspection_id": inspection, "summary": "Cracked tile"})
	require.Equal(t, "submitted", r.str(t, "inspection.status"))
	require.Equal(t, "inspected", r.str(t, "lead_stage"))
	require.Equal(t, map[string]int{"inspections update": 1, "leads update": 1}, writes(rc))
	refused := b.refused(t, ctx, registry.CodeConflict, "inspection.add_defect", J{"inspection_id": inspection, "category": "tile"})
	require.Contains(t, refused.Error.Message, "reopen")
	r, _ = b.ok(t, ctx, "inspection.reopen", J{"inspection_id": inspection})
	require.Equal(t, "draft", r.str(t, "inspection.status"))
	require.Equal(t, true, r.get(t, "changed"))
	b.ok(t, ctx, "inspection.add_defect", J{"inspection_id": inspection, "category": "tile", "severity": "low", "notes": "Loose tile"})

	// Locked straight from draft (as GEM's workflow does): final, and the lead is inspected.
	r, rc = b.ok(t, ctx, "inspection.lock", J{"inspection_id": inspection})
	require.Equal(t, true, r.get(t, "locked"))
	require.Equal(t, true, r.get(t, "changed"))
	require.Equal(t, "locked", r.str(t, "inspection.status"))
	require.NotNil(t, r.get(t, "inspection.submitted_at"))
	require.Equal(t, "inspected", r.str(t, "lead_stage"))
	require.Equal(t, map[string]int{"inspections update": 1}, writes(rc), "the lead was inspected already")
	require.Equal(t, true, rc.Summary["result.locked"])
	r, rc = b.ok(t, ctx, "inspection.lock", J{"inspection_id": inspection})
	require.Equal(t, true, r.get(t, "locked"))
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites, "locking again changes nothing")

	before := b.count(t, ctx, `SELECT count(*) FROM inspection_measurements`)
	edits := []struct {
		tool  string
		input J
	}{
		{"inspection.add_measurement", J{"inspection_id": inspection, "label": "Pitch", "value": 30, "unit": "deg"}},
		{"inspection.add_checklist_item", J{"inspection_id": inspection, "item_key": "gutters", "status": "fail"}},
		{"inspection.add_photo_ref", J{"inspection_id": inspection, "file_ref": "s3://gem-media/x.jpg"}},
		{"inspection.add_defect", J{"inspection_id": inspection, "category": "tile"}},
		{"inspection.submit", J{"inspection_id": inspection}},
		{"inspection.reopen", J{"inspection_id": inspection}},
	}
	for _, e := range edits {
		r := b.refused(t, ctx, registry.CodeConflict, e.tool, e.input)
		require.Contains(t, r.Error.Message, "locked", e.tool)
		require.Contains(t, r.Error.Message, inspection, e.tool)
	}
	require.Equal(t, before, b.count(t, ctx, `SELECT count(*) FROM inspection_measurements`), "nothing written")
	require.Equal(t, "locked", b.str(t, ctx, `SELECT status FROM inspections WHERE id = $1`, inspection))
	r, _ = b.ok(t, ctx, "inspection.generate_scope_summary", J{"inspection_id": inspection})
	require.Contains(t, r.str(t, "scope_text"), "Inspection status: locked")

	// The database refuses too, whoever writes: a person in psql or a handler with a bug.
	_, err := b.pool.Exec(ctx, `INSERT INTO inspection_measurements (inspection_id, kind, label, value, unit)
		VALUES ($1, 'roof_pitch', 'Pitch', 30, 'deg')`, inspection)
	require.ErrorContains(t, err, "SQLSTATE 55000")
	_, err = b.pool.Exec(ctx, `UPDATE inspections SET notes = 'changed' WHERE id = $1`, inspection)
	require.ErrorContains(t, err, "SQLSTATE 55000")

	// A draft with nothing recorded has nothing to lock or submit.
	r, _ = b.ok(t, ctx, "inspection.create", J{"lead_id": lead})
	empty := r.str(t, "inspection_id")
	require.Contains(t, b.refused(t, ctx, registry.CodeConflict, "inspection.lock", J{"inspection_id": empty}).Error.Message, "nothing recorded")
	require.Contains(t, b.refused(t, ctx, registry.CodeConflict, "inspection.submit", J{"inspection_id": empty}).Error.Message, "nothing recorded")
}

// TestGEMInspectionForBookedVisit opens the inspection of a booked visit, taking over one opened for it.
func TestGEMInspectionForBookedVisit(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Ann Lee", "")
	visit := b.str(t, ctx, `INSERT INTO inspection_appointments (lead_id, scheduled_for, address)
		VALUES ($1, now() + interval '1 day', '3 Hill Rd, Ryde') RETURNING id::text`, lead)
	r, rc := b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "appointment_id": visit, "inspector": "Sam"})
	inspection := r.str(t, "inspection_id")
	require.Equal(t, "3 Hill Rd, Ryde", r.str(t, "site_address"), "the visit's address")
	require.Equal(t, visit, r.str(t, "appointment_id"))
	require.Equal(t, map[string]int{"inspection_appointments update": 1, "inspections insert": 1}, writes(rc))
	require.Equal(t, "completed", b.str(t, ctx, `SELECT status FROM inspection_appointments WHERE id = $1`, visit))

	// The same visit again is the same inspection, with what is new.
	r, rc = b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "appointment_id": visit, "notes": "Dog in yard"})
	require.Equal(t, inspection, r.str(t, "inspection_id"))
	require.Equal(t, "Dog in yard", r.str(t, "notes"))
	require.Equal(t, "Sam", r.str(t, "inspector"))
	require.Equal(t, map[string]int{"inspections update": 1}, writes(rc))

	other := b.sqlLead(t, ctx, "Bob Tran", "")
	b.refused(t, ctx, registry.CodeValidation, "inspection.create", J{"lead_id": other, "appointment_id": visit})
	site := b.str(t, ctx, `INSERT INTO entities (kind, name, address, suburb) VALUES ('site', 'Tran house', '9 Bay St', 'Glebe') RETURNING id::text`)
	r, _ = b.ok(t, ctx, "inspection.create", J{"lead_id": other, "site_id": site})
	require.Equal(t, "9 Bay St, Glebe", r.str(t, "site_address"), "the site's address")
	customer := b.str(t, ctx, `INSERT INTO entities (kind, name) VALUES ('client', 'Tran family') RETURNING id::text`)
	b.refused(t, ctx, registry.CodeValidation, "inspection.create", J{"lead_id": other, "site_id": customer})
}

// TestGEMInspectionAfterSchedule walks GEM's flow: leads.schedule_inspection books the visit and opens its
// inspection; inspection.create without naming the visit takes that one over rather than making a second.
func TestGEMInspectionAfterSchedule(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.sqlLead(t, ctx, "Ann Lee", "")
	start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Hour)
	r, _ := b.ok(t, ctx, "leads.schedule_inspection", J{"lead_id": lead,
		"preferred_window": J{"start": rfc3339(start), "end": rfc3339(start.Add(time.Hour))}})
	booked := r.str(t, "inspection_id")
	r, _ = b.ok(t, ctx, "inspection.create", J{"lead_id": lead, "site_address": "3 Hill Rd, Ryde"})
	require.Equal(t, booked, r.str(t, "inspection_id"))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM inspections WHERE lead_id = $1`, lead))

	// A reference into GEM's file store must name a stored file; other references are the caller's.
	missing := "gemfs://" + strings.Repeat("3f", 32) + ".jpg"
	r2 := b.refused(t, ctx, registry.CodeNotFound, "inspection.add_photo_ref", J{"inspection_id": booked, "file_ref": missing})
	require.Contains(t, r2.Error.Message, "file_ref")
	b.refused(t, ctx, registry.CodeNotFound, "inspection.add_defect", J{"inspection_id": booked, "category": "tile", "photo_refs": []string{missing}})
	b.ok(t, ctx, "inspection.add_photo_ref", J{"inspection_id": booked, "file_ref": "https://photos.example.com/ridge.jpg"})

	// With two visits booked, nothing is guessed: a new inspection.
	other := b.sqlLead(t, ctx, "Bob Tran", "")
	for _, d := range []time.Duration{48, 96} {
		b.str(t, ctx, `INSERT INTO inspection_appointments (lead_id, scheduled_for) VALUES ($1, now() + make_interval(hours => $2)) RETURNING id::text`, other, int(d))
	}
	r, _ = b.ok(t, ctx, "inspection.create", J{"lead_id": other})
	require.Empty(t, r.get(t, "appointment_id"))
}

// missingID names no row.
const missingID = "00000000-0000-4000-8000-000000000000"

// TestGEMInspectionNotFound: every inspection tool answers not_found for an inspection (or lead) that does
// not exist, writing nothing.
func TestGEMInspectionNotFound(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	tests := []struct {
		tool  string
		input J
	}{
		{"inspection.create", J{"lead_id": missingID}},
		{"inspection.get", J{"inspection_id": missingID}},
		{"inspection.add_checklist_item", J{"inspection_id": missingID, "item_key": "gutters", "status": "pass"}},
		{"inspection.add_measurement", J{"inspection_id": missingID, "label": "Roof area", "value": 1, "unit": "m2"}},
		{"inspection.add_photo_ref", J{"inspection_id": missingID, "file_ref": "x.jpg"}},
		{"inspection.add_defect", J{"inspection_id": missingID, "category": "tile"}},
		{"inspection.generate_scope_summary", J{"inspection_id": missingID}},
		{"inspection.lock", J{"inspection_id": missingID}},
		{"inspection.submit", J{"inspection_id": missingID}},
		{"inspection.reopen", J{"inspection_id": missingID}},
	}
	for _, tt := range tests {
		r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
		require.Contains(t, r.Error.Message, missingID, tt.tool)
	}
	// GEM's ids are plain strings: one that is not a UUID names no record GEM can hold.
	r := b.refused(t, ctx, registry.CodeNotFound, "inspection.lock", J{"inspection_id": "insp-1"})
	require.Contains(t, r.Error.Message, "inspection_id")
}
