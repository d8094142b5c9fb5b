-- Who reads and who approves what (docs/governance.md#who-reads-what): a stored plan's calls carry the
-- caller who approved it (approved_by), whose grants bound them as the author's do; a caller reads its own
-- calls, receipts and runs, and reading everyone's needs the audit permission (or the gem_auditor role, for
-- SQL); a chat session belongs to the caller that started it; a revoked caller stays revoked when its grants
-- change.

-- +goose Up

-- The caller who approved the stored plan a call belongs to (POST /brain/runs/{id}/approve): its author or
-- a caller holding approve. The executor refuses the call unless the approver, too, holds what the tool needs.
ALTER TABLE core_tool_calls ADD COLUMN approved_by text CHECK (length(approved_by) <= 128);
COMMENT ON COLUMN core_tool_calls.approved_by IS
    'the caller who approved the stored plan this call belongs to: the call runs with no more than it holds';
ALTER TABLE brain_runs ADD COLUMN approved_by text CHECK (length(approved_by) <= 128);

-- A caller's own calls and runs, newest first: what a caller without audit lists.
CREATE INDEX core_tool_calls_requested_by ON core_tool_calls (requested_by, created_at DESC);
CREATE INDEX core_tool_calls_approved_by ON core_tool_calls (approved_by, created_at DESC) WHERE approved_by IS NOT NULL;
CREATE INDEX brain_runs_requested_by ON brain_runs (requested_by, created_at DESC);

-- A chat session belongs to the caller that started it (and its agent and user). Sessions made before are
-- given the caller of their first run; one without a run belongs to nobody (no caller may continue it).
ALTER TABLE agent_sessions ADD COLUMN caller text;
UPDATE agent_sessions s SET caller = (SELECT r.requested_by FROM brain_runs r WHERE r.conversation_id = s.id
                                      ORDER BY r.created_at LIMIT 1);

