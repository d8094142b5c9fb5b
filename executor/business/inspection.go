package business

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerInspection(h executor.Handlers) {
	h.Func("inspection.create", executor.Typed(createInspection))
	h.Func("inspection.get", executor.Typed(getInspection))
	h.Func("inspection.add_checklist_item", executor.Typed(addChecklistItem))
	h.Func("inspection.add_measurement", executor.Typed(addMeasurement))
	h.Func("inspection.add_photo_ref", executor.Typed(addPhotoRef))
	h.Func("inspection.add_defect", executor.Typed(addDefect))
	h.Func("inspection.submit", executor.Typed(submitInspection))
	h.Func("inspection.reopen", executor.Typed(reopenInspection))
	h.Func("inspection.lock", executor.Typed(lockInspection))
}

type inspection struct {
	InspectionID  uuid.UUID  `json:"inspection_id"`
	LeadID        uuid.UUID  `json:"lead_id"`
	AppointmentID *uuid.UUID `json:"appointment_id"`
	SiteID        *uuid.UUID `json:"site_id"`
	Status        string     `json:"status"`
	Inspector     *string    `json:"inspector"`
	Summary       *string    `json:"summary"`
	SubmittedAt   *time.Time `json:"submitted_at"`
	LockedAt      *time.Time `json:"locked_at"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

const inspectionColumns = `id, lead_id, appointment_id, site_id, status, inspector, summary, submitted_at, locked_at, created_at, updated_at`

func scanInspection(row pgx.Row) (inspection, error) {
	var i inspection
	err := row.Scan(&i.InspectionID, &i.LeadID, &i.AppointmentID, &i.SiteID, &i.Status, &i.Inspector, &i.Summary,
		&i.SubmittedAt, &i.LockedAt, &i.CreatedAt, &i.UpdatedAt)
	return i, err
}

// lockInspectionRow locks an inspection for the rest of the call and returns it.
func lockInspectionRow(ctx context.Context, c *executor.Call, id uuid.UUID) (inspection, error) {
	i, err := scanInspection(c.DB.QueryRow(ctx, `SELECT `+inspectionColumns+` FROM inspections WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return inspection{}, notFoundIfNoRows(err, "inspection", id)
	}
	return i, nil
}

// lockDraftInspection locks an inspection that may still be edited: a draft. A submitted inspection refuses
// edits until it is reopened; a locked one refuses every change.
func lockDraftInspection(ctx context.Context, c *executor.Call, id uuid.UUID) (inspection, error) {
	i, err := lockInspectionRow(ctx, c, id)
	if err != nil {
		return i, err
	}
	switch i.Status {
	case "submitted":
		return i, executor.Conflict("inspection %s is submitted: reopen it with inspection.reopen before changing it", id)
	case "locked":
		return i, executor.Conflict("inspection %s is locked: it refuses every change", id)
	}
	return i, nil
}

type createInspectionInput struct {
	LeadID        uuid.UUID  `json:"lead_id"`
	AppointmentID *uuid.UUID `json:"appointment_id"`
	SiteID        *uuid.UUID `json:"site_id"`
	Inspector     *string    `json:"inspector"`
	Summary       *string    `json:"summary"`
}

