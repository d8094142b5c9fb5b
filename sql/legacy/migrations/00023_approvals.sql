-- Approvals (docs/governance.md#approvals): a call that needs a decision is inserted awaiting_approval with no
-- River job; approving it makes the job in the same transaction, rejecting it or letting it expire writes its
-- one receipt.

-- +goose Up

-- What the call's insert must know of each tool, written by every executor at start from its registry (and
-- by the hub for devices' own tools): its permissions and whether its calls need approval.
CREATE TABLE core_tools (
    name                text        PRIMARY KEY CHECK (name <> '' AND length(name) <= 200),
    permissions         text[]      NOT NULL DEFAULT '{}',
    approval_required   boolean     NOT NULL DEFAULT false,
    approval_expires_ms integer     NOT NULL DEFAULT 86400000 CHECK (approval_expires_ms > 0),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Approval by permission: every call of a tool declaring a permission the pattern matches needs approval
-- (only those made for an agent, with agents_only). The shortest expiry of the policies that match wins.
CREATE TABLE core_approval_policies (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    permission  text        NOT NULL CHECK (permission ~ '^(\*|[a-z][a-z0-9_-]*(:[a-z0-9_.-]+)*(:\*)?)$'),
    agents_only boolean     NOT NULL DEFAULT false,
    expires_ms  integer     NOT NULL DEFAULT 86400000 CHECK (expires_ms BETWEEN 1000 AND 2592000000),
    note        text        NOT NULL DEFAULT '' CHECK (length(note) <= 1000),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (permission, agents_only)
);

ALTER TABLE core_tool_calls DROP CONSTRAINT core_tool_calls_status_check;
ALTER TABLE core_tool_calls ADD CONSTRAINT core_tool_calls_status_check
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'not_configured', 'awaiting_approval'));

-- One row per call that needed approval: why, until when, and what was decided.
CREATE TABLE core_approvals (
    call_id     uuid        PRIMARY KEY REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    -- "tool" (its registry entry requires it) or "policy <id>: <permission>".
    required_by text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    decision    text        CHECK (decision IN ('approved', 'rejected', 'expired')),
    decided_by  text,
    reason      text        CHECK (length(reason) <= 2000),
    decided_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((decision IS NULL) = (decided_at IS NULL))
);
CREATE INDEX core_approvals_pending ON core_approvals (expires_at) WHERE decision IS NULL;

-- +goose StatementBegin
-- gem_permission_matches: does a grant or policy pattern ("*", "send:*", "read:db") cover a permission?
-- (registry.Grants.Allows in Go.)
CREATE FUNCTION gem_permission_matches(pattern text, permission text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT pattern = '*' OR pattern = permission
        OR (right(pattern, 1) = '*' AND starts_with(permission, left(pattern, -1)))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_approval_needed says whether a call of the tool (made for agent, or none) needs approval: what requires
-- it and how long a decision may take; no row when it does not. A tool no executor has described (and no
-- device serves) needs none: its call fails unknown_tool at once.
CREATE FUNCTION gem_approval_needed(tool text, agent text)
RETURNS TABLE (required_by text, expires_ms integer) LANGUAGE plpgsql STABLE AS $$
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
-- A new call becomes a River job in the same transaction (the notification wakes executors at once), unless
-- it needs approval: then it waits, awaiting_approval, with no job. Runs as its owner (00022_callers.sql).
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NEW.requested_by IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        NEW.requested_by := 'sql:' || session_user;
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
            'gem.tool_call', NEW.max_attempts, 'default', 1, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A call awaiting approval gets its approval row, and waiters hear of it (LISTEN gem_approval: the call id).
CREATE FUNCTION gem_call_awaits_approval() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO core_approvals (call_id, required_by, expires_at)
    SELECT NEW.id, n.required_by, now() + make_interval(secs => n.expires_ms / 1000.0)
    FROM gem_approval_needed(NEW.tool_name, NEW.agent) n;
    PERFORM pg_notify('gem_approval', NEW.id::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER core_tool_calls_awaiting_approval AFTER INSERT ON core_tool_calls
    FOR EACH ROW WHEN (NEW.status = 'awaiting_approval') EXECUTE FUNCTION gem_call_awaits_approval();

-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION gem_call_awaits_approval() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_approval_receipt writes the one receipt of a call that will not run: rejected or approval_expired.
CREATE FUNCTION gem_approval_receipt(call uuid, code text, message text, details jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, started_at, finished_at)
    SELECT c.id, c.tool_name, 'failed', jsonb_build_object('code', code, 'message', message, 'details', details),
           code, now(), now()
    FROM core_tool_calls c WHERE c.id = call
    ON CONFLICT (call_id) DO NOTHING
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_call_decide approves or rejects a call awaiting approval, for decider (a caller holding "approve"; a
-- role that may not act for GEM decides as itself, whatever it says). Approving enqueues the call in this
-- transaction; rejecting writes its receipt (rejected). A decision made twice, after expiry, or on a call
-- that awaits none is refused: SQLSTATE GA001 (already decided), GA002 (expired), GA003 (awaits no
-- approval), GA004 (the decider may not decide). It returns the call's status.
CREATE FUNCTION gem_call_decide(call uuid, approve boolean, reason text, decider text DEFAULT NULL) RETURNS text
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
-- gem_approvals_expire writes the receipt (approval_expired) of every call whose approval is due and
-- undecided, and returns how many. Executors run it when the next expiry comes; SKIP LOCKED lets several
-- run it at once, and a decision being made meanwhile wins.
CREATE FUNCTION gem_approvals_expire() RETURNS integer LANGUAGE plpgsql AS $$
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
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_decide(uuid, boolean, text, text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION gem_approvals_expire() FROM PUBLIC;

-- Calls awaiting approval with why and until when, for operators and the approvals pages.
CREATE VIEW core_pending_approvals AS
SELECT a.call_id, c.tool_name, c.input, c.requested_by, c.agent, c.run_id, a.required_by, a.expires_at, a.created_at
FROM core_approvals a
JOIN core_tool_calls c ON c.id = a.call_id
WHERE a.decision IS NULL
ORDER BY a.expires_at;

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        GRANT SELECT ON core_approvals, core_pending_approvals, core_tools, core_approval_policies TO gem_caller;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        GRANT SELECT ON core_approvals, core_pending_approvals, core_tools, core_approval_policies TO gem_auditor;
        REVOKE EXECUTE ON FUNCTION gem_call_decide(uuid, boolean, text, text) FROM gem_auditor;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP VIEW core_pending_approvals;
DROP FUNCTION gem_approvals_expire();
DROP FUNCTION gem_call_decide(uuid, boolean, text, text);
DROP FUNCTION gem_approval_receipt(uuid, text, text, jsonb);
DROP TRIGGER core_tool_calls_awaiting_approval ON core_tool_calls;
DROP FUNCTION gem_call_awaits_approval();
-- +goose StatementBegin
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
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
DROP FUNCTION gem_approval_needed(text, text);
DROP FUNCTION gem_permission_matches(text, text);
DROP TABLE core_approvals;
DELETE FROM core_tool_calls WHERE status = 'awaiting_approval';
ALTER TABLE core_tool_calls DROP CONSTRAINT core_tool_calls_status_check;
ALTER TABLE core_tool_calls ADD CONSTRAINT core_tool_calls_status_check
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'not_configured'));
DROP TABLE core_approval_policies;
DROP TABLE core_tools;
