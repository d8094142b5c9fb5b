-- The core's schema: calls, receipts, callers, devices, approvals, limits, the brain's runs and sessions, agents
-- and skills (their tables; the built-in rows are the packs'), as the legacy migrations (sql/legacy/migrations)
-- left it when the packs' lines began.

-- Written from pg_dump of a database the legacy migrations made (their history and reasons are in
-- sql/legacy/migrations and git log). A database made before the lines began records this migration as applied
-- without running it (gemsql.Migrate adopts it); sql/schema.sql is the schema every line leaves.

-- +goose Up

-- Functions come before the tables their bodies read, as pg_dump orders them.
SET LOCAL check_function_bodies = false;

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

-- +goose StatementBegin
CREATE FUNCTION gem_agent_call_settings(agent_slug text, for_user text, tool_name text, OUT enabled boolean, OUT timeout_ms integer, OUT max_attempts integer, OUT priority integer) RETURNS record
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    SELECT count(*) > 0, min(a_s.call_timeout_ms), min(a_s.call_max_attempts), min(a_s.call_priority)
    INTO enabled, timeout_ms, max_attempts, priority
    FROM gem_agent_skills(agent_slug, for_user) g
    JOIN skills s ON s.id = g.skill_id
    JOIN agents a ON a.slug = agent_slug
    JOIN agent_skills a_s ON a_s.agent_id = a.id AND a_s.skill_id = g.skill_id
    WHERE g.available AND gem_agent_call_settings.tool_name = ANY (s.tools);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_agent_call_timeout(agent_slug text, for_user text, tool_name text) RETURNS integer
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN (SELECT s.timeout_ms FROM gem_agent_call_settings(agent_slug, for_user, tool_name) s);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_agent_may_call(agent_slug text, for_user text, tool_name text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM gem_agent_tools(agent_slug, for_user) t WHERE t.tool = tool_name);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_agent_skills(agent_slug text, for_user text) RETURNS TABLE(skill_id uuid, slug text, available boolean, priority integer)
    LANGUAGE sql STABLE
    AS $$
    WITH RECURSIVE assigned AS (
        SELECT s.id, s.slug, a_s.priority,
               a_s.enabled AND (a_s.allowed_users IS NULL OR for_user = ANY (a_s.allowed_users)) AS usable
        FROM agents a
        JOIN agent_skills a_s ON a_s.agent_id = a.id
        JOIN skills s ON s.id = a_s.skill_id
        WHERE a.slug = agent_slug AND a.enabled
    ),
    -- unavailable: assigned skills that are not usable, or that require (transitively) a skill that is not
    -- assigned or not usable.
    blocked (id) AS (
        SELECT id FROM assigned WHERE NOT usable
        UNION
        SELECT d.skill_id FROM skill_dependencies d
        WHERE d.skill_id IN (SELECT id FROM assigned)
          AND d.requires_skill_id NOT IN (SELECT id FROM assigned)
        UNION
        SELECT d.skill_id FROM skill_dependencies d JOIN blocked b ON d.requires_skill_id = b.id
    )
    SELECT a.id, a.slug, a.id NOT IN (SELECT id FROM blocked), a.priority FROM assigned a
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_agent_tools(agent_slug text, for_user text) RETURNS TABLE(tool text)
    LANGUAGE sql STABLE
    AS $$
    SELECT DISTINCT unnest(s.tools)
    FROM gem_agent_skills(agent_slug, for_user) g JOIN skills s ON s.id = g.skill_id
    WHERE g.available
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_approval_needed(tool text, agent text) RETURNS TABLE(required_by text, expires_ms integer)
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    t core_tools;
    perms text[];
BEGIN
    SELECT * INTO t FROM core_tools WHERE name = tool;
    IF NOT FOUND THEN
        -- A device's own tool: its registered contract says.
        SELECT tool, coalesce(array(SELECT jsonb_array_elements_text(d.contract -> 'permissions')), '{}'),
               coalesce((d.contract -> 'approval' ->> 'required')::boolean, false),
               coalesce((d.contract -> 'approval' ->> 'expires_after_ms')::integer, 86400000)
        INTO t.name, t.permissions, t.approval_required, t.approval_expires_ms
        FROM core_device_tools d WHERE d.tool_name = tool LIMIT 1;
    END IF;
    IF t.approval_required THEN
        RETURN QUERY SELECT 'tool'::text, t.approval_expires_ms;
        RETURN;
    END IF;
    IF t.name IS NULL OR NOT EXISTS (SELECT 1 FROM core_approval_policies) THEN
        RETURN;
    END IF;
    perms := t.permissions;
    RETURN QUERY
        SELECT 'policy ' || p.id || ': ' || p.permission, p.expires_ms
        FROM core_approval_policies p
        WHERE (NOT p.agents_only OR agent IS NOT NULL)
          AND EXISTS (SELECT 1 FROM unnest(perms) x WHERE gem_permission_matches(p.permission, x))
        ORDER BY p.expires_ms, p.id
        LIMIT 1;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_approval_receipt(call uuid, code text, message text, details jsonb) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, started_at, finished_at)
    SELECT c.id, c.tool_name, 'failed', jsonb_build_object('code', code, 'message', message, 'details', details),
           code, now(), now()
    FROM core_tool_calls c WHERE c.id = call
    ON CONFLICT (call_id) DO NOTHING
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_approvals_expire() RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    a core_approvals;
    n integer := 0;
BEGIN
    FOR a IN SELECT * FROM core_approvals WHERE decision IS NULL AND expires_at <= now()
             ORDER BY expires_at FOR UPDATE SKIP LOCKED LOOP
        UPDATE core_approvals SET decision = 'expired', decided_at = now() WHERE call_id = a.call_id;
        PERFORM gem_approval_receipt(a.call_id, 'approval_expired',
            'no decision was made before the approval expired at ' || a.expires_at,
            jsonb_build_object('required_by', a.required_by, 'expires_at', a.expires_at));
        PERFORM pg_notify('gem_approval', a.call_id::text);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_call_awaits_approval() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO core_approvals (call_id, required_by, expires_at)
    SELECT NEW.id, n.required_by, now() + make_interval(secs => n.expires_ms / 1000.0)
    FROM gem_approval_needed(NEW.tool_name, NEW.agent) n;
    PERFORM pg_notify('gem_approval', NEW.id::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_call_cancel(call uuid, canceller text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    c core_tool_calls;
    g core_callers;
    a core_approvals;
    j river_job;
BEGIN
    IF canceller IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'core_tool_calls'::regclass), 'MEMBER') THEN
        canceller := 'sql:' || session_user;
    END IF;
    SELECT * INTO c FROM core_tool_calls WHERE id = call;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no call %', call USING ERRCODE = 'GA006';
    END IF;
    SELECT * INTO g FROM core_callers WHERE name = canceller;
    IF NOT FOUND OR g.revoked_at IS NOT NULL OR c.requested_by IS DISTINCT FROM canceller THEN
        RAISE EXCEPTION 'caller % may not cancel call %: only the caller that made it may', canceller, call
            USING ERRCODE = 'GA005';
    END IF;
    -- The same order of locks as gem_call_decide (the approval, then the call) and as River (the job).
    SELECT * INTO a FROM core_approvals WHERE call_id = call FOR UPDATE;
    IF FOUND AND a.decision IS NULL THEN
        UPDATE core_approvals SET decision = 'cancelled', decided_by = canceller, decided_at = now(),
            reason = 'cancelled by its caller'
        WHERE call_id = call;
        PERFORM gem_approval_receipt(call, 'cancelled', 'cancelled by ' || canceller || ' before it ran',
            jsonb_build_object('cancelled_by', canceller));
        PERFORM pg_notify('gem_approval', call::text);
        RETURN 'failed';
    END IF;
    SELECT * INTO c FROM core_tool_calls WHERE id = call;
    IF c.status <> 'queued' OR c.job_id IS NULL THEN
        RETURN c.status; -- awaiting a decision made meanwhile, finished, or a repeat that never runs
    END IF;
    SELECT * INTO j FROM river_job WHERE id = c.job_id FOR UPDATE;
    IF NOT FOUND OR j.state NOT IN ('available', 'scheduled', 'retryable', 'pending') THEN
        SELECT status INTO c.status FROM core_calls WHERE id = call;
        RETURN c.status;
    END IF;
    -- The receipt first, in the safety net's words when an earlier attempt may have acted; then the job,
    -- whose trigger finds the receipt written.
    PERFORM gem_job_failed_receipt(j, 'cancelled', 'cancelled by ' || canceller
        || CASE WHEN j.attempt = 0 THEN ' before it ran' ELSE ' while it waited to be tried again' END);
    UPDATE river_job SET state = 'cancelled', finalized_at = now() WHERE id = j.id;
    RETURN 'failed';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_call_decide(call uuid, approve boolean, reason text, decider text DEFAULT NULL::text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    a core_approvals;
    c core_tool_calls;
    g core_callers;
    job bigint;
BEGIN
    IF decider IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'core_tool_calls'::regclass), 'MEMBER') THEN
        decider := 'sql:' || session_user;
    END IF;
    SELECT * INTO g FROM core_callers WHERE name = decider;
    IF NOT FOUND OR g.revoked_at IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM unnest(g.permissions) p WHERE gem_permission_matches(p, 'approve')) THEN
        RAISE EXCEPTION 'caller % may not decide approvals: it lacks permission approve', decider
            USING ERRCODE = 'GA004';
    END IF;
    SELECT * INTO a FROM core_approvals WHERE call_id = call FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'call % does not await approval', call USING ERRCODE = 'GA003';
    END IF;
    IF a.decision = 'expired' THEN
        RAISE EXCEPTION 'the approval of call % expired at %, undecided', call, a.expires_at USING ERRCODE = 'GA002';
    END IF;
    IF a.decision IS NOT NULL THEN
        RAISE EXCEPTION 'call % was already % by % at %', call, a.decision, coalesce(a.decided_by, 'GEM'), a.decided_at
            USING ERRCODE = 'GA001';
    END IF;
    IF a.expires_at <= now() THEN
        RAISE EXCEPTION 'the approval of call % expired at %', call, a.expires_at USING ERRCODE = 'GA002';
    END IF;
    UPDATE core_approvals SET decision = CASE WHEN approve THEN 'approved' ELSE 'rejected' END,
        decided_by = decider, reason = gem_call_decide.reason, decided_at = now()
    WHERE call_id = call;
    IF NOT approve THEN
        PERFORM gem_approval_receipt(call, 'rejected', 'rejected by ' || decider || coalesce(': ' || reason, ''),
            jsonb_build_object('decided_by', decider, 'reason', reason));
        PERFORM pg_notify('gem_approval', call::text);
        RETURN 'failed';
    END IF;
    SELECT * INTO c FROM core_tool_calls WHERE id = call FOR NO KEY UPDATE;
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state, metadata)
    VALUES (CASE WHEN c.device IS NULL THEN jsonb_build_object('call_id', c.id, 'tool_name', c.tool_name)
                 ELSE jsonb_build_object('call_id', c.id, 'tool_name', c.tool_name, 'device', c.device) END,
            'gem.tool_call', c.max_attempts, 'default', 1, 'available', gem_trace_metadata(c.traceparent, c.tracestate))
    RETURNING id INTO job;
    UPDATE core_tool_calls SET status = 'queued', job_id = job WHERE id = call;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    PERFORM pg_notify('gem_approval', call::text);
    RETURN 'queued';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_call_duplicate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM gem_hit_receipts(ARRAY[NEW.idempotency_of]);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_call_enqueue() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;
-- +goose StatementEnd

CREATE TABLE core_callers (
    name text NOT NULL,
    kind text NOT NULL,
    permissions text[] DEFAULT '{}'::text[] NOT NULL,
    agents text[],
    token_sha256 bytea,
    note text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT core_callers_agents_check CHECK (((array_position(agents, NULL::text) IS NULL) AND (cardinality(agents) <= 200))),
    CONSTRAINT core_callers_check CHECK (((token_sha256 IS NULL) OR (kind = 'token'::text))),
    CONSTRAINT core_callers_kind_check CHECK ((kind = ANY (ARRAY['token'::text, 'sql'::text, 'service'::text]))),
    CONSTRAINT core_callers_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'::text)),
    CONSTRAINT core_callers_note_check CHECK ((length(note) <= 1000)),
    CONSTRAINT core_callers_permissions_check CHECK (((array_position(permissions, NULL::text) IS NULL) AND (cardinality(permissions) <= 200))),
    CONSTRAINT core_callers_sql_named CHECK (((kind = 'sql'::text) = (name ~~ 'sql:%'::text)))
);

-- +goose StatementBegin
CREATE FUNCTION gem_caller_grant(caller text, permissions text[], agents text[] DEFAULT NULL::text[]) RETURNS core_callers
    LANGUAGE plpgsql
    AS $$
DECLARE
    row core_callers;
BEGIN
    INSERT INTO core_callers AS c (name, kind, permissions, agents)
    VALUES (caller, CASE WHEN caller LIKE 'sql:%' THEN 'sql' ELSE 'token' END, permissions, agents)
    ON CONFLICT (name) DO UPDATE SET permissions = EXCLUDED.permissions, agents = EXCLUDED.agents, updated_at = now()
    RETURNING * INTO row;
    RETURN row;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_capture_write() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    call text := coalesce(current_setting('gem.call_id', true), '');
    pair text;
    k    text;
    n    integer;
    rid  text;
    old_row jsonb;
