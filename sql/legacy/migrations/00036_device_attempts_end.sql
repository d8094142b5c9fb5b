-- A call's device attempts end when nothing can answer them or nobody waits for them any more. `make chaos`
-- found two ways they stayed open:
--
-- * A device registering again names the calls it is still running (keep); the others it was sent are
--   ended lost. A fresh process names none, and the hub passed that empty list as NULL, so `id = ANY(NULL)`
--   ended nothing: a killed device's sent attempts stayed sent until the tool's timeout (or for ever, when
--   the call's job ended first). A NULL list now means an empty one.
-- * The safety net (00027) wrote the receipt of a call whose job ended without one, but left its open
--   attempt queued or sent: a hub could still hand it out, and a device still running it was never told.
--   It now abandons the attempt in the same transaction and tells the hubs (which cancel it on the device)
--   and any executor still waiting. The attempt is locked before the receipt says whether it was handed
--   over, so a hub's claim that marks it sent either commits first (and counts) or finds it abandoned.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_device_attempts_end(dev text, only_sent boolean DEFAULT false, keep bigint[] DEFAULT '{}')
RETURNS integer LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION gem_job_failed_receipt(job river_job, code text, message text) RETURNS void LANGUAGE plpgsql AS $$
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_job_failed_receipt(job river_job, code text, message text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cid uuid := gem_job_call_id(job.args);
    last_error text := job.errors[array_upper(job.errors, 1)] ->> 'error';
    acted text;
    details jsonb;
BEGIN
    IF cid IS NULL OR EXISTS (SELECT 1 FROM core_tool_receipts WHERE call_id = cid)
       OR NOT EXISTS (SELECT 1 FROM core_tool_calls WHERE id = cid) THEN
        RETURN;
    END IF;
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
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_device_attempts_end(dev text, only_sent boolean DEFAULT false, keep bigint[] DEFAULT '{}')
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
