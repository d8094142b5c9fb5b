-- Agents, skills and chat sessions. An agent's tools are the union of the tools of its enabled, available
-- skills; a skill is available to an agent only when every skill it requires is too. gem_agent_tools is the
-- one definition of that rule: the brain offers an LLM exactly those tools, and the executor refuses any
-- other tool in a call made for the agent.

-- +goose Up

CREATE TABLE agents (
    id                  uuid         PRIMARY KEY DEFAULT gen_random_uuid(),
    slug                text         NOT NULL UNIQUE CHECK (slug ~ '^[a-z][a-z0-9-]{0,62}$'),
    name                text         NOT NULL CHECK (name <> ''),
    instructions        text         NOT NULL DEFAULT '',
    -- The LLM model; NULL uses the brain's GEM_LLM_MODEL.
    model               text,
    temperature         numeric(3,2) CHECK (temperature BETWEEN 0 AND 2),
    max_tool_iterations integer      NOT NULL DEFAULT 6 CHECK (max_tool_iterations BETWEEN 1 AND 50),
    enabled             boolean      NOT NULL DEFAULT true,
    created_at          timestamptz  NOT NULL DEFAULT now(),
    updated_at          timestamptz  NOT NULL DEFAULT now()
);

CREATE TABLE skills (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    slug         text        NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
    name         text        NOT NULL CHECK (name <> ''),
    description  text        NOT NULL DEFAULT '',
    -- Markdown added to the system prompt of every agent that has the skill.
    instructions text        NOT NULL DEFAULT '',
    -- Registry tool names the skill enables (checked against the registry by the brain).
    tools        text[]      NOT NULL DEFAULT '{}',
    category     text        NOT NULL DEFAULT 'general',
    is_builtin   boolean     NOT NULL DEFAULT false,
    metadata     jsonb       NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agent_skills (
    agent_id         uuid        NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    skill_id         uuid        NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
    config_overrides jsonb       NOT NULL DEFAULT '{}',
    -- Lower comes first in the system prompt.
    priority         integer     NOT NULL DEFAULT 100,
    enabled          boolean     NOT NULL DEFAULT true,
    -- Users who may use the skill through this agent; NULL means everyone.
    allowed_users    text[],
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, skill_id)
);
CREATE INDEX agent_skills_skill ON agent_skills (skill_id);

CREATE TABLE skill_dependencies (
    skill_id          uuid NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
    requires_skill_id uuid NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
    PRIMARY KEY (skill_id, requires_skill_id),
    CHECK (skill_id <> requires_skill_id)
);

-- +goose StatementBegin
-- A dependency that closes a cycle is refused when it is written.
CREATE FUNCTION gem_skill_dependency_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    path text;
BEGIN
    WITH RECURSIVE reach (skill_id, path) AS (
        SELECT NEW.requires_skill_id, ARRAY[NEW.skill_id, NEW.requires_skill_id]
        UNION
        SELECT d.requires_skill_id, r.path || d.requires_skill_id
        FROM skill_dependencies d JOIN reach r ON d.skill_id = r.skill_id
        WHERE NOT d.requires_skill_id = ANY (r.path[2:])
    )
    SELECT string_agg(s.slug, ' → ' ORDER BY o.n) INTO path
    FROM (SELECT r.path FROM reach r WHERE r.skill_id = NEW.skill_id LIMIT 1) c,
         unnest(c.path) WITH ORDINALITY AS o(id, n)
         JOIN skills s ON s.id = o.id;
    IF path IS NOT NULL THEN
        RAISE EXCEPTION 'skill dependency cycle: %', path USING ERRCODE = '23P01', HINT = 'gem_skill_cycle';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER skill_dependencies_no_cycle BEFORE INSERT OR UPDATE ON skill_dependencies
    FOR EACH ROW EXECUTE FUNCTION gem_skill_dependency_check();

-- +goose StatementBegin
-- gem_agent_skills lists an agent's skills for a user, and whether each is available: assigned, enabled,
-- the user allowed, and every required skill (transitively) available too.
CREATE FUNCTION gem_agent_skills(agent_slug text, for_user text)
RETURNS TABLE (skill_id uuid, slug text, available boolean, priority integer)
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE assigned AS (
        SELECT s.id, s.slug, a_s.priority,
               a_s.enabled AND (a_s.allowed_users IS NULL OR for_user = ANY (a_s.allowed_users)) AS usable
        FROM agents a
        JOIN agent_skills a_s ON a_s.agent_id = a.id
        JOIN skills s ON s.id = a_s.skill_id
        WHERE a.slug = agent_slug AND a.enabled
    ),
    -- unavailable: assigned skills that are not usable, or that require (transitively) a skill that is not
    -- assigned or not usable.
    blocked (id) AS (
        SELECT id FROM assigned WHERE NOT usable
        UNION
        SELECT d.skill_id FROM skill_dependencies d
        WHERE d.skill_id IN (SELECT id FROM assigned)
          AND d.requires_skill_id NOT IN (SELECT id FROM assigned)
        UNION
        SELECT d.skill_id FROM skill_dependencies d JOIN blocked b ON d.requires_skill_id = b.id
    )
    SELECT a.id, a.slug, a.id NOT IN (SELECT id FROM blocked), a.priority FROM assigned a
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_agent_tools is the set of tools an agent may call for a user: the union of its available skills' tools.
CREATE FUNCTION gem_agent_tools(agent_slug text, for_user text)
RETURNS TABLE (tool text)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT unnest(s.tools)
    FROM gem_agent_skills(agent_slug, for_user) g JOIN skills s ON s.id = g.skill_id
    WHERE g.available
$$;
-- +goose StatementEnd

-- Calls made for an agent say for which user (the executor checks the agent's tools for that user).
ALTER TABLE core_tool_calls ADD COLUMN user_id text;

-- Chat sessions and their messages, so a conversation continues where it stopped.
CREATE TABLE agent_sessions (
    id         text        PRIMARY KEY CHECK (id <> '' AND length(id) <= 200),
    agent_id   uuid        NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    user_id    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agent_messages (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   text        NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
    run_id       uuid        REFERENCES brain_runs (id) ON DELETE SET NULL,
    role         text        NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content      text        NOT NULL DEFAULT '',
    -- assistant: the tool calls it asked for [{id, name (registry tool), arguments}]
    tool_calls   jsonb,
    -- tool: which call this answers, and the GEM call that ran it
    tool_call_id text,
    call_id      uuid,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_messages_session ON agent_messages (session_id, id);

-- Every LLM turn of a run: what was asked (summarised), what came back, tokens and time.
CREATE TABLE brain_turns (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id     uuid        NOT NULL REFERENCES brain_runs (id) ON DELETE CASCADE,
    iteration  integer     NOT NULL,
    provider   text        NOT NULL,
    model      text        NOT NULL,
    request    jsonb       NOT NULL,
    response   jsonb,
    error      jsonb,
    usage      jsonb,
    latency_ms double precision NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX brain_turns_run ON brain_turns (run_id, iteration);

-- +goose Down
DROP TABLE brain_turns;
DROP TABLE agent_messages;
DROP TABLE agent_sessions;
ALTER TABLE core_tool_calls DROP COLUMN user_id;
DROP FUNCTION gem_agent_tools(text, text);
DROP FUNCTION gem_agent_skills(text, text);
DROP TRIGGER skill_dependencies_no_cycle ON skill_dependencies;
DROP FUNCTION gem_skill_dependency_check();
DROP TABLE skill_dependencies;
DROP TABLE agent_skills;
DROP TABLE skills;
DROP TABLE agents;
