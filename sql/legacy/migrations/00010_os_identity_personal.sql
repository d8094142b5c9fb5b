-- GEM's os, identity and personal domains.
--
-- * Notes, tasks and reminders take GEM's contract: a domain (business, personal or both) and a reference to
--   the record they are about (entity_refs on notes, context_ref on tasks and reminders, kept as type + id).
-- * Undo: while a call runs, every row it updates or deletes is copied, as it was, into core_undo_log (inserts
--   need no copy: the receipt lists their ids). os.rollback_last_action uses those before-images to restore
--   rows and deletes the rows the call created; core_rollbacks records which calls were rolled back. Calls
--   that only insert (os.create_note, the benchmark's call) write nothing more than before.
-- * State snapshots (os.refresh_state_snapshot), the owner's self-model and memories (identity.*), and
--   personal check-ins and commitments (personal.*).
--
-- Every new domain table has an id, created_by_call and the gem_capture_write trigger.

-- +goose Up

-- Notes: kind becomes GEM's domain (which also allows both), body becomes content.
ALTER TABLE os_notes RENAME COLUMN kind TO domain;
ALTER TABLE os_notes RENAME COLUMN body TO content;
ALTER TABLE os_notes DROP CONSTRAINT os_notes_kind_check,
    ADD CONSTRAINT os_notes_domain_check CHECK (domain IN ('business', 'personal', 'both')),
    -- [{"type": "lead", "id": "..."}, ...]: the records a note is about.
    ADD COLUMN entity_refs jsonb NOT NULL DEFAULT '[]' CONSTRAINT os_notes_entity_refs_array CHECK (jsonb_typeof(entity_refs) = 'array');
UPDATE os_notes SET entity_refs = jsonb_build_array(jsonb_build_object('type', 'lead', 'id', lead_id::text)) WHERE lead_id IS NOT NULL;
CREATE INDEX os_notes_entity_refs ON os_notes USING gin (entity_refs jsonb_path_ops);

-- Tasks: a domain, what the task is about (context_type + context_id; lead_id stays set for leads, so a
-- deleted lead still clears it), and the note given on completion and the reason given for a deferral.
ALTER TABLE os_tasks
    ADD COLUMN domain text NOT NULL DEFAULT 'business' CONSTRAINT os_tasks_domain_check CHECK (domain IN ('business', 'personal', 'both')),
    ADD COLUMN context_type text CONSTRAINT os_tasks_context_type_check CHECK (context_type <> ''),
    ADD COLUMN context_id text CONSTRAINT os_tasks_context_id_check CHECK (context_id <> ''),
    ADD COLUMN completion_note text,
    ADD COLUMN defer_reason text,
    ADD CONSTRAINT os_tasks_context_pair CHECK ((context_type IS NULL) = (context_id IS NULL));
UPDATE os_tasks SET context_type = 'lead', context_id = lead_id::text WHERE lead_id IS NOT NULL;
CREATE INDEX os_tasks_domain_status ON os_tasks (domain, status, due_at);

-- Reminders: the same domain and context as tasks.
ALTER TABLE os_reminders
    ADD COLUMN domain text NOT NULL DEFAULT 'business' CONSTRAINT os_reminders_domain_check CHECK (domain IN ('business', 'personal', 'both')),
    ADD COLUMN context_type text CONSTRAINT os_reminders_context_type_check CHECK (context_type <> ''),
    ADD COLUMN context_id text CONSTRAINT os_reminders_context_id_check CHECK (context_id <> ''),
    ADD CONSTRAINT os_reminders_context_pair CHECK ((context_type IS NULL) = (context_id IS NULL));
UPDATE os_reminders SET context_type = 'task', context_id = task_id::text WHERE task_id IS NOT NULL;
UPDATE os_reminders SET context_type = 'lead', context_id = lead_id::text WHERE lead_id IS NOT NULL;

-- Before-images: one row per row a call updated or deleted, as it was before that write. No foreign key to
-- the call, so the trigger's insert takes no lock on the calls table.
CREATE TABLE core_undo_log (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    call_id    uuid        NOT NULL,
    table_name text        NOT NULL,
    op         text        NOT NULL CHECK (op IN ('update', 'delete')),
    row_id     text,
    before     jsonb       NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX core_undo_log_call ON core_undo_log (call_id, id);
CREATE INDEX core_undo_log_row ON core_undo_log (table_name, row_id, id);

-- Calls that were rolled back, one row each; the rollback call is created_by_call. Rolling back the rollback
-- deletes the row (the call counts as not rolled back again).
CREATE TABLE core_rollbacks (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    call_id         uuid        NOT NULL REFERENCES core_tool_calls (id) ON DELETE CASCADE,
    tool_name       text        NOT NULL,
    rows_deleted    integer     NOT NULL DEFAULT 0,
    rows_restored   integer     NOT NULL DEFAULT 0,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT core_rollbacks_once UNIQUE (call_id)
);

-- +goose StatementBegin
-- gem_capture_write as in 00001 (counts and ids for the receipt's db_writes), plus the before-image of every
-- row a call updates or deletes, for os.rollback_last_action. Inserts take the same path as before.
CREATE OR REPLACE FUNCTION gem_capture_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    call text := coalesce(current_setting('gem.call_id', true), '');
    pair text;
    k    text;
    n    integer;
    rid  text;
    old_row jsonb;
BEGIN
    IF call = '' THEN
        RETURN NULL;
    END IF;
    pair := TG_TABLE_NAME || ' ' || lower(TG_OP);
    k := 'gem.w' || md5(pair);
    n := coalesce(nullif(current_setting(k, true), '')::integer, 0);
    IF n = 0 THEN
        PERFORM set_config('gem.writes', coalesce(current_setting('gem.writes', true), '') || pair || E'\x1e', true);
    END IF;
    PERFORM set_config(k, (n + 1)::text, true);
    IF TG_OP = 'INSERT' THEN
        IF n < 100 THEN
            PERFORM set_config(k || 'i', coalesce(current_setting(k || 'i', true), '') || coalesce(to_jsonb(NEW) ->> 'id', '') || E'\x1e', true);
        END IF;
        RETURN NULL;
    END IF;
    old_row := to_jsonb(OLD);
    rid := old_row ->> 'id';
    IF n < 100 THEN
        PERFORM set_config(k || 'i', coalesce(current_setting(k || 'i', true), '') || coalesce(rid, '') || E'\x1e', true);
    END IF;
    INSERT INTO core_undo_log (call_id, table_name, op, row_id, before) VALUES (call::uuid, TG_TABLE_NAME, lower(TG_OP), rid, old_row);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Derived state of the business or personal life at a moment (os.refresh_state_snapshot).
CREATE TABLE os_state_snapshots (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    domain          text        NOT NULL CHECK (domain IN ('business', 'personal', 'both')),
    as_of           timestamptz NOT NULL,
    since           timestamptz NOT NULL,
    state           jsonb       NOT NULL CHECK (jsonb_typeof(state) = 'object'),
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX os_state_snapshots_latest ON os_state_snapshots (domain, as_of DESC);

-- The owner's self-model: one row, four JSON objects. The row appears with the first change.
CREATE TABLE identity_self_model (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    singleton       boolean     NOT NULL DEFAULT true CHECK (singleton),
    persona         jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(persona) = 'object'),
    "values"        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof("values") = 'object'),
    boundaries      jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(boundaries) = 'object'),
    goals           jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(goals) = 'object'),
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT identity_self_model_one_row UNIQUE (singleton)
);