BEGIN
    IF call = '' THEN
        RETURN NULL;
    END IF;
    pair := TG_TABLE_NAME || ' ' || lower(TG_OP);
    k := 'gem.w' || md5(pair);
    n := coalesce(nullif(current_setting(k, true), '')::integer, 0);
    IF n = 0 THEN
        PERFORM set_config('gem.writes', coalesce(current_setting('gem.writes', true), '') || pair || E'\x1e', true);
    END IF;
    PERFORM set_config(k, (n + 1)::text, true);
    IF TG_OP = 'INSERT' THEN
        IF n < 100 THEN
            PERFORM set_config(k || 'i', coalesce(current_setting(k || 'i', true), '') || coalesce(to_jsonb(NEW) ->> 'id', '') || E'\x1e', true);
        END IF;
        RETURN NULL;
    END IF;
    old_row := to_jsonb(OLD);
    rid := old_row ->> 'id';
    IF n < 100 THEN
        PERFORM set_config(k || 'i', coalesce(current_setting(k || 'i', true), '') || coalesce(rid, '') || E'\x1e', true);
    END IF;
    INSERT INTO core_undo_log (call_id, table_name, op, row_id, before) VALUES (call::uuid, TG_TABLE_NAME, lower(TG_OP), rid, old_row);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_check_max_attempts() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.max_attempts NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'max_attempts must be between 1 and 100, not %', NEW.max_attempts
            USING ERRCODE = 'check_violation', TABLE = 'core_tool_calls', COLUMN = 'max_attempts',
                  CONSTRAINT = 'core_tool_calls_max_attempts_check',
                  HINT = 'max_attempts is how many times the call may be run (5 when left out)';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_collect_writes() RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    pair   text;
    k      text;
    writes jsonb := '[]';
BEGIN
    FOREACH pair IN ARRAY coalesce(string_to_array(rtrim(coalesce(current_setting('gem.writes', true), ''), E'\x1e'), E'\x1e'), '{}') LOOP
        CONTINUE WHEN pair = '';
        k := 'gem.w' || md5(pair);
        writes := writes || jsonb_build_array(jsonb_build_object(
            'table', split_part(pair, ' ', 1),
            'op', split_part(pair, ' ', 2),
            'count', current_setting(k, true)::integer,
            'ids', to_jsonb(array_remove(string_to_array(rtrim(current_setting(k || 'i', true), E'\x1e'), E'\x1e'), ''))));
        PERFORM set_config(k, '0', true);
        PERFORM set_config(k || 'i', '', true);
    END LOOP;
    PERFORM set_config('gem.writes', '', true);
    RETURN writes;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_current_call() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$
    SELECT nullif(current_setting('gem.call_id', true), '')::uuid
$$;
-- +goose StatementEnd

