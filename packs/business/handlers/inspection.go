package businesshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerInspection(h executor.Handlers, p *pack) {
	h.Func(businesspack.CreateInspection, executor.Typed(createInspection))
	h.Func(businesspack.GetInspection, executor.Typed(getInspection))
	h.Func(businesspack.AddChecklistItem, executor.Typed(addChecklistItem))
	h.Func(businesspack.AddMeasurement, executor.Typed(addMeasurement))
	h.Func(businesspack.AddPhotoRef, executor.Typed(p.addPhotoRef))
	h.Func(businesspack.AddDefect, executor.Typed(p.addDefect))
	h.Func(businesspack.GenerateScopeSummary, executor.Typed(generateScopeSummary))
	h.Func(businesspack.SubmitInspection, executor.Typed(submitInspection))
	h.Func(businesspack.ReopenInspection, executor.Typed(reopenInspection))
	h.Func(businesspack.LockInspection, executor.Typed(lockInspection))
}

const inspectionColumns = `id, lead_id, appointment_id, site_id, site_address, notes, status, inspector, summary, submitted_at,
	locked_at, created_at, updated_at`

func scanInspection(row pgx.Row) (businesspack.Inspection, error) {
	var i businesspack.Inspection
	err := row.Scan(&i.InspectionID, &i.LeadID, &i.AppointmentID, &i.SiteID, &i.SiteAddress, &i.Notes, &i.Status, &i.Inspector,
		&i.Summary, &i.SubmittedAt, &i.LockedAt, &i.CreatedAt, &i.UpdatedAt)
	return i, err
}

// lockInspectionRow locks an inspection for the rest of the call and returns it.
func lockInspectionRow(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Inspection, error) {
	i, err := scanInspection(c.DB.QueryRow(ctx, `SELECT `+inspectionColumns+` FROM inspections WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return businesspack.Inspection{}, executor.NotFoundIfNoRows(err, "inspection", id)
	}
	return i, nil
}

// lockDraftInspection locks an inspection that may still be edited: a draft. A submitted inspection refuses
// edits until it is reopened; a locked one refuses every change.
func lockDraftInspection(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Inspection, error) {
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
	SiteAddress   *string    `json:"site_address"`
	Notes         *string    `json:"notes"`
	AppointmentID *uuid.UUID `json:"appointment_id"`
	SiteID        *uuid.UUID `json:"site_id"`
	Inspector     *string    `json:"inspector"`
}

// createInspection starts a draft inspection for a lead. The site address is the one given, else the site
// entity's, else the booked visit's, else the lead's. For a booked visit the visit is marked completed; an
// inspection already opened for that visit (leads.schedule_inspection may open one) is taken over, not
// duplicated.
func createInspection(ctx context.Context, c *executor.Call, in createInspectionInput) (*businesspack.Inspection, error) {
	var leadAddress *string
	if err := c.DB.QueryRow(ctx, `SELECT address FROM leads WHERE id = $1 FOR KEY SHARE`, in.LeadID).Scan(&leadAddress); err != nil {
		return nil, executor.NotFoundIfNoRows(err, "lead", in.LeadID)
	}
	address := trimmedText(in.SiteAddress)
	if in.SiteID != nil {
		var kind string
		var siteAddress *string
		err := c.DB.QueryRow(ctx, `SELECT kind, concat_ws(', ', nullif(address, ''), nullif(suburb, ''), nullif(postcode, ''))
			FROM entities WHERE id = $1 FOR KEY SHARE`, *in.SiteID).Scan(&kind, &siteAddress)
		if err != nil {
			return nil, executor.NotFoundIfNoRows(err, "site", *in.SiteID)
		}
		if kind != "site" {
			return nil, executor.Invalid("entity %s is a %s, not a site", *in.SiteID, kind)
		}
		if address == nil {
			address = trimmedText(siteAddress)
		}
	}
	if in.AppointmentID == nil {
		// GEM's callers book the visit (leads.schedule_inspection, which opens its inspection) and then create
		// the inspection without naming the visit: the lead's one booked visit is the one meant. With several,
		// nothing is guessed.
		booked, err := executor.QueryList(ctx, c.DB, func(r pgx.Row) (uuid.UUID, error) {
			var id uuid.UUID
			return id, r.Scan(&id)
		}, `SELECT id FROM inspection_appointments WHERE lead_id = $1 AND status = 'scheduled' LIMIT 2`, in.LeadID)
		if err != nil {
			return nil, err
		}
		if len(booked) == 1 {
			in.AppointmentID = &booked[0]
		}
	}
	if in.AppointmentID != nil {
		var leadID uuid.UUID
		var status string
		var visitAddress *string
		err := c.DB.QueryRow(ctx, `SELECT lead_id, status, address FROM inspection_appointments WHERE id = $1 FOR UPDATE`, *in.AppointmentID).
			Scan(&leadID, &status, &visitAddress)
		if err != nil {
			return nil, executor.NotFoundIfNoRows(err, "appointment", *in.AppointmentID)
		}
		if leadID != in.LeadID {
			return nil, executor.Invalid("appointment %s is for lead %s, not %s", *in.AppointmentID, leadID, in.LeadID)
		}
		if status == "cancelled" {
			return nil, executor.Conflict("appointment %s was cancelled", *in.AppointmentID)
		}
		if address == nil {
			address = trimmedText(visitAddress)
		}
		if _, err := c.DB.Exec(ctx, `UPDATE inspection_appointments SET status = 'completed', updated_at = now()
			WHERE id = $1 AND status <> 'completed'`, *in.AppointmentID); err != nil {
			return nil, err
		}
		opened, err := scanInspection(c.DB.QueryRow(ctx, `SELECT `+inspectionColumns+` FROM inspections WHERE appointment_id = $1 FOR UPDATE`,
			*in.AppointmentID))
		if err == nil {
			return takeOverInspection(ctx, c, opened, in, address)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
	}
	if address == nil {
		address = trimmedText(leadAddress)
	}
	i, err := scanInspection(c.DB.QueryRow(ctx, `INSERT INTO inspections (lead_id, appointment_id, site_id, site_address, notes, inspector)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+inspectionColumns,
		in.LeadID, in.AppointmentID, in.SiteID, address, trimmedText(in.Notes), trimmedText(in.Inspector)))
	if err != nil {
		return nil, err
	}
	return &i, nil
}

