package business

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerSnapshots(h executor.Handlers, p *pack) {
	h.Func("os.get_state_snapshot", executor.Typed(p.getStateSnapshot))
	h.Func("os.refresh_state_snapshot", executor.Typed(p.refreshStateSnapshot))
}

// snapshotWindowDefault is how far back a snapshot's recent activity reaches when since is not given.
const snapshotWindowDefault = 24 * time.Hour

type getStateSnapshotInput struct {
	Domain string `json:"domain"`
}

type stateSnapshotOutput struct {
	SnapshotID *uuid.UUID      `json:"snapshot_id"`
	Domain     string          `json:"domain"`
	AsOf       time.Time       `json:"as_of"`
	Since      time.Time       `json:"since"`
	Source     string          `json:"source"`
	AgeSeconds float64         `json:"age_seconds"`
	State      json.RawMessage `json:"state"`
}

// getStateSnapshot returns the latest stored snapshot of the domain (a snapshot of both serves business and
// personal too), or, when none was ever stored, one computed now and not stored (source says which).
func (p *pack) getStateSnapshot(ctx context.Context, c *executor.Call, in getStateSnapshotInput) (*stateSnapshotOutput, error) {
	var id uuid.UUID
	out := stateSnapshotOutput{Domain: in.Domain, Source: "stored"}
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
	out.Source = "computed"
	if out.AsOf, out.Since, out.State, err = p.computeState(ctx, c.DB, in.Domain, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

type refreshStateSnapshotInput struct {
	Domain string     `json:"domain"`
	Since  *time.Time `json:"since"`
}

type refreshStateSnapshotOutput struct {
	SnapshotID uuid.UUID       `json:"snapshot_id"`
	Domain     string          `json:"domain"`
	AsOf       time.Time       `json:"as_of"`
	Since      time.Time       `json:"since"`
	State      json.RawMessage `json:"state"`
}

// refreshStateSnapshot computes the domain's state now and stores it as the latest snapshot.
func (p *pack) refreshStateSnapshot(ctx context.Context, c *executor.Call, in refreshStateSnapshotInput) (*refreshStateSnapshotOutput, error) {
	out := refreshStateSnapshotOutput{Domain: in.Domain}
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

// computeState derives the state of a domain from the records: for business the pipeline, work and money;
// for personal tasks, reminders, check-ins, commitments and boundaries; for both, both. Activity counts the
// calls since since (default snapshotWindowDefault before now).
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
			return asOf, from, nil, invalidField("since", "(%s) is in the future", since.Format(time.RFC3339))
		}
		from = *since
	}
	parts := map[string]json.RawMessage{}
	if domain == domainBusiness || domain == domainBoth {
		if parts["business"], err = businessState(ctx, db, from, today.String()); err != nil {
			return asOf, from, nil, err
		}
	}
	if domain == domainPersonal || domain == domainBoth {
		if parts["personal"], err = personalState(ctx, db, from); err != nil {
			return asOf, from, nil, err
		}
	}
	var activity json.RawMessage
	if err := db.QueryRow(ctx, `
		SELECT jsonb_build_object('since', $1::timestamptz, 'calls', coalesce(sum(n), 0), 'failed', coalesce(sum(f), 0),
			'by_domain', coalesce(jsonb_object_agg(d, n), '{}'))
		FROM (SELECT split_part(tool_name, '.', 1) AS d, count(*) AS n, count(*) FILTER (WHERE status <> 'succeeded') AS f
		      FROM core_tool_receipts WHERE finished_at >= $1 GROUP BY 1) s`, from).Scan(&activity); err != nil {
		return asOf, from, nil, fmt.Errorf("error counting recent calls: %w", err)
	}
	parts["activity"] = activity
	state, err = json.Marshal(parts)
	return asOf, from, state, err
}

