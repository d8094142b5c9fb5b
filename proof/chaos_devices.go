package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// chaosFleet is the chaos run's devices: each serves the lab tools through the brain, and one at a time is
// SIGKILLed and started again while calls to them flow.
type chaosFleet struct {
	rig     *deviceRig
	mu      sync.Mutex
	names   []string
	tokens  map[string]string
	paths   map[string]string
	procs   map[string]*proc
	kills   int
	started int
}

func startFleet(ctx context.Context, bins binaries, dbURL string, pool *pgxpool.Pool, brain *brainProc, cfg chaosConfig) (*chaosFleet, error) {
	lab, err := startLabService()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gem-chaos-devices-")
	if err != nil {
		lab.close()
		return nil, err
	}
	f := &chaosFleet{
		rig:    &deviceRig{bins: bins, dbURL: dbURL, pool: pool, brain: brain, lab: lab, dir: dir, logw: cfg.Log, client: &http.Client{Timeout: 30 * time.Second}},
		tokens: map[string]string{}, paths: map[string]string{}, procs: map[string]*proc{},
	}
	// The lab service holds requests without reading them fully; it does not need the chaos' pace.
	go func() {
		for range lab.started {
		}
	}()
	for i := range cfg.Devices {
		name := chaosDeviceName(i)
		token, err := f.rig.addDevice(ctx, name)
		if err != nil {
			f.close()
			return nil, err
		}
		path, err := f.rig.writeRegistry(name, "")
		if err != nil {
			f.close()
			return nil, err
		}
		f.names, f.tokens[name], f.paths[name] = append(f.names, name), token, path
		if err := f.start(name, true); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// start runs a device's process (mu held or not yet shared).
func (f *chaosFleet) start(name string, wait bool) error {
	p, err := f.rig.startDeviceAt(name, f.tokens[name], f.paths[name], "", wait)
	if err != nil {
		return err
	}
	f.procs[name] = p
	f.started++
	return nil
}

// killLoop SIGKILLs one device at a time, in turn, and starts it again at once.
func (f *chaosFleet) killLoop(ctx context.Context, every time.Duration, progress func(string, ...any)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for next := 0; ; next = (next + 1) % len(f.names) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		name := f.names[next]
		f.procs[name].kill()
		f.kills++
		if err := f.start(name, false); err != nil {
			progress("restarting device %s: %v", name, err)
		}
		f.mu.Unlock()
	}
}

func (f *chaosFleet) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if !p.exited() {
			p.kill()
		}
	}
	f.rig.lab.close()
	_ = os.RemoveAll(f.rig.dir)
}

// check verifies the device calls' promises against what the lab service saw: an outside effect
// (lab.effect, mode none) happened at most once per call, exactly once for a call that succeeded, and not
// at all for a call that ended before any device ran it; an agnostic read that succeeded was answered.
func (f *chaosFleet) check(ctx context.Context, pool *pgxpool.Pool, rep *chaosReport) error {
	f.mu.Lock()
	rep.count("devices SIGKILLed / started", fmt.Sprintf("%d / %d", f.kills, f.started))
	f.mu.Unlock()
	rows, err := pool.Query(ctx, `SELECT c.tool_name, c.input ->> 'key', r.status, coalesce(r.error_code, ''), coalesce(cardinality(r.devices_tried), 0)
		FROM core_tool_calls c JOIN core_tool_receipts r ON r.call_id = c.id WHERE c.tool_name IN ('lab.whoami', 'lab.effect')`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var calls, succeeded, failovers, twice, missing, ranOnFailure, unknownAnswered int
	codes := map[string]int{}
	for rows.Next() {
		var tool, key, status, code string
		var tried int
		if err := rows.Scan(&tool, &key, &status, &code, &tried); err != nil {
			return err
		}
		calls++
		if tried > 1 {
			failovers++
		}
		n := f.rig.lab.count(strings.TrimPrefix(tool, "lab."), key)
		switch {
		case status == "succeeded":
			succeeded++
			if n < 1 {
				missing++
			}
		default:
			codes[code]++
			if code == "outcome_unknown" && f.rig.lab.answeredCount(strings.TrimPrefix(tool, "lab."), key) > 0 {
				unknownAnswered++
			}
		}
		if tool == "lab.effect" {
			switch {
			case n > 1:
				twice++
			case status != "succeeded" && code != "outcome_unknown" && code != "timeout" && n > 0:
				ranOnFailure++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var parts []string
	for c, n := range codes {
		parts = append(parts, fmt.Sprintf("%s %d", c, n))
	}
	rep.count("device calls / succeeded", fmt.Sprintf("%d / %d", calls, succeeded))
	rep.count("device calls run on another device after a kill", failovers)
	rep.count("device calls failed, by code", strings.Join(parts, ", "))
	// Not a violation: a device may die between the service's answer and its own. Many mean the hub lost
	// answers it had been sent (it once dropped those it read as the socket closed).
	rep.count("device calls outcome_unknown though the service had answered their device", unknownAnswered)
	rep.count("device effects that happened twice", twice)
	if twice > 0 {
		rep.violation("%d device calls of mode none made their outside effect more than once", twice)
	}
	if missing > 0 {
		rep.violation("%d succeeded device calls were never answered by a device", missing)
	}
	if ranOnFailure > 0 {
		rep.violation("%d device calls ended before a device ran them, yet their effect happened", ranOnFailure)
	}
	var open int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM core_device_attempts WHERE state IN ('queued', 'sent')`).Scan(&open); err != nil {
		return err
	}
	rep.count("device attempts left open", open)
	if open > 0 {
		rep.violation("%d device attempts are still queued or sent after every call has its receipt", open)
	}
	return nil
}
