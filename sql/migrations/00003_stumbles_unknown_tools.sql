-- Names no tool has are one row per agent on the stumbles page, "(unknown)", with the names tried: a model that
-- makes up a new name each time must not add a row each time (the metric already labels them so), and the
-- names say which tool people's requests made it expect.

-- +goose Up

DROP FUNCTION brain_tool_stumbles(timestamp with time zone, timestamp with time zone, text);

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
