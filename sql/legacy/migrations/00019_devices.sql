-- Devices: people's machines that serve tools through the hub (docs/devices.md). A device connects to a brain
-- over a WebSocket; calls to its tools are relayed by an executor through core_device_attempts, and get their
-- one receipt on the hub side like every call.

-- +goose Up

-- A device, made by POST /devices (brain devices add). Its token is stored as its SHA-256 only.
CREATE TABLE core_devices (
    name            text        PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,62}$'),
    owner           text        NOT NULL DEFAULT '' CHECK (length(owner) <= 200),
    token_hash      bytea       NOT NULL UNIQUE,
    -- Set at each registration: which brain holds the socket, and until when the device counts as alive
    -- without another heartbeat (its heartbeat interval times the missed heartbeats allowed).
    registration    uuid,
    hub             text,
    connected       boolean     NOT NULL DEFAULT false,
    connected_at    timestamptz,
    disconnected_at timestamptz,
    last_heartbeat  timestamptz,
    alive_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- The tools a device serves, as it last registered them: a tool's contract as a registry entry (without its
-- implementation, which stays on the device).
CREATE TABLE core_device_tools (
    device    text    NOT NULL REFERENCES core_devices (name) ON DELETE CASCADE,
    tool_name text    NOT NULL CHECK (tool_name <> '' AND length(tool_name) <= 200),
    contract  jsonb   NOT NULL,
    agnostic  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (device, tool_name)
);
CREATE INDEX core_device_tools_tool ON core_device_tools (tool_name);

-- gem_device_alive is the one definition of a device that can be given calls.
-- +goose StatementBegin
CREATE FUNCTION gem_device_alive(d core_devices) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT d.connected AND d.alive_until > now()
$$;
-- +goose StatementEnd

-- One try of a call on a device. queued: waiting for the hub to send it; sent: handed to the device, which
-- may be running it; then succeeded or failed (the device's answer), unsent (the device went away before it
-- was sent: it never ran), lost (the device went away after it was sent: it may have run), or abandoned (the
-- executor stopped waiting: the call timed out).
CREATE TABLE core_device_attempts (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    call_id     uuid        NOT NULL REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    device      text        NOT NULL,
    state       text        NOT NULL DEFAULT 'queued'
                            CHECK (state IN ('queued', 'sent', 'succeeded', 'failed', 'unsent', 'lost', 'abandoned')),
    timeout_ms  integer     NOT NULL CHECK (timeout_ms > 0),
    result      jsonb,
    error       jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz,
    finished_at timestamptz
);
CREATE INDEX core_device_attempts_call ON core_device_attempts (call_id);
CREATE INDEX core_device_attempts_open ON core_device_attempts (device, id) WHERE state IN ('queued', 'sent');

-- +goose StatementBegin
-- A new attempt tells the hubs at once (the one holding its device's socket sends it).
CREATE FUNCTION gem_device_attempt_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gem_device_dispatch', NEW.device);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER core_device_attempts_queued AFTER INSERT ON core_device_attempts
    FOR EACH ROW EXECUTE FUNCTION gem_device_attempt_queued();

-- A call may name the device it must run on, and bound how long it waits for that device to be there.
ALTER TABLE core_tool_calls
    ADD COLUMN device text CHECK (device ~ '^[a-z][a-z0-9-]{0,62}$'),
    ADD COLUMN device_wait_ms integer CHECK (device_wait_ms BETWEEN 0 AND 3600000);

-- The device that ran a call, and every device it was tried on, in order.
ALTER TABLE core_tool_receipts
    ADD COLUMN device text,
    ADD COLUMN devices_tried text[];

-- +goose StatementBegin
-- The job carries the named device, so an executor routes the call before loading it.
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
-- gem_device_attempts_end ends a device's open attempts when it goes away: queued ones become unsent (never
-- handed over), sent ones lost (handed over: they may have run), and the executors waiting on them are told.
-- With only_sent, queued attempts are left for the device to take when it is back, and the sent attempts in
-- keep (those it says it is still running) stay sent. It returns how many attempts it ended.
CREATE FUNCTION gem_device_attempts_end(dev text, only_sent boolean DEFAULT false, keep bigint[] DEFAULT '{}')
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n    integer := 0;
    call uuid;
