-- Per-assignment settings (docs/governance.md#per-assignment-settings): a skill given to an agent may narrow,
-- for that agent's calls of the skill's tools, the tool's timeout and retries, and set their priority.

-- +goose Up
ALTER TABLE agent_skills
    ADD COLUMN call_timeout_ms   integer  CHECK (call_timeout_ms BETWEEN 10 AND 900000),
    ADD COLUMN call_max_attempts smallint CHECK (call_max_attempts BETWEEN 1 AND 100),
    -- River's priority: 1 runs first, 4 last.
    ADD COLUMN call_priority     smallint CHECK (call_priority BETWEEN 1 AND 4);

-- +goose StatementBegin
-- gem_agent_call_settings answers, for a call of tool made for an agent and user: whether the agent's
-- available skills enable the tool, and the tightest settings the assignments enabling it give (the
-- shortest timeout, the fewest attempts, the most urgent priority; NULL where none sets one). PL/pgSQL so
-- it is not inlined into the executor's load (see 00009_agent_may_call.sql).
CREATE FUNCTION gem_agent_call_settings(agent_slug text, for_user text, tool_name text,
    OUT enabled boolean, OUT timeout_ms integer, OUT max_attempts integer, OUT priority integer)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT count(*) > 0, min(a_s.call_timeout_ms), min(a_s.call_max_attempts), min(a_s.call_priority)
    INTO enabled, timeout_ms, max_attempts, priority
    FROM gem_agent_skills(agent_slug, for_user) g
    JOIN skills s ON s.id = g.skill_id
    JOIN agents a ON a.slug = agent_slug
    JOIN agent_skills a_s ON a_s.agent_id = a.id AND a_s.skill_id = g.skill_id
    WHERE g.available AND gem_agent_call_settings.tool_name = ANY (s.tools);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A new call becomes a River job in the same transaction (the notification wakes executors at once), unless
-- it needs approval: then it waits, awaiting_approval, with no job. A call made for an agent takes the
-- fewest attempts and the priority its assignments give. Runs as its owner (00022_callers.sql).
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    prio integer := 1;
    st record;
BEGIN
    IF NEW.requested_by IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        NEW.requested_by := 'sql:' || session_user;
    END IF;
    IF NEW.agent IS NOT NULL AND EXISTS (SELECT 1 FROM agent_skills WHERE call_max_attempts IS NOT NULL OR call_priority IS NOT NULL) THEN
        SELECT * INTO st FROM gem_agent_call_settings(NEW.agent, coalesce(NEW.user_id, ''), NEW.tool_name);
        NEW.max_attempts := least(NEW.max_attempts, coalesce(st.max_attempts, NEW.max_attempts));
        prio := coalesce(st.priority, 1);
    END IF;
    -- The common case costs one query: no tool requiring approval by that name, and no policy.
    IF (EXISTS (SELECT 1 FROM core_tools t WHERE t.name = NEW.tool_name AND t.approval_required)
        OR EXISTS (SELECT 1 FROM core_approval_policies))
       AND EXISTS (SELECT 1 FROM gem_approval_needed(NEW.tool_name, NEW.agent)) THEN
        NEW.status := 'awaiting_approval';
        NEW.job_id := NULL;
        RETURN NEW;
    END IF;
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', prio, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_call_enqueue() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NEW.requested_by IS NULL
       OR NOT pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        NEW.requested_by := 'sql:' || session_user;
    END IF;
    IF (EXISTS (SELECT 1 FROM core_tools t WHERE t.name = NEW.tool_name AND t.approval_required)
        OR EXISTS (SELECT 1 FROM core_approval_policies))
       AND EXISTS (SELECT 1 FROM gem_approval_needed(NEW.tool_name, NEW.agent)) THEN
        NEW.status := 'awaiting_approval';
        NEW.job_id := NULL;
        RETURN NEW;
    END IF;
    NEW.status := 'queued';
    INSERT INTO river_job (args, kind, max_attempts, queue, priority, state)
    VALUES (CASE WHEN NEW.device IS NULL THEN jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name)
                 ELSE jsonb_build_object('call_id', NEW.id, 'tool_name', NEW.tool_name, 'device', NEW.device) END,
            'gem.tool_call', NEW.max_attempts, 'default', 1, 'available')
    RETURNING id INTO NEW.job_id;
    PERFORM pg_notify(coalesce(current_schema(), 'public') || '.river_insert', '{"queue": "default"}');
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION gem_call_enqueue() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd
DROP FUNCTION gem_agent_call_settings(text, text, text);
ALTER TABLE agent_skills DROP COLUMN call_timeout_ms, DROP COLUMN call_max_attempts, DROP COLUMN call_priority;