// takeOverInspection fills in an inspection opened for a booked visit with what inspection.create was given.
func takeOverInspection(ctx context.Context, c *executor.Call, i businesspack.Inspection, in createInspectionInput, address *string) (*businesspack.Inspection, error) {
	notes, inspector, site := trimmedText(in.Notes), trimmedText(in.Inspector), in.SiteID
	if i.SiteAddress != nil && trimmedText(in.SiteAddress) == nil {
		address = i.SiteAddress // an address the visit already has wins over one derived from elsewhere
	}
	changed := !executor.SamePtr(i.SiteAddress, address) || (notes != nil && !executor.SamePtr(i.Notes, notes)) ||
		(inspector != nil && !executor.SamePtr(i.Inspector, inspector)) || (site != nil && (i.SiteID == nil || *i.SiteID != site.String()))
	if !changed {
		return &i, nil
	}
	if i.Status != "draft" {
		return nil, executor.Conflict("inspection %s for appointment %s is %s: it cannot take new details", i.InspectionID, *in.AppointmentID, i.Status)
	}
	i, err := scanInspection(c.DB.QueryRow(ctx, `UPDATE inspections SET site_address = $2, notes = coalesce($3, notes),
			inspector = coalesce($4, inspector), site_id = coalesce($5, site_id), updated_at = now()
		WHERE id = $1 RETURNING `+inspectionColumns, i.InspectionID, address, notes, inspector, site))
	if err != nil {
		return nil, err
	}
	return &i, nil
}

