-- A /brain/run wrote its events in four statements, three of which locked the run, numbered its events
-- again and notified: its insert (run_started), gem_run_calls_added (call_enqueued, reading its calls back),
-- gem_run_receipts_settled at its answer, and its end (answer, run_ended). With pg_stat_statements the events
-- made a run's SQL about twice what it was before them (a /brain/run's p50 1.42–1.53× the build before).
--
-- Now a run recorded with its calls (POST /brain/run enqueues them in its insert's transaction) numbers their
-- call_enqueued in its insert, from its plan, without a lock or a notification (nobody can see the run yet);
-- gem_run_awaiting returns the calls held for approval and adds their call_awaiting_approval only when there
-- are some; and a rules run's end adds the receipts its answer records (brain_runs.receipts: no second read
-- of core_tool_receipts) with its answer and run_ended, in one gem_run_events_add, which notifies nothing: the run's end notifies gem_run (00042), on which a stream waits
-- too. A rules run's pending_calls are its calls without a receipt. The events, their order and their data
-- are as before, but that a run recorded with held calls lists its call_enqueued first and its
-- call_awaiting_approval after them.
--
-- brain_run_events no longer has a foreign key to brain_runs: its check, a query of the partitioned
-- brain_runs for each event, cost about as much as the event's insert. Events are written only by the
-- trigger of their run's row and by gem_run_events_add, which locks the run's row first and now adds nothing
-- when there is none; no run is deleted but by retention, which drops a month's events with its runs.

-- +goose Up
ALTER TABLE brain_run_events DROP CONSTRAINT brain_run_events_run_id_fkey;
DROP FUNCTION gem_run_events_add(uuid, text[], jsonb[]);

-- +goose StatementBegin
-- gem_run_events_add (00054), which adds nothing to a run that does not exist, and notifies gem_run_event
-- only when notify (a run's end notifies gem_run instead).
CREATE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[], notify boolean DEFAULT true) RETURNS integer
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_changed() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    kinds text[] := '{}';
    datas jsonb[] := '{}';
    e jsonb;
    pending jsonb;
    settled uuid[] := '{}';
BEGIN
    IF TG_OP = 'INSERT' THEN
        kinds := kinds || 'run_started'::text;
        datas := datas || jsonb_strip_nulls(jsonb_build_object('mode', NEW.mode, 'agent', NEW.agent,
            'session_id', NEW.conversation_id, 'status', NEW.status));
        -- The calls it is recorded with, in their order, named as its plan names them.
        IF cardinality(NEW.call_ids) > 0 THEN
            SELECT kinds || array_agg('call_enqueued'::text ORDER BY x.ord),
                   datas || array_agg(jsonb_strip_nulls(jsonb_build_object('call_id', x.id, 'tool', p.tool)) ORDER BY x.ord)
            INTO kinds, datas
            FROM unnest(NEW.call_ids) WITH ORDINALITY AS x (id, ord)
            LEFT JOIN LATERAL (SELECT coalesce(c ->> 'tool_name', c ->> 'tool') AS tool
                               FROM jsonb_array_elements(CASE jsonb_typeof(NEW.planned_calls) WHEN 'array' THEN NEW.planned_calls ELSE '[]' END) c
                               WHERE c ->> 'call_id' = x.id::text LIMIT 1) p ON true;
        END IF;
    END IF;
    IF NEW.status IN ('completed', 'failed') AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
        IF TG_OP = 'UPDATE' AND NEW.mode <> 'chat' THEN
            -- A rules run's receipts, as its answer records them, before the answer (once per call:
            -- gem_run_events_add). A chat turn settles its receipts as they come.
            SELECT coalesce(array_agg('receipt'::text ORDER BY x.ord), '{}'),
                   coalesce(array_agg(jsonb_strip_nulls(jsonb_build_object('call_id', x.r -> 'call_id', 'tool', x.r -> 'tool',
                       'status', x.r -> 'status', 'error_code', x.r -> 'error' -> 'code')) ORDER BY x.ord), '{}'),
                   coalesce(array_agg((x.r ->> 'call_id')::uuid), '{}')
            INTO kinds, datas, settled
            FROM jsonb_array_elements(CASE jsonb_typeof(NEW.receipts) WHEN 'array' THEN NEW.receipts ELSE '[]' END) WITH ORDINALITY AS x (r, ord)
            WHERE x.r ->> 'call_id' IS NOT NULL;
        END IF;
        IF NEW.assistant_message IS NOT NULL THEN
            kinds := kinds || 'answer'::text;
            datas := datas || jsonb_build_object('reply', NEW.assistant_message);
        END IF;
        FOR e IN SELECT value FROM jsonb_array_elements(CASE jsonb_typeof(NEW.errors) WHEN 'array' THEN NEW.errors ELSE '[]' END) LOOP
            kinds := kinds || 'error'::text;
            datas := datas || jsonb_strip_nulls(jsonb_build_object('code', e -> 'code', 'message', e -> 'message'));
        END LOOP;
        IF TG_OP = 'UPDATE' AND NEW.mode <> 'chat' THEN
            -- A rules run's calls are its call_ids.
            SELECT jsonb_agg(to_jsonb(x.id) ORDER BY x.ord) INTO pending
            FROM unnest(NEW.call_ids) WITH ORDINALITY AS x (id, ord) WHERE NOT x.id = ANY (settled);
        ELSIF TG_OP = 'UPDATE' THEN
            -- A chat turn's calls are its call_enqueued events.
            SELECT jsonb_agg(c.data -> 'call_id' ORDER BY c.seq) INTO pending
            FROM brain_run_events c
            WHERE c.run_id = NEW.id AND c.kind = 'call_enqueued' AND NOT (c.data ->> 'call_id')::uuid = ANY (settled)
              AND NOT EXISTS (
                SELECT 1 FROM brain_run_events r WHERE r.run_id = NEW.id AND r.kind = 'receipt' AND r.data -> 'call_id' = c.data -> 'call_id');
        END IF;
        kinds := kinds || 'run_ended'::text;
        datas := datas || jsonb_strip_nulls(jsonb_build_object('status', NEW.status, 'pending_calls', pending));
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO brain_run_events (run_id, seq, kind, data)
        SELECT NEW.id, e.ord, e.kind, e.data FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord);
    ELSE
        PERFORM gem_run_events_add(NEW.id, kinds, datas, notify => false);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_run_awaiting returns which of a run's calls (ids, just inserted) are held for a person's decision, and
