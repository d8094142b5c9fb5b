-- A receipt's notification carries its call id alone (docs/receipts.md#waiting-for-a-receipt). PostgreSQL has
-- no permissions on notification channels: any database login, a gem_caller member that row-level security
-- limits to its own calls included, may LISTEN gem_receipt and NOTIFY it. The receipt as JSON in each
-- notification (00008 to 00038) let such a login read every caller's results as they were written, and a
-- NOTIFY of made-up JSON was taken for a receipt by the brain's waiter, which answered another caller's
-- request with it. Now a notification is a wake-up: a listener reads the receipt from core_tool_receipts
-- with its own connection, so it learns only what its role may read, and a forged id costs a read that
-- finds the true receipt or none.
--
-- gem_receipts_inserted is otherwise 00038's: the calls' final status, then the receipts of duplicate
-- requests, then one notification per receipt in insert order.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- +goose StatementEnd
-- CREATE OR REPLACE resets a function's settings: the receipt trigger keeps its custom plans (00034).
ALTER FUNCTION gem_receipts_inserted() SET plan_cache_mode = force_custom_plan;

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_receipts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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
ALTER FUNCTION gem_receipts_inserted() SET plan_cache_mode = force_custom_plan;