CREATE TABLE core_devices (
    name text NOT NULL,
    owner text DEFAULT ''::text NOT NULL,
    token_hash bytea NOT NULL,
    registration uuid,
    hub text,
    connected boolean DEFAULT false NOT NULL,
    connected_at timestamp with time zone,
    disconnected_at timestamp with time zone,
    last_heartbeat timestamp with time zone,
    alive_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    permissions text[] DEFAULT '{*}'::text[] NOT NULL,
    CONSTRAINT core_devices_name_check CHECK ((name ~ '^[a-z][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT core_devices_owner_check CHECK ((length(owner) <= 200)),
    CONSTRAINT core_devices_permissions_check CHECK (((array_position(permissions, NULL::text) IS NULL) AND (cardinality(permissions) <= 200)))
);

-- +goose StatementBegin
CREATE FUNCTION gem_device_alive(d core_devices) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT d.connected AND d.alive_until > now()
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_device_attempt_queued() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('gem_device_dispatch', NEW.device);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_device_attempts_end(dev text, only_sent boolean DEFAULT false, keep bigint[] DEFAULT '{}'::bigint[]) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    n    integer := 0;
    call uuid;
BEGIN
    FOR call IN
        UPDATE core_device_attempts a
        SET state = CASE a.state WHEN 'queued' THEN 'unsent' ELSE 'lost' END, finished_at = now()
        WHERE a.device = dev AND a.state IN ('queued', 'sent')
          AND NOT (only_sent AND a.state = 'queued') AND NOT (a.id = ANY (coalesce(keep, '{}')))
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
CREATE FUNCTION gem_device_delete(dev text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
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
CREATE FUNCTION gem_device_disconnected(dev text, reg uuid) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
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
CREATE FUNCTION gem_devices_expire() RETURNS SETOF text
    LANGUAGE plpgsql
    AS $$
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
CREATE FUNCTION gem_ensure_month(month timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    first timestamptz := date_trunc('month', month, 'UTC');
    t text;
    part text;
    made integer := 0;
BEGIN
    -- Two executors creating the same month would otherwise race between the check and the CREATE.
    PERFORM pg_advisory_xact_lock(hashtextextended('gem.partitions', 0));
    FOREACH t IN ARRAY gem_partitioned_tables() LOOP
        part := t || '_p' || to_char(first AT TIME ZONE 'UTC', 'YYYY_MM');
        CONTINUE WHEN to_regclass(quote_ident(part)) IS NOT NULL;
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)%s', part, t,
                       gem_uuid_v7_floor(first), gem_uuid_v7_floor(first + interval '1 month'),
                       CASE WHEN t = 'core_tool_calls' THEN ' WITH (fillfactor = 80)' ELSE '' END);
        PERFORM gem_name_partition_keys(part);
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_executor_lock_key(executor_id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT hashtextextended('gem.executor:' || executor_id, 0)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_hit_receipts(holders uuid[]) RETURNS void
    LANGUAGE sql
    AS $$
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
CREATE FUNCTION gem_idempotency_window() RETURNS interval
    LANGUAGE plpgsql STABLE
    AS $$
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
CREATE FUNCTION gem_input_fingerprint(tool text, input jsonb) RETURNS bytea
    LANGUAGE plpgsql STABLE
    AS $_$
DECLARE
    paths jsonb := coalesce((SELECT secret_paths FROM core_tools WHERE name = tool), '[]');
BEGIN
    IF paths = '[]' AND position('$gem_secret' IN input::text) = 0 THEN
        RETURN sha256(convert_to(input::text, 'UTF8'));
    END IF;
    RETURN sha256(convert_to(gem_without_secrets(input, paths)::text, 'UTF8'));
END
$_$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_job_call_id(args jsonb) RETURNS uuid
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT CASE WHEN args ->> 'call_id' ~ '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$'
                THEN (args ->> 'call_id')::uuid END
$_$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_job_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM gem_job_failed_receipt(OLD, 'job_deleted', 'the call''s job was deleted before it finished');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_job_failed_receipt(job river_job, code text, message text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    cid uuid := gem_job_call_id(job.args);
    last_error text := job.errors[array_upper(job.errors, 1)] ->> 'error';
    acted text;
    details jsonb;
    dev text;
BEGIN
    IF cid IS NULL OR EXISTS (SELECT 1 FROM core_tool_receipts WHERE call_id = cid)
       OR NOT EXISTS (SELECT 1 FROM core_tool_calls WHERE id = cid) THEN
        RETURN;
    END IF;
    PERFORM 1 FROM core_device_attempts WHERE call_id = cid AND state IN ('queued', 'sent') FOR UPDATE;
    details := jsonb_build_object('job_id', job.id, 'job_state', job.state, 'attempt', job.attempt, 'last_error', last_error);
    SELECT CASE WHEN c.outside_token IS NOT NULL THEN 'it had started effects outside the database'
                ELSE 'device ' || a.device || ' was handed it (attempt ' || a.state || ')' END
    INTO acted
    FROM core_tool_calls c
    LEFT JOIN LATERAL (SELECT d.device, d.state FROM core_device_attempts d
                       WHERE d.call_id = c.id AND d.state NOT IN ('queued', 'unsent') ORDER BY d.id DESC LIMIT 1) a ON true
    WHERE c.id = cid AND (c.outside_token IS NOT NULL OR a.device IS NOT NULL);
    IF acted IS NOT NULL THEN
        details := details || jsonb_build_object('ended_by', code);
        message := message || ', and ' || acted || ', so whether it acted is unknown; it is not run again';
        code := 'outcome_unknown';
    END IF;
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, attempt, worker, started_at, finished_at)
    SELECT cid, c.tool_name, 'failed', jsonb_build_object('code', code, 'message', message, 'details', details),
           code, job.attempt, job.attempted_by[array_upper(job.attempted_by, 1)],
           coalesce(job.attempted_at, c.created_at), now()
    FROM core_tool_calls c WHERE c.id = cid
    ON CONFLICT (call_id) DO NOTHING;
    FOR dev IN
        UPDATE core_device_attempts SET state = 'abandoned', finished_at = now()
        WHERE call_id = cid AND state IN ('queued', 'sent')
        RETURNING device
    LOOP
        PERFORM pg_notify('gem_device_dispatch', dev);
        PERFORM pg_notify('gem_device_result', cid::text);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_job_finished() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    CASE NEW.state
    WHEN 'discarded' THEN
        PERFORM gem_job_failed_receipt(NEW, 'job_discarded',
            'the call''s job was discarded after ' || NEW.attempt || ' attempts without a receipt');
    WHEN 'cancelled' THEN
        PERFORM gem_job_failed_receipt(NEW, 'job_cancelled', 'the call''s job was cancelled before it finished');
    ELSE
        PERFORM gem_job_failed_receipt(NEW, 'job_completed_without_receipt',
            'the call''s job was marked completed by something other than the executor');
    END CASE;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_name_partition_keys(part text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF part LIKE 'core\_tool\_receipts\_p%' THEN
        EXECUTE format('ALTER INDEX %I RENAME TO %I', part || '_pkey', part || '_one_per_call');
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_partitioned_tables() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ARRAY['core_tool_calls', 'core_tool_receipts', 'brain_runs', 'brain_turns', 'brain_run_programs', 'brain_run_events']
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_permission_matches(pattern text, permission text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT pattern = '*' OR pattern = permission
        OR (right(pattern, 1) = '*' AND starts_with(permission, left(pattern, -1)))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_queued_turns_start(new_owner text, lease interval, lim integer) RETURNS TABLE(run_id uuid, run_owner text)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    RETURN QUERY
    WITH q AS (
        SELECT r.id, r.conversation_id FROM brain_runs r
        WHERE r.status = 'queued' AND NOT EXISTS (SELECT 1 FROM brain_runs e
            WHERE e.status = 'queued' AND e.conversation_id = r.conversation_id AND e.id < r.id)
        ORDER BY r.id LIMIT lim FOR UPDATE SKIP LOCKED),
    s AS (UPDATE agent_sessions x SET turn_run = q.id, turn_since = now() FROM q
        WHERE x.id = q.conversation_id AND x.turn_run IS NULL
        RETURNING q.id)
    UPDATE brain_runs r SET status = 'planning', owner = new_owner || '#' || substr(md5(random()::text), 1, 8),
        lease_until = now() + lease, updated_at = now()
    FROM s WHERE r.id = s.id RETURNING r.id, r.owner;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_rate_move(key text, max integer, per_ms bigint, was timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql
    AS $$
DECLARE
    per constant interval := per_ms * interval '1 millisecond' + least(per_ms / 20.0, 25) * interval '1 millisecond';
    s timestamptz[];
    now_ts timestamptz;
    i integer;
    j integer;
BEGIN
    SELECT r.starts INTO s FROM core_limit_rates r WHERE r.limit_key = key FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    now_ts := clock_timestamp();
    s := ARRAY(SELECT x FROM unnest(array_remove(s, was)) x WHERE x > now_ts - per UNION ALL SELECT now_ts ORDER BY 1);
    i := array_position(s, now_ts);
    -- every run of max + 1 starts around now must span a window
    FOR j IN greatest(1, i - max) .. least(i, cardinality(s) - max) LOOP
        IF s[j + max] - s[j] < per THEN
            RETURN NULL;
        END IF;
    END LOOP;
    UPDATE core_limit_rates SET starts = s, expires_at = greatest(expires_at, now_ts + per) WHERE limit_key = key;
    RETURN now_ts;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_rate_release(key text, at timestamp with time zone) RETURNS void
    LANGUAGE sql
    AS $$
    UPDATE core_limit_rates SET starts = array_remove(starts, at) WHERE limit_key = key;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_rate_take(key text, max integer, per_ms bigint, horizon_ms bigint, OUT at timestamp with time zone, OUT wait_ms double precision) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    per constant interval := per_ms * interval '1 millisecond' + least(per_ms / 20.0, 25) * interval '1 millisecond';
    s timestamptz[];
    now_ts timestamptz;
    n integer;
BEGIN
    INSERT INTO core_limit_rates (limit_key, expires_at) VALUES (key, clock_timestamp() + per)
    ON CONFLICT (limit_key) DO NOTHING;
    SELECT r.starts INTO s FROM core_limit_rates r WHERE r.limit_key = key FOR UPDATE;
    now_ts := clock_timestamp(); -- after the lock: another executor's start may be a moment ago
    s := ARRAY(SELECT x FROM unnest(s) x WHERE x > now_ts - per ORDER BY x);
    n := cardinality(s);
    at := now_ts;
    IF n > 0 AND s[n] > now_ts THEN
        -- Calls wait already: this one comes after them, paced evenly (a burst is for when none waits).
        at := s[n] + per / max;
    END IF;
    IF n >= max THEN
        at := greatest(at, s[n - max + 1] + per);
    END IF;
    wait_ms := extract(epoch FROM at - now_ts) * 1000;
    IF wait_ms > horizon_ms THEN
        at := NULL;
        RETURN;
    END IF;
    UPDATE core_limit_rates SET starts = s || at, expires_at = at + per WHERE limit_key = key;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_reads_all_calls(viewer name) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN pg_has_role(viewer, (SELECT relowner FROM pg_class WHERE oid = 'core_tool_calls'::regclass), 'USAGE')
        OR EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'gem_auditor' AND pg_has_role(viewer, r.oid, 'USAGE'))
        OR gem_session_caller_holds('audit');
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_receipts_inserted() RETURNS trigger
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
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

    -- A wake-up, never data: the call id alone. Any database login may LISTEN and NOTIFY on any channel
    -- (PostgreSQL has no permissions on channels), so a listener reads the receipt under its own role.
    PERFORM pg_notify('gem_receipt', n.call_id::text) FROM new_receipts n ORDER BY n.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_request_key_claim(call uuid, caller text, tool text, request_key text, input jsonb) RETURNS uuid
    LANGUAGE plpgsql
    AS $$
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
CREATE FUNCTION gem_require_uuid_v7() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF substr(NEW.id::text, 15, 1) <> '7' THEN
        RAISE EXCEPTION 'the id of a new % must be a UUIDv7, not %', TG_TABLE_NAME, NEW.id
            USING ERRCODE = 'check_violation',
                  HINT = 'leave id out (its default is gem_uuid_v7()) or make it a UUIDv7 (RFC 9562)';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_awaiting(run uuid, ids uuid[]) RETURNS uuid[]
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    held uuid[];
    datas jsonb[];
BEGIN
    SELECT coalesce(array_agg(x.id ORDER BY x.ord), '{}') INTO held
    FROM unnest(ids) WITH ORDINALITY AS x (id, ord) WHERE EXISTS (SELECT 1 FROM core_approvals a WHERE a.call_id = x.id);
    IF cardinality(held) > 0 THEN
        SELECT array_agg(jsonb_build_object('call_id', c.id, 'tool', c.tool_name) ORDER BY x.ord) INTO datas
        FROM unnest(held) WITH ORDINALITY AS x (id, ord) JOIN core_tool_calls c ON c.id = x.id;
        PERFORM gem_run_events_add(run, array_fill('call_awaiting_approval'::text, ARRAY[cardinality(datas)]), datas);
    END IF;
    RETURN held;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_calls_added(run uuid, ids uuid[]) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    kinds text[];
    datas jsonb[];
BEGIN
    SELECT array_agg(k.kind ORDER BY x.ord, k.n), array_agg(jsonb_build_object('call_id', c.id, 'tool', c.tool_name) ORDER BY x.ord, k.n)
    INTO kinds, datas
    FROM unnest(ids) WITH ORDINALITY AS x (id, ord)
    JOIN core_tool_calls c ON c.id = x.id
    LEFT JOIN core_approvals a ON a.call_id = x.id
    CROSS JOIN LATERAL (VALUES (1, 'call_enqueued'), (2, CASE WHEN a.call_id IS NOT NULL THEN 'call_awaiting_approval' END)) AS k (n, kind)
    WHERE k.kind IS NOT NULL;
    RETURN gem_run_events_add(run, kinds, datas);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_changed() RETURNS trigger
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    kinds text[] := '{}';
    datas jsonb[] := '{}';
    e jsonb;
    pending jsonb;
    settled uuid[] := '{}';
BEGIN
    IF TG_OP = 'INSERT' THEN
        kinds := kinds || 'run_started'::text;
        datas := datas || jsonb_strip_nulls(jsonb_build_object('mode', NEW.mode, 'agent', NEW.agent,
            'session_id', NEW.conversation_id, 'status', NEW.status));
        -- The calls it is recorded with, in their order, named as its plan names them.
        IF cardinality(NEW.call_ids) > 0 THEN
            SELECT kinds || array_agg('call_enqueued'::text ORDER BY x.ord),
                   datas || array_agg(jsonb_strip_nulls(jsonb_build_object('call_id', x.id, 'tool', p.tool)) ORDER BY x.ord)
            INTO kinds, datas
            FROM unnest(NEW.call_ids) WITH ORDINALITY AS x (id, ord)
            LEFT JOIN LATERAL (SELECT coalesce(c ->> 'tool_name', c ->> 'tool') AS tool
                               FROM jsonb_array_elements(CASE jsonb_typeof(NEW.planned_calls) WHEN 'array' THEN NEW.planned_calls ELSE '[]' END) c
                               WHERE c ->> 'call_id' = x.id::text LIMIT 1) p ON true;
        END IF;
    END IF;
    IF NEW.status IN ('completed', 'failed') AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
        IF TG_OP = 'UPDATE' AND NEW.mode <> 'chat' THEN
            -- A rules run's receipts, as its answer records them, before the answer (once per call:
            -- gem_run_events_add). A chat turn settles its receipts as they come.
            SELECT coalesce(array_agg('receipt'::text ORDER BY x.ord), '{}'),
                   coalesce(array_agg(jsonb_strip_nulls(jsonb_build_object('call_id', x.r -> 'call_id', 'tool', x.r -> 'tool',
                       'status', x.r -> 'status', 'error_code', x.r -> 'error' -> 'code')) ORDER BY x.ord), '{}'),
                   coalesce(array_agg((x.r ->> 'call_id')::uuid), '{}')
            INTO kinds, datas, settled
            FROM jsonb_array_elements(CASE jsonb_typeof(NEW.receipts) WHEN 'array' THEN NEW.receipts ELSE '[]' END) WITH ORDINALITY AS x (r, ord)
            WHERE x.r ->> 'call_id' IS NOT NULL;
        END IF;
        IF NEW.assistant_message IS NOT NULL THEN
            kinds := kinds || 'answer'::text;
            datas := datas || jsonb_build_object('reply', NEW.assistant_message);
        END IF;
        FOR e IN SELECT value FROM jsonb_array_elements(CASE jsonb_typeof(NEW.errors) WHEN 'array' THEN NEW.errors ELSE '[]' END) LOOP
            kinds := kinds || 'error'::text;
            datas := datas || jsonb_strip_nulls(jsonb_build_object('code', e -> 'code', 'message', e -> 'message'));
        END LOOP;
        IF TG_OP = 'UPDATE' AND NEW.mode <> 'chat' THEN
            -- A rules run's calls are its call_ids.
            SELECT jsonb_agg(to_jsonb(x.id) ORDER BY x.ord) INTO pending
            FROM unnest(NEW.call_ids) WITH ORDINALITY AS x (id, ord) WHERE NOT x.id = ANY (settled);
        ELSIF TG_OP = 'UPDATE' THEN
            -- A chat turn's calls are its call_enqueued events.
            SELECT jsonb_agg(c.data -> 'call_id' ORDER BY c.seq) INTO pending
            FROM brain_run_events c
            WHERE c.run_id = NEW.id AND c.kind = 'call_enqueued' AND NOT (c.data ->> 'call_id')::uuid = ANY (settled)
              AND NOT EXISTS (
                SELECT 1 FROM brain_run_events r WHERE r.run_id = NEW.id AND r.kind = 'receipt' AND r.data -> 'call_id' = c.data -> 'call_id');
        END IF;
        kinds := kinds || 'run_ended'::text;
        datas := datas || jsonb_strip_nulls(jsonb_build_object('status', NEW.status, 'pending_calls', pending));
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO brain_run_events (run_id, seq, kind, data)
        SELECT NEW.id, e.ord, e.kind, e.data FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord);
    ELSE
        PERFORM gem_run_events_add(NEW.id, kinds, datas, notify => false);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_claim_key() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.requested_by IS NULL OR NEW.request_fingerprint IS NULL THEN
        RAISE EXCEPTION 'a run with a request key needs requested_by and request_fingerprint' USING ERRCODE = 'check_violation';
    END IF;
    PERFORM gem_run_key_claim(NEW.requested_by, NEW.idempotency_key, NEW.request_fingerprint, NEW.id);
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_ended() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('gem_run', NEW.id::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[], notify boolean DEFAULT true) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    last integer;
    ended boolean;
    added integer;
BEGIN
    IF coalesce(cardinality(kinds), 0) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(max(seq), 0), coalesce(bool_or(kind = 'run_ended'), false) INTO last, ended
    FROM brain_run_events WHERE run_id = run;
    INSERT INTO brain_run_events (run_id, seq, kind, data)
    SELECT run, last + row_number() OVER (ORDER BY e.ord), e.kind, coalesce(e.data, '{}')
    FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord)
    WHERE (NOT ended OR e.kind = 'receipt')
      AND (e.kind <> 'receipt' OR NOT EXISTS (
        SELECT 1 FROM brain_run_events x WHERE x.run_id = run AND x.kind = 'receipt' AND x.data ->> 'call_id' = e.data ->> 'call_id'));
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added > 0 AND notify AND EXISTS (SELECT 1 FROM brain_run_watches w WHERE w.run_id = run) THEN
        PERFORM pg_notify('gem_run_event', run::text);
    END IF;
    RETURN last + added;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_fence(run uuid, claim text) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    held text;
BEGIN
    SELECT owner INTO held FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    IF held IS DISTINCT FROM claim THEN
        RAISE EXCEPTION 'run % is no longer %''s: another brain took it over', run, claim USING ERRCODE = 'GR409';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_key_claim(caller text, request_key text, fp bytea, run uuid) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    h       bytea := sha256(convert_to(request_key, 'UTF8'));
    claimed uuid;
    holder  uuid;
    held_fp bytea;
BEGIN
    INSERT INTO brain_request_keys AS k (requested_by, key_hash, key, fingerprint, run_id)
    VALUES (caller, h, request_key, fp, run)
    ON CONFLICT (requested_by, key_hash) DO UPDATE
        SET key = EXCLUDED.key, fingerprint = EXCLUDED.fingerprint, run_id = EXCLUDED.run_id, created_at = now()
        WHERE k.created_at < now() - gem_idempotency_window()
    RETURNING k.run_id INTO claimed;
    IF claimed IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT k.run_id, k.fingerprint INTO holder, held_fp
    FROM brain_request_keys k WHERE k.requested_by = caller AND k.key_hash = h;
    IF holder = run THEN
        RETURN; -- claimed earlier in this transaction (a chat turn claims it before its session, then inserts)
    END IF;
    IF held_fp <> fp THEN
        RAISE EXCEPTION 'idempotency key % of caller % was used for run % with a different request',
                quote_literal(request_key), quote_literal(caller), holder
            USING ERRCODE = 'GI001',
                  DETAIL = json_build_object('run_id', holder, 'idempotency_key', request_key)::text,
                  HINT = 'a retry sends the same request with the same key; a new request needs a new key';
    END IF;
    RAISE EXCEPTION 'idempotency key % of caller % is run %', quote_literal(request_key), quote_literal(caller), holder
        USING ERRCODE = 'GI002',
              DETAIL = json_build_object('run_id', holder, 'idempotency_key', request_key)::text;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_receipts_settled(run uuid, ids uuid[]) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    kinds text[];
    datas jsonb[];
BEGIN
    SELECT array_agg('receipt'::text ORDER BY x.ord),
           array_agg(jsonb_strip_nulls(jsonb_build_object('call_id', r.call_id, 'tool', r.tool_name, 'status', r.status,
               'error_code', r.error_code)) ORDER BY x.ord)
    INTO kinds, datas
    FROM unnest(ids) WITH ORDINALITY AS x (id, ord) JOIN core_tool_receipts r ON r.call_id = x.id;
    RETURN gem_run_events_add(run, kinds, datas);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_run_watch(run uuid, who text) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    PERFORM 1 FROM brain_runs WHERE id = run FOR SHARE;
    DELETE FROM brain_run_watches WHERE since < now() - interval '1 day';
    INSERT INTO brain_run_watches (run_id, watcher) VALUES (run, who) ON CONFLICT DO NOTHING;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_session_caller_holds(permission text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM core_callers g WHERE g.name = 'sql:' || session_user AND g.revoked_at IS NULL
                   AND EXISTS (SELECT 1 FROM unnest(g.permissions) p WHERE gem_permission_matches(p, permission)));
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_skill_dependency_check() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    path text;
BEGIN
    WITH RECURSIVE reach (skill_id, path) AS (
        SELECT NEW.requires_skill_id, ARRAY[NEW.skill_id, NEW.requires_skill_id]
        UNION
        SELECT d.requires_skill_id, r.path || d.requires_skill_id
        FROM skill_dependencies d JOIN reach r ON d.skill_id = r.skill_id
        WHERE NOT d.requires_skill_id = ANY (r.path[2:])
    )
    SELECT string_agg(s.slug, ' → ' ORDER BY o.n) INTO path
    FROM (SELECT r.path FROM reach r WHERE r.skill_id = NEW.skill_id LIMIT 1) c,
         unnest(c.path) WITH ORDINALITY AS o(id, n)
         JOIN skills s ON s.id = o.id;
    IF path IS NOT NULL THEN
        RAISE EXCEPTION 'skill dependency cycle: %', path USING ERRCODE = '23P01', HINT = 'gem_skill_cycle';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_tool_document(name_words text, description text, properties text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('gem_tool_words'::regconfig, coalesce(name_words, '')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(description, '')), 'B')
        || setweight(to_tsvector('english'::regconfig, coalesce(properties, '')), 'C')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_trace_metadata(traceparent text, tracestate text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN traceparent IS NULL THEN '{}'::jsonb
                ELSE jsonb_strip_nulls(jsonb_build_object('traceparent', traceparent, 'tracestate', tracestate)) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_uuid_time(id uuid) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT to_timestamp(('x' || left(replace(id::text, '-', ''), 12))::bit(48)::bigint / 1000.0)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_uuid_v7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
    SELECT encode(overlay(set_bit(set_bit(uuid_send(gen_random_uuid()), 52, 1), 53, 1)
                          PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                          FROM 1 FOR 6), 'hex')::uuid
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_uuid_v7_floor(at timestamp with time zone) RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT encode(substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3)
                  || '\x00000000000000000000'::bytea, 'hex')::uuid
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_without_secrets(v jsonb, paths jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
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
$_$;
-- +goose StatementEnd

CREATE TEXT SEARCH DICTIONARY gem_english_all (
    TEMPLATE = pg_catalog.snowball,
    language = 'english' );

CREATE TEXT SEARCH CONFIGURATION gem_tool_words (
    PARSER = pg_catalog."default" );

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR asciiword WITH gem_english_all;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR word WITH gem_english_all;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR numword WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR email WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR url WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR host WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR sfloat WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR version WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR hword_numpart WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR hword_part WITH gem_english_all;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR hword_asciipart WITH gem_english_all;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR numhword WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR asciihword WITH gem_english_all;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR hword WITH gem_english_all;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR url_path WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR file WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR "float" WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR "int" WITH simple;

ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ADD MAPPING FOR uint WITH simple;

CREATE TABLE agent_messages (
    id bigint NOT NULL,
    session_id text NOT NULL,
    run_id uuid,
    role text NOT NULL,
    content text DEFAULT ''::text NOT NULL,
    tool_calls jsonb,
    tool_call_id text,
    call_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    awaiting_receipt boolean DEFAULT false NOT NULL,
    CONSTRAINT agent_messages_role_check CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text, 'tool'::text])))
);

