-- GEM's core: calls, receipts, idempotency keys, and the triggers that tie them to River's job table.
-- River's own migrations run first (rivermigrate), so river_job exists here.

-- +goose Up

-- A tool call. Inserting a row is how a call is made, by the brain or by hand in psql:
--   INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_task', '{"title": "call John"}');
-- The insert trigger creates the River job in the same transaction and wakes the executors.
CREATE TABLE core_tool_calls (
    id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tool_name          text        NOT NULL CHECK (tool_name <> '' AND length(tool_name) <= 200),
    input              jsonb       NOT NULL DEFAULT '{}',
    status             text        NOT NULL DEFAULT 'queued'
                                   CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'not_configured')),
    -- Caller-given idempotency key (modes keyed and safe-retry); keyed tools otherwise use their key_field.
    idempotency_key    text        CHECK (idempotency_key <> ''),
    -- River attempt number of the latest attempt, and the executor (River client id) that made it.
    attempt            integer     NOT NULL DEFAULT 0,
    max_attempts       smallint    NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
    worker             text,
    job_id             bigint,
    -- Who asked: a brain run and agent, or a free-form requester ("psql", "cron", a user id).
    run_id             uuid,
    agent              text,
    requested_by       text,
    -- Copied from the receipt when the call ends.
    error_code         text,
    error              text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    started_at         timestamptz,
    finished_at        timestamptz,
    -- Set (and committed) before a handler with effects outside the database starts, with a token unique
    -- to that run: a later run that finds another run's token and no receipt knows the outcome is unknown
    -- and does not run the handler again. (River's attempt number is not unique: a run interrupted by a
    -- shutdown is retried with the same number.)
    outside_token      uuid,
    outside_attempt    integer,
    outside_started_at timestamptz
) WITH (fillfactor = 80);

-- No index covers a column a call's life updates (status, attempt, worker, times), and pages keep room
-- (fillfactor), so those updates are HOT: no index is touched. Open calls are counted from River's jobs.
CREATE INDEX core_tool_calls_created_at ON core_tool_calls (created_at DESC);
CREATE INDEX core_tool_calls_tool_created_at ON core_tool_calls (tool_name, created_at DESC);
CREATE INDEX core_tool_calls_run ON core_tool_calls (run_id) WHERE run_id IS NOT NULL;

-- The one receipt of a call.
CREATE TABLE core_tool_receipts (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    call_id         uuid        NOT NULL REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    tool_name       text        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('succeeded', 'failed', 'not_configured')),
    result          jsonb,
    effects         jsonb       NOT NULL DEFAULT '{"db_writes": []}',
    -- {"code": ..., "message": ..., "details": ...}; error_code repeats the code for indexing and views.
    error           jsonb,
    error_code      text,
    -- The values of the tool's receipt_fields.
    summary         jsonb,
    idempotency_key text,
    idempotency_hit boolean     NOT NULL DEFAULT false,
    idempotency_of  uuid        REFERENCES core_tool_calls (id) ON DELETE SET NULL,
    attempt         integer     NOT NULL DEFAULT 0,
    worker          text,
    duration_ms     double precision NOT NULL DEFAULT 0,
    started_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT core_tool_receipts_one_per_call UNIQUE (call_id),
    CONSTRAINT core_tool_receipts_error_iff_not_succeeded CHECK ((status = 'succeeded') = (error_code IS NULL))
);

CREATE INDEX core_tool_receipts_tool_finished_at ON core_tool_receipts (tool_name, finished_at DESC);
CREATE INDEX core_tool_receipts_finished_at ON core_tool_receipts (finished_at DESC);
CREATE INDEX core_tool_receipts_not_succeeded ON core_tool_receipts (finished_at DESC) WHERE status <> 'succeeded';
CREATE INDEX core_tool_receipts_idempotency_hits ON core_tool_receipts (finished_at DESC) WHERE idempotency_hit;

-- Idempotency keys held by succeeded calls. A call inserts its key inside the same savepoint as its handler's
-- effects, so a failed call releases the key, and a concurrent call with the same key waits on the unique
-- index until the first commits or rolls back. key_hash (sha256 of the key) keeps long keys indexable.
CREATE TABLE core_idempotency_keys (
    tool_name  text        NOT NULL,
    key_hash   bytea       NOT NULL,
    key        text        NOT NULL,
    call_id    uuid        NOT NULL REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tool_name, key_hash)
);

