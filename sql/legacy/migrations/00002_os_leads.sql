-- Domain tables of the first tools: leads, notes and tasks. Every domain table carries the gem_capture_write
-- trigger (so receipts list what a handler wrote) and created_by_call (the call that created the row).

-- +goose Up

CREATE TABLE leads (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name            text        NOT NULL,
    phone           text        NOT NULL,
    -- Digits (and a leading +) of the phone number: one lead per number, however it was typed.
    phone_digits    text        GENERATED ALWAYS AS (regexp_replace(phone, '[^0-9+]', '', 'g')) STORED,
    email           text,
    suburb          text,
    address         text,
    source          text        NOT NULL DEFAULT 'other',
    stage           text        NOT NULL DEFAULT 'new'
                                CHECK (stage IN ('new', 'contacted', 'inspection_scheduled', 'inspected', 'quoted', 'won', 'lost')),
    stage_reason    text,
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT leads_one_per_phone UNIQUE (phone_digits)
);
CREATE INDEX leads_stage_created_at ON leads (stage, created_at DESC);

-- +goose StatementBegin
-- gem_note_document is the text a note is searched by. array_to_string is only STABLE in general, but it is
-- immutable for text[], which is what makes it usable in an index.
CREATE FUNCTION gem_note_document(title text, body text, tags text[]) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
        || setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'B')
$$;
-- +goose StatementEnd

CREATE TABLE os_notes (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    kind            text        NOT NULL DEFAULT 'business' CHECK (kind IN ('business', 'personal')),
    title           text        NOT NULL,
    body            text        NOT NULL DEFAULT '',
    tags            text[]      NOT NULL DEFAULT '{}',
    lead_id         uuid        REFERENCES leads (id) ON DELETE SET NULL,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX os_notes_search ON os_notes USING gin (gem_note_document(title, body, tags));
CREATE INDEX os_notes_created_at ON os_notes (created_at DESC);

CREATE TABLE os_tasks (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    title           text        NOT NULL,
    description     text,
    priority        text        NOT NULL DEFAULT 'normal' CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    status          text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'deferred')),
    due_at          timestamptz,
    lead_id         uuid        REFERENCES leads (id) ON DELETE SET NULL,
    completed_at    timestamptz,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX os_tasks_status_priority ON os_tasks (status, priority, due_at);
CREATE INDEX os_tasks_lead ON os_tasks (lead_id) WHERE lead_id IS NOT NULL;

CREATE TRIGGER leads_capture_write AFTER INSERT OR UPDATE OR DELETE ON leads
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER os_notes_capture_write AFTER INSERT OR UPDATE OR DELETE ON os_notes
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER os_tasks_capture_write AFTER INSERT OR UPDATE OR DELETE ON os_tasks
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE os_tasks;
DROP TABLE os_notes;
DROP FUNCTION gem_note_document(text, text, text[]);
DROP TABLE leads;
