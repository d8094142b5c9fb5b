-- 1. One lead per phone number however it is typed. leads_one_per_phone kept one lead per string of digits,
-- so "+61 499 000 111" (+61499000111) made a second lead beside "0499 000 111" (0499000111). A lead is now
-- keyed by its number in E.164 (phone_e164), which the executor works out with libphonenumber in its region
-- (GEM_PHONE_REGION, AU by default); phone keeps what was typed, for people.
--
-- Rows already stored are left without a key, on purpose: a number typed without a country code is in
-- whatever region the executor reads numbers in, which the database cannot know (0412 345 678 is +61412345678
-- in Australia and a different number in New Zealand), and even a number typed with + is only E.164 once
-- libphonenumber has read it (+61 0412 ... drops the 0, Italian numbers keep theirs). Such rows are found
-- by their digits in every way the number is written (gemsql.LeadByPhoneSQL, using the index below), so
-- creating the lead again in any typing returns it; the HighLevel sync keys a lead when its contact brings
-- the number. Leads already doubled by the old key stay two rows; the older one is the one found.
--
-- 2. max_attempts out of range failed inside River's job insert ("max_attempts_is_positive", from the
-- enqueue trigger, which runs before the table's own check). A trigger that runs first names the range.
-- (A number beyond smallint is refused by PostgreSQL before any trigger: "smallint out of range".)
--
-- 3. core_tool_stats' percentiles printed as 2.1660000000000004: rounded to 2 decimals like avg_ms (the
-- column types stay, so the view is replaced in place and keeps its grants).

-- +goose Up
ALTER TABLE leads ADD COLUMN phone_e164 text CONSTRAINT leads_phone_e164_is_e164 CHECK (phone_e164 ~ '^\+[1-9][0-9]{3,14}$');
ALTER TABLE leads ADD CONSTRAINT leads_one_per_number UNIQUE (phone_e164);
ALTER TABLE leads DROP CONSTRAINT leads_one_per_phone;
CREATE INDEX leads_phone_digits_unkeyed ON leads (phone_digits) WHERE phone_e164 IS NULL;
COMMENT ON COLUMN leads.phone IS 'the phone number as typed';
COMMENT ON COLUMN leads.phone_e164 IS 'the phone number in E.164, one lead per number; null for leads stored before 00039 (found by phone_digits)';

-- +goose StatementBegin
CREATE FUNCTION gem_check_max_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.max_attempts NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'max_attempts must be between 1 and 100, not %', NEW.max_attempts
            USING ERRCODE = 'check_violation', TABLE = 'core_tool_calls', COLUMN = 'max_attempts',
                  CONSTRAINT = 'core_tool_calls_max_attempts_check',
                  HINT = 'max_attempts is how many times the call may be run (5 when left out)';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
-- Before the enqueue trigger (triggers fire in name order) and before the uuid check.
CREATE TRIGGER core_tool_calls_a_max_attempts BEFORE INSERT OR UPDATE OF max_attempts ON core_tool_calls
    FOR EACH ROW EXECUTE FUNCTION gem_check_max_attempts();

CREATE OR REPLACE VIEW core_tool_stats AS
SELECT tool_name,
       count(*)                                                        AS calls,
       count(*) FILTER (WHERE status = 'succeeded')                    AS succeeded,
       count(*) FILTER (WHERE status = 'failed')                       AS failed,
       count(*) FILTER (WHERE status = 'not_configured')               AS not_configured,
       count(*) FILTER (WHERE idempotency_hit)                         AS idempotency_hits,
       round(avg(duration_ms)::numeric, 2)                             AS avg_ms,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms))::numeric, 2)::double precision  AS p50_ms,
       round((percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms))::numeric, 2)::double precision AS p95_ms,
       round((percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms))::numeric, 2)::double precision AS p99_ms,
       max(finished_at)                                                AS last_finished_at
FROM core_tool_receipts
WHERE finished_at > now() - interval '24 hours'
GROUP BY tool_name;

-- +goose Down
CREATE OR REPLACE VIEW core_tool_stats AS
SELECT tool_name,
       count(*)                                                        AS calls,
       count(*) FILTER (WHERE status = 'succeeded')                    AS succeeded,
       count(*) FILTER (WHERE status = 'failed')                       AS failed,
       count(*) FILTER (WHERE status = 'not_configured')               AS not_configured,
       count(*) FILTER (WHERE idempotency_hit)                         AS idempotency_hits,
       round(avg(duration_ms)::numeric, 2)                             AS avg_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)        AS p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)       AS p95_ms,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)       AS p99_ms,
       max(finished_at)                                                AS last_finished_at
FROM core_tool_receipts
WHERE finished_at > now() - interval '24 hours'
GROUP BY tool_name;
DROP TRIGGER core_tool_calls_a_max_attempts ON core_tool_calls;
DROP FUNCTION gem_check_max_attempts();
DROP INDEX leads_phone_digits_unkeyed;
ALTER TABLE leads ADD CONSTRAINT leads_one_per_phone UNIQUE (phone_digits);
ALTER TABLE leads DROP COLUMN phone_e164;
