-- The integrations pack (issue 11): leads tied to HighLevel contacts, the HighLevel sync queue and sync
-- state, media sources from shared Google Photos links, and the inbound webhook deliveries the brain has
-- turned into calls.
--
-- Conventions as in 00004_business.sql: every table has an id created_by_call and the
-- gem_capture_write trigger, so receipts list what a handler wrote.

-- +goose Up

-- The HighLevel contact a lead is kept in step with (integrations.highlevel.sync_contacts and the webhook).
ALTER TABLE leads ADD COLUMN highlevel_contact_id text CHECK (highlevel_contact_id <> '');
CREATE UNIQUE INDEX leads_highlevel_contact ON leads (highlevel_contact_id) WHERE highlevel_contact_id IS NOT NULL;

-- Outbound HighLevel operations that failed with a transient error (429, 5xx, no answer), waiting for
-- integrations.highlevel.process_sync_queue: pending until they succeed or fail for good (a 4xx, or the
-- last attempt). attempts counts the tries made; next_attempt_at backs off exponentially with jitter.
CREATE TABLE integration_sync_queue (
    id                   uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    provider             text        NOT NULL CHECK (provider IN ('highlevel')),
    operation            text        NOT NULL CHECK (operation IN ('create_note', 'create_task', 'move_stage')),
    payload              jsonb       NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    status               text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts             integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts         integer     NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at      timestamptz NOT NULL DEFAULT now(),
    last_error           text,
    last_http_status     integer,
    result               jsonb,
    source_tool          text,
    lead_id              uuid        REFERENCES leads (id) ON DELETE SET NULL,
    highlevel_contact_id text,
    finished_at          timestamptz,
    created_by_call      uuid        DEFAULT gem_current_call(),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT integration_sync_queue_finished CHECK ((status = 'pending') = (finished_at IS NULL))
);
CREATE INDEX integration_sync_queue_due ON integration_sync_queue (next_attempt_at) WHERE status = 'pending';

-- Where a provider's inbound sync of one scope (a HighLevel location) is: the cursor of the listing under
-- way, when that listing started, and when the last complete one started (the next one reads what
-- changed since).
CREATE TABLE integration_sync_state (
    id                uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    provider          text        NOT NULL,
    scope             text        NOT NULL,
    cursor            text,
    series_started_at timestamptz,
    last_run_at       timestamptz NOT NULL,
    last_completed_at timestamptz,
    created_by_call   uuid        DEFAULT gem_current_call(),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT integration_sync_state_once UNIQUE (provider, scope)
);

-- Photos shared by link (Google Photos albums and photos), recorded as sources of media. One row per link.
CREATE TABLE integration_media_sources (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    provider        text        NOT NULL CHECK (provider IN ('google_photos')),
    url             text        NOT NULL CHECK (url ~ '^https://'),
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT integration_media_sources_once UNIQUE (provider, url)
);

-- Inbound webhook deliveries, one row per provider event id: a delivery repeated (HighLevel delivers at
-- least once) finds its row and makes no second call. call_id is the call the event became, if any.
CREATE TABLE integration_webhook_events (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    provider        text        NOT NULL CHECK (provider IN ('highlevel')),
    event_id        text        NOT NULL CHECK (event_id <> ''),
    event_type      text        NOT NULL,
    location_id     text,
    status          text        NOT NULL CHECK (status IN ('enqueued', 'ignored')),
    reason          text,
    call_id         uuid        REFERENCES core_tool_calls (id) ON DELETE SET NULL,
    payload         jsonb       NOT NULL,
    created_by_call uuid        DEFAULT gem_current_call(),
    received_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT integration_webhook_events_once UNIQUE (provider, event_id)
);

CREATE TRIGGER integration_sync_queue_capture_write AFTER INSERT OR UPDATE OR DELETE ON integration_sync_queue
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER integration_sync_state_capture_write AFTER INSERT OR UPDATE OR DELETE ON integration_sync_state
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER integration_media_sources_capture_write AFTER INSERT OR UPDATE OR DELETE ON integration_media_sources
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER integration_webhook_events_capture_write AFTER INSERT OR UPDATE OR DELETE ON integration_webhook_events
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE integration_webhook_events;
DROP TABLE integration_media_sources;
DROP TABLE integration_sync_state;
DROP TABLE integration_sync_queue;
DROP INDEX leads_highlevel_contact;
ALTER TABLE leads DROP COLUMN highlevel_contact_id;
