-- The executor's load reads an agent's call timeout with a scalar function, called only for calls made for
-- an agent: a LATERAL join on gem_agent_call_settings ran it for every call of a batch (the planner turned
-- its "agent IS NOT NULL" into a join filter), 0.4 ms each.

-- +goose Up
-- +goose StatementBegin
-- gem_agent_call_timeout is the shortest timeout the agent's assignments give the tool for the user, or NULL.
CREATE FUNCTION gem_agent_call_timeout(agent_slug text, for_user text, tool_name text) RETURNS integer
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT s.timeout_ms FROM gem_agent_call_settings(agent_slug, for_user, tool_name) s);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION gem_agent_call_timeout(text, text, text);
