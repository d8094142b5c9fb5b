-- The business pack's schema: leads, entities, inspections, quotes, jobs, invoices, finance, comms, calendar,
-- media, marketing, identity and personal, with its built-in skills, as the legacy migrations left them. It also
-- adds the foreign keys between its tables and the os pack's (a later pack references an earlier one's tables,
-- never the other way).

-- Written from pg_dump of a database the legacy migrations made (their history and reasons are in
-- sql/legacy/migrations and git log). A database made before the lines began records this migration as applied
-- without running it (gemsql.Migrate adopts it); sql/schema.sql is the schema every line leaves.

-- +goose Up

-- Functions come before the tables their bodies read, as pg_dump orders them.
SET LOCAL check_function_bodies = false;

-- +goose StatementBegin
CREATE FUNCTION gem_calendar_event_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status = 'cancelled' AND (NEW.title, NEW.start_at, NEW.end_at, NEW.location, NEW.status)
            IS DISTINCT FROM (OLD.title, OLD.start_at, OLD.end_at, OLD.location, OLD.status) THEN
        RAISE EXCEPTION 'calendar event % is cancelled', OLD.id USING ERRCODE = '55000';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_inspection_locked_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status = 'locked' THEN
        RAISE EXCEPTION 'inspection % is locked', OLD.id USING ERRCODE = '55000';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_inspection_part_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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
CREATE FUNCTION gem_quote_amounts_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status <> 'draft' AND (NEW.subtotal_cents, NEW.gst_cents, NEW.total_cents, NEW.totals_stale)
            IS DISTINCT FROM (OLD.subtotal_cents, OLD.gst_cents, OLD.total_cents, OLD.totals_stale) THEN
        RAISE EXCEPTION 'quote % is %: its amounts cannot change', OLD.id, OLD.status USING ERRCODE = '55000';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_quote_line_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE TABLE calendar_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    start_at timestamp with time zone NOT NULL,
    end_at timestamp with time zone NOT NULL,
    location text,
    status text DEFAULT 'scheduled'::text NOT NULL,
    cancel_reason text,
    cancelled_at timestamp with time zone,
    lead_id uuid,
    job_id uuid,
    context_type text,
    context_id text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT calendar_events_cancelled_at CHECK (((status = 'cancelled'::text) = (cancelled_at IS NOT NULL))),
    CONSTRAINT calendar_events_context CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT calendar_events_end_after_start CHECK ((end_at > start_at)),
    CONSTRAINT calendar_events_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'cancelled'::text]))),
    CONSTRAINT calendar_events_title_check CHECK (((title <> ''::text) AND (length(title) <= 200)))
);

CREATE TABLE comms_log (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    channel text NOT NULL,
    direction text DEFAULT 'outbound'::text NOT NULL,
    lead_id uuid,
    entity_id uuid,
    counterpart text,
    subject text,
    body text,
    call_outcome text,
    duration_seconds integer,
    provider text,
    provider_ref text,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    context_type text,
    context_id text,
    template_id text,
    job_id uuid,
    invoice_id uuid,
    CONSTRAINT comms_log_call_outcome CHECK (((channel = 'call'::text) = (call_outcome IS NOT NULL))),
    CONSTRAINT comms_log_call_outcome_check CHECK ((call_outcome = ANY (ARRAY['answered'::text, 'no_answer'::text, 'voicemail'::text, 'busy'::text, 'wrong_number'::text, 'callback_requested'::text, 'not_interested'::text]))),
    CONSTRAINT comms_log_channel_check CHECK ((channel = ANY (ARRAY['call'::text, 'sms'::text, 'email'::text]))),
    CONSTRAINT comms_log_context CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT comms_log_direction_check CHECK ((direction = ANY (ARRAY['outbound'::text, 'inbound'::text]))),
    CONSTRAINT comms_log_duration_seconds_check CHECK ((duration_seconds >= 0)),
    CONSTRAINT comms_log_message_provider CHECK (((channel = 'call'::text) OR ((provider IS NOT NULL) AND (provider_ref IS NOT NULL))))
);

CREATE TABLE entities (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    phone text,
    phone_digits text GENERATED ALWAYS AS (regexp_replace(COALESCE(phone, ''::text), '[^0-9]'::text, ''::text, 'g'::text)) STORED,
    email text,
    address text,
    suburb text,
    postcode text,
    notes text,
    parent_id uuid,
    lead_id uuid,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    site_details jsonb DEFAULT '{}'::jsonb NOT NULL,
    state text,
    CONSTRAINT entities_kind_check CHECK ((kind = ANY (ARRAY['client'::text, 'supplier'::text, 'partner'::text, 'friend'::text, 'lead'::text, 'other'::text, 'site'::text]))),
    CONSTRAINT entities_name_check CHECK ((name <> ''::text)),
    CONSTRAINT entities_not_own_parent CHECK ((parent_id <> id)),
    CONSTRAINT entities_site_details_check CHECK ((jsonb_typeof(site_details) = 'object'::text))
);

CREATE TABLE entity_conversations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    entity_id uuid NOT NULL,
    conversation_id text NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT entity_conversations_conversation_id_check CHECK (((conversation_id <> ''::text) AND (length(conversation_id) <= 200)))
);

CREATE TABLE entity_interactions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    entity_id uuid NOT NULL,
    interaction_type text NOT NULL,
    summary text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    call_outcome text,
    context_type text,
    context_id text,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT entity_interactions_call_outcome_check CHECK ((call_outcome = ANY (ARRAY['answered'::text, 'no_answer'::text, 'left_message'::text, 'busy'::text, 'other'::text]))),
    CONSTRAINT entity_interactions_context CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT entity_interactions_details_check CHECK ((jsonb_typeof(details) = 'object'::text)),
    CONSTRAINT entity_interactions_interaction_type_check CHECK ((interaction_type = ANY (ARRAY['call'::text, 'sms'::text, 'email'::text, 'meeting'::text, 'site_visit'::text, 'other'::text]))),
    CONSTRAINT entity_interactions_outcome_of_calls CHECK (((call_outcome IS NULL) OR (interaction_type = 'call'::text))),
    CONSTRAINT entity_interactions_summary_check CHECK (((summary <> ''::text) AND (length(summary) <= 400)))
);

