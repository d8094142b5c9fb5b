-- GIN indexes on tables that tools write call by call insert into the index itself, not into its pending
-- list. With the pending list (fastupdate, PostgreSQL's default) every insert appends to one list under the
-- index's metapage lock, so concurrent batches take turns there, and the insert that fills the list
-- (gin_pending_list_limit, 4 MB) merges it into the index before its call can commit: a stall for that call.
-- Measured with make bench's several-executors scenario (os.create_note: two GIN indexes on os_notes), four
-- executors drained at 0.69-0.84x of one with the pending list and 0.91x without; two at 0.84x and 1.01x
-- (docs/benchmarks.md#several-executors-2026-11-24). River's own indexes on river_job are River's.

-- +goose Up
ALTER INDEX os_notes_search SET (fastupdate = off);
ALTER INDEX os_notes_entity_refs SET (fastupdate = off);
ALTER INDEX agent_memories_search SET (fastupdate = off);
ALTER INDEX agent_memories_trgm SET (fastupdate = off);
ALTER INDEX lore_chunks_search SET (fastupdate = off);
ALTER INDEX lore_chunks_trgm SET (fastupdate = off);
ALTER INDEX media_assets_tags SET (fastupdate = off);
ALTER INDEX brain_tool_search_name_words SET (fastupdate = off);
ALTER INDEX brain_tool_search_document SET (fastupdate = off);

-- +goose Down
ALTER INDEX os_notes_search RESET (fastupdate);
ALTER INDEX os_notes_entity_refs RESET (fastupdate);
ALTER INDEX agent_memories_search RESET (fastupdate);
ALTER INDEX agent_memories_trgm RESET (fastupdate);
ALTER INDEX lore_chunks_search RESET (fastupdate);
ALTER INDEX lore_chunks_trgm RESET (fastupdate);
ALTER INDEX media_assets_tags RESET (fastupdate);
ALTER INDEX brain_tool_search_name_words RESET (fastupdate);
ALTER INDEX brain_tool_search_document RESET (fastupdate);
