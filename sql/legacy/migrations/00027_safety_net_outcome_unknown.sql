-- The safety-net receipt of a call whose job ended without one (discarded by River after its attempts ran
-- out, cancelled or deleted) says outcome_unknown when the call may have acted: it had started effects
-- outside the database (outside_token), or a device was handed one of its attempts. Before, it said
-- job_discarded (or cancelled, deleted) even then, and `make chaos` found a device call whose job was
-- discarded after five interrupted runs while its device had already made the effect.

-- +goose Up
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_job_failed_receipt(job river_job, code text, message text) RETURNS void LANGUAGE plpgsql AS $$
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