CREATE TABLE expenses (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    currency text DEFAULT 'AUD'::text NOT NULL,
    amount_cents bigint NOT NULL,
    gst_cents bigint DEFAULT 0 NOT NULL,
    incurred_on date NOT NULL,
    category text NOT NULL,
    cost_type text GENERATED ALWAYS AS (
CASE
    WHEN (category = ANY (ARRAY['materials'::text, 'subcontractors'::text, 'labour'::text, 'equipment_hire'::text, 'waste_disposal'::text, 'permits'::text])) THEN 'direct'::text
    ELSE 'overhead'::text
END) STORED NOT NULL,
    supplier text,
    reference text,
    job_id uuid,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT expenses_amount_cents_check CHECK ((amount_cents > 0)),
    CONSTRAINT expenses_category_check CHECK ((category = ANY (ARRAY['materials'::text, 'subcontractors'::text, 'labour'::text, 'equipment_hire'::text, 'waste_disposal'::text, 'permits'::text, 'vehicle'::text, 'fuel'::text, 'tools'::text, 'insurance'::text, 'marketing'::text, 'office'::text, 'software'::text, 'bank_fees'::text, 'other'::text]))),
    CONSTRAINT expenses_check CHECK (((gst_cents >= 0) AND (gst_cents <= amount_cents))),
    CONSTRAINT expenses_currency_check CHECK ((currency = 'AUD'::text)),
    CONSTRAINT expenses_reference_check CHECK ((reference <> ''::text)),
    CONSTRAINT expenses_supplier_check CHECK ((supplier <> ''::text))
);

CREATE TABLE identity_memories (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    memory_type text NOT NULL,
    key text NOT NULL,
    value jsonb NOT NULL,
    confidence double precision DEFAULT 1 NOT NULL,
    source text DEFAULT 'user'::text NOT NULL,
    evidence_refs jsonb DEFAULT '[]'::jsonb NOT NULL,
    observations integer DEFAULT 1 NOT NULL,
    valid_from timestamp with time zone DEFAULT now() NOT NULL,
    valid_to timestamp with time zone,
    end_reason text,
    supersedes uuid,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT identity_memories_confidence_check CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT identity_memories_evidence_refs_check CHECK ((jsonb_typeof(evidence_refs) = 'array'::text)),
    CONSTRAINT identity_memories_key_check CHECK (((key <> ''::text) AND (length(key) <= 120))),
    CONSTRAINT identity_memories_memory_type_check CHECK ((memory_type = ANY (ARRAY['preference'::text, 'fact'::text, 'boundary'::text, 'commitment'::text, 'pattern'::text]))),
    CONSTRAINT identity_memories_observations_check CHECK ((observations > 0)),
    CONSTRAINT identity_memories_source_check CHECK ((source = ANY (ARRAY['user'::text, 'inferred'::text, 'imported'::text, 'admin'::text]))),
    CONSTRAINT identity_memories_validity CHECK (((valid_to IS NULL) OR (valid_to >= valid_from))),
    CONSTRAINT identity_memories_value_check CHECK ((jsonb_typeof(value) = 'object'::text))
);

CREATE TABLE identity_self_model (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    singleton boolean DEFAULT true NOT NULL,
    persona jsonb DEFAULT '{}'::jsonb NOT NULL,
    "values" jsonb DEFAULT '{}'::jsonb NOT NULL,
    boundaries jsonb DEFAULT '{}'::jsonb NOT NULL,
    goals jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT identity_self_model_boundaries_check CHECK ((jsonb_typeof(boundaries) = 'object'::text)),
    CONSTRAINT identity_self_model_goals_check CHECK ((jsonb_typeof(goals) = 'object'::text)),
    CONSTRAINT identity_self_model_persona_check CHECK ((jsonb_typeof(persona) = 'object'::text)),
    CONSTRAINT identity_self_model_singleton_check CHECK (singleton),
    CONSTRAINT identity_self_model_values_check CHECK ((jsonb_typeof("values") = 'object'::text))
);

CREATE TABLE identity_self_model_changes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tool_name text NOT NULL,
    sections text[] NOT NULL,
    patch jsonb NOT NULL,
    reason text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE inspection_appointments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    scheduled_for timestamp with time zone NOT NULL,
    duration_minutes integer DEFAULT 60 NOT NULL,
    address text,
    notes text,
    status text DEFAULT 'scheduled'::text NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    window_end timestamp with time zone,
    part_of_day text,
    calendar_event_id uuid,
    CONSTRAINT inspection_appointments_duration_minutes_check CHECK (((duration_minutes >= 15) AND (duration_minutes <= 480))),
    CONSTRAINT inspection_appointments_part_of_day_check CHECK ((part_of_day = ANY (ARRAY['morning'::text, 'afternoon'::text, 'any'::text]))),
    CONSTRAINT inspection_appointments_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'completed'::text, 'cancelled'::text]))),
    CONSTRAINT inspection_appointments_window CHECK (((window_end IS NULL) OR (window_end > scheduled_for)))
);

CREATE TABLE inspection_checklist_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    item_key text NOT NULL,
    status text,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT inspection_checklist_items_item_check CHECK ((item_key <> ''::text)),
    CONSTRAINT inspection_checklist_items_status CHECK ((status = ANY (ARRAY['pass'::text, 'fail'::text, 'na'::text])))
);

CREATE TABLE inspection_defects (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    severity text NOT NULL,
    location text,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    category text DEFAULT 'other'::text NOT NULL,
    photo_refs text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT inspection_defects_category CHECK ((category = ANY (ARRAY['tile'::text, 'ridge'::text, 'valley'::text, 'flashing'::text, 'gutter'::text, 'leak'::text, 'other'::text]))),
    CONSTRAINT inspection_defects_severity CHECK ((severity = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text])))
);

CREATE TABLE inspection_measurements (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    kind text NOT NULL,
    label text,
    value numeric(12,3) NOT NULL,
    unit text NOT NULL,
    metric_value numeric(14,3),
    metric_unit text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    notes text,
    CONSTRAINT inspection_measurements_angle CHECK (((metric_unit IS DISTINCT FROM 'deg'::text) OR (metric_value <= (360)::numeric))),
    CONSTRAINT inspection_measurements_kind_check CHECK ((kind = ANY (ARRAY['roof_area'::text, 'roof_pitch'::text, 'gutter_length'::text, 'ridge_length'::text, 'valley_length'::text, 'fascia_length'::text, 'downpipe_count'::text, 'other'::text]))),
    CONSTRAINT inspection_measurements_metric_pair CHECK (((metric_value IS NULL) = (metric_unit IS NULL))),
    CONSTRAINT inspection_measurements_metric_unit CHECK ((metric_unit = ANY (ARRAY['m2'::text, 'deg'::text, 'm'::text, 'count'::text]))),
    CONSTRAINT inspection_measurements_metric_value_check CHECK ((metric_value >= (0)::numeric)),
    CONSTRAINT inspection_measurements_pitch CHECK (((kind <> 'roof_pitch'::text) OR ((metric_unit = 'deg'::text) AND (metric_value <= (90)::numeric)))),
    CONSTRAINT inspection_measurements_unit CHECK (((unit <> ''::text) AND (length(unit) <= 40))),
    CONSTRAINT inspection_measurements_value_check CHECK ((value >= (0)::numeric))
);

CREATE TABLE inspection_photos (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    file_ref text NOT NULL,
    label text,
    asset_id uuid,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT inspection_photos_ref_check CHECK ((file_ref <> ''::text))
);

