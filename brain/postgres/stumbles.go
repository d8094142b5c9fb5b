package postgres

import (
	"context"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ToolStumble is one tool's stumbles for one agent over a window (brain_tool_stumbles): its attempts, how
// many stumbled and how, with up to three example runs per reason, the most recent first.
type ToolStumble struct {
	Tool  string `json:"tool"`
	Agent string `json:"agent"`
	// Calls counts the attempts at the tool: calls made and calls refused before they existed.
	Calls    int64   `json:"calls"`
	Stumbles int64   `json:"stumbles"`
	Rate     float64 `json:"stumble_rate"`
	// Validation counts validation_error; Property is the first violation's JSON pointer most of them had.
	Validation     int64       `json:"validation_errors"`
	Property       string      `json:"validation_property,omitempty"`
	ValidationRuns []uuid.UUID `json:"validation_runs"`
	// Unknown counts calls of tools that do not exist: they are one row per agent, Tool "(unknown)", with up
	// to five of the names tried in UnknownNames.
	Unknown        int64       `json:"unknown_tool"`
	UnknownRuns    []uuid.UUID `json:"unknown_tool_runs"`
	UnknownNames   []string    `json:"unknown_names"`
	NotEnabled     int64       `json:"tool_not_enabled"`
	NotEnabledRuns []uuid.UUID `json:"tool_not_enabled_runs"`
	// Searches counts chat turns that searched for tools (and described this one last) and made no call.
	Searches   int64       `json:"searches_no_call"`
	SearchRuns []uuid.UUID `json:"search_runs"`
}

// Attempts counts every attempt the stumble rate divides by: the calls and the searches that ended with no call.
func (s ToolStumble) Attempts() int64 { return s.Calls + s.Searches }

// ToolStumbles ranks tools and agents by their stumble rate between since and until, keeping to what reader
// may read (every attempt with audit, else those of what it made or approved).
func ToolStumbles(ctx context.Context, db gemsql.DBTX, since, until time.Time, reader brain.Reader) ([]ToolStumble, error) {
	rows, err := db.Query(ctx, `SELECT tool, agent, calls, stumbles, stumble_rate::float8, validation_errors,
			coalesce(validation_property, ''), coalesce(validation_runs, '{}'), unknown_tool, coalesce(unknown_tool_runs, '{}'),
			coalesce(unknown_names, '{}'), tool_not_enabled, coalesce(tool_not_enabled_runs, '{}'), searches_no_call, coalesce(search_runs, '{}')
		FROM brain_tool_stumbles($1, $2, $3) WHERE stumbles > 0`, since, until, reader.Viewer())
	if err != nil {
		return nil, coded(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ToolStumble, error) {
		var s ToolStumble
		err := row.Scan(&s.Tool, &s.Agent, &s.Calls, &s.Stumbles, &s.Rate, &s.Validation, &s.Property, &s.ValidationRuns,
			&s.Unknown, &s.UnknownRuns, &s.UnknownNames, &s.NotEnabled, &s.NotEnabledRuns, &s.Searches, &s.SearchRuns)
		return s, err
	})
	if err != nil {
		return nil, coded(err)
	}
	return list, nil
}

// Stumble is one attempt that stumbled (brain_tool_attempts), with what its run was asked.
type Stumble struct {
	At       time.Time
	RunID    uuid.UUID
	Agent    string
	Tool     string
	Reason   string
	Property string
	// Query is the last search_tools query of a search that ended with no call.
	Query string
	// Message is the run's request; Called are the tools of the run's calls that succeeded, in order.
	Message string
	Called  []string
}

// Stumbles lists the first stumble of each run that stumbled since a time (ties in time broken by reason and
// tool), the runs oldest first: one row per run, however many times it stumbled, so a long request is read
// once.
func Stumbles(ctx context.Context, db gemsql.DBTX, since time.Time) ([]Stumble, error) {
	rows, err := db.Query(ctx, `SELECT f.at, f.run_id, f.agent, f.tool, f.reason, f.property, f.query, r.message,
			coalesce((SELECT array_agg(c.tool_name ORDER BY c.created_at) FROM core_tool_calls c
				WHERE c.run_id = f.run_id AND c.status = 'succeeded'), '{}')
		FROM (SELECT DISTINCT ON (a.run_id) a.at, a.run_id, coalesce(a.agent, '') AS agent, coalesce(a.tool, '') AS tool,
				a.reason, coalesce(a.property, '') AS property, coalesce(a.query, '') AS query
			FROM brain_tool_attempts a
			WHERE a.reason IS NOT NULL AND a.at >= $1 AND a.run_id IS NOT NULL
			ORDER BY a.run_id, a.at, a.reason, a.tool) f
		JOIN brain_runs r ON r.id = f.run_id
		ORDER BY f.at, f.run_id`, since)
	if err != nil {
		return nil, coded(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Stumble, error) {
		var s Stumble
		err := row.Scan(&s.At, &s.RunID, &s.Agent, &s.Tool, &s.Reason, &s.Property, &s.Query, &s.Message, &s.Called)
		return s, err
	})
	if err != nil {
		return nil, coded(err)
	}
	return list, nil
}