-- adds their call_awaiting_approval events: nothing is written, locked or notified when none is held.
CREATE FUNCTION gem_run_awaiting(run uuid, ids uuid[]) RETURNS uuid[] LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    held uuid[];
    datas jsonb[];
BEGIN
    SELECT coalesce(array_agg(x.id ORDER BY x.ord), '{}') INTO held
    FROM unnest(ids) WITH ORDINALITY AS x (id, ord) WHERE EXISTS (SELECT 1 FROM core_approvals a WHERE a.call_id = x.id);
    IF cardinality(held) > 0 THEN
        SELECT array_agg(jsonb_build_object('call_id', c.id, 'tool', c.tool_name) ORDER BY x.ord) INTO datas
        FROM unnest(held) WITH ORDINALITY AS x (id, ord) JOIN core_tool_calls c ON c.id = x.id;
        PERFORM gem_run_events_add(run, array_fill('call_awaiting_approval'::text, ARRAY[cardinality(datas)]), datas);
    END IF;
    RETURN held;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION gem_run_awaiting(uuid, uuid[]);
DROP FUNCTION gem_run_events_add(uuid, text[], jsonb[], boolean);
-- +goose StatementBegin
CREATE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[]) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    last integer;
    ended boolean;
    added integer;
BEGIN
    IF coalesce(cardinality(kinds), 0) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    SELECT coalesce(max(seq), 0), coalesce(bool_or(kind = 'run_ended'), false) INTO last, ended
    FROM brain_run_events WHERE run_id = run;
    INSERT INTO brain_run_events (run_id, seq, kind, data)
    SELECT run, last + row_number() OVER (ORDER BY e.ord), e.kind, coalesce(e.data, '{}')
    FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord)
    WHERE (NOT ended OR e.kind = 'receipt')
      AND (e.kind <> 'receipt' OR NOT EXISTS (
        SELECT 1 FROM brain_run_events x WHERE x.run_id = run AND x.kind = 'receipt' AND x.data ->> 'call_id' = e.data ->> 'call_id'));
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added > 0 THEN
        PERFORM pg_notify('gem_run_event', run::text);
    END IF;
    RETURN last + added;
END
$$;
-- +goose StatementEnd

ALTER TABLE brain_run_events ADD CONSTRAINT brain_run_events_run_id_fkey FOREIGN KEY (run_id) REFERENCES brain_runs (id) ON DELETE CASCADE;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_changed() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    kinds text[] := '{}';
    datas jsonb[] := '{}';
    e jsonb;
    pending jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        kinds := kinds || 'run_started'::text;
        datas := datas || jsonb_strip_nulls(jsonb_build_object('mode', NEW.mode, 'agent', NEW.agent,
            'session_id', NEW.conversation_id, 'status', NEW.status));
    END IF;
    IF NEW.status IN ('completed', 'failed') AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
        IF NEW.assistant_message IS NOT NULL THEN
            kinds := kinds || 'answer'::text;
            datas := datas || jsonb_build_object('reply', NEW.assistant_message);
        END IF;
        FOR e IN SELECT value FROM jsonb_array_elements(CASE jsonb_typeof(NEW.errors) WHEN 'array' THEN NEW.errors ELSE '[]' END) LOOP
            kinds := kinds || 'error'::text;
            datas := datas || jsonb_strip_nulls(jsonb_build_object('code', e -> 'code', 'message', e -> 'message'));
        END LOOP;
        IF TG_OP = 'UPDATE' THEN
            SELECT jsonb_agg(c.data -> 'call_id' ORDER BY c.seq) INTO pending
            FROM brain_run_events c
            WHERE c.run_id = NEW.id AND c.kind = 'call_enqueued' AND NOT EXISTS (
                SELECT 1 FROM brain_run_events r WHERE r.run_id = NEW.id AND r.kind = 'receipt' AND r.data -> 'call_id' = c.data -> 'call_id');
        END IF;
        kinds := kinds || 'run_ended'::text;
        datas := datas || jsonb_strip_nulls(jsonb_build_object('status', NEW.status, 'pending_calls', pending));
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO brain_run_events (run_id, seq, kind, data)
        SELECT NEW.id, e.ord, e.kind, e.data FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord);
    ELSE
        PERFORM gem_run_events_add(NEW.id, kinds, datas);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

