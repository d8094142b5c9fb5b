-- A chat message may wait behind the session's running turn instead of being refused (if_busy: "enqueue",
-- docs/durable-runs.md#one-turn-at-a-time): its run is recorded queued, and a brain starts it when the
-- session is free, oldest first. Replacing the status check validates it on every partition of brain_runs
-- (a scan; no row has another status).

-- +goose Up
ALTER TABLE brain_runs DROP CONSTRAINT brain_runs_status_check;
ALTER TABLE brain_runs ADD CONSTRAINT brain_runs_status_check
    CHECK (status IN ('created', 'queued', 'planning', 'planned', 'enqueued', 'waiting', 'completed', 'failed'));
CREATE INDEX brain_runs_queued ON brain_runs (conversation_id, id) WHERE status = 'queued';

-- +goose Down
DROP INDEX brain_runs_queued;
UPDATE brain_runs SET status = 'failed', errors = '[{"code": "unavailable", "message": "queued turns were dropped by a migration down"}]'
WHERE status = 'queued';
ALTER TABLE brain_runs DROP CONSTRAINT brain_runs_status_check;
ALTER TABLE brain_runs ADD CONSTRAINT brain_runs_status_check
    CHECK (status IN ('created', 'planning', 'planned', 'enqueued', 'waiting', 'completed', 'failed'));
