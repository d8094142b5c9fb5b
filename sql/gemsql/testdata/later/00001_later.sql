-- A line that began after the legacy migrations (TestLinesMadeLaterRunOnALegacyDatabase).

-- +goose Up
CREATE TABLE later_things (id bigint PRIMARY KEY);