// createInspection starts a draft inspection for a lead, optionally for a booked visit (which is then
// completed) and a site.
func createInspection(ctx context.Context, c *executor.Call, in createInspectionInput) (any, error) {
	if _, err := lockLead(ctx, c, in.LeadID); err != nil {
		return nil, err
	}
	if in.AppointmentID != nil {
		var leadID uuid.UUID
		var status string
		err := c.DB.QueryRow(ctx, `SELECT lead_id, status FROM inspection_appointments WHERE id = $1 FOR UPDATE`, *in.AppointmentID).
			Scan(&leadID, &status)
		if err != nil {
			return nil, notFoundIfNoRows(err, "appointment", *in.AppointmentID)
		}
		if leadID != in.LeadID {
			return nil, executor.Invalid("appointment %s is for lead %s, not %s", *in.AppointmentID, leadID, in.LeadID)
		}
		if status == "cancelled" {
			return nil, executor.Conflict("appointment %s was cancelled", *in.AppointmentID)
		}
		if _, err := c.DB.Exec(ctx, `UPDATE inspection_appointments SET status = 'completed', updated_at = now()
			WHERE id = $1 AND status <> 'completed'`, *in.AppointmentID); err != nil {
			return nil, err
		}
	}
	if in.SiteID != nil {
		if err := requireEntity(ctx, c, *in.SiteID, "site"); err != nil {
			return nil, err
		}
	}
	i, err := scanInspection(c.DB.QueryRow(ctx, `INSERT INTO inspections (lead_id, appointment_id, site_id, inspector, summary)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+inspectionColumns, in.LeadID, in.AppointmentID, in.SiteID, in.Inspector, in.Summary))
	if err != nil {
		return nil, err
	}
	return i, nil
}

type checklistItem struct {
	ItemID    uuid.UUID `json:"item_id"`
	Item      string    `json:"item"`
	Result    string    `json:"result"`
	Notes     *string   `json:"notes"`
	UpdatedAt time.Time `json:"updated_at"`
}

const checklistColumns = `id, item, result, notes, updated_at`

func scanChecklistItem(row pgx.Row) (checklistItem, error) {
	var i checklistItem
	return i, row.Scan(&i.ItemID, &i.Item, &i.Result, &i.Notes, &i.UpdatedAt)
}

type addChecklistItemInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
	Item         string    `json:"item"`
	Result       string    `json:"result"`
	Notes        *string   `json:"notes"`
}

// addChecklistItem records the result of one checklist item. The same item again replaces its result.
func addChecklistItem(ctx context.Context, c *executor.Call, in addChecklistItemInput) (any, error) {
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	// The inspection's lock keeps concurrent calls for it apart, so looking first cannot race an insert.
	item, err := scanChecklistItem(c.DB.QueryRow(ctx, `SELECT `+checklistColumns+` FROM inspection_checklist_items
		WHERE inspection_id = $1 AND item = $2`, in.InspectionID, in.Item))
	created := errors.Is(err, pgx.ErrNoRows)
	switch {
	case created:
		item, err = scanChecklistItem(c.DB.QueryRow(ctx, `INSERT INTO inspection_checklist_items (inspection_id, item, result, notes)
			VALUES ($1, $2, $3, $4) RETURNING `+checklistColumns, in.InspectionID, in.Item, in.Result, in.Notes))
	case err == nil && (item.Result != in.Result || !equalPtr(item.Notes, in.Notes)):
		item, err = scanChecklistItem(c.DB.QueryRow(ctx, `UPDATE inspection_checklist_items SET result = $2, notes = $3, updated_at = now()
			WHERE id = $1 RETURNING `+checklistColumns, item.ItemID, in.Result, in.Notes))
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"inspection_id": in.InspectionID, "item": item, "created": created}, nil
}

// measurementUnits maps a measurement kind to the units it may be recorded in; the metric unit is first.
var measurementUnits = map[string][]string{
	"roof_area":      {"m2", "ft2"},
	"roof_pitch":     {"deg"},
	"gutter_length":  {"m", "mm", "ft"},
	"ridge_length":   {"m", "mm", "ft"},
	"valley_length":  {"m", "mm", "ft"},
	"fascia_length":  {"m", "mm", "ft"},
	"downpipe_count": {"count"},
}

// toMetric maps a unit to its metric unit and the exact factor that converts to it.
var toMetric = map[string]struct{ unit, factor string }{
	"m2":    {"m2", "1"},
	"ft2":   {"m2", "0.09290304"},
	"deg":   {"deg", "1"},
	"m":     {"m", "1"},
	"mm":    {"m", "0.001"},
	"ft":    {"m", "0.3048"},
	"count": {"count", "1"},
}

type measurement struct {
	MeasurementID uuid.UUID   `json:"measurement_id"`
	Kind          string      `json:"kind"`
	Label         *string     `json:"label"`
	Value         json.Number `json:"value"`
	Unit          string      `json:"unit"`
	MetricValue   json.Number `json:"metric_value"`
	MetricUnit    string      `json:"metric_unit"`
	CreatedAt     time.Time   `json:"created_at"`
}

const measurementColumns = `id, kind, label, value::text, unit, metric_value::text, metric_unit, created_at`

func scanMeasurement(row pgx.Row) (measurement, error) {
	var m measurement
	var value, metric string
	err := row.Scan(&m.MeasurementID, &m.Kind, &m.Label, &value, &m.Unit, &metric, &m.MetricUnit, &m.CreatedAt)
	m.Value, m.MetricValue = json.Number(value), json.Number(metric)
	return m, err
}

type addMeasurementInput struct {
	InspectionID uuid.UUID   `json:"inspection_id"`
	Kind         string      `json:"kind"`
	Value        json.Number `json:"value"`
	Unit         string      `json:"unit"`
	Label        *string     `json:"label"`
}

// addMeasurement records a measurement with its unit. Lengths may be given in m, mm or ft and areas in m²
// or ft²; each is also stored in metric (m, m²), exactly converted and rounded to 3 decimals. Pitch is in
// degrees (0–90), counts are whole numbers.
func addMeasurement(ctx context.Context, c *executor.Call, in addMeasurementInput) (any, error) {
	if units, ok := measurementUnits[in.Kind]; ok && !slices.Contains(units, in.Unit) {
		return nil, executor.Invalid("a %s is measured in %v, not %s", in.Kind, units, in.Unit)
	}
	if in.Unit == "count" {
		if _, err := in.Value.Int64(); err != nil {
			return nil, executor.Invalid("a count is a whole number, not %s", in.Value)
		}
	}
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	metric := toMetric[in.Unit]
	m, err := scanMeasurement(c.DB.QueryRow(ctx, `INSERT INTO inspection_measurements
			(inspection_id, kind, label, value, unit, metric_value, metric_unit)
		VALUES ($1, $2, $3, $4::numeric, $5, round($4::numeric * $6::numeric, 3), $7) RETURNING `+measurementColumns,
		in.InspectionID, in.Kind, in.Label, in.Value.String(), in.Unit, metric.factor, metric.unit))
	if err != nil {
		return nil, err
	}
	return map[string]any{"inspection_id": in.InspectionID, "measurement": m}, nil
}

type photoRef struct {
	PhotoID   uuid.UUID  `json:"photo_id"`
	Ref       string     `json:"ref"`
	Caption   *string    `json:"caption"`
	AssetID   *uuid.UUID `json:"asset_id"`
	CreatedAt time.Time  `json:"created_at"`
}

const photoColumns = `id, ref, caption, asset_id, created_at`

func scanPhoto(row pgx.Row) (photoRef, error) {
	var p photoRef
	return p, row.Scan(&p.PhotoID, &p.Ref, &p.Caption, &p.AssetID, &p.CreatedAt)
}

type addPhotoRefInput struct {
	InspectionID uuid.UUID  `json:"inspection_id"`
	Ref          string     `json:"ref"`
	Caption      *string    `json:"caption"`
	AssetID      *uuid.UUID `json:"asset_id"`
}

// addPhotoRef attaches a photo (a reference to where the file lives, optionally a registered media asset)
// to an inspection. The same reference again is attached once; a new caption or asset replaces the old.
func addPhotoRef(ctx context.Context, c *executor.Call, in addPhotoRefInput) (any, error) {
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	if in.AssetID != nil {
		var found bool
		if err := c.DB.QueryRow(ctx, `SELECT true FROM media_assets WHERE id = $1 FOR SHARE`, *in.AssetID).Scan(&found); err != nil {
			return nil, notFoundIfNoRows(err, "media asset", *in.AssetID)
		}
	}
	p, err := scanPhoto(c.DB.QueryRow(ctx, `SELECT `+photoColumns+` FROM inspection_photos WHERE inspection_id = $1 AND ref = $2`,
		in.InspectionID, in.Ref))
	created := errors.Is(err, pgx.ErrNoRows)
	switch {
	case created:
		p, err = scanPhoto(c.DB.QueryRow(ctx, `INSERT INTO inspection_photos (inspection_id, ref, caption, asset_id)
			VALUES ($1, $2, $3, $4) RETURNING `+photoColumns, in.InspectionID, in.Ref, in.Caption, in.AssetID))
	case err == nil && ((in.Caption != nil && !equalPtr(in.Caption, p.Caption)) || (in.AssetID != nil && (p.AssetID == nil || *p.AssetID != *in.AssetID))):
		p, err = scanPhoto(c.DB.QueryRow(ctx, `UPDATE inspection_photos SET caption = coalesce($2, caption), asset_id = coalesce($3, asset_id)
			WHERE id = $1 RETURNING `+photoColumns, p.PhotoID, in.Caption, in.AssetID))
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"inspection_id": in.InspectionID, "photo": p, "created": created}, nil
}

type defect struct {
	DefectID    uuid.UUID `json:"defect_id"`
	Title       string    `json:"title"`
	Severity    string    `json:"severity"`
	Location    *string   `json:"location"`
	Description *string   `json:"description"`
	PhotoRef    *string   `json:"photo_ref"`
	CreatedAt   time.Time `json:"created_at"`
}

const defectColumns = `id, title, severity, location, description, photo_ref, created_at`

func scanDefect(row pgx.Row) (defect, error) {
	var d defect
	return d, row.Scan(&d.DefectID, &d.Title, &d.Severity, &d.Location, &d.Description, &d.PhotoRef, &d.CreatedAt)
}

type addDefectInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
	Title        string    `json:"title"`
	Severity     string    `json:"severity"`
	Location     *string   `json:"location"`
	Description  *string   `json:"description"`
	PhotoRef     *string   `json:"photo_ref"`
}

func addDefect(ctx context.Context, c *executor.Call, in addDefectInput) (any, error) {
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	d, err := scanDefect(c.DB.QueryRow(ctx, `INSERT INTO inspection_defects (inspection_id, title, severity, location, description, photo_ref)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+defectColumns, in.InspectionID, in.Title, in.Severity, in.Location, in.Description, in.PhotoRef))
	if err != nil {
		return nil, err
	}
	return map[string]any{"inspection_id": in.InspectionID, "defect": d}, nil
}

