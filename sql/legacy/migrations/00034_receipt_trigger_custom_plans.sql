-- The receipt trigger's statements are planned for their rows (custom plans), whoever inserts receipts:
-- a cached generic plan of its UPDATE of core_tool_calls covers and locks every month's partition on each
-- batch, so its cost grew with the months kept (docs/retention.md#what-partitions-cost-and-custom-plans).
-- It holds for every connection that inserts receipts, the executor's and any other.

-- +goose Up
ALTER FUNCTION gem_receipts_inserted() SET plan_cache_mode = force_custom_plan;

-- +goose Down
ALTER FUNCTION gem_receipts_inserted() RESET plan_cache_mode;