CREATE TABLE inspections (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    appointment_id uuid,
    site_id uuid,
    status text DEFAULT 'draft'::text NOT NULL,
    inspector text,
    summary text,
    submitted_at timestamp with time zone,
    locked_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    site_address text,
    notes text,
    CONSTRAINT inspections_locked_at CHECK (((status = 'locked'::text) = (locked_at IS NOT NULL))),
    CONSTRAINT inspections_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'submitted'::text, 'locked'::text]))),
    CONSTRAINT inspections_submitted_at CHECK (((status = 'draft'::text) = (submitted_at IS NULL)))
);

CREATE TABLE invoice_payments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    invoice_id uuid NOT NULL,
    amount_cents bigint NOT NULL,
    method text NOT NULL,
    reference text,
    received_on date NOT NULL,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    paid_at timestamp with time zone NOT NULL,
    CONSTRAINT invoice_payments_amount_cents_check CHECK ((amount_cents > 0)),
    CONSTRAINT invoice_payments_method_check CHECK ((method = ANY (ARRAY['bank_transfer'::text, 'card'::text, 'cash'::text, 'cheque'::text, 'other'::text]))),
    CONSTRAINT invoice_payments_reference_check CHECK ((reference <> ''::text))
);

CREATE TABLE invoices (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    number bigint NOT NULL,
    job_id uuid NOT NULL,
    currency text DEFAULT 'AUD'::text NOT NULL,
    subtotal_cents bigint NOT NULL,
    gst_cents bigint NOT NULL,
    total_cents bigint NOT NULL,
    amount_paid_cents bigint DEFAULT 0 NOT NULL,
    balance_cents bigint GENERATED ALWAYS AS ((total_cents - amount_paid_cents)) STORED,
    status text GENERATED ALWAYS AS (
CASE
    WHEN (amount_paid_cents >= total_cents) THEN 'paid'::text
    WHEN (overdue_at IS NOT NULL) THEN 'overdue'::text
    WHEN (amount_paid_cents > 0) THEN 'partially_paid'::text
    ELSE 'unpaid'::text
END) STORED,
    issued_on date NOT NULL,
    due_on date NOT NULL,
    paid_at timestamp with time zone,
    overdue_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    notes text,
    sent_at timestamp with time zone,
    CONSTRAINT invoices_currency_check CHECK ((currency = 'AUD'::text)),
    CONSTRAINT invoices_due_after_issue CHECK ((due_on >= issued_on)),
    CONSTRAINT invoices_gst_cents_check CHECK ((gst_cents >= 0)),
    CONSTRAINT invoices_no_overpayment CHECK (((amount_paid_cents >= 0) AND (amount_paid_cents <= total_cents))),
    CONSTRAINT invoices_paid_at CHECK (((amount_paid_cents = total_cents) = (paid_at IS NOT NULL))),
    CONSTRAINT invoices_subtotal_cents_check CHECK ((subtotal_cents >= 0)),
    CONSTRAINT invoices_total CHECK ((total_cents = (subtotal_cents + gst_cents))),
    CONSTRAINT invoices_total_cents_check CHECK ((total_cents > 0))
);

ALTER TABLE invoices ALTER COLUMN number ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME invoices_number_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE job_media_refs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    job_id uuid NOT NULL,
    stage text NOT NULL,
    ref text NOT NULL,
    seq bigint NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_media_refs_ref_check CHECK ((ref <> ''::text)),
    CONSTRAINT job_media_refs_stage_check CHECK ((stage = ANY (ARRAY['before'::text, 'after'::text])))
);

ALTER TABLE job_media_refs ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME job_media_refs_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE job_progress_updates (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    job_id uuid NOT NULL,
    summary text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    photo_refs text[] DEFAULT '{}'::text[] NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_progress_updates_details_check CHECK ((jsonb_typeof(details) = 'object'::text)),
    CONSTRAINT job_progress_updates_summary_check CHECK (((summary <> ''::text) AND (char_length(summary) <= 400)))
);

CREATE TABLE job_site_notes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    job_id uuid NOT NULL,
    note text NOT NULL,
    author text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_site_notes_note_check CHECK ((note <> ''::text))
);

CREATE TABLE jobs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    number bigint NOT NULL,
    quote_id uuid NOT NULL,
    status text DEFAULT 'unscheduled'::text NOT NULL,
    start_date date,
    end_date date,
    completed_at timestamp with time zone,
    completion_notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    notes text,
    schedule_notes text,
    review_requested_at timestamp with time zone,
    CONSTRAINT jobs_completed_at CHECK (((status = 'completed'::text) = (completed_at IS NOT NULL))),
    CONSTRAINT jobs_dates CHECK ((((start_date IS NULL) = (end_date IS NULL)) AND (end_date >= start_date))),
    CONSTRAINT jobs_scheduled_has_dates CHECK (((status = 'unscheduled'::text) OR (start_date IS NOT NULL))),
    CONSTRAINT jobs_status_check CHECK ((status = ANY (ARRAY['unscheduled'::text, 'scheduled'::text, 'completed'::text])))
);

ALTER TABLE jobs ALTER COLUMN number ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME jobs_number_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE lead_photo_links (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    url text NOT NULL,
    label text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lead_photo_links_url_check CHECK ((url ~* '^https?://'::text))
);

CREATE TABLE lead_sources (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    source text NOT NULL,
    detail text DEFAULT ''::text NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    campaign jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lead_sources_campaign_check CHECK ((jsonb_typeof(campaign) = 'object'::text)),
    CONSTRAINT lead_sources_source_check CHECK ((source ~ '^[a-z0-9][a-z0-9_]{0,59}$'::text))
);

CREATE TABLE lead_stage_changes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    from_stage text NOT NULL,
    to_stage text NOT NULL,
    reason text,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE leads (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    phone text NOT NULL,
    phone_digits text GENERATED ALWAYS AS (regexp_replace(phone, '[^0-9+]'::text, ''::text, 'g'::text)) STORED,
    email text,
    suburb text,
    address text,
    source text DEFAULT 'other'::text NOT NULL,
    stage text DEFAULT 'new'::text NOT NULL,
    stage_reason text,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    lost_reason_code text,
    highlevel_contact_id text,
    phone_e164 text,
    CONSTRAINT leads_highlevel_contact_id_check CHECK ((highlevel_contact_id <> ''::text)),
    CONSTRAINT leads_lost_reason_code_check CHECK ((lost_reason_code = ANY (ARRAY['price'::text, 'timing'::text, 'competitor'::text, 'no_response'::text, 'not_a_fit'::text, 'other'::text]))),
    CONSTRAINT leads_lost_reason_only_when_lost CHECK (((lost_reason_code IS NULL) OR (stage = 'lost'::text))),
    CONSTRAINT leads_phone_e164_is_e164 CHECK ((phone_e164 ~ '^\+[1-9][0-9]{3,14}$'::text)),
    CONSTRAINT leads_stage_check CHECK ((stage = ANY (ARRAY['new'::text, 'contacted'::text, 'inspection_scheduled'::text, 'inspected'::text, 'quoted'::text, 'won'::text, 'lost'::text])))
);

