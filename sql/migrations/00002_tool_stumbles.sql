-- Where agents stumble (docs/evals.md#where-agents-stumble-from-production): every attempt an agent made at a
-- tool, and the function that ranks tools and agents by how often those attempts stumbled over a window.

-- +goose Up

-- +goose StatementBegin
-- gem_jsonb_or_null reads text that should be JSON (a chat's tool message), or NULL when it is not: a message
-- scrubbed of a secret or cut short must not make a whole audit query fail.
CREATE FUNCTION gem_jsonb_or_null(t text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
BEGIN
    RETURN t::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- One row per attempt an agent made at a tool, and per chat run that searched for tools and made no call.
-- at is the call's creation, or its run's for what a chat's messages record (so a window on at reads the runs
-- of that window by their index, not every message). reason is NULL for an attempt that did not stumble, else validation_error, unknown_tool, tool_not_enabled
-- or search_no_call; property is the first violation's JSON pointer for validation_error; query is the last
-- search_tools query of a search_no_call run (a turn that completed, and whose last search did not answer that
-- no tool fits: one that failed, the model's provider down, or that was told no tool fits, did not stumble). Chat runs refuse a call the agent may not make, or whose
-- arguments do not match the schema, before any call exists: those are read from the tool message the
-- agent got back (agent_messages), the calls that were made from their receipts.
CREATE VIEW brain_tool_attempts AS
 SELECT c.created_at AS at,
    c.run_id,
    c.agent,
    c.tool_name AS tool,
    c.id AS call_id,
        CASE
            WHEN (r.error_code = ANY (ARRAY['validation_error'::text, 'unknown_tool'::text, 'tool_not_enabled'::text])) THEN r.error_code
            ELSE NULL::text
        END AS reason,
        CASE
            WHEN (r.error_code = 'validation_error'::text) THEN (r.error #>> '{details,violations,0,path}'::text[])
            ELSE NULL::text
        END AS property,
    NULL::text AS query,
    c.requested_by,
    c.approved_by
   FROM (core_tool_calls c
     LEFT JOIN core_tool_receipts r ON (((r.call_id = c.id) AND (c.status <> 'queued'::text))))
  WHERE (c.agent IS NOT NULL)
UNION ALL
 SELECT run.created_at AS at,
    m.run_id,
    run.agent,
    t.tool,
    NULL::uuid AS call_id,
    (e.error ->> 'code'::text) AS reason,
    (e.error #>> '{details,violations,0,path}'::text[]) AS property,
    NULL::text AS query,
    run.requested_by,
    run.approved_by
   FROM (((agent_messages m
     JOIN brain_runs run ON ((run.id = m.run_id)))
     CROSS JOIN LATERAL ( SELECT (gem_jsonb_or_null(m.content) -> 'error'::text) AS error) e)
     CROSS JOIN LATERAL ( SELECT replace((tc.value ->> 'name'::text), '__'::text, '.'::text) AS tool
           FROM agent_messages a,
            LATERAL jsonb_array_elements(a.tool_calls) tc(value)
          WHERE ((a.run_id = m.run_id) AND (a.role = 'assistant'::text) AND (a.id < m.id) AND ((tc.value ->> 'id'::text) = m.tool_call_id))
          ORDER BY a.id DESC
         LIMIT 1) t)
  WHERE ((m.role = 'tool'::text) AND (m.call_id IS NULL) AND (m.content ~~ '{"error":{"code":%'::text)
    AND ((e.error ->> 'code'::text) = ANY (ARRAY['validation_error'::text, 'unknown_tool'::text, 'tool_not_enabled'::text])))
UNION ALL
 SELECT run.created_at AS at,
    run.id AS run_id,
    run.agent,
    (array_agg(replace((gem_jsonb_or_null((tc.value ->> 'arguments'::text)) ->> 'name'::text), '__'::text, '.'::text) ORDER BY a.id DESC, tc.ordinality DESC)
        FILTER (WHERE ((tc.value ->> 'name'::text) = 'describe_tool'::text)))[1] AS tool,
    NULL::uuid AS call_id,
    'search_no_call'::text AS reason,
    NULL::text AS property,
    (array_agg((gem_jsonb_or_null((tc.value ->> 'arguments'::text)) ->> 'query'::text) ORDER BY a.id DESC, tc.ordinality DESC)
        FILTER (WHERE ((tc.value ->> 'name'::text) = 'search_tools'::text)))[1] AS query,
    run.requested_by,
    run.approved_by
   FROM ((brain_runs run
     JOIN agent_messages a ON (((a.run_id = run.id) AND (a.role = 'assistant'::text) AND (a.tool_calls IS NOT NULL))))
     CROSS JOIN LATERAL jsonb_array_elements(a.tool_calls) WITH ORDINALITY tc(value, ordinality))
  WHERE ((run.mode = 'chat'::text) AND (run.status = 'completed'::text) AND (cardinality(run.call_ids) = 0)
    AND ((tc.value ->> 'name'::text) = ANY (ARRAY['search_tools'::text, 'describe_tool'::text])))
  GROUP BY run.id, run.created_at, run.agent, run.requested_by, run.approved_by
  -- A run whose last search answered that no tool fits made no call because none fits: not a stumble.
  HAVING NOT EXISTS (SELECT 1 FROM agent_messages r
      WHERE r.run_id = run.id AND r.role = 'tool'
        AND r.tool_call_id = (array_agg(tc.value ->> 'id'::text ORDER BY a.id DESC, tc.ordinality DESC))[1]
        AND (gem_jsonb_or_null(r.content) -> 'result'::text ->> 'fits'::text) = 'false');

COMMENT ON VIEW brain_tool_attempts IS 'every attempt an agent made at a tool (calls and calls a chat refused), and chat runs that searched for tools and made no call; reason says how one stumbled';

-- +goose StatementBegin
-- brain_tool_stumbles ranks tools and agents by how often their attempts stumbled between since and until: a
-- function rather than a view, so the window applies to the attempts before they are counted (a view of the
-- counts could only be filtered after). viewer keeps to the attempts of what that caller made or approved
-- ('' for everyone's). Each reason has its count and up to three example runs, the most recent first.
CREATE FUNCTION brain_tool_stumbles(since timestamp with time zone, until timestamp with time zone DEFAULT now(), viewer text DEFAULT ''::text)
    RETURNS TABLE(tool text, agent text, calls bigint, stumbles bigint, stumble_rate numeric,
        validation_errors bigint, validation_property text, validation_runs uuid[],
        unknown_tool bigint, unknown_tool_runs uuid[],
        tool_not_enabled bigint, tool_not_enabled_runs uuid[],
        searches_no_call bigint, search_runs uuid[])
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(a.tool, '') AS tool,
        coalesce(a.agent, '') AS agent,
        count(*) FILTER (WHERE a.reason IS DISTINCT FROM 'search_no_call') AS calls,
        count(a.reason) AS stumbles,
        round(count(a.reason)::numeric / count(*), 3) AS stumble_rate,
        count(*) FILTER (WHERE a.reason = 'validation_error') AS validation_errors,
        mode() WITHIN GROUP (ORDER BY a.property) AS validation_property,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'validation_error' AND a.run_id IS NOT NULL))[1:3],
        count(*) FILTER (WHERE a.reason = 'unknown_tool') AS unknown_tool,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'unknown_tool' AND a.run_id IS NOT NULL))[1:3],
        count(*) FILTER (WHERE a.reason = 'tool_not_enabled') AS tool_not_enabled,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'tool_not_enabled' AND a.run_id IS NOT NULL))[1:3],
        count(*) FILTER (WHERE a.reason = 'search_no_call') AS searches_no_call,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'search_no_call'))[1:3]
    FROM brain_tool_attempts a
    WHERE a.at >= since AND a.at < until
      AND (viewer = '' OR a.requested_by = viewer OR a.approved_by = viewer)
    GROUP BY 1, 2
    ORDER BY stumble_rate DESC, stumbles DESC, tool, agent
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gem_auditor') THEN
        -- Not query: it is the model's words for a person's request, read from the chat, which the auditor
        -- does not read.
        GRANT SELECT (at, run_id, agent, tool, call_id, reason, property, requested_by, approved_by)
            ON brain_tool_attempts TO gem_auditor;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION brain_tool_stumbles(timestamp with time zone, timestamp with time zone, text);
DROP VIEW brain_tool_attempts;
DROP FUNCTION gem_jsonb_or_null(text);
