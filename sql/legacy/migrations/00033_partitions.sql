-- History partitioned by month (docs/retention.md): calls, receipts and the brain's runs, turns and programs
-- become range-partitioned tables, one partition per calendar month (UTC), so that old months are archived
-- and dropped whole instead of deleted row by row, and the indexes a new call touches stay the size of a
-- month rather than of all history.
--
-- Partitioned by id, not by a timestamp: ids are UUIDv7, whose first 48 bits are the Unix milliseconds when
-- they were made, so a month is a range of ids and every primary key and foreign key stays as it is (a
-- partitioned table's unique keys must contain the partition key). Receipts, turns and programs are
-- partitioned by their call's or run's id with the same bounds, so a call and its receipt live and go in
-- the same month. Beside the months there are two partitions for rows made before this migration: _p_before
-- (every id below the first month) and _p_nonv7 (ids from 0x02…, which no UUIDv7 reaches before 2039-09:
-- random UUIDv4 ids of old rows). New rows must have UUIDv7 ids (the trigger says so); the default is one.
--
-- There is no DEFAULT partition: it would forbid DETACH PARTITION … CONCURRENTLY, which retention needs so
-- that dropping a month never blocks inserts while PostgreSQL checks the foreign keys (about 1 s per million
-- calls). Months are created three ahead, by this migration and by every executor (hourly); an insert for a
-- month that has no partition fails with a clear error instead of landing somewhere unretainable.

-- +goose Up

-- +goose StatementBegin
-- gem_uuid_v7 is a new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then gen_random_uuid's random bits
-- with the version set to 7 (the variant bits are already right). PostgreSQL 18 has uuidv7(); 15 does not.
CREATE FUNCTION gem_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(overlay(set_bit(set_bit(uuid_send(gen_random_uuid()), 52, 1), 53, 1)
                          PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                          FROM 1 FOR 6), 'hex')::uuid
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_uuid_v7_floor is the smallest UUIDv7 made at `at` (to the millisecond): the bound of a month.
CREATE FUNCTION gem_uuid_v7_floor(at timestamptz) RETURNS uuid LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT encode(substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3)
                  || '\x00000000000000000000'::bytea, 'hex')::uuid
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_uuid_time is when a UUIDv7 was made (meaningless for other versions).
CREATE FUNCTION gem_uuid_time(id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_timestamp(('x' || left(replace(id::text, '-', ''), 12))::bit(48)::bigint / 1000.0)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_partitioned_tables lists the partitioned history tables, parents before the tables that reference
-- them (retention drops in the reverse order).
CREATE FUNCTION gem_partitioned_tables() RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY['core_tool_calls', 'core_tool_receipts', 'brain_runs', 'brain_turns', 'brain_run_programs']
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_name_partition_keys names a receipts partition's key after the parent's, so that a second receipt
-- for a call is refused naming core_tool_receipts_…_one_per_call rather than an anonymous _pkey.
CREATE FUNCTION gem_name_partition_keys(part text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF part LIKE 'core\_tool\_receipts\_p%' THEN
        EXECUTE format('ALTER INDEX %I RENAME TO %I', part || '_pkey', part || '_one_per_call');
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- gem_ensure_month creates the month's partition of every partitioned table (the month that holds `month`,
-- UTC) and says how many it created. Safe to call concurrently and repeatedly.
CREATE FUNCTION gem_ensure_month(month timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    first timestamptz := date_trunc('month', month, 'UTC');
    t text;
    part text;
    made integer := 0;
BEGIN
    -- Two executors creating the same month would otherwise race between the check and the CREATE.
    PERFORM pg_advisory_xact_lock(hashtextextended('gem.partitions', 0));
    FOREACH t IN ARRAY gem_partitioned_tables() LOOP
        part := t || '_p' || to_char(first AT TIME ZONE 'UTC', 'YYYY_MM');
        CONTINUE WHEN to_regclass(quote_ident(part)) IS NOT NULL;
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)%s', part, t,
                       gem_uuid_v7_floor(first), gem_uuid_v7_floor(first + interval '1 month'),
                       CASE WHEN t = 'core_tool_calls' THEN ' WITH (fillfactor = 80)' ELSE '' END);
        PERFORM gem_name_partition_keys(part);
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- The conversion. Every object that names the five tables (views, foreign keys in and out, indexes,
-- triggers, grants) is read from the catalog, dropped, and made again on the partitioned tables.
-- +goose StatementBegin
DO $$
DECLARE
    tables text[] := gem_partitioned_tables();
    keys   jsonb := '{"core_tool_calls": "id", "core_tool_receipts": "call_id", "brain_runs": "id",
                      "brain_turns": "run_id", "brain_run_programs": "run_id"}';
    pkeys  jsonb := '{"core_tool_calls": "CONSTRAINT core_tool_calls_pkey PRIMARY KEY (id)",
                      "core_tool_receipts": "CONSTRAINT core_tool_receipts_one_per_call PRIMARY KEY (call_id)",
                      "brain_runs": "CONSTRAINT brain_runs_pkey PRIMARY KEY (id)",
                      "brain_turns": "CONSTRAINT brain_turns_pkey PRIMARY KEY (run_id, id)",
                      "brain_run_programs": "CONSTRAINT brain_run_programs_pkey PRIMARY KEY (run_id, id)"}';
    rels   oid[];
    t      text;
    s      text;
    m      timestamptz;
    first  timestamptz := date_trunc('month', now(), 'UTC');
