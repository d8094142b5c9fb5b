-- +goose Up
-- brain_turns keeps every request of an LLM step: a step the brain retried (a 429, a 5xx, no answer in
-- time) has one row per attempt, numbered from 1 within its iteration; the last is the step's outcome.
ALTER TABLE brain_turns ADD COLUMN attempt integer NOT NULL DEFAULT 1 CHECK (attempt >= 1);

-- +goose Down
ALTER TABLE brain_turns DROP COLUMN attempt;
