package oshandlers

import (
	"context"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
)

// healthQueueLagDegraded is how long the oldest waiting call may have waited before the health check says
// degraded: calls are normally taken up within milliseconds.
const healthQueueLagDegraded = time.Minute

// healthQueueCountCap bounds the health check's counts of waiting and running calls.
const healthQueueCountCap = 100

// providerHealth lists the outside providers the packs' tools need and what each one lacks.
func (p *pack) providerHealth() []ospack.ProviderHealth {
	list := []ospack.ProviderHealth{}
	for _, providers := range p.providers {
		list = append(list, providers()...)
	}
	for i := range list {
		if list[i].Missing == nil {
			list[i].Missing = []string{}
		}
		list[i].Configured = len(list[i].Missing) == 0 && list[i].Error == nil
	}
	return list
}

// healthCheck reports on the database, the call queue, the executors, the business time zone and the
// outside providers. Degraded: calls wait longer than healthQueueLagDegraded, or a configuration value
// cannot be used. It reads only cheap things, in one statement (the queue through River's fetch index).
func (p *pack) healthCheck(ctx context.Context, c *executor.Call, _ struct{}) (*ospack.HealthCheckOutput, error) {
	out := ospack.HealthCheckOutput{Status: "ok", ExecutorVersion: executor.Version}
	// One round trip: the health check runs often (monitors, make bench's floor), and each statement is one.
	q := &out.Checks.Queue
	start := time.Now()
	// Every part is bounded by River's fetch index, whatever the queue holds: a health check during a
	// backlog of a million calls costs what it costs on an empty queue (counting the whole queue made each
	// check scan it, and draining a backlog of health checks quadratic). The counts are ordered as the index
	// is, so the planner walks it: with statistics that say most jobs are available, a bare LIMIT chose a
	// sequential scan, which reads every finished job before the first available one (a drain of 100,000
	// health checks fell to 150 calls/s).
	if err := c.DB.QueryRow(ctx, `SELECT current_setting('server_version'), now(),
			(SELECT count(*) FROM (SELECT 1 FROM river_job WHERE state = 'available' AND queue = 'default'
				ORDER BY priority, scheduled_at, id LIMIT $1) a),
			(SELECT count(*) FROM (SELECT 1 FROM river_job WHERE state = 'running' AND queue = 'default'
				ORDER BY priority, scheduled_at, id LIMIT $1) r),
			(SELECT extract(epoch FROM now() - scheduled_at)::float8 FROM river_job
				WHERE state = 'available' AND queue = 'default' AND priority = 1 ORDER BY scheduled_at, id LIMIT 1),
			(SELECT count(*) FROM core_executors WHERE stopped_at IS NULL AND dead_at IS NULL)`, healthQueueCountCap).
		Scan(&out.Checks.Database.ServerVersion, &out.ServerTime, &q.Queued, &q.Running, &q.OldestQueuedSecs,
			&out.Checks.Executors.Live); err != nil {
		return nil, fmt.Errorf("error reading the database's state: %w", err)
	}
	if q.OldestQueuedSecs != nil && *q.OldestQueuedSecs < 0 {
		zero := 0.0 // a call scheduled a moment ahead of the statement's clock has not waited yet
		q.OldestQueuedSecs = &zero
	}
	out.Checks.Database.OK = true
	out.Checks.Database.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	q.OK = q.OldestQueuedSecs == nil || *q.OldestQueuedSecs < healthQueueLagDegraded.Seconds()
	out.Checks.Executors.OK = out.Checks.Executors.Live > 0

	out.Checks.TimeZone = ospack.HealthTimeZone{OK: p.locErr == nil, Name: p.cfg.TimeZone}
	if p.locErr != nil {
		s := p.locErr.Error()
		out.Checks.TimeZone.Error = &s
	}
	out.Checks.Providers = p.providerHealth()

	healthy := q.OK && out.Checks.Executors.OK && out.Checks.TimeZone.OK
	for _, pr := range out.Checks.Providers {
		healthy = healthy && pr.Error == nil
	}
	if !healthy {
		out.Status = "degraded"
	}
	return &out, nil
}