COMMENT ON COLUMN leads.phone IS 'the phone number as typed';

COMMENT ON COLUMN leads.phone_e164 IS 'the phone number in E.164, one lead per number; null for leads stored before 00039 (found by phone_digits)';

CREATE TABLE marketing_campaign_results (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    channel text NOT NULL,
    campaign text,
    period_start date,
    period_end date,
    metrics jsonb NOT NULL,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT marketing_campaign_results_campaign_check CHECK ((campaign <> ''::text)),
    CONSTRAINT marketing_campaign_results_channel_check CHECK ((channel = ANY (ARRAY['google_ads'::text, 'meta'::text, 'gmb'::text, 'other'::text]))),
    CONSTRAINT marketing_campaign_results_metrics_check CHECK (((jsonb_typeof(metrics) = 'object'::text) AND (metrics <> '{}'::jsonb))),
    CONSTRAINT marketing_campaign_results_period CHECK ((period_end >= period_start))
);

CREATE TABLE marketing_content_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    task_id uuid NOT NULL,
    channel text NOT NULL,
    title text NOT NULL,
    publish_at timestamp with time zone NOT NULL,
    content text,
    asset_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT marketing_content_items_channel_check CHECK ((channel = ANY (ARRAY['website'::text, 'blog'::text, 'gmb'::text, 'meta'::text, 'google_ads'::text, 'email'::text, 'other'::text]))),
    CONSTRAINT marketing_content_items_title_check CHECK ((title <> ''::text))
);

CREATE TABLE media_asset_captions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    asset_id uuid NOT NULL,
    platform text NOT NULL,
    caption text NOT NULL,
    written_by text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT media_asset_captions_caption_check CHECK ((caption <> ''::text)),
    CONSTRAINT media_asset_captions_platform_check CHECK ((platform = ANY (ARRAY['website'::text, 'gmb'::text, 'meta'::text, 'other'::text])))
);

CREATE TABLE media_assets (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    file_ref text NOT NULL,
    kind text DEFAULT 'photo'::text NOT NULL,
    content_type text,
    size_bytes bigint,
    sha256 text,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    lead_id uuid,
    inspection_id uuid,
    entity_id uuid,
    taken_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    job_id uuid,
    suburb text,
    notes text,
    alt_text text,
    proposed_name text,
    CONSTRAINT media_assets_alt_text_check CHECK ((alt_text <> ''::text)),
    CONSTRAINT media_assets_file_ref_check CHECK ((file_ref <> ''::text)),
    CONSTRAINT media_assets_kind_check CHECK ((kind = ANY (ARRAY['photo'::text, 'video'::text, 'document'::text, 'other'::text]))),
    CONSTRAINT media_assets_proposed_name_check CHECK ((proposed_name ~ '^[a-z0-9][a-z0-9.-]*$'::text)),
    CONSTRAINT media_assets_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT media_assets_size_bytes_check CHECK ((size_bytes >= 0)),
    CONSTRAINT media_assets_suburb_check CHECK ((suburb <> ''::text))
);

CREATE TABLE personal_checkins (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    energy text NOT NULL,
    stress text NOT NULL,
    focus text NOT NULL,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT personal_checkins_energy_check CHECK ((energy = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text]))),
    CONSTRAINT personal_checkins_focus_check CHECK ((focus = ANY (ARRAY['scattered'::text, 'ok'::text, 'locked_in'::text]))),
    CONSTRAINT personal_checkins_stress_check CHECK ((stress = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text])))
);

CREATE TABLE personal_commitments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    details text,
    review_at timestamp with time zone,
    status text DEFAULT 'active'::text NOT NULL,
    outcome text,
    closing_note text,
    closed_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT personal_commitments_closed CHECK ((((status = 'closed'::text) = (closed_at IS NOT NULL)) AND ((status = 'closed'::text) = (outcome IS NOT NULL)))),
    CONSTRAINT personal_commitments_outcome_check CHECK ((outcome = ANY (ARRAY['kept'::text, 'broken'::text, 'dropped'::text, 'done'::text]))),
    CONSTRAINT personal_commitments_status_check CHECK ((status = ANY (ARRAY['active'::text, 'closed'::text]))),
    CONSTRAINT personal_commitments_title_check CHECK ((title <> ''::text))
);

CREATE TABLE quote_line_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    quote_id uuid NOT NULL,
    "position" integer NOT NULL,
    description text NOT NULL,
    quantity numeric(12,3) NOT NULL,
    unit text DEFAULT 'each'::text NOT NULL,
    unit_price_cents bigint NOT NULL,
    line_total_cents bigint NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT quote_line_items_description_check CHECK ((description <> ''::text)),
    CONSTRAINT quote_line_items_line_total_cents_check CHECK ((line_total_cents >= 0)),
    CONSTRAINT quote_line_items_position_check CHECK (("position" > 0)),
    CONSTRAINT quote_line_items_quantity_check CHECK ((quantity > (0)::numeric)),
    CONSTRAINT quote_line_items_unit_price_cents_check CHECK ((unit_price_cents >= 0))
);

CREATE TABLE quotes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    number bigint NOT NULL,
    lead_id uuid NOT NULL,
    inspection_id uuid NOT NULL,
    customer_id uuid,
    status text DEFAULT 'draft'::text NOT NULL,
    currency text DEFAULT 'AUD'::text NOT NULL,
    subtotal_cents bigint DEFAULT 0 NOT NULL,
    gst_cents bigint DEFAULT 0 NOT NULL,
    total_cents bigint DEFAULT 0 NOT NULL,
    totals_stale boolean DEFAULT false NOT NULL,
    valid_until date NOT NULL,
    notes text,
    sent_at timestamp with time zone,
    sent_via text,
    accepted_at timestamp with time zone,
    declined_at timestamp with time zone,
    decline_reason text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    pricing_profile text,
    decision_notes text,
    CONSTRAINT quotes_accepted_at CHECK (((status = 'accepted'::text) = (accepted_at IS NOT NULL))),
    CONSTRAINT quotes_currency_check CHECK ((currency = 'AUD'::text)),
    CONSTRAINT quotes_declined_at CHECK (((status = 'declined'::text) = (declined_at IS NOT NULL))),
    CONSTRAINT quotes_gst_cents_check CHECK ((gst_cents >= 0)),
    CONSTRAINT quotes_sent_at CHECK (((status <> 'draft'::text) OR (sent_at IS NULL))),
    CONSTRAINT quotes_sent_via CHECK ((sent_via = ANY (ARRAY['email'::text, 'sms'::text, 'both'::text, 'in_person'::text, 'post'::text, 'other'::text]))),
    CONSTRAINT quotes_sent_with_fresh_totals CHECK (((status = 'draft'::text) OR (NOT totals_stale))),
    CONSTRAINT quotes_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'sent'::text, 'accepted'::text, 'declined'::text]))),
    CONSTRAINT quotes_subtotal_cents_check CHECK ((subtotal_cents >= 0)),
    CONSTRAINT quotes_total CHECK ((total_cents = (subtotal_cents + gst_cents)))
);

