-- The business pack: reminders, lead sources and photo links, inspection appointments, entities (customers,
-- suppliers, sites), inspections, quotes, jobs, invoices, communications and media assets.
--
-- Every domain table has an id, created_by_call (the call that created the row) and the gem_capture_write
-- trigger, so receipts list what each handler wrote. Money is integer cents (bigint), never floating point.
-- States are CHECK-constrained; a few rules are also enforced by triggers so that no writer (a handler with
-- a bug, a person in psql) can change a locked inspection or a quote that has left draft. Those triggers
-- raise SQLSTATE 55000 (object_not_in_prerequisite_state), which handlers report as a conflict.

-- +goose Up

ALTER TABLE leads ADD COLUMN lost_reason_code text
    CHECK (lost_reason_code IN ('price', 'timing', 'competitor', 'no_response', 'not_a_fit', 'other')),
    ADD CONSTRAINT leads_lost_reason_only_when_lost CHECK (lost_reason_code IS NULL OR stage = 'lost');

CREATE TABLE os_reminders (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    title           text        NOT NULL CHECK (title <> ''),
    notes           text,
    remind_at       timestamptz NOT NULL,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dismissed')),
    lead_id         uuid        REFERENCES leads (id) ON DELETE SET NULL,
    task_id         uuid        REFERENCES os_tasks (id) ON DELETE SET NULL,
    resolved_at     timestamptz,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT os_reminders_resolved_iff_not_pending CHECK ((status = 'pending') = (resolved_at IS NULL))
);
CREATE INDEX os_reminders_pending ON os_reminders (remind_at) WHERE status = 'pending';

-- Where a lead came from, beyond leads.source: every channel that touched it, with a detail (a campaign, the
-- name of whoever referred them). One row per lead, source and detail.
CREATE TABLE lead_sources (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    lead_id         uuid        NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    source          text        NOT NULL CHECK (source IN ('website', 'referral', 'phone', 'facebook', 'instagram',
                                    'google', 'hipages', 'signage', 'walk_in', 'repeat_customer', 'other')),
    detail          text        NOT NULL DEFAULT '',
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT lead_sources_once UNIQUE (lead_id, source, detail)
);

-- Links to photos a lead sent or shared (a shared album, a cloud folder). One row per lead and URL.
CREATE TABLE lead_photo_links (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    lead_id         uuid        NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    url             text        NOT NULL CHECK (url ~* '^https?://'),
    label           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT lead_photo_links_once UNIQUE (lead_id, url)
);

-- Customers, suppliers and sites in one table. A site may belong to a customer (parent_id).
CREATE TABLE entities (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    kind            text        NOT NULL CHECK (kind IN ('customer', 'supplier', 'site')),
    name            text        NOT NULL CHECK (name <> ''),
    phone           text,
    -- Digits of the phone number, for search however it was typed.
    phone_digits    text        GENERATED ALWAYS AS (regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g')) STORED,
    email           text,
    address         text,
    suburb          text,
    postcode        text,
    notes           text,
    parent_id       uuid        REFERENCES entities (id) ON DELETE SET NULL,
    lead_id         uuid        REFERENCES leads (id) ON DELETE SET NULL,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entities_not_own_parent CHECK (parent_id <> id)
);
CREATE INDEX entities_kind_name ON entities (kind, lower(name));
CREATE INDEX entities_phone_digits ON entities (phone_digits) WHERE phone_digits <> '';
CREATE INDEX entities_parent ON entities (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE inspection_appointments (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    lead_id          uuid        NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    scheduled_for    timestamptz NOT NULL,
    duration_minutes integer     NOT NULL DEFAULT 60 CHECK (duration_minutes BETWEEN 15 AND 480),
    address          text,
    notes            text,
    status           text        NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'completed', 'cancelled')),
    created_by_call  uuid        DEFAULT gem_current_call(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
-- One live booking per lead and time: booking the same slot again finds the first.
CREATE UNIQUE INDEX inspection_appointments_once ON inspection_appointments (lead_id, scheduled_for) WHERE status = 'scheduled';
CREATE INDEX inspection_appointments_upcoming ON inspection_appointments (scheduled_for) WHERE status = 'scheduled';

-- An inspection is draft (being recorded), submitted (complete; edits refused until reopened) or locked
-- (final, because a quote was priced from it or someone locked it; refuses every change).
CREATE TABLE inspections (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    lead_id         uuid        NOT NULL REFERENCES leads (id) ON DELETE RESTRICT,
    appointment_id  uuid        UNIQUE REFERENCES inspection_appointments (id) ON DELETE SET NULL,
    site_id         uuid        REFERENCES entities (id) ON DELETE SET NULL,
    status          text        NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'submitted', 'locked')),
    inspector       text,
    summary         text,
    submitted_at    timestamptz,
    locked_at       timestamptz,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inspections_submitted_at CHECK ((status = 'draft') = (submitted_at IS NULL)),
    CONSTRAINT inspections_locked_at CHECK ((status = 'locked') = (locked_at IS NOT NULL))
);
CREATE INDEX inspections_lead ON inspections (lead_id, created_at DESC);