type inspectionCounts struct {
	ChecklistItems int `json:"checklist_items"`
	Measurements   int `json:"measurements"`
	Photos         int `json:"photos"`
	Defects        int `json:"defects"`
}

func countInspection(ctx context.Context, c *executor.Call, id uuid.UUID) (inspectionCounts, error) {
	var n inspectionCounts
	err := c.DB.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM inspection_checklist_items WHERE inspection_id = $1),
			(SELECT count(*) FROM inspection_measurements WHERE inspection_id = $1),
			(SELECT count(*) FROM inspection_photos WHERE inspection_id = $1),
			(SELECT count(*) FROM inspection_defects WHERE inspection_id = $1)`, id).
		Scan(&n.ChecklistItems, &n.Measurements, &n.Photos, &n.Defects)
	return n, err
}

type submitInspectionOutput struct {
	Inspection       inspection       `json:"inspection"`
	Counts           inspectionCounts `json:"counts"`
	AlreadySubmitted bool             `json:"already_submitted"`
	LeadStage        string           `json:"lead_stage"`
}

type submitInspectionInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
	Summary      *string   `json:"summary"`
}

// submitInspection marks a draft inspection complete and moves its lead to inspected. An inspection with
// nothing recorded cannot be submitted; submitting again changes nothing.
func submitInspection(ctx context.Context, c *executor.Call, in submitInspectionInput) (*submitInspectionOutput, error) {
	i, err := lockInspectionRow(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	counts, err := countInspection(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	already := i.Status == "submitted"
	switch i.Status {
	case "locked":
		return nil, executor.Conflict("inspection %s is locked: it refuses every change", in.InspectionID)
	case "draft":
		if counts == (inspectionCounts{}) {
			return nil, executor.Conflict("inspection %s has nothing recorded: add checklist items, measurements, photos or defects first", in.InspectionID)
		}
		i, err = scanInspection(c.DB.QueryRow(ctx, `UPDATE inspections SET status = 'submitted', submitted_at = now(),
				summary = coalesce($2, summary), updated_at = now()
			WHERE id = $1 RETURNING `+inspectionColumns, in.InspectionID, in.Summary))
		if err != nil {
			return nil, err
		}
	}
	_, stage, err := advanceLead(ctx, c.DB, i.LeadID, "inspected")
	if err != nil {
		return nil, err
	}
	return &submitInspectionOutput{Inspection: i, Counts: counts, AlreadySubmitted: already, LeadStage: stage}, nil
}

type inspectionChanged struct {
	Inspection inspection `json:"inspection"`
	Changed    bool       `json:"changed"`
}

type reopenInspectionInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
}

// reopenInspection returns a submitted inspection to draft so it can be corrected. A locked inspection
// cannot be reopened; reopening a draft changes nothing.
func reopenInspection(ctx context.Context, c *executor.Call, in reopenInspectionInput) (*inspectionChanged, error) {
	i, err := lockInspectionRow(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	switch i.Status {
	case "locked":
		return nil, executor.Conflict("inspection %s is locked: it cannot be reopened", in.InspectionID)
	case "draft":
		return &inspectionChanged{Inspection: i}, nil
	}
	i, err = scanInspection(c.DB.QueryRow(ctx, `UPDATE inspections SET status = 'draft', submitted_at = NULL, updated_at = now()
		WHERE id = $1 RETURNING `+inspectionColumns, in.InspectionID))
	if err != nil {
		return nil, err
	}
	return &inspectionChanged{Inspection: i, Changed: true}, nil
}

type lockInspectionInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
}

// lockInspection makes a submitted inspection final: it then refuses every change. Locking again changes
// nothing; a draft must be submitted first.
func lockInspection(ctx context.Context, c *executor.Call, in lockInspectionInput) (*inspectionChanged, error) {
	i, err := lockInspectionRow(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	switch i.Status {
	case "draft":
		return nil, executor.Conflict("inspection %s is a draft: submit it before locking it", in.InspectionID)
	case "locked":
		return &inspectionChanged{Inspection: i}, nil
	}
	i, err = scanInspection(c.DB.QueryRow(ctx, `UPDATE inspections SET status = 'locked', locked_at = now(), updated_at = now()
		WHERE id = $1 RETURNING `+inspectionColumns, in.InspectionID))
	if err != nil {
		return nil, err
	}
	return &inspectionChanged{Inspection: i, Changed: true}, nil
}

type getInspectionInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
}

// getInspection returns an inspection with everything recorded on it.
func getInspection(ctx context.Context, c *executor.Call, in getInspectionInput) (any, error) {
	i, err := scanInspection(c.DB.QueryRow(ctx, `SELECT `+inspectionColumns+` FROM inspections WHERE id = $1`, in.InspectionID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "inspection", in.InspectionID)
	}
	items, err := queryList(ctx, c, scanChecklistItem, `SELECT `+checklistColumns+` FROM inspection_checklist_items
		WHERE inspection_id = $1 ORDER BY created_at, item`, in.InspectionID)
	if err != nil {
		return nil, err
	}
	measurements, err := queryList(ctx, c, scanMeasurement, `SELECT `+measurementColumns+` FROM inspection_measurements
		WHERE inspection_id = $1 ORDER BY created_at, id`, in.InspectionID)
	if err != nil {
		return nil, err
	}
	photos, err := queryList(ctx, c, scanPhoto, `SELECT `+photoColumns+` FROM inspection_photos
		WHERE inspection_id = $1 ORDER BY created_at, ref`, in.InspectionID)
	if err != nil {
		return nil, err
	}
	defects, err := queryList(ctx, c, scanDefect, `SELECT `+defectColumns+` FROM inspection_defects
		WHERE inspection_id = $1 ORDER BY created_at, id`, in.InspectionID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"inspection": i, "checklist_items": items, "measurements": measurements, "photos": photos, "defects": defects}, nil
}
