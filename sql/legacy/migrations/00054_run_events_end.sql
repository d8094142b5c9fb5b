-- A run's events end with its one run_ended (docs/durable-runs.md#async-and-live).
--
-- Not every event is written under the run's fence: llm_started, an LLM attempt's llm_ended (with its
-- brain_turns row: the tokens were asked for), run_resumed and the receipts settled are written by whichever
-- brain does the work. A brain fenced out of a run — stalled past its lease while another took the run over
-- and ended it — still records what its LLM answered, and its llm_ended came after the run's run_ended. Now
-- gem_run_events_add adds nothing to a run whose run_ended is written but receipts (of calls that finish
-- after the turn answered), so run_ended is a run's last event but for those, and a run has one run_ended
-- whatever writes its end. The attempt is still in brain_turns.
--
-- run_ended names the calls whose receipt is no event of the run yet (pending_calls): a stream ends at
-- run_ended, so a client learns there which calls still run (GET /calls/{id}?wait= follows each). Its query
-- joins the run's events by a parameter: a generic plan, as 00052 says why.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[]) RETURNS integer LANGUAGE plpgsql
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_run_events_add(run uuid, kinds text[], datas jsonb[]) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
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