BEGIN
    FOR call IN
        UPDATE core_device_attempts a
        SET state = CASE a.state WHEN 'queued' THEN 'unsent' ELSE 'lost' END, finished_at = now()
        WHERE a.device = dev AND a.state IN ('queued', 'sent')
          AND NOT (only_sent AND a.state = 'queued') AND NOT (a.id = ANY (keep))
        RETURNING a.call_id
    LOOP
        PERFORM pg_notify('gem_device_result', call::text);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_devices_expire ends the devices whose heartbeat deadline passed: marks them disconnected and ends their
-- open attempts. A socket that closed is not yet a device gone (it may reconnect and say what it is running);
-- the deadline is. Any brain or executor may call it; it returns the devices it expired.
CREATE FUNCTION gem_devices_expire() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    dev text;
BEGIN
    FOR dev IN
        UPDATE core_devices d SET connected = false, hub = NULL, disconnected_at = coalesce(d.disconnected_at, now())
        WHERE d.alive_until <= now()
          AND (d.connected OR EXISTS (SELECT 1 FROM core_device_attempts a WHERE a.device = d.name AND a.state IN ('queued', 'sent')))
        RETURNING d.name
    LOOP
        PERFORM gem_device_attempts_end(dev);
        PERFORM pg_notify('gem_device_changed', dev);
        RETURN NEXT dev;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_device_disconnected records that a hub lost a device's socket (if that registration is still the
-- device's latest): no more calls go to it, and the attempts never handed over are freed for another device
-- at once. Sent attempts wait: the device may reconnect and answer them, or its heartbeat deadline ends them.
CREATE FUNCTION gem_device_disconnected(dev text, reg uuid) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    call uuid;
BEGIN
    UPDATE core_devices SET connected = false, hub = NULL, disconnected_at = now()
    WHERE name = dev AND registration = reg AND connected;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('gem_device_changed', dev);
    FOR call IN
        UPDATE core_device_attempts a SET state = 'unsent', finished_at = now()
        WHERE a.device = dev AND a.state = 'queued'
        RETURNING a.call_id
    LOOP
        PERFORM pg_notify('gem_device_result', call::text);
    END LOOP;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_device_delete removes a device and its tools, ending its open attempts as if it had gone away.