-- Every change to the self-model: the patch as given and why.
CREATE TABLE identity_self_model_changes (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tool_name       text        NOT NULL,
    sections        text[]      NOT NULL,
    patch           jsonb       NOT NULL,
    reason          text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX identity_self_model_changes_created_at ON identity_self_model_changes (created_at DESC);

-- The owner's memories, one current value per key. A new value closes the old one (valid_to) instead of
-- overwriting it, so the history of a key stays; supersedes links the new value to the one it replaced.
CREATE TABLE identity_memories (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    memory_type     text        NOT NULL CHECK (memory_type IN ('preference', 'fact', 'boundary', 'commitment', 'pattern')),
    key             text        NOT NULL CHECK (key <> '' AND length(key) <= 120),
    value           jsonb       NOT NULL CHECK (jsonb_typeof(value) = 'object'),
    confidence      double precision NOT NULL DEFAULT 1 CHECK (confidence BETWEEN 0 AND 1),
    source          text        NOT NULL DEFAULT 'user' CHECK (source IN ('user', 'inferred', 'imported', 'admin')),
    -- Patterns: what they were seen in, and how many times they were scored.
    evidence_refs   jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(evidence_refs) = 'array'),
    observations    integer     NOT NULL DEFAULT 1 CHECK (observations > 0),
    valid_from      timestamptz NOT NULL DEFAULT now(),
    valid_to        timestamptz,
    end_reason      text,
    supersedes      uuid        REFERENCES identity_memories (id) ON DELETE SET NULL,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT identity_memories_validity CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE UNIQUE INDEX identity_memories_current_key ON identity_memories (key) WHERE valid_to IS NULL;
CREATE INDEX identity_memories_current_type ON identity_memories (memory_type, key) WHERE valid_to IS NULL;
CREATE INDEX identity_memories_key_history ON identity_memories (key, valid_from DESC);
CREATE INDEX identity_memories_supersedes ON identity_memories (supersedes) WHERE supersedes IS NOT NULL;

-- Personal check-ins: how the owner is doing, at a moment.
CREATE TABLE personal_checkins (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    energy          text        NOT NULL CHECK (energy IN ('low', 'medium', 'high')),
    stress          text        NOT NULL CHECK (stress IN ('low', 'medium', 'high')),
    focus           text        NOT NULL CHECK (focus IN ('scattered', 'ok', 'locked_in')),
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX personal_checkins_created_at ON personal_checkins (created_at DESC);

-- Personal commitments (a habit, a decision, a promise), reviewed at review_at, closed with an outcome.
CREATE TABLE personal_commitments (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    title           text        NOT NULL CHECK (title <> ''),
    details         text,
    review_at       timestamptz,
    status          text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed')),
    outcome         text        CHECK (outcome IN ('kept', 'broken', 'dropped', 'done')),
    closing_note    text,
    closed_at       timestamptz,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT personal_commitments_closed CHECK ((status = 'closed') = (closed_at IS NOT NULL)
        AND (status = 'closed') = (outcome IS NOT NULL))
);
CREATE INDEX personal_commitments_active_review ON personal_commitments (review_at) WHERE status = 'active';

CREATE TRIGGER core_rollbacks_capture_write AFTER INSERT OR UPDATE OR DELETE ON core_rollbacks
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER os_state_snapshots_capture_write AFTER INSERT OR UPDATE OR DELETE ON os_state_snapshots
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER identity_self_model_capture_write AFTER INSERT OR UPDATE OR DELETE ON identity_self_model
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER identity_self_model_changes_capture_write AFTER INSERT OR UPDATE OR DELETE ON identity_self_model_changes
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER identity_memories_capture_write AFTER INSERT OR UPDATE OR DELETE ON identity_memories
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER personal_checkins_capture_write AFTER INSERT OR UPDATE OR DELETE ON personal_checkins
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER personal_commitments_capture_write AFTER INSERT OR UPDATE OR DELETE ON personal_commitments
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE personal_commitments;
DROP TABLE personal_checkins;
DROP TABLE identity_memories;
DROP TABLE identity_self_model_changes;
DROP TABLE identity_self_model;
DROP TABLE os_state_snapshots;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gem_capture_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair text;
    k    text;
    n    integer;
    rid  text;
BEGIN
    IF coalesce(current_setting('gem.call_id', true), '') = '' THEN
        RETURN NULL;
    END IF;
    pair := TG_TABLE_NAME || ' ' || lower(TG_OP);
    k := 'gem.w' || md5(pair);
    n := coalesce(nullif(current_setting(k, true), '')::integer, 0);
    IF n = 0 THEN
        PERFORM set_config('gem.writes', coalesce(current_setting('gem.writes', true), '') || pair || E'\x1e', true);
    END IF;
    PERFORM set_config(k, (n + 1)::text, true);
    IF n < 100 THEN
        rid := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> 'id';
        PERFORM set_config(k || 'i', coalesce(current_setting(k || 'i', true), '') || coalesce(rid, '') || E'\x1e', true);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TABLE core_rollbacks;
DROP TABLE core_undo_log;

ALTER TABLE os_reminders DROP CONSTRAINT os_reminders_context_pair,
    DROP COLUMN context_id, DROP COLUMN context_type, DROP COLUMN domain;

DROP INDEX os_tasks_domain_status;
ALTER TABLE os_tasks DROP CONSTRAINT os_tasks_context_pair,
    DROP COLUMN defer_reason, DROP COLUMN completion_note, DROP COLUMN context_id, DROP COLUMN context_type,
    DROP COLUMN domain;

DROP INDEX os_notes_entity_refs;
UPDATE os_notes SET domain = 'business' WHERE domain = 'both';
ALTER TABLE os_notes DROP COLUMN entity_refs, DROP CONSTRAINT os_notes_domain_check;
ALTER TABLE os_notes RENAME COLUMN content TO body;
ALTER TABLE os_notes RENAME COLUMN domain TO kind;
ALTER TABLE os_notes ADD CONSTRAINT os_notes_kind_check CHECK (kind IN ('business', 'personal'));
