package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// QueueScrapeTimeout bounds the statement a scrape of the queue's gauges runs.
const QueueScrapeTimeout = 2 * time.Second

// Queue states, the values of gem_queue_calls' state label.
const (
	QueueAvailable        = "available"
	QueueScheduled        = "scheduled"
	QueueRunning          = "running"
	QueueAwaitingApproval = "awaiting_approval"
)

// queueSQL reads the queue in one statement when Prometheus scrapes. The jobs come from River's fetching
// index (river_job_prioritized_fetching_index, whose first column is state), so the statement reads the
// jobs not yet finished, never the completed ones; the approvals from core_approvals_pending. A job
// available but due later is a call that waits (a snooze by its limits), counted as scheduled.
const queueSQL = `SELECT
	count(*) FILTER (WHERE j.state = 'available' AND j.scheduled_at <= now()),
	count(*) FILTER (WHERE j.state IN ('scheduled', 'retryable') OR (j.state = 'available' AND j.scheduled_at > now())),
	count(*) FILTER (WHERE j.state = 'running'),
	coalesce(extract(epoch FROM now() - min(j.scheduled_at) FILTER (WHERE j.state = 'available' AND j.scheduled_at <= now())), 0)::float8,
	(SELECT count(*) FROM core_approvals a WHERE a.decision IS NULL AND a.expires_at > now())
FROM river_job j
WHERE j.state IN ('available', 'scheduled', 'retryable', 'running') AND j.kind = 'gem.tool_call'`

// QueryRower runs one statement that returns one row (a pgxpool.Pool).
type QueryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// queueCollector reports the queue's depth and its oldest waiting call, read from PostgreSQL when
// scraped: every process that reports it reports the same numbers, the database's.
type queueCollector struct {
	db     QueryRower
	calls  *prometheus.Desc
	oldest *prometheus.Desc
	errors prometheus.Counter
}

// NewQueueCollector reports gem_queue_calls{state} and gem_queue_oldest_waiting_seconds, read with one
// statement on db at each scrape (within QueueScrapeTimeout), and counts the reads that failed in
// gem_queue_read_errors_total (the gauges are then left out of that scrape).
func NewQueueCollector(db QueryRower) prometheus.Collector {
	return &queueCollector{
		db: db,
		calls: prometheus.NewDesc("gem_queue_calls",
			"Calls in the queue by state: available (due, waiting for an executor), scheduled (due later: a retry's backoff, a limit's wait), running, awaiting_approval.",
			[]string{"state"}, nil),
		oldest: prometheus.NewDesc("gem_queue_oldest_waiting_seconds",
			"How long the oldest available call has waited for an executor since it was due (0 when none waits).", nil, nil),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gem_queue_read_errors_total",
			Help: "Scrapes whose read of the queue's gauges failed (they were left out)."}),
	}
}

// Describe implements prometheus.Collector.
func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.calls
	ch <- q.oldest
	q.errors.Describe(ch)
}

// Collect implements prometheus.Collector: one statement per scrape.
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), QueueScrapeTimeout)
	defer cancel()
	if d, err := ReadQueueDepth(ctx, q.db); err != nil {
		q.errors.Inc()
	} else {
		for state, n := range map[string]int64{QueueAvailable: d.Available, QueueScheduled: d.Scheduled, QueueRunning: d.Running,
			QueueAwaitingApproval: d.AwaitingApproval} {
			ch <- prometheus.MustNewConstMetric(q.calls, prometheus.GaugeValue, float64(n), state)
		}
		ch <- prometheus.MustNewConstMetric(q.oldest, prometheus.GaugeValue, d.OldestWaitSeconds)
	}
	q.errors.Collect(ch)
}

// QueueDepth is the queue's depth, as gem_queue_calls and gem_queue_oldest_waiting_seconds report it (and
// the studio shows it).
type QueueDepth struct {
	// Available are calls due and waiting for an executor; Scheduled those due later (a retry's backoff, a
	// limit's wait); Running those under way.
	Available int64 `json:"available"`
	Scheduled int64 `json:"scheduled"`
	Running   int64 `json:"running"`
	// OldestWaitSeconds is how long the oldest available call has waited since it was due.
	OldestWaitSeconds float64 `json:"oldest_wait_seconds"`
	// AwaitingApproval are calls held for a person's decision (they have no job yet).
	AwaitingApproval int64 `json:"awaiting_approval"`
}

// ReadQueueDepth reads the queue's depth with one statement.
func ReadQueueDepth(ctx context.Context, db QueryRower) (*QueueDepth, error) {
	var d QueueDepth
	if err := db.QueryRow(ctx, queueSQL).Scan(&d.Available, &d.Scheduled, &d.Running, &d.OldestWaitSeconds, &d.AwaitingApproval); err != nil {
		return nil, fmt.Errorf("error reading the queue's depth: %w", err)
	}
	d.OldestWaitSeconds = max(d.OldestWaitSeconds, 0)
	return &d, nil
}
