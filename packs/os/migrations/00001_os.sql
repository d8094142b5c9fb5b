-- The os pack's schema: notes, tasks, reminders and state snapshots, with its built-in skills (audit, notes-tasks,
-- reminders), as the legacy migrations left them. The foreign keys from its tables to the business pack's leads
-- are the business line's.

-- Written from pg_dump of a database the legacy migrations made (their history and reasons are in
-- sql/legacy/migrations and git log). A database made before the lines began records this migration as applied
-- without running it (gemsql.Migrate adopts it); sql/schema.sql is the schema every line leaves.

-- +goose Up

-- Functions come before the tables their bodies read, as pg_dump orders them.
SET LOCAL check_function_bodies = false;

-- +goose StatementBegin
CREATE FUNCTION gem_note_document(title text, body text, tags text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
        || setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'B')
$$;
-- +goose StatementEnd

CREATE TABLE os_notes (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    domain text DEFAULT 'business'::text NOT NULL,
    title text NOT NULL,
    content text DEFAULT ''::text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    lead_id uuid,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    entity_refs jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT os_notes_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_notes_entity_refs_array CHECK ((jsonb_typeof(entity_refs) = 'array'::text))
);

CREATE TABLE os_reminders (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    notes text,
    remind_at timestamp with time zone NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    lead_id uuid,
    task_id uuid,
    resolved_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    domain text DEFAULT 'business'::text NOT NULL,
    context_type text,
    context_id text,
    CONSTRAINT os_reminders_context_id_check CHECK ((context_id <> ''::text)),
    CONSTRAINT os_reminders_context_pair CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT os_reminders_context_type_check CHECK ((context_type <> ''::text)),
    CONSTRAINT os_reminders_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_reminders_resolved_iff_not_pending CHECK (((status = 'pending'::text) = (resolved_at IS NULL))),
    CONSTRAINT os_reminders_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'done'::text, 'dismissed'::text]))),
    CONSTRAINT os_reminders_title_check CHECK ((title <> ''::text))
);

CREATE TABLE os_state_snapshots (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    domain text NOT NULL,
    as_of timestamp with time zone NOT NULL,
    since timestamp with time zone NOT NULL,
    state jsonb NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT os_state_snapshots_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_state_snapshots_state_check CHECK ((jsonb_typeof(state) = 'object'::text))
);

CREATE TABLE os_tasks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    title text NOT NULL,
    description text,
    priority text DEFAULT 'normal'::text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    due_at timestamp with time zone,
    lead_id uuid,
    completed_at timestamp with time zone,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    domain text DEFAULT 'business'::text NOT NULL,
    context_type text,
    context_id text,
    completion_note text,
    defer_reason text,
    CONSTRAINT os_tasks_context_id_check CHECK ((context_id <> ''::text)),
    CONSTRAINT os_tasks_context_pair CHECK (((context_type IS NULL) = (context_id IS NULL))),
    CONSTRAINT os_tasks_context_type_check CHECK ((context_type <> ''::text)),
    CONSTRAINT os_tasks_domain_check CHECK ((domain = ANY (ARRAY['business'::text, 'personal'::text, 'both'::text]))),
    CONSTRAINT os_tasks_priority_check CHECK ((priority = ANY (ARRAY['low'::text, 'normal'::text, 'high'::text, 'urgent'::text]))),
    CONSTRAINT os_tasks_status_check CHECK ((status = ANY (ARRAY['open'::text, 'done'::text, 'deferred'::text])))
);

ALTER TABLE ONLY os_notes
    ADD CONSTRAINT os_notes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY os_reminders
    ADD CONSTRAINT os_reminders_pkey PRIMARY KEY (id);

ALTER TABLE ONLY os_state_snapshots
    ADD CONSTRAINT os_state_snapshots_pkey PRIMARY KEY (id);

ALTER TABLE ONLY os_tasks
    ADD CONSTRAINT os_tasks_pkey PRIMARY KEY (id);

CREATE INDEX os_notes_created_at ON os_notes USING btree (created_at DESC);

CREATE INDEX os_notes_entity_refs ON os_notes USING gin (entity_refs jsonb_path_ops) WITH (fastupdate=off);

CREATE INDEX os_notes_search ON os_notes USING gin (gem_note_document(title, content, tags)) WITH (fastupdate=off);

CREATE INDEX os_reminders_pending ON os_reminders USING btree (remind_at) WHERE (status = 'pending'::text);

CREATE INDEX os_state_snapshots_latest ON os_state_snapshots USING btree (domain, as_of DESC);

CREATE INDEX os_tasks_domain_status ON os_tasks USING btree (domain, status, due_at);

CREATE INDEX os_tasks_lead ON os_tasks USING btree (lead_id) WHERE (lead_id IS NOT NULL);

CREATE INDEX os_tasks_status_priority ON os_tasks USING btree (status, priority, due_at);

CREATE TRIGGER os_notes_capture_write AFTER INSERT OR DELETE OR UPDATE ON os_notes FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER os_reminders_capture_write AFTER INSERT OR DELETE OR UPDATE ON os_reminders FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER os_state_snapshots_capture_write AFTER INSERT OR DELETE OR UPDATE ON os_state_snapshots FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER os_tasks_capture_write AFTER INSERT OR DELETE OR UPDATE ON os_tasks FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

ALTER TABLE ONLY os_reminders
    ADD CONSTRAINT os_reminders_task_id_fkey FOREIGN KEY (task_id) REFERENCES os_tasks(id) ON DELETE SET NULL;

-- The built-in skills of the pack.

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'audit', 'Audit', 'admin', 't', '{os.health_check,os.audit_log_search,os.get_state_snapshot,os.refresh_state_snapshot,os.rollback_last_action}',
    'Check that GEM works, search past calls and receipts, read the state of the business, undo a mistaken call.',
    'Use the audit log to answer "what happened" questions and the state snapshot for "where do things stand". Rolling back a call undoes its database changes; it cannot undo a message sent or a file written, and it refuses when later calls changed the same rows. Confirm with the user before rolling back.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'notes-tasks', 'Notes and tasks', 'office', 't', '{os.create_note,os.search_notes,os.create_task,os.update_task,os.complete_task,os.defer_task,os.list_tasks}',
    'Save and search notes; create, update, defer, complete and list tasks, for the business or personal life.',
    'Keep the user''s notes and to-do list.

- Every note and task has a domain: business, personal or both. Work things are business; family, health and home are personal.
- Search notes before saying you do not know something the user may have written down.
- A task needs a short title in the imperative ("Call Ann about the gutters"); priority is low, normal or high (high only when the user says it is urgent). Tie it to a lead, job or quote with context_ref.
- To finish, change or defer a task you need its id: list tasks first if you do not have it. update_task takes a patch of the fields to change.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'reminders', 'Reminders', 'office', 't', '{os.create_reminder,os.list_reminders,os.complete_reminder,os.dismiss_reminder}',
    'Set, list and resolve reminders at a time.',
    'Reminders fire at a time; tasks do not. Use a reminder when the user names a time ("remind me at 3pm"). Times are in the business''s time zone; give remind_at as an RFC 3339 date-time, and say the domain (business or personal).');