// businessState is the business side: leads by stage, open work, money owed, and what is coming up (the
// calendar).
func businessState(ctx context.Context, db executor.DB, since time.Time, today string) (json.RawMessage, error) {
	var state json.RawMessage
	err := db.QueryRow(ctx, `
		SELECT jsonb_build_object(
			'leads', (SELECT jsonb_build_object(
					'by_stage', coalesce(jsonb_object_agg(stage, n), '{}'),
					'open', coalesce(sum(n) FILTER (WHERE stage NOT IN ('won', 'lost')), 0),
					'new_since', (SELECT count(*) FROM leads WHERE created_at >= $1))
				FROM (SELECT stage, count(*) AS n FROM leads GROUP BY stage) s),
			'tasks', (SELECT jsonb_build_object(
					'open', count(*) FILTER (WHERE status <> 'done'),
					'overdue', count(*) FILTER (WHERE status <> 'done' AND due_at < now()),
					'high_priority', count(*) FILTER (WHERE status <> 'done' AND priority IN ('high', 'urgent')),
					'completed_since', count(*) FILTER (WHERE completed_at >= $1))
				FROM os_tasks WHERE domain IN ('business', 'both')),
			'reminders', (SELECT jsonb_build_object(
					'due', count(*) FILTER (WHERE remind_at <= now()),
					'upcoming_7_days', count(*) FILTER (WHERE remind_at > now() AND remind_at <= now() + interval '7 days'))
				FROM os_reminders WHERE status = 'pending' AND domain IN ('business', 'both')),
			'inspections', (SELECT jsonb_build_object('by_status', coalesce(jsonb_object_agg(status, n), '{}'))
				FROM (SELECT status, count(*) AS n FROM inspections GROUP BY status) s),
			'quotes', (SELECT jsonb_build_object(
					'by_status', coalesce(jsonb_object_agg(status, n), '{}'),
					'sent_value_cents', coalesce(sum(v) FILTER (WHERE status = 'sent'), 0))
				FROM (SELECT status, count(*) AS n, sum(total_cents) AS v FROM quotes GROUP BY status) s),
			'jobs', (SELECT jsonb_build_object(
					'by_status', coalesce(jsonb_object_agg(status, n), '{}'),
					'starting_next_7_days', (SELECT count(*) FROM jobs WHERE status <> 'completed'
						AND start_date BETWEEN $2::date AND $2::date + 7))
				FROM (SELECT status, count(*) AS n FROM jobs GROUP BY status) s),
			'invoices', (SELECT jsonb_build_object(
					'by_status', (SELECT coalesce(jsonb_object_agg(status, n), '{}')
						FROM (SELECT status, count(*) AS n FROM invoices GROUP BY status) s),
					'outstanding_count', count(*),
					'outstanding_cents', coalesce(sum(total_cents - amount_paid_cents), 0),
					'overdue_count', count(*) FILTER (WHERE overdue_at IS NOT NULL OR due_on < $2::date),
					'overdue_cents', coalesce(sum(total_cents - amount_paid_cents) FILTER (WHERE overdue_at IS NOT NULL OR due_on < $2::date), 0))
				FROM invoices WHERE amount_paid_cents < total_cents),
			'payments_since_cents', (SELECT coalesce(sum(amount_cents), 0) FROM invoice_payments WHERE created_at >= $1),
			-- The calendar's next seven days: the first ten events and their count.
			'calendar', (SELECT jsonb_build_object('next_7_days', count(*),
					'upcoming', coalesce(jsonb_agg(jsonb_build_object('event_id', id, 'title', title, 'start_at', start_at, 'end_at', end_at)
						ORDER BY start_at) FILTER (WHERE rn <= 10), '[]'))
				FROM (SELECT id, title, start_at, end_at, row_number() OVER (ORDER BY start_at) AS rn
				      FROM calendar_events WHERE status <> 'cancelled' AND end_at >= now() AND start_at < now() + interval '7 days') e))`,
		since, today).Scan(&state)
	if err != nil {
		return nil, fmt.Errorf("error reading the business state: %w", err)
	}
	return state, nil
}

// personalState is the personal side: open tasks and reminders, the latest check-in, active commitments and
// the boundaries in force.
func personalState(ctx context.Context, db executor.DB, since time.Time) (json.RawMessage, error) {
	var state json.RawMessage
	err := db.QueryRow(ctx, `
		SELECT jsonb_build_object(
			'tasks', (SELECT jsonb_build_object(
					'open', count(*) FILTER (WHERE status <> 'done'),
					'overdue', count(*) FILTER (WHERE status <> 'done' AND due_at < now()),
					'completed_since', count(*) FILTER (WHERE completed_at >= $1))
				FROM os_tasks WHERE domain IN ('personal', 'both')),
			'reminders', (SELECT jsonb_build_object(
					'due', count(*) FILTER (WHERE remind_at <= now()),
					'upcoming_7_days', count(*) FILTER (WHERE remind_at > now() AND remind_at <= now() + interval '7 days'))
				FROM os_reminders WHERE status = 'pending' AND domain IN ('personal', 'both')),
			'latest_check_in', (SELECT jsonb_build_object('checkin_id', id, 'energy', energy, 'stress', stress, 'focus', focus,
					'notes', notes, 'recorded_at', created_at)
				FROM personal_checkins ORDER BY created_at DESC LIMIT 1),
			'check_ins_since', (SELECT count(*) FROM personal_checkins WHERE created_at >= $1),
			'commitments', (SELECT jsonb_build_object(
					'active', count(*),
					'due_for_review', count(*) FILTER (WHERE review_at <= now()),
					'items', coalesce(jsonb_agg(jsonb_build_object('commitment_id', id, 'title', title, 'review_at', review_at,
						'overdue_for_review', coalesce(review_at <= now(), false)) ORDER BY review_at NULLS LAST, created_at)
						FILTER (WHERE rn <= 10), '[]'))
				FROM (SELECT *, row_number() OVER (ORDER BY review_at NULLS LAST, created_at) AS rn
				      FROM personal_commitments WHERE status = 'active') c),
			'boundaries', (SELECT coalesce(jsonb_agg(jsonb_build_object('memory_id', id, 'key', key, 'value', value) ORDER BY key), '[]')
				FROM identity_memories WHERE memory_type = 'boundary' AND valid_to IS NULL),
			'self_model_boundaries', coalesce((SELECT boundaries FROM identity_self_model), '{}'))`, since).Scan(&state)
	if err != nil {
		return nil, fmt.Errorf("error reading the personal state: %w", err)
	}
	return state, nil
}
