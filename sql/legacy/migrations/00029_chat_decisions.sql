-- Calls an agent made that waited for approval, once decided, are told to the agent in its session's next
-- turn (POST /agents/{slug}/chat with a message, or with "resume": true): these rows say which were told.

-- +goose Up
CREATE TABLE agent_session_decisions (
    session_id text        NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
    call_id    uuid        NOT NULL REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    -- the run whose turn told it
    run_id     uuid,
    told_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, call_id)
);

-- +goose Down
DROP TABLE agent_session_decisions;
