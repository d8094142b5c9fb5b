-- The integrations pack's schema: the HighLevel sync queue and state, webhook events and media sources, with its
-- built-in skill, as the legacy migrations left them.

-- Written from pg_dump of a database the legacy migrations made (their history and reasons are in
-- sql/legacy/migrations and git log). A database made before the lines began records this migration as applied
-- without running it (gemsql.Migrate adopts it); sql/schema.sql is the schema every line leaves.

-- +goose Up

-- Functions come before the tables their bodies read, as pg_dump orders them.
SET LOCAL check_function_bodies = false;

CREATE TABLE integration_media_sources (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    url text NOT NULL,
    notes text,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT integration_media_sources_provider_check CHECK ((provider = 'google_photos'::text)),
    CONSTRAINT integration_media_sources_url_check CHECK ((url ~ '^https://'::text))
);

CREATE TABLE integration_sync_queue (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    operation text NOT NULL,
    payload jsonb NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    last_http_status integer,
    result jsonb,
    source_tool text,
    lead_id uuid,
    highlevel_contact_id text,
    finished_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT integration_sync_queue_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT integration_sync_queue_finished CHECK (((status = 'pending'::text) = (finished_at IS NULL))),
    CONSTRAINT integration_sync_queue_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT integration_sync_queue_operation_check CHECK ((operation = ANY (ARRAY['create_note'::text, 'create_task'::text, 'move_stage'::text]))),
    CONSTRAINT integration_sync_queue_payload_check CHECK ((jsonb_typeof(payload) = 'object'::text)),
    CONSTRAINT integration_sync_queue_provider_check CHECK ((provider = 'highlevel'::text)),
    CONSTRAINT integration_sync_queue_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'succeeded'::text, 'failed'::text])))
);

CREATE TABLE integration_sync_state (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    scope text NOT NULL,
    cursor text,
    series_started_at timestamp with time zone,
    last_run_at timestamp with time zone NOT NULL,
    last_completed_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE integration_webhook_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    location_id text,
    status text NOT NULL,
    reason text,
    call_id uuid,
    payload jsonb NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT integration_webhook_events_event_id_check CHECK ((event_id <> ''::text)),
    CONSTRAINT integration_webhook_events_provider_check CHECK ((provider = 'highlevel'::text)),
    CONSTRAINT integration_webhook_events_status_check CHECK ((status = ANY (ARRAY['enqueued'::text, 'ignored'::text])))
);

ALTER TABLE ONLY integration_media_sources
    ADD CONSTRAINT integration_media_sources_once UNIQUE (provider, url);

ALTER TABLE ONLY integration_media_sources
    ADD CONSTRAINT integration_media_sources_pkey PRIMARY KEY (id);

ALTER TABLE ONLY integration_sync_queue
    ADD CONSTRAINT integration_sync_queue_pkey PRIMARY KEY (id);

ALTER TABLE ONLY integration_sync_state
    ADD CONSTRAINT integration_sync_state_once UNIQUE (provider, scope);

ALTER TABLE ONLY integration_sync_state
    ADD CONSTRAINT integration_sync_state_pkey PRIMARY KEY (id);

ALTER TABLE ONLY integration_webhook_events
    ADD CONSTRAINT integration_webhook_events_once UNIQUE (provider, event_id);

ALTER TABLE ONLY integration_webhook_events
    ADD CONSTRAINT integration_webhook_events_pkey PRIMARY KEY (id);

CREATE INDEX integration_sync_queue_due ON integration_sync_queue USING btree (next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX integration_webhook_events_call ON integration_webhook_events USING btree (call_id) WHERE (call_id IS NOT NULL);

CREATE TRIGGER integration_media_sources_capture_write AFTER INSERT OR DELETE OR UPDATE ON integration_media_sources FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER integration_sync_queue_capture_write AFTER INSERT OR DELETE OR UPDATE ON integration_sync_queue FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER integration_sync_state_capture_write AFTER INSERT OR DELETE OR UPDATE ON integration_sync_state FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER integration_webhook_events_capture_write AFTER INSERT OR DELETE OR UPDATE ON integration_webhook_events FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

ALTER TABLE ONLY integration_sync_queue
    ADD CONSTRAINT integration_sync_queue_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY integration_webhook_events
    ADD CONSTRAINT integration_webhook_events_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE SET NULL;

-- The built-in skills of the pack.

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'integrations', 'Integrations', 'admin', 't', '{integrations.highlevel.health_check,integrations.highlevel.sync_contacts,integrations.highlevel.sync_inspection,integrations.highlevel.sync_quote,integrations.highlevel.update_lead_stage,integrations.highlevel.process_sync_queue,integrations.google_drive.search,integrations.google_photos.import_links,integrations.analytics.pull_summary,integrations.ads.pull_summary,integrations.sms_provider.health,integrations.email_provider.health}',
    'HighLevel sync, Google Drive and Photos, analytics and ads summaries, provider health.',
    'An integration that is not configured answers not_configured with the variables it needs: tell the user which ones. Check a provider''s health before blaming it for a failure.');
