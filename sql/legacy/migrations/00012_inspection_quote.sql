-- Inspections and quotes take GEM's contracts (issue 11).
--
-- Inspections: a site address and notes; checklist items keyed by item_key with a status pass, fail or na
-- (or none yet); measurements by label in any unit (the metric value is kept when the unit is one GEM
-- converts); photos with a label and tags; defects with a category, an optional severity, notes and the
-- photos that show them.
-- Quotes: the pricing profile they were priced with and the notes of the customer's answer. A draft quote
-- may be accepted or declined directly (the customer answered a quote shown to them in person), so
-- sent_at is only required to be empty while a quote is a draft. sent_via may be "both" (email and SMS).
--
-- The data moves below run with the tables' user triggers off: the state guards of 00004 would refuse to
-- touch the records of submitted and locked inspections, which must be converted too.

-- +goose Up

ALTER TABLE inspections
    ADD COLUMN site_address text,
    ADD COLUMN notes text;

ALTER TABLE inspection_checklist_items DISABLE TRIGGER USER;
ALTER TABLE inspection_checklist_items RENAME COLUMN item TO item_key;
ALTER TABLE inspection_checklist_items RENAME COLUMN result TO status;
ALTER TABLE inspection_checklist_items
    DROP CONSTRAINT inspection_checklist_items_result_check,
    ALTER COLUMN status DROP NOT NULL;
-- "attention" has no GEM equivalent: it needed work, so it fails, and its notes say so.
UPDATE inspection_checklist_items
SET notes  = CASE WHEN status = 'attention' THEN concat_ws(' ', 'Needs attention.', notes) ELSE notes END,
    status = CASE status WHEN 'ok' THEN 'pass' WHEN 'not_applicable' THEN 'na' ELSE 'fail' END;
ALTER TABLE inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_status CHECK (status IN ('pass', 'fail', 'na'));
ALTER TABLE inspection_checklist_items ENABLE TRIGGER USER;

-- A measurement's unit is free text; metric_value and metric_unit are set when the unit is one of m2, ft2,
-- deg, m, mm, ft or count, and empty otherwise.
ALTER TABLE inspection_measurements
    ADD COLUMN notes text,
    DROP CONSTRAINT inspection_measurements_unit_check,
    DROP CONSTRAINT inspection_measurements_metric_unit_check,
    ALTER COLUMN metric_value DROP NOT NULL,
    ALTER COLUMN metric_unit DROP NOT NULL,
    ADD CONSTRAINT inspection_measurements_unit CHECK (unit <> '' AND length(unit) <= 40),
    ADD CONSTRAINT inspection_measurements_metric_unit CHECK (metric_unit IN ('m2', 'deg', 'm', 'count')),
    ADD CONSTRAINT inspection_measurements_metric_pair CHECK ((metric_value IS NULL) = (metric_unit IS NULL)),
    -- Only a roof's pitch is at most 90 degrees; other angles (a hip, a valley) may be wider.
    DROP CONSTRAINT inspection_measurements_pitch,
    ADD CONSTRAINT inspection_measurements_pitch CHECK (kind <> 'roof_pitch' OR (metric_unit = 'deg' AND metric_value <= 90)),
    ADD CONSTRAINT inspection_measurements_angle CHECK (metric_unit IS DISTINCT FROM 'deg' OR metric_value <= 360);

ALTER TABLE inspection_photos DISABLE TRIGGER USER;
ALTER TABLE inspection_photos RENAME COLUMN ref TO file_ref;
ALTER TABLE inspection_photos RENAME COLUMN caption TO label;
ALTER TABLE inspection_photos ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE inspection_photos ENABLE TRIGGER USER;

-- A defect's category is GEM's; old defects get one from their title. Their title and description become
-- the notes, their one photo the list of photos, and "critical" (not a GEM severity) becomes high.
ALTER TABLE inspection_defects DISABLE TRIGGER USER;
ALTER TABLE inspection_defects
    ADD COLUMN category text NOT NULL DEFAULT 'other'
        CONSTRAINT inspection_defects_category CHECK (category IN ('tile', 'ridge', 'valley', 'flashing', 'gutter', 'leak', 'other')),
    ADD COLUMN photo_refs text[] NOT NULL DEFAULT '{}',
    DROP CONSTRAINT inspection_defects_severity_check;
ALTER TABLE inspection_defects RENAME COLUMN description TO notes;
UPDATE inspection_defects
SET category   = CASE
        WHEN title ~* 'ridge' THEN 'ridge'
        WHEN title ~* 'valley' THEN 'valley'
        WHEN title ~* 'flashing' THEN 'flashing'
        WHEN title ~* 'gutter|downpipe' THEN 'gutter'
        WHEN title ~* 'leak' THEN 'leak'
        WHEN title ~* 'tile' THEN 'tile'
        ELSE 'other' END,
    notes      = CASE WHEN notes IS NULL THEN title ELSE title || ': ' || notes END,
    photo_refs = CASE WHEN photo_ref IS NULL THEN '{}' ELSE ARRAY[photo_ref] END,
    severity   = CASE WHEN severity = 'critical' THEN 'high' ELSE severity END;
ALTER TABLE inspection_defects
    DROP COLUMN title,
    DROP COLUMN photo_ref,
    ADD CONSTRAINT inspection_defects_severity CHECK (severity IN ('low', 'medium', 'high'));
