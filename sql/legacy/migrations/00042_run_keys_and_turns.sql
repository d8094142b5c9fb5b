-- Requests that do work in the brain — POST /brain/run, /agents/{slug}/chat, /operator/chat — take a request
-- key (Idempotency-Key), as POST /calls does (00038): the same caller and key within the window
-- (gem_idempotency_window) is the same run, answered again or waited for, never made twice; the same key with
-- another request is refused (GI001). And a chat session answers one message at a time: its turn is a
-- column set under the session row's lock, not a check of other runs that two requests can pass at once
-- (docs/durable-runs.md).

-- +goose Up
CREATE TABLE brain_request_keys (
    requested_by text        NOT NULL,
    key_hash     bytea       NOT NULL,
    key          text        NOT NULL,
    -- SHA-256 of the request as the brain decoded it (its door, body and agent), without the key.
    fingerprint  bytea       NOT NULL,
    run_id       uuid        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (requested_by, key_hash)
);
CREATE INDEX brain_request_keys_run ON brain_request_keys (run_id);
CREATE INDEX brain_request_keys_created_at ON brain_request_keys (created_at);

-- The run's request key and its request's fingerprint (claimed by the insert's trigger), and a chat turn's
-- answer as it was sent (what a repeat of the request is answered).
ALTER TABLE brain_runs ADD COLUMN idempotency_key text, ADD COLUMN request_fingerprint bytea, ADD COLUMN response jsonb;

-- The chat run answering the session's current message, if any, and since when. The turn is decided from
-- these columns alone, under the row's lock: a test of brain_runs there would read the statement's
-- snapshot, taken before a concurrent turn's commit, and let two turns in.
ALTER TABLE agent_sessions ADD COLUMN turn_run uuid, ADD COLUMN turn_since timestamptz;

-- +goose StatementBegin
-- gem_run_key_claim claims a request key for a new run in the transaction that records the run. A holder
-- still uncommitted makes the claim wait for its transaction's end. A holder within the window raises GI001
-- when its request was another (different fingerprint), GI002 when it was this one: the brain then answers
-- with the holder's run (DETAIL names it as JSON). An expired holder gives the key up.
CREATE FUNCTION gem_run_key_claim(caller text, request_key text, fp bytea, run uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    h       bytea := sha256(convert_to(request_key, 'UTF8'));
    claimed uuid;
    holder  uuid;
    held_fp bytea;
BEGIN
    INSERT INTO brain_request_keys AS k (requested_by, key_hash, key, fingerprint, run_id)
    VALUES (caller, h, request_key, fp, run)
    ON CONFLICT (requested_by, key_hash) DO UPDATE
        SET key = EXCLUDED.key, fingerprint = EXCLUDED.fingerprint, run_id = EXCLUDED.run_id, created_at = now()
        WHERE k.created_at < now() - gem_idempotency_window()
    RETURNING k.run_id INTO claimed;
    IF claimed IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT k.run_id, k.fingerprint INTO holder, held_fp
    FROM brain_request_keys k WHERE k.requested_by = caller AND k.key_hash = h;
    IF holder = run THEN
        RETURN; -- claimed earlier in this transaction (a chat turn claims it before its session, then inserts)
    END IF;
    IF held_fp <> fp THEN
        RAISE EXCEPTION 'idempotency key % of caller % was used for run % with a different request',
                quote_literal(request_key), quote_literal(caller), holder
            USING ERRCODE = 'GI001',
                  DETAIL = json_build_object('run_id', holder, 'idempotency_key', request_key)::text,
                  HINT = 'a retry sends the same request with the same key; a new request needs a new key';
    END IF;
    RAISE EXCEPTION 'idempotency key % of caller % is run %', quote_literal(request_key), quote_literal(caller), holder
        USING ERRCODE = 'GI002',
              DETAIL = json_build_object('run_id', holder, 'idempotency_key', request_key)::text;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A run inserted with a request key claims it first: a repeat raises GI002 (or GI001) and nothing is written.
CREATE FUNCTION gem_run_claim_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.requested_by IS NULL OR NEW.request_fingerprint IS NULL THEN
        RAISE EXCEPTION 'a run with a request key needs requested_by and request_fingerprint' USING ERRCODE = 'check_violation';
    END IF;
    PERFORM gem_run_key_claim(NEW.requested_by, NEW.idempotency_key, NEW.request_fingerprint, NEW.id);
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER brain_runs_claim_key BEFORE INSERT ON brain_runs
    FOR EACH ROW WHEN (NEW.idempotency_key IS NOT NULL) EXECUTE FUNCTION gem_run_claim_key();

-- +goose StatementBegin
-- A run that ends (completed or failed) notifies gem_run with its id, at commit: a brain waiting for it (a
-- repeated request, a queued turn) reads it then. A wake-up, never data (any login may LISTEN).
CREATE FUNCTION gem_run_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gem_run', NEW.id::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER brain_runs_ended AFTER INSERT OR UPDATE OF status ON brain_runs
    FOR EACH ROW WHEN (NEW.status IN ('completed', 'failed')) EXECUTE FUNCTION gem_run_ended();

-- +goose Down
DROP TRIGGER brain_runs_ended ON brain_runs;
DROP FUNCTION gem_run_ended();
DROP TRIGGER brain_runs_claim_key ON brain_runs;
DROP FUNCTION gem_run_claim_key();
DROP FUNCTION gem_run_key_claim(text, text, bytea, uuid);
ALTER TABLE agent_sessions DROP COLUMN turn_run, DROP COLUMN turn_since;
ALTER TABLE brain_runs DROP COLUMN idempotency_key, DROP COLUMN request_fingerprint, DROP COLUMN response;
DROP TABLE brain_request_keys;