-- Photos, videos and documents, registered by a reference to where the file lives (one row per reference).
CREATE TABLE media_assets (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    file_ref        text        NOT NULL CHECK (file_ref <> ''),
    kind            text        NOT NULL DEFAULT 'photo' CHECK (kind IN ('photo', 'video', 'document', 'drawing', 'other')),
    content_type    text,
    size_bytes      bigint      CHECK (size_bytes >= 0),
    sha256          text        CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    caption         text,
    tags            text[]      NOT NULL DEFAULT '{}',
    lead_id         uuid        REFERENCES leads (id) ON DELETE SET NULL,
    inspection_id   uuid        REFERENCES inspections (id) ON DELETE SET NULL,
    entity_id       uuid        REFERENCES entities (id) ON DELETE SET NULL,
    taken_at        timestamptz,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT media_assets_one_per_file_ref UNIQUE (file_ref)
);
CREATE INDEX media_assets_tags ON media_assets USING gin (tags);
CREATE INDEX media_assets_lead ON media_assets (lead_id) WHERE lead_id IS NOT NULL;

CREATE TABLE inspection_checklist_items (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    inspection_id   uuid        NOT NULL REFERENCES inspections (id) ON DELETE CASCADE,
    item            text        NOT NULL CHECK (item <> ''),
    result          text        NOT NULL CHECK (result IN ('ok', 'attention', 'fail', 'not_applicable')),
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inspection_checklist_items_once UNIQUE (inspection_id, item)
);

-- A measurement keeps the value and unit as recorded and the same value in metric units (m², degrees, m,
-- count), which is what quotes are priced from.
CREATE TABLE inspection_measurements (
    id              uuid          PRIMARY KEY DEFAULT gen_random_uuid(),
    inspection_id   uuid          NOT NULL REFERENCES inspections (id) ON DELETE CASCADE,
    kind            text          NOT NULL CHECK (kind IN ('roof_area', 'roof_pitch', 'gutter_length', 'ridge_length',
                                      'valley_length', 'fascia_length', 'downpipe_count', 'other')),
    label           text,
    value           numeric(12,3) NOT NULL CHECK (value >= 0),
    unit            text          NOT NULL CHECK (unit IN ('m2', 'ft2', 'deg', 'm', 'mm', 'ft', 'count')),
    metric_value    numeric(14,3) NOT NULL CHECK (metric_value >= 0),
    metric_unit     text          NOT NULL CHECK (metric_unit IN ('m2', 'deg', 'm', 'count')),
    created_by_call uuid          DEFAULT gem_current_call(),
    created_at      timestamptz   NOT NULL DEFAULT now(),
    CONSTRAINT inspection_measurements_pitch CHECK (metric_unit <> 'deg' OR metric_value <= 90)
);
CREATE INDEX inspection_measurements_inspection ON inspection_measurements (inspection_id);

