-- +goose Up
-- A skill's other files, as the Agent Skills format keeps them beside SKILL.md: references and assets the
-- model may read on demand, and scripts, which GEM stores and serves but never executes. SKILL.md itself is
-- the skill row (its front matter and instructions), so it is not stored here.
CREATE TABLE skill_files (
    skill_id    uuid        NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
    -- The path inside the skill folder, with "/" separators: "references/forms.md", "scripts/fill.py".
    path        text        NOT NULL CHECK (
                                path ~ '^[A-Za-z0-9_.][A-Za-z0-9_. -]*(/[A-Za-z0-9_.][A-Za-z0-9_. -]*)*$'
                                AND path !~ '(^|/)\.\.?(/|$)' AND length(path) <= 400 AND path <> 'SKILL.md'),
    content     bytea       NOT NULL CHECK (length(content) <= 8388608),
    media_type  text        NOT NULL DEFAULT 'application/octet-stream' CHECK (media_type ~ '^[a-z]+/[A-Za-z0-9.+_-]+'),
    sha256      text        GENERATED ALWAYS AS (encode(sha256(content), 'hex')) STORED,
    size        integer     GENERATED ALWAYS AS (length(content)) STORED,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (skill_id, path)
);

-- +goose Down
DROP TABLE skill_files;