ALTER TABLE inspection_defects ENABLE TRIGGER USER;

ALTER TABLE quotes
    ADD COLUMN pricing_profile text,
    ADD COLUMN decision_notes text,
    DROP CONSTRAINT quotes_sent_via_check,
    ADD CONSTRAINT quotes_sent_via CHECK (sent_via IN ('email', 'sms', 'both', 'in_person', 'post', 'other')),
    DROP CONSTRAINT quotes_sent_at,
    ADD CONSTRAINT quotes_sent_at CHECK (status <> 'draft' OR sent_at IS NULL);

-- +goose Down

ALTER TABLE quotes DISABLE TRIGGER USER;
-- A quote accepted or declined without being sent had no sent_at; the old rule needs one.
UPDATE quotes SET sent_at = coalesce(accepted_at, declined_at) WHERE status <> 'draft' AND sent_at IS NULL;
UPDATE quotes SET sent_via = 'email' WHERE sent_via = 'both';
ALTER TABLE quotes
    DROP CONSTRAINT quotes_sent_at,
    ADD CONSTRAINT quotes_sent_at CHECK ((status = 'draft') = (sent_at IS NULL)),
    DROP CONSTRAINT quotes_sent_via,
    ADD CONSTRAINT quotes_sent_via_check CHECK (sent_via IN ('email', 'sms', 'in_person', 'post', 'other')),
    DROP COLUMN decision_notes,
    DROP COLUMN pricing_profile;
ALTER TABLE quotes ENABLE TRIGGER USER;

ALTER TABLE inspection_defects DISABLE TRIGGER USER;
ALTER TABLE inspection_defects
    ADD COLUMN title text,
    ADD COLUMN photo_ref text,
    DROP CONSTRAINT inspection_defects_severity;
-- The notes become the title (the category when there are none), and stay the description when too long for it.
UPDATE inspection_defects
SET title = coalesce(left(notes, 200), category), photo_ref = photo_refs[1],
    notes = CASE WHEN length(notes) > 200 THEN notes END;
ALTER TABLE inspection_defects RENAME COLUMN notes TO description;
ALTER TABLE inspection_defects
    ALTER COLUMN title SET NOT NULL,
    ADD CONSTRAINT inspection_defects_title_check CHECK (title <> ''),
    ADD CONSTRAINT inspection_defects_severity_check CHECK (severity IN ('low', 'medium', 'high', 'critical')),
    DROP COLUMN photo_refs,
    DROP COLUMN category;
ALTER TABLE inspection_defects ENABLE TRIGGER USER;

ALTER TABLE inspection_photos DISABLE TRIGGER USER;
ALTER TABLE inspection_photos DROP COLUMN tags;
ALTER TABLE inspection_photos RENAME COLUMN label TO caption;
ALTER TABLE inspection_photos RENAME COLUMN file_ref TO ref;
ALTER TABLE inspection_photos ENABLE TRIGGER USER;

-- Measurements in units the old schema did not know cannot be kept.
ALTER TABLE inspection_measurements DISABLE TRIGGER USER;
DELETE FROM inspection_measurements WHERE metric_unit IS NULL OR (metric_unit = 'deg' AND metric_value > 90);
ALTER TABLE inspection_measurements
    DROP CONSTRAINT inspection_measurements_angle,
    DROP CONSTRAINT inspection_measurements_pitch,
    ADD CONSTRAINT inspection_measurements_pitch CHECK (metric_unit <> 'deg' OR metric_value <= 90),
    DROP CONSTRAINT inspection_measurements_metric_pair,
    DROP CONSTRAINT inspection_measurements_metric_unit,
    DROP CONSTRAINT inspection_measurements_unit,
    ALTER COLUMN metric_value SET NOT NULL,
    ALTER COLUMN metric_unit SET NOT NULL,
    ADD CONSTRAINT inspection_measurements_unit_check CHECK (unit IN ('m2', 'ft2', 'deg', 'm', 'mm', 'ft', 'count')),
    ADD CONSTRAINT inspection_measurements_metric_unit_check CHECK (metric_unit IN ('m2', 'deg', 'm', 'count')),
    DROP COLUMN notes;
ALTER TABLE inspection_measurements ENABLE TRIGGER USER;

ALTER TABLE inspection_checklist_items DISABLE TRIGGER USER;
ALTER TABLE inspection_checklist_items DROP CONSTRAINT inspection_checklist_items_status;
UPDATE inspection_checklist_items
SET status = CASE status WHEN 'pass' THEN 'ok' WHEN 'fail' THEN 'fail' ELSE 'not_applicable' END;
ALTER TABLE inspection_checklist_items
    ALTER COLUMN status SET NOT NULL,
    ADD CONSTRAINT inspection_checklist_items_result_check CHECK (status IN ('ok', 'attention', 'fail', 'not_applicable'));
ALTER TABLE inspection_checklist_items RENAME COLUMN status TO result;
ALTER TABLE inspection_checklist_items RENAME COLUMN item_key TO item;
ALTER TABLE inspection_checklist_items ENABLE TRIGGER USER;

ALTER TABLE inspections
    DROP COLUMN notes,
    DROP COLUMN site_address;
