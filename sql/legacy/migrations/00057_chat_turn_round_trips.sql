-- A chat turn's round trips and plans.
--
-- gem_run_fence is RunFence in the statement that begins a journal write's transaction ("BEGIN; SELECT
-- gem_run_fence(...)", one round trip instead of two): it locks the run's row and raises GR409 when the
-- claim no longer owns it. A turn makes three to five fenced writes.
--
-- Starting the chat turns queued behind others (QueuedTurnsStart, 00046) looks at brain_runs by status, not by
-- its partition key: each call planned a custom plan over every partition (0.66 ms a time with
-- pg_stat_statements' track_planning, against ~0.05 ms to run it), and a brain calls it after every turn and
-- every second. In a PL/pgSQL function its plan is kept generic, as 00052 keeps the run events' (the
-- partial index brain_runs_queued serves it: 'queued' is written in the query, not a parameter).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION gem_run_fence(run uuid, claim text) RETURNS void
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    held text;
BEGIN
    SELECT owner INTO held FROM brain_runs WHERE id = run FOR NO KEY UPDATE;
    IF held IS DISTINCT FROM claim THEN
        RAISE EXCEPTION 'run % is no longer %''s: another brain took it over', run, claim USING ERRCODE = 'GR409';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_queued_turns_start(new_owner text, lease interval, lim integer) RETURNS TABLE (run_id uuid, run_owner text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY
    WITH q AS (
        SELECT r.id, r.conversation_id FROM brain_runs r
        WHERE r.status = 'queued' AND NOT EXISTS (SELECT 1 FROM brain_runs e
            WHERE e.status = 'queued' AND e.conversation_id = r.conversation_id AND e.id < r.id)
        ORDER BY r.id LIMIT lim FOR UPDATE SKIP LOCKED),
    s AS (UPDATE agent_sessions x SET turn_run = q.id, turn_since = now() FROM q
        WHERE x.id = q.conversation_id AND x.turn_run IS NULL
        RETURNING q.id)
    UPDATE brain_runs r SET status = 'planning', owner = new_owner || '#' || substr(md5(random()::text), 1, 8),
        lease_until = now() + lease, updated_at = now()
    FROM s WHERE r.id = s.id RETURNING r.id, r.owner;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION gem_run_fence(uuid, text);
DROP FUNCTION gem_queued_turns_start(text, interval, integer);
