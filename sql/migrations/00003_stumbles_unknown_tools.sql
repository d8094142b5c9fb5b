-- Names no tool has are one row per agent on the stumbles page, "(unknown)", with the names tried: a model that
-- makes up a new name each time must not add a row each time (the metric already labels them so), and the
-- names say which tool people's requests made it expect. The brain's own tools refused are not counted as
-- tools, and a search names only a tool that exists, as the metric (gem_brain_tool_stumbles_total) does.

-- +goose Up

DROP FUNCTION brain_tool_stumbles(timestamp with time zone, timestamp with time zone, text);

-- The brain's own tools (search_tools, describe_tool, the skills', run_code) refused are no attempt at a tool:
-- a describe_tool of a made-up name was counted as a call of a tool named describe_tool. A search with no
-- call names the last tool a describe_tool described, one that exists (a made-up name was a row of its own),
-- as the metric does.
CREATE OR REPLACE VIEW brain_tool_attempts AS
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
    AND ((e.error ->> 'code'::text) = ANY (ARRAY['validation_error'::text, 'unknown_tool'::text, 'tool_not_enabled'::text]))
    -- The brain's own tools are no tool of the registry: a describe_tool of a name no tool has is the search's.
    AND (t.tool <> ALL (ARRAY['search_tools'::text, 'describe_tool'::text, 'load_skill'::text, 'read_skill_file'::text, 'run_code'::text])))
UNION ALL
 SELECT run.created_at AS at,
    run.id AS run_id,
    run.agent,
    (array_agg(replace((gem_jsonb_or_null((tc.value ->> 'arguments'::text)) ->> 'name'::text), '__'::text, '.'::text) ORDER BY a.id DESC, tc.ordinality DESC)
        FILTER (WHERE ((tc.value ->> 'name'::text) = 'describe_tool'::text) AND (answer.status = 'succeeded'::text)))[1] AS tool,
    NULL::uuid AS call_id,
    'search_no_call'::text AS reason,
    NULL::text AS property,
    (array_agg((gem_jsonb_or_null((tc.value ->> 'arguments'::text)) ->> 'query'::text) ORDER BY a.id DESC, tc.ordinality DESC)
        FILTER (WHERE ((tc.value ->> 'name'::text) = 'search_tools'::text)))[1] AS query,
    run.requested_by,
    run.approved_by
   FROM ((brain_runs run
     JOIN agent_messages a ON (((a.run_id = run.id) AND (a.role = 'assistant'::text) AND (a.tool_calls IS NOT NULL))))
     CROSS JOIN LATERAL jsonb_array_elements(a.tool_calls) WITH ORDINALITY tc(value, ordinality)
     -- A describe_tool's answer: the tool is the last one described that exists, not a name made up.
     LEFT JOIN LATERAL ( SELECT (gem_jsonb_or_null(d.content) ->> 'status'::text) AS status
           FROM agent_messages d
          WHERE ((d.run_id = run.id) AND (d.role = 'tool'::text) AND (d.tool_call_id = (tc.value ->> 'id'::text)))
         LIMIT 1) answer ON (true))
  WHERE ((run.mode = 'chat'::text) AND (run.status = 'completed'::text) AND (cardinality(run.call_ids) = 0)
    AND ((tc.value ->> 'name'::text) = ANY (ARRAY['search_tools'::text, 'describe_tool'::text])))
  GROUP BY run.id, run.created_at, run.agent, run.requested_by, run.approved_by
  -- A run whose last search answered that no tool fits made no call because none fits: not a stumble.
  HAVING NOT EXISTS (SELECT 1 FROM agent_messages r
      WHERE r.run_id = run.id AND r.role = 'tool'
        AND r.tool_call_id = (array_agg(tc.value ->> 'id'::text ORDER BY a.id DESC, tc.ordinality DESC))[1]
        AND (gem_jsonb_or_null(r.content) -> 'result'::text ->> 'fits'::text) = 'false');


-- +goose StatementBegin
-- brain_tool_stumbles ranks tools and agents by how often their attempts stumbled between since and until: a
-- function rather than a view, so the window applies to the attempts before they are counted (a view of the
-- counts could only be filtered after). viewer keeps to the attempts of what that caller made or approved
-- ('' for everyone's). Each reason has its count and up to three example runs, the most recent first. Calls of
-- a tool that does not exist (unknown_tool) are one row per agent, tool '(unknown)', with up to five of the
-- names tried in unknown_names.
CREATE FUNCTION brain_tool_stumbles(since timestamp with time zone, until timestamp with time zone DEFAULT now(), viewer text DEFAULT ''::text)
    RETURNS TABLE(tool text, agent text, calls bigint, stumbles bigint, stumble_rate numeric,
        validation_errors bigint, validation_property text, validation_runs uuid[],
        unknown_tool bigint, unknown_tool_runs uuid[], unknown_names text[],
        tool_not_enabled bigint, tool_not_enabled_runs uuid[],
        searches_no_call bigint, search_runs uuid[])
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN a.reason = 'unknown_tool' THEN '(unknown)' ELSE coalesce(a.tool, '') END AS tool,
        coalesce(a.agent, '') AS agent,
        count(*) FILTER (WHERE a.reason IS DISTINCT FROM 'search_no_call') AS calls,
        count(a.reason) AS stumbles,
        round(count(a.reason)::numeric / count(*), 3) AS stumble_rate,
        count(*) FILTER (WHERE a.reason = 'validation_error') AS validation_errors,
        mode() WITHIN GROUP (ORDER BY a.property) AS validation_property,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'validation_error' AND a.run_id IS NOT NULL))[1:3],
        count(*) FILTER (WHERE a.reason = 'unknown_tool') AS unknown_tool,
        (array_agg(a.run_id ORDER BY a.at DESC) FILTER (WHERE a.reason = 'unknown_tool' AND a.run_id IS NOT NULL))[1:3],
        (array_agg(DISTINCT a.tool) FILTER (WHERE a.reason = 'unknown_tool' AND a.tool IS NOT NULL))[1:5] AS unknown_names,
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

-- +goose Down

DROP FUNCTION brain_tool_stumbles(timestamp with time zone, timestamp with time zone, text);

CREATE OR REPLACE VIEW brain_tool_attempts AS
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


-- +goose StatementBegin
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
