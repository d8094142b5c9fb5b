-- A run's events (docs/durable-runs.md#async-and-live): what its journal records, as a client watches it —
-- run started, LLM step started and ended, call enqueued, call held for approval, receipt, answer, error,
-- run ended — numbered per run (seq from 1) and written in the transaction of the journal write each
-- describes. GET /brain/runs/{id}/events reads them from here, on any brain, and waits on the notification
-- gem_run_event (the run's id: a wake-up, never data, since any login may LISTEN).
--
-- seq is given under the run's row lock (gem_run_events_add), so the run's events commit in seq order: a
-- reader that has seen seq n has seen every event before it, and resumes after n (Last-Event-ID) without a
-- gap. Partitioned by run id with brain_runs' bounds (00033), so retention archives and drops a month's
-- events with its runs.

-- +goose Up
CREATE TABLE brain_run_events (
    run_id uuid        NOT NULL REFERENCES brain_runs (id) ON DELETE CASCADE,
    seq    integer     NOT NULL CHECK (seq >= 1),
    at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    kind   text        NOT NULL,
    data   jsonb       NOT NULL DEFAULT '{}',
    CONSTRAINT brain_run_events_pkey PRIMARY KEY (run_id, seq)
) PARTITION BY RANGE (run_id);

-- +goose StatementBegin
-- Every partition brain_runs has (its months, _p_before and _p_nonv7), with the same bounds and suffix.
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'brain_runs'::regclass LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF brain_run_events %s',
                       replace(p.relname, 'brain_runs_p', 'brain_run_events_p'), p.bound);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- The partitioned history tables, parents first: brain_run_events joins them (gem_ensure_month makes its
-- months ahead, retention archives and drops them).
CREATE OR REPLACE FUNCTION gem_partitioned_tables() RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY['core_tool_calls', 'core_tool_receipts', 'brain_runs', 'brain_turns', 'brain_run_programs', 'brain_run_events']
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_run_events_add appends events (kinds[i], datas[i]) to a run and returns its last seq. The run's row is
-- locked first (a no-op in a transaction that holds it already), so seq order is commit order. A receipt is
-- added once per call, whoever settles it. Notifies gem_run_event with the run's id.
CREATE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    last integer;
    added integer;
BEGIN
    IF coalesce(cardinality(kinds), 0) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    SELECT coalesce(max(seq), 0) INTO last FROM brain_run_events WHERE run_id = run;
    INSERT INTO brain_run_events (run_id, seq, kind, data)
    SELECT run, last + row_number() OVER (ORDER BY e.ord), e.kind, coalesce(e.data, '{}')
    FROM unnest(kinds, datas) WITH ORDINALITY AS e (kind, data, ord)
    WHERE e.kind <> 'receipt' OR NOT EXISTS (
        SELECT 1 FROM brain_run_events x WHERE x.run_id = run AND x.kind = 'receipt' AND x.data ->> 'call_id' = e.data ->> 'call_id');
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added > 0 THEN
        PERFORM pg_notify('gem_run_event', run::text);
    END IF;
    RETURN last + added;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_run_calls_added adds call_enqueued for each of a run's new calls, and call_awaiting_approval after
-- those held for a person's decision: in the transaction that inserts them. PL/pgSQL, so its query's plan
-- is kept (a SQL function's is made again at every call: 0.8 ms here).
CREATE FUNCTION gem_run_calls_added(run uuid, ids uuid[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    kinds text[];
    datas jsonb[];
BEGIN
    SELECT array_agg(k.kind ORDER BY x.ord, k.n), array_agg(jsonb_build_object('call_id', c.id, 'tool', c.tool_name) ORDER BY x.ord, k.n)
    INTO kinds, datas
    FROM unnest(ids) WITH ORDINALITY AS x (id, ord)
    JOIN core_tool_calls c ON c.id = x.id
    LEFT JOIN core_approvals a ON a.call_id = x.id
    CROSS JOIN LATERAL (VALUES (1, 'call_enqueued'), (2, CASE WHEN a.call_id IS NOT NULL THEN 'call_awaiting_approval' END)) AS k (n, kind)
    WHERE k.kind IS NOT NULL;
    RETURN gem_run_events_add(run, kinds, datas);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_run_receipts_settled adds a receipt event for each of a run's calls that has its receipt (once per
-- call): when the brain settles what its calls' receipts say.
CREATE FUNCTION gem_run_receipts_settled(run uuid, ids uuid[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    kinds text[];
    datas jsonb[];
BEGIN
    SELECT array_agg('receipt'::text ORDER BY x.ord),
           array_agg(jsonb_strip_nulls(jsonb_build_object('call_id', r.call_id, 'tool', r.tool_name, 'status', r.status,
               'error_code', r.error_code)) ORDER BY x.ord)
    INTO kinds, datas
    FROM unnest(ids) WITH ORDINALITY AS x (id, ord) JOIN core_tool_receipts r ON r.call_id = x.id;
    RETURN gem_run_events_add(run, kinds, datas);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A run's start, and its end (answer, errors, run_ended) when it ends: in the transaction that records it,
-- whoever records it (a chat turn's brain, the brain that took it over, a rules run's answer, a read that
-- derives it). A run just inserted is this transaction's alone: its events are numbered from 1 without the
-- lock, and nobody can be waiting for them (a stream reads a run once it exists), so nothing is notified.
CREATE FUNCTION gem_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
    datas jsonb[] := '{}';
    e jsonb;
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
        kinds := kinds || 'run_ended'::text;
        datas := datas || jsonb_build_object('status', NEW.status);
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
CREATE TRIGGER brain_runs_events_inserted AFTER INSERT ON brain_runs
    FOR EACH ROW EXECUTE FUNCTION gem_run_changed();
CREATE TRIGGER brain_runs_events_ended AFTER UPDATE OF status ON brain_runs
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('completed', 'failed'))
    EXECUTE FUNCTION gem_run_changed();

-- +goose Down
DROP TRIGGER brain_runs_events_ended ON brain_runs;
DROP TRIGGER brain_runs_events_inserted ON brain_runs;
DROP FUNCTION gem_run_changed();
DROP FUNCTION gem_run_receipts_settled(uuid, uuid[]);
DROP FUNCTION gem_run_calls_added(uuid, uuid[]);
DROP FUNCTION gem_run_events_add(uuid, text[], jsonb[]);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_partitioned_tables() RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY['core_tool_calls', 'core_tool_receipts', 'brain_runs', 'brain_turns', 'brain_run_programs']
$$;
-- +goose StatementEnd
DROP TABLE brain_run_events;
