-- GEM's contracts for entities, leads, communications and the calendar.
--
-- Entities take GEM's types (client, supplier, partner, friend, lead, other; sites stay for the rows that
-- have them, and "customer" becomes "client"), keep site details, a log of interactions and the brain
-- conversations they were discussed in. Lead sources accept GEM's channels and keep campaign metadata; stage
-- changes are recorded with their notes. An inspection booking keeps its window (a time range, or a date and
-- part of the day) and its calendar event. Messages sent are logged with what they were about. The calendar
-- lives here: events with their times, place, status and the lead or job they belong to.

-- +goose Up

ALTER TABLE entities DROP CONSTRAINT entities_kind_check;
UPDATE entities SET kind = 'client' WHERE kind = 'customer';
ALTER TABLE entities ADD CONSTRAINT entities_kind_check
        CHECK (kind IN ('client', 'supplier', 'partner', 'friend', 'lead', 'other', 'site')),
    -- What a crew needs to know about the place (access, roof, hazards), as keys entity.add_address_site_details
    -- accepts.
    ADD COLUMN site_details jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(site_details) = 'object'),
    ADD COLUMN state text;

-- Calls, messages, meetings and visits with an entity, newest first.
CREATE TABLE entity_interactions (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    entity_id        uuid        NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    interaction_type text        NOT NULL CHECK (interaction_type IN ('call', 'sms', 'email', 'meeting', 'site_visit', 'other')),
    summary          text        NOT NULL CHECK (summary <> '' AND length(summary) <= 400),
    details          jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'),
    -- How a call went (comms.log_call_outcome); only calls have one.
    call_outcome     text        CHECK (call_outcome IN ('answered', 'no_answer', 'left_message', 'busy', 'other')),
    -- The record the interaction was about ({type, id} of a context_ref).
    context_type     text,
    context_id       text,
    occurred_at      timestamptz NOT NULL DEFAULT now(),
    created_by_call  uuid        DEFAULT gem_current_call(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entity_interactions_outcome_of_calls CHECK (call_outcome IS NULL OR interaction_type = 'call'),
    CONSTRAINT entity_interactions_context CHECK ((context_type IS NULL) = (context_id IS NULL))
);
CREATE INDEX entity_interactions_entity ON entity_interactions (entity_id, occurred_at DESC);

-- Brain conversations (brain_runs.conversation_id) an entity was discussed in. A conversation may exist only
-- in a client's history, so there is no foreign key.
CREATE TABLE entity_conversations (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    entity_id       uuid        NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    conversation_id text        NOT NULL CHECK (conversation_id <> '' AND length(conversation_id) <= 200),
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entity_conversations_once UNIQUE (entity_id, conversation_id)
);
CREATE INDEX entity_conversations_conversation ON entity_conversations (conversation_id);

-- Lead sources: any channel GEM's callers name (its contract takes any text; the handler normalises it to
-- lowercase words joined by "_"), and campaign metadata (one row per lead, source and campaign name, kept in
-- detail).
ALTER TABLE lead_sources DROP CONSTRAINT lead_sources_source_check;
ALTER TABLE lead_sources ADD CONSTRAINT lead_sources_source_check CHECK (source ~ '^[a-z0-9][a-z0-9_]{0,59}$'),
    ADD COLUMN campaign jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(campaign) = 'object'),
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

-- Every change of a lead's stage made by leads.update_stage and leads.mark_lost, with its notes: what was
-- tried, and why leads are lost.
CREATE TABLE lead_stage_changes (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    lead_id         uuid        NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    from_stage      text        NOT NULL,
    to_stage        text        NOT NULL,
    reason          text,
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lead_stage_changes_lead ON lead_stage_changes (lead_id, created_at);

-- The business calendar. An event may belong to a lead and to a job; context_type and context_id keep the
-- reference it was created with (also "personal" ones, which name no record).
CREATE TABLE calendar_events (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    title           text        NOT NULL CHECK (title <> '' AND length(title) <= 200),
    start_at        timestamptz NOT NULL,
    end_at          timestamptz NOT NULL,
    location        text,
    status          text        NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'cancelled')),
    cancel_reason   text,
    cancelled_at    timestamptz,
    lead_id         uuid        REFERENCES leads (id) ON DELETE SET NULL,
    job_id          uuid        REFERENCES jobs (id) ON DELETE SET NULL,
    context_type    text,
    context_id      text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT calendar_events_end_after_start CHECK (end_at > start_at),
    CONSTRAINT calendar_events_cancelled_at CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL)),
    CONSTRAINT calendar_events_context CHECK ((context_type IS NULL) = (context_id IS NULL))
);
-- Overlap checks and free-slot searches look up scheduled events by time range.
CREATE INDEX calendar_events_scheduled ON calendar_events USING gist (tstzrange(start_at, end_at)) WHERE status = 'scheduled';
CREATE INDEX calendar_events_lead ON calendar_events (lead_id) WHERE lead_id IS NOT NULL;
CREATE INDEX calendar_events_job ON calendar_events (job_id) WHERE job_id IS NOT NULL;