ALTER TABLE agent_messages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME agent_messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE agent_session_decisions (
    session_id text NOT NULL,
    call_id uuid NOT NULL,
    run_id uuid,
    told_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE agent_sessions (
    id text NOT NULL,
    agent_id uuid NOT NULL,
    user_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    caller text,
    turn_run uuid,
    turn_since timestamp with time zone,
    CONSTRAINT agent_sessions_id_check CHECK (((id <> ''::text) AND (length(id) <= 200)))
);

CREATE TABLE agent_skills (
    agent_id uuid NOT NULL,
    skill_id uuid NOT NULL,
    config_overrides jsonb DEFAULT '{}'::jsonb NOT NULL,
    priority integer DEFAULT 100 NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    allowed_users text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    call_timeout_ms integer,
    call_max_attempts smallint,
    call_priority smallint,
    CONSTRAINT agent_skills_call_max_attempts_check CHECK (((call_max_attempts >= 1) AND (call_max_attempts <= 100))),
    CONSTRAINT agent_skills_call_priority_check CHECK (((call_priority >= 1) AND (call_priority <= 4))),
    CONSTRAINT agent_skills_call_timeout_ms_check CHECK (((call_timeout_ms >= 10) AND (call_timeout_ms <= 900000)))
);

CREATE TABLE agents (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    slug text NOT NULL,
    name text NOT NULL,
    instructions text DEFAULT ''::text NOT NULL,
    model text,
    temperature numeric(3,2),
    max_tool_iterations integer DEFAULT 6 NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    code_mode boolean DEFAULT false NOT NULL,
    CONSTRAINT agents_max_tool_iterations_check CHECK (((max_tool_iterations >= 1) AND (max_tool_iterations <= 50))),
    CONSTRAINT agents_name_check CHECK ((name <> ''::text)),
    CONSTRAINT agents_slug_check CHECK ((slug ~ '^[a-z][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT agents_temperature_check CHECK (((temperature >= (0)::numeric) AND (temperature <= (2)::numeric)))
);

CREATE TABLE brain_request_keys (
    requested_by text NOT NULL,
    key_hash bytea NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    run_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE brain_run_events (
    run_id uuid NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    kind text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT brain_run_events_seq_check CHECK ((seq >= 1))
)
PARTITION BY RANGE (run_id);

CREATE TABLE brain_run_events_p_before (
    run_id uuid NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    kind text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT brain_run_events_seq_check CHECK ((seq >= 1))
);

CREATE TABLE brain_run_events_p_nonv7 (
    run_id uuid NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    kind text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT brain_run_events_seq_check CHECK ((seq >= 1))
);

CREATE TABLE brain_run_programs (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    iteration integer NOT NULL,
    code text NOT NULL,
    value jsonb,
    output jsonb DEFAULT '[]'::jsonb NOT NULL,
    calls jsonb DEFAULT '[]'::jsonb NOT NULL,
    call_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    error jsonb,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL
)
PARTITION BY RANGE (run_id);

ALTER TABLE brain_run_programs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME brain_run_programs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE brain_run_programs_p_before (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    iteration integer NOT NULL,
    code text NOT NULL,
    value jsonb,
    output jsonb DEFAULT '[]'::jsonb NOT NULL,
    calls jsonb DEFAULT '[]'::jsonb NOT NULL,
    call_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    error jsonb,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL
);

CREATE TABLE brain_run_programs_p_nonv7 (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    iteration integer NOT NULL,
    code text NOT NULL,
    value jsonb,
    output jsonb DEFAULT '[]'::jsonb NOT NULL,
    calls jsonb DEFAULT '[]'::jsonb NOT NULL,
    call_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    error jsonb,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL
);

CREATE TABLE brain_run_watches (
    run_id uuid NOT NULL,
    watcher text NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE brain_runs (
    id uuid DEFAULT gem_uuid_v7() NOT NULL,
    message text NOT NULL,
    mode text NOT NULL,
    conversation_id text,
    context jsonb DEFAULT '{}'::jsonb NOT NULL,
    limits jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'created'::text NOT NULL,
    decision jsonb,
    planned_calls jsonb DEFAULT '[]'::jsonb NOT NULL,
    call_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    receipts jsonb,
    assistant_message text,
    next_actions jsonb DEFAULT '[]'::jsonb NOT NULL,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    agent text,
    requested_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    approved_by text,
    idempotency_key text,
    request_fingerprint bytea,
    response jsonb,
    owner text,
    lease_until timestamp with time zone,
    CONSTRAINT brain_runs_approved_by_check CHECK ((length(approved_by) <= 128)),
    CONSTRAINT brain_runs_mode_check CHECK ((mode = ANY (ARRAY['answer'::text, 'plan'::text, 'enqueue'::text, 'enqueue_and_wait'::text, 'chat'::text]))),
    CONSTRAINT brain_runs_status_check CHECK ((status = ANY (ARRAY['created'::text, 'queued'::text, 'planning'::text, 'planned'::text, 'enqueued'::text, 'waiting'::text, 'completed'::text, 'failed'::text])))
)
PARTITION BY RANGE (id);

CREATE TABLE brain_runs_p_before (
    id uuid DEFAULT gem_uuid_v7() NOT NULL,
    message text NOT NULL,
    mode text NOT NULL,
    conversation_id text,
    context jsonb DEFAULT '{}'::jsonb NOT NULL,
    limits jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'created'::text NOT NULL,
    decision jsonb,
    planned_calls jsonb DEFAULT '[]'::jsonb NOT NULL,
    call_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    receipts jsonb,
    assistant_message text,
    next_actions jsonb DEFAULT '[]'::jsonb NOT NULL,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    agent text,
    requested_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    approved_by text,
    idempotency_key text,
    request_fingerprint bytea,
    response jsonb,
    owner text,
    lease_until timestamp with time zone,
    CONSTRAINT brain_runs_approved_by_check CHECK ((length(approved_by) <= 128)),
    CONSTRAINT brain_runs_mode_check CHECK ((mode = ANY (ARRAY['answer'::text, 'plan'::text, 'enqueue'::text, 'enqueue_and_wait'::text, 'chat'::text]))),
    CONSTRAINT brain_runs_status_check CHECK ((status = ANY (ARRAY['created'::text, 'queued'::text, 'planning'::text, 'planned'::text, 'enqueued'::text, 'waiting'::text, 'completed'::text, 'failed'::text])))
);

CREATE TABLE brain_runs_p_nonv7 (
    id uuid DEFAULT gem_uuid_v7() NOT NULL,
    message text NOT NULL,
    mode text NOT NULL,
    conversation_id text,
    context jsonb DEFAULT '{}'::jsonb NOT NULL,
    limits jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'created'::text NOT NULL,
    decision jsonb,
    planned_calls jsonb DEFAULT '[]'::jsonb NOT NULL,
    call_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    receipts jsonb,
    assistant_message text,
    next_actions jsonb DEFAULT '[]'::jsonb NOT NULL,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    agent text,
    requested_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    approved_by text,
    idempotency_key text,
    request_fingerprint bytea,
    response jsonb,
    owner text,
    lease_until timestamp with time zone,
    CONSTRAINT brain_runs_approved_by_check CHECK ((length(approved_by) <= 128)),
    CONSTRAINT brain_runs_mode_check CHECK ((mode = ANY (ARRAY['answer'::text, 'plan'::text, 'enqueue'::text, 'enqueue_and_wait'::text, 'chat'::text]))),
    CONSTRAINT brain_runs_status_check CHECK ((status = ANY (ARRAY['created'::text, 'queued'::text, 'planning'::text, 'planned'::text, 'enqueued'::text, 'waiting'::text, 'completed'::text, 'failed'::text])))
);

CREATE TABLE brain_studio_sessions (
    id_sha256 bytea NOT NULL,
    caller text NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE brain_tool_search (
    key text NOT NULL,
    name text NOT NULL,
    name_words text NOT NULL,
    description text NOT NULL,
    properties text NOT NULL,
    document tsvector GENERATED ALWAYS AS (gem_tool_document(name_words, description, properties)) STORED,
    seen_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT brain_tool_search_key_check CHECK ((key ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT brain_tool_search_name_check CHECK (((name <> ''::text) AND (length(name) <= 200)))
);

CREATE TABLE brain_turns (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    iteration integer NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    request jsonb NOT NULL,
    response jsonb,
    error jsonb,
    usage jsonb,
    latency_ms double precision NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    attempt integer DEFAULT 1 NOT NULL,
    CONSTRAINT brain_turns_attempt_check CHECK ((attempt >= 1))
)
PARTITION BY RANGE (run_id);

ALTER TABLE brain_turns ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME brain_turns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE brain_turns_p_before (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    iteration integer NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    request jsonb NOT NULL,
    response jsonb,
    error jsonb,
    usage jsonb,
    latency_ms double precision NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    attempt integer DEFAULT 1 NOT NULL,
    CONSTRAINT brain_turns_attempt_check CHECK ((attempt >= 1))
);

CREATE TABLE brain_turns_p_nonv7 (
    id bigint NOT NULL,
    run_id uuid NOT NULL,
    iteration integer NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    request jsonb NOT NULL,
    response jsonb,
    error jsonb,
    usage jsonb,
    latency_ms double precision NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    attempt integer DEFAULT 1 NOT NULL,
    CONSTRAINT brain_turns_attempt_check CHECK ((attempt >= 1))
);

CREATE TABLE core_approval_policies (
    id bigint NOT NULL,
    permission text NOT NULL,
    agents_only boolean DEFAULT false NOT NULL,
    expires_ms integer DEFAULT 86400000 NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT core_approval_policies_expires_ms_check CHECK (((expires_ms >= 1000) AND (expires_ms <= '2592000000'::bigint))),
    CONSTRAINT core_approval_policies_note_check CHECK ((length(note) <= 1000)),
    CONSTRAINT core_approval_policies_permission_check CHECK ((permission ~ '^(\*|[a-z][a-z0-9_-]*(:[a-z0-9_.-]+)*(:\*)?)$'::text))
);

ALTER TABLE core_approval_policies ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME core_approval_policies_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE core_approvals (
    call_id uuid NOT NULL,
    required_by text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    decision text,
    decided_by text,
    reason text,
    decided_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT core_approvals_check CHECK (((decision IS NULL) = (decided_at IS NULL))),
    CONSTRAINT core_approvals_decision_check CHECK ((decision = ANY (ARRAY['approved'::text, 'rejected'::text, 'expired'::text, 'cancelled'::text]))),
    CONSTRAINT core_approvals_reason_check CHECK ((length(reason) <= 2000))
);

CREATE TABLE core_tool_calls (
    id uuid DEFAULT gem_uuid_v7() NOT NULL,
    tool_name text NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    idempotency_key text,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts smallint DEFAULT 5 NOT NULL,
    worker text,
    job_id bigint,
    run_id uuid,
    agent text,
    requested_by text,
    error_code text,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    outside_token uuid,
    outside_attempt integer,
    outside_started_at timestamp with time zone,
    user_id text,
    device text,
    device_wait_ms integer,
    parent_id uuid,
    limited_since timestamp with time zone,
    rate_reserved_at timestamp with time zone,
    traceparent text,
    tracestate text,
    idempotency_of uuid,
    approved_by text,
    CONSTRAINT core_tool_calls_approved_by_check CHECK ((length(approved_by) <= 128)),
    CONSTRAINT core_tool_calls_device_check CHECK ((device ~ '^[a-z][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT core_tool_calls_device_wait_ms_check CHECK (((device_wait_ms >= 0) AND (device_wait_ms <= 3600000))),
    CONSTRAINT core_tool_calls_idempotency_key_check CHECK ((idempotency_key <> ''::text)),
    CONSTRAINT core_tool_calls_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
    CONSTRAINT core_tool_calls_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'not_configured'::text, 'awaiting_approval'::text]))),
    CONSTRAINT core_tool_calls_tool_name_check CHECK (((tool_name <> ''::text) AND (length(tool_name) <= 200))),
    CONSTRAINT core_tool_calls_traceparent_check CHECK (((length(traceparent) >= 55) AND (length(traceparent) <= 512))),
    CONSTRAINT core_tool_calls_tracestate_check CHECK ((length(tracestate) <= 512))
)
PARTITION BY RANGE (id);

COMMENT ON COLUMN core_tool_calls.status IS 'queued until the call''s receipt sets its final status; core_calls shows running calls as running';

COMMENT ON COLUMN core_tool_calls.traceparent IS 'W3C traceparent of the span that made the call (its trace id is the one to look up); copied into the job''s metadata';

COMMENT ON COLUMN core_tool_calls.idempotency_of IS 'set on a duplicate request: the call holding its (caller, tool, idempotency_key); its receipt repeats that call''s';

COMMENT ON COLUMN core_tool_calls.approved_by IS 'the caller who approved the stored plan this call belongs to: the call runs with no more than it holds';

CREATE TABLE core_tool_receipts (
    id bigint NOT NULL,
    call_id uuid NOT NULL,
    tool_name text NOT NULL,
    status text NOT NULL,
    result jsonb,
    effects jsonb DEFAULT '{"db_writes": []}'::jsonb NOT NULL,
    error jsonb,
    error_code text,
    summary jsonb,
    idempotency_key text,
    idempotency_hit boolean DEFAULT false NOT NULL,
    idempotency_of uuid,
    attempt integer DEFAULT 0 NOT NULL,
    worker text,
    duration_ms double precision DEFAULT 0 NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    device text,
    devices_tried text[],
    limit_wait_ms double precision,
    CONSTRAINT core_tool_receipts_error_iff_not_succeeded CHECK (((status = 'succeeded'::text) = (error_code IS NULL))),
    CONSTRAINT core_tool_receipts_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'not_configured'::text])))
)
PARTITION BY RANGE (call_id);

CREATE VIEW core_calls AS
 SELECT c.id,
    c.tool_name,
    c.input,
        CASE
            WHEN (c.status <> 'queued'::text) THEN c.status
            WHEN (j.state = 'running'::river_job_state) THEN 'running'::text
            ELSE 'queued'::text
        END AS status,
    c.idempotency_key,
        CASE
            WHEN (c.status <> 'queued'::text) THEN c.attempt
            ELSE COALESCE((j.attempt)::integer, c.attempt)
        END AS attempt,
    c.max_attempts,
        CASE
            WHEN (c.status <> 'queued'::text) THEN c.worker
            ELSE COALESCE(j.attempted_by[array_upper(j.attempted_by, 1)], c.worker)
        END AS worker,
    c.job_id,
    c.run_id,
    c.agent,
    c.user_id,
    c.requested_by,
    c.error_code,
    c.error,
    c.created_at,
    COALESCE(c.started_at, j.attempted_at) AS started_at,
    c.finished_at,
    c.outside_token,
    c.outside_attempt,
    c.outside_started_at,
    c.device,
    c.device_wait_ms,
    r.device AS ran_on_device,
    r.devices_tried,
    c.parent_id,
    c.idempotency_of,
    c.approved_by
   FROM ((core_tool_calls c
     LEFT JOIN river_job j ON ((j.id = c.job_id)))
     LEFT JOIN core_tool_receipts r ON (((r.call_id = c.id) AND (c.status <> 'queued'::text))))
  WHERE (( SELECT pg_has_role(CURRENT_USER, o.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o
          WHERE (o.oid = ('core_tool_calls'::regclass)::oid)) OR ( SELECT gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR (c.requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (c.approved_by = ('sql:'::text || (SESSION_USER)::text)));

CREATE TABLE core_device_attempts (
    id bigint NOT NULL,
    call_id uuid NOT NULL,
    device text NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    timeout_ms integer NOT NULL,
    result jsonb,
    error jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    finished_at timestamp with time zone,
    limit_key text,
    CONSTRAINT core_device_attempts_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'sent'::text, 'succeeded'::text, 'failed'::text, 'unsent'::text, 'lost'::text, 'abandoned'::text]))),
    CONSTRAINT core_device_attempts_timeout_ms_check CHECK ((timeout_ms > 0))
);

ALTER TABLE core_device_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME core_device_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE core_device_tools (
    device text NOT NULL,
    tool_name text NOT NULL,
    contract jsonb NOT NULL,
    agnostic boolean DEFAULT false NOT NULL,
    CONSTRAINT core_device_tools_tool_name_check CHECK (((tool_name <> ''::text) AND (length(tool_name) <= 200)))
);

CREATE VIEW core_devices_status AS
 SELECT d.name,
    d.owner,
    gem_device_alive(d.*) AS alive,
    d.connected,
    d.hub,
    d.connected_at,
    d.disconnected_at,
    d.last_heartbeat,
    COALESCE(( SELECT array_agg(t.tool_name ORDER BY t.tool_name) AS array_agg
           FROM core_device_tools t
          WHERE (t.device = d.name)), '{}'::text[]) AS tools,
    ( SELECT count(*) AS count
           FROM core_device_attempts a
          WHERE ((a.device = d.name) AND (a.state = ANY (ARRAY['queued'::text, 'sent'::text])))) AS open_attempts,
    d.permissions
   FROM core_devices d;

CREATE TABLE core_executors (
    id text NOT NULL,
    hostname text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    stopped_at timestamp with time zone,
    dead_at timestamp with time zone,
    tools jsonb DEFAULT '{}'::jsonb NOT NULL
);

CREATE VIEW core_idempotency_hits AS
 SELECT r.call_id,
    r.tool_name,
    r.idempotency_key,
    r.idempotency_of AS original_call_id,
    o.finished_at AS original_finished_at,
    r.finished_at
   FROM (core_tool_receipts r
     LEFT JOIN core_tool_receipts o ON ((o.call_id = r.idempotency_of)))
  WHERE (r.idempotency_hit AND (( SELECT pg_has_role(CURRENT_USER, o_1.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o_1
          WHERE (o_1.oid = ('core_tool_calls'::regclass)::oid)) OR ( SELECT gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR (EXISTS ( SELECT 1
           FROM core_tool_calls c
          WHERE ((c.id = r.call_id) AND ((c.requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (c.approved_by = ('sql:'::text || (SESSION_USER)::text))))))))
  ORDER BY r.finished_at DESC;

CREATE TABLE core_idempotency_keys (
    tool_name text NOT NULL,
    key_hash bytea NOT NULL,
    key text NOT NULL,
    call_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE core_limit_rates (
    limit_key text NOT NULL,
    starts timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE core_mcp_tasks (
    id_sha256 bytea NOT NULL,
    call_id uuid NOT NULL,
    caller text NOT NULL,
    agent text DEFAULT ''::text NOT NULL,
    input_answered timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT core_mcp_tasks_id_sha256_check CHECK ((octet_length(id_sha256) = 32))
);

CREATE VIEW core_pending_approvals AS
 SELECT a.call_id,
    c.tool_name,
    c.input,
    c.requested_by,
    c.agent,
    c.run_id,
    a.required_by,
    a.expires_at,
    a.created_at
   FROM (core_approvals a
     JOIN core_tool_calls c ON ((c.id = a.call_id)))
  WHERE ((a.decision IS NULL) AND (( SELECT pg_has_role(CURRENT_USER, o.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o
          WHERE (o.oid = ('core_tool_calls'::regclass)::oid)) OR ( SELECT gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR ( SELECT gem_session_caller_holds('approve'::text) AS gem_session_caller_holds) OR (c.requested_by = ('sql:'::text || (SESSION_USER)::text))))
  ORDER BY a.expires_at;

CREATE VIEW core_queue_depth AS
 SELECT (river_job.args ->> 'tool_name'::text) AS tool_name,
    count(*) FILTER (WHERE (river_job.state <> 'running'::river_job_state)) AS queued,
    count(*) FILTER (WHERE (river_job.state = 'running'::river_job_state)) AS running,
    min(river_job.created_at) FILTER (WHERE (river_job.state <> 'running'::river_job_state)) AS oldest_queued_at,
    (now() - min(river_job.created_at) FILTER (WHERE (river_job.state <> 'running'::river_job_state))) AS oldest_queued_age
   FROM river_job
  WHERE ((river_job.kind = 'gem.tool_call'::text) AND (river_job.state = ANY (ARRAY['available'::river_job_state, 'scheduled'::river_job_state, 'retryable'::river_job_state, 'running'::river_job_state])))
  GROUP BY (river_job.args ->> 'tool_name'::text);

CREATE VIEW core_recent_failures AS
 SELECT r.call_id,
    r.tool_name,
    r.status,
    r.error_code,
    (r.error ->> 'message'::text) AS message,
    (r.error -> 'details'::text) AS details,
    r.attempt,
    r.duration_ms,
    r.finished_at,
    c.input,
    c.run_id,
    c.agent,
    r.device,
    r.devices_tried,
    c.requested_by,
    c.approved_by
   FROM (core_tool_receipts r
     JOIN core_tool_calls c ON ((c.id = r.call_id)))
  WHERE ((r.status <> 'succeeded'::text) AND (r.finished_at > (now() - '24:00:00'::interval)) AND (( SELECT pg_has_role(CURRENT_USER, o.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o
          WHERE (o.oid = ('core_tool_calls'::regclass)::oid)) OR ( SELECT gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR (c.requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (c.approved_by = ('sql:'::text || (SESSION_USER)::text))))
  ORDER BY r.finished_at DESC;

CREATE TABLE core_request_keys (
    requested_by text NOT NULL,
    tool_name text NOT NULL,
    key_hash bytea NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    call_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE core_rollbacks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    call_id uuid NOT NULL,
    tool_name text NOT NULL,
    rows_deleted integer DEFAULT 0 NOT NULL,
    rows_restored integer DEFAULT 0 NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE core_tool_calls_p_before (
    id uuid DEFAULT gem_uuid_v7() NOT NULL,
    tool_name text NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    idempotency_key text,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts smallint DEFAULT 5 NOT NULL,
    worker text,
    job_id bigint,
    run_id uuid,
    agent text,
    requested_by text,
    error_code text,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    outside_token uuid,
    outside_attempt integer,
    outside_started_at timestamp with time zone,
    user_id text,
    device text,
    device_wait_ms integer,
    parent_id uuid,
    limited_since timestamp with time zone,
    rate_reserved_at timestamp with time zone,
    traceparent text,
    tracestate text,
    idempotency_of uuid,
    approved_by text,
    CONSTRAINT core_tool_calls_approved_by_check CHECK ((length(approved_by) <= 128)),
    CONSTRAINT core_tool_calls_device_check CHECK ((device ~ '^[a-z][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT core_tool_calls_device_wait_ms_check CHECK (((device_wait_ms >= 0) AND (device_wait_ms <= 3600000))),
    CONSTRAINT core_tool_calls_idempotency_key_check CHECK ((idempotency_key <> ''::text)),
    CONSTRAINT core_tool_calls_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
    CONSTRAINT core_tool_calls_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'not_configured'::text, 'awaiting_approval'::text]))),
    CONSTRAINT core_tool_calls_tool_name_check CHECK (((tool_name <> ''::text) AND (length(tool_name) <= 200))),
    CONSTRAINT core_tool_calls_traceparent_check CHECK (((length(traceparent) >= 55) AND (length(traceparent) <= 512))),
    CONSTRAINT core_tool_calls_tracestate_check CHECK ((length(tracestate) <= 512))
)
WITH (fillfactor='80');

CREATE TABLE core_tool_calls_p_nonv7 (
    id uuid DEFAULT gem_uuid_v7() NOT NULL,
    tool_name text NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    idempotency_key text,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts smallint DEFAULT 5 NOT NULL,
    worker text,
    job_id bigint,
    run_id uuid,
    agent text,
    requested_by text,
    error_code text,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    outside_token uuid,
    outside_attempt integer,
    outside_started_at timestamp with time zone,
    user_id text,
    device text,
    device_wait_ms integer,
    parent_id uuid,
    limited_since timestamp with time zone,
    rate_reserved_at timestamp with time zone,
    traceparent text,
    tracestate text,
    idempotency_of uuid,
    approved_by text,
    CONSTRAINT core_tool_calls_approved_by_check CHECK ((length(approved_by) <= 128)),
    CONSTRAINT core_tool_calls_device_check CHECK ((device ~ '^[a-z][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT core_tool_calls_device_wait_ms_check CHECK (((device_wait_ms >= 0) AND (device_wait_ms <= 3600000))),
    CONSTRAINT core_tool_calls_idempotency_key_check CHECK ((idempotency_key <> ''::text)),
    CONSTRAINT core_tool_calls_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
    CONSTRAINT core_tool_calls_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'not_configured'::text, 'awaiting_approval'::text]))),
    CONSTRAINT core_tool_calls_tool_name_check CHECK (((tool_name <> ''::text) AND (length(tool_name) <= 200))),
    CONSTRAINT core_tool_calls_traceparent_check CHECK (((length(traceparent) >= 55) AND (length(traceparent) <= 512))),
    CONSTRAINT core_tool_calls_tracestate_check CHECK ((length(tracestate) <= 512))
);

ALTER TABLE core_tool_receipts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME core_tool_receipts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE core_tool_receipts_p_before (
    id bigint NOT NULL,
    call_id uuid NOT NULL,
    tool_name text NOT NULL,
    status text NOT NULL,
    result jsonb,
    effects jsonb DEFAULT '{"db_writes": []}'::jsonb NOT NULL,
    error jsonb,
    error_code text,
    summary jsonb,
    idempotency_key text,
    idempotency_hit boolean DEFAULT false NOT NULL,
    idempotency_of uuid,
    attempt integer DEFAULT 0 NOT NULL,
    worker text,
    duration_ms double precision DEFAULT 0 NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    device text,
    devices_tried text[],
    limit_wait_ms double precision,
    CONSTRAINT core_tool_receipts_error_iff_not_succeeded CHECK (((status = 'succeeded'::text) = (error_code IS NULL))),
    CONSTRAINT core_tool_receipts_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'not_configured'::text])))
);

CREATE TABLE core_tool_receipts_p_nonv7 (
    id bigint NOT NULL,
    call_id uuid NOT NULL,
    tool_name text NOT NULL,
    status text NOT NULL,
    result jsonb,
    effects jsonb DEFAULT '{"db_writes": []}'::jsonb NOT NULL,
    error jsonb,
    error_code text,
    summary jsonb,
    idempotency_key text,
    idempotency_hit boolean DEFAULT false NOT NULL,
    idempotency_of uuid,
    attempt integer DEFAULT 0 NOT NULL,
    worker text,
    duration_ms double precision DEFAULT 0 NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    device text,
    devices_tried text[],
    limit_wait_ms double precision,
    CONSTRAINT core_tool_receipts_error_iff_not_succeeded CHECK (((status = 'succeeded'::text) = (error_code IS NULL))),
    CONSTRAINT core_tool_receipts_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'not_configured'::text])))
);