CREATE TABLE inspection_photos (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    inspection_id   uuid        NOT NULL REFERENCES inspections (id) ON DELETE CASCADE,
    ref             text        NOT NULL CHECK (ref <> ''),
    caption         text,
    asset_id        uuid        REFERENCES media_assets (id) ON DELETE SET NULL,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inspection_photos_once UNIQUE (inspection_id, ref)
);

CREATE TABLE inspection_defects (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    inspection_id   uuid        NOT NULL REFERENCES inspections (id) ON DELETE CASCADE,
    title           text        NOT NULL CHECK (title <> ''),
    severity        text        NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
    location        text,
    description     text,
    photo_ref       text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inspection_defects_inspection ON inspection_defects (inspection_id);

-- Quotes: draft → sent → accepted | declined. Amounts are integer cents excluding GST per line; the quote's
-- subtotal, GST (10%, rounded half up to the cent on the subtotal) and total are written by
-- quote.calculate_totals. totals_stale is set when a line changes and cleared by calculate_totals; a quote
-- cannot be sent with stale totals.
CREATE TABLE quotes (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    number          bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    lead_id         uuid        NOT NULL REFERENCES leads (id) ON DELETE RESTRICT,
    inspection_id   uuid        NOT NULL REFERENCES inspections (id) ON DELETE RESTRICT,
    customer_id     uuid        REFERENCES entities (id) ON DELETE SET NULL,
    status          text        NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'sent', 'accepted', 'declined')),
    currency        text        NOT NULL DEFAULT 'AUD' CHECK (currency = 'AUD'),
    subtotal_cents  bigint      NOT NULL DEFAULT 0 CHECK (subtotal_cents >= 0),
    gst_cents       bigint      NOT NULL DEFAULT 0 CHECK (gst_cents >= 0),
    total_cents     bigint      NOT NULL DEFAULT 0,
    totals_stale    boolean     NOT NULL DEFAULT false,
    valid_until     date        NOT NULL,
    notes           text,
    sent_at         timestamptz,
    sent_via        text        CHECK (sent_via IN ('email', 'sms', 'in_person', 'post', 'other')),
    accepted_at     timestamptz,
    declined_at     timestamptz,
    decline_reason  text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT quotes_total CHECK (total_cents = subtotal_cents + gst_cents),
    CONSTRAINT quotes_sent_at CHECK ((status = 'draft') = (sent_at IS NULL)),
    CONSTRAINT quotes_accepted_at CHECK ((status = 'accepted') = (accepted_at IS NOT NULL)),
    CONSTRAINT quotes_declined_at CHECK ((status = 'declined') = (declined_at IS NOT NULL)),
    CONSTRAINT quotes_sent_with_fresh_totals CHECK (status = 'draft' OR NOT totals_stale)
);
CREATE INDEX quotes_lead ON quotes (lead_id, created_at DESC);
CREATE INDEX quotes_inspection ON quotes (inspection_id);

CREATE TABLE quote_line_items (
    id               uuid          PRIMARY KEY DEFAULT gen_random_uuid(),
    quote_id         uuid          NOT NULL REFERENCES quotes (id) ON DELETE CASCADE,
    position         integer       NOT NULL CHECK (position > 0),
    description      text          NOT NULL CHECK (description <> ''),
    quantity         numeric(12,3) NOT NULL CHECK (quantity > 0),
    unit             text          NOT NULL DEFAULT 'each',
    unit_price_cents bigint        NOT NULL CHECK (unit_price_cents >= 0),
    -- quantity × unit_price_cents rounded half up to a whole cent (computed by the handler).
    line_total_cents bigint        NOT NULL CHECK (line_total_cents >= 0),
    created_by_call  uuid          DEFAULT gem_current_call(),
    created_at       timestamptz   NOT NULL DEFAULT now(),
    updated_at       timestamptz   NOT NULL DEFAULT now(),
    CONSTRAINT quote_line_items_position UNIQUE (quote_id, position)
);

