-- Callers and their permissions (docs/governance.md). Every call names its caller (requested_by); the
-- executor refuses a call whose caller lacks a permission its tool declares. A caller is a bearer token of
-- the brain's, or a database role ("sql:<role>") for calls inserted by SQL.

-- +goose Up

-- A caller and what it may do. permissions are patterns: "*" (everything), "send:*" (every permission
-- starting "send:"), or one permission ("read:db"). agents, when not NULL, are the agents it may act as.
-- Kinds: token (a bearer token; one made by POST /callers is stored as its SHA-256 only, tokens from the
-- brain's configuration have none here), sql (a database role), service (a part of GEM that makes calls on
-- its own authority, such as the HighLevel webhook, whose deliveries are signed).
CREATE TABLE core_callers (
    name         text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'),
    kind         text        NOT NULL CHECK (kind IN ('token', 'sql', 'service')),
    permissions  text[]      NOT NULL DEFAULT '{}'
                             CHECK (array_position(permissions, NULL) IS NULL AND cardinality(permissions) <= 200),
    agents       text[]      CHECK (array_position(agents, NULL) IS NULL AND cardinality(agents) <= 200),
    token_sha256 bytea       UNIQUE CHECK (token_sha256 IS NULL OR kind = 'token'),
    note         text        NOT NULL DEFAULT '' CHECK (length(note) <= 1000),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    -- A revoked caller's calls are refused; its row stays, as its calls name it.
    revoked_at   timestamptz,
    CONSTRAINT core_callers_sql_named CHECK ((kind = 'sql') = (name LIKE 'sql:%'))
);

-- The role that creates GEM's tables (the executor's and the brain's) may do everything: calls it inserts by
-- hand without naming a caller carry its name.
INSERT INTO core_callers (name, kind, permissions, note)
VALUES ('sql:' || current_user, 'sql', '{*}', 'the database role that ran GEM''s migrations');