CREATE VIEW core_tool_stats AS
 SELECT core_tool_receipts.tool_name,
    count(*) AS calls,
    count(*) FILTER (WHERE (core_tool_receipts.status = 'succeeded'::text)) AS succeeded,
    count(*) FILTER (WHERE (core_tool_receipts.status = 'failed'::text)) AS failed,
    count(*) FILTER (WHERE (core_tool_receipts.status = 'not_configured'::text)) AS not_configured,
    count(*) FILTER (WHERE core_tool_receipts.idempotency_hit) AS idempotency_hits,
    round((avg(core_tool_receipts.duration_ms))::numeric, 2) AS avg_ms,
    (round((percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY core_tool_receipts.duration_ms))::numeric, 2))::double precision AS p50_ms,
    (round((percentile_cont((0.95)::double precision) WITHIN GROUP (ORDER BY core_tool_receipts.duration_ms))::numeric, 2))::double precision AS p95_ms,
    (round((percentile_cont((0.99)::double precision) WITHIN GROUP (ORDER BY core_tool_receipts.duration_ms))::numeric, 2))::double precision AS p99_ms,
    max(core_tool_receipts.finished_at) AS last_finished_at
   FROM core_tool_receipts
  WHERE (core_tool_receipts.finished_at > (now() - '24:00:00'::interval))
  GROUP BY core_tool_receipts.tool_name;

