-- Concurrency and rate limits per tool (docs/governance.md#limits).
--
-- Concurrency is held with transaction advisory locks (the two-integer form, which GEM uses for nothing
-- else): a call takes one of its limit's slots in the transaction that runs its handler, and gives it back
-- when that transaction ends, also when its process dies. A device call's slot is its open attempt
-- (core_device_attempts.limit_key), counted under a lock when it is handed off.
--
-- Rates are windows of start times, one row per tool and key, reserved in a statement of its own so the row
-- is locked for a moment only. A call over its rate reserves its start in the future and sleeps until then,
-- so waiting calls take turns in order instead of all waking at each window's end.

-- +goose Up
-- When the call first found its limit full: it waits up to its tool's max_wait_ms from then; and the start
-- its rate limit reserved for it, while it waits for it.
ALTER TABLE core_tool_calls ADD COLUMN limited_since timestamptz, ADD COLUMN rate_reserved_at timestamptz;
-- The calls waiting for a slot, longest first: a call that gives its slot back wakes the first.
CREATE INDEX core_tool_calls_limited ON core_tool_calls (tool_name, limited_since)
    WHERE status = 'queued' AND limited_since IS NOT NULL;

-- How long the call waited for its limit before it ran (null: it had no limit to wait for).
ALTER TABLE core_tool_receipts ADD COLUMN limit_wait_ms double precision;

ALTER TABLE core_device_attempts ADD COLUMN limit_key text;
CREATE INDEX core_device_attempts_limit ON core_device_attempts (limit_key)
    WHERE limit_key IS NOT NULL AND state IN ('queued', 'sent');

CREATE TABLE core_limit_rates (
    -- the tool, "/", the key's value
    limit_key  text        PRIMARY KEY,
    -- the starts inside the last window, oldest first
    starts     timestamptz[] NOT NULL DEFAULT '{}',
    -- when the last start leaves the window: the row may be deleted after it
    expires_at timestamptz NOT NULL
);

-- +goose StatementBegin
-- gem_rate_take reserves the call's start under a rate limit: the first moment, no earlier than now and no
-- earlier than the starts reserved before it (first come, first served), at which no window of per_ms
-- milliseconds holds more than max starts. While calls wait, their starts are spaced per_ms / max apart, so
-- they do not all wake at each window's end. A start later than now + horizon_ms is not reserved (at is
-- null, wait_ms says how far it was).
--
-- The windows it keeps are a little longer than per_ms (a twentieth, at most 25 ms), for the moments between
-- a reserved start and the handler's: so the service a limited tool calls sees no more than max requests in
-- any per_ms, as it counts them.
CREATE FUNCTION gem_rate_take(key text, max integer, per_ms bigint, horizon_ms bigint, OUT at timestamptz, OUT wait_ms double precision)
LANGUAGE plpgsql AS $$
DECLARE
    per constant interval := per_ms * interval '1 millisecond' + least(per_ms / 20.0, 25) * interval '1 millisecond';
    s timestamptz[];
    now_ts timestamptz;
    n integer;
BEGIN
    INSERT INTO core_limit_rates (limit_key, expires_at) VALUES (key, clock_timestamp() + per)
    ON CONFLICT (limit_key) DO NOTHING;
    SELECT r.starts INTO s FROM core_limit_rates r WHERE r.limit_key = key FOR UPDATE;
    now_ts := clock_timestamp(); -- after the lock: another executor's start may be a moment ago
    s := ARRAY(SELECT x FROM unnest(s) x WHERE x > now_ts - per ORDER BY x);
    n := cardinality(s);
    at := now_ts;
    IF n > 0 AND s[n] > now_ts THEN
        -- Calls wait already: this one comes after them, paced evenly (a burst is for when none waits).
        at := s[n] + per / max;
    END IF;
    IF n >= max THEN
        at := greatest(at, s[n - max + 1] + per);
    END IF;
    wait_ms := extract(epoch FROM at - now_ts) * 1000;
    IF wait_ms > horizon_ms THEN
        at := NULL;
        RETURN;
    END IF;
    UPDATE core_limit_rates SET starts = s || at, expires_at = at + per WHERE limit_key = key;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_rate_move moves a start reserved for a call that came late to now, if no window of per_ms (and the
-- guard) then holds more than max starts, and returns the new start; else the start stays where it was and
-- it returns null.
CREATE FUNCTION gem_rate_move(key text, max integer, per_ms bigint, was timestamptz) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    per constant interval := per_ms * interval '1 millisecond' + least(per_ms / 20.0, 25) * interval '1 millisecond';
    s timestamptz[];
    now_ts timestamptz;
    i integer;
    j integer;
BEGIN
    SELECT r.starts INTO s FROM core_limit_rates r WHERE r.limit_key = key FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    now_ts := clock_timestamp();
    s := ARRAY(SELECT x FROM unnest(array_remove(s, was)) x WHERE x > now_ts - per UNION ALL SELECT now_ts ORDER BY 1);
    i := array_position(s, now_ts);
    -- every run of max + 1 starts around now must span a window
    FOR j IN greatest(1, i - max) .. least(i, cardinality(s) - max) LOOP
        IF s[j + max] - s[j] < per THEN
            RETURN NULL;
        END IF;
    END LOOP;
    UPDATE core_limit_rates SET starts = s, expires_at = greatest(expires_at, now_ts + per) WHERE limit_key = key;
    RETURN now_ts;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_rate_release gives back a start reserved and not used (its call found its concurrency limit full).
CREATE FUNCTION gem_rate_release(key text, at timestamptz) RETURNS void LANGUAGE sql AS $$
    UPDATE core_limit_rates SET starts = array_remove(starts, at) WHERE limit_key = key;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- The receipt's notification carries the wait too (the brain's and the tests' waits read it from there).
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

-- +goose Down
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
        SELECT n.id, n.call_id, (jsonb_strip_nulls(jsonb_build_object('device', n.device, 'devices_tried', n.devices_tried))
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
DROP FUNCTION gem_rate_release(text, timestamptz);
DROP FUNCTION gem_rate_move(text, integer, bigint, timestamptz);
DROP FUNCTION gem_rate_take(text, integer, bigint, bigint);
DROP TABLE core_limit_rates;
DROP INDEX core_device_attempts_limit;
DROP INDEX core_tool_calls_limited;
ALTER TABLE core_device_attempts DROP COLUMN limit_key;
ALTER TABLE core_tool_receipts DROP COLUMN limit_wait_ms;
ALTER TABLE core_tool_calls DROP COLUMN limited_since, DROP COLUMN rate_reserved_at;