-- Running executors. Each holds a session advisory lock (gem_executor_lock_key of its id) for as long as it
-- lives; a running call whose executor's lock is free belongs to a dead process and is taken up at once.
CREATE TABLE core_executors (
    id         text        PRIMARY KEY,
    hostname   text        NOT NULL,
    pid        integer     NOT NULL,
    version    text        NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz,
    -- Set when another executor found this one dead.
    dead_at    timestamptz
);

-- +goose StatementBegin
CREATE FUNCTION gem_executor_lock_key(executor_id text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended('gem.executor:' || executor_id, 0)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_current_call is the call whose handler is running in this transaction, or NULL outside the executor.
CREATE FUNCTION gem_current_call() RETURNS uuid LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('gem.call_id', true), '')::uuid
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A new call becomes a River job in the same transaction; the notification wakes executors at once instead
-- of at their next poll.
CREATE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name), 'gem.tool_call',
            NEW.max_attempts, 'default', 1, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER core_tool_calls_enqueue BEFORE INSERT ON core_tool_calls
    FOR EACH ROW EXECUTE FUNCTION gem_call_enqueue();

-- +goose StatementBegin
-- A receipt sets its call's final status and tells waiters (LISTEN gem_receipt). The payload is the receipt
-- as JSON (the fields of registry.Receipt), so a waiter need not read it back; a receipt too large for a
-- notification (8000 bytes) is announced by its call id alone. Both happen in the receipt's transaction: a
-- waiter never sees a receipt that is not committed.
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
-- gem_job_call_id reads a gem.tool_call job's call id without ever raising (a trigger on river_job must not
-- break River's own statements because of one malformed job).
CREATE FUNCTION gem_job_call_id(args jsonb) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN args ->> 'call_id' ~ '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$'
                THEN (args ->> 'call_id')::uuid END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_job_failed_receipt writes a failed receipt for a call whose job ended without one. It is the safety net
-- behind "every call ends with exactly one receipt": the executor writes receipts itself, but River's rescuer
-- can discard a job whose attempts ran out while its executor was dead, and an operator can cancel or delete
-- a job. The receipt's ON CONFLICT keeps it at one.
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
-- gem_job_state_changed mirrors River's job state into the call row (running, back to queued for a retry)
-- and writes the safety-net receipt when a job ends without one. Row locks are taken with SKIP LOCKED so
-- River's fetch never waits on an executor's transaction: a call row locked by an executor is being
-- finished by it.
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

