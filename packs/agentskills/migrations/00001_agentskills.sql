-- The agent skills pack's schema: memories, lore and generated images, and their search functions, with its built-
-- in skills, as the legacy migrations left them.

-- Written from pg_dump of a database the legacy migrations made (their history and reasons are in
-- sql/legacy/migrations and git log). A database made before the lines began records this migration as applied
-- without running it (gemsql.Migrate adopts it); sql/schema.sql is the schema every line leaves.

-- +goose Up

-- Functions come before the tables their bodies read, as pg_dump orders them.
SET LOCAL check_function_bodies = false;

-- +goose StatementBegin
CREATE FUNCTION gem_lore_search(search_query text, search_collection text, min_score real, max_results integer) RETURNS TABLE(rank integer, chunk_id uuid, document_id uuid, score real, coverage real, similarity real, density real, snippet text)
    LANGUAGE sql STABLE PARALLEL SAFE
    SET "pg_trgm.word_similarity_threshold" TO '0.3'
    SET enable_seqscan TO 'off'
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

-- +goose StatementBegin
CREATE FUNCTION gem_lore_search_text(context text, content text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(context, '') || E'\n' || coalesce(content, '')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_memory_document(content text, tags text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'B')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_search_any(query text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT replace(plainto_tsquery('english'::regconfig, coalesce(query, ''))::text, ' & ', ' | ')::tsquery
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_search_coverage(doc tsvector, terms tsquery[]) RETURNS real
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(CASE WHEN b.body @@ t THEN 1.0 WHEN doc @@ t THEN 0.5 ELSE 0 END)::real
                    / nullif(cardinality(terms), 0), 0)
    FROM (SELECT ts_filter(doc, '{b,c,d}') AS body) AS b, unnest(terms) AS t
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gem_search_terms(query text) RETURNS tsquery[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(array_agg(DISTINCT t::tsquery), '{}')
    FROM unnest(string_to_array(nullif(plainto_tsquery('english'::regconfig, coalesce(query, ''))::text, ''), ' & ')) AS t
$$;
-- +goose StatementEnd

CREATE TABLE agent_memories (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    agent text NOT NULL,
    user_id text NOT NULL,
    kind text DEFAULT 'note'::text NOT NULL,
    content text NOT NULL,
    content_key text GENERATED ALWAYS AS (md5(lower(regexp_replace(btrim(content), '\s+'::text, ' '::text, 'g'::text)))) STORED,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    importance double precision DEFAULT 0.5 NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (gem_memory_document(content, tags)) STORED,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT agent_memories_agent_check CHECK (((agent <> ''::text) AND (length(agent) <= 200))),
    CONSTRAINT agent_memories_content_check CHECK (((btrim(content) <> ''::text) AND (length(content) <= 4000))),
    CONSTRAINT agent_memories_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT agent_memories_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_]{0,39}$'::text)),
    CONSTRAINT agent_memories_tags_check CHECK ((cardinality(tags) <= 20)),
    CONSTRAINT agent_memories_user_id_check CHECK (((user_id <> ''::text) AND (length(user_id) <= 200)))
);

CREATE TABLE generated_images (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    request_id text NOT NULL,
    agent text,
    prompt text NOT NULL,
    revised_prompt text,
    model text NOT NULL,
    size text,
    ordinal smallint NOT NULL,
    url text,
    mime_type text,
    data bytea,
    bytes integer GENERATED ALWAYS AS (octet_length(data)) STORED,
    sha256 text GENERATED ALWAYS AS (encode(sha256(data), 'hex'::text)) STORED,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT generated_images_data_or_url CHECK (((data IS NOT NULL) OR (url IS NOT NULL))),
    CONSTRAINT generated_images_model_check CHECK ((model <> ''::text)),
    CONSTRAINT generated_images_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT generated_images_prompt_check CHECK ((prompt <> ''::text)),
    CONSTRAINT generated_images_request_id_check CHECK (((request_id <> ''::text) AND (length(request_id) <= 200)))
);

CREATE TABLE lore_chunks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    document_id uuid NOT NULL,
    ordinal integer NOT NULL,
    context text DEFAULT ''::text NOT NULL,
    content text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS ((setweight(to_tsvector('english'::regconfig, context), 'A'::"char") || setweight(to_tsvector('english'::regconfig, content), 'B'::"char"))) STORED,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lore_chunks_content_check CHECK ((content <> ''::text)),
    CONSTRAINT lore_chunks_context_check CHECK ((length(context) <= 2000)),
    CONSTRAINT lore_chunks_ordinal_check CHECK ((ordinal >= 0))
);

