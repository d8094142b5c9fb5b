-- A chat turn is a journal with an owner (docs/durable-runs.md): the brain answering it holds a lease it
-- renews while it works; a brain that finds a lease expired takes the run over and finishes it from its
-- journal — the turn's LLM answers (brain_turns), its messages (agent_messages) and its calls, each answer
-- recorded with its calls in one transaction. A tool message whose call had no receipt yet when it was
-- recorded says so (awaiting_receipt), and is settled when the receipt comes.

-- +goose Up
ALTER TABLE brain_runs ADD COLUMN owner text, ADD COLUMN lease_until timestamptz;
CREATE INDEX brain_runs_lease ON brain_runs (lease_until) WHERE status IN ('planning', 'waiting') AND lease_until IS NOT NULL;
ALTER TABLE agent_messages ADD COLUMN awaiting_receipt boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE agent_messages DROP COLUMN awaiting_receipt;
DROP INDEX brain_runs_lease;
ALTER TABLE brain_runs DROP COLUMN owner, DROP COLUMN lease_until;