-- +goose StatementBegin
-- gem_calendar_event_guard keeps a cancelled event as it was cancelled: its title, times, place and status
-- never change again.
CREATE FUNCTION gem_calendar_event_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'cancelled' AND (NEW.title, NEW.start_at, NEW.end_at, NEW.location, NEW.status)
            IS DISTINCT FROM (OLD.title, OLD.start_at, OLD.end_at, OLD.location, OLD.status) THEN
        RAISE EXCEPTION 'calendar event % is cancelled', OLD.id USING ERRCODE = '55000';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER calendar_events_guard BEFORE UPDATE ON calendar_events
    FOR EACH ROW EXECUTE FUNCTION gem_calendar_event_guard();

-- An inspection booking's window: scheduled_for is its start, window_end its end. A booking made for a date
-- and a part of the day (morning, afternoon, any) has no fixed time yet and no calendar event.
ALTER TABLE inspection_appointments
    ADD COLUMN window_end timestamptz,
    ADD COLUMN part_of_day text CHECK (part_of_day IN ('morning', 'afternoon', 'any')),
    ADD COLUMN calendar_event_id uuid REFERENCES calendar_events (id) ON DELETE SET NULL,
    ADD CONSTRAINT inspection_appointments_window CHECK (window_end IS NULL OR window_end > scheduled_for);

-- Messages sent: the record they were about (a context_ref) and the template they came from.
ALTER TABLE comms_log
    ADD COLUMN context_type text,
    ADD COLUMN context_id text,
    ADD COLUMN template_id text,
    ADD CONSTRAINT comms_log_context CHECK ((context_type IS NULL) = (context_id IS NULL));

CREATE TRIGGER entity_interactions_capture_write AFTER INSERT OR UPDATE OR DELETE ON entity_interactions
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER entity_conversations_capture_write AFTER INSERT OR UPDATE OR DELETE ON entity_conversations
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER lead_stage_changes_capture_write AFTER INSERT OR UPDATE OR DELETE ON lead_stage_changes
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER calendar_events_capture_write AFTER INSERT OR UPDATE OR DELETE ON calendar_events
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
ALTER TABLE comms_log
    DROP CONSTRAINT comms_log_context,
    DROP COLUMN template_id,
    DROP COLUMN context_id,
    DROP COLUMN context_type;
ALTER TABLE inspection_appointments
    DROP CONSTRAINT inspection_appointments_window,
    DROP COLUMN calendar_event_id,
    DROP COLUMN part_of_day,
    DROP COLUMN window_end;
DROP TABLE calendar_events;
DROP FUNCTION gem_calendar_event_guard();
DROP TABLE lead_stage_changes;
-- GEM's channels go back to the nearest of ours, and any other to other.
ALTER TABLE lead_sources DROP CONSTRAINT lead_sources_source_check;
-- +goose StatementBegin
CREATE FUNCTION pg_temp.gem_old_source(s text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN s IN ('gmb', 'google_ads') THEN 'google' WHEN s = 'meta' THEN 'facebook' WHEN s = 'repeat' THEN 'repeat_customer'
        WHEN s IN ('website', 'referral', 'phone', 'facebook', 'instagram', 'google', 'hipages', 'signage', 'walk_in',
                   'repeat_customer', 'other') THEN s
        ELSE 'other' END
$$;
-- +goose StatementEnd
DELETE FROM lead_sources a USING lead_sources b
    WHERE a.lead_id = b.lead_id AND a.detail = b.detail AND a.id > b.id
      AND pg_temp.gem_old_source(a.source) = pg_temp.gem_old_source(b.source);
UPDATE lead_sources SET source = pg_temp.gem_old_source(source);
ALTER TABLE lead_sources ADD CONSTRAINT lead_sources_source_check CHECK (source IN ('website', 'referral', 'phone',
        'facebook', 'instagram', 'google', 'hipages', 'signage', 'walk_in', 'repeat_customer', 'other')),
    DROP COLUMN updated_at,
    DROP COLUMN campaign;
DROP TABLE entity_conversations;
DROP TABLE entity_interactions;
-- The old kinds were customer, supplier and site: GEM's other types become customers.
ALTER TABLE entities DROP CONSTRAINT entities_kind_check,
    DROP COLUMN state,
    DROP COLUMN site_details;
UPDATE entities SET kind = 'customer' WHERE kind NOT IN ('supplier', 'site');
ALTER TABLE entities ADD CONSTRAINT entities_kind_check CHECK (kind IN ('customer', 'supplier', 'site'));