CREATE TABLE lore_documents (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    collection text DEFAULT 'default'::text NOT NULL,
    source text NOT NULL,
    title text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    content_hash text NOT NULL,
    chars integer NOT NULL,
    chunk_chars integer NOT NULL,
    overlap_chars integer NOT NULL,
    chunk_count integer DEFAULT 0 NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    created_by_call uuid DEFAULT gem_current_call(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lore_documents_chars_check CHECK ((chars >= 0)),
    CONSTRAINT lore_documents_check CHECK (((overlap_chars >= 0) AND (overlap_chars < chunk_chars))),
    CONSTRAINT lore_documents_chunk_chars_check CHECK ((chunk_chars > 0)),
    CONSTRAINT lore_documents_chunk_count_check CHECK ((chunk_count >= 0)),
    CONSTRAINT lore_documents_collection_check CHECK ((collection ~ '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$'::text)),
    CONSTRAINT lore_documents_content_hash_check CHECK ((content_hash ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT lore_documents_metadata_check CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT lore_documents_source_check CHECK (((source <> ''::text) AND (length(source) <= 1000))),
    CONSTRAINT lore_documents_title_check CHECK (((btrim(title) <> ''::text) AND (length(title) <= 500))),
    CONSTRAINT lore_documents_version_check CHECK ((version >= 1))
);

ALTER TABLE ONLY agent_memories
    ADD CONSTRAINT agent_memories_one_per_content UNIQUE (agent, user_id, kind, content_key);

ALTER TABLE ONLY agent_memories
    ADD CONSTRAINT agent_memories_pkey PRIMARY KEY (id);

ALTER TABLE ONLY generated_images
    ADD CONSTRAINT generated_images_pkey PRIMARY KEY (id);

ALTER TABLE ONLY lore_chunks
    ADD CONSTRAINT lore_chunks_one_per_ordinal UNIQUE (document_id, ordinal);

ALTER TABLE ONLY lore_chunks
    ADD CONSTRAINT lore_chunks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY lore_documents
    ADD CONSTRAINT lore_documents_one_per_source UNIQUE (collection, source);

ALTER TABLE ONLY lore_documents
    ADD CONSTRAINT lore_documents_pkey PRIMARY KEY (id);

CREATE INDEX agent_memories_recent ON agent_memories USING btree (agent, user_id, updated_at DESC);

CREATE INDEX agent_memories_search ON agent_memories USING gin (tsv) WITH (fastupdate=off);

CREATE INDEX agent_memories_trgm ON agent_memories USING gin (content gin_trgm_ops) WITH (fastupdate=off);

CREATE INDEX generated_images_created_at ON generated_images USING btree (created_at DESC);

CREATE INDEX generated_images_request ON generated_images USING btree (request_id);

CREATE INDEX lore_chunks_search ON lore_chunks USING gin (tsv) WITH (fastupdate=off);

CREATE INDEX lore_chunks_trgm ON lore_chunks USING gin (gem_lore_search_text(context, content) gin_trgm_ops) WITH (fastupdate=off);

CREATE INDEX lore_documents_updated_at ON lore_documents USING btree (updated_at DESC);

CREATE TRIGGER agent_memories_capture_write AFTER INSERT OR DELETE OR UPDATE ON agent_memories FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER generated_images_capture_write AFTER INSERT OR DELETE OR UPDATE ON generated_images FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER lore_chunks_capture_write AFTER INSERT OR DELETE OR UPDATE ON lore_chunks FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

CREATE TRIGGER lore_documents_capture_write AFTER INSERT OR DELETE OR UPDATE ON lore_documents FOR EACH ROW EXECUTE FUNCTION gem_capture_write();

ALTER TABLE ONLY lore_chunks
    ADD CONSTRAINT lore_chunks_document_id_fkey FOREIGN KEY (document_id) REFERENCES lore_documents(id) ON DELETE CASCADE;

-- The built-in skills of the pack.

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'images', 'Image generation', 'agent', 't', '{image.generate}',
    'Generate images from a description.',
    'Generating an image costs money and is never retried: ask before generating, and describe exactly what you want.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'lore', 'Knowledge', 'agent', 't', '{lore.query,lore.ingest}',
    'Search the knowledge base (and add documents to it).',
    'Answer questions about the world or the business from the knowledge base: query it, and cite the source of what you use. If nothing relevant comes back, say you do not know rather than guessing.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'memory', 'Memory', 'agent', 't', '{memory.store,memory.recall}',
    'Remember facts about the people the agent talks to, and recall them.',
    'Store short facts worth keeping about the user (preferences, promises, events) with a kind and tags. Recall before answering questions about the past. Never store secrets such as passwords or card numbers.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'sentiment', 'Sentiment', 'agent', 't', '{sentiment.analyze}',
    'Read the tone of a message.',
    'Use sentiment analysis on customer messages that may be complaints, so unhappy customers are noticed and followed up.');

INSERT INTO skills (slug, name, category, is_builtin, tools, description, instructions) VALUES (
    'web-research', 'Web research', 'agent', 't', '{web.search}',
    'Search the web.',
    'Search the web for current facts (prices, regulations, weather, suppliers). Cite the pages you used.');
