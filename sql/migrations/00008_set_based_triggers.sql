-- The triggers that tie calls, receipts and River's jobs together, rewritten to work a statement at a time.
--
-- River fetches, completes and cleans up jobs many rows per statement, and the executor writes a batch's
-- receipts in one INSERT. Row-level triggers ran a PL/pgSQL function and a one-row UPDATE per row; these
-- statement-level triggers read the statement's transition tables and do each job with one set-based
-- statement. The safety-net receipts and the receipts' effect on their calls are unchanged
-- (00001_core.sql describes them). The mirror of a running job into its call row is gone: it wrote every
-- call row once more, inside River's fetch; the view core_calls reads the live status from the job instead.

-- +goose Up

DROP TRIGGER core_tool_receipts_inserted ON core_tool_receipts;
DROP TRIGGER river_job_gem_state_changed ON river_job;
DROP TRIGGER river_job_gem_deleted ON river_job;
DROP FUNCTION gem_receipt_inserted();
DROP FUNCTION gem_job_state_changed();
DROP FUNCTION gem_job_deleted();
DROP FUNCTION gem_job_failed_receipt(river_job, text, text);

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
-- gem_jobs_finished writes the safety-net receipts (see 00001_core.sql's gem_job_failed_receipt) for calls
-- whose jobs ended discarded, cancelled or completed without one.
CREATE FUNCTION gem_jobs_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, attempt, worker, started_at, finished_at)
    SELECT c.id, c.tool_name, 'failed',
           jsonb_build_object('code', f.code, 'message', f.message,
                              'details', jsonb_build_object('job_id', f.id, 'job_state', f.state, 'attempt', f.attempt,
                                                            'last_error', f.errors[array_upper(f.errors, 1)] ->> 'error')),
           f.code, f.attempt, f.attempted_by[array_upper(f.attempted_by, 1)],
           coalesce(f.attempted_at, c.created_at), now()
    FROM (
        SELECT n.*, gem_job_call_id(n.args) AS call_id,
               CASE n.state WHEN 'discarded' THEN 'job_discarded'
                            WHEN 'cancelled' THEN 'job_cancelled'
                            ELSE 'job_completed_without_receipt' END AS code,
               CASE n.state
                   WHEN 'discarded' THEN 'the call''s job was discarded after ' || n.attempt || ' attempts without a receipt'
                   WHEN 'cancelled' THEN 'the call''s job was cancelled before it finished'
                   ELSE 'the call''s job was marked completed by something other than the executor' END AS message
        FROM new_jobs n
        WHERE n.kind = 'gem.tool_call' AND n.state IN ('discarded', 'cancelled', 'completed')
    ) f
    JOIN core_tool_calls c ON c.id = f.call_id
    WHERE NOT EXISTS (SELECT 1 FROM core_tool_receipts r WHERE r.call_id = f.call_id)
    ORDER BY f.id
    ON CONFLICT (call_id) DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER river_job_gem_finished AFTER UPDATE ON river_job
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION gem_jobs_finished();

-- +goose StatementBegin
-- A call whose job is deleted before it finished gets a failed receipt (job_deleted).
CREATE FUNCTION gem_jobs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, attempt, worker, started_at, finished_at)
    SELECT c.id, c.tool_name, 'failed',
           jsonb_build_object('code', 'job_deleted', 'message', 'the call''s job was deleted before it finished',
                              'details', jsonb_build_object('job_id', o.id, 'job_state', o.state, 'attempt', o.attempt,
                                                            'last_error', o.errors[array_upper(o.errors, 1)] ->> 'error')),
           'job_deleted', o.attempt, o.attempted_by[array_upper(o.attempted_by, 1)],
           coalesce(o.attempted_at, c.created_at), now()
    FROM old_jobs o
    JOIN core_tool_calls c ON c.id = gem_job_call_id(o.args)
    WHERE o.kind = 'gem.tool_call' AND o.state NOT IN ('completed', 'cancelled', 'discarded')
      AND NOT EXISTS (SELECT 1 FROM core_tool_receipts r WHERE r.call_id = c.id)
    ORDER BY o.id
    ON CONFLICT (call_id) DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER river_job_gem_deleted AFTER DELETE ON river_job
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION gem_jobs_deleted();

-- A call's row changes twice: its insert (status queued) and its receipt (the final status, attempt, worker,
-- times). River's fetch, the hottest statement of all, writes no call rows; while a call has no receipt, its
-- River job says whether it is running. core_calls shows every call with that live status.
COMMENT ON COLUMN core_tool_calls.status IS
    'queued until the call''s receipt sets its final status; core_calls shows running calls as running';

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
DROP TRIGGER river_job_gem_deleted ON river_job;
DROP VIEW core_calls;
DROP TRIGGER river_job_gem_finished ON river_job;
DROP TRIGGER core_tool_receipts_inserted ON core_tool_receipts;
DROP FUNCTION gem_jobs_deleted();
DROP FUNCTION gem_jobs_finished();
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
CREATE FUNCTION gem_job_failed_receipt(job river_job, code text, message text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cid uuid := gem_job_call_id(job.args);
    last_error text := job.errors[array_upper(job.errors, 1)] ->> 'error';
BEGIN
    IF cid IS NULL OR EXISTS (SELECT 1 FROM core_tool_receipts WHERE call_id = cid)
       OR NOT EXISTS (SELECT 1 FROM core_tool_calls WHERE id = cid) THEN
        RETURN;
    END IF;
    INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, attempt, worker, started_at, finished_at)
    SELECT cid, c.tool_name, 'failed',
           jsonb_build_object('code', code, 'message', message,
                              'details', jsonb_build_object('job_id', job.id, 'job_state', job.state,
                                                            'attempt', job.attempt, 'last_error', last_error)),
           code, job.attempt, job.attempted_by[array_upper(job.attempted_by, 1)],
           coalesce(job.attempted_at, c.created_at), now()
    FROM core_tool_calls c WHERE c.id = cid
    ON CONFLICT (call_id) DO NOTHING;
END
$$;
-- +goose StatementEnd

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

-- +goose StatementBegin
CREATE FUNCTION gem_job_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gem_job_failed_receipt(OLD, 'job_deleted', 'the call''s job was deleted before it finished');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER river_job_gem_deleted AFTER DELETE ON river_job
    FOR EACH ROW WHEN (OLD.kind = 'gem.tool_call' AND OLD.state NOT IN ('completed', 'cancelled', 'discarded'))
    EXECUTE FUNCTION gem_job_deleted();