CREATE TABLE core_tools (
    name text NOT NULL,
    permissions text[] DEFAULT '{}'::text[] NOT NULL,
    approval_required boolean DEFAULT false NOT NULL,
    approval_expires_ms integer DEFAULT 86400000 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    secret_paths jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT core_tools_approval_expires_ms_check CHECK ((approval_expires_ms > 0)),
    CONSTRAINT core_tools_name_check CHECK (((name <> ''::text) AND (length(name) <= 200))),
    CONSTRAINT core_tools_secret_paths_check CHECK ((jsonb_typeof(secret_paths) = 'array'::text))
);

CREATE TABLE core_undo_log (
    id bigint NOT NULL,
    call_id uuid NOT NULL,
    table_name text NOT NULL,
    op text NOT NULL,
    row_id text,
    before jsonb NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT core_undo_log_op_check CHECK ((op = ANY (ARRAY['update'::text, 'delete'::text])))
);

ALTER TABLE core_undo_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME core_undo_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE skill_dependencies (
    skill_id uuid NOT NULL,
    requires_skill_id uuid NOT NULL,
    CONSTRAINT skill_dependencies_check CHECK ((skill_id <> requires_skill_id))
);

CREATE TABLE skill_files (
    skill_id uuid NOT NULL,
    path text NOT NULL,
    content bytea NOT NULL,
    media_type text DEFAULT 'application/octet-stream'::text NOT NULL,
    sha256 text GENERATED ALWAYS AS (encode(sha256(content), 'hex'::text)) STORED,
    size integer GENERATED ALWAYS AS (length(content)) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT skill_files_content_check CHECK ((length(content) <= 8388608)),
    CONSTRAINT skill_files_media_type_check CHECK ((media_type ~ '^[a-z]+/[A-Za-z0-9.+_-]+'::text)),
    CONSTRAINT skill_files_path_check CHECK (((path ~ '^[A-Za-z0-9_.][A-Za-z0-9_. -]*(/[A-Za-z0-9_.][A-Za-z0-9_. -]*)*$'::text) AND (path !~ '(^|/)\.\.?(/|$)'::text) AND (length(path) <= 400) AND (path <> 'SKILL.md'::text)))
);

CREATE TABLE skills (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    slug text NOT NULL,
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    instructions text DEFAULT ''::text NOT NULL,
    tools text[] DEFAULT '{}'::text[] NOT NULL,
    category text DEFAULT 'general'::text NOT NULL,
    is_builtin boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT skills_name_check CHECK ((name <> ''::text)),
    CONSTRAINT skills_slug_check CHECK ((slug ~ '^[a-z0-9][a-z0-9-]{0,63}$'::text))
);

ALTER TABLE ONLY brain_run_events ATTACH PARTITION brain_run_events_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY brain_run_events ATTACH PARTITION brain_run_events_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY brain_run_programs ATTACH PARTITION brain_run_programs_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY brain_run_programs ATTACH PARTITION brain_run_programs_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY brain_runs ATTACH PARTITION brain_runs_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY brain_runs ATTACH PARTITION brain_runs_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY brain_turns ATTACH PARTITION brain_turns_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY brain_turns ATTACH PARTITION brain_turns_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY core_tool_calls ATTACH PARTITION core_tool_calls_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY core_tool_calls ATTACH PARTITION core_tool_calls_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY core_tool_receipts ATTACH PARTITION core_tool_receipts_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY core_tool_receipts ATTACH PARTITION core_tool_receipts_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY agent_messages
    ADD CONSTRAINT agent_messages_pkey PRIMARY KEY (id);

ALTER TABLE ONLY agent_session_decisions
    ADD CONSTRAINT agent_session_decisions_pkey PRIMARY KEY (session_id, call_id);

ALTER TABLE ONLY agent_sessions
    ADD CONSTRAINT agent_sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY agent_skills
    ADD CONSTRAINT agent_skills_pkey PRIMARY KEY (agent_id, skill_id);

ALTER TABLE ONLY agents
    ADD CONSTRAINT agents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY agents
    ADD CONSTRAINT agents_slug_key UNIQUE (slug);

ALTER TABLE ONLY brain_request_keys
    ADD CONSTRAINT brain_request_keys_pkey PRIMARY KEY (requested_by, key_hash);

ALTER TABLE ONLY brain_run_events
    ADD CONSTRAINT brain_run_events_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY brain_run_events_p_before
    ADD CONSTRAINT brain_run_events_p_before_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY brain_run_events_p_nonv7
    ADD CONSTRAINT brain_run_events_p_nonv7_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY brain_run_programs
    ADD CONSTRAINT brain_run_programs_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY brain_run_programs_p_before
    ADD CONSTRAINT brain_run_programs_p_before_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY brain_run_programs_p_nonv7
    ADD CONSTRAINT brain_run_programs_p_nonv7_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY brain_run_watches
    ADD CONSTRAINT brain_run_watches_pkey PRIMARY KEY (run_id, watcher);

ALTER TABLE ONLY brain_runs
    ADD CONSTRAINT brain_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY brain_runs_p_before
    ADD CONSTRAINT brain_runs_p_before_pkey PRIMARY KEY (id);

ALTER TABLE ONLY brain_runs_p_nonv7
    ADD CONSTRAINT brain_runs_p_nonv7_pkey PRIMARY KEY (id);

ALTER TABLE ONLY brain_studio_sessions
    ADD CONSTRAINT brain_studio_sessions_pkey PRIMARY KEY (id_sha256);

ALTER TABLE ONLY brain_tool_search
    ADD CONSTRAINT brain_tool_search_pkey PRIMARY KEY (key);

ALTER TABLE ONLY brain_turns
    ADD CONSTRAINT brain_turns_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY brain_turns_p_before
    ADD CONSTRAINT brain_turns_p_before_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY brain_turns_p_nonv7
    ADD CONSTRAINT brain_turns_p_nonv7_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY core_approval_policies
    ADD CONSTRAINT core_approval_policies_permission_agents_only_key UNIQUE (permission, agents_only);

ALTER TABLE ONLY core_approval_policies
    ADD CONSTRAINT core_approval_policies_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_approvals
    ADD CONSTRAINT core_approvals_pkey PRIMARY KEY (call_id);

ALTER TABLE ONLY core_callers
    ADD CONSTRAINT core_callers_pkey PRIMARY KEY (name);

ALTER TABLE ONLY core_callers
    ADD CONSTRAINT core_callers_token_sha256_key UNIQUE (token_sha256);

ALTER TABLE ONLY core_device_attempts
    ADD CONSTRAINT core_device_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_device_tools
    ADD CONSTRAINT core_device_tools_pkey PRIMARY KEY (device, tool_name);

ALTER TABLE ONLY core_devices
    ADD CONSTRAINT core_devices_pkey PRIMARY KEY (name);

ALTER TABLE ONLY core_devices
    ADD CONSTRAINT core_devices_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY core_executors
    ADD CONSTRAINT core_executors_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_idempotency_keys
    ADD CONSTRAINT core_idempotency_keys_pkey PRIMARY KEY (tool_name, key_hash);

ALTER TABLE ONLY core_limit_rates
    ADD CONSTRAINT core_limit_rates_pkey PRIMARY KEY (limit_key);

ALTER TABLE ONLY core_mcp_tasks
    ADD CONSTRAINT core_mcp_tasks_pkey PRIMARY KEY (id_sha256);

ALTER TABLE ONLY core_request_keys
    ADD CONSTRAINT core_request_keys_pkey PRIMARY KEY (requested_by, tool_name, key_hash);

ALTER TABLE ONLY core_rollbacks
    ADD CONSTRAINT core_rollbacks_once UNIQUE (call_id);

ALTER TABLE ONLY core_rollbacks
    ADD CONSTRAINT core_rollbacks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_tool_calls
    ADD CONSTRAINT core_tool_calls_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_tool_calls_p_before
    ADD CONSTRAINT core_tool_calls_p_before_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_tool_calls_p_nonv7
    ADD CONSTRAINT core_tool_calls_p_nonv7_pkey PRIMARY KEY (id);

ALTER TABLE ONLY core_tool_receipts
    ADD CONSTRAINT core_tool_receipts_one_per_call PRIMARY KEY (call_id);

ALTER TABLE ONLY core_tool_receipts_p_before
    ADD CONSTRAINT core_tool_receipts_p_before_one_per_call PRIMARY KEY (call_id);

ALTER TABLE ONLY core_tool_receipts_p_nonv7
    ADD CONSTRAINT core_tool_receipts_p_nonv7_one_per_call PRIMARY KEY (call_id);

ALTER TABLE ONLY core_tools
    ADD CONSTRAINT core_tools_pkey PRIMARY KEY (name);

ALTER TABLE ONLY core_undo_log
    ADD CONSTRAINT core_undo_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY skill_dependencies
    ADD CONSTRAINT skill_dependencies_pkey PRIMARY KEY (skill_id, requires_skill_id);

ALTER TABLE ONLY skill_files
    ADD CONSTRAINT skill_files_pkey PRIMARY KEY (skill_id, path);

ALTER TABLE ONLY skills
    ADD CONSTRAINT skills_pkey PRIMARY KEY (id);

ALTER TABLE ONLY skills
    ADD CONSTRAINT skills_slug_key UNIQUE (slug);

CREATE INDEX agent_messages_run ON agent_messages USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX agent_messages_session ON agent_messages USING btree (session_id, id);

CREATE INDEX agent_session_decisions_call ON agent_session_decisions USING btree (call_id);

CREATE INDEX agent_skills_skill ON agent_skills USING btree (skill_id);

CREATE INDEX brain_request_keys_created_at ON brain_request_keys USING btree (created_at);

CREATE INDEX brain_request_keys_run ON brain_request_keys USING btree (run_id);

CREATE INDEX brain_run_programs_run ON ONLY brain_run_programs USING btree (run_id, id);

CREATE INDEX brain_run_programs_p_before_run_id_id_idx ON brain_run_programs_p_before USING btree (run_id, id);

CREATE INDEX brain_run_programs_p_nonv7_run_id_id_idx ON brain_run_programs_p_nonv7 USING btree (run_id, id);

CREATE INDEX brain_runs_conversation ON ONLY brain_runs USING btree (conversation_id, created_at) WHERE (conversation_id IS NOT NULL);

CREATE INDEX brain_runs_created_at ON ONLY brain_runs USING btree (created_at DESC);

CREATE INDEX brain_runs_lease ON ONLY brain_runs USING btree (lease_until) WHERE ((status = ANY (ARRAY['planning'::text, 'waiting'::text])) AND (lease_until IS NOT NULL));

CREATE INDEX brain_runs_open ON ONLY brain_runs USING btree (status, created_at) WHERE (status = ANY (ARRAY['planned'::text, 'enqueued'::text, 'waiting'::text]));

CREATE INDEX brain_runs_queued ON ONLY brain_runs USING btree (conversation_id, id) WHERE (status = 'queued'::text);

CREATE INDEX brain_runs_requested_by ON ONLY brain_runs USING btree (requested_by, created_at DESC);

CREATE INDEX brain_runs_p_before_conversation_id_created_at_idx ON brain_runs_p_before USING btree (conversation_id, created_at) WHERE (conversation_id IS NOT NULL);

