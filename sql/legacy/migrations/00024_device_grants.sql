-- What a device may do (docs/governance.md#devices): the permissions its tools may declare. A device whose
-- registration names a tool needing a permission it lacks is refused, as a mismatched contract is.

-- +goose Up
ALTER TABLE core_devices ADD COLUMN permissions text[] NOT NULL DEFAULT '{*}'
    CHECK (array_position(permissions, NULL) IS NULL AND cardinality(permissions) <= 200);

CREATE OR REPLACE VIEW core_devices_status AS
SELECT d.name, d.owner, gem_device_alive(d) AS alive, d.connected, d.hub, d.connected_at, d.disconnected_at,
       d.last_heartbeat,
       coalesce((SELECT array_agg(t.tool_name ORDER BY t.tool_name) FROM core_device_tools t WHERE t.device = d.name), '{}') AS tools,
       (SELECT count(*) FROM core_device_attempts a WHERE a.device = d.name AND a.state IN ('queued', 'sent')) AS open_attempts,
       d.permissions
FROM core_devices d;

-- +goose Down
DROP VIEW core_devices_status;
CREATE VIEW core_devices_status AS
SELECT d.name, d.owner, gem_device_alive(d) AS alive, d.connected, d.hub, d.connected_at, d.disconnected_at,
       d.last_heartbeat,
       coalesce((SELECT array_agg(t.tool_name ORDER BY t.tool_name) FROM core_device_tools t WHERE t.device = d.name), '{}') AS tools,
       (SELECT count(*) FROM core_device_attempts a WHERE a.device = d.name AND a.state IN ('queued', 'sent')) AS open_attempts
FROM core_devices d;
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_caller') THEN
        GRANT SELECT ON core_devices_status TO gem_caller;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        GRANT SELECT ON core_devices_status TO gem_auditor;
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE core_devices DROP COLUMN permissions;
