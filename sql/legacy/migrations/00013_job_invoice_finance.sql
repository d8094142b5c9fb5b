-- Jobs, invoices and finance for GEM's contracts (issue 11): notes on jobs and invoices, progress updates and
-- before/after photo references on jobs, the time a payment was made, which job or invoice a message was
-- about, and the business's expenses (for the cash-flow and P&L snapshots).
--
-- Conventions as in 00004_business.sql: every table has an id, created_by_call and the gem_capture_write
-- trigger; money is integer cents.

-- +goose Up

-- The note given when the job was made, and the one given with its dates.
ALTER TABLE jobs
    ADD COLUMN notes               text,
    ADD COLUMN schedule_notes      text,
    ADD COLUMN review_requested_at timestamptz;

-- What happened on the job, as it happened: a short summary, structured details and photos.
CREATE TABLE job_progress_updates (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id          uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    summary         text        NOT NULL CHECK (summary <> '' AND char_length(summary) <= 400),
    details         jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'),
    photo_refs      text[]      NOT NULL DEFAULT '{}',
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_progress_updates_job ON job_progress_updates (job_id, created_at);

-- Photos of the site before and after the work, by reference; each reference once per job and stage.
CREATE TABLE job_media_refs (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id          uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    stage           text        NOT NULL CHECK (stage IN ('before', 'after')),
    ref             text        NOT NULL CHECK (ref <> ''),
    -- The order references were attached in (several arrive in one statement, with one created_at).
    seq             bigint      GENERATED ALWAYS AS IDENTITY,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT job_media_refs_once UNIQUE (job_id, stage, ref)
);

ALTER TABLE invoices
    ADD COLUMN notes   text,
    ADD COLUMN sent_at timestamptz;

-- When the money arrived (received_on is its date in the business's time zone). Earlier payments only
-- knew their date: their recording time stands in.
ALTER TABLE invoice_payments ADD COLUMN paid_at timestamptz;
UPDATE invoice_payments SET paid_at = created_at;
ALTER TABLE invoice_payments ALTER COLUMN paid_at SET NOT NULL;
CREATE INDEX invoice_payments_received_on ON invoice_payments (received_on);

-- Which job or invoice a message was about (review requests, invoices sent, payment reminders).
ALTER TABLE comms_log
    ADD COLUMN job_id     uuid REFERENCES jobs (id) ON DELETE SET NULL,
    ADD COLUMN invoice_id uuid REFERENCES invoices (id) ON DELETE SET NULL;
CREATE INDEX comms_log_job ON comms_log (job_id, occurred_at DESC) WHERE job_id IS NOT NULL;
CREATE INDEX comms_log_invoice ON comms_log (invoice_id, occurred_at DESC) WHERE invoice_id IS NOT NULL;

-- Money spent. amount_cents is what was paid, GST included; gst_cents is the GST in it (0 when GST-free).
-- Direct costs (the work itself) count against gross profit, overheads below it.
CREATE TABLE expenses (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    currency        text        NOT NULL DEFAULT 'AUD' CHECK (currency = 'AUD'),
    amount_cents    bigint      NOT NULL CHECK (amount_cents > 0),
    gst_cents       bigint      NOT NULL DEFAULT 0 CHECK (gst_cents >= 0 AND gst_cents <= amount_cents),
    incurred_on     date        NOT NULL,
    category        text        NOT NULL CHECK (category IN ('materials', 'subcontractors', 'labour', 'equipment_hire',
                                    'waste_disposal', 'permits', 'vehicle', 'fuel', 'tools', 'insurance', 'marketing',
                                    'office', 'software', 'bank_fees', 'other')),
    cost_type       text        NOT NULL GENERATED ALWAYS AS (CASE WHEN category IN ('materials', 'subcontractors', 'labour',
                                    'equipment_hire', 'waste_disposal', 'permits') THEN 'direct' ELSE 'overhead' END) STORED,
    supplier        text        CHECK (supplier <> ''),
    -- The supplier's invoice or receipt number: one expense per supplier and reference.
    reference       text        CHECK (reference <> ''),
    job_id          uuid        REFERENCES jobs (id) ON DELETE SET NULL,
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX expenses_incurred_on ON expenses (incurred_on);
CREATE INDEX expenses_job ON expenses (job_id) WHERE job_id IS NOT NULL;
CREATE UNIQUE INDEX expenses_reference_once ON expenses (lower(coalesce(supplier, '')), reference) WHERE reference IS NOT NULL;

CREATE TRIGGER job_progress_updates_capture_write AFTER INSERT OR UPDATE OR DELETE ON job_progress_updates
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER job_media_refs_capture_write AFTER INSERT OR UPDATE OR DELETE ON job_media_refs
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER expenses_capture_write AFTER INSERT OR UPDATE OR DELETE ON expenses
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE expenses;
DROP INDEX comms_log_invoice;
DROP INDEX comms_log_job;
ALTER TABLE comms_log DROP COLUMN invoice_id, DROP COLUMN job_id;
DROP INDEX invoice_payments_received_on;
ALTER TABLE invoice_payments DROP COLUMN paid_at;
ALTER TABLE invoices DROP COLUMN sent_at, DROP COLUMN notes;
DROP TABLE job_media_refs;
DROP TABLE job_progress_updates;
ALTER TABLE jobs DROP COLUMN review_requested_at, DROP COLUMN schedule_notes, DROP COLUMN notes;