CREATE INDEX brain_runs_p_before_conversation_id_id_idx ON brain_runs_p_before USING btree (conversation_id, id) WHERE (status = 'queued'::text);

CREATE INDEX brain_runs_p_before_created_at_idx ON brain_runs_p_before USING btree (created_at DESC);

CREATE INDEX brain_runs_p_before_lease_until_idx ON brain_runs_p_before USING btree (lease_until) WHERE ((status = ANY (ARRAY['planning'::text, 'waiting'::text])) AND (lease_until IS NOT NULL));

CREATE INDEX brain_runs_p_before_requested_by_created_at_idx ON brain_runs_p_before USING btree (requested_by, created_at DESC);

CREATE INDEX brain_runs_p_before_status_created_at_idx ON brain_runs_p_before USING btree (status, created_at) WHERE (status = ANY (ARRAY['planned'::text, 'enqueued'::text, 'waiting'::text]));

CREATE INDEX brain_runs_p_nonv7_conversation_id_created_at_idx ON brain_runs_p_nonv7 USING btree (conversation_id, created_at) WHERE (conversation_id IS NOT NULL);

CREATE INDEX brain_runs_p_nonv7_conversation_id_id_idx ON brain_runs_p_nonv7 USING btree (conversation_id, id) WHERE (status = 'queued'::text);

CREATE INDEX brain_runs_p_nonv7_created_at_idx ON brain_runs_p_nonv7 USING btree (created_at DESC);

CREATE INDEX brain_runs_p_nonv7_lease_until_idx ON brain_runs_p_nonv7 USING btree (lease_until) WHERE ((status = ANY (ARRAY['planning'::text, 'waiting'::text])) AND (lease_until IS NOT NULL));

CREATE INDEX brain_runs_p_nonv7_requested_by_created_at_idx ON brain_runs_p_nonv7 USING btree (requested_by, created_at DESC);

CREATE INDEX brain_runs_p_nonv7_status_created_at_idx ON brain_runs_p_nonv7 USING btree (status, created_at) WHERE (status = ANY (ARRAY['planned'::text, 'enqueued'::text, 'waiting'::text]));

CREATE INDEX brain_studio_sessions_expires_at ON brain_studio_sessions USING btree (expires_at);

CREATE INDEX brain_tool_search_document ON brain_tool_search USING gin (document) WITH (fastupdate=off);

CREATE INDEX brain_tool_search_name_words ON brain_tool_search USING gin (name_words gin_trgm_ops) WITH (fastupdate=off);

CREATE INDEX brain_tool_search_seen_at ON brain_tool_search USING btree (seen_at);

CREATE INDEX brain_turns_run ON ONLY brain_turns USING btree (run_id, iteration);

CREATE INDEX brain_turns_p_before_run_id_iteration_idx ON brain_turns_p_before USING btree (run_id, iteration);

CREATE INDEX brain_turns_p_nonv7_run_id_iteration_idx ON brain_turns_p_nonv7 USING btree (run_id, iteration);

CREATE INDEX core_approvals_pending ON core_approvals USING btree (expires_at) WHERE (decision IS NULL);

CREATE INDEX core_device_attempts_call ON core_device_attempts USING btree (call_id);

CREATE INDEX core_device_attempts_limit ON core_device_attempts USING btree (limit_key) WHERE ((limit_key IS NOT NULL) AND (state = ANY (ARRAY['queued'::text, 'sent'::text])));

CREATE UNIQUE INDEX core_device_attempts_one_open ON core_device_attempts USING btree (call_id) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text]));

CREATE INDEX core_device_attempts_open ON core_device_attempts USING btree (device, id) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text]));

CREATE INDEX core_device_tools_tool ON core_device_tools USING btree (tool_name);

CREATE INDEX core_idempotency_keys_call ON core_idempotency_keys USING btree (call_id);

CREATE INDEX core_mcp_tasks_call ON core_mcp_tasks USING btree (call_id);

CREATE INDEX core_request_keys_call ON core_request_keys USING btree (call_id);

CREATE INDEX core_request_keys_created_at ON core_request_keys USING btree (created_at);

CREATE INDEX core_tool_calls_approved_by ON ONLY core_tool_calls USING btree (approved_by, created_at DESC) WHERE (approved_by IS NOT NULL);

CREATE INDEX core_tool_calls_created_at ON ONLY core_tool_calls USING btree (created_at DESC);

CREATE INDEX core_tool_calls_idempotency_of ON ONLY core_tool_calls USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_calls_limited ON ONLY core_tool_calls USING btree (tool_name, limited_since) WHERE (limited_since IS NOT NULL);

CREATE INDEX core_tool_calls_requested_by ON ONLY core_tool_calls USING btree (requested_by, created_at DESC);

CREATE INDEX core_tool_calls_run ON ONLY core_tool_calls USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX core_tool_calls_tool_created_at ON ONLY core_tool_calls USING btree (tool_name, created_at DESC);

CREATE INDEX core_tool_calls_p_before_approved_by_created_at_idx ON core_tool_calls_p_before USING btree (approved_by, created_at DESC) WHERE (approved_by IS NOT NULL);

CREATE INDEX core_tool_calls_p_before_created_at_idx ON core_tool_calls_p_before USING btree (created_at DESC);

CREATE INDEX core_tool_calls_p_before_idempotency_of_idx ON core_tool_calls_p_before USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_calls_p_before_requested_by_created_at_idx ON core_tool_calls_p_before USING btree (requested_by, created_at DESC);

CREATE INDEX core_tool_calls_p_before_run_id_idx ON core_tool_calls_p_before USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX core_tool_calls_p_before_tool_name_created_at_idx ON core_tool_calls_p_before USING btree (tool_name, created_at DESC);

CREATE INDEX core_tool_calls_p_before_tool_name_limited_since_idx ON core_tool_calls_p_before USING btree (tool_name, limited_since) WHERE (limited_since IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_approved_by_created_at_idx ON core_tool_calls_p_nonv7 USING btree (approved_by, created_at DESC) WHERE (approved_by IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_created_at_idx ON core_tool_calls_p_nonv7 USING btree (created_at DESC);

CREATE INDEX core_tool_calls_p_nonv7_idempotency_of_idx ON core_tool_calls_p_nonv7 USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_requested_by_created_at_idx ON core_tool_calls_p_nonv7 USING btree (requested_by, created_at DESC);

CREATE INDEX core_tool_calls_p_nonv7_run_id_idx ON core_tool_calls_p_nonv7 USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_tool_name_created_at_idx ON core_tool_calls_p_nonv7 USING btree (tool_name, created_at DESC);

CREATE INDEX core_tool_calls_p_nonv7_tool_name_limited_since_idx ON core_tool_calls_p_nonv7 USING btree (tool_name, limited_since) WHERE (limited_since IS NOT NULL);

CREATE INDEX core_tool_receipts_finished_at ON ONLY core_tool_receipts USING btree (finished_at DESC);

CREATE INDEX core_tool_receipts_id ON ONLY core_tool_receipts USING btree (id);

CREATE INDEX core_tool_receipts_idempotency_hits ON ONLY core_tool_receipts USING btree (finished_at DESC) WHERE idempotency_hit;

CREATE INDEX core_tool_receipts_idempotency_of ON ONLY core_tool_receipts USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_receipts_not_succeeded ON ONLY core_tool_receipts USING btree (finished_at DESC) WHERE (status <> 'succeeded'::text);

CREATE INDEX core_tool_receipts_tool_finished_at ON ONLY core_tool_receipts USING btree (tool_name, finished_at DESC);

CREATE INDEX core_tool_receipts_p_before_finished_at_idx ON core_tool_receipts_p_before USING btree (finished_at DESC);

CREATE INDEX core_tool_receipts_p_before_finished_at_idx1 ON core_tool_receipts_p_before USING btree (finished_at DESC) WHERE (status <> 'succeeded'::text);

CREATE INDEX core_tool_receipts_p_before_finished_at_idx2 ON core_tool_receipts_p_before USING btree (finished_at DESC) WHERE idempotency_hit;

CREATE INDEX core_tool_receipts_p_before_id_idx ON core_tool_receipts_p_before USING btree (id);

CREATE INDEX core_tool_receipts_p_before_idempotency_of_idx ON core_tool_receipts_p_before USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_receipts_p_before_tool_name_finished_at_idx ON core_tool_receipts_p_before USING btree (tool_name, finished_at DESC);

CREATE INDEX core_tool_receipts_p_nonv7_finished_at_idx ON core_tool_receipts_p_nonv7 USING btree (finished_at DESC);

CREATE INDEX core_tool_receipts_p_nonv7_finished_at_idx1 ON core_tool_receipts_p_nonv7 USING btree (finished_at DESC) WHERE (status <> 'succeeded'::text);

CREATE INDEX core_tool_receipts_p_nonv7_finished_at_idx2 ON core_tool_receipts_p_nonv7 USING btree (finished_at DESC) WHERE idempotency_hit;

CREATE INDEX core_tool_receipts_p_nonv7_id_idx ON core_tool_receipts_p_nonv7 USING btree (id);

CREATE INDEX core_tool_receipts_p_nonv7_idempotency_of_idx ON core_tool_receipts_p_nonv7 USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_receipts_p_nonv7_tool_name_finished_at_idx ON core_tool_receipts_p_nonv7 USING btree (tool_name, finished_at DESC);

CREATE INDEX core_undo_log_call ON core_undo_log USING btree (call_id, id);

CREATE INDEX core_undo_log_row ON core_undo_log USING btree (table_name, row_id, id);

ALTER INDEX brain_run_events_pkey ATTACH PARTITION brain_run_events_p_before_pkey;

ALTER INDEX brain_run_events_pkey ATTACH PARTITION brain_run_events_p_nonv7_pkey;

ALTER INDEX brain_run_programs_pkey ATTACH PARTITION brain_run_programs_p_before_pkey;

ALTER INDEX brain_run_programs_run ATTACH PARTITION brain_run_programs_p_before_run_id_id_idx;

ALTER INDEX brain_run_programs_pkey ATTACH PARTITION brain_run_programs_p_nonv7_pkey;

ALTER INDEX brain_run_programs_run ATTACH PARTITION brain_run_programs_p_nonv7_run_id_id_idx;

ALTER INDEX brain_runs_conversation ATTACH PARTITION brain_runs_p_before_conversation_id_created_at_idx;

ALTER INDEX brain_runs_queued ATTACH PARTITION brain_runs_p_before_conversation_id_id_idx;

ALTER INDEX brain_runs_created_at ATTACH PARTITION brain_runs_p_before_created_at_idx;

ALTER INDEX brain_runs_lease ATTACH PARTITION brain_runs_p_before_lease_until_idx;

ALTER INDEX brain_runs_pkey ATTACH PARTITION brain_runs_p_before_pkey;

ALTER INDEX brain_runs_requested_by ATTACH PARTITION brain_runs_p_before_requested_by_created_at_idx;

ALTER INDEX brain_runs_open ATTACH PARTITION brain_runs_p_before_status_created_at_idx;

ALTER INDEX brain_runs_conversation ATTACH PARTITION brain_runs_p_nonv7_conversation_id_created_at_idx;

ALTER INDEX brain_runs_queued ATTACH PARTITION brain_runs_p_nonv7_conversation_id_id_idx;

ALTER INDEX brain_runs_created_at ATTACH PARTITION brain_runs_p_nonv7_created_at_idx;

ALTER INDEX brain_runs_lease ATTACH PARTITION brain_runs_p_nonv7_lease_until_idx;

ALTER INDEX brain_runs_pkey ATTACH PARTITION brain_runs_p_nonv7_pkey;

ALTER INDEX brain_runs_requested_by ATTACH PARTITION brain_runs_p_nonv7_requested_by_created_at_idx;

ALTER INDEX brain_runs_open ATTACH PARTITION brain_runs_p_nonv7_status_created_at_idx;

ALTER INDEX brain_turns_pkey ATTACH PARTITION brain_turns_p_before_pkey;

ALTER INDEX brain_turns_run ATTACH PARTITION brain_turns_p_before_run_id_iteration_idx;

ALTER INDEX brain_turns_pkey ATTACH PARTITION brain_turns_p_nonv7_pkey;

ALTER INDEX brain_turns_run ATTACH PARTITION brain_turns_p_nonv7_run_id_iteration_idx;

ALTER INDEX core_tool_calls_approved_by ATTACH PARTITION core_tool_calls_p_before_approved_by_created_at_idx;

ALTER INDEX core_tool_calls_created_at ATTACH PARTITION core_tool_calls_p_before_created_at_idx;

ALTER INDEX core_tool_calls_idempotency_of ATTACH PARTITION core_tool_calls_p_before_idempotency_of_idx;

ALTER INDEX core_tool_calls_pkey ATTACH PARTITION core_tool_calls_p_before_pkey;

ALTER INDEX core_tool_calls_requested_by ATTACH PARTITION core_tool_calls_p_before_requested_by_created_at_idx;

ALTER INDEX core_tool_calls_run ATTACH PARTITION core_tool_calls_p_before_run_id_idx;

ALTER INDEX core_tool_calls_tool_created_at ATTACH PARTITION core_tool_calls_p_before_tool_name_created_at_idx;

ALTER INDEX core_tool_calls_limited ATTACH PARTITION core_tool_calls_p_before_tool_name_limited_since_idx;

ALTER INDEX core_tool_calls_approved_by ATTACH PARTITION core_tool_calls_p_nonv7_approved_by_created_at_idx;

ALTER INDEX core_tool_calls_created_at ATTACH PARTITION core_tool_calls_p_nonv7_created_at_idx;

ALTER INDEX core_tool_calls_idempotency_of ATTACH PARTITION core_tool_calls_p_nonv7_idempotency_of_idx;

ALTER INDEX core_tool_calls_pkey ATTACH PARTITION core_tool_calls_p_nonv7_pkey;

ALTER INDEX core_tool_calls_requested_by ATTACH PARTITION core_tool_calls_p_nonv7_requested_by_created_at_idx;

ALTER INDEX core_tool_calls_run ATTACH PARTITION core_tool_calls_p_nonv7_run_id_idx;

ALTER INDEX core_tool_calls_tool_created_at ATTACH PARTITION core_tool_calls_p_nonv7_tool_name_created_at_idx;

ALTER INDEX core_tool_calls_limited ATTACH PARTITION core_tool_calls_p_nonv7_tool_name_limited_since_idx;

ALTER INDEX core_tool_receipts_finished_at ATTACH PARTITION core_tool_receipts_p_before_finished_at_idx;

ALTER INDEX core_tool_receipts_not_succeeded ATTACH PARTITION core_tool_receipts_p_before_finished_at_idx1;

ALTER INDEX core_tool_receipts_idempotency_hits ATTACH PARTITION core_tool_receipts_p_before_finished_at_idx2;

ALTER INDEX core_tool_receipts_id ATTACH PARTITION core_tool_receipts_p_before_id_idx;

ALTER INDEX core_tool_receipts_idempotency_of ATTACH PARTITION core_tool_receipts_p_before_idempotency_of_idx;

ALTER INDEX core_tool_receipts_one_per_call ATTACH PARTITION core_tool_receipts_p_before_one_per_call;

ALTER INDEX core_tool_receipts_tool_finished_at ATTACH PARTITION core_tool_receipts_p_before_tool_name_finished_at_idx;

ALTER INDEX core_tool_receipts_finished_at ATTACH PARTITION core_tool_receipts_p_nonv7_finished_at_idx;

ALTER INDEX core_tool_receipts_not_succeeded ATTACH PARTITION core_tool_receipts_p_nonv7_finished_at_idx1;

ALTER INDEX core_tool_receipts_idempotency_hits ATTACH PARTITION core_tool_receipts_p_nonv7_finished_at_idx2;

ALTER INDEX core_tool_receipts_id ATTACH PARTITION core_tool_receipts_p_nonv7_id_idx;

ALTER INDEX core_tool_receipts_idempotency_of ATTACH PARTITION core_tool_receipts_p_nonv7_idempotency_of_idx;

ALTER INDEX core_tool_receipts_one_per_call ATTACH PARTITION core_tool_receipts_p_nonv7_one_per_call;

ALTER INDEX core_tool_receipts_tool_finished_at ATTACH PARTITION core_tool_receipts_p_nonv7_tool_name_finished_at_idx;

CREATE TRIGGER brain_runs_a_uuid_v7 BEFORE INSERT ON brain_runs FOR EACH ROW EXECUTE FUNCTION gem_require_uuid_v7();

CREATE TRIGGER brain_runs_claim_key BEFORE INSERT ON brain_runs FOR EACH ROW WHEN ((new.idempotency_key IS NOT NULL)) EXECUTE FUNCTION gem_run_claim_key();

CREATE TRIGGER brain_runs_ended AFTER INSERT OR UPDATE OF status ON brain_runs FOR EACH ROW WHEN ((new.status = ANY (ARRAY['completed'::text, 'failed'::text]))) EXECUTE FUNCTION gem_run_ended();

CREATE TRIGGER brain_runs_events_ended AFTER UPDATE OF status ON brain_runs FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text])))) EXECUTE FUNCTION gem_run_changed();

