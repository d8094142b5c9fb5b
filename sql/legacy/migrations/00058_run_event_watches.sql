-- A run's events notify gem_run_event only while a stream watches the run (docs/durable-runs.md#async-and-live).
--
-- A notification at commit wakes every backend that listens in the database — the executors' and brains'
-- listeners — to read PostgreSQL's notification queue, whatever the channel: a chat turn's three or four
-- commits with events woke them all, on the turn's critical path, for streams that were mostly not there.
-- Now a stream of a run's events (GET /brain/runs/{id}/events, a streamed chat) records its watch in
-- brain_run_watches as it starts, and removes it as it ends; gem_run_events_add notifies only a watched run.
--
-- No wake-up is missed: gem_run_watch takes the run's row FOR SHARE before it records the watch, and an event
-- is added under the row's FOR NO KEY UPDATE lock (a journal write holds it from its start), which the watch
-- waits for. So an event either committed before the watch (the stream reads it after registering) or is
-- added after the watch committed, and sees it. A run's end notifies gem_run whoever watches, as before.
--
-- A watch left by a brain that died while streaming costs a notification per event of its run; gem_run_watch
-- drops those older than a day (a stream that old reads on its recheck, every 2 s, instead of when woken).

-- +goose Up
CREATE TABLE brain_run_watches (
    run_id  uuid        NOT NULL,
    watcher text        NOT NULL,
    since   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, watcher)
);

-- +goose StatementBegin
CREATE FUNCTION gem_run_watch(run uuid, who text) RETURNS void
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    PERFORM 1 FROM brain_runs WHERE id = run FOR SHARE;
    DELETE FROM brain_run_watches WHERE since < now() - interval '1 day';
    INSERT INTO brain_run_watches (run_id, watcher) VALUES (run, who) ON CONFLICT DO NOTHING;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[], notify boolean DEFAULT true) RETURNS integer
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    last integer;
    ended boolean;
    added integer;
BEGIN
    IF coalesce(cardinality(kinds), 0) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(max(seq), 0), coalesce(bool_or(kind = 'run_ended'), false) INTO last, ended
    FROM brain_run_events WHERE run_id = run;
    INSERT INTO brain_run_events (run_id, seq, kind, data)
    SELECT run, last + row_number() OVER (ORDER BY e.ord), e.kind, coalesce(e.data, '{}')
    FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord)
    WHERE (NOT ended OR e.kind = 'receipt')
      AND (e.kind <> 'receipt' OR NOT EXISTS (
        SELECT 1 FROM brain_run_events x WHERE x.run_id = run AND x.kind = 'receipt' AND x.data ->> 'call_id' = e.data ->> 'call_id'));
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added > 0 AND notify AND EXISTS (SELECT 1 FROM brain_run_watches w WHERE w.run_id = run) THEN
        PERFORM pg_notify('gem_run_event', run::text);
    END IF;
    RETURN last + added;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[], notify boolean DEFAULT true) RETURNS integer
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    last integer;
    ended boolean;
    added integer;
BEGIN
    IF coalesce(cardinality(kinds), 0) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(max(seq), 0), coalesce(bool_or(kind = 'run_ended'), false) INTO last, ended
    FROM brain_run_events WHERE run_id = run;
    INSERT INTO brain_run_events (run_id, seq, kind, data)
    SELECT run, last + row_number() OVER (ORDER BY e.ord), e.kind, coalesce(e.data, '{}')
    FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord)
    WHERE (NOT ended OR e.kind = 'receipt')
      AND (e.kind <> 'receipt' OR NOT EXISTS (
        SELECT 1 FROM brain_run_events x WHERE x.run_id = run AND x.kind = 'receipt' AND x.data ->> 'call_id' = e.data ->> 'call_id'));
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added > 0 AND notify THEN
        PERFORM pg_notify('gem_run_event', run::text);
    END IF;
    RETURN last + added;
END
$$;
-- +goose StatementEnd
DROP FUNCTION gem_run_watch(uuid, text);
DROP TABLE brain_run_watches;