type checklistItem struct {
	ItemID       uuid.UUID `json:"item_id"`
	InspectionID uuid.UUID `json:"inspection_id"`
	ItemKey      string    `json:"item_key"`
	Status       *string   `json:"status"`
	Notes        *string   `json:"notes"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

const checklistColumns = `id, inspection_id, item_key, status, notes, created_at, updated_at`

func scanChecklistItem(row pgx.Row) (checklistItem, error) {
	var i checklistItem
	return i, row.Scan(&i.ItemID, &i.InspectionID, &i.ItemKey, &i.Status, &i.Notes, &i.CreatedAt, &i.UpdatedAt)
}

type addChecklistItemInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
	ItemKey      string    `json:"item_key"`
	Status       *string   `json:"status"`
	Notes        *string   `json:"notes"`
}

type addChecklistItemOutput struct {
	checklistItem
	Created bool `json:"created"`
}

// addChecklistItem records the result of one checklist item. The same item_key again updates it: a status
// or notes given replace the old ones, those left out stay. An item without a status is noted, not yet
// assessed.
func addChecklistItem(ctx context.Context, c *executor.Call, in addChecklistItemInput) (*addChecklistItemOutput, error) {
	key := strings.TrimSpace(in.ItemKey)
	if key == "" {
		return nil, executor.Invalid("item_key is empty: name the checklist item, like gutters or flashings")
	}
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	// The inspection's lock keeps concurrent calls for it apart, so looking first cannot race an insert.
	item, err := scanChecklistItem(c.DB.QueryRow(ctx, `SELECT `+checklistColumns+` FROM inspection_checklist_items
		WHERE inspection_id = $1 AND item_key = $2`, in.InspectionID, key))
	created := errors.Is(err, pgx.ErrNoRows)
	switch {
	case created:
		item, err = scanChecklistItem(c.DB.QueryRow(ctx, `INSERT INTO inspection_checklist_items (inspection_id, item_key, status, notes)
			VALUES ($1, $2, $3, $4) RETURNING `+checklistColumns, in.InspectionID, key, in.Status, in.Notes))
	case err == nil && ((in.Status != nil && !executor.SamePtr(item.Status, in.Status)) || (in.Notes != nil && !executor.SamePtr(item.Notes, in.Notes))):
		item, err = scanChecklistItem(c.DB.QueryRow(ctx, `UPDATE inspection_checklist_items
			SET status = coalesce($2, status), notes = coalesce($3, notes), updated_at = now()
			WHERE id = $1 RETURNING `+checklistColumns, item.ItemID, in.Status, in.Notes))
	}
	if err != nil {
		return nil, err
	}
	return &addChecklistItemOutput{checklistItem: item, Created: created}, nil
}

// Measurement kinds, units and their conversion to metric.
var (
	// measurementUnits maps a kind to the units it may be recorded in; the metric unit is first.
	measurementUnits = map[string][]string{
		"roof_area":      {"m2", "ft2"},
		"roof_pitch":     {"deg"},
		"gutter_length":  {"m", "mm", "ft"},
		"ridge_length":   {"m", "mm", "ft"},
		"valley_length":  {"m", "mm", "ft"},
		"fascia_length":  {"m", "mm", "ft"},
		"downpipe_count": {"count"},
	}

	// toMetric maps a unit to its metric unit and the exact factor that converts to it.
	toMetric = map[string]struct{ unit, factor string }{
		"m2":    {"m2", "1"},
		"ft2":   {"m2", "0.09290304"},
		"deg":   {"deg", "1"},
		"m":     {"m", "1"},
		"mm":    {"m", "0.001"},
		"ft":    {"m", "0.3048"},
		"count": {"count", "1"},
	}

	// unitSpellings maps the ways people write a unit to its name.
	unitSpellings = map[string]string{
		"m2": "m2", "m²": "m2", "m^2": "m2", "sqm": "m2", "sq m": "m2", "sq. m": "m2", "square metres": "m2", "square meters": "m2",
		"ft2": "ft2", "ft²": "ft2", "ft^2": "ft2", "sqft": "ft2", "sq ft": "ft2", "sq. ft": "ft2", "square feet": "ft2",
		"deg": "deg", "°": "deg", "degree": "deg", "degrees": "deg",
		"m": "m", "lm": "m", "metre": "m", "metres": "m", "meter": "m", "meters": "m",
		"mm": "mm", "millimetre": "mm", "millimetres": "mm", "millimeter": "mm", "millimeters": "mm",
		"ft": "ft", "foot": "ft", "feet": "ft",
		"count": "count", "each": "count", "ea": "count", "no": "count", "pcs": "count", "pieces": "count",
	}

	// kindWords infers a measurement's kind from its label: the first entry whose word the label contains
	// and whose units include the measurement's unit.
	kindWords = []struct {
		kind  string
		words []string
	}{
		{"roof_pitch", []string{"pitch", "slope"}},
		{"downpipe_count", []string{"downpipe", "down pipe"}},
		{"gutter_length", []string{"gutter"}},
		{"ridge_length", []string{"ridge"}},
		{"valley_length", []string{"valley"}},
		{"fascia_length", []string{"fascia"}},
		{"roof_area", []string{"roof", "area"}},
	}
)

// maxMeasurement keeps values inside numeric(12,3).
const maxMeasurement = 999_999_999

// normalUnit returns the name of a unit as people write it ("metres" → m), or the unit as given, trimmed,
// when it is not one GEM converts.
func normalUnit(unit string) string {
	u := strings.Join(strings.Fields(strings.ToLower(unit)), " ")
	if name, ok := unitSpellings[strings.TrimSuffix(u, ".")]; ok {
		return name
	}
	return strings.TrimSpace(unit)
}

// measurementKind is the kind given, or the one the label and unit point to.
func measurementKind(kind *string, label, unit string) (string, error) {
	if kind != nil {
		if units, ok := measurementUnits[*kind]; ok && !slices.Contains(units, unit) {
			return "", executor.Invalid("a %s is measured in %v, not %s", *kind, units, unit)
		}
		return *kind, nil
	}
	l := strings.ToLower(label)
	for _, k := range kindWords {
		if slices.Contains(measurementUnits[k.kind], unit) && slices.ContainsFunc(k.words, func(w string) bool { return strings.Contains(l, w) }) {
			return k.kind, nil
		}
	}
	return "other", nil
}

type measurement struct {
	MeasurementID uuid.UUID    `json:"measurement_id"`
	InspectionID  uuid.UUID    `json:"inspection_id"`
	Kind          string       `json:"kind"`
	Label         *string      `json:"label"`
	Value         json.Number  `json:"value"`
	Unit          string       `json:"unit"`
	MetricValue   *json.Number `json:"metric_value"`
	MetricUnit    *string      `json:"metric_unit"`
	Notes         *string      `json:"notes"`
	CreatedAt     time.Time    `json:"created_at"`
}

// trim_scale drops the trailing zeros of numeric(12,3): 152.5, not 152.500.
const measurementColumns = `id, inspection_id, kind, label, trim_scale(value)::text, unit, trim_scale(metric_value)::text, metric_unit,
	notes, created_at`

func scanMeasurement(row pgx.Row) (measurement, error) {
	var m measurement
	var value string
	var metric *string
	err := row.Scan(&m.MeasurementID, &m.InspectionID, &m.Kind, &m.Label, &value, &m.Unit, &metric, &m.MetricUnit, &m.Notes, &m.CreatedAt)
	m.Value = json.Number(value)
	if metric != nil {
		n := json.Number(*metric)
		m.MetricValue = &n
	}
	return m, err
}

type addMeasurementInput struct {
	InspectionID uuid.UUID   `json:"inspection_id"`
	Label        string      `json:"label"`
	Value        json.Number `json:"value"`
	Unit         string      `json:"unit"`
	Notes        *string     `json:"notes"`
	Kind         *string     `json:"kind"`
}

// addMeasurement records a measurement. The unit is free text; the ones GEM knows (m2, ft2, deg, m, mm, ft,
// count, however spelled) are stored by name and also in metric (m2, deg, m, count), exactly converted and
// rounded to 3 decimals. The kind is given or inferred from the label and unit ("Gutter run" in m is a
// gutter_length); a kind's units, a pitch of at most 90 degrees (any angle at most 360) and whole counts
// are enforced.
func addMeasurement(ctx context.Context, c *executor.Call, in addMeasurementInput) (*measurement, error) {
	label := strings.TrimSpace(in.Label)
	if label == "" {
		return nil, executor.Invalid("label is empty: say what was measured, like Roof area or North gutter")
	}
	unit := normalUnit(in.Unit)
	if unit == "" {
		return nil, executor.Invalid("unit is empty: give the unit of %s, like m2, m or deg", in.Value)
	}
	value, ok := new(big.Rat).SetString(in.Value.String())
	if !ok {
		return nil, executor.Invalid("value %q is not a number", in.Value)
	}
	if value.Sign() < 0 || value.Cmp(big.NewRat(maxMeasurement, 1)) > 0 {
		return nil, executor.Invalid("value %s is outside 0..%d", in.Value, maxMeasurement)
	}
	if !new(big.Rat).Mul(value, big.NewRat(1000, 1)).IsInt() {
		return nil, executor.Invalid("value %s has more than 3 decimal places", in.Value)
	}
	kind, err := measurementKind(in.Kind, label, unit)
	if err != nil {
		return nil, err
	}
	switch {
	case unit == "count" && !value.IsInt():
		return nil, executor.Invalid("a count is a whole number, not %s", in.Value)
	case kind == "roof_pitch" && value.Cmp(big.NewRat(90, 1)) > 0:
		return nil, executor.Invalid("a roof pitch is at most 90 degrees, not %s", in.Value)
	case unit == "deg" && value.Cmp(big.NewRat(360, 1)) > 0:
		return nil, executor.Invalid("an angle is at most 360 degrees, not %s", in.Value)
	}
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	var factor, metricUnit *string
	if m, ok := toMetric[unit]; ok {
		factor, metricUnit = &m.factor, &m.unit
	}
	m, err := scanMeasurement(c.DB.QueryRow(ctx, `INSERT INTO inspection_measurements
			(inspection_id, kind, label, value, unit, metric_value, metric_unit, notes, created_at)
		VALUES ($1, $2, $3, $4::numeric, $5, round($4::numeric * $6::numeric, 3), $7, $8, clock_timestamp()) RETURNING `+measurementColumns,
		in.InspectionID, kind, label, value.FloatString(3), unit, factor, metricUnit, trimmedText(in.Notes)))
	if err != nil {
		return nil, err
	}
	return &m, nil
}

type photoRef struct {
	PhotoRefID   uuid.UUID  `json:"photo_ref_id"`
	InspectionID uuid.UUID  `json:"inspection_id"`
	FileRef      string     `json:"file_ref"`
	Label        *string    `json:"label"`
	Tags         []string   `json:"tags"`
	AssetID      *uuid.UUID `json:"asset_id"`
	CreatedAt    time.Time  `json:"created_at"`
}

const photoColumns = `id, inspection_id, file_ref, label, tags, asset_id, created_at`

func scanPhoto(row pgx.Row) (photoRef, error) {
	var p photoRef
	return p, row.Scan(&p.PhotoRefID, &p.InspectionID, &p.FileRef, &p.Label, &p.Tags, &p.AssetID, &p.CreatedAt)
}

// uniqueTags trims tags and drops empty and repeated ones, keeping their order; never nil.
func uniqueTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

type addPhotoRefInput struct {
	InspectionID uuid.UUID  `json:"inspection_id"`
	FileRef      string     `json:"file_ref"`
	Label        *string    `json:"label"`
	Tags         *[]string  `json:"tags"`
	AssetID      *uuid.UUID `json:"asset_id"`
}

type addPhotoRefOutput struct {
	photoRef
	Created bool `json:"created"`
}

// addPhotoRef attaches a photo to an inspection by a reference to its file. A media asset registered with
// the same file_ref is linked to it (or the asset_id given). The same reference again is attached once;
// a label, tags or asset given replace the old ones. A reference into GEM's file store must name a stored
// file.
func (p *pack) addPhotoRef(ctx context.Context, c *executor.Call, in addPhotoRefInput) (*addPhotoRefOutput, error) {
	ref := strings.TrimSpace(in.FileRef)
	if ref == "" {
		return nil, executor.Invalid("file_ref is empty: give the photo's URL or file store reference")
	}
	if err := p.checkStoredRef("file_ref", ref); err != nil {
		return nil, err
	}
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	asset := in.AssetID
	if asset != nil {
		var found bool
		if err := c.DB.QueryRow(ctx, `SELECT true FROM media_assets WHERE id = $1 FOR KEY SHARE`, *asset).Scan(&found); err != nil {
			return nil, executor.NotFoundIfNoRows(err, "media asset", *asset)
		}
	} else {
		var id uuid.UUID
		err := c.DB.QueryRow(ctx, `SELECT id FROM media_assets WHERE file_ref = $1 FOR KEY SHARE`, ref).Scan(&id)
		switch {
		case err == nil:
			asset = &id
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, err
		}
	}
	var tags []string
	if in.Tags != nil {
		tags = uniqueTags(*in.Tags)
	}
	label := trimmedText(in.Label)
	photo, err := scanPhoto(c.DB.QueryRow(ctx, `SELECT `+photoColumns+` FROM inspection_photos WHERE inspection_id = $1 AND file_ref = $2`,
		in.InspectionID, ref))
	created := errors.Is(err, pgx.ErrNoRows)
	switch {
	case created:
		if tags == nil {
			tags = []string{}
		}
		photo, err = scanPhoto(c.DB.QueryRow(ctx, `INSERT INTO inspection_photos (inspection_id, file_ref, label, tags, asset_id, created_at)
			VALUES ($1, $2, $3, $4, $5, clock_timestamp()) RETURNING `+photoColumns, in.InspectionID, ref, label, tags, asset))
	case err == nil && ((label != nil && !executor.SamePtr(label, photo.Label)) || (tags != nil && !slices.Equal(tags, photo.Tags)) ||
		(asset != nil && (photo.AssetID == nil || *photo.AssetID != *asset))):
		photo, err = scanPhoto(c.DB.QueryRow(ctx, `UPDATE inspection_photos SET label = coalesce($2, label), tags = coalesce($3, tags),
				asset_id = coalesce($4, asset_id)
			WHERE id = $1 RETURNING `+photoColumns, photo.PhotoRefID, label, tags, asset))
	}
	if err != nil {
		return nil, err
	}
	return &addPhotoRefOutput{photoRef: photo, Created: created}, nil
}

type defect struct {
	DefectID     uuid.UUID `json:"defect_id"`
	InspectionID uuid.UUID `json:"inspection_id"`
	Category     string    `json:"category"`
	Severity     string    `json:"severity"`
	Notes        *string   `json:"notes"`
	Location     *string   `json:"location"`
	PhotoRefs    []string  `json:"photo_refs"`
	CreatedAt    time.Time `json:"created_at"`
}

const defectColumns = `id, inspection_id, category, severity, notes, location, photo_refs, created_at`

func scanDefect(row pgx.Row) (defect, error) {
	var d defect
	return d, row.Scan(&d.DefectID, &d.InspectionID, &d.Category, &d.Severity, &d.Notes, &d.Location, &d.PhotoRefs, &d.CreatedAt)
}

// defaultSeverity is a defect's severity when none is given.
const defaultSeverity = "medium"

type addDefectInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
	Category     string    `json:"category"`
	Severity     *string   `json:"severity"`
	Notes        *string   `json:"notes"`
	PhotoRefs    []string  `json:"photo_refs"`
	Location     *string   `json:"location"`
}

type addDefectOutput struct {
	defect
	PhotosAttached int `json:"photos_attached"`
}

// addDefect records a defect (severity medium unless given). Each of its photo_refs is a photo_ref_id or a
// file_ref of a photo of this inspection; a file_ref not yet attached is attached to the inspection as a
// photo of the defect (a reference into GEM's file store must name a stored file). The defect keeps its
// photos' file_refs.
func (p *pack) addDefect(ctx context.Context, c *executor.Call, in addDefectInput) (*addDefectOutput, error) {
	severity := defaultSeverity
	if in.Severity != nil {
		severity = *in.Severity
	}
	for i, ref := range in.PhotoRefs {
		if err := p.checkStoredRef(fmt.Sprintf("photo_refs[%d]", i), ref); err != nil {
			return nil, err
		}
	}
	if _, err := lockDraftInspection(ctx, c, in.InspectionID); err != nil {
		return nil, err
	}
	refs := []string{}
	attached := 0
	for i, raw := range in.PhotoRefs {
		ref, isNew, err := resolveDefectPhoto(ctx, c, in.InspectionID, in.Category, i, raw)
		if err != nil {
			return nil, err
		}
		if isNew {
			attached++
		}
		if !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	d, err := scanDefect(c.DB.QueryRow(ctx, `INSERT INTO inspection_defects (inspection_id, category, severity, notes, location, photo_refs, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp()) RETURNING `+defectColumns,
		in.InspectionID, in.Category, severity, trimmedText(in.Notes), trimmedText(in.Location), refs))
	if err != nil {
		return nil, err
	}
	return &addDefectOutput{defect: d, PhotosAttached: attached}, nil
}

// resolveDefectPhoto returns the file_ref of the inspection's photo that ref names (by id or file_ref),
// attaching a new file_ref as a photo first.
func resolveDefectPhoto(ctx context.Context, c *executor.Call, inspectionID uuid.UUID, category string, index int, ref string) (string, bool, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", false, executor.Invalid("photo_refs[%d] is empty", index)
	}
	var fileRef string
	if id, err := uuid.Parse(ref); err == nil {
		err := c.DB.QueryRow(ctx, `SELECT file_ref FROM inspection_photos WHERE id = $1 AND inspection_id = $2`, id, inspectionID).Scan(&fileRef)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", false, executor.Invalid("photo_refs[%d]: %s is not a photo of inspection %s: add it with inspection.add_photo_ref, or pass its file_ref",
				index, id, inspectionID)
		}
		return fileRef, false, err
	}
	err := c.DB.QueryRow(ctx, `SELECT file_ref FROM inspection_photos WHERE inspection_id = $1 AND file_ref = $2`, inspectionID, ref).Scan(&fileRef)
	if !errors.Is(err, pgx.ErrNoRows) {
		return fileRef, false, err
	}
	_, err = c.DB.Exec(ctx, `INSERT INTO inspection_photos (inspection_id, file_ref, label, tags, asset_id, created_at)
		VALUES ($1, $2, $3, ARRAY['defect', $4], (SELECT id FROM media_assets WHERE file_ref = $2), clock_timestamp())`,
		inspectionID, ref, category+" defect", category)
	return ref, err == nil, err
}

func countInspection(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.InspectionCounts, error) {
	var n businesspack.InspectionCounts
	err := c.DB.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM inspection_checklist_items WHERE inspection_id = $1),
			(SELECT count(*) FROM inspection_measurements WHERE inspection_id = $1),
			(SELECT count(*) FROM inspection_photos WHERE inspection_id = $1),
			(SELECT count(*) FROM inspection_defects WHERE inspection_id = $1)`, id).
		Scan(&n.ChecklistItems, &n.Measurements, &n.Photos, &n.Defects)
	return n, err
}

