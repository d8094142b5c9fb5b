-- +goose Up
-- Tool search: the catalog the brain ranks tools from for GET /brain/tools?q=, the LLM planner and agents'
-- search_tools meta-tool (docs/tool-search.md). A row is one tool's search document, keyed by the SHA-256 of
-- its content (llm.ToolSearchDocument): brains with different registries share the rows of the tools they
-- have in common and never overwrite each other's, and a search names the keys of the tools it may return.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Tool names are short and their every word counts, stop words included ("before" and "after" in
-- job.add_before_after_refs): gem_tool_words stems English like the english configuration but keeps stop
-- words. Queries use it too; a stop word of a query then only ever matches a name.
CREATE TEXT SEARCH DICTIONARY gem_english_all (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION gem_tool_words (COPY = english);
ALTER TEXT SEARCH CONFIGURATION gem_tool_words
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH gem_english_all;

-- +goose StatementBegin
-- gem_tool_document weighs a tool's name words A, its description B, its input's property names,
-- descriptions and enum values C.
CREATE FUNCTION gem_tool_document(name_words text, description text, properties text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('gem_tool_words'::regconfig, coalesce(name_words, '')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(description, '')), 'B')
        || setweight(to_tsvector('english'::regconfig, coalesce(properties, '')), 'C')
$$;
-- +goose StatementEnd

CREATE TABLE brain_tool_search (
    key         text        PRIMARY KEY CHECK (key ~ '^[0-9a-f]{64}$'),
    name        text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    name_words  text        NOT NULL,
    description text        NOT NULL,
    properties  text        NOT NULL,
    document    tsvector    GENERATED ALWAYS AS (gem_tool_document(name_words, description, properties)) STORED,
    -- When a brain last loaded the row; rows no brain has loaded for 30 days are pruned.
    seen_at     timestamptz NOT NULL DEFAULT now()
);
-- For catalogs of thousands of tools: candidates by words (GIN on the document) or by name trigrams.
CREATE INDEX brain_tool_search_document ON brain_tool_search USING gin (document);
CREATE INDEX brain_tool_search_name_words ON brain_tool_search USING gin (name_words gin_trgm_ops);
CREATE INDEX brain_tool_search_seen_at ON brain_tool_search (seen_at);

-- +goose Down
DROP TABLE brain_tool_search;
DROP FUNCTION gem_tool_document(text, text, text);
DROP TEXT SEARCH CONFIGURATION gem_tool_words;
DROP TEXT SEARCH DICTIONARY gem_english_all;
