-- Tables of the agent skills pack (executor/agentskills): agents' memories, lore documents and their chunks,
-- and generated images. Every table carries created_by_call and the gem_capture_write trigger, so receipts
-- list what a handler wrote. Text search combines PostgreSQL full-text search (stored tsvector columns, GIN)
-- with pg_trgm trigram similarity (GIN gin_trgm_ops); docs/agent-skills-pack.md explains the formulas.

-- +goose Up

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Query helpers shared by memory.recall and lore.query. A query is plain text: its words are stemmed and
-- stop words dropped (English configuration), as plainto_tsquery does.

-- +goose StatementBegin
-- gem_search_any matches a document that contains any of the query's words (plainto_tsquery wants all of
-- them). plainto_tsquery's text form only joins quoted lexemes with " & ", so the replacement is exact.
CREATE FUNCTION gem_search_any(query text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT replace(plainto_tsquery('english'::regconfig, coalesce(query, ''))::text, ' & ', ' | ')::tsquery
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_search_terms is the query's words, one tsquery each.
CREATE FUNCTION gem_search_terms(query text) RETURNS tsquery[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT t::tsquery), '{}')
    FROM unnest(string_to_array(nullif(plainto_tsquery('english'::regconfig, coalesce(query, ''))::text, ''), ' & ')) AS t
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_search_coverage is the share (0..1) of the query's words a document contains. Documents weigh their
-- labels (a memory's tags, a chunk's title and headings) A and their text B: a word found in the text counts
-- 1, a word found only in the labels counts 1/2.
CREATE FUNCTION gem_search_coverage(doc tsvector, terms tsquery[]) RETURNS real
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(CASE WHEN b.body @@ t THEN 1.0 WHEN doc @@ t THEN 0.5 ELSE 0 END)::real
                    / nullif(cardinality(terms), 0), 0)
    FROM (SELECT ts_filter(doc, '{b,c,d}') AS body) AS b, unnest(terms) AS t
$$;
-- +goose StatementEnd

-- Memories: what an agent remembers about a user (or, with a fixed user id such as "world", in general).

-- +goose StatementBegin
-- gem_memory_document is the text a memory is searched by: its tags (weight A) and its content (weight B).
-- array_to_string is only STABLE in general, but immutable for text[], which makes it usable here.
CREATE FUNCTION gem_memory_document(content text, tags text[]) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'B')
$$;
-- +goose StatementEnd

CREATE TABLE agent_memories (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    -- The agent's slug and the user the memory is about: recall never crosses either.
    agent           text        NOT NULL CHECK (agent <> '' AND length(agent) <= 200),
    user_id         text        NOT NULL CHECK (user_id <> '' AND length(user_id) <= 200),
    kind            text        NOT NULL DEFAULT 'note' CHECK (kind ~ '^[a-z][a-z0-9_]{0,39}$'),
    content         text        NOT NULL CHECK (btrim(content) <> '' AND length(content) <= 4000),
    -- The content with case and runs of white space folded: storing the same memory again updates it.
    content_key     text        GENERATED ALWAYS AS (md5(lower(regexp_replace(btrim(content), '\s+', ' ', 'g')))) STORED,
    tags            text[]      NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 20),
    importance      double precision NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    tsv             tsvector    GENERATED ALWAYS AS (gem_memory_document(content, tags)) STORED,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- When the memory was last stored (created, or stored again): recency counts from here.
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT agent_memories_one_per_content UNIQUE (agent, user_id, kind, content_key)
);
CREATE INDEX agent_memories_recent ON agent_memories (agent, user_id, updated_at DESC);
CREATE INDEX agent_memories_search ON agent_memories USING gin (tsv);
CREATE INDEX agent_memories_trgm ON agent_memories USING gin (content gin_trgm_ops);

-- Lore: knowledge documents, one per (collection, source), split into chunks that are searched.