CREATE FUNCTION gem_device_delete(dev text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gem_device_attempts_end(dev);
    DELETE FROM core_devices WHERE name = dev;
    IF FOUND THEN
        PERFORM pg_notify('gem_device_changed', dev);
        RETURN true;
    END IF;
    RETURN false;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Receipts carry the device that ran the call and the devices tried, in the table and in the notification.
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE core_tool_calls c
    SET status = n.status,
        finished_at = n.finished_at,
        error_code = n.error_code,
        error = n.error ->> 'message',
        attempt = greatest(c.attempt, n.attempt),
        worker = coalesce(n.worker, c.worker),
        started_at = coalesce(c.started_at, n.started_at)
    FROM new_receipts n
    WHERE c.id = n.call_id;

    PERFORM pg_notify('gem_receipt', CASE WHEN octet_length(p.payload) > 7900 THEN p.call_id::text ELSE p.payload END)
    FROM (
        SELECT n.id, n.call_id, (jsonb_strip_nulls(jsonb_build_object('device', n.device, 'devices_tried', n.devices_tried))
            || jsonb_build_object(
            'call_id', n.call_id, 'tool', n.tool_name, 'status', n.status, 'result', n.result,
            'effects', n.effects, 'error', n.error, 'summary', n.summary, 'idempotency_key', n.idempotency_key,
            'idempotency_hit', n.idempotency_hit, 'idempotency_of', n.idempotency_of, 'attempt', n.attempt,
            'worker', n.worker, 'duration_ms', n.duration_ms, 'started_at', n.started_at,
            'finished_at', n.finished_at))::text AS payload
        FROM new_receipts n
        ORDER BY n.id
    ) p;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The audit views gain the device columns (at their ends, so CREATE OR REPLACE keeps them).
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
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued';

CREATE OR REPLACE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent,
       r.device, r.devices_tried
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC;

-- Devices as an operator sees them: alive or not, with their tools and open attempts.
CREATE VIEW core_devices_status AS
SELECT d.name, d.owner, gem_device_alive(d) AS alive, d.connected, d.hub, d.connected_at, d.disconnected_at,
       d.last_heartbeat,
       coalesce((SELECT array_agg(t.tool_name ORDER BY t.tool_name) FROM core_device_tools t WHERE t.device = d.name), '{}') AS tools,
       (SELECT count(*) FROM core_device_attempts a WHERE a.device = d.name AND a.state IN ('queued', 'sent')) AS open_attempts
FROM core_devices d;

-- +goose Down
DROP VIEW core_devices_status;
DROP VIEW core_recent_failures;
DROP VIEW core_calls;

-- Every call with its live status: a call without a receipt is running while its River job is.
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
       c.outside_token, c.outside_attempt, c.outside_started_at
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id;

-- Calls that did not succeed in the last 24 hours, newest first.
CREATE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC;

-- +goose StatementBegin
-- Receipts set their calls' final status and tell waiters (LISTEN gem_receipt), one notification per receipt
-- in the order they were inserted. The payload is the receipt as JSON (the fields of registry.Receipt); a
-- receipt too large for a notification (8000 bytes) is announced by its call id alone. Both happen in the
-- receipts' transaction: a waiter never sees a receipt that is not committed.
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE core_tool_calls c
    SET status = n.status,
        finished_at = n.finished_at,
        error_code = n.error_code,
        error = n.error ->> 'message',
        attempt = greatest(c.attempt, n.attempt),
        worker = coalesce(n.worker, c.worker),
        started_at = coalesce(c.started_at, n.started_at)
    FROM new_receipts n
    WHERE c.id = n.call_id;

    PERFORM pg_notify('gem_receipt', CASE WHEN octet_length(p.payload) > 7900 THEN p.call_id::text ELSE p.payload END)
    FROM (
        SELECT n.id, n.call_id, jsonb_build_object(
            'call_id', n.call_id, 'tool', n.tool_name, 'status', n.status, 'result', n.result,
            'effects', n.effects, 'error', n.error, 'summary', n.summary, 'idempotency_key', n.idempotency_key,
            'idempotency_hit', n.idempotency_hit, 'idempotency_of', n.idempotency_of, 'attempt', n.attempt,
            'worker', n.worker, 'duration_ms', n.duration_ms, 'started_at', n.started_at,
            'finished_at', n.finished_at)::text AS payload
        FROM new_receipts n
        ORDER BY n.id
    ) p;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A new call becomes a River job in the same transaction; the notification wakes executors at once instead
-- of at their next poll.
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name), 'gem.tool_call',
            NEW.max_attempts, 'default', 1, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

DROP FUNCTION gem_device_delete(text);
DROP FUNCTION gem_device_disconnected(text, uuid);
DROP FUNCTION gem_devices_expire();
DROP FUNCTION gem_device_attempts_end(text, boolean, bigint[]);
ALTER TABLE core_tool_receipts DROP COLUMN device, DROP COLUMN devices_tried;
ALTER TABLE core_tool_calls DROP COLUMN device, DROP COLUMN device_wait_ms;
DROP TABLE core_device_attempts;
DROP FUNCTION gem_device_attempt_queued();
DROP FUNCTION gem_device_alive(core_devices);
DROP TABLE core_device_tools;
DROP TABLE core_devices;