ALTER TABLE quotes ALTER COLUMN number ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME quotes_number_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY calendar_events
    ADD CONSTRAINT calendar_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY comms_log
    ADD CONSTRAINT comms_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY entities
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id);

ALTER TABLE ONLY entity_conversations
    ADD CONSTRAINT entity_conversations_once UNIQUE (entity_id, conversation_id);

ALTER TABLE ONLY entity_conversations
    ADD CONSTRAINT entity_conversations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY entity_interactions
    ADD CONSTRAINT entity_interactions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY expenses
    ADD CONSTRAINT expenses_pkey PRIMARY KEY (id);

ALTER TABLE ONLY identity_memories
    ADD CONSTRAINT identity_memories_pkey PRIMARY KEY (id);

ALTER TABLE ONLY identity_self_model_changes
    ADD CONSTRAINT identity_self_model_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY identity_self_model
    ADD CONSTRAINT identity_self_model_one_row UNIQUE (singleton);

ALTER TABLE ONLY identity_self_model
    ADD CONSTRAINT identity_self_model_pkey PRIMARY KEY (id);

ALTER TABLE ONLY inspection_appointments
    ADD CONSTRAINT inspection_appointments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_once UNIQUE (inspection_id, item_key);

ALTER TABLE ONLY inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY inspection_defects
    ADD CONSTRAINT inspection_defects_pkey PRIMARY KEY (id);

ALTER TABLE ONLY inspection_measurements
    ADD CONSTRAINT inspection_measurements_pkey PRIMARY KEY (id);

ALTER TABLE ONLY inspection_photos
    ADD CONSTRAINT inspection_photos_once UNIQUE (inspection_id, file_ref);

ALTER TABLE ONLY inspection_photos
    ADD CONSTRAINT inspection_photos_pkey PRIMARY KEY (id);

ALTER TABLE ONLY inspections
    ADD CONSTRAINT inspections_appointment_id_key UNIQUE (appointment_id);

ALTER TABLE ONLY inspections
    ADD CONSTRAINT inspections_pkey PRIMARY KEY (id);

ALTER TABLE ONLY invoice_payments
    ADD CONSTRAINT invoice_payments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY invoice_payments
    ADD CONSTRAINT invoice_payments_reference_once UNIQUE (invoice_id, reference);

ALTER TABLE ONLY invoices
    ADD CONSTRAINT invoices_number_key UNIQUE (number);

ALTER TABLE ONLY invoices
    ADD CONSTRAINT invoices_one_per_job UNIQUE (job_id);

ALTER TABLE ONLY invoices
    ADD CONSTRAINT invoices_pkey PRIMARY KEY (id);

ALTER TABLE ONLY job_media_refs
    ADD CONSTRAINT job_media_refs_once UNIQUE (job_id, stage, ref);

ALTER TABLE ONLY job_media_refs
    ADD CONSTRAINT job_media_refs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY job_progress_updates
    ADD CONSTRAINT job_progress_updates_pkey PRIMARY KEY (id);

ALTER TABLE ONLY job_site_notes
    ADD CONSTRAINT job_site_notes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY jobs
    ADD CONSTRAINT jobs_number_key UNIQUE (number);

ALTER TABLE ONLY jobs
    ADD CONSTRAINT jobs_one_per_quote UNIQUE (quote_id);

ALTER TABLE ONLY jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY lead_photo_links
    ADD CONSTRAINT lead_photo_links_once UNIQUE (lead_id, url);

ALTER TABLE ONLY lead_photo_links
    ADD CONSTRAINT lead_photo_links_pkey PRIMARY KEY (id);

ALTER TABLE ONLY lead_sources
    ADD CONSTRAINT lead_sources_once UNIQUE (lead_id, source, detail);

ALTER TABLE ONLY lead_sources
    ADD CONSTRAINT lead_sources_pkey PRIMARY KEY (id);

ALTER TABLE ONLY lead_stage_changes
    ADD CONSTRAINT lead_stage_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY leads
    ADD CONSTRAINT leads_one_per_number UNIQUE (phone_e164);

ALTER TABLE ONLY leads
    ADD CONSTRAINT leads_pkey PRIMARY KEY (id);

ALTER TABLE ONLY marketing_campaign_results
    ADD CONSTRAINT marketing_campaign_results_pkey PRIMARY KEY (id);

ALTER TABLE ONLY marketing_content_items
    ADD CONSTRAINT marketing_content_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY marketing_content_items
    ADD CONSTRAINT marketing_content_items_task_id_key UNIQUE (task_id);

ALTER TABLE ONLY media_asset_captions
    ADD CONSTRAINT media_asset_captions_once UNIQUE (asset_id, platform);

ALTER TABLE ONLY media_asset_captions
    ADD CONSTRAINT media_asset_captions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY media_assets
    ADD CONSTRAINT media_assets_one_per_file_ref UNIQUE (file_ref);

ALTER TABLE ONLY media_assets
    ADD CONSTRAINT media_assets_pkey PRIMARY KEY (id);

ALTER TABLE ONLY personal_checkins
    ADD CONSTRAINT personal_checkins_pkey PRIMARY KEY (id);

ALTER TABLE ONLY personal_commitments
    ADD CONSTRAINT personal_commitments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY quote_line_items
    ADD CONSTRAINT quote_line_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY quote_line_items
    ADD CONSTRAINT quote_line_items_position UNIQUE (quote_id, "position");

ALTER TABLE ONLY quotes
    ADD CONSTRAINT quotes_number_key UNIQUE (number);

ALTER TABLE ONLY quotes
    ADD CONSTRAINT quotes_pkey PRIMARY KEY (id);

CREATE INDEX calendar_events_job ON calendar_events USING btree (job_id) WHERE (job_id IS NOT NULL);

CREATE INDEX calendar_events_lead ON calendar_events USING btree (lead_id) WHERE (lead_id IS NOT NULL);

CREATE INDEX calendar_events_scheduled ON calendar_events USING gist (tstzrange(start_at, end_at)) WHERE (status = 'scheduled'::text);

CREATE INDEX comms_log_entity ON comms_log USING btree (entity_id, occurred_at DESC) WHERE (entity_id IS NOT NULL);

CREATE INDEX comms_log_invoice ON comms_log USING btree (invoice_id, occurred_at DESC) WHERE (invoice_id IS NOT NULL);

CREATE INDEX comms_log_job ON comms_log USING btree (job_id, occurred_at DESC) WHERE (job_id IS NOT NULL);

CREATE INDEX comms_log_lead ON comms_log USING btree (lead_id, occurred_at DESC) WHERE (lead_id IS NOT NULL);

CREATE INDEX entities_kind_name ON entities USING btree (kind, lower(name));

CREATE INDEX entities_parent ON entities USING btree (parent_id) WHERE (parent_id IS NOT NULL);