BEGIN
    SELECT array_agg(to_regclass(quote_ident(x))::oid) INTO rels FROM unnest(tables) x;
    CREATE TEMP TABLE gem_redo (ord serial, stmt text) ON COMMIT DROP;

    -- Views that read the tables, with their grants.
    CREATE TEMP TABLE gem_views ON COMMIT DROP AS
        SELECT DISTINCT v.oid, v.relname FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
        JOIN pg_class v ON v.oid = r.ev_class
        WHERE d.refobjid = ANY (rels) AND v.oid <> ALL (rels) AND v.relkind = 'v';
    IF EXISTS (SELECT 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
               WHERE d.refobjid IN (SELECT oid FROM gem_views) AND r.ev_class NOT IN (SELECT oid FROM gem_views)) THEN
        RAISE EXCEPTION 'a view reads one of the views over %; this migration does not remake it', tables;
    END IF;
    INSERT INTO gem_redo (stmt)
        SELECT format('CREATE VIEW %I AS %s', relname, pg_get_viewdef(oid)) FROM gem_views ORDER BY oid;
    INSERT INTO gem_redo (stmt)
        SELECT format('GRANT %s ON %I TO %s', a.privilege_type, v.relname,
                      CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END)
        FROM gem_views g JOIN pg_class v ON v.oid = g.oid, aclexplode(v.relacl) a
        WHERE a.grantee <> v.relowner;

    -- Grants on the tables and their columns.
    INSERT INTO gem_redo (stmt)
        SELECT format('GRANT %s ON %I TO %s', a.privilege_type, c.relname,
                      CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END)
        FROM pg_class c, aclexplode(c.relacl) a
        WHERE c.oid = ANY (rels) AND a.grantee <> c.relowner;
    INSERT INTO gem_redo (stmt)
        SELECT format('GRANT %s (%I) ON %I TO %s', a.privilege_type, att.attname, c.relname,
                      CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END)
        FROM pg_class c JOIN pg_attribute att ON att.attrelid = c.oid, aclexplode(att.attacl) a
        WHERE c.oid = ANY (rels) AND att.attacl IS NOT NULL AND a.grantee <> c.relowner;

    -- Indexes other than the primary keys (made anew above, in pkeys).
    INSERT INTO gem_redo (stmt)
        SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
        WHERE i.indrelid = ANY (rels) AND NOT i.indisprimary
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u'))
        ORDER BY i.indexrelid;
    -- Receipts lose their primary key on id (it cannot include call_id); the audit pages that list by id
    -- keep an index.
    INSERT INTO gem_redo (stmt) VALUES ('CREATE INDEX core_tool_receipts_id ON core_tool_receipts (id)');

    -- Triggers.
    INSERT INTO gem_redo (stmt)
        SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = ANY (rels) AND NOT tgisinternal ORDER BY oid;

    -- Foreign keys into the tables and out of them.
    INSERT INTO gem_redo (stmt)
        SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
                      pg_get_constraintdef(c.oid))
        FROM pg_constraint c
        WHERE c.contype = 'f' AND (c.confrelid = ANY (rels) OR c.conrelid = ANY (rels))
        ORDER BY c.oid;
    FOR s IN SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', c.conrelid::regclass, c.conname)
             FROM pg_constraint c WHERE c.contype = 'f' AND (c.confrelid = ANY (rels) OR c.conrelid = ANY (rels)) LOOP
        EXECUTE s;
    END LOOP;
    FOR s IN SELECT format('DROP VIEW %I', relname) FROM gem_views LOOP
        EXECUTE s;
    END LOOP;

    -- The tables: the old one is renamed, a partitioned copy of its columns made, the rows moved.
    FOREACH t IN ARRAY tables LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_unpartitioned');
        -- Their names go to the new table's keys.
        FOR s IN SELECT format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_unpartitioned', conname)
                 FROM pg_constraint WHERE conrelid = to_regclass(quote_ident(t || '_unpartitioned')) AND contype IN ('p', 'u') LOOP
            EXECUTE s;
        END LOOP;
        IF t IN ('core_tool_receipts', 'brain_turns', 'brain_run_programs') THEN
            EXECUTE format('ALTER SEQUENCE %I RENAME TO %I', t || '_id_seq', t || '_unpartitioned_id_seq');
        END IF;
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY
                        INCLUDING GENERATED INCLUDING COMMENTS INCLUDING STORAGE, %s) PARTITION BY RANGE (%I)',
                       t, t || '_unpartitioned', pkeys ->> t, keys ->> t);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (MINVALUE) TO (%L)%s', t || '_p_before', t,
                       gem_uuid_v7_floor(first), CASE WHEN t = 'core_tool_calls' THEN ' WITH (fillfactor = 80)' ELSE '' END);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (MAXVALUE)', t || '_p_nonv7', t,
                       '02000000-0000-0000-0000-000000000000');
        PERFORM gem_name_partition_keys(t || '_p_before');
        PERFORM gem_name_partition_keys(t || '_p_nonv7');
    END LOOP;
    FOR m IN SELECT generate_series(first, first + interval '3 months', interval '1 month') LOOP
        PERFORM gem_ensure_month(m);
    END LOOP;
    -- Old random ids whose leading bits read as a month between now and 2039 get that month's partition.
    FOR m IN SELECT DISTINCT date_trunc('month', gem_uuid_time(key), 'UTC')
             FROM (SELECT id AS key FROM core_tool_calls_unpartitioned UNION ALL SELECT id FROM brain_runs_unpartitioned) k
             WHERE key >= gem_uuid_v7_floor(first + interval '4 months') AND key < '02000000-0000-0000-0000-000000000000' LOOP
        PERFORM gem_ensure_month(m);
    END LOOP;
    FOREACH t IN ARRAY tables LOOP
        EXECUTE format('INSERT INTO %I OVERRIDING SYSTEM VALUE SELECT * FROM %I', t, t || '_unpartitioned');
        IF t IN ('core_tool_receipts', 'brain_turns', 'brain_run_programs') THEN
            EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, ''id''), coalesce((SELECT max(id) FROM %I), 0) + 1, false)',
                           t, t);
        END IF;
    END LOOP;
    FOREACH t IN ARRAY tables LOOP
        EXECUTE format('DROP TABLE %I', t || '_unpartitioned');
    END LOOP;

    FOR s IN SELECT stmt FROM gem_redo ORDER BY ord LOOP
        EXECUTE s;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- Retiring a month deletes (or clears) the rows that point at its calls and runs, and the detach checks
