-- gem_agent_may_call answers the executor's question "may this agent call this tool for this user?" for each
-- call it loads. It is PL/pgSQL on purpose: an SQL function would be inlined into the executor's load
-- statement, whose planning then took 1-6 ms for every batch (the recursive skill query of
-- gem_agent_skills); PL/pgSQL plans its query once per connection and runs it only for calls made for an
-- agent.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION gem_agent_may_call(agent_slug text, for_user text, tool_name text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM gem_agent_tools(agent_slug, for_user) t WHERE t.tool = tool_name);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION gem_agent_may_call(text, text, text);