CREATE INDEX entities_phone_digits ON entities USING btree (phone_digits) WHERE (phone_digits <> ''::text);

CREATE INDEX entity_conversations_conversation ON entity_conversations USING btree (conversation_id);

CREATE INDEX entity_interactions_entity ON entity_interactions USING btree (entity_id, occurred_at DESC);

CREATE INDEX expenses_incurred_on ON expenses USING btree (incurred_on);

CREATE INDEX expenses_job ON expenses USING btree (job_id) WHERE (job_id IS NOT NULL);

CREATE UNIQUE INDEX expenses_reference_once ON expenses USING btree (lower(COALESCE(supplier, ''::text)), reference) WHERE (reference IS NOT NULL);

CREATE UNIQUE INDEX identity_memories_current_key ON identity_memories USING btree (key) WHERE (valid_to IS NULL);

CREATE INDEX identity_memories_current_type ON identity_memories USING btree (memory_type, key) WHERE (valid_to IS NULL);

CREATE INDEX identity_memories_key_history ON identity_memories USING btree (key, valid_from DESC);

CREATE INDEX identity_memories_supersedes ON identity_memories USING btree (supersedes) WHERE (supersedes IS NOT NULL);

CREATE INDEX identity_self_model_changes_created_at ON identity_self_model_changes USING btree (created_at DESC);

CREATE UNIQUE INDEX inspection_appointments_once ON inspection_appointments USING btree (lead_id, scheduled_for) WHERE (status = 'scheduled'::text);

CREATE INDEX inspection_appointments_upcoming ON inspection_appointments USING btree (scheduled_for) WHERE (status = 'scheduled'::text);

CREATE INDEX inspection_defects_inspection ON inspection_defects USING btree (inspection_id);

CREATE INDEX inspection_measurements_inspection ON inspection_measurements USING btree (inspection_id);

CREATE INDEX inspections_lead ON inspections USING btree (lead_id, created_at DESC);

CREATE INDEX invoice_payments_invoice ON invoice_payments USING btree (invoice_id, created_at);

CREATE INDEX invoice_payments_received_on ON invoice_payments USING btree (received_on);

CREATE INDEX invoices_unpaid_due ON invoices USING btree (due_on) WHERE (paid_at IS NULL);

CREATE INDEX job_progress_updates_job ON job_progress_updates USING btree (job_id, created_at);

CREATE INDEX job_site_notes_job ON job_site_notes USING btree (job_id, created_at);

CREATE INDEX jobs_open_start ON jobs USING btree (start_date) WHERE (status <> 'completed'::text);

CREATE INDEX lead_stage_changes_lead ON lead_stage_changes USING btree (lead_id, created_at);

CREATE UNIQUE INDEX leads_highlevel_contact ON leads USING btree (highlevel_contact_id) WHERE (highlevel_contact_id IS NOT NULL);

CREATE INDEX leads_phone_digits_unkeyed ON leads USING btree (phone_digits) WHERE (phone_e164 IS NULL);

CREATE INDEX leads_stage_created_at ON leads USING btree (stage, created_at DESC);

CREATE INDEX marketing_campaign_results_channel ON marketing_campaign_results USING btree (channel, created_at DESC);

CREATE INDEX marketing_content_items_publish_at ON marketing_content_items USING btree (publish_at);

CREATE INDEX media_assets_job ON media_assets USING btree (job_id) WHERE (job_id IS NOT NULL);

CREATE INDEX media_assets_lead ON media_assets USING btree (lead_id) WHERE (lead_id IS NOT NULL);

CREATE UNIQUE INDEX media_assets_proposed_name ON media_assets USING btree (proposed_name) WHERE (proposed_name IS NOT NULL);

CREATE INDEX media_assets_tags ON media_assets USING gin (tags) WITH (fastupdate=off);

CREATE INDEX personal_checkins_created_at ON personal_checkins USING btree (created_at DESC);

CREATE INDEX personal_commitments_active_review ON personal_commitments USING btree (review_at) WHERE (status = 'active'::text);

CREATE INDEX quotes_inspection ON quotes USING btree (inspection_id);

CREATE INDEX quotes_lead ON quotes USING btree (lead_id, created_at DESC);

CREATE TRIGGER calendar_events_capture_write AFTER INSERT OR DELETE OR UPDATE ON calendar_events FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER calendar_events_guard BEFORE UPDATE ON calendar_events FOR EACH ROW EXECUTE FUNCTION gem_calendar_event_guard();

CREATE TRIGGER comms_log_capture_write AFTER INSERT OR DELETE OR UPDATE ON comms_log FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER entities_capture_write AFTER INSERT OR DELETE OR UPDATE ON entities FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER entity_conversations_capture_write AFTER INSERT OR DELETE OR UPDATE ON entity_conversations FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER entity_interactions_capture_write AFTER INSERT OR DELETE OR UPDATE ON entity_interactions FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER expenses_capture_write AFTER INSERT OR DELETE OR UPDATE ON expenses FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER identity_memories_capture_write AFTER INSERT OR DELETE OR UPDATE ON identity_memories FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER identity_self_model_capture_write AFTER INSERT OR DELETE OR UPDATE ON identity_self_model FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER identity_self_model_changes_capture_write AFTER INSERT OR DELETE OR UPDATE ON identity_self_model_changes FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspection_appointments_capture_write AFTER INSERT OR DELETE OR UPDATE ON inspection_appointments FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspection_checklist_items_capture_write AFTER INSERT OR DELETE OR UPDATE ON inspection_checklist_items FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspection_checklist_items_guard BEFORE INSERT OR DELETE OR UPDATE ON inspection_checklist_items FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();

CREATE TRIGGER inspection_defects_capture_write AFTER INSERT OR DELETE OR UPDATE ON inspection_defects FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspection_defects_guard BEFORE INSERT OR DELETE OR UPDATE ON inspection_defects FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();

CREATE TRIGGER inspection_measurements_capture_write AFTER INSERT OR DELETE OR UPDATE ON inspection_measurements FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspection_measurements_guard BEFORE INSERT OR DELETE OR UPDATE ON inspection_measurements FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();

CREATE TRIGGER inspection_photos_capture_write AFTER INSERT OR DELETE OR UPDATE ON inspection_photos FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspection_photos_guard BEFORE INSERT OR DELETE OR UPDATE ON inspection_photos FOR EACH ROW EXECUTE FUNCTION gem_inspection_part_guard();

CREATE TRIGGER inspections_capture_write AFTER INSERT OR DELETE OR UPDATE ON inspections FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER inspections_locked_guard BEFORE DELETE OR UPDATE ON inspections FOR EACH ROW EXECUTE FUNCTION gem_inspection_locked_guard();