-- The call that made this one, for a call made from inside another (a script tool's gem.x.y(...)). It runs
-- for the same caller.
ALTER TABLE core_tool_calls ADD COLUMN parent_id uuid;

-- +goose StatementBegin
-- A new call becomes a River job in the same transaction; the notification wakes executors at once. The
-- function runs as its owner, so roles that may only insert calls (gem_caller) never touch River's table.
-- A caller is named by the inserting role only when that role may act for GEM (it owns the calls' table, or
-- is a member of its owner, or a superuser): any other role's calls carry "sql:<its name>", whatever they say.
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NEW.requested_by IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        NEW.requested_by := 'sql:' || session_user;
    END IF;
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', 1, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- Running as its owner, it must find River's table in GEM's schema, never in a temporary one an inserting
-- role made (pg_temp is searched first unless it is named last). Measured: running as the owner costs ~6 µs
-- per call inserted (20,000 inserts: 1.04 s → 1.20 s).
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

-- Every call with its live status, and the call that made it.
CREATE OR REPLACE VIEW core_calls AS
SELECT c.id, c.tool_name, c.input,
       CASE WHEN c.status <> 'queued' THEN c.status WHEN j.state = 'running' THEN 'running' ELSE 'queued' END AS status,
       c.idempotency_key,
       CASE WHEN c.status <> 'queued' THEN c.attempt ELSE coalesce(j.attempt, c.attempt) END AS attempt,
       c.max_attempts,
       CASE WHEN c.status <> 'queued' THEN c.worker
            ELSE coalesce(j.attempted_by[array_upper(j.attempted_by, 1)], c.worker) END AS worker,
       c.job_id, c.run_id, c.agent, c.user_id, c.requested_by, c.error_code, c.error, c.created_at,
       coalesce(c.started_at, j.attempted_at) AS started_at, c.finished_at,
       c.outside_token, c.outside_attempt, c.outside_started_at,
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried, c.parent_id
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued';

-- The caller of each failed call, for the operator reading failures.
CREATE OR REPLACE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent,
       r.device, r.devices_tried, c.requested_by
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC;

-- Two roles for people and programs that reach GEM by SQL alone (docs/governance.md):
--   gem_caller  inserts calls and reads calls, receipts and the audit views; nothing else.
--   gem_auditor reads them; nothing else.
-- Give a login role one of them (CREATE ROLE alice LOGIN PASSWORD '...' IN ROLE gem_caller) and grant its
-- caller "sql:alice" permissions (SELECT gem_caller_grant('sql:alice', '{read:db}')). Roles belong to the
-- whole PostgreSQL cluster: a second GEM database in the cluster shares them (its grants are its own).
-- A migrating role without CREATEROLE skips making them, with a notice.
-- +goose StatementBegin
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['gem_caller', 'gem_auditor'] LOOP
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            END IF;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL; -- made meanwhile by another database's migration
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'role % was not created: the migrating role lacks CREATEROLE (docs/governance.md)', r;
        END;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO gem_auditor', current_schema());
        GRANT SELECT ON core_tool_calls, core_tool_receipts, core_calls, core_queue_depth, core_recent_failures,
            core_idempotency_hits, core_tool_stats, core_devices_status, core_device_attempts TO gem_auditor;
        GRANT SELECT (name, kind, permissions, agents, note, created_at, updated_at, revoked_at) ON core_callers TO gem_auditor;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO gem_caller', current_schema());
        GRANT SELECT ON core_tool_calls, core_tool_receipts, core_calls, core_queue_depth, core_recent_failures,
            core_idempotency_hits, core_tool_stats, core_devices_status, core_device_attempts TO gem_caller;
        GRANT SELECT (name, kind, permissions, agents, note, created_at, updated_at, revoked_at) ON core_callers TO gem_caller;
        GRANT INSERT (id, tool_name, input, idempotency_key, max_attempts, run_id, agent, user_id, requested_by,
            device, device_wait_ms) ON core_tool_calls TO gem_caller;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_caller_grant sets a caller's permissions (and, when given, the agents it may act as), making the
-- caller when it does not exist: the SQL way to do what brain callers grant does. Only a role that may act
-- for GEM can run it (EXECUTE is not granted to gem_caller or gem_auditor).
CREATE FUNCTION gem_caller_grant(caller text, permissions text[], agents text[] DEFAULT NULL) RETURNS core_callers
LANGUAGE plpgsql AS $$
DECLARE
    row core_callers;
BEGIN
    INSERT INTO core_callers AS c (name, kind, permissions, agents)
    VALUES (caller, CASE WHEN caller LIKE 'sql:%' THEN 'sql' ELSE 'token' END, permissions, agents)
    ON CONFLICT (name) DO UPDATE SET permissions = EXCLUDED.permissions, agents = EXCLUDED.agents,
        updated_at = now(), revoked_at = NULL
    RETURNING * INTO row;
    RETURN row;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION gem_caller_grant(text, text[], text[]) FROM PUBLIC;

-- +goose Down
DROP FUNCTION gem_caller_grant(text, text[], text[]);
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        REVOKE ALL ON core_tool_calls, core_tool_receipts, core_calls, core_queue_depth, core_recent_failures,
            core_idempotency_hits, core_tool_stats, core_devices_status, core_device_attempts, core_callers FROM gem_caller;
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM gem_caller', current_schema());
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        REVOKE ALL ON core_tool_calls, core_tool_receipts, core_calls, core_queue_depth, core_recent_failures,
            core_idempotency_hits, core_tool_stats, core_devices_status, core_device_attempts, core_callers FROM gem_auditor;
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM gem_auditor', current_schema());
    END IF;
END
$$;
-- +goose StatementEnd
DROP VIEW core_recent_failures;
CREATE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent,
       r.device, r.devices_tried
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', 1, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd
ALTER FUNCTION gem_call_enqueue() RESET search_path;
DROP VIEW core_calls;
CREATE VIEW core_calls AS
SELECT c.id, c.tool_name, c.input,
       CASE WHEN c.status <> 'queued' THEN c.status WHEN j.state = 'running' THEN 'running' ELSE 'queued' END AS status,
       c.idempotency_key,
       CASE WHEN c.status <> 'queued' THEN c.attempt ELSE coalesce(j.attempt, c.attempt) END AS attempt,
       c.max_attempts,
       CASE WHEN c.status <> 'queued' THEN c.worker
            ELSE coalesce(j.attempted_by[array_upper(j.attempted_by, 1)], c.worker) END AS worker,
       c.job_id, c.run_id, c.agent, c.user_id, c.requested_by, c.error_code, c.error, c.created_at,
       coalesce(c.started_at, j.attempted_at) AS started_at, c.finished_at,
       c.outside_token, c.outside_attempt, c.outside_started_at,
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued';
ALTER TABLE core_tool_calls DROP COLUMN parent_id;
DROP TABLE core_callers;
