package oshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/jackc/pgx/v5"
)

// snapshotWindowDefault is how far back a snapshot's recent activity reaches when since is not given.
const snapshotWindowDefault = 24 * time.Hour

// getStateSnapshot returns the latest stored snapshot of the domain (a snapshot of both serves business and
// personal too), or, when none was ever stored, one computed now and not stored (source says which).
func (p *pack) getStateSnapshot(ctx context.Context, c *executor.Call, in ospack.GetStateSnapshotInput) (*ospack.GetStateSnapshotOutput, error) {
	var id string
	out := ospack.GetStateSnapshotOutput{Domain: in.Domain, Source: ospack.SnapshotStored}
	err := c.DB.QueryRow(ctx, `SELECT id, as_of, since,
			CASE WHEN $1 = 'both' OR domain = $1 THEN state
			     ELSE state - CASE $1 WHEN 'business' THEN 'personal' ELSE 'business' END END,
			extract(epoch FROM now() - as_of)::float8
		FROM os_state_snapshots
		WHERE domain = $1 OR ($1 <> 'both' AND domain = 'both')
		ORDER BY as_of DESC, created_at DESC LIMIT 1`, in.Domain).Scan(&id, &out.AsOf, &out.Since, &out.State, &out.AgeSeconds)
	if err == nil {
		out.SnapshotID = &id
		return &out, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("error reading the latest snapshot: %w", err)
	}
	out.Source = ospack.SnapshotComputed
	if out.AsOf, out.Since, out.State, err = p.computeState(ctx, c.DB, in.Domain, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// refreshStateSnapshot computes the domain's state now and stores it as the latest snapshot.
func (p *pack) refreshStateSnapshot(ctx context.Context, c *executor.Call, in ospack.RefreshStateSnapshotInput) (*ospack.RefreshStateSnapshotOutput, error) {
	out := ospack.RefreshStateSnapshotOutput{Domain: in.Domain}
	var err error
	if out.AsOf, out.Since, out.State, err = p.computeState(ctx, c.DB, in.Domain, in.Since); err != nil {
		return nil, err
	}
	if err := c.DB.QueryRow(ctx, `INSERT INTO os_state_snapshots (domain, as_of, since, state) VALUES ($1, $2, $3, $4) RETURNING id`,
		in.Domain, out.AsOf, out.Since, out.State).Scan(&out.SnapshotID); err != nil {
		return nil, fmt.Errorf("error storing the snapshot: %w", err)
	}
	return &out, nil
}

// computeState derives the state of a domain from the records: each domain's part is its sections' (the os
// pack's tasks and reminders, and what the other packs add: for business the pipeline, work and money; for
// personal check-ins, commitments and boundaries), both is both. Activity counts the calls since since
// (default snapshotWindowDefault before now).
func (p *pack) computeState(ctx context.Context, db executor.DB, domain string, since *time.Time) (asOf, from time.Time, state json.RawMessage, err error) {
	today, err := p.today()
	if err != nil {
		return asOf, from, nil, err
	}
	if err := db.QueryRow(ctx, `SELECT now()`).Scan(&asOf); err != nil {
		return asOf, from, nil, err
	}
	from = asOf.Add(-snapshotWindowDefault)
	if since != nil {
		if since.After(asOf) {
			return asOf, from, nil, executor.InvalidField("since", "(%s) is in the future", since.Format(time.RFC3339))
		}
		from = *since
	}
	sections := map[string][]json.RawMessage{}
	for _, d := range []string{ospack.DomainBusiness, ospack.DomainPersonal} {
		if domain != d && domain != ospack.DomainBoth {
			continue
		}
		sections[d] = []json.RawMessage{}
		for _, s := range p.sections[d] {
			part, err := s.State(ctx, db, from, today)
			if err != nil {
				return asOf, from, nil, err
			}
			sections[d] = append(sections[d], part)
		}
	}
	sectionsJSON, err := json.Marshal(sections)
	if err != nil {
		return asOf, from, nil, err
	}
	// Each domain's sections become one object in PostgreSQL, as jsonb: the state is what one statement
	// building the whole domain would make (jsonb orders an object's keys its own way, whoever adds them).
	var activity, domains json.RawMessage
	if err := db.QueryRow(ctx, `
		SELECT (SELECT jsonb_build_object('since', $1::timestamptz, 'calls', coalesce(sum(n), 0), 'failed', coalesce(sum(f), 0),
				'by_domain', coalesce(jsonb_object_agg(d, n), '{}'))
			FROM (SELECT split_part(tool_name, '.', 1) AS d, count(*) AS n, count(*) FILTER (WHERE status <> 'succeeded') AS f
			      FROM core_tool_receipts WHERE finished_at >= $1 GROUP BY 1) s),
			(SELECT coalesce(jsonb_object_agg(d.key, (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}')
					FROM jsonb_array_elements(d.value) s, jsonb_each(s.value) e)), '{}')
			FROM jsonb_each($2::jsonb) d)`, from, sectionsJSON).Scan(&activity, &domains); err != nil {
		return asOf, from, nil, fmt.Errorf("error counting recent calls: %w", err)
	}
	parts := map[string]json.RawMessage{}
	if err := json.Unmarshal(domains, &parts); err != nil {
		return asOf, from, nil, err
	}
	parts["activity"] = activity
	state, err = json.Marshal(parts)
	return asOf, from, state, err
}

// ownSections are the os pack's parts of the state: the tasks and reminders of each domain.
var ownSections = []Section{
	{Domain: ospack.DomainBusiness, State: workState(ospack.DomainBusiness)},
	{Domain: ospack.DomainPersonal, State: workState(ospack.DomainPersonal)},
}

// workState reads a domain's tasks (open, overdue, completed since; for business also high priority) and
// pending reminders (due, coming up in the next seven days).
func workState(domain string) func(ctx context.Context, db executor.DB, since time.Time, _ string) (json.RawMessage, error) {
	return func(ctx context.Context, db executor.DB, since time.Time, _ string) (json.RawMessage, error) {
		var state json.RawMessage
		err := db.QueryRow(ctx, `
			SELECT jsonb_build_object(
				'tasks', (SELECT jsonb_build_object(
						'open', count(*) FILTER (WHERE status <> 'done'),
						'overdue', count(*) FILTER (WHERE status <> 'done' AND due_at < now()),
						'completed_since', count(*) FILTER (WHERE completed_at >= $1))
					|| CASE WHEN $2 = 'business' THEN jsonb_build_object(
						'high_priority', count(*) FILTER (WHERE status <> 'done' AND priority IN ('high', 'urgent'))) ELSE '{}' END
					FROM os_tasks WHERE domain IN ($2, 'both')),
				'reminders', (SELECT jsonb_build_object(
						'due', count(*) FILTER (WHERE remind_at <= now()),
						'upcoming_7_days', count(*) FILTER (WHERE remind_at > now() AND remind_at <= now() + interval '7 days'))
					FROM os_reminders WHERE status = 'pending' AND domain IN ($2, 'both')))`, since, domain).Scan(&state)
		if err != nil {
			return nil, fmt.Errorf("error reading the %s tasks and reminders: %w", domain, err)
		}
		return state, nil
	}
}