CREATE TRIGGER brain_runs_events_inserted AFTER INSERT ON brain_runs FOR EACH ROW EXECUTE FUNCTION gem_run_changed();

CREATE TRIGGER core_device_attempts_queued AFTER INSERT ON core_device_attempts FOR EACH ROW EXECUTE FUNCTION gem_device_attempt_queued();

CREATE TRIGGER core_rollbacks_capture_write AFTER INSERT OR DELETE OR UPDATE ON core_rollbacks FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER core_tool_calls_a_max_attempts BEFORE INSERT OR UPDATE OF max_attempts ON core_tool_calls FOR EACH ROW EXECUTE FUNCTION gem_check_max_attempts();

CREATE TRIGGER core_tool_calls_a_uuid_v7 BEFORE INSERT ON core_tool_calls FOR EACH ROW EXECUTE FUNCTION gem_require_uuid_v7();

CREATE TRIGGER core_tool_calls_awaiting_approval AFTER INSERT ON core_tool_calls FOR EACH ROW WHEN ((new.status = 'awaiting_approval'::text)) EXECUTE FUNCTION gem_call_awaits_approval();

CREATE TRIGGER core_tool_calls_duplicate AFTER INSERT ON core_tool_calls FOR EACH ROW WHEN ((new.idempotency_of IS NOT NULL)) EXECUTE FUNCTION gem_call_duplicate();

CREATE TRIGGER core_tool_calls_enqueue BEFORE INSERT ON core_tool_calls FOR EACH ROW EXECUTE FUNCTION gem_call_enqueue();

CREATE TRIGGER core_tool_receipts_inserted AFTER INSERT ON core_tool_receipts REFERENCING NEW TABLE AS new_receipts FOR EACH STATEMENT EXECUTE FUNCTION gem_receipts_inserted();

CREATE TRIGGER river_job_gem_deleted AFTER DELETE ON river_job FOR EACH ROW WHEN (((old.kind = 'gem.tool_call'::text) AND (old.state <> ALL (ARRAY['completed'::river_job_state, 'cancelled'::river_job_state, 'discarded'::river_job_state])))) EXECUTE FUNCTION gem_job_deleted();

CREATE TRIGGER river_job_gem_finished AFTER UPDATE OF state ON river_job FOR EACH ROW WHEN (((new.kind = 'gem.tool_call'::text) AND (new.state = ANY (ARRAY['discarded'::river_job_state, 'cancelled'::river_job_state, 'completed'::river_job_state])) AND (new.state IS DISTINCT FROM old.state) AND (current_setting('gem.jobs_receipted'::text, true) IS DISTINCT FROM 'on'::text))) EXECUTE FUNCTION gem_job_finished();

CREATE TRIGGER skill_dependencies_no_cycle BEFORE INSERT OR UPDATE ON skill_dependencies FOR EACH ROW EXECUTE FUNCTION gem_skill_dependency_check();

ALTER TABLE ONLY agent_messages
    ADD CONSTRAINT agent_messages_run_id_fkey FOREIGN KEY (run_id) REFERENCES brain_runs(id) ON DELETE SET NULL;

ALTER TABLE ONLY agent_messages
    ADD CONSTRAINT agent_messages_session_id_fkey FOREIGN KEY (session_id) REFERENCES agent_sessions(id) ON DELETE CASCADE;

ALTER TABLE ONLY agent_session_decisions
    ADD CONSTRAINT agent_session_decisions_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY agent_session_decisions
    ADD CONSTRAINT agent_session_decisions_session_id_fkey FOREIGN KEY (session_id) REFERENCES agent_sessions(id) ON DELETE CASCADE;

ALTER TABLE ONLY agent_sessions
    ADD CONSTRAINT agent_sessions_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES agents(id) ON DELETE CASCADE;

ALTER TABLE ONLY agent_skills
    ADD CONSTRAINT agent_skills_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES agents(id) ON DELETE CASCADE;

ALTER TABLE ONLY agent_skills
    ADD CONSTRAINT agent_skills_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES skills(id) ON DELETE CASCADE;

ALTER TABLE brain_run_programs
    ADD CONSTRAINT brain_run_programs_run_id_fkey FOREIGN KEY (run_id) REFERENCES brain_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY brain_studio_sessions
    ADD CONSTRAINT brain_studio_sessions_caller_fkey FOREIGN KEY (caller) REFERENCES core_callers(name) ON DELETE CASCADE;

ALTER TABLE brain_turns
    ADD CONSTRAINT brain_turns_run_id_fkey FOREIGN KEY (run_id) REFERENCES brain_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY core_approvals
    ADD CONSTRAINT core_approvals_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY core_device_attempts
    ADD CONSTRAINT core_device_attempts_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY core_device_tools
    ADD CONSTRAINT core_device_tools_device_fkey FOREIGN KEY (device) REFERENCES core_devices(name) ON DELETE CASCADE;

ALTER TABLE ONLY core_idempotency_keys
    ADD CONSTRAINT core_idempotency_keys_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY core_mcp_tasks
    ADD CONSTRAINT core_mcp_tasks_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY core_rollbacks
    ADD CONSTRAINT core_rollbacks_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE core_tool_receipts
    ADD CONSTRAINT core_tool_receipts_call_id_fkey FOREIGN KEY (call_id) REFERENCES core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE core_tool_receipts
    ADD CONSTRAINT core_tool_receipts_idempotency_of_fkey FOREIGN KEY (idempotency_of) REFERENCES core_tool_calls(id) ON DELETE SET NULL;

ALTER TABLE ONLY skill_dependencies
    ADD CONSTRAINT skill_dependencies_requires_skill_id_fkey FOREIGN KEY (requires_skill_id) REFERENCES skills(id) ON DELETE CASCADE;

ALTER TABLE ONLY skill_dependencies
    ADD CONSTRAINT skill_dependencies_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES skills(id) ON DELETE CASCADE;

ALTER TABLE ONLY skill_files
    ADD CONSTRAINT skill_files_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES skills(id) ON DELETE CASCADE;

ALTER TABLE core_approvals ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_approvals_read ON core_approvals FOR SELECT USING (((EXISTS ( SELECT 1
   FROM core_tool_calls c
  WHERE (c.id = core_approvals.call_id))) OR ( SELECT gem_session_caller_holds('approve'::text) AS gem_session_caller_holds)));

ALTER TABLE core_device_attempts ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_device_attempts_read ON core_device_attempts FOR SELECT USING ((EXISTS ( SELECT 1
   FROM core_tool_calls c
  WHERE (c.id = core_device_attempts.call_id))));

ALTER TABLE core_tool_calls ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_tool_calls_insert ON core_tool_calls FOR INSERT WITH CHECK (true);

CREATE POLICY core_tool_calls_read ON core_tool_calls FOR SELECT USING (((requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (approved_by = ('sql:'::text || (SESSION_USER)::text)) OR ( SELECT gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls)));

ALTER TABLE core_tool_receipts ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_tool_receipts_read ON core_tool_receipts FOR SELECT USING ((EXISTS ( SELECT 1
   FROM core_tool_calls c
  WHERE (c.id = core_tool_receipts.call_id))));


--
-- PostgreSQL database dump complete
--

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
END
$$;
-- +goose StatementEnd

-- Only the migrating role may run these (they act for any caller).
REVOKE ALL ON FUNCTION gem_approvals_expire() FROM PUBLIC;
REVOKE ALL ON FUNCTION gem_call_cancel(call uuid, canceller text) FROM PUBLIC;
REVOKE ALL ON FUNCTION gem_caller_grant(caller text, permissions text[], agents text[]) FROM PUBLIC;

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO gem_caller', current_schema());
        GRANT SELECT (name, kind, permissions, agents, note, created_at, updated_at, revoked_at) ON core_callers TO gem_caller;
        GRANT SELECT ON core_approval_policies TO gem_caller;
        GRANT SELECT ON core_approvals TO gem_caller;
        GRANT SELECT ON core_tool_calls TO gem_caller;
        GRANT INSERT (id, tool_name, input, idempotency_key, max_attempts, run_id, agent, requested_by, user_id, device, device_wait_ms, traceparent, tracestate) ON core_tool_calls TO gem_caller;
        GRANT SELECT ON core_tool_receipts TO gem_caller;
        GRANT SELECT ON core_calls TO gem_caller;
        GRANT SELECT ON core_device_attempts TO gem_caller;
        GRANT SELECT ON core_devices_status TO gem_caller;
        GRANT SELECT ON core_idempotency_hits TO gem_caller;
        GRANT SELECT ON core_pending_approvals TO gem_caller;
        GRANT SELECT ON core_queue_depth TO gem_caller;
        GRANT SELECT ON core_recent_failures TO gem_caller;
        GRANT SELECT ON core_tool_stats TO gem_caller;
        GRANT SELECT ON core_tools TO gem_caller;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO gem_auditor', current_schema());
        GRANT SELECT (name, kind, permissions, agents, note, created_at, updated_at, revoked_at) ON core_callers TO gem_auditor;
        GRANT SELECT ON core_approval_policies TO gem_auditor;
        GRANT SELECT ON core_approvals TO gem_auditor;
        GRANT SELECT ON core_tool_calls TO gem_auditor;
        GRANT SELECT ON core_tool_receipts TO gem_auditor;
        GRANT SELECT ON core_calls TO gem_auditor;
        GRANT SELECT ON core_device_attempts TO gem_auditor;
        GRANT SELECT ON core_devices_status TO gem_auditor;
        GRANT SELECT ON core_idempotency_hits TO gem_auditor;
        GRANT SELECT ON core_pending_approvals TO gem_auditor;
        GRANT SELECT ON core_queue_depth TO gem_auditor;
        GRANT SELECT ON core_recent_failures TO gem_auditor;
        GRANT SELECT ON core_tool_stats TO gem_auditor;
        GRANT SELECT ON core_tools TO gem_auditor;
    END IF;
END
$$;
-- +goose StatementEnd

-- The database role that runs the migrations is a caller that may do everything.
INSERT INTO core_callers (name, kind, permissions, note)
VALUES ('sql:' || current_user, 'sql', '{*}', 'the database role that ran GEM''s migrations');