type submitInspectionOutput struct {
	Inspection       businesspack.Inspection       `json:"inspection"`
	Counts           businesspack.InspectionCounts `json:"counts"`
	AlreadySubmitted bool                          `json:"already_submitted"`
	LeadStage        string                        `json:"lead_stage"`
}

// submitInspection marks a draft inspection complete and moves its lead to inspected. An inspection with
// nothing recorded cannot be submitted; submitting again changes nothing.
func submitInspection(ctx context.Context, c *executor.Call, in businesspack.InspectionSubmitInput) (*submitInspectionOutput, error) {
	id, err := executor.RecordID("inspection_id", in.InspectionID)
	if err != nil {
		return nil, err
	}
	i, err := lockInspectionRow(ctx, c, id)
	if err != nil {
		return nil, err
	}
	counts, err := countInspection(ctx, c, id)
	if err != nil {
		return nil, err
	}
	already := i.Status == "submitted"
	switch i.Status {
	case "locked":
		return nil, executor.Conflict("inspection %s is locked: it refuses every change", id)
	case "draft":
		if counts == (businesspack.InspectionCounts{}) {
			return nil, executor.Conflict("inspection %s has nothing recorded: add checklist items, measurements, photos or defects first", id)
		}
		i, err = scanInspection(c.DB.QueryRow(ctx, `UPDATE inspections SET status = 'submitted', submitted_at = now(),
				summary = coalesce($2, summary), updated_at = now()
			WHERE id = $1 RETURNING `+inspectionColumns, id, in.Summary))
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
	Inspection businesspack.Inspection `json:"inspection"`
	Changed    bool                    `json:"changed"`
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

type lockInspectionOutput struct {
	Locked     bool                    `json:"locked"`
	Changed    bool                    `json:"changed"`
	Inspection businesspack.Inspection `json:"inspection"`
	LeadStage  string                  `json:"lead_stage"`
}

// lockInspection makes an inspection final: it then refuses every change. A draft is submitted and locked
// at once (it needs something recorded) and its lead moves to inspected. Locking again changes nothing.
func lockInspection(ctx context.Context, c *executor.Call, in businesspack.InspectionLockInput) (*lockInspectionOutput, error) {
	id, err := executor.RecordID("inspection_id", in.InspectionID)
	if err != nil {
		return nil, err
	}
	i, err := lockInspectionRow(ctx, c, id)
	if err != nil {
		return nil, err
	}
	changed := i.Status != "locked"
	if i.Status == "draft" {
		counts, err := countInspection(ctx, c, id)
		if err != nil {
			return nil, err
		}
		if counts == (businesspack.InspectionCounts{}) {
			return nil, executor.Conflict("inspection %s has nothing recorded: add checklist items, measurements, photos or defects before locking it", id)
		}
	}
	if changed {
		i, err = scanInspection(c.DB.QueryRow(ctx, `UPDATE inspections SET status = 'locked', locked_at = clock_timestamp(),
				submitted_at = coalesce(submitted_at, now()), updated_at = now()
			WHERE id = $1 RETURNING `+inspectionColumns, id))
		if err != nil {
			return nil, err
		}
	}
	_, stage, err := advanceLead(ctx, c.DB, i.LeadID, "inspected")
	if err != nil {
		return nil, err
	}
	return &lockInspectionOutput{Locked: true, Changed: changed, Inspection: i, LeadStage: stage}, nil
}

// inspectionData is everything recorded on an inspection, with its lead's name, in a fixed order: records
// are stamped with clock_timestamp() when made, so calls run in one batch transaction keep their order too.
type inspectionData struct {
	Inspection   businesspack.Inspection
	LeadName     string
	Checklist    []checklistItem
	Measurements []measurement
	Photos       []photoRef
	Defects      []defect
}

func (d inspectionData) counts() businesspack.InspectionCounts {
	return businesspack.InspectionCounts{ChecklistItems: len(d.Checklist), Measurements: len(d.Measurements), Photos: len(d.Photos), Defects: len(d.Defects)}
}

// loadInspection reads an inspection and everything recorded on it.
func loadInspection(ctx context.Context, c *executor.Call, id uuid.UUID) (inspectionData, error) {
	var d inspectionData
	var err error
	d.Inspection, err = scanInspection(c.DB.QueryRow(ctx, `SELECT `+inspectionColumns+` FROM inspections WHERE id = $1`, id))
	if err != nil {
		return d, executor.NotFoundIfNoRows(err, "inspection", id)
	}
	if err := c.DB.QueryRow(ctx, `SELECT name FROM leads WHERE id = $1`, d.Inspection.LeadID).Scan(&d.LeadName); err != nil {
		return d, executor.NotFoundIfNoRows(err, "lead", d.Inspection.LeadID)
	}
	if d.Checklist, err = executor.QueryList(ctx, c.DB, scanChecklistItem, `SELECT `+checklistColumns+` FROM inspection_checklist_items
		WHERE inspection_id = $1 ORDER BY item_key`, id); err != nil {
		return d, err
	}
	if d.Measurements, err = executor.QueryList(ctx, c.DB, scanMeasurement, `SELECT `+measurementColumns+` FROM inspection_measurements
		WHERE inspection_id = $1 ORDER BY created_at, id`, id); err != nil {
		return d, err
	}
	if d.Photos, err = executor.QueryList(ctx, c.DB, scanPhoto, `SELECT `+photoColumns+` FROM inspection_photos
		WHERE inspection_id = $1 ORDER BY created_at, file_ref`, id); err != nil {
		return d, err
	}
	d.Defects, err = executor.QueryList(ctx, c.DB, scanDefect, `SELECT `+defectColumns+` FROM inspection_defects
		WHERE inspection_id = $1 ORDER BY created_at, id`, id)
	return d, err
}

type getInspectionInput struct {
	InspectionID uuid.UUID `json:"inspection_id"`
}

type getInspectionOutput struct {
	Inspection     businesspack.Inspection       `json:"inspection"`
	LeadName       string                        `json:"lead_name"`
	ChecklistItems []checklistItem               `json:"checklist_items"`
	Measurements   []measurement                 `json:"measurements"`
	Photos         []photoRef                    `json:"photos"`
	Defects        []defect                      `json:"defects"`
	Counts         businesspack.InspectionCounts `json:"counts"`
	ScopeText      string                        `json:"scope_text"`
}

// getInspection returns an inspection with everything recorded on it and its scope summary (sections).
func getInspection(ctx context.Context, c *executor.Call, in getInspectionInput) (*getInspectionOutput, error) {
	d, err := loadInspection(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	return &getInspectionOutput{
		Inspection: d.Inspection, LeadName: d.LeadName, ChecklistItems: d.Checklist, Measurements: d.Measurements,
		Photos: d.Photos, Defects: d.Defects, Counts: d.counts(), ScopeText: scopeSummary(d, scopeSections),
	}, nil
}
