-- Traces across the queue (docs/observability.md#traces): a call carries the W3C trace context of the span
-- that made it (the brain's enqueue, a script tool's handler), and its River job carries it in its metadata,
-- where the executor continues the trace. The brain does not insert River jobs (the call's insert trigger
-- does), so the context travels on the call row: NULL, and nothing copied, when the caller traces nothing.

-- +goose Up
ALTER TABLE core_tool_calls
    ADD COLUMN traceparent text CHECK (length(traceparent) BETWEEN 55 AND 512),
    ADD COLUMN tracestate  text CHECK (length(tracestate) <= 512);
COMMENT ON COLUMN core_tool_calls.traceparent IS
    'W3C traceparent of the span that made the call (its trace id is the one to look up); copied into the job''s metadata';

-- +goose StatementBegin
-- gem_trace_metadata is the River job metadata that carries a call's trace context: {} without one.
CREATE FUNCTION gem_trace_metadata(traceparent text, tracestate text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN traceparent IS NULL THEN '{}'::jsonb
                ELSE jsonb_strip_nulls(jsonb_build_object('traceparent', traceparent, 'tracestate', tracestate)) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A new call becomes a River job in the same transaction (the notification wakes executors at once), unless
-- it needs approval: then it waits, awaiting_approval, with no job. A call made for an agent takes the
-- fewest attempts and the priority its assignments give. The job's metadata carries the call's trace
-- context. Runs as its owner (00022_callers.sql).
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
-- gem_call_decide approves or rejects a call awaiting approval, for decider (a caller holding "approve"; a
-- role that may not act for GEM decides as itself, whatever it says). Approving enqueues the call in this
-- transaction (its job carries the call's trace context); rejecting writes its receipt (rejected). A
-- decision made twice, after expiry, or on a call that awaits none is refused: SQLSTATE GA001 (already
-- decided), GA002 (expired), GA003 (awaits no approval), GA004 (the decider may not decide). It returns the
-- call's status.
CREATE OR REPLACE FUNCTION gem_call_decide(call uuid, approve boolean, reason text, decider text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
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
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION gem_call_decide(uuid, boolean, text, text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A caller inserting calls with plain SQL may carry its own trace into GEM.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        GRANT INSERT (traceparent, tracestate) ON core_tool_calls TO gem_caller;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_call_decide(call uuid, approve boolean, reason text, decider text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
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
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (CASE WHEN c.device IS NULL THEN jsonb_build_object('call_id', c.id, 'tool_name', c.tool_name)
                 ELSE jsonb_build_object('call_id', c.id, 'tool_name', c.tool_name, 'device', c.device) END,
            'gem.tool_call', c.max_attempts, 'default', 1, 'available')
    RETURNING id INTO job;
    UPDATE core_tool_calls SET status = 'queued', job_id = job WHERE id = call;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    PERFORM pg_notify('gem_approval', call::text);
    RETURN 'queued';
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
    -- The common case costs one query: no tool requiring approval by that name, and no policy.
    IF (EXISTS (SELECT 1 FROM core_tools t WHERE t.name = NEW.tool_name AND t.approval_required)
        OR EXISTS (SELECT 1 FROM core_approval_policies))
       AND EXISTS (SELECT 1 FROM gem_approval_needed(NEW.tool_name, NEW.agent)) THEN
        NEW.status := 'awaiting_approval';
        NEW.job_id := NULL;
        RETURN NEW;
    END IF;
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', prio, 'available')
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
    EXECUTE format('ALTER FUNCTION gem_call_decide(uuid, boolean, text, text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
DROP FUNCTION gem_trace_metadata(text, text);
ALTER TABLE core_tool_calls DROP COLUMN traceparent, DROP COLUMN tracestate;
