-- The brain's runs: one row per request to plan (and perhaps enqueue and wait for) tool calls.

-- +goose Up

CREATE TABLE brain_runs (
    id                uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    message           text        NOT NULL,
    mode              text        NOT NULL CHECK (mode IN ('answer', 'plan', 'enqueue', 'enqueue_and_wait', 'chat')),
    conversation_id   text,
    -- Ids (lead_id, job_id, ...) merged into planned inputs, and the run's limits.
    context           jsonb       NOT NULL DEFAULT '{}',
    limits            jsonb       NOT NULL DEFAULT '{}',
    -- created → planning → (planned, awaiting approval) → enqueued → waiting → completed | failed
    status            text        NOT NULL DEFAULT 'created'
                                  CHECK (status IN ('created', 'planning', 'planned', 'enqueued', 'waiting', 'completed', 'failed')),
    -- {"mode", "reason", "planner", "rules": [...]}
    decision          jsonb,
    planned_calls     jsonb       NOT NULL DEFAULT '[]',
    call_ids          uuid[]      NOT NULL DEFAULT '{}',
    -- The receipts the run was answered from, compacted ({call_id, tool, status, summary, error}).
    receipts          jsonb,
    assistant_message text,
    next_actions      jsonb       NOT NULL DEFAULT '[]',
    errors            jsonb       NOT NULL DEFAULT '[]',
    agent             text,
    requested_by      text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    completed_at      timestamptz
);

CREATE INDEX brain_runs_created_at ON brain_runs (created_at DESC);
CREATE INDEX brain_runs_conversation ON brain_runs (conversation_id, created_at) WHERE conversation_id IS NOT NULL;
CREATE INDEX brain_runs_open ON brain_runs (status, created_at) WHERE status IN ('planned', 'enqueued', 'waiting');

-- +goose Down
DROP TABLE brain_runs;
