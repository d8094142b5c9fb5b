package businesshandlers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor"
)

// The business pack's parts of the state snapshot (os.get_state_snapshot and os.refresh_state_snapshot,
// whose handlers are the os pack's: forOS gives them these). The os pack adds each domain's tasks and
// reminders, and the recent activity.

// businessState is the business side: leads by stage, inspections, quotes and jobs, money owed, and what is
// coming up (the calendar).
func businessState(ctx context.Context, db executor.DB, since time.Time, today string) (json.RawMessage, error) {
	var state json.RawMessage
	err := db.QueryRow(ctx, `
		SELECT jsonb_build_object(
			'leads', (SELECT jsonb_build_object(
					'by_stage', coalesce(jsonb_object_agg(stage, n), '{}'),
					'open', coalesce(sum(n) FILTER (WHERE stage NOT IN ('won', 'lost')), 0),
					'new_since', (SELECT count(*) FROM leads WHERE created_at >= $1))
				FROM (SELECT stage, count(*) AS n FROM leads GROUP BY stage) s),
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

// personalState is the personal side: the latest check-in, active commitments and the boundaries in force.
func personalState(ctx context.Context, db executor.DB, since time.Time, _ string) (json.RawMessage, error) {
	var state json.RawMessage
	err := db.QueryRow(ctx, `
		SELECT jsonb_build_object(
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
