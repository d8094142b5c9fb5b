-- MCP tasks (the io.modelcontextprotocol/tasks extension, SEP-2663; docs/mcp-server.md#tasks): a tools/call
-- that does not finish at once answers with a task, a handle on its call that the client polls.
--
-- * core_mcp_tasks binds each task to its call and to the caller (and agent) that made it. The task id is a
--   bearer secret of 256 random bits: only its SHA-256 is stored, and another caller asking for it finds
--   nothing, as for an id never made. A call may have several tasks (a tools/call repeated with its key).
--   Tasks go with their calls: retention's ON DELETE CASCADE (docs/retention.md).
-- * gem_call_cancel cancels a call that has not started, with its one receipt (failed, code cancelled),
--   for the caller that made it: a call held for approval (its approval is decided "cancelled") or a queued
--   one (its River job is cancelled in the same transaction). A running or finished call is left alone.

-- +goose Up
CREATE TABLE core_mcp_tasks (
    id_sha256      bytea       PRIMARY KEY CHECK (octet_length(id_sha256) = 32),
    call_id        uuid        NOT NULL REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    caller         text        NOT NULL,
    agent          text        NOT NULL DEFAULT '',
    -- When the client answered the task's input request (the approval's URL): the task then waits for the
    -- person's decision as working, so that no request is asked twice (SEP-2663: a key answered is never
    -- outstanding again).
    input_answered timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX core_mcp_tasks_call ON core_mcp_tasks (call_id);

ALTER TABLE core_approvals DROP CONSTRAINT core_approvals_decision_check;
ALTER TABLE core_approvals ADD CONSTRAINT core_approvals_decision_check
    CHECK (decision IN ('approved', 'rejected', 'expired', 'cancelled'));

-- +goose StatementBegin
-- gem_call_cancel cancels call for canceller, the caller that made it (a role that may not act for GEM
-- cancels as itself), and returns the call's status after: "failed" when this cancelled it (its receipt:
-- failed, cancelled, "cancelled by <canceller>"; outcome_unknown instead when an earlier attempt may have
-- acted, as the safety net says), else the status it has (running, succeeded, failed, ...), unchanged. A
-- caller that is unknown, revoked, or not the call's is refused: SQLSTATE GA005. No call: GA006.
CREATE FUNCTION gem_call_cancel(call uuid, canceller text) RETURNS text LANGUAGE plpgsql AS $$
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
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_cancel(uuid, text) SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION gem_call_cancel(uuid, text) FROM PUBLIC;

-- +goose Down
DROP FUNCTION gem_call_cancel(uuid, text);
UPDATE core_approvals SET decision = 'rejected' WHERE decision = 'cancelled';
ALTER TABLE core_approvals DROP CONSTRAINT core_approvals_decision_check;
ALTER TABLE core_approvals ADD CONSTRAINT core_approvals_decision_check
    CHECK (decision IN ('approved', 'rejected', 'expired'));
DROP TABLE core_mcp_tasks;
