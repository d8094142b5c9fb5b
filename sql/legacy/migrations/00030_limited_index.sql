-- The index of calls waiting for a limit's slot (00028) named status in its predicate, which made every
-- receipt's update of its call's status a non-HOT update, writing every index of core_tool_calls again.
-- Now it names only limited_since, set on calls that waited and cleared by their receipt (the wait is in
-- the receipt's limit_wait_ms), so the calls of tools without limits update in place as before.

-- +goose Up
DROP INDEX core_tool_calls_limited;
CREATE INDEX core_tool_calls_limited ON core_tool_calls (tool_name, limited_since) WHERE limited_since IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
    WHERE c.id = n.call_id;

    PERFORM pg_notify('gem_receipt', CASE WHEN octet_length(p.payload) > 7900 THEN p.call_id::text ELSE p.payload END)
    FROM (
        SELECT n.id, n.call_id, (jsonb_strip_nulls(jsonb_build_object('device', n.device, 'devices_tried', n.devices_tried,
            'limit_wait_ms', n.limit_wait_ms))
            || jsonb_build_object(
            'call_id', n.call_id, 'tool', n.tool_name, 'status', n.status, 'result', n.result,
            'effects', n.effects, 'error', n.error, 'summary', n.summary, 'idempotency_key', n.idempotency_key,
            'idempotency_hit', n.idempotency_hit, 'idempotency_of', n.idempotency_of, 'attempt', n.attempt,
            'worker', n.worker, 'duration_ms', n.duration_ms, 'started_at', n.started_at,
            'finished_at', n.finished_at))::text AS payload
        FROM new_receipts n
        ORDER BY n.id
    ) p;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX core_tool_calls_limited;
CREATE INDEX core_tool_calls_limited ON core_tool_calls (tool_name, limited_since)
    WHERE status = 'queued' AND limited_since IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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
        SELECT n.id, n.call_id, (jsonb_strip_nulls(jsonb_build_object('device', n.device, 'devices_tried', n.devices_tried,
            'limit_wait_ms', n.limit_wait_ms))
            || jsonb_build_object(
            'call_id', n.call_id, 'tool', n.tool_name, 'status', n.status, 'result', n.result,
            'effects', n.effects, 'error', n.error, 'summary', n.summary, 'idempotency_key', n.idempotency_key,
            'idempotency_hit', n.idempotency_hit, 'idempotency_of', n.idempotency_of, 'attempt', n.attempt,
            'worker', n.worker, 'duration_ms', n.duration_ms, 'started_at', n.started_at,
            'finished_at', n.finished_at))::text AS payload
        FROM new_receipts n
        ORDER BY n.id
    ) p;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
