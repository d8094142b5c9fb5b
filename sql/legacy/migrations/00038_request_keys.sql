-- Request keys (docs/architecture.md#idempotency): a key a client sends with a call means "this request,
-- once", for every tool and at every door. The call's insert claims (caller, tool, key) in
-- core_request_keys; a later call with the same caller, tool and key within the key's window is a
-- duplicate: it gets no River job and never runs, and its one receipt repeats the first call's (an
-- idempotency hit) as soon as that one has its receipt. The same key with a different input is refused at
-- the insert (SQLSTATE GI001): nothing is made, nothing runs.
--
-- The registry's own modes keep their meaning for calls without a client key: keyed tools still claim
-- their key_field's value in core_idempotency_keys, at the executor.

-- +goose Up
ALTER TABLE core_tool_calls ADD COLUMN idempotency_of uuid;
COMMENT ON COLUMN core_tool_calls.idempotency_of IS
    'set on a duplicate request: the call holding its (caller, tool, idempotency_key); its receipt repeats that call''s';
CREATE INDEX core_tool_calls_idempotency_of ON core_tool_calls (idempotency_of) WHERE idempotency_of IS NOT NULL;

-- Every call with its live status, and the call whose request it repeats.
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
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried, c.parent_id, c.idempotency_of
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued';

-- Where a tool's secret input properties are (registry.Tool.SecretPaths), written by the executors with the
-- rest of core_tools: a request's fingerprint leaves them out, sealed or clear.
ALTER TABLE core_tools ADD COLUMN secret_paths jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(secret_paths) = 'array');

-- The keys clients sent, one row per caller, tool and key: the call that holds it and the fingerprint of
-- its input. A row older than the window (gem_idempotency_window) is taken over by the next call with the
-- same key; the executors delete such rows every minute.
CREATE TABLE core_request_keys (
    requested_by text        NOT NULL,
    tool_name    text        NOT NULL,
    key_hash     bytea       NOT NULL,
    key          text        NOT NULL,
    fingerprint  bytea       NOT NULL,
    call_id      uuid        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (requested_by, tool_name, key_hash)
);
CREATE INDEX core_request_keys_call ON core_request_keys (call_id);
CREATE INDEX core_request_keys_created_at ON core_request_keys (created_at);

-- +goose StatementBegin
-- gem_idempotency_window is how long a request key holds: the setting gem.idempotency_window (an interval,
-- e.g. ALTER DATABASE gem SET gem.idempotency_window = '72 hours'), 24 hours when unset.
CREATE FUNCTION gem_idempotency_window() RETURNS interval LANGUAGE plpgsql STABLE AS $$
DECLARE
    setting text := nullif(current_setting('gem.idempotency_window', true), '');
BEGIN
    IF setting IS NULL THEN
        RETURN interval '24 hours';
    END IF;
    RETURN setting::interval;
EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_parameter_value THEN
    RAISE EXCEPTION 'gem.idempotency_window is %, which is not an interval (like ''24 hours'')', quote_literal(setting)
        USING ERRCODE = 'invalid_parameter_value';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_without_secrets is v with the values at paths (arrays of property names, "*" for every element of an
-- array) and every sealed envelope ({"$gem_secret": …}) replaced by "[secret]".
CREATE FUNCTION gem_without_secrets(v jsonb, paths jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    k    text;
    e    jsonb;
    sub  jsonb;
    outv jsonb;
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        IF v ? '$gem_secret' AND (SELECT count(*) FROM jsonb_object_keys(v)) = 1 THEN
            RETURN '"[secret]"';
        END IF;
        outv := '{}';
        FOR k, e IN SELECT * FROM jsonb_each(v) LOOP
            SELECT jsonb_agg(p - 0) INTO sub FROM jsonb_array_elements(paths) p WHERE p ->> 0 = k;
            IF EXISTS (SELECT 1 FROM jsonb_array_elements(sub) t WHERE t = '[]') THEN
                outv := outv || jsonb_build_object(k, '[secret]');
            ELSE
                outv := outv || jsonb_build_object(k, gem_without_secrets(e, coalesce(sub, '[]')));
            END IF;
        END LOOP;
        RETURN outv;
    WHEN 'array' THEN
        SELECT jsonb_agg(p - 0) INTO sub FROM jsonb_array_elements(paths) p WHERE p ->> 0 = '*';
        RETURN (SELECT coalesce(jsonb_agg(gem_without_secrets(x.e, coalesce(sub, '[]')) ORDER BY x.i), '[]')
                FROM jsonb_array_elements(v) WITH ORDINALITY x(e, i));
    ELSE
        RETURN v;
    END CASE;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_input_fingerprint is what makes two requests the same: the SHA-256 of the input as jsonb text (keys
-- ordered, spacing normalised), without the tool's secret values, so a secret is never hashed and a sealed
-- one (a new nonce each time) does not make a retry look different.
CREATE FUNCTION gem_input_fingerprint(tool text, input jsonb) RETURNS bytea LANGUAGE plpgsql STABLE AS $$
DECLARE
    paths jsonb := coalesce((SELECT secret_paths FROM core_tools WHERE name = tool), '[]');
BEGIN
    IF paths = '[]' AND position('$gem_secret' IN input::text) = 0 THEN
        RETURN sha256(convert_to(input::text, 'UTF8'));
    END IF;
    RETURN sha256(convert_to(gem_without_secrets(input, paths)::text, 'UTF8'));
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_request_key_claim claims a call's request key, or returns the call holding it within its window.
-- A call holding it uncommitted makes the claim wait until that call's transaction ends. The holder's key
-- row stays locked (ON CONFLICT DO UPDATE locks the row it finds, updated or not) until this transaction
-- ends, which orders this insert against the holder's receipt (gem_receipts_inserted locks it too): one of
-- the two writes the duplicate's receipt. The same key with a different input raises GI001.
CREATE FUNCTION gem_request_key_claim(call uuid, caller text, tool text, request_key text, input jsonb) RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    fp      bytea := gem_input_fingerprint(tool, input);
    h       bytea := sha256(convert_to(request_key, 'UTF8'));
    claimed uuid;
    holder  uuid;
    held_fp bytea;
BEGIN
    INSERT INTO core_request_keys AS k (requested_by, tool_name, key_hash, key, fingerprint, call_id)
    VALUES (caller, tool, h, request_key, fp, call)
    ON CONFLICT (requested_by, tool_name, key_hash) DO UPDATE
        SET key = EXCLUDED.key, fingerprint = EXCLUDED.fingerprint, call_id = EXCLUDED.call_id, created_at = now()
        WHERE k.created_at < now() - gem_idempotency_window()
    RETURNING k.call_id INTO claimed;
    IF claimed IS NOT NULL THEN
        RETURN NULL;
    END IF;
    SELECT k.call_id, k.fingerprint INTO holder, held_fp
    FROM core_request_keys k WHERE k.requested_by = caller AND k.tool_name = tool AND k.key_hash = h;
    IF held_fp <> fp THEN
        RAISE EXCEPTION 'idempotency key % of caller % was used for call % of % with a different input',
                quote_literal(request_key), quote_literal(caller), holder, tool
            USING ERRCODE = 'GI001',
                  DETAIL = json_build_object('call_id', holder, 'tool', tool, 'idempotency_key', request_key)::text,
                  HINT = 'a retry sends the same input with the same key; a new request needs a new key';
    END IF;
    RETURN holder;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_call_enqueue as in 00032, with the request key: a duplicate request is stored with idempotency_of
-- and no job, and needs no approval (it never runs).
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    prio integer := 1;
    st record;
BEGIN
    IF NEW.requested_by IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        NEW.requested_by := 'sql:' || session_user;
    END IF;
    NEW.idempotency_of := NULL;
    IF NEW.idempotency_key IS NOT NULL THEN
        NEW.idempotency_of := gem_request_key_claim(NEW.id, NEW.requested_by, NEW.tool_name, NEW.idempotency_key, NEW.input);
        IF NEW.idempotency_of IS NOT NULL THEN
            NEW.status := 'queued';
            NEW.job_id := NULL;
            RETURN NEW;
        END IF;
    END IF;
    IF NEW.agent IS NOT NULL AND EXISTS (SELECT 1 FROM agent_skills WHERE call_max_attempts IS NOT NULL OR call_priority IS NOT NULL) THEN
        SELECT * INTO st FROM gem_agent_call_settings(NEW.agent, coalesce(NEW.user_id, ''), NEW.tool_name);
        NEW.max_attempts := least(NEW.max_attempts, coalesce(st.max_attempts, NEW.max_attempts));
        prio := coalesce(st.priority, 1);
    END IF;
    -- The common case costs one query: no tool requiring approval by that name, and no policy.
    IF (EXISTS (SELECT 1 FROM core_tools t WHERE t.name = NEW.tool_name AND t.approval_required)
        OR EXISTS (SELECT 1 FROM core_approval_policies))
       AND EXISTS (SELECT 1 FROM gem_approval_needed(NEW.tool_name, NEW.agent)) THEN
        NEW.status := 'awaiting_approval';
        NEW.job_id := NULL;
        RETURN NEW;
    END IF;
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state, metadata)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', prio, 'available', gem_trace_metadata(NEW.traceparent, NEW.tracestate))
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_hit_receipts writes the receipts of the duplicates of calls that now have theirs: each repeats its
-- holder's status, result, error and summary, with idempotency_hit and idempotency_of, and effects of its
-- own (none: it did not run).
CREATE FUNCTION gem_hit_receipts(holders uuid[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO core_tool_receipts (call_id, tool_name, status, result, effects, error, error_code, summary,
        idempotency_key, idempotency_hit, idempotency_of, attempt, duration_ms, started_at, finished_at)
    SELECT d.id, d.tool_name, r.status, r.result, '{"db_writes": []}', r.error, r.error_code, r.summary,
        d.idempotency_key, true, r.call_id, 0, 0, now(), now()
    FROM core_tool_calls d
    JOIN core_tool_receipts r ON r.call_id = d.idempotency_of
    WHERE d.idempotency_of = ANY(holders)
      AND NOT EXISTS (SELECT 1 FROM core_tool_receipts x WHERE x.call_id = d.id)
    ORDER BY d.id
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A duplicate inserted after its holder's receipt has its own at once.
CREATE FUNCTION gem_call_duplicate() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    PERFORM gem_hit_receipts(ARRAY[NEW.idempotency_of]);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER core_tool_calls_duplicate AFTER INSERT ON core_tool_calls
    FOR EACH ROW WHEN (NEW.idempotency_of IS NOT NULL) EXECUTE FUNCTION gem_call_duplicate();

-- +goose StatementBegin
-- gem_receipts_inserted as in 00030, and: when a call holding a request key gets its receipt, the
-- duplicates waiting for it get theirs. Locking the holders' key rows first orders this against a
-- duplicate being inserted (gem_request_key_claim): a duplicate that committed first is found here; one
-- that waited for this transaction finds the holder's receipt itself.
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keyed uuid[];
BEGIN
    WITH done AS (
        UPDATE core_tool_calls c
        SET status = n.status,
            finished_at = n.finished_at,
            error_code = n.error_code,
            error = n.error ->> 'message',
            attempt = greatest(c.attempt, n.attempt),
            worker = coalesce(n.worker, c.worker),
            started_at = coalesce(c.started_at, n.started_at),
            limited_since = NULL
        FROM new_receipts n
        WHERE c.id = n.call_id
        RETURNING c.id, c.idempotency_key IS NOT NULL AND c.idempotency_of IS NULL AS holds_key
    )
    SELECT array_agg(id ORDER BY id) FILTER (WHERE holds_key) INTO keyed FROM done;

    IF keyed IS NOT NULL THEN
        PERFORM 1 FROM core_request_keys k WHERE k.call_id = ANY(keyed) ORDER BY k.call_id FOR NO KEY UPDATE;
        PERFORM gem_hit_receipts(keyed);
    END IF;

    PERFORM pg_notify('gem_receipt', CASE WHEN octet_length(p.payload) > 7900 THEN p.call_id::text ELSE p.payload END)
    FROM (
        SELECT n.id, n.call_id, (jsonb_strip_nulls(jsonb_build_object('device', n.device, 'devices_tried', n.devices_tried,
            'limit_wait_ms', n.limit_wait_ms))
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

-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION gem_call_duplicate() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
-- CREATE OR REPLACE resets a function's settings: the receipt trigger keeps its custom plans (00034).
ALTER FUNCTION gem_receipts_inserted() SET plan_cache_mode = force_custom_plan;

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE core_tool_calls c
    SET status = n.status,
        finished_at = n.finished_at,
        error_code = n.error_code,
        error = n.error ->> 'message',
        attempt = greatest(c.attempt, n.attempt),
        worker = coalesce(n.worker, c.worker),
        started_at = coalesce(c.started_at, n.started_at),
        limited_since = NULL
    FROM new_receipts n
    WHERE c.id = n.call_id;

    PERFORM pg_notify('gem_receipt', CASE WHEN octet_length(p.payload) > 7900 THEN p.call_id::text ELSE p.payload END)
    FROM (
        SELECT n.id, n.call_id, (jsonb_strip_nulls(jsonb_build_object('device', n.device, 'devices_tried', n.devices_tried,
            'limit_wait_ms', n.limit_wait_ms))
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    prio integer := 1;
    st record;
BEGIN
    IF NEW.requested_by IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        NEW.requested_by := 'sql:' || session_user;
    END IF;
    IF NEW.agent IS NOT NULL AND EXISTS (SELECT 1 FROM agent_skills WHERE call_max_attempts IS NOT NULL OR call_priority IS NOT NULL) THEN
        SELECT * INTO st FROM gem_agent_call_settings(NEW.agent, coalesce(NEW.user_id, ''), NEW.tool_name);
        NEW.max_attempts := least(NEW.max_attempts, coalesce(st.max_attempts, NEW.max_attempts));
        prio := coalesce(st.priority, 1);
    END IF;
    IF (EXISTS (SELECT 1 FROM core_tools t WHERE t.name = NEW.tool_name AND t.approval_required)
        OR EXISTS (SELECT 1 FROM core_approval_policies))
       AND EXISTS (SELECT 1 FROM gem_approval_needed(NEW.tool_name, NEW.agent)) THEN
        NEW.status := 'awaiting_approval';
        NEW.job_id := NULL;
        RETURN NEW;
    END IF;
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state, metadata)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', prio, 'available', gem_trace_metadata(NEW.traceparent, NEW.tracestate))
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
ALTER FUNCTION gem_receipts_inserted() SET plan_cache_mode = force_custom_plan;
DROP TRIGGER core_tool_calls_duplicate ON core_tool_calls;
DROP FUNCTION gem_call_duplicate();
DROP FUNCTION gem_hit_receipts(uuid[]);
DROP FUNCTION gem_request_key_claim(uuid, text, text, text, jsonb);
DROP FUNCTION gem_input_fingerprint(text, jsonb);
DROP FUNCTION gem_without_secrets(jsonb, jsonb);
DROP FUNCTION gem_idempotency_window();
-- +goose StatementBegin
DO $$
BEGIN
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
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried, c.parent_id
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued';
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        GRANT SELECT ON core_calls TO gem_caller;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        GRANT SELECT ON core_calls TO gem_auditor;
    END IF;
END
$$;
-- +goose StatementEnd
DROP TABLE core_request_keys;
ALTER TABLE core_tools DROP COLUMN secret_paths;
ALTER TABLE core_tool_calls DROP COLUMN idempotency_of;
