-- The triggers on a call's hot path: River's fetch and the executor's completion of its jobs, and the
-- executor's receipts.
--
-- * River's fetch writes nothing of GEM's. The mirror of a running job into its call row (00001) wrote
--   every call row once more, inside River's fetch; the view core_calls reads a call's live status from its
--   job instead, and the call row changes only at its insert and its receipt.
-- * The safety-net receipts (00001's gem_job_failed_receipt) stay, for jobs that River or an operator
--   finishes without a receipt. The executor completes its jobs in the transaction that writes their
--   receipts and says so (gem.jobs_receipted), so its completions skip the check.
-- * The executor writes a batch's receipts in one INSERT: the receipt trigger works a statement at a time
--   (one UPDATE of the calls, one notification per receipt) instead of running per row.

-- +goose Up

DROP TRIGGER core_tool_receipts_inserted ON core_tool_receipts;
DROP TRIGGER river_job_gem_state_changed ON river_job;
DROP FUNCTION gem_receipt_inserted();
DROP FUNCTION gem_job_state_changed();

-- +goose StatementBegin
-- Receipts set their calls' final status and tell waiters (LISTEN gem_receipt), one notification per receipt
-- in the order they were inserted. The payload is the receipt as JSON (the fields of registry.Receipt); a
-- receipt too large for a notification (8000 bytes) is announced by its call id alone. Both happen in the
-- receipts' transaction: a waiter never sees a receipt that is not committed.
CREATE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER core_tool_receipts_inserted AFTER INSERT ON core_tool_receipts
    REFERENCING NEW TABLE AS new_receipts
    FOR EACH STATEMENT EXECUTE FUNCTION gem_receipts_inserted();

-- +goose StatementBegin
-- gem_job_finished writes the safety-net receipt of a call whose job was discarded, cancelled or completed
-- without one.
CREATE FUNCTION gem_job_finished() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- The condition is checked per row without running any function body, so River's fetch (state running) and
-- the executor's completions (gem.jobs_receipted) cost nothing here.
CREATE TRIGGER river_job_gem_finished AFTER UPDATE OF state ON river_job
    FOR EACH ROW WHEN (NEW.kind = 'gem.tool_call' AND NEW.state IN ('discarded', 'cancelled', 'completed')
                       AND NEW.state IS DISTINCT FROM OLD.state
                       AND current_setting('gem.jobs_receipted', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION gem_job_finished();

COMMENT ON COLUMN core_tool_calls.status IS
    'queued until the call''s receipt sets its final status; core_calls shows running calls as running';

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

-- +goose Down
DROP VIEW core_calls;
COMMENT ON COLUMN core_tool_calls.status IS NULL;
DROP TRIGGER river_job_gem_finished ON river_job;
DROP FUNCTION gem_job_finished();
DROP TRIGGER core_tool_receipts_inserted ON core_tool_receipts;
DROP FUNCTION gem_receipts_inserted();

-- +goose StatementBegin
CREATE FUNCTION gem_receipt_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    UPDATE core_tool_calls
    SET status = NEW.status,
        finished_at = NEW.finished_at,
        error_code = NEW.error_code,
        error = NEW.error ->> 'message',
        attempt = greatest(attempt, NEW.attempt),
        worker = coalesce(NEW.worker, worker),
        started_at = coalesce(started_at, NEW.started_at)
    WHERE id = NEW.call_id;
    payload := jsonb_build_object(
        'call_id', NEW.call_id, 'tool', NEW.tool_name, 'status', NEW.status, 'result', NEW.result,
        'effects', NEW.effects, 'error', NEW.error, 'summary', NEW.summary, 'idempotency_key', NEW.idempotency_key,
        'idempotency_hit', NEW.idempotency_hit, 'idempotency_of', NEW.idempotency_of, 'attempt', NEW.attempt,
        'worker', NEW.worker, 'duration_ms', NEW.duration_ms, 'started_at', NEW.started_at,
        'finished_at', NEW.finished_at)::text;
    IF octet_length(payload) > 7900 THEN
        payload := NEW.call_id::text;
    END IF;
    PERFORM pg_notify('gem_receipt', payload);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER core_tool_receipts_inserted AFTER INSERT ON core_tool_receipts
    FOR EACH ROW EXECUTE FUNCTION gem_receipt_inserted();

-- +goose StatementBegin
CREATE FUNCTION gem_job_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cid uuid := gem_job_call_id(NEW.args);
BEGIN
    IF cid IS NULL THEN
        RETURN NULL;
    END IF;
    CASE NEW.state
    WHEN 'running' THEN
        UPDATE core_tool_calls
        SET status = 'running', attempt = NEW.attempt,
            worker = NEW.attempted_by[array_upper(NEW.attempted_by, 1)],
            started_at = coalesce(started_at, NEW.attempted_at)
        WHERE id = (SELECT id FROM core_tool_calls WHERE id = cid AND status IN ('queued', 'running')
                    FOR UPDATE SKIP LOCKED);
    WHEN 'available', 'retryable', 'scheduled' THEN
        UPDATE core_tool_calls SET status = 'queued'
        WHERE id = (SELECT id FROM core_tool_calls WHERE id = cid AND status = 'running' FOR UPDATE SKIP LOCKED);
    WHEN 'discarded' THEN
        PERFORM gem_job_failed_receipt(NEW, 'job_discarded',
            'the call''s job was discarded after ' || NEW.attempt || ' attempts without a receipt');
    WHEN 'cancelled' THEN
        PERFORM gem_job_failed_receipt(NEW, 'job_cancelled', 'the call''s job was cancelled before it finished');
    WHEN 'completed' THEN
        PERFORM gem_job_failed_receipt(NEW, 'job_completed_without_receipt',
            'the call''s job was marked completed by something other than the executor');
    ELSE
        NULL;
    END CASE;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER river_job_gem_state_changed AFTER UPDATE OF state ON river_job
    FOR EACH ROW WHEN (NEW.kind = 'gem.tool_call' AND NEW.state IS DISTINCT FROM OLD.state)
    EXECUTE FUNCTION gem_job_state_changed();

