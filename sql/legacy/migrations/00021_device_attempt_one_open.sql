-- +goose Up
-- A call is with at most one device at a time. Two runs of one call may wait on it together — River takes a
-- job that has run past its rescue deadline up again while the first run still waits for a slow device — and
-- when the call's attempt ends, both may set out to hand it out again. The second insert is refused here,
-- and that run waits on the first's attempt instead of giving the call to a second device.
CREATE UNIQUE INDEX core_device_attempts_one_open ON core_device_attempts (call_id) WHERE state IN ('queued', 'sent');

-- +goose Down
DROP INDEX core_device_attempts_one_open;