-- Write capture. Domain tables carry the trigger gem_capture_write; while the executor runs a handler it sets
-- gem.call_id, and every row written is counted per table and operation in transaction-local settings
-- (undone with the handler's savepoint). gem_collect_writes turns them into the receipt's effects.db_writes.
-- Setting names are bounded (one pair per table and operation), so a long-lived connection does not grow.

-- +goose StatementBegin
CREATE FUNCTION gem_capture_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair text;
    k    text;
    n    integer;
    rid  text;
BEGIN
    IF coalesce(current_setting('gem.call_id', true), '') = '' THEN
        RETURN NULL;
    END IF;
    pair := TG_TABLE_NAME || ' ' || lower(TG_OP);
    k := 'gem.w' || md5(pair);
    n := coalesce(nullif(current_setting(k, true), '')::integer, 0);
    IF n = 0 THEN
        PERFORM set_config('gem.writes', coalesce(current_setting('gem.writes', true), '') || pair || E'\x1e', true);
    END IF;
    PERFORM set_config(k, (n + 1)::text, true);
    IF n < 100 THEN
        rid := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> 'id';
        PERFORM set_config(k || 'i', coalesce(current_setting(k || 'i', true), '') || coalesce(rid, '') || E'\x1e', true);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_collect_writes() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    pair   text;
    k      text;
    writes jsonb := '[]';
BEGIN
    FOREACH pair IN ARRAY coalesce(string_to_array(rtrim(coalesce(current_setting('gem.writes', true), ''), E'\x1e'), E'\x1e'), '{}') LOOP
        CONTINUE WHEN pair = '';
        k := 'gem.w' || md5(pair);
        writes := writes || jsonb_build_array(jsonb_build_object(
            'table', split_part(pair, ' ', 1),
            'op', split_part(pair, ' ', 2),
            'count', current_setting(k, true)::integer,
            'ids', to_jsonb(array_remove(string_to_array(rtrim(current_setting(k || 'i', true), E'\x1e'), E'\x1e'), ''))));
        PERFORM set_config(k, '0', true);
        PERFORM set_config(k || 'i', '', true);
    END LOOP;
    PERFORM set_config('gem.writes', '', true);
    RETURN writes;
END
$$;
-- +goose StatementEnd

-- Audit views.

-- Calls waiting or running, per tool, from their River jobs (which River indexes by state).
CREATE VIEW core_queue_depth AS
SELECT args ->> 'tool_name'                                                    AS tool_name,
       count(*) FILTER (WHERE state <> 'running')                              AS queued,
       count(*) FILTER (WHERE state = 'running')                               AS running,
       min(created_at) FILTER (WHERE state <> 'running')                       AS oldest_queued_at,
       now() - min(created_at) FILTER (WHERE state <> 'running')               AS oldest_queued_age
FROM river_job
WHERE kind = 'gem.tool_call' AND state IN ('available', 'scheduled', 'retryable', 'running')
GROUP BY args ->> 'tool_name';

-- Calls that did not succeed in the last 24 hours, newest first.
CREATE VIEW core_recent_failures AS
SELECT r.call_id, r.tool_name, r.status, r.error_code, r.error ->> 'message' AS message,
       r.error -> 'details' AS details, r.attempt, r.duration_ms, r.finished_at, c.input, c.run_id, c.agent
FROM core_tool_receipts r
JOIN core_tool_calls c ON c.id = r.call_id
WHERE r.status <> 'succeeded' AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC;

-- Calls answered from an earlier call's idempotency key instead of running.
CREATE VIEW core_idempotency_hits AS
SELECT r.call_id, r.tool_name, r.idempotency_key, r.idempotency_of AS original_call_id,
       o.finished_at AS original_finished_at, r.finished_at
FROM core_tool_receipts r
LEFT JOIN core_tool_receipts o ON o.call_id = r.idempotency_of
WHERE r.idempotency_hit
ORDER BY r.finished_at DESC;

-- Per-tool outcomes and durations over the last 24 hours.
CREATE VIEW core_tool_stats AS
SELECT tool_name,
       count(*)                                                        AS calls,
       count(*) FILTER (WHERE status = 'succeeded')                    AS succeeded,
       count(*) FILTER (WHERE status = 'failed')                       AS failed,
       count(*) FILTER (WHERE status = 'not_configured')               AS not_configured,
       count(*) FILTER (WHERE idempotency_hit)                         AS idempotency_hits,
       round(avg(duration_ms)::numeric, 2)                             AS avg_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)        AS p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)       AS p95_ms,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)       AS p99_ms,
       max(finished_at)                                                AS last_finished_at
FROM core_tool_receipts
WHERE finished_at > now() - interval '24 hours'
GROUP BY tool_name;

-- +goose Down
DROP VIEW core_tool_stats;
DROP VIEW core_idempotency_hits;
DROP VIEW core_recent_failures;
DROP VIEW core_queue_depth;
DROP FUNCTION gem_collect_writes();
DROP FUNCTION gem_capture_write();
DROP TRIGGER river_job_gem_deleted ON river_job;
DROP FUNCTION gem_job_deleted();
DROP TRIGGER river_job_gem_state_changed ON river_job;
DROP FUNCTION gem_job_state_changed();
DROP FUNCTION gem_job_failed_receipt(river_job, text, text);
DROP FUNCTION gem_job_call_id(jsonb);
DROP TABLE core_idempotency_keys;
DROP TABLE core_tool_receipts;
DROP TABLE core_tool_calls;
DROP FUNCTION gem_receipt_inserted();
DROP FUNCTION gem_call_enqueue();
DROP FUNCTION gem_current_call();
DROP FUNCTION gem_executor_lock_key(text);
DROP TABLE core_executors;
