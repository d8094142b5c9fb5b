-- The schema the migration lines leave (River's, the core's in sql/migrations, each pack's in
-- packs/*/migrations), as pg_dump prints it: make schema writes it, and TestSchemaMatchesMigrations fails
-- when it is not current. The monthly partitions and goose's tables are left out; the privileges come last.

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

CREATE TYPE public.river_job_state AS ENUM (
    'available',
    'cancelled',
    'completed',
    'discarded',
    'pending',
    'retryable',
    'running',
    'scheduled'
);

CREATE FUNCTION public.brain_tool_stumbles(since timestamp with time zone, until timestamp with time zone DEFAULT now(), viewer text DEFAULT ''::text) RETURNS TABLE(tool text, agent text, calls bigint, stumbles bigint, stumble_rate numeric, validation_errors bigint, validation_property text, validation_runs uuid[], unknown_tool bigint, unknown_tool_runs uuid[], unknown_names text[], tool_not_enabled bigint, tool_not_enabled_runs uuid[], searches_no_call bigint, search_runs uuid[])
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN a.reason = 'unknown_tool' THEN '(unknown)' ELSE coalesce(a.tool, '') END AS tool,
        coalesce(a.agent, '') AS agent,
        count(*) FILTER (WHERE a.reason IS DISTINCT FROM 'search_no_call') AS calls,
        count(a.reason) AS stumbles,
        round(count(a.reason)::numeric / count(*), 3) AS stumble_rate,
        count(*) FILTER (WHERE a.reason = 'validation_error') AS validation_errors,
        mode() WITHIN GROUP (ORDER BY a.property) AS validation_property,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'validation_error' AND a.run_id IS NOT NULL))[1:3],
        count(*) FILTER (WHERE a.reason = 'unknown_tool') AS unknown_tool,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'unknown_tool' AND a.run_id IS NOT NULL))[1:3],
        (array_agg(DISTINCT a.tool) FILTER (WHERE a.reason = 'unknown_tool' AND a.tool IS NOT NULL))[1:5] AS unknown_names,
        count(*) FILTER (WHERE a.reason = 'tool_not_enabled') AS tool_not_enabled,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'tool_not_enabled' AND a.run_id IS NOT NULL))[1:3],
        count(*) FILTER (WHERE a.reason = 'search_no_call') AS searches_no_call,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'search_no_call'))[1:3]
    FROM brain_tool_attempts a
    WHERE a.at >= since AND a.at < until
      AND (viewer = '' OR a.requested_by = viewer OR a.approved_by = viewer)
    GROUP BY 1, 2
    ORDER BY stumble_rate DESC, stumbles DESC, tool, agent
$$;

CREATE FUNCTION public.gem_agent_call_settings(agent_slug text, for_user text, tool_name text, OUT enabled boolean, OUT timeout_ms integer, OUT max_attempts integer, OUT priority integer) RETURNS record
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

CREATE FUNCTION public.gem_agent_call_timeout(agent_slug text, for_user text, tool_name text) RETURNS integer
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN (SELECT s.timeout_ms FROM gem_agent_call_settings(agent_slug, for_user, tool_name) s);

END
$$;

CREATE FUNCTION public.gem_agent_may_call(agent_slug text, for_user text, tool_name text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM gem_agent_tools(agent_slug, for_user) t WHERE t.tool = tool_name);

END
$$;

CREATE FUNCTION public.gem_agent_skills(agent_slug text, for_user text) RETURNS TABLE(skill_id uuid, slug text, available boolean, priority integer)
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

CREATE FUNCTION public.gem_agent_tools(agent_slug text, for_user text) RETURNS TABLE(tool text)
    LANGUAGE sql STABLE
    AS $$
    SELECT DISTINCT unnest(s.tools)
    FROM gem_agent_skills(agent_slug, for_user) g JOIN skills s ON s.id = g.skill_id
    WHERE g.available
$$;

CREATE FUNCTION public.gem_approval_needed(tool text, agent text) RETURNS TABLE(required_by text, expires_ms integer)
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

CREATE FUNCTION public.gem_approval_receipt(call uuid, code text, message text, details jsonb) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, started_at, finished_at)
    SELECT c.id, c.tool_name, 'failed', jsonb_build_object('code', code, 'message', message, 'details', details),
           code, now(), now()
    FROM core_tool_calls c WHERE c.id = call
    ON CONFLICT (call_id) DO NOTHING
$$;

CREATE FUNCTION public.gem_approvals_expire() RETURNS integer
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

CREATE FUNCTION public.gem_calendar_event_guard() RETURNS trigger
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

CREATE FUNCTION public.gem_call_awaits_approval() RETURNS trigger
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

CREATE FUNCTION public.gem_call_cancel(call uuid, canceller text) RETURNS text
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

CREATE FUNCTION public.gem_call_decide(call uuid, approve boolean, reason text, decider text DEFAULT NULL::text) RETURNS text
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

CREATE FUNCTION public.gem_call_duplicate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM gem_hit_receipts(ARRAY[NEW.idempotency_of]);

RETURN NULL;

END
$$;

CREATE FUNCTION public.gem_call_enqueue() RETURNS trigger
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

CREATE TABLE public.core_callers (
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

CREATE FUNCTION public.gem_caller_grant(caller text, permissions text[], agents text[] DEFAULT NULL::text[]) RETURNS public.core_callers
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

CREATE FUNCTION public.gem_capture_write() RETURNS trigger
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

CREATE FUNCTION public.gem_check_max_attempts() RETURNS trigger
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

CREATE FUNCTION public.gem_collect_writes() RETURNS jsonb
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

CREATE FUNCTION public.gem_current_call() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$
    SELECT nullif(current_setting('gem.call_id', true), '')::uuid
$$;

CREATE TABLE public.core_devices (
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

CREATE FUNCTION public.gem_device_alive(d public.core_devices) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT d.connected AND d.alive_until > now()
$$;

CREATE FUNCTION public.gem_device_attempt_queued() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('gem_device_dispatch', NEW.device);

RETURN NULL;

END
$$;

CREATE FUNCTION public.gem_device_attempts_end(dev text, only_sent boolean DEFAULT false, keep bigint[] DEFAULT '{}'::bigint[]) RETURNS integer
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

CREATE FUNCTION public.gem_device_delete(dev text) RETURNS boolean
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

CREATE FUNCTION public.gem_device_disconnected(dev text, reg uuid) RETURNS boolean
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

CREATE FUNCTION public.gem_devices_expire() RETURNS SETOF text
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

CREATE FUNCTION public.gem_ensure_month(month timestamp with time zone) RETURNS integer
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

CREATE FUNCTION public.gem_executor_lock_key(executor_id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT hashtextextended('gem.executor:' || executor_id, 0)
$$;

CREATE FUNCTION public.gem_hit_receipts(holders uuid[]) RETURNS void
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

CREATE FUNCTION public.gem_idempotency_window() RETURNS interval
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

CREATE FUNCTION public.gem_input_fingerprint(tool text, input jsonb) RETURNS bytea
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

CREATE FUNCTION public.gem_inspection_locked_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status = 'locked' THEN
        RAISE EXCEPTION 'inspection % is locked', OLD.id USING ERRCODE = '55000';

END IF;

RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;

END
$$;

CREATE FUNCTION public.gem_inspection_part_guard() RETURNS trigger
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

CREATE FUNCTION public.gem_job_call_id(args jsonb) RETURNS uuid
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT CASE WHEN args ->> 'call_id' ~ '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$'
                THEN (args ->> 'call_id')::uuid END
$_$;

CREATE FUNCTION public.gem_job_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM gem_job_failed_receipt(OLD, 'job_deleted', 'the call''s job was deleted before it finished');

RETURN NULL;

END
$$;

CREATE TABLE public.river_job (
    id bigint NOT NULL,
    state public.river_job_state DEFAULT 'available'::public.river_job_state NOT NULL,
    attempt smallint DEFAULT 0 NOT NULL,
    max_attempts smallint DEFAULT 25 NOT NULL,
    attempted_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finalized_at timestamp with time zone,
    scheduled_at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 1 NOT NULL,
    args jsonb NOT NULL,
    attempted_by text[],
    errors jsonb[],
    kind text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    tags character varying(255)[] DEFAULT '{}'::character varying[] NOT NULL,
    unique_key bytea,
    unique_states bit(8),
    CONSTRAINT finalized_or_finalized_at_null CHECK ((((finalized_at IS NULL) AND (state <> ALL (ARRAY['cancelled'::public.river_job_state, 'completed'::public.river_job_state, 'discarded'::public.river_job_state]))) OR ((finalized_at IS NOT NULL) AND (state = ANY (ARRAY['cancelled'::public.river_job_state, 'completed'::public.river_job_state, 'discarded'::public.river_job_state]))))),
    CONSTRAINT kind_length CHECK (((char_length(kind) > 0) AND (char_length(kind) < 128))),
    CONSTRAINT max_attempts_is_positive CHECK ((max_attempts > 0)),
    CONSTRAINT priority_in_range CHECK (((priority >= 1) AND (priority <= 4))),
    CONSTRAINT queue_length CHECK (((char_length(queue) > 0) AND (char_length(queue) < 128)))
);

CREATE FUNCTION public.gem_job_failed_receipt(job public.river_job, code text, message text) RETURNS void
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

CREATE FUNCTION public.gem_job_finished() RETURNS trigger
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

CREATE FUNCTION public.gem_jsonb_or_null(t text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
BEGIN
    RETURN t::jsonb;

EXCEPTION WHEN others THEN
    RETURN NULL;

END
$$;

CREATE FUNCTION public.gem_lore_search(search_query text, search_collection text, min_score real, max_results integer) RETURNS TABLE(rank integer, chunk_id uuid, document_id uuid, score real, coverage real, similarity real, density real, snippet text)
    LANGUAGE sql STABLE PARALLEL SAFE
    SET "pg_trgm.word_similarity_threshold" TO '0.3'
    SET enable_seqscan TO 'off'
    AS $$
    WITH q AS (
        SELECT gem_search_any(search_query) AS any_word, gem_search_terms(search_query) AS terms
    ), candidates AS (
        SELECT c.id, c.document_id, c.ordinal, c.content,
               gem_search_coverage(c.tsv, q.terms) AS coverage,
               word_similarity(search_query, gem_lore_search_text(c.context, c.content)) AS similarity,
               ts_rank_cd(c.tsv, q.any_word, 32) AS density
        FROM lore_chunks c
        JOIN lore_documents d ON d.id = c.document_id
        CROSS JOIN q
        WHERE (c.tsv @@ q.any_word OR search_query <% gem_lore_search_text(c.context, c.content))
          AND (search_collection IS NULL OR d.collection = search_collection)
    ), scored AS (
        SELECT k.*, (0.5 * k.coverage + 0.3 * k.similarity + 0.2 * k.density)::real AS score
        FROM candidates k
    ), top AS (
        SELECT s.*, row_number() OVER (ORDER BY s.score DESC, s.document_id, s.ordinal)::integer AS rank
        FROM scored s
        WHERE s.score >= min_score
        ORDER BY s.score DESC, s.document_id, s.ordinal
        LIMIT max_results
    )
    SELECT t.rank, t.id, t.document_id, t.score, t.coverage, t.similarity, t.density,
           ts_headline('english'::regconfig, t.content, q.any_word,
                       'MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … ", StartSel=«, StopSel=»')
    FROM top t CROSS JOIN q
    ORDER BY t.rank
$$;

CREATE FUNCTION public.gem_lore_search_text(context text, content text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(context, '') || E'\n' || coalesce(content, '')
$$;

CREATE FUNCTION public.gem_memory_document(content text, tags text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'B')
$$;

CREATE FUNCTION public.gem_name_partition_keys(part text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF part LIKE 'core\_tool\_receipts\_p%' THEN
        EXECUTE format('ALTER INDEX %I RENAME TO %I', part || '_pkey', part || '_one_per_call');

END IF;

END
$$;

CREATE FUNCTION public.gem_note_document(title text, body text, tags text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
        || setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'B')
$$;

CREATE FUNCTION public.gem_partitioned_tables() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ARRAY['core_tool_calls', 'core_tool_receipts', 'brain_runs', 'brain_turns', 'brain_run_programs', 'brain_run_events']
$$;

CREATE FUNCTION public.gem_permission_matches(pattern text, permission text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT pattern = '*' OR pattern = permission
        OR (right(pattern, 1) = '*' AND starts_with(permission, left(pattern, -1)))
$$;

CREATE FUNCTION public.gem_queued_turns_start(new_owner text, lease interval, lim integer) RETURNS TABLE(run_id uuid, run_owner text)
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

CREATE FUNCTION public.gem_quote_amounts_guard() RETURNS trigger
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

CREATE FUNCTION public.gem_quote_line_guard() RETURNS trigger
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

CREATE FUNCTION public.gem_rate_move(key text, max integer, per_ms bigint, was timestamp with time zone) RETURNS timestamp with time zone
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

CREATE FUNCTION public.gem_rate_release(key text, at timestamp with time zone) RETURNS void
    LANGUAGE sql
    AS $$
    UPDATE core_limit_rates SET starts = array_remove(starts, at) WHERE limit_key = key;

$$;

CREATE FUNCTION public.gem_rate_take(key text, max integer, per_ms bigint, horizon_ms bigint, OUT at timestamp with time zone, OUT wait_ms double precision) RETURNS record
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

CREATE FUNCTION public.gem_reads_all_calls(viewer name) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN pg_has_role(viewer, (SELECT relowner FROM pg_class WHERE oid = 'core_tool_calls'::regclass), 'USAGE')
        OR EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'gem_auditor' AND pg_has_role(viewer, r.oid, 'USAGE'))
        OR gem_session_caller_holds('audit');

END
$$;

CREATE FUNCTION public.gem_receipts_inserted() RETURNS trigger
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

CREATE FUNCTION public.gem_request_key_claim(call uuid, caller text, tool text, request_key text, input jsonb) RETURNS uuid
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

CREATE FUNCTION public.gem_require_uuid_v7() RETURNS trigger
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

CREATE FUNCTION public.gem_run_awaiting(run uuid, ids uuid[]) RETURNS uuid[]
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

CREATE FUNCTION public.gem_run_calls_added(run uuid, ids uuid[]) RETURNS integer
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

CREATE FUNCTION public.gem_run_changed() RETURNS trigger
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

CREATE FUNCTION public.gem_run_claim_key() RETURNS trigger
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

CREATE FUNCTION public.gem_run_ended() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('gem_run', NEW.id::text);

RETURN NULL;

END
$$;

CREATE FUNCTION public.gem_run_events_add(run uuid, kinds text[], datas jsonb[], notify boolean DEFAULT true) RETURNS integer
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

CREATE FUNCTION public.gem_run_fence(run uuid, claim text) RETURNS void
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

CREATE FUNCTION public.gem_run_key_claim(caller text, request_key text, fp bytea, run uuid) RETURNS void
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

CREATE FUNCTION public.gem_run_receipts_settled(run uuid, ids uuid[]) RETURNS integer
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

CREATE FUNCTION public.gem_run_watch(run uuid, who text) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    PERFORM 1 FROM brain_runs WHERE id = run FOR SHARE;

DELETE FROM brain_run_watches WHERE since < now() - interval '1 day';

INSERT INTO brain_run_watches (run_id, watcher) VALUES (run, who) ON CONFLICT DO NOTHING;

END
$$;

CREATE FUNCTION public.gem_search_any(query text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT replace(plainto_tsquery('english'::regconfig, coalesce(query, ''))::text, ' & ', ' | ')::tsquery
$$;

CREATE FUNCTION public.gem_search_coverage(doc tsvector, terms tsquery[]) RETURNS real
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(CASE WHEN b.body @@ t THEN 1.0 WHEN doc @@ t THEN 0.5 ELSE 0 END)::real
                    / nullif(cardinality(terms), 0), 0)
    FROM (SELECT ts_filter(doc, '{b,c,d}') AS body) AS b, unnest(terms) AS t
$$;

CREATE FUNCTION public.gem_search_terms(query text) RETURNS tsquery[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(array_agg(DISTINCT t::tsquery), '{}')
    FROM unnest(string_to_array(nullif(plainto_tsquery('english'::regconfig, coalesce(query, ''))::text, ''), ' & ')) AS t
$$;

CREATE FUNCTION public.gem_session_caller_holds(permission text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM core_callers g WHERE g.name = 'sql:' || session_user AND g.revoked_at IS NULL
                   AND EXISTS (SELECT 1 FROM unnest(g.permissions) p WHERE gem_permission_matches(p, permission)));

END
$$;

CREATE FUNCTION public.gem_skill_dependency_check() RETURNS trigger
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

CREATE FUNCTION public.gem_tool_document(name_words text, description text, properties text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('gem_tool_words'::regconfig, coalesce(name_words, '')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(description, '')), 'B')
        || setweight(to_tsvector('english'::regconfig, coalesce(properties, '')), 'C')
$$;

CREATE FUNCTION public.gem_trace_metadata(traceparent text, tracestate text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN traceparent IS NULL THEN '{}'::jsonb
                ELSE jsonb_strip_nulls(jsonb_build_object('traceparent', traceparent, 'tracestate', tracestate)) END
$$;

CREATE FUNCTION public.gem_uuid_time(id uuid) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT to_timestamp(('x' || left(replace(id::text, '-', ''), 12))::bit(48)::bigint / 1000.0)
$$;

CREATE FUNCTION public.gem_uuid_v7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
    SELECT encode(overlay(set_bit(set_bit(uuid_send(gen_random_uuid()), 52, 1), 53, 1)
                          PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                          FROM 1 FOR 6), 'hex')::uuid
$$;

CREATE FUNCTION public.gem_uuid_v7_floor(at timestamp with time zone) RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT encode(substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3)
                  || '\x00000000000000000000'::bytea, 'hex')::uuid
$$;

CREATE FUNCTION public.gem_without_secrets(v jsonb, paths jsonb) RETURNS jsonb
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

CREATE FUNCTION public.river_job_state_in_bitmask(bitmask bit, state public.river_job_state) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE state
        WHEN 'available' THEN get_bit(bitmask, 7)
        WHEN 'cancelled' THEN get_bit(bitmask, 6)
        WHEN 'completed' THEN get_bit(bitmask, 5)
        WHEN 'discarded' THEN get_bit(bitmask, 4)
        WHEN 'pending'   THEN get_bit(bitmask, 3)
        WHEN 'retryable' THEN get_bit(bitmask, 2)
        WHEN 'running'   THEN get_bit(bitmask, 1)
        WHEN 'scheduled' THEN get_bit(bitmask, 0)
        ELSE 0
    END = 1;

$$;

CREATE TEXT SEARCH DICTIONARY public.gem_english_all (
    TEMPLATE = pg_catalog.snowball,
    language = 'english' );

CREATE TEXT SEARCH CONFIGURATION public.gem_tool_words (
    PARSER = pg_catalog."default" );

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR asciiword WITH public.gem_english_all;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR word WITH public.gem_english_all;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR numword WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR email WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR url WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR host WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR sfloat WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR version WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR hword_numpart WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR hword_part WITH public.gem_english_all;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR hword_asciipart WITH public.gem_english_all;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR numhword WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR asciihword WITH public.gem_english_all;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR hword WITH public.gem_english_all;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR url_path WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR file WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR "float" WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR "int" WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.gem_tool_words
    ADD MAPPING FOR uint WITH simple;

CREATE TABLE public.agent_memories (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    agent text NOT NULL,
    user_id text NOT NULL,
    kind text DEFAULT 'note'::text NOT NULL,
    content text NOT NULL,
    content_key text GENERATED ALWAYS AS (md5(lower(regexp_replace(btrim(content), '\s+'::text, ' '::text, 'g'::text)))) STORED,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    importance double precision DEFAULT 0.5 NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (public.gem_memory_document(content, tags)) STORED,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT agent_memories_agent_check CHECK (((agent <> ''::text) AND (length(agent) <= 200))),
    CONSTRAINT agent_memories_content_check CHECK (((btrim(content) <> ''::text) AND (length(content) <= 4000))),
    CONSTRAINT agent_memories_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT agent_memories_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_]{0,39}$'::text)),
    CONSTRAINT agent_memories_tags_check CHECK ((cardinality(tags) <= 20)),
    CONSTRAINT agent_memories_user_id_check CHECK (((user_id <> ''::text) AND (length(user_id) <= 200)))
);

CREATE TABLE public.agent_messages (
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

ALTER TABLE public.agent_messages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.agent_messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.agent_session_decisions (
    session_id text NOT NULL,
    call_id uuid NOT NULL,
    run_id uuid,
    told_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.agent_sessions (
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

CREATE TABLE public.agent_skills (
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

CREATE TABLE public.agents (
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

CREATE TABLE public.brain_request_keys (
    requested_by text NOT NULL,
    key_hash bytea NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    run_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.brain_run_events (
    run_id uuid NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    kind text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT brain_run_events_seq_check CHECK ((seq >= 1))
)
PARTITION BY RANGE (run_id);

CREATE TABLE public.brain_run_events_p_before (
    run_id uuid NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    kind text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT brain_run_events_seq_check CHECK ((seq >= 1))
);

CREATE TABLE public.brain_run_events_p_nonv7 (
    run_id uuid NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    kind text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT brain_run_events_seq_check CHECK ((seq >= 1))
);

CREATE TABLE public.brain_run_programs (
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

ALTER TABLE public.brain_run_programs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.brain_run_programs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.brain_run_programs_p_before (
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

CREATE TABLE public.brain_run_programs_p_nonv7 (
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

CREATE TABLE public.brain_run_watches (
    run_id uuid NOT NULL,
    watcher text NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.brain_runs (
    id uuid DEFAULT public.gem_uuid_v7() NOT NULL,
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

CREATE TABLE public.brain_runs_p_before (
    id uuid DEFAULT public.gem_uuid_v7() NOT NULL,
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

CREATE TABLE public.brain_runs_p_nonv7 (
    id uuid DEFAULT public.gem_uuid_v7() NOT NULL,
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

CREATE TABLE public.brain_studio_sessions (
    id_sha256 bytea NOT NULL,
    caller text NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.core_tool_calls (
    id uuid DEFAULT public.gem_uuid_v7() NOT NULL,
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

COMMENT ON COLUMN public.core_tool_calls.status IS 'queued until the call''s receipt sets its final status; core_calls shows running calls as running';

COMMENT ON COLUMN public.core_tool_calls.traceparent IS 'W3C traceparent of the span that made the call (its trace id is the one to look up); copied into the job''s metadata';

COMMENT ON COLUMN public.core_tool_calls.idempotency_of IS 'set on a duplicate request: the call holding its (caller, tool, idempotency_key); its receipt repeats that call''s';

COMMENT ON COLUMN public.core_tool_calls.approved_by IS 'the caller who approved the stored plan this call belongs to: the call runs with no more than it holds';

CREATE TABLE public.core_tool_receipts (
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

CREATE VIEW public.brain_tool_attempts AS
 SELECT c.created_at AS at,
    c.run_id,
    c.agent,
    c.tool_name AS tool,
    c.id AS call_id,
        CASE
            WHEN (r.error_code = ANY (ARRAY['validation_error'::text, 'unknown_tool'::text, 'tool_not_enabled'::text])) THEN r.error_code
            ELSE NULL::text
        END AS reason,
        CASE
            WHEN (r.error_code = 'validation_error'::text) THEN (r.error #>> '{details,violations,0,path}'::text[])
            ELSE NULL::text
        END AS property,
    NULL::text AS query,
    c.requested_by,
    c.approved_by
   FROM (public.core_tool_calls c
     LEFT JOIN public.core_tool_receipts r ON (((r.call_id = c.id) AND (c.status <> 'queued'::text))))
  WHERE (c.agent IS NOT NULL)
UNION ALL
 SELECT run.created_at AS at,
    m.run_id,
    run.agent,
    t.tool,
    NULL::uuid AS call_id,
    (e.error ->> 'code'::text) AS reason,
    (e.error #>> '{details,violations,0,path}'::text[]) AS property,
    NULL::text AS query,
    run.requested_by,
    run.approved_by
   FROM (((public.agent_messages m
     JOIN public.brain_runs run ON ((run.id = m.run_id)))
     CROSS JOIN LATERAL ( SELECT (public.gem_jsonb_or_null(m.content) -> 'error'::text) AS error) e)
     CROSS JOIN LATERAL ( SELECT replace((tc.value ->> 'name'::text), '__'::text, '.'::text) AS tool
           FROM public.agent_messages a,
            LATERAL jsonb_array_elements(a.tool_calls) tc(value)
          WHERE ((a.run_id = m.run_id) AND (a.role = 'assistant'::text) AND (a.id < m.id) AND ((tc.value ->> 'id'::text) = m.tool_call_id))
          ORDER BY a.id DESC
         LIMIT 1) t)
  WHERE ((m.role = 'tool'::text) AND (m.call_id IS NULL) AND (m.content ~~ '{"error":{"code":%'::text) AND ((e.error ->> 'code'::text) = ANY (ARRAY['validation_error'::text, 'unknown_tool'::text, 'tool_not_enabled'::text])) AND (t.tool <> ALL (ARRAY['search_tools'::text, 'describe_tool'::text, 'load_skill'::text, 'read_skill_file'::text, 'run_code'::text])))
UNION ALL
 SELECT run.created_at AS at,
    run.id AS run_id,
    run.agent,
    (array_agg(replace((public.gem_jsonb_or_null((tc.value ->> 'arguments'::text)) ->> 'name'::text), '__'::text, '.'::text) ORDER BY a.id DESC, tc.ordinality DESC) FILTER (WHERE (((tc.value ->> 'name'::text) = 'describe_tool'::text) AND (answer.status = 'succeeded'::text))))[1] AS tool,
    NULL::uuid AS call_id,
    'search_no_call'::text AS reason,
    NULL::text AS property,
    (array_agg((public.gem_jsonb_or_null((tc.value ->> 'arguments'::text)) ->> 'query'::text) ORDER BY a.id DESC, tc.ordinality DESC) FILTER (WHERE ((tc.value ->> 'name'::text) = 'search_tools'::text)))[1] AS query,
    run.requested_by,
    run.approved_by
   FROM (((public.brain_runs run
     JOIN public.agent_messages a ON (((a.run_id = run.id) AND (a.role = 'assistant'::text) AND (a.tool_calls IS NOT NULL))))
     CROSS JOIN LATERAL jsonb_array_elements(a.tool_calls) WITH ORDINALITY tc(value, ordinality))
     LEFT JOIN LATERAL ( SELECT (public.gem_jsonb_or_null(d.content) ->> 'status'::text) AS status
           FROM public.agent_messages d
          WHERE ((d.run_id = run.id) AND (d.role = 'tool'::text) AND (d.tool_call_id = (tc.value ->> 'id'::text)))
         LIMIT 1) answer ON (true))
  WHERE ((run.mode = 'chat'::text) AND (run.status = 'completed'::text) AND (cardinality(run.call_ids) = 0) AND ((tc.value ->> 'name'::text) = ANY (ARRAY['search_tools'::text, 'describe_tool'::text])))
  GROUP BY run.id, run.created_at, run.agent, run.requested_by, run.approved_by
 HAVING (NOT (EXISTS ( SELECT 1
           FROM public.agent_messages r
          WHERE ((r.run_id = run.id) AND (r.role = 'tool'::text) AND (r.tool_call_id = (array_agg((tc.value ->> 'id'::text) ORDER BY a.id DESC, tc.ordinality DESC))[1]) AND (((public.gem_jsonb_or_null(r.content) -> 'result'::text) ->> 'fits'::text) = 'false'::text)))));

COMMENT ON VIEW public.brain_tool_attempts IS 'every attempt an agent made at a tool (calls and calls a chat refused), and chat runs that searched for tools and made no call; reason says how one stumbled';

CREATE TABLE public.brain_tool_search (
    key text NOT NULL,
    name text NOT NULL,
    name_words text NOT NULL,
    description text NOT NULL,
    properties text NOT NULL,
    document tsvector GENERATED ALWAYS AS (public.gem_tool_document(name_words, description, properties)) STORED,
    seen_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT brain_tool_search_key_check CHECK ((key ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT brain_tool_search_name_check CHECK (((name <> ''::text) AND (length(name) <= 200)))
);

CREATE TABLE public.brain_turns (
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

ALTER TABLE public.brain_turns ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.brain_turns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.brain_turns_p_before (
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

CREATE TABLE public.brain_turns_p_nonv7 (
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

CREATE TABLE public.calendar_events (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT calendar_events_cancelled_at CHECK (((status = 'cancelled'::text) = (cancelled_at IS NOT NULL))),
    CONSTRAINT calendar_events_context CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT calendar_events_end_after_start CHECK ((end_at > start_at)),
    CONSTRAINT calendar_events_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'cancelled'::text]))),
    CONSTRAINT calendar_events_title_check CHECK (((title <> ''::text) AND (length(title) <= 200)))
);

CREATE TABLE public.comms_log (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

CREATE TABLE public.core_approval_policies (
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

ALTER TABLE public.core_approval_policies ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.core_approval_policies_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.core_approvals (
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

CREATE VIEW public.core_calls AS
 SELECT c.id,
    c.tool_name,
    c.input,
        CASE
            WHEN (c.status <> 'queued'::text) THEN c.status
            WHEN (j.state = 'running'::public.river_job_state) THEN 'running'::text
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
   FROM ((public.core_tool_calls c
     LEFT JOIN public.river_job j ON ((j.id = c.job_id)))
     LEFT JOIN public.core_tool_receipts r ON (((r.call_id = c.id) AND (c.status <> 'queued'::text))))
  WHERE (( SELECT pg_has_role(CURRENT_USER, o.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o
          WHERE (o.oid = ('public.core_tool_calls'::regclass)::oid)) OR ( SELECT public.gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR (c.requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (c.approved_by = ('sql:'::text || (SESSION_USER)::text)));

CREATE TABLE public.core_device_attempts (
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

ALTER TABLE public.core_device_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.core_device_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.core_device_tools (
    device text NOT NULL,
    tool_name text NOT NULL,
    contract jsonb NOT NULL,
    agnostic boolean DEFAULT false NOT NULL,
    CONSTRAINT core_device_tools_tool_name_check CHECK (((tool_name <> ''::text) AND (length(tool_name) <= 200)))
);

CREATE VIEW public.core_devices_status AS
 SELECT d.name,
    d.owner,
    public.gem_device_alive(d.*) AS alive,
    d.connected,
    d.hub,
    d.connected_at,
    d.disconnected_at,
    d.last_heartbeat,
    COALESCE(( SELECT array_agg(t.tool_name ORDER BY t.tool_name) AS array_agg
           FROM public.core_device_tools t
          WHERE (t.device = d.name)), '{}'::text[]) AS tools,
    ( SELECT count(*) AS count
           FROM public.core_device_attempts a
          WHERE ((a.device = d.name) AND (a.state = ANY (ARRAY['queued'::text, 'sent'::text])))) AS open_attempts,
    d.permissions
   FROM public.core_devices d;

CREATE TABLE public.core_executors (
    id text NOT NULL,
    hostname text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    stopped_at timestamp with time zone,
    dead_at timestamp with time zone,
    tools jsonb DEFAULT '{}'::jsonb NOT NULL
);

CREATE VIEW public.core_idempotency_hits AS
 SELECT r.call_id,
    r.tool_name,
    r.idempotency_key,
    r.idempotency_of AS original_call_id,
    o.finished_at AS original_finished_at,
    r.finished_at
   FROM (public.core_tool_receipts r
     LEFT JOIN public.core_tool_receipts o ON ((o.call_id = r.idempotency_of)))
  WHERE (r.idempotency_hit AND (( SELECT pg_has_role(CURRENT_USER, o_1.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o_1
          WHERE (o_1.oid = ('public.core_tool_calls'::regclass)::oid)) OR ( SELECT public.gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR (EXISTS ( SELECT 1
           FROM public.core_tool_calls c
          WHERE ((c.id = r.call_id) AND ((c.requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (c.approved_by = ('sql:'::text || (SESSION_USER)::text))))))))
  ORDER BY r.finished_at DESC;

CREATE TABLE public.core_idempotency_keys (
    tool_name text NOT NULL,
    key_hash bytea NOT NULL,
    key text NOT NULL,
    call_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.core_limit_rates (
    limit_key text NOT NULL,
    starts timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.core_mcp_tasks (
    id_sha256 bytea NOT NULL,
    call_id uuid NOT NULL,
    caller text NOT NULL,
    agent text DEFAULT ''::text NOT NULL,
    input_answered timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT core_mcp_tasks_id_sha256_check CHECK ((octet_length(id_sha256) = 32))
);

CREATE VIEW public.core_pending_approvals AS
 SELECT a.call_id,
    c.tool_name,
    c.input,
    c.requested_by,
    c.agent,
    c.run_id,
    a.required_by,
    a.expires_at,
    a.created_at
   FROM (public.core_approvals a
     JOIN public.core_tool_calls c ON ((c.id = a.call_id)))
  WHERE ((a.decision IS NULL) AND (( SELECT pg_has_role(CURRENT_USER, o.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o
          WHERE (o.oid = ('public.core_tool_calls'::regclass)::oid)) OR ( SELECT public.gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR ( SELECT public.gem_session_caller_holds('approve'::text) AS gem_session_caller_holds) OR (c.requested_by = ('sql:'::text || (SESSION_USER)::text))))
  ORDER BY a.expires_at;

CREATE VIEW public.core_queue_depth AS
 SELECT (river_job.args ->> 'tool_name'::text) AS tool_name,
    count(*) FILTER (WHERE (river_job.state <> 'running'::public.river_job_state)) AS queued,
    count(*) FILTER (WHERE (river_job.state = 'running'::public.river_job_state)) AS running,
    min(river_job.created_at) FILTER (WHERE (river_job.state <> 'running'::public.river_job_state)) AS oldest_queued_at,
    (now() - min(river_job.created_at) FILTER (WHERE (river_job.state <> 'running'::public.river_job_state))) AS oldest_queued_age
   FROM public.river_job
  WHERE ((river_job.kind = 'gem.tool_call'::text) AND (river_job.state = ANY (ARRAY['available'::public.river_job_state, 'scheduled'::public.river_job_state, 'retryable'::public.river_job_state, 'running'::public.river_job_state])))
  GROUP BY (river_job.args ->> 'tool_name'::text);

CREATE VIEW public.core_recent_failures AS
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
   FROM (public.core_tool_receipts r
     JOIN public.core_tool_calls c ON ((c.id = r.call_id)))
  WHERE ((r.status <> 'succeeded'::text) AND (r.finished_at > (now() - '24:00:00'::interval)) AND (( SELECT pg_has_role(CURRENT_USER, o.relowner, 'USAGE'::text) AS pg_has_role
           FROM pg_class o
          WHERE (o.oid = ('public.core_tool_calls'::regclass)::oid)) OR ( SELECT public.gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls) OR (c.requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (c.approved_by = ('sql:'::text || (SESSION_USER)::text))))
  ORDER BY r.finished_at DESC;

CREATE TABLE public.core_request_keys (
    requested_by text NOT NULL,
    tool_name text NOT NULL,
    key_hash bytea NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    call_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.core_rollbacks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    call_id uuid NOT NULL,
    tool_name text NOT NULL,
    rows_deleted integer DEFAULT 0 NOT NULL,
    rows_restored integer DEFAULT 0 NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.core_tool_calls_p_before (
    id uuid DEFAULT public.gem_uuid_v7() NOT NULL,
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

CREATE TABLE public.core_tool_calls_p_nonv7 (
    id uuid DEFAULT public.gem_uuid_v7() NOT NULL,
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

ALTER TABLE public.core_tool_receipts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.core_tool_receipts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.core_tool_receipts_p_before (
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

CREATE TABLE public.core_tool_receipts_p_nonv7 (
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

CREATE VIEW public.core_tool_stats AS
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
   FROM public.core_tool_receipts
  WHERE (core_tool_receipts.finished_at > (now() - '24:00:00'::interval))
  GROUP BY core_tool_receipts.tool_name;

CREATE TABLE public.core_tools (
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

CREATE TABLE public.core_undo_log (
    id bigint NOT NULL,
    call_id uuid NOT NULL,
    table_name text NOT NULL,
    op text NOT NULL,
    row_id text,
    before jsonb NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT core_undo_log_op_check CHECK ((op = ANY (ARRAY['update'::text, 'delete'::text])))
);

ALTER TABLE public.core_undo_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.core_undo_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.entities (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    site_details jsonb DEFAULT '{}'::jsonb NOT NULL,
    state text,
    CONSTRAINT entities_kind_check CHECK ((kind = ANY (ARRAY['client'::text, 'supplier'::text, 'partner'::text, 'friend'::text, 'lead'::text, 'other'::text, 'site'::text]))),
    CONSTRAINT entities_name_check CHECK ((name <> ''::text)),
    CONSTRAINT entities_not_own_parent CHECK ((parent_id <> id)),
    CONSTRAINT entities_site_details_check CHECK ((jsonb_typeof(site_details) = 'object'::text))
);

CREATE TABLE public.entity_conversations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    entity_id uuid NOT NULL,
    conversation_id text NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT entity_conversations_conversation_id_check CHECK (((conversation_id <> ''::text) AND (length(conversation_id) <= 200)))
);

CREATE TABLE public.entity_interactions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    entity_id uuid NOT NULL,
    interaction_type text NOT NULL,
    summary text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    call_outcome text,
    context_type text,
    context_id text,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT entity_interactions_call_outcome_check CHECK ((call_outcome = ANY (ARRAY['answered'::text, 'no_answer'::text, 'left_message'::text, 'busy'::text, 'other'::text]))),
    CONSTRAINT entity_interactions_context CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT entity_interactions_details_check CHECK ((jsonb_typeof(details) = 'object'::text)),
    CONSTRAINT entity_interactions_interaction_type_check CHECK ((interaction_type = ANY (ARRAY['call'::text, 'sms'::text, 'email'::text, 'meeting'::text, 'site_visit'::text, 'other'::text]))),
    CONSTRAINT entity_interactions_outcome_of_calls CHECK (((call_outcome IS NULL) OR (interaction_type = 'call'::text))),
    CONSTRAINT entity_interactions_summary_check CHECK (((summary <> ''::text) AND (length(summary) <= 400)))
);

CREATE TABLE public.expenses (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT expenses_amount_cents_check CHECK ((amount_cents > 0)),
    CONSTRAINT expenses_category_check CHECK ((category = ANY (ARRAY['materials'::text, 'subcontractors'::text, 'labour'::text, 'equipment_hire'::text, 'waste_disposal'::text, 'permits'::text, 'vehicle'::text, 'fuel'::text, 'tools'::text, 'insurance'::text, 'marketing'::text, 'office'::text, 'software'::text, 'bank_fees'::text, 'other'::text]))),
    CONSTRAINT expenses_check CHECK (((gst_cents >= 0) AND (gst_cents <= amount_cents))),
    CONSTRAINT expenses_currency_check CHECK ((currency = 'AUD'::text)),
    CONSTRAINT expenses_reference_check CHECK ((reference <> ''::text)),
    CONSTRAINT expenses_supplier_check CHECK ((supplier <> ''::text))
);

CREATE TABLE public.generated_images (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    request_id text NOT NULL,
    agent text,
    prompt text NOT NULL,
    revised_prompt text,
    model text NOT NULL,
    size text,
    ordinal smallint NOT NULL,
    url text,
    mime_type text,
    data bytea,
    bytes integer GENERATED ALWAYS AS (octet_length(data)) STORED,
    sha256 text GENERATED ALWAYS AS (encode(sha256(data), 'hex'::text)) STORED,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT generated_images_data_or_url CHECK (((data IS NOT NULL) OR (url IS NOT NULL))),
    CONSTRAINT generated_images_model_check CHECK ((model <> ''::text)),
    CONSTRAINT generated_images_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT generated_images_prompt_check CHECK ((prompt <> ''::text)),
    CONSTRAINT generated_images_request_id_check CHECK (((request_id <> ''::text) AND (length(request_id) <= 200)))
);

CREATE TABLE public.identity_memories (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

CREATE TABLE public.identity_self_model (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    singleton boolean DEFAULT true NOT NULL,
    persona jsonb DEFAULT '{}'::jsonb NOT NULL,
    "values" jsonb DEFAULT '{}'::jsonb NOT NULL,
    boundaries jsonb DEFAULT '{}'::jsonb NOT NULL,
    goals jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT identity_self_model_boundaries_check CHECK ((jsonb_typeof(boundaries) = 'object'::text)),
    CONSTRAINT identity_self_model_goals_check CHECK ((jsonb_typeof(goals) = 'object'::text)),
    CONSTRAINT identity_self_model_persona_check CHECK ((jsonb_typeof(persona) = 'object'::text)),
    CONSTRAINT identity_self_model_singleton_check CHECK (singleton),
    CONSTRAINT identity_self_model_values_check CHECK ((jsonb_typeof("values") = 'object'::text))
);

CREATE TABLE public.identity_self_model_changes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tool_name text NOT NULL,
    sections text[] NOT NULL,
    patch jsonb NOT NULL,
    reason text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.inspection_appointments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    scheduled_for timestamp with time zone NOT NULL,
    duration_minutes integer DEFAULT 60 NOT NULL,
    address text,
    notes text,
    status text DEFAULT 'scheduled'::text NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
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

CREATE TABLE public.inspection_checklist_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    item_key text NOT NULL,
    status text,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT inspection_checklist_items_item_check CHECK ((item_key <> ''::text)),
    CONSTRAINT inspection_checklist_items_status CHECK ((status = ANY (ARRAY['pass'::text, 'fail'::text, 'na'::text])))
);

CREATE TABLE public.inspection_defects (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    severity text NOT NULL,
    location text,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    category text DEFAULT 'other'::text NOT NULL,
    photo_refs text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT inspection_defects_category CHECK ((category = ANY (ARRAY['tile'::text, 'ridge'::text, 'valley'::text, 'flashing'::text, 'gutter'::text, 'leak'::text, 'other'::text]))),
    CONSTRAINT inspection_defects_severity CHECK ((severity = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text])))
);

CREATE TABLE public.inspection_measurements (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    kind text NOT NULL,
    label text,
    value numeric(12,3) NOT NULL,
    unit text NOT NULL,
    metric_value numeric(14,3),
    metric_unit text,
    created_by_call uuid DEFAULT public.gem_current_call(),
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

CREATE TABLE public.inspection_photos (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    inspection_id uuid NOT NULL,
    file_ref text NOT NULL,
    label text,
    asset_id uuid,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT inspection_photos_ref_check CHECK ((file_ref <> ''::text))
);

CREATE TABLE public.inspections (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    appointment_id uuid,
    site_id uuid,
    status text DEFAULT 'draft'::text NOT NULL,
    inspector text,
    summary text,
    submitted_at timestamp with time zone,
    locked_at timestamp with time zone,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    site_address text,
    notes text,
    CONSTRAINT inspections_locked_at CHECK (((status = 'locked'::text) = (locked_at IS NOT NULL))),
    CONSTRAINT inspections_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'submitted'::text, 'locked'::text]))),
    CONSTRAINT inspections_submitted_at CHECK (((status = 'draft'::text) = (submitted_at IS NULL)))
);

CREATE TABLE public.integration_media_sources (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    url text NOT NULL,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT integration_media_sources_provider_check CHECK ((provider = 'google_photos'::text)),
    CONSTRAINT integration_media_sources_url_check CHECK ((url ~ '^https://'::text))
);

CREATE TABLE public.integration_sync_queue (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

CREATE TABLE public.integration_sync_state (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    scope text NOT NULL,
    cursor text,
    series_started_at timestamp with time zone,
    last_run_at timestamp with time zone NOT NULL,
    last_completed_at timestamp with time zone,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.integration_webhook_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    provider text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    location_id text,
    status text NOT NULL,
    reason text,
    call_id uuid,
    payload jsonb NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT integration_webhook_events_event_id_check CHECK ((event_id <> ''::text)),
    CONSTRAINT integration_webhook_events_provider_check CHECK ((provider = 'highlevel'::text)),
    CONSTRAINT integration_webhook_events_status_check CHECK ((status = ANY (ARRAY['enqueued'::text, 'ignored'::text])))
);

CREATE TABLE public.invoice_payments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    invoice_id uuid NOT NULL,
    amount_cents bigint NOT NULL,
    method text NOT NULL,
    reference text,
    received_on date NOT NULL,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    paid_at timestamp with time zone NOT NULL,
    CONSTRAINT invoice_payments_amount_cents_check CHECK ((amount_cents > 0)),
    CONSTRAINT invoice_payments_method_check CHECK ((method = ANY (ARRAY['bank_transfer'::text, 'card'::text, 'cash'::text, 'cheque'::text, 'other'::text]))),
    CONSTRAINT invoice_payments_reference_check CHECK ((reference <> ''::text))
);

CREATE TABLE public.invoices (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

ALTER TABLE public.invoices ALTER COLUMN number ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.invoices_number_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.job_media_refs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    job_id uuid NOT NULL,
    stage text NOT NULL,
    ref text NOT NULL,
    seq bigint NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_media_refs_ref_check CHECK ((ref <> ''::text)),
    CONSTRAINT job_media_refs_stage_check CHECK ((stage = ANY (ARRAY['before'::text, 'after'::text])))
);

ALTER TABLE public.job_media_refs ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.job_media_refs_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.job_progress_updates (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    job_id uuid NOT NULL,
    summary text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    photo_refs text[] DEFAULT '{}'::text[] NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_progress_updates_details_check CHECK ((jsonb_typeof(details) = 'object'::text)),
    CONSTRAINT job_progress_updates_summary_check CHECK (((summary <> ''::text) AND (char_length(summary) <= 400)))
);

CREATE TABLE public.job_site_notes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    job_id uuid NOT NULL,
    note text NOT NULL,
    author text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_site_notes_note_check CHECK ((note <> ''::text))
);

CREATE TABLE public.jobs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    number bigint NOT NULL,
    quote_id uuid NOT NULL,
    status text DEFAULT 'unscheduled'::text NOT NULL,
    start_date date,
    end_date date,
    completed_at timestamp with time zone,
    completion_notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
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

ALTER TABLE public.jobs ALTER COLUMN number ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.jobs_number_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.lead_photo_links (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    url text NOT NULL,
    label text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lead_photo_links_url_check CHECK ((url ~* '^https?://'::text))
);

CREATE TABLE public.lead_sources (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    source text NOT NULL,
    detail text DEFAULT ''::text NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    campaign jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lead_sources_campaign_check CHECK ((jsonb_typeof(campaign) = 'object'::text)),
    CONSTRAINT lead_sources_source_check CHECK ((source ~ '^[a-z0-9][a-z0-9_]{0,59}$'::text))
);

CREATE TABLE public.lead_stage_changes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    lead_id uuid NOT NULL,
    from_stage text NOT NULL,
    to_stage text NOT NULL,
    reason text,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.leads (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

COMMENT ON COLUMN public.leads.phone IS 'the phone number as typed';

COMMENT ON COLUMN public.leads.phone_e164 IS 'the phone number in E.164, one lead per number; null for leads stored before 00039 (found by phone_digits)';

CREATE TABLE public.lore_chunks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    document_id uuid NOT NULL,
    ordinal integer NOT NULL,
    context text DEFAULT ''::text NOT NULL,
    content text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS ((setweight(to_tsvector('english'::regconfig, context), 'A'::"char") || setweight(to_tsvector('english'::regconfig, content), 'B'::"char"))) STORED,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lore_chunks_content_check CHECK ((content <> ''::text)),
    CONSTRAINT lore_chunks_context_check CHECK ((length(context) <= 2000)),
    CONSTRAINT lore_chunks_ordinal_check CHECK ((ordinal >= 0))
);

CREATE TABLE public.lore_documents (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    collection text DEFAULT 'default'::text NOT NULL,
    source text NOT NULL,
    title text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    content_hash text NOT NULL,
    chars integer NOT NULL,
    chunk_chars integer NOT NULL,
    overlap_chars integer NOT NULL,
    chunk_count integer DEFAULT 0 NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lore_documents_chars_check CHECK ((chars >= 0)),
    CONSTRAINT lore_documents_check CHECK (((overlap_chars >= 0) AND (overlap_chars < chunk_chars))),
    CONSTRAINT lore_documents_chunk_chars_check CHECK ((chunk_chars > 0)),
    CONSTRAINT lore_documents_chunk_count_check CHECK ((chunk_count >= 0)),
    CONSTRAINT lore_documents_collection_check CHECK ((collection ~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$'::text)),
    CONSTRAINT lore_documents_content_hash_check CHECK ((content_hash ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT lore_documents_metadata_check CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT lore_documents_source_check CHECK (((source <> ''::text) AND (length(source) <= 1000))),
    CONSTRAINT lore_documents_title_check CHECK (((btrim(title) <> ''::text) AND (length(title) <= 500))),
    CONSTRAINT lore_documents_version_check CHECK ((version >= 1))
);

CREATE TABLE public.marketing_campaign_results (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    channel text NOT NULL,
    campaign text,
    period_start date,
    period_end date,
    metrics jsonb NOT NULL,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT marketing_campaign_results_campaign_check CHECK ((campaign <> ''::text)),
    CONSTRAINT marketing_campaign_results_channel_check CHECK ((channel = ANY (ARRAY['google_ads'::text, 'meta'::text, 'gmb'::text, 'other'::text]))),
    CONSTRAINT marketing_campaign_results_metrics_check CHECK (((jsonb_typeof(metrics) = 'object'::text) AND (metrics <> '{}'::jsonb))),
    CONSTRAINT marketing_campaign_results_period CHECK ((period_end >= period_start))
);

CREATE TABLE public.marketing_content_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    task_id uuid NOT NULL,
    channel text NOT NULL,
    title text NOT NULL,
    publish_at timestamp with time zone NOT NULL,
    content text,
    asset_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT marketing_content_items_channel_check CHECK ((channel = ANY (ARRAY['website'::text, 'blog'::text, 'gmb'::text, 'meta'::text, 'google_ads'::text, 'email'::text, 'other'::text]))),
    CONSTRAINT marketing_content_items_title_check CHECK ((title <> ''::text))
);

CREATE TABLE public.media_asset_captions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    asset_id uuid NOT NULL,
    platform text NOT NULL,
    caption text NOT NULL,
    written_by text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT media_asset_captions_caption_check CHECK ((caption <> ''::text)),
    CONSTRAINT media_asset_captions_platform_check CHECK ((platform = ANY (ARRAY['website'::text, 'gmb'::text, 'meta'::text, 'other'::text])))
);

CREATE TABLE public.media_assets (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

CREATE TABLE public.os_notes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    domain text DEFAULT 'business'::text NOT NULL,
    title text NOT NULL,
    content text DEFAULT ''::text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    lead_id uuid,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    entity_refs jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT os_notes_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_notes_entity_refs_array CHECK ((jsonb_typeof(entity_refs) = 'array'::text))
);

CREATE TABLE public.os_reminders (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    notes text,
    remind_at timestamp with time zone NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    lead_id uuid,
    task_id uuid,
    resolved_at timestamp with time zone,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    domain text DEFAULT 'business'::text NOT NULL,
    context_type text,
    context_id text,
    CONSTRAINT os_reminders_context_id_check CHECK ((context_id <> ''::text)),
    CONSTRAINT os_reminders_context_pair CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT os_reminders_context_type_check CHECK ((context_type <> ''::text)),
    CONSTRAINT os_reminders_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_reminders_resolved_iff_not_pending CHECK (((status = 'pending'::text) = (resolved_at IS NULL))),
    CONSTRAINT os_reminders_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'done'::text, 'dismissed'::text]))),
    CONSTRAINT os_reminders_title_check CHECK ((title <> ''::text))
);

CREATE TABLE public.os_state_snapshots (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    domain text NOT NULL,
    as_of timestamp with time zone NOT NULL,
    since timestamp with time zone NOT NULL,
    state jsonb NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT os_state_snapshots_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_state_snapshots_state_check CHECK ((jsonb_typeof(state) = 'object'::text))
);

CREATE TABLE public.os_tasks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    description text,
    priority text DEFAULT 'normal'::text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    due_at timestamp with time zone,
    lead_id uuid,
    completed_at timestamp with time zone,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    domain text DEFAULT 'business'::text NOT NULL,
    context_type text,
    context_id text,
    completion_note text,
    defer_reason text,
    CONSTRAINT os_tasks_context_id_check CHECK ((context_id <> ''::text)),
    CONSTRAINT os_tasks_context_pair CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT os_tasks_context_type_check CHECK ((context_type <> ''::text)),
    CONSTRAINT os_tasks_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_tasks_priority_check CHECK ((priority = ANY (ARRAY['low'::text, 'normal'::text, 'high'::text, 'urgent'::text]))),
    CONSTRAINT os_tasks_status_check CHECK ((status = ANY (ARRAY['open'::text, 'done'::text, 'deferred'::text])))
);

CREATE TABLE public.personal_checkins (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    energy text NOT NULL,
    stress text NOT NULL,
    focus text NOT NULL,
    notes text,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT personal_checkins_energy_check CHECK ((energy = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text]))),
    CONSTRAINT personal_checkins_focus_check CHECK ((focus = ANY (ARRAY['scattered'::text, 'ok'::text, 'locked_in'::text]))),
    CONSTRAINT personal_checkins_stress_check CHECK ((stress = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text])))
);

CREATE TABLE public.personal_commitments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    details text,
    review_at timestamp with time zone,
    status text DEFAULT 'active'::text NOT NULL,
    outcome text,
    closing_note text,
    closed_at timestamp with time zone,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT personal_commitments_closed CHECK ((((status = 'closed'::text) = (closed_at IS NOT NULL)) AND ((status = 'closed'::text) = (outcome IS NOT NULL)))),
    CONSTRAINT personal_commitments_outcome_check CHECK ((outcome = ANY (ARRAY['kept'::text, 'broken'::text, 'dropped'::text, 'done'::text]))),
    CONSTRAINT personal_commitments_status_check CHECK ((status = ANY (ARRAY['active'::text, 'closed'::text]))),
    CONSTRAINT personal_commitments_title_check CHECK ((title <> ''::text))
);

CREATE TABLE public.quote_line_items (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    quote_id uuid NOT NULL,
    "position" integer NOT NULL,
    description text NOT NULL,
    quantity numeric(12,3) NOT NULL,
    unit text DEFAULT 'each'::text NOT NULL,
    unit_price_cents bigint NOT NULL,
    line_total_cents bigint NOT NULL,
    created_by_call uuid DEFAULT public.gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT quote_line_items_description_check CHECK ((description <> ''::text)),
    CONSTRAINT quote_line_items_line_total_cents_check CHECK ((line_total_cents >= 0)),
    CONSTRAINT quote_line_items_position_check CHECK (("position" > 0)),
    CONSTRAINT quote_line_items_quantity_check CHECK ((quantity > (0)::numeric)),
    CONSTRAINT quote_line_items_unit_price_cents_check CHECK ((unit_price_cents >= 0))
);

CREATE TABLE public.quotes (
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
    created_by_call uuid DEFAULT public.gem_current_call(),
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

ALTER TABLE public.quotes ALTER COLUMN number ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.quotes_number_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE SEQUENCE public.river_job_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.river_job_id_seq OWNED BY public.river_job.id;

CREATE UNLOGGED TABLE public.river_leader (
    elected_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    leader_id text NOT NULL,
    name text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT leader_id_length CHECK (((char_length(leader_id) > 0) AND (char_length(leader_id) < 128))),
    CONSTRAINT name_length CHECK ((name = 'default'::text))
);

CREATE TABLE public.river_migration (
    line text NOT NULL,
    version bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT line_length CHECK (((char_length(line) > 0) AND (char_length(line) < 128))),
    CONSTRAINT version_gte_1 CHECK ((version >= 1))
);

CREATE TABLE public.river_notification (
    id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payload text NOT NULL,
    topic text NOT NULL,
    CONSTRAINT topic_length CHECK (((length(topic) > 0) AND (length(topic) < 128)))
);

CREATE SEQUENCE public.river_notification_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.river_notification_id_seq OWNED BY public.river_notification.id;

CREATE TABLE public.river_queue (
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    paused_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

CREATE TABLE public.skill_dependencies (
    skill_id uuid NOT NULL,
    requires_skill_id uuid NOT NULL,
    CONSTRAINT skill_dependencies_check CHECK ((skill_id <> requires_skill_id))
);

CREATE TABLE public.skill_files (
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

CREATE TABLE public.skills (
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

ALTER TABLE ONLY public.brain_run_events ATTACH PARTITION public.brain_run_events_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY public.brain_run_events ATTACH PARTITION public.brain_run_events_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY public.brain_run_programs ATTACH PARTITION public.brain_run_programs_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY public.brain_run_programs ATTACH PARTITION public.brain_run_programs_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY public.brain_runs ATTACH PARTITION public.brain_runs_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY public.brain_runs ATTACH PARTITION public.brain_runs_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY public.brain_turns ATTACH PARTITION public.brain_turns_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY public.brain_turns ATTACH PARTITION public.brain_turns_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY public.core_tool_calls ATTACH PARTITION public.core_tool_calls_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY public.core_tool_calls ATTACH PARTITION public.core_tool_calls_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY public.core_tool_receipts ATTACH PARTITION public.core_tool_receipts_p_before FOR VALUES FROM (MINVALUE) TO ('01a22ee6-b000-0000-0000-000000000000');

ALTER TABLE ONLY public.core_tool_receipts ATTACH PARTITION public.core_tool_receipts_p_nonv7 FOR VALUES FROM ('02000000-0000-0000-0000-000000000000') TO (MAXVALUE);

ALTER TABLE ONLY public.river_job ALTER COLUMN id SET DEFAULT nextval('public.river_job_id_seq'::regclass);

ALTER TABLE ONLY public.river_notification ALTER COLUMN id SET DEFAULT nextval('public.river_notification_id_seq'::regclass);

ALTER TABLE ONLY public.agent_memories
    ADD CONSTRAINT agent_memories_one_per_content UNIQUE (agent, user_id, kind, content_key);

ALTER TABLE ONLY public.agent_memories
    ADD CONSTRAINT agent_memories_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.agent_messages
    ADD CONSTRAINT agent_messages_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.agent_session_decisions
    ADD CONSTRAINT agent_session_decisions_pkey PRIMARY KEY (session_id, call_id);

ALTER TABLE ONLY public.agent_sessions
    ADD CONSTRAINT agent_sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.agent_skills
    ADD CONSTRAINT agent_skills_pkey PRIMARY KEY (agent_id, skill_id);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.agents
    ADD CONSTRAINT agents_slug_key UNIQUE (slug);

ALTER TABLE ONLY public.brain_request_keys
    ADD CONSTRAINT brain_request_keys_pkey PRIMARY KEY (requested_by, key_hash);

ALTER TABLE ONLY public.brain_run_events
    ADD CONSTRAINT brain_run_events_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY public.brain_run_events_p_before
    ADD CONSTRAINT brain_run_events_p_before_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY public.brain_run_events_p_nonv7
    ADD CONSTRAINT brain_run_events_p_nonv7_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY public.brain_run_programs
    ADD CONSTRAINT brain_run_programs_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY public.brain_run_programs_p_before
    ADD CONSTRAINT brain_run_programs_p_before_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY public.brain_run_programs_p_nonv7
    ADD CONSTRAINT brain_run_programs_p_nonv7_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY public.brain_run_watches
    ADD CONSTRAINT brain_run_watches_pkey PRIMARY KEY (run_id, watcher);

ALTER TABLE ONLY public.brain_runs
    ADD CONSTRAINT brain_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.brain_runs_p_before
    ADD CONSTRAINT brain_runs_p_before_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.brain_runs_p_nonv7
    ADD CONSTRAINT brain_runs_p_nonv7_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.brain_studio_sessions
    ADD CONSTRAINT brain_studio_sessions_pkey PRIMARY KEY (id_sha256);

ALTER TABLE ONLY public.brain_tool_search
    ADD CONSTRAINT brain_tool_search_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.brain_turns
    ADD CONSTRAINT brain_turns_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY public.brain_turns_p_before
    ADD CONSTRAINT brain_turns_p_before_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY public.brain_turns_p_nonv7
    ADD CONSTRAINT brain_turns_p_nonv7_pkey PRIMARY KEY (run_id, id);

ALTER TABLE ONLY public.calendar_events
    ADD CONSTRAINT calendar_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.comms_log
    ADD CONSTRAINT comms_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_approval_policies
    ADD CONSTRAINT core_approval_policies_permission_agents_only_key UNIQUE (permission, agents_only);

ALTER TABLE ONLY public.core_approval_policies
    ADD CONSTRAINT core_approval_policies_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_approvals
    ADD CONSTRAINT core_approvals_pkey PRIMARY KEY (call_id);

ALTER TABLE ONLY public.core_callers
    ADD CONSTRAINT core_callers_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.core_callers
    ADD CONSTRAINT core_callers_token_sha256_key UNIQUE (token_sha256);

ALTER TABLE ONLY public.core_device_attempts
    ADD CONSTRAINT core_device_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_device_tools
    ADD CONSTRAINT core_device_tools_pkey PRIMARY KEY (device, tool_name);

ALTER TABLE ONLY public.core_devices
    ADD CONSTRAINT core_devices_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.core_devices
    ADD CONSTRAINT core_devices_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.core_executors
    ADD CONSTRAINT core_executors_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_idempotency_keys
    ADD CONSTRAINT core_idempotency_keys_pkey PRIMARY KEY (tool_name, key_hash);

ALTER TABLE ONLY public.core_limit_rates
    ADD CONSTRAINT core_limit_rates_pkey PRIMARY KEY (limit_key);

ALTER TABLE ONLY public.core_mcp_tasks
    ADD CONSTRAINT core_mcp_tasks_pkey PRIMARY KEY (id_sha256);

ALTER TABLE ONLY public.core_request_keys
    ADD CONSTRAINT core_request_keys_pkey PRIMARY KEY (requested_by, tool_name, key_hash);

ALTER TABLE ONLY public.core_rollbacks
    ADD CONSTRAINT core_rollbacks_once UNIQUE (call_id);

ALTER TABLE ONLY public.core_rollbacks
    ADD CONSTRAINT core_rollbacks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_tool_calls
    ADD CONSTRAINT core_tool_calls_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_tool_calls_p_before
    ADD CONSTRAINT core_tool_calls_p_before_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_tool_calls_p_nonv7
    ADD CONSTRAINT core_tool_calls_p_nonv7_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.core_tool_receipts
    ADD CONSTRAINT core_tool_receipts_one_per_call PRIMARY KEY (call_id);

ALTER TABLE ONLY public.core_tool_receipts_p_before
    ADD CONSTRAINT core_tool_receipts_p_before_one_per_call PRIMARY KEY (call_id);

ALTER TABLE ONLY public.core_tool_receipts_p_nonv7
    ADD CONSTRAINT core_tool_receipts_p_nonv7_one_per_call PRIMARY KEY (call_id);

ALTER TABLE ONLY public.core_tools
    ADD CONSTRAINT core_tools_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.core_undo_log
    ADD CONSTRAINT core_undo_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.entity_conversations
    ADD CONSTRAINT entity_conversations_once UNIQUE (entity_id, conversation_id);

ALTER TABLE ONLY public.entity_conversations
    ADD CONSTRAINT entity_conversations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.entity_interactions
    ADD CONSTRAINT entity_interactions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.expenses
    ADD CONSTRAINT expenses_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.generated_images
    ADD CONSTRAINT generated_images_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.identity_memories
    ADD CONSTRAINT identity_memories_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.identity_self_model_changes
    ADD CONSTRAINT identity_self_model_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.identity_self_model
    ADD CONSTRAINT identity_self_model_one_row UNIQUE (singleton);

ALTER TABLE ONLY public.identity_self_model
    ADD CONSTRAINT identity_self_model_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.inspection_appointments
    ADD CONSTRAINT inspection_appointments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_once UNIQUE (inspection_id, item_key);

ALTER TABLE ONLY public.inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.inspection_defects
    ADD CONSTRAINT inspection_defects_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.inspection_measurements
    ADD CONSTRAINT inspection_measurements_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.inspection_photos
    ADD CONSTRAINT inspection_photos_once UNIQUE (inspection_id, file_ref);

ALTER TABLE ONLY public.inspection_photos
    ADD CONSTRAINT inspection_photos_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.inspections
    ADD CONSTRAINT inspections_appointment_id_key UNIQUE (appointment_id);

ALTER TABLE ONLY public.inspections
    ADD CONSTRAINT inspections_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.integration_media_sources
    ADD CONSTRAINT integration_media_sources_once UNIQUE (provider, url);

ALTER TABLE ONLY public.integration_media_sources
    ADD CONSTRAINT integration_media_sources_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.integration_sync_queue
    ADD CONSTRAINT integration_sync_queue_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.integration_sync_state
    ADD CONSTRAINT integration_sync_state_once UNIQUE (provider, scope);

ALTER TABLE ONLY public.integration_sync_state
    ADD CONSTRAINT integration_sync_state_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.integration_webhook_events
    ADD CONSTRAINT integration_webhook_events_once UNIQUE (provider, event_id);

ALTER TABLE ONLY public.integration_webhook_events
    ADD CONSTRAINT integration_webhook_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.invoice_payments
    ADD CONSTRAINT invoice_payments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.invoice_payments
    ADD CONSTRAINT invoice_payments_reference_once UNIQUE (invoice_id, reference);

ALTER TABLE ONLY public.invoices
    ADD CONSTRAINT invoices_number_key UNIQUE (number);

ALTER TABLE ONLY public.invoices
    ADD CONSTRAINT invoices_one_per_job UNIQUE (job_id);

ALTER TABLE ONLY public.invoices
    ADD CONSTRAINT invoices_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.job_media_refs
    ADD CONSTRAINT job_media_refs_once UNIQUE (job_id, stage, ref);

ALTER TABLE ONLY public.job_media_refs
    ADD CONSTRAINT job_media_refs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.job_progress_updates
    ADD CONSTRAINT job_progress_updates_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.job_site_notes
    ADD CONSTRAINT job_site_notes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_number_key UNIQUE (number);

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_one_per_quote UNIQUE (quote_id);

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lead_photo_links
    ADD CONSTRAINT lead_photo_links_once UNIQUE (lead_id, url);

ALTER TABLE ONLY public.lead_photo_links
    ADD CONSTRAINT lead_photo_links_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lead_sources
    ADD CONSTRAINT lead_sources_once UNIQUE (lead_id, source, detail);

ALTER TABLE ONLY public.lead_sources
    ADD CONSTRAINT lead_sources_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lead_stage_changes
    ADD CONSTRAINT lead_stage_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.leads
    ADD CONSTRAINT leads_one_per_number UNIQUE (phone_e164);

ALTER TABLE ONLY public.leads
    ADD CONSTRAINT leads_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lore_chunks
    ADD CONSTRAINT lore_chunks_one_per_ordinal UNIQUE (document_id, ordinal);

ALTER TABLE ONLY public.lore_chunks
    ADD CONSTRAINT lore_chunks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lore_documents
    ADD CONSTRAINT lore_documents_one_per_source UNIQUE (collection, source);

ALTER TABLE ONLY public.lore_documents
    ADD CONSTRAINT lore_documents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.marketing_campaign_results
    ADD CONSTRAINT marketing_campaign_results_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.marketing_content_items
    ADD CONSTRAINT marketing_content_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.marketing_content_items
    ADD CONSTRAINT marketing_content_items_task_id_key UNIQUE (task_id);

ALTER TABLE ONLY public.media_asset_captions
    ADD CONSTRAINT media_asset_captions_once UNIQUE (asset_id, platform);

ALTER TABLE ONLY public.media_asset_captions
    ADD CONSTRAINT media_asset_captions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.media_assets
    ADD CONSTRAINT media_assets_one_per_file_ref UNIQUE (file_ref);

ALTER TABLE ONLY public.media_assets
    ADD CONSTRAINT media_assets_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.os_notes
    ADD CONSTRAINT os_notes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.os_reminders
    ADD CONSTRAINT os_reminders_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.os_state_snapshots
    ADD CONSTRAINT os_state_snapshots_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.os_tasks
    ADD CONSTRAINT os_tasks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.personal_checkins
    ADD CONSTRAINT personal_checkins_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.personal_commitments
    ADD CONSTRAINT personal_commitments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.quote_line_items
    ADD CONSTRAINT quote_line_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.quote_line_items
    ADD CONSTRAINT quote_line_items_position UNIQUE (quote_id, "position");

ALTER TABLE ONLY public.quotes
    ADD CONSTRAINT quotes_number_key UNIQUE (number);

ALTER TABLE ONLY public.quotes
    ADD CONSTRAINT quotes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.river_job
    ADD CONSTRAINT river_job_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.river_leader
    ADD CONSTRAINT river_leader_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.river_migration
    ADD CONSTRAINT river_migration_pkey1 PRIMARY KEY (line, version);

ALTER TABLE ONLY public.river_notification
    ADD CONSTRAINT river_notification_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.river_queue
    ADD CONSTRAINT river_queue_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.skill_dependencies
    ADD CONSTRAINT skill_dependencies_pkey PRIMARY KEY (skill_id, requires_skill_id);

ALTER TABLE ONLY public.skill_files
    ADD CONSTRAINT skill_files_pkey PRIMARY KEY (skill_id, path);

ALTER TABLE ONLY public.skills
    ADD CONSTRAINT skills_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.skills
    ADD CONSTRAINT skills_slug_key UNIQUE (slug);

CREATE INDEX agent_memories_recent ON public.agent_memories USING btree (agent, user_id, updated_at DESC);

CREATE INDEX agent_memories_search ON public.agent_memories USING gin (tsv) WITH (fastupdate=off);

CREATE INDEX agent_memories_trgm ON public.agent_memories USING gin (content public.gin_trgm_ops) WITH (fastupdate=off);

CREATE INDEX agent_messages_run ON public.agent_messages USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX agent_messages_session ON public.agent_messages USING btree (session_id, id);

CREATE INDEX agent_session_decisions_call ON public.agent_session_decisions USING btree (call_id);

CREATE INDEX agent_skills_skill ON public.agent_skills USING btree (skill_id);

CREATE INDEX brain_request_keys_created_at ON public.brain_request_keys USING btree (created_at);

CREATE INDEX brain_request_keys_run ON public.brain_request_keys USING btree (run_id);

CREATE INDEX brain_run_programs_run ON ONLY public.brain_run_programs USING btree (run_id, id);

CREATE INDEX brain_run_programs_p_before_run_id_id_idx ON public.brain_run_programs_p_before USING btree (run_id, id);

CREATE INDEX brain_run_programs_p_nonv7_run_id_id_idx ON public.brain_run_programs_p_nonv7 USING btree (run_id, id);

CREATE INDEX brain_runs_conversation ON ONLY public.brain_runs USING btree (conversation_id, created_at) WHERE (conversation_id IS NOT NULL);

CREATE INDEX brain_runs_created_at ON ONLY public.brain_runs USING btree (created_at DESC);

CREATE INDEX brain_runs_lease ON ONLY public.brain_runs USING btree (lease_until) WHERE ((status = ANY (ARRAY['planning'::text, 'waiting'::text])) AND (lease_until IS NOT NULL));

CREATE INDEX brain_runs_open ON ONLY public.brain_runs USING btree (status, created_at) WHERE (status = ANY (ARRAY['planned'::text, 'enqueued'::text, 'waiting'::text]));

CREATE INDEX brain_runs_queued ON ONLY public.brain_runs USING btree (conversation_id, id) WHERE (status = 'queued'::text);

CREATE INDEX brain_runs_requested_by ON ONLY public.brain_runs USING btree (requested_by, created_at DESC);

CREATE INDEX brain_runs_p_before_conversation_id_created_at_idx ON public.brain_runs_p_before USING btree (conversation_id, created_at) WHERE (conversation_id IS NOT NULL);

CREATE INDEX brain_runs_p_before_conversation_id_id_idx ON public.brain_runs_p_before USING btree (conversation_id, id) WHERE (status = 'queued'::text);

CREATE INDEX brain_runs_p_before_created_at_idx ON public.brain_runs_p_before USING btree (created_at DESC);

CREATE INDEX brain_runs_p_before_lease_until_idx ON public.brain_runs_p_before USING btree (lease_until) WHERE ((status = ANY (ARRAY['planning'::text, 'waiting'::text])) AND (lease_until IS NOT NULL));

CREATE INDEX brain_runs_p_before_requested_by_created_at_idx ON public.brain_runs_p_before USING btree (requested_by, created_at DESC);

CREATE INDEX brain_runs_p_before_status_created_at_idx ON public.brain_runs_p_before USING btree (status, created_at) WHERE (status = ANY (ARRAY['planned'::text, 'enqueued'::text, 'waiting'::text]));

CREATE INDEX brain_runs_p_nonv7_conversation_id_created_at_idx ON public.brain_runs_p_nonv7 USING btree (conversation_id, created_at) WHERE (conversation_id IS NOT NULL);

CREATE INDEX brain_runs_p_nonv7_conversation_id_id_idx ON public.brain_runs_p_nonv7 USING btree (conversation_id, id) WHERE (status = 'queued'::text);

CREATE INDEX brain_runs_p_nonv7_created_at_idx ON public.brain_runs_p_nonv7 USING btree (created_at DESC);

CREATE INDEX brain_runs_p_nonv7_lease_until_idx ON public.brain_runs_p_nonv7 USING btree (lease_until) WHERE ((status = ANY (ARRAY['planning'::text, 'waiting'::text])) AND (lease_until IS NOT NULL));

CREATE INDEX brain_runs_p_nonv7_requested_by_created_at_idx ON public.brain_runs_p_nonv7 USING btree (requested_by, created_at DESC);

CREATE INDEX brain_runs_p_nonv7_status_created_at_idx ON public.brain_runs_p_nonv7 USING btree (status, created_at) WHERE (status = ANY (ARRAY['planned'::text, 'enqueued'::text, 'waiting'::text]));

CREATE INDEX brain_studio_sessions_expires_at ON public.brain_studio_sessions USING btree (expires_at);

CREATE INDEX brain_tool_search_document ON public.brain_tool_search USING gin (document) WITH (fastupdate=off);

CREATE INDEX brain_tool_search_name_words ON public.brain_tool_search USING gin (name_words public.gin_trgm_ops) WITH (fastupdate=off);

CREATE INDEX brain_tool_search_seen_at ON public.brain_tool_search USING btree (seen_at);

CREATE INDEX brain_turns_run ON ONLY public.brain_turns USING btree (run_id, iteration);

CREATE INDEX brain_turns_p_before_run_id_iteration_idx ON public.brain_turns_p_before USING btree (run_id, iteration);

CREATE INDEX brain_turns_p_nonv7_run_id_iteration_idx ON public.brain_turns_p_nonv7 USING btree (run_id, iteration);

CREATE INDEX calendar_events_job ON public.calendar_events USING btree (job_id) WHERE (job_id IS NOT NULL);

CREATE INDEX calendar_events_lead ON public.calendar_events USING btree (lead_id) WHERE (lead_id IS NOT NULL);

CREATE INDEX calendar_events_scheduled ON public.calendar_events USING gist (tstzrange(start_at, end_at)) WHERE (status = 'scheduled'::text);

CREATE INDEX comms_log_entity ON public.comms_log USING btree (entity_id, occurred_at DESC) WHERE (entity_id IS NOT NULL);

CREATE INDEX comms_log_invoice ON public.comms_log USING btree (invoice_id, occurred_at DESC) WHERE (invoice_id IS NOT NULL);

CREATE INDEX comms_log_job ON public.comms_log USING btree (job_id, occurred_at DESC) WHERE (job_id IS NOT NULL);

CREATE INDEX comms_log_lead ON public.comms_log USING btree (lead_id, occurred_at DESC) WHERE (lead_id IS NOT NULL);

CREATE INDEX core_approvals_pending ON public.core_approvals USING btree (expires_at) WHERE (decision IS NULL);

CREATE INDEX core_device_attempts_call ON public.core_device_attempts USING btree (call_id);

CREATE INDEX core_device_attempts_limit ON public.core_device_attempts USING btree (limit_key) WHERE ((limit_key IS NOT NULL) AND (state = ANY (ARRAY['queued'::text, 'sent'::text])));

CREATE UNIQUE INDEX core_device_attempts_one_open ON public.core_device_attempts USING btree (call_id) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text]));

CREATE INDEX core_device_attempts_open ON public.core_device_attempts USING btree (device, id) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text]));

CREATE INDEX core_device_tools_tool ON public.core_device_tools USING btree (tool_name);

CREATE INDEX core_idempotency_keys_call ON public.core_idempotency_keys USING btree (call_id);

CREATE INDEX core_mcp_tasks_call ON public.core_mcp_tasks USING btree (call_id);

CREATE INDEX core_request_keys_call ON public.core_request_keys USING btree (call_id);

CREATE INDEX core_request_keys_created_at ON public.core_request_keys USING btree (created_at);

CREATE INDEX core_tool_calls_approved_by ON ONLY public.core_tool_calls USING btree (approved_by, created_at DESC) WHERE (approved_by IS NOT NULL);

CREATE INDEX core_tool_calls_created_at ON ONLY public.core_tool_calls USING btree (created_at DESC);

CREATE INDEX core_tool_calls_idempotency_of ON ONLY public.core_tool_calls USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_calls_limited ON ONLY public.core_tool_calls USING btree (tool_name, limited_since) WHERE (limited_since IS NOT NULL);

CREATE INDEX core_tool_calls_requested_by ON ONLY public.core_tool_calls USING btree (requested_by, created_at DESC);

CREATE INDEX core_tool_calls_run ON ONLY public.core_tool_calls USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX core_tool_calls_tool_created_at ON ONLY public.core_tool_calls USING btree (tool_name, created_at DESC);

CREATE INDEX core_tool_calls_p_before_approved_by_created_at_idx ON public.core_tool_calls_p_before USING btree (approved_by, created_at DESC) WHERE (approved_by IS NOT NULL);

CREATE INDEX core_tool_calls_p_before_created_at_idx ON public.core_tool_calls_p_before USING btree (created_at DESC);

CREATE INDEX core_tool_calls_p_before_idempotency_of_idx ON public.core_tool_calls_p_before USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_calls_p_before_requested_by_created_at_idx ON public.core_tool_calls_p_before USING btree (requested_by, created_at DESC);

CREATE INDEX core_tool_calls_p_before_run_id_idx ON public.core_tool_calls_p_before USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX core_tool_calls_p_before_tool_name_created_at_idx ON public.core_tool_calls_p_before USING btree (tool_name, created_at DESC);

CREATE INDEX core_tool_calls_p_before_tool_name_limited_since_idx ON public.core_tool_calls_p_before USING btree (tool_name, limited_since) WHERE (limited_since IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_approved_by_created_at_idx ON public.core_tool_calls_p_nonv7 USING btree (approved_by, created_at DESC) WHERE (approved_by IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_created_at_idx ON public.core_tool_calls_p_nonv7 USING btree (created_at DESC);

CREATE INDEX core_tool_calls_p_nonv7_idempotency_of_idx ON public.core_tool_calls_p_nonv7 USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_requested_by_created_at_idx ON public.core_tool_calls_p_nonv7 USING btree (requested_by, created_at DESC);

CREATE INDEX core_tool_calls_p_nonv7_run_id_idx ON public.core_tool_calls_p_nonv7 USING btree (run_id) WHERE (run_id IS NOT NULL);

CREATE INDEX core_tool_calls_p_nonv7_tool_name_created_at_idx ON public.core_tool_calls_p_nonv7 USING btree (tool_name, created_at DESC);

CREATE INDEX core_tool_calls_p_nonv7_tool_name_limited_since_idx ON public.core_tool_calls_p_nonv7 USING btree (tool_name, limited_since) WHERE (limited_since IS NOT NULL);

CREATE INDEX core_tool_receipts_finished_at ON ONLY public.core_tool_receipts USING btree (finished_at DESC);

CREATE INDEX core_tool_receipts_id ON ONLY public.core_tool_receipts USING btree (id);

CREATE INDEX core_tool_receipts_idempotency_hits ON ONLY public.core_tool_receipts USING btree (finished_at DESC) WHERE idempotency_hit;

CREATE INDEX core_tool_receipts_idempotency_of ON ONLY public.core_tool_receipts USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_receipts_not_succeeded ON ONLY public.core_tool_receipts USING btree (finished_at DESC) WHERE (status <> 'succeeded'::text);

CREATE INDEX core_tool_receipts_tool_finished_at ON ONLY public.core_tool_receipts USING btree (tool_name, finished_at DESC);

CREATE INDEX core_tool_receipts_p_before_finished_at_idx ON public.core_tool_receipts_p_before USING btree (finished_at DESC);

CREATE INDEX core_tool_receipts_p_before_finished_at_idx1 ON public.core_tool_receipts_p_before USING btree (finished_at DESC) WHERE (status <> 'succeeded'::text);

CREATE INDEX core_tool_receipts_p_before_finished_at_idx2 ON public.core_tool_receipts_p_before USING btree (finished_at DESC) WHERE idempotency_hit;

CREATE INDEX core_tool_receipts_p_before_id_idx ON public.core_tool_receipts_p_before USING btree (id);

CREATE INDEX core_tool_receipts_p_before_idempotency_of_idx ON public.core_tool_receipts_p_before USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_receipts_p_before_tool_name_finished_at_idx ON public.core_tool_receipts_p_before USING btree (tool_name, finished_at DESC);

CREATE INDEX core_tool_receipts_p_nonv7_finished_at_idx ON public.core_tool_receipts_p_nonv7 USING btree (finished_at DESC);

CREATE INDEX core_tool_receipts_p_nonv7_finished_at_idx1 ON public.core_tool_receipts_p_nonv7 USING btree (finished_at DESC) WHERE (status <> 'succeeded'::text);

CREATE INDEX core_tool_receipts_p_nonv7_finished_at_idx2 ON public.core_tool_receipts_p_nonv7 USING btree (finished_at DESC) WHERE idempotency_hit;

CREATE INDEX core_tool_receipts_p_nonv7_id_idx ON public.core_tool_receipts_p_nonv7 USING btree (id);

CREATE INDEX core_tool_receipts_p_nonv7_idempotency_of_idx ON public.core_tool_receipts_p_nonv7 USING btree (idempotency_of) WHERE (idempotency_of IS NOT NULL);

CREATE INDEX core_tool_receipts_p_nonv7_tool_name_finished_at_idx ON public.core_tool_receipts_p_nonv7 USING btree (tool_name, finished_at DESC);

CREATE INDEX core_undo_log_call ON public.core_undo_log USING btree (call_id, id);

CREATE INDEX core_undo_log_row ON public.core_undo_log USING btree (table_name, row_id, id);

CREATE INDEX entities_kind_name ON public.entities USING btree (kind, lower(name));

CREATE INDEX entities_parent ON public.entities USING btree (parent_id) WHERE (parent_id IS NOT NULL);

CREATE INDEX entities_phone_digits ON public.entities USING btree (phone_digits) WHERE (phone_digits <> ''::text);

CREATE INDEX entity_conversations_conversation ON public.entity_conversations USING btree (conversation_id);

CREATE INDEX entity_interactions_entity ON public.entity_interactions USING btree (entity_id, occurred_at DESC);

CREATE INDEX expenses_incurred_on ON public.expenses USING btree (incurred_on);

CREATE INDEX expenses_job ON public.expenses USING btree (job_id) WHERE (job_id IS NOT NULL);

CREATE UNIQUE INDEX expenses_reference_once ON public.expenses USING btree (lower(COALESCE(supplier, ''::text)), reference) WHERE (reference IS NOT NULL);

CREATE INDEX generated_images_created_at ON public.generated_images USING btree (created_at DESC);

CREATE INDEX generated_images_request ON public.generated_images USING btree (request_id);

CREATE UNIQUE INDEX identity_memories_current_key ON public.identity_memories USING btree (key) WHERE (valid_to IS NULL);

CREATE INDEX identity_memories_current_type ON public.identity_memories USING btree (memory_type, key) WHERE (valid_to IS NULL);

CREATE INDEX identity_memories_key_history ON public.identity_memories USING btree (key, valid_from DESC);

CREATE INDEX identity_memories_supersedes ON public.identity_memories USING btree (supersedes) WHERE (supersedes IS NOT NULL);

CREATE INDEX identity_self_model_changes_created_at ON public.identity_self_model_changes USING btree (created_at DESC);

CREATE UNIQUE INDEX inspection_appointments_once ON public.inspection_appointments USING btree (lead_id, scheduled_for) WHERE (status = 'scheduled'::text);

CREATE INDEX inspection_appointments_upcoming ON public.inspection_appointments USING btree (scheduled_for) WHERE (status = 'scheduled'::text);

CREATE INDEX inspection_defects_inspection ON public.inspection_defects USING btree (inspection_id);

CREATE INDEX inspection_measurements_inspection ON public.inspection_measurements USING btree (inspection_id);

CREATE INDEX inspections_lead ON public.inspections USING btree (lead_id, created_at DESC);

CREATE INDEX integration_sync_queue_due ON public.integration_sync_queue USING btree (next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX integration_webhook_events_call ON public.integration_webhook_events USING btree (call_id) WHERE (call_id IS NOT NULL);

CREATE INDEX invoice_payments_invoice ON public.invoice_payments USING btree (invoice_id, created_at);

CREATE INDEX invoice_payments_received_on ON public.invoice_payments USING btree (received_on);

CREATE INDEX invoices_unpaid_due ON public.invoices USING btree (due_on) WHERE (paid_at IS NULL);

CREATE INDEX job_progress_updates_job ON public.job_progress_updates USING btree (job_id, created_at);

CREATE INDEX job_site_notes_job ON public.job_site_notes USING btree (job_id, created_at);

CREATE INDEX jobs_open_start ON public.jobs USING btree (start_date) WHERE (status <> 'completed'::text);

CREATE INDEX lead_stage_changes_lead ON public.lead_stage_changes USING btree (lead_id, created_at);

CREATE UNIQUE INDEX leads_highlevel_contact ON public.leads USING btree (highlevel_contact_id) WHERE (highlevel_contact_id IS NOT NULL);

CREATE INDEX leads_phone_digits_unkeyed ON public.leads USING btree (phone_digits) WHERE (phone_e164 IS NULL);

CREATE INDEX leads_stage_created_at ON public.leads USING btree (stage, created_at DESC);

CREATE INDEX lore_chunks_search ON public.lore_chunks USING gin (tsv) WITH (fastupdate=off);

CREATE INDEX lore_chunks_trgm ON public.lore_chunks USING gin (public.gem_lore_search_text(context, content) public.gin_trgm_ops) WITH (fastupdate=off);

CREATE INDEX lore_documents_updated_at ON public.lore_documents USING btree (updated_at DESC);

CREATE INDEX marketing_campaign_results_channel ON public.marketing_campaign_results USING btree (channel, created_at DESC);

CREATE INDEX marketing_content_items_publish_at ON public.marketing_content_items USING btree (publish_at);

CREATE INDEX media_assets_job ON public.media_assets USING btree (job_id) WHERE (job_id IS NOT NULL);

CREATE INDEX media_assets_lead ON public.media_assets USING btree (lead_id) WHERE (lead_id IS NOT NULL);

CREATE UNIQUE INDEX media_assets_proposed_name ON public.media_assets USING btree (proposed_name) WHERE (proposed_name IS NOT NULL);

CREATE INDEX media_assets_tags ON public.media_assets USING gin (tags) WITH (fastupdate=off);

CREATE INDEX os_notes_created_at ON public.os_notes USING btree (created_at DESC);

CREATE INDEX os_notes_entity_refs ON public.os_notes USING gin (entity_refs jsonb_path_ops) WITH (fastupdate=off);

CREATE INDEX os_notes_search ON public.os_notes USING gin (public.gem_note_document(title, content, tags)) WITH (fastupdate=off);

CREATE INDEX os_reminders_pending ON public.os_reminders USING btree (remind_at) WHERE (status = 'pending'::text);

CREATE INDEX os_state_snapshots_latest ON public.os_state_snapshots USING btree (domain, as_of DESC);

CREATE INDEX os_tasks_domain_status ON public.os_tasks USING btree (domain, status, due_at);

CREATE INDEX os_tasks_lead ON public.os_tasks USING btree (lead_id) WHERE (lead_id IS NOT NULL);

CREATE INDEX os_tasks_status_priority ON public.os_tasks USING btree (status, priority, due_at);

CREATE INDEX personal_checkins_created_at ON public.personal_checkins USING btree (created_at DESC);

CREATE INDEX personal_commitments_active_review ON public.personal_commitments USING btree (review_at) WHERE (status = 'active'::text);

CREATE INDEX quotes_inspection ON public.quotes USING btree (inspection_id);

CREATE INDEX quotes_lead ON public.quotes USING btree (lead_id, created_at DESC);

CREATE INDEX river_job_args_index ON public.river_job USING gin (args);

CREATE INDEX river_job_kind ON public.river_job USING btree (kind);

CREATE INDEX river_job_metadata_index ON public.river_job USING gin (metadata);

CREATE INDEX river_job_prioritized_fetching_index ON public.river_job USING btree (state, queue, priority, scheduled_at, id);

CREATE INDEX river_job_state_and_finalized_at_index ON public.river_job USING btree (state, finalized_at) WHERE (finalized_at IS NOT NULL);

CREATE UNIQUE INDEX river_job_unique_idx ON public.river_job USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND (unique_states IS NOT NULL) AND public.river_job_state_in_bitmask(unique_states, state));

CREATE INDEX river_notification_created_at_idx ON public.river_notification USING btree (created_at);

CREATE INDEX river_notification_topic_id_idx ON public.river_notification USING btree (topic, id);

ALTER INDEX public.brain_run_events_pkey ATTACH PARTITION public.brain_run_events_p_before_pkey;

ALTER INDEX public.brain_run_events_pkey ATTACH PARTITION public.brain_run_events_p_nonv7_pkey;

ALTER INDEX public.brain_run_programs_pkey ATTACH PARTITION public.brain_run_programs_p_before_pkey;

ALTER INDEX public.brain_run_programs_run ATTACH PARTITION public.brain_run_programs_p_before_run_id_id_idx;

ALTER INDEX public.brain_run_programs_pkey ATTACH PARTITION public.brain_run_programs_p_nonv7_pkey;

ALTER INDEX public.brain_run_programs_run ATTACH PARTITION public.brain_run_programs_p_nonv7_run_id_id_idx;

ALTER INDEX public.brain_runs_conversation ATTACH PARTITION public.brain_runs_p_before_conversation_id_created_at_idx;

ALTER INDEX public.brain_runs_queued ATTACH PARTITION public.brain_runs_p_before_conversation_id_id_idx;

ALTER INDEX public.brain_runs_created_at ATTACH PARTITION public.brain_runs_p_before_created_at_idx;

ALTER INDEX public.brain_runs_lease ATTACH PARTITION public.brain_runs_p_before_lease_until_idx;

ALTER INDEX public.brain_runs_pkey ATTACH PARTITION public.brain_runs_p_before_pkey;

ALTER INDEX public.brain_runs_requested_by ATTACH PARTITION public.brain_runs_p_before_requested_by_created_at_idx;

ALTER INDEX public.brain_runs_open ATTACH PARTITION public.brain_runs_p_before_status_created_at_idx;

ALTER INDEX public.brain_runs_conversation ATTACH PARTITION public.brain_runs_p_nonv7_conversation_id_created_at_idx;

ALTER INDEX public.brain_runs_queued ATTACH PARTITION public.brain_runs_p_nonv7_conversation_id_id_idx;

ALTER INDEX public.brain_runs_created_at ATTACH PARTITION public.brain_runs_p_nonv7_created_at_idx;

ALTER INDEX public.brain_runs_lease ATTACH PARTITION public.brain_runs_p_nonv7_lease_until_idx;

ALTER INDEX public.brain_runs_pkey ATTACH PARTITION public.brain_runs_p_nonv7_pkey;

ALTER INDEX public.brain_runs_requested_by ATTACH PARTITION public.brain_runs_p_nonv7_requested_by_created_at_idx;

ALTER INDEX public.brain_runs_open ATTACH PARTITION public.brain_runs_p_nonv7_status_created_at_idx;

ALTER INDEX public.brain_turns_pkey ATTACH PARTITION public.brain_turns_p_before_pkey;

ALTER INDEX public.brain_turns_run ATTACH PARTITION public.brain_turns_p_before_run_id_iteration_idx;

ALTER INDEX public.brain_turns_pkey ATTACH PARTITION public.brain_turns_p_nonv7_pkey;

ALTER INDEX public.brain_turns_run ATTACH PARTITION public.brain_turns_p_nonv7_run_id_iteration_idx;

ALTER INDEX public.core_tool_calls_approved_by ATTACH PARTITION public.core_tool_calls_p_before_approved_by_created_at_idx;

ALTER INDEX public.core_tool_calls_created_at ATTACH PARTITION public.core_tool_calls_p_before_created_at_idx;

ALTER INDEX public.core_tool_calls_idempotency_of ATTACH PARTITION public.core_tool_calls_p_before_idempotency_of_idx;

ALTER INDEX public.core_tool_calls_pkey ATTACH PARTITION public.core_tool_calls_p_before_pkey;

ALTER INDEX public.core_tool_calls_requested_by ATTACH PARTITION public.core_tool_calls_p_before_requested_by_created_at_idx;

ALTER INDEX public.core_tool_calls_run ATTACH PARTITION public.core_tool_calls_p_before_run_id_idx;

ALTER INDEX public.core_tool_calls_tool_created_at ATTACH PARTITION public.core_tool_calls_p_before_tool_name_created_at_idx;

ALTER INDEX public.core_tool_calls_limited ATTACH PARTITION public.core_tool_calls_p_before_tool_name_limited_since_idx;

ALTER INDEX public.core_tool_calls_approved_by ATTACH PARTITION public.core_tool_calls_p_nonv7_approved_by_created_at_idx;

ALTER INDEX public.core_tool_calls_created_at ATTACH PARTITION public.core_tool_calls_p_nonv7_created_at_idx;

ALTER INDEX public.core_tool_calls_idempotency_of ATTACH PARTITION public.core_tool_calls_p_nonv7_idempotency_of_idx;

ALTER INDEX public.core_tool_calls_pkey ATTACH PARTITION public.core_tool_calls_p_nonv7_pkey;

ALTER INDEX public.core_tool_calls_requested_by ATTACH PARTITION public.core_tool_calls_p_nonv7_requested_by_created_at_idx;

ALTER INDEX public.core_tool_calls_run ATTACH PARTITION public.core_tool_calls_p_nonv7_run_id_idx;

ALTER INDEX public.core_tool_calls_tool_created_at ATTACH PARTITION public.core_tool_calls_p_nonv7_tool_name_created_at_idx;

ALTER INDEX public.core_tool_calls_limited ATTACH PARTITION public.core_tool_calls_p_nonv7_tool_name_limited_since_idx;

ALTER INDEX public.core_tool_receipts_finished_at ATTACH PARTITION public.core_tool_receipts_p_before_finished_at_idx;

ALTER INDEX public.core_tool_receipts_not_succeeded ATTACH PARTITION public.core_tool_receipts_p_before_finished_at_idx1;

ALTER INDEX public.core_tool_receipts_idempotency_hits ATTACH PARTITION public.core_tool_receipts_p_before_finished_at_idx2;

ALTER INDEX public.core_tool_receipts_id ATTACH PARTITION public.core_tool_receipts_p_before_id_idx;

ALTER INDEX public.core_tool_receipts_idempotency_of ATTACH PARTITION public.core_tool_receipts_p_before_idempotency_of_idx;

ALTER INDEX public.core_tool_receipts_one_per_call ATTACH PARTITION public.core_tool_receipts_p_before_one_per_call;

ALTER INDEX public.core_tool_receipts_tool_finished_at ATTACH PARTITION public.core_tool_receipts_p_before_tool_name_finished_at_idx;

ALTER INDEX public.core_tool_receipts_finished_at ATTACH PARTITION public.core_tool_receipts_p_nonv7_finished_at_idx;

ALTER INDEX public.core_tool_receipts_not_succeeded ATTACH PARTITION public.core_tool_receipts_p_nonv7_finished_at_idx1;

ALTER INDEX public.core_tool_receipts_idempotency_hits ATTACH PARTITION public.core_tool_receipts_p_nonv7_finished_at_idx2;

ALTER INDEX public.core_tool_receipts_id ATTACH PARTITION public.core_tool_receipts_p_nonv7_id_idx;

ALTER INDEX public.core_tool_receipts_idempotency_of ATTACH PARTITION public.core_tool_receipts_p_nonv7_idempotency_of_idx;

ALTER INDEX public.core_tool_receipts_one_per_call ATTACH PARTITION public.core_tool_receipts_p_nonv7_one_per_call;

ALTER INDEX public.core_tool_receipts_tool_finished_at ATTACH PARTITION public.core_tool_receipts_p_nonv7_tool_name_finished_at_idx;

CREATE TRIGGER agent_memories_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.agent_memories FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER brain_runs_a_uuid_v7 BEFORE INSERT ON public.brain_runs FOR EACH ROW EXECUTE FUNCTION public.gem_require_uuid_v7();

CREATE TRIGGER brain_runs_claim_key BEFORE INSERT ON public.brain_runs FOR EACH ROW WHEN ((new.idempotency_key IS NOT NULL)) EXECUTE FUNCTION public.gem_run_claim_key();

CREATE TRIGGER brain_runs_ended AFTER INSERT OR UPDATE OF status ON public.brain_runs FOR EACH ROW WHEN ((new.status = ANY (ARRAY['completed'::text, 'failed'::text]))) EXECUTE FUNCTION public.gem_run_ended();

CREATE TRIGGER brain_runs_events_ended AFTER UPDATE OF status ON public.brain_runs FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text])))) EXECUTE FUNCTION public.gem_run_changed();

CREATE TRIGGER brain_runs_events_inserted AFTER INSERT ON public.brain_runs FOR EACH ROW EXECUTE FUNCTION public.gem_run_changed();

CREATE TRIGGER calendar_events_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.calendar_events FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER calendar_events_guard BEFORE UPDATE ON public.calendar_events FOR EACH ROW EXECUTE FUNCTION public.gem_calendar_event_guard();

CREATE TRIGGER comms_log_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.comms_log FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER core_device_attempts_queued AFTER INSERT ON public.core_device_attempts FOR EACH ROW EXECUTE FUNCTION public.gem_device_attempt_queued();

CREATE TRIGGER core_rollbacks_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.core_rollbacks FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER core_tool_calls_a_max_attempts BEFORE INSERT OR UPDATE OF max_attempts ON public.core_tool_calls FOR EACH ROW EXECUTE FUNCTION public.gem_check_max_attempts();

CREATE TRIGGER core_tool_calls_a_uuid_v7 BEFORE INSERT ON public.core_tool_calls FOR EACH ROW EXECUTE FUNCTION public.gem_require_uuid_v7();

CREATE TRIGGER core_tool_calls_awaiting_approval AFTER INSERT ON public.core_tool_calls FOR EACH ROW WHEN ((new.status = 'awaiting_approval'::text)) EXECUTE FUNCTION public.gem_call_awaits_approval();

CREATE TRIGGER core_tool_calls_duplicate AFTER INSERT ON public.core_tool_calls FOR EACH ROW WHEN ((new.idempotency_of IS NOT NULL)) EXECUTE FUNCTION public.gem_call_duplicate();

CREATE TRIGGER core_tool_calls_enqueue BEFORE INSERT ON public.core_tool_calls FOR EACH ROW EXECUTE FUNCTION public.gem_call_enqueue();

CREATE TRIGGER core_tool_receipts_inserted AFTER INSERT ON public.core_tool_receipts REFERENCING NEW TABLE AS new_receipts FOR EACH STATEMENT EXECUTE FUNCTION public.gem_receipts_inserted();

CREATE TRIGGER entities_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.entities FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER entity_conversations_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.entity_conversations FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER entity_interactions_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.entity_interactions FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER expenses_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.expenses FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER generated_images_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.generated_images FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER identity_memories_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.identity_memories FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER identity_self_model_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.identity_self_model FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER identity_self_model_changes_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.identity_self_model_changes FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspection_appointments_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.inspection_appointments FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspection_checklist_items_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.inspection_checklist_items FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspection_checklist_items_guard BEFORE INSERT OR DELETE OR UPDATE ON public.inspection_checklist_items FOR EACH ROW EXECUTE FUNCTION public.gem_inspection_part_guard();

CREATE TRIGGER inspection_defects_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.inspection_defects FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspection_defects_guard BEFORE INSERT OR DELETE OR UPDATE ON public.inspection_defects FOR EACH ROW EXECUTE FUNCTION public.gem_inspection_part_guard();

CREATE TRIGGER inspection_measurements_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.inspection_measurements FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspection_measurements_guard BEFORE INSERT OR DELETE OR UPDATE ON public.inspection_measurements FOR EACH ROW EXECUTE FUNCTION public.gem_inspection_part_guard();

CREATE TRIGGER inspection_photos_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.inspection_photos FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspection_photos_guard BEFORE INSERT OR DELETE OR UPDATE ON public.inspection_photos FOR EACH ROW EXECUTE FUNCTION public.gem_inspection_part_guard();

CREATE TRIGGER inspections_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.inspections FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER inspections_locked_guard BEFORE DELETE OR UPDATE ON public.inspections FOR EACH ROW EXECUTE FUNCTION public.gem_inspection_locked_guard();

CREATE TRIGGER integration_media_sources_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.integration_media_sources FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER integration_sync_queue_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.integration_sync_queue FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER integration_sync_state_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.integration_sync_state FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER integration_webhook_events_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.integration_webhook_events FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER invoice_payments_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.invoice_payments FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER invoices_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.invoices FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER job_media_refs_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.job_media_refs FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER job_progress_updates_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.job_progress_updates FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER job_site_notes_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.job_site_notes FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER jobs_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.jobs FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER lead_photo_links_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.lead_photo_links FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER lead_sources_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.lead_sources FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER lead_stage_changes_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.lead_stage_changes FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER leads_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.leads FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER lore_chunks_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.lore_chunks FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER lore_documents_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.lore_documents FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER marketing_campaign_results_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.marketing_campaign_results FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER marketing_content_items_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.marketing_content_items FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER media_asset_captions_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.media_asset_captions FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER media_assets_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.media_assets FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER os_notes_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.os_notes FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER os_reminders_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.os_reminders FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER os_state_snapshots_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.os_state_snapshots FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER os_tasks_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.os_tasks FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER personal_checkins_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.personal_checkins FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER personal_commitments_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.personal_commitments FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER quote_line_items_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.quote_line_items FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER quote_line_items_guard BEFORE INSERT OR DELETE OR UPDATE ON public.quote_line_items FOR EACH ROW EXECUTE FUNCTION public.gem_quote_line_guard();

CREATE TRIGGER quotes_amounts_guard BEFORE UPDATE ON public.quotes FOR EACH ROW EXECUTE FUNCTION public.gem_quote_amounts_guard();

CREATE TRIGGER quotes_capture_write AFTER INSERT OR DELETE OR UPDATE ON public.quotes FOR EACH ROW EXECUTE FUNCTION public.gem_capture_write();

CREATE TRIGGER river_job_gem_deleted AFTER DELETE ON public.river_job FOR EACH ROW WHEN (((old.kind = 'gem.tool_call'::text) AND (old.state <> ALL (ARRAY['completed'::public.river_job_state, 'cancelled'::public.river_job_state, 'discarded'::public.river_job_state])))) EXECUTE FUNCTION public.gem_job_deleted();

CREATE TRIGGER river_job_gem_finished AFTER UPDATE OF state ON public.river_job FOR EACH ROW WHEN (((new.kind = 'gem.tool_call'::text) AND (new.state = ANY (ARRAY['discarded'::public.river_job_state, 'cancelled'::public.river_job_state, 'completed'::public.river_job_state])) AND (new.state IS DISTINCT FROM old.state) AND (current_setting('gem.jobs_receipted'::text, true) IS DISTINCT FROM 'on'::text))) EXECUTE FUNCTION public.gem_job_finished();

CREATE TRIGGER skill_dependencies_no_cycle BEFORE INSERT OR UPDATE ON public.skill_dependencies FOR EACH ROW EXECUTE FUNCTION public.gem_skill_dependency_check();

ALTER TABLE ONLY public.agent_messages
    ADD CONSTRAINT agent_messages_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.brain_runs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.agent_messages
    ADD CONSTRAINT agent_messages_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.agent_sessions(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.agent_session_decisions
    ADD CONSTRAINT agent_session_decisions_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.agent_session_decisions
    ADD CONSTRAINT agent_session_decisions_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.agent_sessions(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.agent_sessions
    ADD CONSTRAINT agent_sessions_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.agent_skills
    ADD CONSTRAINT agent_skills_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.agent_skills
    ADD CONSTRAINT agent_skills_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES public.skills(id) ON DELETE CASCADE;

ALTER TABLE public.brain_run_programs
    ADD CONSTRAINT brain_run_programs_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.brain_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.brain_studio_sessions
    ADD CONSTRAINT brain_studio_sessions_caller_fkey FOREIGN KEY (caller) REFERENCES public.core_callers(name) ON DELETE CASCADE;

ALTER TABLE public.brain_turns
    ADD CONSTRAINT brain_turns_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.brain_runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.calendar_events
    ADD CONSTRAINT calendar_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.calendar_events
    ADD CONSTRAINT calendar_events_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.comms_log
    ADD CONSTRAINT comms_log_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES public.entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.comms_log
    ADD CONSTRAINT comms_log_invoice_id_fkey FOREIGN KEY (invoice_id) REFERENCES public.invoices(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.comms_log
    ADD CONSTRAINT comms_log_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.comms_log
    ADD CONSTRAINT comms_log_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.core_approvals
    ADD CONSTRAINT core_approvals_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.core_device_attempts
    ADD CONSTRAINT core_device_attempts_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.core_device_tools
    ADD CONSTRAINT core_device_tools_device_fkey FOREIGN KEY (device) REFERENCES public.core_devices(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.core_idempotency_keys
    ADD CONSTRAINT core_idempotency_keys_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.core_mcp_tasks
    ADD CONSTRAINT core_mcp_tasks_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.core_rollbacks
    ADD CONSTRAINT core_rollbacks_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE public.core_tool_receipts
    ADD CONSTRAINT core_tool_receipts_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE CASCADE;

ALTER TABLE public.core_tool_receipts
    ADD CONSTRAINT core_tool_receipts_idempotency_of_fkey FOREIGN KEY (idempotency_of) REFERENCES public.core_tool_calls(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES public.entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.entity_conversations
    ADD CONSTRAINT entity_conversations_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES public.entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.entity_interactions
    ADD CONSTRAINT entity_interactions_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES public.entities(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.expenses
    ADD CONSTRAINT expenses_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.identity_memories
    ADD CONSTRAINT identity_memories_supersedes_fkey FOREIGN KEY (supersedes) REFERENCES public.identity_memories(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inspection_appointments
    ADD CONSTRAINT inspection_appointments_calendar_event_id_fkey FOREIGN KEY (calendar_event_id) REFERENCES public.calendar_events(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inspection_appointments
    ADD CONSTRAINT inspection_appointments_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inspection_checklist_items
    ADD CONSTRAINT inspection_checklist_items_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES public.inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inspection_defects
    ADD CONSTRAINT inspection_defects_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES public.inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inspection_measurements
    ADD CONSTRAINT inspection_measurements_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES public.inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inspection_photos
    ADD CONSTRAINT inspection_photos_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES public.media_assets(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inspection_photos
    ADD CONSTRAINT inspection_photos_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES public.inspections(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.inspections
    ADD CONSTRAINT inspections_appointment_id_fkey FOREIGN KEY (appointment_id) REFERENCES public.inspection_appointments(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.inspections
    ADD CONSTRAINT inspections_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.inspections
    ADD CONSTRAINT inspections_site_id_fkey FOREIGN KEY (site_id) REFERENCES public.entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.integration_sync_queue
    ADD CONSTRAINT integration_sync_queue_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.integration_webhook_events
    ADD CONSTRAINT integration_webhook_events_call_id_fkey FOREIGN KEY (call_id) REFERENCES public.core_tool_calls(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.invoice_payments
    ADD CONSTRAINT invoice_payments_invoice_id_fkey FOREIGN KEY (invoice_id) REFERENCES public.invoices(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.invoices
    ADD CONSTRAINT invoices_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.job_media_refs
    ADD CONSTRAINT job_media_refs_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.job_progress_updates
    ADD CONSTRAINT job_progress_updates_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.job_site_notes
    ADD CONSTRAINT job_site_notes_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_quote_id_fkey FOREIGN KEY (quote_id) REFERENCES public.quotes(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.lead_photo_links
    ADD CONSTRAINT lead_photo_links_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.lead_sources
    ADD CONSTRAINT lead_sources_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.lead_stage_changes
    ADD CONSTRAINT lead_stage_changes_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.lore_chunks
    ADD CONSTRAINT lore_chunks_document_id_fkey FOREIGN KEY (document_id) REFERENCES public.lore_documents(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.marketing_content_items
    ADD CONSTRAINT marketing_content_items_task_id_fkey FOREIGN KEY (task_id) REFERENCES public.os_tasks(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.media_asset_captions
    ADD CONSTRAINT media_asset_captions_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES public.media_assets(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.media_assets
    ADD CONSTRAINT media_assets_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES public.entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.media_assets
    ADD CONSTRAINT media_assets_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES public.inspections(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.media_assets
    ADD CONSTRAINT media_assets_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.media_assets
    ADD CONSTRAINT media_assets_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.os_notes
    ADD CONSTRAINT os_notes_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.os_reminders
    ADD CONSTRAINT os_reminders_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.os_reminders
    ADD CONSTRAINT os_reminders_task_id_fkey FOREIGN KEY (task_id) REFERENCES public.os_tasks(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.os_tasks
    ADD CONSTRAINT os_tasks_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.quote_line_items
    ADD CONSTRAINT quote_line_items_quote_id_fkey FOREIGN KEY (quote_id) REFERENCES public.quotes(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.quotes
    ADD CONSTRAINT quotes_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.entities(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.quotes
    ADD CONSTRAINT quotes_inspection_id_fkey FOREIGN KEY (inspection_id) REFERENCES public.inspections(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.quotes
    ADD CONSTRAINT quotes_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES public.leads(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.skill_dependencies
    ADD CONSTRAINT skill_dependencies_requires_skill_id_fkey FOREIGN KEY (requires_skill_id) REFERENCES public.skills(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.skill_dependencies
    ADD CONSTRAINT skill_dependencies_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES public.skills(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.skill_files
    ADD CONSTRAINT skill_files_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES public.skills(id) ON DELETE CASCADE;

ALTER TABLE public.core_approvals ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_approvals_read ON public.core_approvals FOR SELECT USING (((EXISTS ( SELECT 1
   FROM public.core_tool_calls c
  WHERE (c.id = core_approvals.call_id))) OR ( SELECT public.gem_session_caller_holds('approve'::text) AS gem_session_caller_holds)));

ALTER TABLE public.core_device_attempts ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_device_attempts_read ON public.core_device_attempts FOR SELECT USING ((EXISTS ( SELECT 1
   FROM public.core_tool_calls c
  WHERE (c.id = core_device_attempts.call_id))));

ALTER TABLE public.core_tool_calls ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_tool_calls_insert ON public.core_tool_calls FOR INSERT WITH CHECK (true);

CREATE POLICY core_tool_calls_read ON public.core_tool_calls FOR SELECT USING (((requested_by = ('sql:'::text || (SESSION_USER)::text)) OR (approved_by = ('sql:'::text || (SESSION_USER)::text)) OR ( SELECT public.gem_reads_all_calls(CURRENT_USER) AS gem_reads_all_calls)));

ALTER TABLE public.core_tool_receipts ENABLE ROW LEVEL SECURITY;

CREATE POLICY core_tool_receipts_read ON public.core_tool_receipts FOR SELECT USING ((EXISTS ( SELECT 1
   FROM public.core_tool_calls c
  WHERE (c.id = core_tool_receipts.call_id))));

GRANT INSERT(agent) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(device) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(device_wait_ms) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(id) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(idempotency_key) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(input) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(max_attempts) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(requested_by) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(run_id) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(tool_name) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(traceparent) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(tracestate) ON TABLE public.core_tool_calls TO gem_caller;
GRANT INSERT(user_id) ON TABLE public.core_tool_calls TO gem_caller;
GRANT SELECT ON TABLE public.core_approval_policies TO gem_auditor;
GRANT SELECT ON TABLE public.core_approval_policies TO gem_caller;
GRANT SELECT ON TABLE public.core_approvals TO gem_auditor;
GRANT SELECT ON TABLE public.core_approvals TO gem_caller;
GRANT SELECT ON TABLE public.core_calls TO gem_auditor;
GRANT SELECT ON TABLE public.core_calls TO gem_caller;
GRANT SELECT ON TABLE public.core_device_attempts TO gem_auditor;
GRANT SELECT ON TABLE public.core_device_attempts TO gem_caller;
GRANT SELECT ON TABLE public.core_devices_status TO gem_auditor;
GRANT SELECT ON TABLE public.core_devices_status TO gem_caller;
GRANT SELECT ON TABLE public.core_idempotency_hits TO gem_auditor;
GRANT SELECT ON TABLE public.core_idempotency_hits TO gem_caller;
GRANT SELECT ON TABLE public.core_pending_approvals TO gem_auditor;
GRANT SELECT ON TABLE public.core_pending_approvals TO gem_caller;
GRANT SELECT ON TABLE public.core_queue_depth TO gem_auditor;
GRANT SELECT ON TABLE public.core_queue_depth TO gem_caller;
GRANT SELECT ON TABLE public.core_recent_failures TO gem_auditor;
GRANT SELECT ON TABLE public.core_recent_failures TO gem_caller;
GRANT SELECT ON TABLE public.core_tool_calls TO gem_auditor;
GRANT SELECT ON TABLE public.core_tool_calls TO gem_caller;
GRANT SELECT ON TABLE public.core_tool_receipts TO gem_auditor;
GRANT SELECT ON TABLE public.core_tool_receipts TO gem_caller;
GRANT SELECT ON TABLE public.core_tool_stats TO gem_auditor;
GRANT SELECT ON TABLE public.core_tool_stats TO gem_caller;
GRANT SELECT ON TABLE public.core_tools TO gem_auditor;
GRANT SELECT ON TABLE public.core_tools TO gem_caller;
GRANT SELECT(agent) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(agents) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(agents) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(approved_by) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(at) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(call_id) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(created_at) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(created_at) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(kind) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(kind) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(name) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(name) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(note) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(note) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(permissions) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(permissions) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(property) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(reason) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(requested_by) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(revoked_at) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(revoked_at) ON TABLE public.core_callers TO gem_caller;
GRANT SELECT(run_id) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(tool) ON TABLE public.brain_tool_attempts TO gem_auditor;
GRANT SELECT(updated_at) ON TABLE public.core_callers TO gem_auditor;
GRANT SELECT(updated_at) ON TABLE public.core_callers TO gem_caller;
GRANT USAGE ON SCHEMA public TO gem_auditor;
GRANT USAGE ON SCHEMA public TO gem_caller;
REVOKE ALL ON FUNCTION public.gem_approvals_expire() FROM PUBLIC;
REVOKE ALL ON FUNCTION public.gem_call_cancel(call uuid, canceller text) FROM PUBLIC;
REVOKE ALL ON FUNCTION public.gem_caller_grant(caller text, permissions text[], agents text[]) FROM PUBLIC;