CREATE TABLE lore_documents (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    collection      text        NOT NULL DEFAULT 'default' CHECK (collection ~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$'),
    -- Where the document comes from (a file path, a URL, an id): re-ingesting a source replaces it.
    source          text        NOT NULL CHECK (source <> '' AND length(source) <= 1000),
    title           text        NOT NULL CHECK (btrim(title) <> '' AND length(title) <= 500),
    metadata        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    -- sha256 (hex) of everything the chunks are made from (title, text, metadata, chunking options and the
    -- chunker's version): an ingest with the same hash changes nothing.
    content_hash    text        NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    chars           integer     NOT NULL CHECK (chars >= 0),
    chunk_chars     integer     NOT NULL CHECK (chunk_chars > 0),
    overlap_chars   integer     NOT NULL CHECK (overlap_chars >= 0 AND overlap_chars < chunk_chars),
    chunk_count     integer     NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
    -- 1 when created, plus one per replacement.
    version         integer     NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT lore_documents_one_per_source UNIQUE (collection, source)
);
CREATE INDEX lore_documents_updated_at ON lore_documents (updated_at DESC);

-- +goose StatementBegin
-- gem_lore_search_text is the text a chunk's trigram similarity is measured on: its context (the document's
-- title and the headings above it) and its content.
CREATE FUNCTION gem_lore_search_text(context text, content text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(context, '') || E'\n' || coalesce(content, '')
$$;
-- +goose StatementEnd

CREATE TABLE lore_chunks (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    document_id     uuid        NOT NULL REFERENCES lore_documents (id) ON DELETE CASCADE,
    -- Position in the document, from 0.
    ordinal         integer     NOT NULL CHECK (ordinal >= 0),
    -- "Title > Heading > Subheading": where in the document the chunk is.
    context         text        NOT NULL DEFAULT '' CHECK (length(context) <= 2000),
    content         text        NOT NULL CHECK (content <> ''),
    tsv             tsvector    GENERATED ALWAYS AS (
                                    setweight(to_tsvector('english'::regconfig, context), 'A')
                                    || setweight(to_tsvector('english'::regconfig, content), 'B')) STORED,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT lore_chunks_one_per_ordinal UNIQUE (document_id, ordinal)
);
CREATE INDEX lore_chunks_search ON lore_chunks USING gin (tsv);
CREATE INDEX lore_chunks_trgm ON lore_chunks USING gin (gem_lore_search_text(context, content) gin_trgm_ops);

-- +goose StatementBegin
-- gem_lore_search ranks lore chunks for a plain-text query, best first:
--
--   score = 0.5 * coverage + 0.3 * similarity + 0.2 * density
--
-- coverage:   share of the query's words (stemmed, without stop words) the chunk contains, a word found only
--             in the title or headings counting 1/2 (full-text search, gem_search_coverage);
-- similarity: pg_trgm word_similarity of the query to the chunk's context and content, which catches
--             misspelled and partial words;
-- density:    ts_rank_cd (cover density, title and headings weigh more) scaled to 0..1 as rank / (rank + 1).
--
-- Candidates match at least one query word, or have a word similarity of 0.3 or more (the SET clause scopes
-- the threshold of the indexed <% operator to this function). Chunks scoring below min_score are dropped.
-- The planner prices word_similarity like a cheap operator and would rather scan every chunk than use the
-- trigram index (about 150 ms against 4 ms for 20,000 chunks), so the function also turns sequential scans
-- off for itself.
CREATE FUNCTION gem_lore_search(search_query text, search_collection text, min_score real, max_results integer)
RETURNS TABLE (rank integer, chunk_id uuid, document_id uuid, score real, coverage real, similarity real, density real, snippet text)
LANGUAGE sql STABLE PARALLEL SAFE
SET pg_trgm.word_similarity_threshold = 0.3
SET enable_seqscan = off
AS $$
    WITH q AS (
        SELECT gem_search_any(search_query) AS any_word, gem_search_terms(search_query) AS terms
    ), candidates AS (
        SELECT c.id, c.document_id, c.ordinal, c.content,
               gem_search_coverage(c.tsv, q.terms) AS coverage,
               word_similarity(search_query, gem_lore_search_text(c.context, c.content)) AS similarity,
               ts_rank_cd(c.tsv, q.any_word, 32) AS density
        FROM lore_chunks c
        JOIN lore_documents d ON d.id = c.document_id
        CROSS JOIN q
        WHERE (c.tsv @@ q.any_word OR search_query <% gem_lore_search_text(c.context, c.content))
          AND (search_collection IS NULL OR d.collection = search_collection)
    ), scored AS (
        SELECT k.*, (0.5 * k.coverage + 0.3 * k.similarity + 0.2 * k.density)::real AS score
        FROM candidates k
    ), top AS (
        SELECT s.*, row_number() OVER (ORDER BY s.score DESC, s.document_id, s.ordinal)::integer AS rank
        FROM scored s
        WHERE s.score >= min_score
        ORDER BY s.score DESC, s.document_id, s.ordinal
        LIMIT max_results
    )
    SELECT t.rank, t.id, t.document_id, t.score, t.coverage, t.similarity, t.density,
           ts_headline('english'::regconfig, t.content, q.any_word,
                       'MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … ", StartSel=«, StopSel=»')
    FROM top t CROSS JOIN q
    ORDER BY t.rank
$$;
-- +goose StatementEnd

-- Generated images: the assets image.generate creates. Images the provider returns as data are kept in
-- data; images it returns as a link keep only the link (providers' links expire).
CREATE TABLE generated_images (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    -- The caller's request id (image.generate's idempotency key).
    request_id      text        NOT NULL CHECK (request_id <> '' AND length(request_id) <= 200),
    -- The agent the call was made for, if any.
    agent           text,
    prompt          text        NOT NULL CHECK (prompt <> ''),
    revised_prompt  text,
    model           text        NOT NULL CHECK (model <> ''),
    size            text,
    -- Position in the request's images, from 0.
    ordinal         smallint    NOT NULL CHECK (ordinal >= 0),
    url             text,
    mime_type       text,
    data            bytea,
    bytes           integer     GENERATED ALWAYS AS (octet_length(data)) STORED,
    sha256          text        GENERATED ALWAYS AS (encode(sha256(data), 'hex')) STORED,
    created_by_call uuid        DEFAULT gem_current_call(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT generated_images_data_or_url CHECK (data IS NOT NULL OR url IS NOT NULL)
);
CREATE INDEX generated_images_request ON generated_images (request_id);
CREATE INDEX generated_images_created_at ON generated_images (created_at DESC);

CREATE TRIGGER agent_memories_capture_write AFTER INSERT OR UPDATE OR DELETE ON agent_memories
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER lore_documents_capture_write AFTER INSERT OR UPDATE OR DELETE ON lore_documents
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER lore_chunks_capture_write AFTER INSERT OR UPDATE OR DELETE ON lore_chunks
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();
CREATE TRIGGER generated_images_capture_write AFTER INSERT OR UPDATE OR DELETE ON generated_images
    FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

-- +goose Down
DROP TABLE generated_images;
DROP FUNCTION gem_lore_search(text, text, real, integer);
DROP TABLE lore_chunks;
DROP FUNCTION gem_lore_search_text(text, text);
DROP TABLE lore_documents;
DROP TABLE agent_memories;
DROP FUNCTION gem_memory_document(text, text[]);
DROP FUNCTION gem_search_coverage(tsvector, tsquery[]);
DROP FUNCTION gem_search_terms(text);
DROP FUNCTION gem_search_any(text);
-- pg_trgm stays: other schemas may use it, and dropping an extension is an administrator's decision.
