-- The run events' functions (00047) join and lock partitioned tables by a parameter (core_tool_calls by the
-- run's call ids, brain_run_events and brain_runs by the run's id). PL/pgSQL keeps a statement's plan, but
-- the plan cache makes a custom plan for each call while it judges a custom plan cheaper, and planning a
-- join over every partition took 0.9–2.3 ms a call, against 0.1–0.2 ms to run it: the events cost a
-- /brain/run more than all its other statements together (pg_stat_statements with track_planning,
-- docs/durable-runs.md#async-and-live). A generic plan prunes the partitions when it runs instead.

-- +goose Up
ALTER FUNCTION gem_run_events_add(uuid, text[], jsonb[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION gem_run_calls_added(uuid, uuid[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION gem_run_receipts_settled(uuid, uuid[]) SET plan_cache_mode = force_generic_plan;

-- +goose Down
ALTER FUNCTION gem_run_receipts_settled(uuid, uuid[]) RESET plan_cache_mode;
ALTER FUNCTION gem_run_calls_added(uuid, uuid[]) RESET plan_cache_mode;
ALTER FUNCTION gem_run_events_add(uuid, text[], jsonb[]) RESET plan_cache_mode;