-- +goose StatementBegin
-- gem_session_caller_holds says whether the session's SQL caller ("sql:<session user>") holds a permission
-- and is not revoked. PL/pgSQL, so its query is planned once per connection, not at each call.
CREATE FUNCTION gem_session_caller_holds(permission text) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE SECURITY DEFINER AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM core_callers g WHERE g.name = 'sql:' || session_user AND g.revoked_at IS NULL
                   AND EXISTS (SELECT 1 FROM unnest(g.permissions) p WHERE gem_permission_matches(p, permission)));
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_reads_all_calls says whether a database role reads every caller's calls: the owner of GEM's tables (and
-- its members and superusers), gem_auditor's members, and a role whose caller ("sql:<session user>") holds
-- the audit permission. Everyone else reads the calls it made or approved.
CREATE FUNCTION gem_reads_all_calls(viewer name) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE SECURITY DEFINER AS $$
BEGIN
    RETURN pg_has_role(viewer, (SELECT relowner FROM pg_class WHERE oid = 'core_tool_calls'::regclass), 'USAGE')
        OR EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = 'gem_auditor' AND pg_has_role(viewer, r.oid, 'USAGE'))
        OR gem_session_caller_holds('audit');
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_reads_all_calls(name) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION gem_session_caller_holds(text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

-- Row-level security: a role that does not own GEM's tables reads the calls it made or approved, and their
-- receipts, attempts and approvals, unless gem_reads_all_calls says it reads all. The owner (the brain and
-- the executors) is not subject to it. Inserting is decided by the grants (gem_caller), as before.
ALTER TABLE core_tool_calls ENABLE ROW LEVEL SECURITY;
CREATE POLICY core_tool_calls_read ON core_tool_calls FOR SELECT
    USING (requested_by = 'sql:' || session_user OR approved_by = 'sql:' || session_user
           OR (SELECT gem_reads_all_calls(current_user)));
CREATE POLICY core_tool_calls_insert ON core_tool_calls FOR INSERT WITH CHECK (true);
ALTER TABLE core_tool_receipts ENABLE ROW LEVEL SECURITY;
CREATE POLICY core_tool_receipts_read ON core_tool_receipts FOR SELECT
    USING (EXISTS (SELECT 1 FROM core_tool_calls c WHERE c.id = call_id));
ALTER TABLE core_device_attempts ENABLE ROW LEVEL SECURITY;
CREATE POLICY core_device_attempts_read ON core_device_attempts FOR SELECT
    USING (EXISTS (SELECT 1 FROM core_tool_calls c WHERE c.id = call_id));
ALTER TABLE core_approvals ENABLE ROW LEVEL SECURITY;
CREATE POLICY core_approvals_read ON core_approvals FOR SELECT
    USING (EXISTS (SELECT 1 FROM core_tool_calls c WHERE c.id = call_id) OR (SELECT gem_session_caller_holds('approve')));

-- The views run as their owner, so they filter for the role reading them themselves (the same rule; the
-- role's test is made once per statement, and lazily: the owner's — the brain's and the executors' — is the
-- first, a catalog lookup of ~10 µs, after which the function is never called; calling it first cost
-- ~0.12 ms of every read of a call by id).
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
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried, c.parent_id, c.idempotency_of, c.approved_by
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued'
WHERE (SELECT pg_has_role(current_user, o.relowner, 'USAGE') FROM pg_class o WHERE o.oid = 'core_tool_calls'::regclass) OR (SELECT gem_reads_all_calls(current_user))
   OR c.requested_by = 'sql:' || session_user OR c.approved_by = 'sql:' || session_user;

CREATE OR REPLACE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent,
       r.device, r.devices_tried, c.requested_by, c.approved_by
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
  AND ((SELECT pg_has_role(current_user, o.relowner, 'USAGE') FROM pg_class o WHERE o.oid = 'core_tool_calls'::regclass) OR (SELECT gem_reads_all_calls(current_user))
       OR c.requested_by = 'sql:' || session_user OR c.approved_by = 'sql:' || session_user)
ORDER BY r.finished_at DESC;

CREATE OR REPLACE VIEW core_idempotency_hits AS
SELECT r.call_id, r.tool_name, r.idempotency_key, r.idempotency_of AS original_call_id,
       o.finished_at AS original_finished_at, r.finished_at
FROM core_tool_receipts r
LEFT JOIN core_tool_receipts o ON o.call_id = r.idempotency_of
WHERE r.idempotency_hit
  AND ((SELECT pg_has_role(current_user, o.relowner, 'USAGE') FROM pg_class o WHERE o.oid = 'core_tool_calls'::regclass) OR (SELECT gem_reads_all_calls(current_user))
       OR EXISTS (SELECT 1 FROM core_tool_calls c WHERE c.id = r.call_id
                  AND (c.requested_by = 'sql:' || session_user OR c.approved_by = 'sql:' || session_user)))
ORDER BY r.finished_at DESC;

-- What awaits a decision: every pending call for those who decide (approve) or read all; a caller's own
-- for the others.
CREATE OR REPLACE VIEW core_pending_approvals AS
SELECT a.call_id, c.tool_name, c.input, c.requested_by, c.agent, c.run_id, a.required_by, a.expires_at, a.created_at
FROM core_approvals a
JOIN core_tool_calls c ON c.id = a.call_id
WHERE a.decision IS NULL
  AND ((SELECT pg_has_role(current_user, o.relowner, 'USAGE') FROM pg_class o WHERE o.oid = 'core_tool_calls'::regclass) OR (SELECT gem_reads_all_calls(current_user))
       OR (SELECT gem_session_caller_holds('approve')) OR c.requested_by = 'sql:' || session_user)
ORDER BY a.expires_at;

-- +goose StatementBegin
-- gem_caller_grant sets a caller's permissions (and, when given, the agents it may act as), making the
-- caller when it does not exist. It no longer lifts a revocation: a revoked caller stays revoked (a token
-- caller is re-enabled with a new token, POST /callers/{name}/enable).
CREATE OR REPLACE FUNCTION gem_caller_grant(caller text, permissions text[], agents text[] DEFAULT NULL) RETURNS core_callers
LANGUAGE plpgsql AS $$
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_caller_grant(caller text, permissions text[], agents text[] DEFAULT NULL) RETURNS core_callers
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
CREATE OR REPLACE VIEW core_pending_approvals AS
SELECT a.call_id, c.tool_name, c.input, c.requested_by, c.agent, c.run_id, a.required_by, a.expires_at, a.created_at
FROM core_approvals a
JOIN core_tool_calls c ON c.id = a.call_id
WHERE a.decision IS NULL
ORDER BY a.expires_at;
CREATE OR REPLACE VIEW core_idempotency_hits AS
SELECT r.call_id, r.tool_name, r.idempotency_key, r.idempotency_of AS original_call_id,
       o.finished_at AS original_finished_at, r.finished_at
FROM core_tool_receipts r
LEFT JOIN core_tool_receipts o ON o.call_id = r.idempotency_of
WHERE r.idempotency_hit
ORDER BY r.finished_at DESC;
DROP VIEW core_recent_failures;
CREATE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent,
       r.device, r.devices_tried, c.requested_by
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC;
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
       c.device, c.device_wait_ms, r.device AS ran_on_device, r.devices_tried, c.parent_id, c.idempotency_of
FROM core_tool_calls c
LEFT JOIN river_job j ON j.id = c.job_id
LEFT JOIN core_tool_receipts r ON r.call_id = c.id AND c.status <> 'queued';
-- +goose StatementBegin
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['gem_caller', 'gem_auditor'] LOOP
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('GRANT SELECT ON core_calls, core_recent_failures TO %I', r);
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP POLICY core_approvals_read ON core_approvals;
ALTER TABLE core_approvals DISABLE ROW LEVEL SECURITY;
DROP POLICY core_device_attempts_read ON core_device_attempts;
ALTER TABLE core_device_attempts DISABLE ROW LEVEL SECURITY;
DROP POLICY core_tool_receipts_read ON core_tool_receipts;
ALTER TABLE core_tool_receipts DISABLE ROW LEVEL SECURITY;
DROP POLICY core_tool_calls_insert ON core_tool_calls;
DROP POLICY core_tool_calls_read ON core_tool_calls;
ALTER TABLE core_tool_calls DISABLE ROW LEVEL SECURITY;
DROP FUNCTION gem_reads_all_calls(name);
DROP FUNCTION gem_session_caller_holds(text);
ALTER TABLE agent_sessions DROP COLUMN caller;
DROP INDEX brain_runs_requested_by;
DROP INDEX core_tool_calls_approved_by;
DROP INDEX core_tool_calls_requested_by;
ALTER TABLE brain_runs DROP COLUMN approved_by;
ALTER TABLE core_tool_calls DROP COLUMN approved_by;