-- Jobs: unscheduled → scheduled (dates assigned) → completed. One job per accepted quote.
CREATE TABLE jobs (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    number           bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    quote_id         uuid        NOT NULL REFERENCES quotes (id) ON DELETE RESTRICT,
    status           text        NOT NULL DEFAULT 'unscheduled' CHECK (status IN ('unscheduled', 'scheduled', 'completed')),
    start_date       date,
    end_date         date,
    completed_at     timestamptz,
    completion_notes text,
    created_by_call  uuid        DEFAULT gem_current_call(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT jobs_one_per_quote UNIQUE (quote_id),
    CONSTRAINT jobs_dates CHECK ((start_date IS NULL) = (end_date IS NULL) AND end_date >= start_date),
    CONSTRAINT jobs_scheduled_has_dates CHECK (status = 'unscheduled' OR start_date IS NOT NULL),
    CONSTRAINT jobs_completed_at CHECK ((status = 'completed') = (completed_at IS NOT NULL))
);
CREATE INDEX jobs_open_start ON jobs (start_date) WHERE status <> 'completed';

CREATE TABLE job_site_notes (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id          uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    note            text        NOT NULL CHECK (note <> ''),
    author          text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_site_notes_job ON job_site_notes (job_id, created_at);

-- Invoices: one per job, for the accepted quote's totals. The status follows the money: paid when nothing
-- is owed, else overdue once marked overdue, else partially_paid or unpaid. The database derives it, so it
-- cannot disagree with the amounts.
CREATE TABLE invoices (
    id                uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    number            bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    job_id            uuid        NOT NULL REFERENCES jobs (id) ON DELETE RESTRICT,
    currency          text        NOT NULL DEFAULT 'AUD' CHECK (currency = 'AUD'),
    subtotal_cents    bigint      NOT NULL CHECK (subtotal_cents >= 0),
    gst_cents         bigint      NOT NULL CHECK (gst_cents >= 0),
    total_cents       bigint      NOT NULL CHECK (total_cents > 0),
    amount_paid_cents bigint      NOT NULL DEFAULT 0,
    balance_cents     bigint      GENERATED ALWAYS AS (total_cents - amount_paid_cents) STORED,
    status            text        GENERATED ALWAYS AS (CASE
                                      WHEN amount_paid_cents >= total_cents THEN 'paid'
                                      WHEN overdue_at IS NOT NULL THEN 'overdue'
                                      WHEN amount_paid_cents > 0 THEN 'partially_paid'
                                      ELSE 'unpaid' END) STORED,
    issued_on         date        NOT NULL,
    due_on            date        NOT NULL,
    paid_at           timestamptz,
    overdue_at        timestamptz,
    created_by_call   uuid        DEFAULT gem_current_call(),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT invoices_one_per_job UNIQUE (job_id),
    CONSTRAINT invoices_total CHECK (total_cents = subtotal_cents + gst_cents),
    CONSTRAINT invoices_no_overpayment CHECK (amount_paid_cents BETWEEN 0 AND total_cents),
    CONSTRAINT invoices_paid_at CHECK ((amount_paid_cents = total_cents) = (paid_at IS NOT NULL)),
    CONSTRAINT invoices_due_after_issue CHECK (due_on >= issued_on)
);
CREATE INDEX invoices_unpaid_due ON invoices (due_on) WHERE paid_at IS NULL;

CREATE TABLE invoice_payments (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    invoice_id      uuid        NOT NULL REFERENCES invoices (id) ON DELETE RESTRICT,
    amount_cents    bigint      NOT NULL CHECK (amount_cents > 0),
    method          text        NOT NULL CHECK (method IN ('bank_transfer', 'card', 'cash', 'cheque', 'other')),
    -- The payer's or bank's reference: a payment with a reference is recorded once per invoice.
    reference       text        CHECK (reference <> ''),
    received_on     date        NOT NULL,
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT invoice_payments_reference_once UNIQUE (invoice_id, reference)
);
CREATE INDEX invoice_payments_invoice ON invoice_payments (invoice_id, created_at);

-- Calls logged, and SMS and email sent, with the provider's reference for messages.
CREATE TABLE comms_log (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    channel          text        NOT NULL CHECK (channel IN ('call', 'sms', 'email')),
    direction        text        NOT NULL DEFAULT 'outbound' CHECK (direction IN ('outbound', 'inbound')),
    lead_id          uuid        REFERENCES leads (id) ON DELETE SET NULL,
    entity_id        uuid        REFERENCES entities (id) ON DELETE SET NULL,
    -- The phone number or email address at the other end.
    counterpart      text,
    subject          text,
    body             text,
    call_outcome     text        CHECK (call_outcome IN ('answered', 'no_answer', 'voicemail', 'busy', 'wrong_number',
                                     'callback_requested', 'not_interested')),
    duration_seconds integer     CHECK (duration_seconds >= 0),
    provider         text,
    provider_ref     text,
    occurred_at      timestamptz NOT NULL DEFAULT now(),
    created_by_call  uuid        DEFAULT gem_current_call(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT comms_log_call_outcome CHECK ((channel = 'call') = (call_outcome IS NOT NULL)),
    CONSTRAINT comms_log_message_provider CHECK (channel = 'call' OR (provider IS NOT NULL AND provider_ref IS NOT NULL))
);
CREATE INDEX comms_log_lead ON comms_log (lead_id, occurred_at DESC) WHERE lead_id IS NOT NULL;
CREATE INDEX comms_log_entity ON comms_log (entity_id, occurred_at DESC) WHERE entity_id IS NOT NULL;

-- +goose StatementBegin
-- gem_inspection_part_guard refuses changes to an inspection's checklist, measurements, photos and defects
-- unless the inspection is a draft.
CREATE FUNCTION gem_inspection_part_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    iid uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.inspection_id ELSE NEW.inspection_id END;
    st  text;
BEGIN
    SELECT status INTO st FROM inspections WHERE id = iid;
    IF st IS DISTINCT FROM 'draft' AND st IS NOT NULL THEN
        RAISE EXCEPTION 'inspection % is %: its records cannot change', iid, st USING ERRCODE = '55000';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_inspection_locked_guard refuses every change to a locked inspection.
CREATE FUNCTION gem_inspection_locked_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'locked' THEN
        RAISE EXCEPTION 'inspection % is locked', OLD.id USING ERRCODE = '55000';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_quote_line_guard refuses changes to the lines of a quote that is no longer a draft.
CREATE FUNCTION gem_quote_line_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    qid uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.quote_id ELSE NEW.quote_id END;
    st  text;
BEGIN
    SELECT status INTO st FROM quotes WHERE id = qid;
    IF st IS DISTINCT FROM 'draft' AND st IS NOT NULL THEN
        RAISE EXCEPTION 'quote % is %: its lines cannot change', qid, st USING ERRCODE = '55000';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_quote_amounts_guard keeps the amounts of a quote that has left draft as they were sent.
CREATE FUNCTION gem_quote_amounts_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'draft' AND (NEW.subtotal_cents, NEW.gst_cents, NEW.total_cents, NEW.totals_stale)
            IS DISTINCT FROM (OLD.subtotal_cents, OLD.gst_cents, OLD.total_cents, OLD.totals_stale) THEN
        RAISE EXCEPTION 'quote % is %: its amounts cannot change', OLD.id, OLD.status USING ERRCODE = '55000';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER inspections_locked_guard BEFORE UPDATE OR DELETE ON inspections
    FOR EACH ROW EXECUTE FUNCTION gem_inspection_locked_guard();
CREATE TRIGGER inspection_checklist_items_guard BEFORE INSERT OR UPDATE OR DELETE ON inspection_checklist_items
    FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();
CREATE TRIGGER inspection_measurements_guard BEFORE INSERT OR UPDATE OR DELETE ON inspection_measurements
    FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();
CREATE TRIGGER inspection_photos_guard BEFORE INSERT OR UPDATE OR DELETE ON inspection_photos
    FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();
CREATE TRIGGER inspection_defects_guard BEFORE INSERT OR UPDATE OR DELETE ON inspection_defects
    FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();
CREATE TRIGGER quote_line_items_guard BEFORE INSERT OR UPDATE OR DELETE ON quote_line_items
    FOR EACH ROW EXECUTE FUNCTION gem_quote_line_guard();
CREATE TRIGGER quotes_amounts_guard BEFORE UPDATE ON quotes
    FOR EACH ROW EXECUTE FUNCTION gem_quote_amounts_guard();

CREATE TRIGGER os_reminders_capture_write AFTER INSERT OR UPDATE OR DELETE ON os_reminders
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER lead_sources_capture_write AFTER INSERT OR UPDATE OR DELETE ON lead_sources
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER lead_photo_links_capture_write AFTER INSERT OR UPDATE OR DELETE ON lead_photo_links
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER entities_capture_write AFTER INSERT OR UPDATE OR DELETE ON entities
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER inspection_appointments_capture_write AFTER INSERT OR UPDATE OR DELETE ON inspection_appointments
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER inspections_capture_write AFTER INSERT OR UPDATE OR DELETE ON inspections
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER media_assets_capture_write AFTER INSERT OR UPDATE OR DELETE ON media_assets
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER inspection_checklist_items_capture_write AFTER INSERT OR UPDATE OR DELETE ON inspection_checklist_items
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER inspection_measurements_capture_write AFTER INSERT OR UPDATE OR DELETE ON inspection_measurements
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER inspection_photos_capture_write AFTER INSERT OR UPDATE OR DELETE ON inspection_photos
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER inspection_defects_capture_write AFTER INSERT OR UPDATE OR DELETE ON inspection_defects
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER quotes_capture_write AFTER INSERT OR UPDATE OR DELETE ON quotes
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER quote_line_items_capture_write AFTER INSERT OR UPDATE OR DELETE ON quote_line_items
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER jobs_capture_write AFTER INSERT OR UPDATE OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER job_site_notes_capture_write AFTER INSERT OR UPDATE OR DELETE ON job_site_notes
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER invoices_capture_write AFTER INSERT OR UPDATE OR DELETE ON invoices
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER invoice_payments_capture_write AFTER INSERT OR UPDATE OR DELETE ON invoice_payments
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER comms_log_capture_write AFTER INSERT OR UPDATE OR DELETE ON comms_log
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE comms_log;
DROP TABLE invoice_payments;
DROP TABLE invoices;
DROP TABLE job_site_notes;
DROP TABLE jobs;
DROP TABLE quote_line_items;
DROP TABLE quotes;
DROP TABLE inspection_defects;
DROP TABLE inspection_photos;
DROP TABLE inspection_measurements;
DROP TABLE inspection_checklist_items;
DROP TABLE media_assets;
DROP TABLE inspections;
DROP TABLE inspection_appointments;
DROP TABLE entities;
DROP TABLE lead_photo_links;
DROP TABLE lead_sources;
DROP TABLE os_reminders;
DROP FUNCTION gem_quote_amounts_guard();
DROP FUNCTION gem_quote_line_guard();
DROP FUNCTION gem_inspection_locked_guard();
DROP FUNCTION gem_inspection_part_guard();
ALTER TABLE leads DROP COLUMN lost_reason_code;
