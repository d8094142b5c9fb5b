-- Code mode (docs/code-mode.md): an agent may be given run_code, and every program it runs is recorded on
-- its run with what it printed, returned and called.

-- +goose Up
ALTER TABLE agents ADD COLUMN code_mode boolean NOT NULL DEFAULT false;

CREATE TABLE brain_run_programs (
    id          bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      uuid             NOT NULL REFERENCES brain_runs (id) ON DELETE CASCADE,
    iteration   integer          NOT NULL,
    code        text             NOT NULL,
    -- What it returned, printed and called (tool, device, call_id, status, error_code), and why it stopped.
    value       jsonb,
    output      jsonb            NOT NULL DEFAULT '[]',
    calls       jsonb            NOT NULL DEFAULT '[]',
    call_ids    uuid[]           NOT NULL DEFAULT '{}',
    error       jsonb,
    started_at  timestamptz      NOT NULL DEFAULT now(),
    duration_ms double precision NOT NULL DEFAULT 0
);
CREATE INDEX brain_run_programs_run ON brain_run_programs (run_id, id);

-- +goose Down
DROP TABLE brain_run_programs;
ALTER TABLE agents DROP COLUMN code_mode;
