-- The studio's (the web console at /studio) login sessions. The cookie holds a random session id; only its
-- SHA-256 is stored, with the caller it acts as and the CSRF token its forms must send. A session lives
-- until expires_at (GEM_STUDIO_SESSION_TTL), logout, or its caller's removal; a revoked caller's session
-- stops working at once, as its token does.

-- +goose Up
CREATE TABLE brain_studio_sessions (
    id_sha256  bytea       PRIMARY KEY,
    caller     text        NOT NULL REFERENCES core_callers (name) ON DELETE CASCADE,
    csrf_token text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX brain_studio_sessions_expires_at ON brain_studio_sessions (expires_at);

-- What each executor can run for real, written when it starts: {"tool": {"required_env": [...],
-- "missing_env": [...]}} for every tool it has a handler for. The studio's registry page reads it.
ALTER TABLE core_executors ADD COLUMN tools jsonb NOT NULL DEFAULT '{}';

-- The calls answered from another's receipt (idempotency hits), found from the original: the studio's call
-- page lists them. It also spares deleting a call a scan of every receipt (the foreign key's SET NULL).
CREATE INDEX core_tool_receipts_idempotency_of ON core_tool_receipts (idempotency_of) WHERE idempotency_of IS NOT NULL;

-- +goose Down
DROP INDEX core_tool_receipts_idempotency_of;
ALTER TABLE core_executors DROP COLUMN tools;
DROP TABLE brain_studio_sessions;