-- that none is left: each such column needs an index, or both scan the whole table.
CREATE INDEX IF NOT EXISTS core_idempotency_keys_call ON core_idempotency_keys (call_id);
CREATE INDEX IF NOT EXISTS agent_session_decisions_call ON agent_session_decisions (call_id);
CREATE INDEX IF NOT EXISTS integration_webhook_events_call ON integration_webhook_events (call_id) WHERE call_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS agent_messages_run ON agent_messages (run_id) WHERE run_id IS NOT NULL;

ALTER TABLE core_tool_calls ALTER COLUMN id SET DEFAULT gem_uuid_v7();
ALTER TABLE brain_runs ALTER COLUMN id SET DEFAULT gem_uuid_v7();

-- +goose StatementBegin
-- gem_require_uuid_v7 refuses a new call or run whose id is not a UUIDv7: retention keeps and drops rows
-- by the month their id was made, which a random id does not tell.
CREATE FUNCTION gem_require_uuid_v7() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF substr(NEW.id::text, 15, 1) <> '7' THEN
        RAISE EXCEPTION 'the id of a new % must be a UUIDv7, not %', TG_TABLE_NAME, NEW.id
            USING ERRCODE = 'check_violation',
                  HINT = 'leave id out (its default is gem_uuid_v7()) or make it a UUIDv7 (RFC 9562)';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- Named to fire before the enqueue trigger (triggers fire in name order): a refused call makes no job.
CREATE TRIGGER core_tool_calls_a_uuid_v7 BEFORE INSERT ON core_tool_calls
    FOR EACH ROW EXECUTE FUNCTION gem_require_uuid_v7();
CREATE TRIGGER brain_runs_a_uuid_v7 BEFORE INSERT ON brain_runs
    FOR EACH ROW EXECUTE FUNCTION gem_require_uuid_v7();

-- +goose Down
-- +goose StatementBegin
DO $$ BEGIN
    RAISE EXCEPTION 'partitioned history is not turned back into plain tables: restore a backup taken before 00033';
END $$;
-- +goose StatementEnd
