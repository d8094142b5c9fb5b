-- Media and marketing in GEM's contract: assets carry the job, suburb and notes they are registered with, the
-- alt text and per-platform captions written for them, and the file name a rename map proposed; scheduled
-- content is an os_tasks row plus the channel and copy it publishes; campaign results are logged with
-- their metrics.

-- +goose Up

-- GEM's asset types are photo, video, document and other; a drawing is a document.
UPDATE media_assets SET kind = 'document' WHERE kind = 'drawing';
ALTER TABLE media_assets DROP CONSTRAINT media_assets_kind_check,
    ADD CONSTRAINT media_assets_kind_check CHECK (kind IN ('photo', 'video', 'document', 'other')),
    ADD COLUMN job_id        uuid REFERENCES jobs (id) ON DELETE SET NULL,
    ADD COLUMN suburb        text CHECK (suburb <> ''),
    ADD COLUMN notes         text,
    ADD COLUMN alt_text      text CHECK (alt_text <> ''),
    -- The SEO file name media.propose_rename_map recorded (when not a dry run); unique across assets.
    ADD COLUMN proposed_name text CHECK (proposed_name ~ '^[a-z0-9][a-z0-9.-]*$');
CREATE INDEX media_assets_job ON media_assets (job_id) WHERE job_id IS NOT NULL;
CREATE UNIQUE INDEX media_assets_proposed_name ON media_assets (proposed_name) WHERE proposed_name IS NOT NULL;

-- One caption per asset and platform, as media.generate_caption last wrote it.
CREATE TABLE media_asset_captions (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    asset_id        uuid        NOT NULL REFERENCES media_assets (id) ON DELETE CASCADE,
    platform        text        NOT NULL CHECK (platform IN ('website', 'gmb', 'meta', 'other')),
    caption         text        NOT NULL CHECK (caption <> ''),
    -- The model that wrote it ("openai/gpt-4o-mini"), or NULL for a caption typed by a person.
    written_by      text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT media_asset_captions_once UNIQUE (asset_id, platform)
);
-- The caption column becomes the asset's website caption.
INSERT INTO media_asset_captions (asset_id, platform, caption, created_by_call)
SELECT id, 'website', caption, created_by_call FROM media_assets WHERE caption IS NOT NULL AND caption <> '';
ALTER TABLE media_assets DROP COLUMN caption;

-- Content scheduled by marketing.schedule_content: each item is a task (os_tasks, due when it goes out) and
-- this row, which keeps what the task publishes.
CREATE TABLE marketing_content_items (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id         uuid        NOT NULL UNIQUE REFERENCES os_tasks (id) ON DELETE CASCADE,
    channel         text        NOT NULL CHECK (channel IN ('website', 'blog', 'gmb', 'meta', 'google_ads', 'email', 'other')),
    title           text        NOT NULL CHECK (title <> ''),
    publish_at      timestamptz NOT NULL,
    content         text,
    -- The media assets it uses.
    asset_ids       uuid[]      NOT NULL DEFAULT '{}',
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX marketing_content_items_publish_at ON marketing_content_items (publish_at);

-- Campaign results logged by marketing.log_campaign_result: numeric metrics per channel (and campaign and
-- period, when given).
CREATE TABLE marketing_campaign_results (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    channel         text        NOT NULL CHECK (channel IN ('google_ads', 'meta', 'gmb', 'other')),
    campaign        text        CHECK (campaign <> ''),
    period_start    date,
    period_end      date,
    metrics         jsonb       NOT NULL CHECK (jsonb_typeof(metrics) = 'object' AND metrics <> '{}'),
    notes           text,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT marketing_campaign_results_period CHECK (period_end >= period_start)
);
CREATE INDEX marketing_campaign_results_channel ON marketing_campaign_results (channel, created_at DESC);

CREATE TRIGGER media_asset_captions_capture_write AFTER INSERT OR UPDATE OR DELETE ON media_asset_captions
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER marketing_content_items_capture_write AFTER INSERT OR UPDATE OR DELETE ON marketing_content_items
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER marketing_campaign_results_capture_write AFTER INSERT OR UPDATE OR DELETE ON marketing_campaign_results
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE marketing_campaign_results;
DROP TABLE marketing_content_items;

ALTER TABLE media_assets ADD COLUMN caption text;
UPDATE media_assets a SET caption = c.caption FROM media_asset_captions c WHERE c.asset_id = a.id AND c.platform = 'website';
DROP TABLE media_asset_captions;

DROP INDEX media_assets_proposed_name;
DROP INDEX media_assets_job;
ALTER TABLE media_assets DROP COLUMN proposed_name, DROP COLUMN alt_text, DROP COLUMN notes, DROP COLUMN suburb, DROP COLUMN job_id,
    DROP CONSTRAINT media_assets_kind_check,
    ADD CONSTRAINT media_assets_kind_check CHECK (kind IN ('photo', 'video', 'document', 'drawing', 'other'));