CREATE TRIGGER invoice_payments_capture_write AFTER INSERT OR DELETE OR UPDATE ON invoice_payments FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER invoices_capture_write AFTER INSERT OR DELETE OR UPDATE ON invoices FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER job_media_refs_capture_write AFTER INSERT OR DELETE OR UPDATE ON job_media_refs FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER job_progress_updates_capture_write AFTER INSERT OR DELETE OR UPDATE ON job_progress_updates FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER job_site_notes_capture_write AFTER INSERT OR DELETE OR UPDATE ON job_site_notes FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER jobs_capture_write AFTER INSERT OR DELETE OR UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER lead_photo_links_capture_write AFTER INSERT OR DELETE OR UPDATE ON lead_photo_links FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER lead_sources_capture_write AFTER INSERT OR DELETE OR UPDATE ON lead_sources FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER lead_stage_changes_capture_write AFTER INSERT OR DELETE OR UPDATE ON lead_stage_changes FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER leads_capture_write AFTER INSERT OR DELETE OR UPDATE ON leads FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER marketing_campaign_results_capture_write AFTER INSERT OR DELETE OR UPDATE ON marketing_campaign_results FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER marketing_content_items_capture_write AFTER INSERT OR DELETE OR UPDATE ON marketing_content_items FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER media_asset_captions_capture_write AFTER INSERT OR DELETE OR UPDATE ON media_asset_captions FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER media_assets_capture_write AFTER INSERT OR DELETE OR UPDATE ON media_assets FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER personal_checkins_capture_write AFTER INSERT OR DELETE OR UPDATE ON personal_checkins FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER personal_commitments_capture_write AFTER INSERT OR DELETE OR UPDATE ON personal_commitments FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER quote_line_items_capture_write AFTER INSERT OR DELETE OR UPDATE ON quote_line_items FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER quote_line_items_guard BEFORE INSERT OR DELETE OR UPDATE ON quote_line_items FOR EACH ROW EXECUTE FUNCTION gem_quote_line_guard();

CREATE TRIGGER quotes_amounts_guard BEFORE UPDATE ON quotes FOR EACH ROW EXECUTE FUNCTION gem_quote_amounts_guard();

CREATE TRIGGER quotes_capture_write AFTER INSERT OR DELETE OR UPDATE ON quotes FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

ALTER TABLE ONLY calendar_events
    ADD CONSTRAINT calendar_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY calendar_events
    ADD CONSTRAINT calendar_events_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY comms_log
    ADD CONSTRAINT comms_log_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY comms_log
    ADD CONSTRAINT comms_log_invoice_id_fkey FOREIGN KEY (invoice_id) REFERENCES invoices(id) ON DELETE SET NULL;

ALTER TABLE ONLY comms_log
    ADD CONSTRAINT comms_log_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY comms_log
    ADD CONSTRAINT comms_log_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY entities
    ADD CONSTRAINT entities_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY entities
    ADD CONSTRAINT entities_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY entity_conversations
    ADD CONSTRAINT entity_conversations_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY entity_interactions
    ADD CONSTRAINT entity_interactions_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY expenses
    ADD CONSTRAINT expenses_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY identity_memories
    ADD CONSTRAINT identity_memories_supersedes_fkey FOREIGN KEY (supersedes) REFERENCES identity_memories(id) ON DELETE SET NULL;

ALTER TABLE ONLY inspection_appointments
    ADD CONSTRAINT inspection_appointments_calendar_event_id_fkey FOREIGN KEY (calendar_event_id) REFERENCES calendar_events(id) ON DELETE SET NULL;

ALTER TABLE ONLY inspection_appointments
    ADD CONSTRAINT inspection_appointments_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY inspection_defects
    ADD CONSTRAINT inspection_defects_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY inspection_measurements
    ADD CONSTRAINT inspection_measurements_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY inspection_photos
    ADD CONSTRAINT inspection_photos_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES media_assets(id) ON DELETE SET NULL;

ALTER TABLE ONLY inspection_photos
    ADD CONSTRAINT inspection_photos_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY inspections
    ADD CONSTRAINT inspections_appointment_id_fkey FOREIGN KEY (appointment_id) REFERENCES inspection_appointments(id) ON DELETE SET NULL;

ALTER TABLE ONLY inspections
    ADD CONSTRAINT inspections_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE RESTRICT;

ALTER TABLE ONLY inspections
    ADD CONSTRAINT inspections_site_id_fkey FOREIGN KEY (site_id) REFERENCES entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY invoice_payments
    ADD CONSTRAINT invoice_payments_invoice_id_fkey FOREIGN KEY (invoice_id) REFERENCES invoices(id) ON DELETE RESTRICT;

ALTER TABLE ONLY invoices
    ADD CONSTRAINT invoices_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE RESTRICT;

ALTER TABLE ONLY job_media_refs
    ADD CONSTRAINT job_media_refs_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY job_progress_updates
    ADD CONSTRAINT job_progress_updates_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY job_site_notes
    ADD CONSTRAINT job_site_notes_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY jobs
    ADD CONSTRAINT jobs_quote_id_fkey FOREIGN KEY (quote_id) REFERENCES quotes(id) ON DELETE RESTRICT;

ALTER TABLE ONLY lead_photo_links
    ADD CONSTRAINT lead_photo_links_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY lead_sources
    ADD CONSTRAINT lead_sources_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY lead_stage_changes
    ADD CONSTRAINT lead_stage_changes_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY marketing_content_items
    ADD CONSTRAINT marketing_content_items_task_id_fkey FOREIGN KEY (task_id) REFERENCES os_tasks(id) ON DELETE CASCADE;

ALTER TABLE ONLY media_asset_captions
    ADD CONSTRAINT media_asset_captions_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES media_assets(id) ON DELETE CASCADE;

ALTER TABLE ONLY media_assets
    ADD CONSTRAINT media_assets_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY media_assets
    ADD CONSTRAINT media_assets_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES inspections(id) ON DELETE SET NULL;

ALTER TABLE ONLY media_assets
    ADD CONSTRAINT media_assets_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY media_assets
    ADD CONSTRAINT media_assets_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY os_notes
    ADD CONSTRAINT os_notes_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY os_reminders
    ADD CONSTRAINT os_reminders_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY os_tasks
    ADD CONSTRAINT os_tasks_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY quote_line_items
    ADD CONSTRAINT quote_line_items_quote_id_fkey FOREIGN KEY (quote_id) REFERENCES quotes(id) ON DELETE CASCADE;

ALTER TABLE ONLY quotes
    ADD CONSTRAINT quotes_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY quotes
    ADD CONSTRAINT quotes_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES inspections(id) ON DELETE RESTRICT;

ALTER TABLE ONLY quotes
    ADD CONSTRAINT quotes_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE RESTRICT;

-- The built-in skills of the pack.

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'comms', 'Calls and messages', 'sales', 't', '{comms.compose_sms,comms.compose_email,comms.send_sms,comms.send_email,comms.log_call_outcome,comms.create_followup_task_from_message}',
    'Draft and send SMS and email, log call outcomes, turn messages into follow-up tasks.',
    'Draft with compose_sms or compose_email (they fill a template from the lead, quote, job or invoice you name), show the draft, and send only once the user agrees: a sent message cannot be taken back, and GEM never sends one twice. Every send names what it is about (context_ref). If sending is not configured, say so and suggest a follow-up task instead.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'crm', 'Customers and leads', 'sales', 't', '{leads.create,leads.update_stage,leads.list_by_stage,leads.add_source,leads.add_photos_link,leads.mark_lost,entity.create,entity.update,entity.get,entity.search,entity.add_interaction,entity.add_address_site_details,entity.link_to_conversation}',
    'Record leads, move them through the pipeline, keep customers, suppliers and their sites and interactions.',
    'A lead is a possible customer, one per phone number: creating a lead whose phone is on file returns the existing lead. A lead needs a name, a phone and a suburb; ask for what is missing.

Pipeline stages: new → contacted → inspection_scheduled → quoted → won, or lost (always with a reason). Move a lead forward as things happen; never skip to won before a quote is accepted.

People and businesses that are not leads (clients, suppliers, partners) are entities; record calls, visits and messages with them as interactions.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'inspections', 'Roof inspections', 'operations', 't', '{leads.schedule_inspection,inspection.create,inspection.get,inspection.add_checklist_item,inspection.add_measurement,inspection.add_photo_ref,inspection.add_defect,inspection.generate_scope_summary,inspection.submit,inspection.reopen,inspection.lock}',
    'Book inspections and record what was found: checklist, measurements, photos, defects; summarise the scope.',
    'An inspection belongs to a lead. Record measurements with a label, a value and a unit (roof area in m2, pitch in degrees, lengths in m), checklist items as pass, fail or na, and every defect with its category (tile, ridge, valley, flashing, gutter, leak, other) and severity (low, medium, high).

Generate the scope summary when the inspection is complete; lock it before quoting, since a locked inspection refuses edits.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'invoicing', 'Invoicing', 'finance', 't', '{invoice.create_from_job,invoice.send,invoice.add_payment,invoice.mark_overdue,invoice.list_overdue,invoice.send_reminder_sms,invoice.send_reminder_email}',
    'Invoice completed jobs, send invoices and reminders, record payments, find overdue invoices.',
    'An invoice''s amount comes from the job''s accepted quote. Record each payment in cents with its method (cash, bank_transfer, card, other); the invoice''s balance and status follow. A payment larger than the balance is refused. Sending an invoice or a reminder reaches the customer: confirm first, and never send the same reminder twice in a day.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'jobs', 'Jobs', 'operations', 't', '{job.create_from_accepted_quote,job.assign_dates,job.add_site_notes,job.add_progress_update,job.add_before_after_refs,job.create_job_card,job.complete,job.generate_warranty_certificate,job.request_review}',
    'Create the job for an accepted quote, schedule it, record progress and photos, complete it, and issue its documents.',
    'A job comes from an accepted quote (one job per quote). Dates are calendar dates (YYYY-MM-DD). Complete a job only when the work is finished; the warranty certificate needs a completed job. Asking for a review sends a message: confirm first.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'media', 'Photos and files', 'operations', 't', '{media.register_asset,media.tag_asset,media.generate_alt_text,media.generate_caption,media.propose_rename_map,media.export_website_pack}',
    'Register photos and documents, tag them, write alt text and captions, rename them and export a website pack.',
    'Register a file once (by its file reference) with its type, job and suburb, and tag it with what it shows (roof, gutter, defect, before, after). Propose a rename map as a dry run first and apply it only when the user agrees.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'quoting', 'Quoting', 'sales', 't', '{quote.create_from_inspection,quote.update_line_items,quote.add_line_item,quote.update_line_item,quote.calculate_totals,quote.generate_pdf,quote.send_to_client,quote.mark_sent,quote.mark_accepted,quote.mark_declined}',
    'Turn an inspection into a quote, price it, make its PDF, send it and track its answer.',
    'Money is in integer cents and excludes GST; calculate_totals adds 10% GST. Always calculate totals after changing line items and before making the PDF or sending the quote. Sending reaches the customer and cannot be undone: confirm with the user first. Only the customer accepts or declines a quote: record it when they tell you.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'calendar', 'Calendar', 'operations', 't', '{calendar.find_slots,calendar.create_event,calendar.update_event,calendar.cancel_event,calendar.attach_job_to_event}',
    'Find free time, book, move and cancel events, and tie them to jobs and leads.',
    'Look for free slots before booking. Times are RFC 3339 date-times in the business''s time zone; an event ends after it starts. Say when a new event overlaps another. Cancel rather than delete, with a reason.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'finance', 'Finance', 'finance', 't', '{finance.generate_cashflow_snapshot,finance.generate_pnl_snapshot,finance.add_expense}',
    'Record expenses; cash flow and profit and loss over a period.',
    'Periods are calendar dates (from, to). Amounts are integer cents; say whether a figure includes GST.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'identity', 'The owner', 'personal', 't', '{identity.get_self_model,identity.update_self_model,identity.add_memory,identity.expire_memory,identity.list_memories,identity.score_pattern,identity.set_boundaries}',
    'What the assistant knows about its owner: self-model, memories, patterns and boundaries.',
    'Read the self-model and boundaries before advising the owner. Store a memory only when the owner states a preference, a fact or a commitment, or asks you to remember; a new value for a key replaces the old one. Respect boundaries (no calls after hours, days off) in everything you plan.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'marketing', 'Marketing', 'sales', 't', '{marketing.generate_meta_ad_pack,marketing.generate_google_ads_pack,marketing.generate_case_study_from_job,marketing.generate_gmb_post,marketing.schedule_content,marketing.log_campaign_result}',
    'Draft ads, Google Business posts and case studies; schedule content and log campaign results.',
    'Drafts are written from the business''s real jobs and photos: never invent results, prices or reviews. Show drafts to the user before scheduling them. Log campaign results with the numbers the user gives (spend, clicks, impressions, leads).');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'personal', 'Personal', 'personal', 't', '{personal.check_in,personal.create_commitment,personal.review_commitments,personal.decision_support,personal.boundary_set}',
    'Check-ins, commitments and their reviews, boundaries, and structured help with decisions.',
    'Keep personal matters personal: use the personal domain. A check-in records energy, stress and focus as the owner reports them; do not guess them. For a decision, lay out the options against the constraints and the owner''s boundaries; the owner decides.');


INSERT INTO skill_dependencies (skill_id, requires_skill_id)
SELECT s.id, r.id FROM (VALUES
    ('comms', 'crm'),
    ('inspections', 'crm'),
    ('quoting', 'inspections'),
    ('jobs', 'quoting'),
    ('invoicing', 'jobs'),
    ('calendar', 'crm'),
    ('finance', 'invoicing'),
    ('marketing', 'media'),
    ('personal', 'identity')
) d (skill, requires) JOIN skills s ON s.slug = d.skill JOIN skills r ON r.slug = d.requires;
