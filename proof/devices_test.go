package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// These tests run real processes on loopback: brains (the hubs), an executor, and `executor device`
// processes serving rest tools that call a local service counting every request it gets.

type rigT struct {
	*deviceRig
	t      *testing.T
	procs  map[string]*proc
	tokens map[string]string
}

// newRigT starts a hub (with hubEnv added to its environment) and an executor; devices are added with
// device().
func newRigT(t *testing.T, hubEnv ...string) *rigT {
	t.Helper()
	bins := testBinaries(t)
	pool, dbURL := sqltest.NewDB(t)
	logs := &sqltest.SyncBuffer{}
	rig, err := newDeviceRig(bins, dbURL, pool, t.TempDir(), logs, hubEnv...)
	require.NoError(t, err)
	t.Cleanup(func() {
		rig.close()
		if t.Failed() {
			t.Log("\n" + logs.String())
		}
	})
	return &rigT{deviceRig: rig, t: t, procs: map[string]*proc{}, tokens: map[string]string{}}
}

// device creates a device serving the lab tools (or doc) and starts it against hub (the rig's brain when
// empty), waiting until it is alive.
func (r *rigT) device(name, doc, hub string) *proc {
	r.t.Helper()
	ctx := context.Background()
	if r.tokens[name] == "" {
		token, err := r.addDevice(ctx, name)
		require.NoError(r.t, err)
		r.tokens[name] = token
	}
	path, err := r.writeRegistry(name, doc)
	require.NoError(r.t, err)
	p, err := r.startDeviceAt(name, r.tokens[name], path, hub, true)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { p.kill() })
	r.procs[name] = p
	return p
}

// do makes a call and waits for its receipt.
func (r *rigT) do(tool string, input map[string]any, device string, waitMS int) *registry.Receipt {
	r.t.Helper()
	ctx := context.Background()
	id, err := r.call(ctx, tool, input, device, waitMS)
	require.NoError(r.t, err)
	rc, err := r.receipt(ctx, id, 40*time.Second)
	require.NoError(r.t, err)
	return rc
}

// awaitStarted waits until the lab service is holding a request of key, and returns the device it came from.
func (r *rigT) awaitStarted(key string) string {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case s := <-r.lab.started:
			dev, k, _ := strings.Cut(s, " ")
			if strings.HasSuffix(k, "/"+key) {
				return dev
			}
		case <-deadline:
			r.t.Fatalf("no request of %s reached the lab service", key)
		}
	}
}

func labResult(t *testing.T, r *registry.Receipt) (device string, hits int) {
	t.Helper()
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var out struct {
		Device string `json:"device"`
		Hits   int    `json:"hits"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &out))
	return out.Device, out.Hits
}

func TestDeviceRouting(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	r.device("laptop", "", "")
	r.device("server", "", "")

	// A call naming a device runs there, and its receipt says so.
	rc := r.do("lab.effect", map[string]any{"key": "named"}, "laptop", 0)
	dev, hits := labResult(t, rc)
	require.Equal(t, "laptop", dev)
	require.Equal(t, 1, hits)
	require.Equal(t, "laptop", rc.Device)
	require.Equal(t, []string{"laptop"}, rc.DevicesTried)

	// A device's own tool runs on it without being named.
	dev, _ = labResult(t, r.do("lab.echo_server", map[string]any{"key": "own"}, "", 0))
	require.Equal(t, "server", dev)

	// A tool two devices serve that is not device_agnostic must name one.
	rc = r.do("lab.effect", map[string]any{"key": "unnamed"}, "", 0)
	require.Equal(t, registry.CodeInvalidCall, rc.Error.Code, rc.Error.Message)
	require.Contains(t, rc.Error.Message, "name the device")
	require.Zero(t, r.lab.count("effect", "unnamed"))

	// A device that does not exist, or does not serve the tool, is unknown_device; bad input never reaches
	// a device.
	for _, c := range []struct {
		tool, device string
		input        map[string]any
		code         registry.ErrorCode
	}{
		{"lab.effect", "phone", map[string]any{"key": "x1"}, registry.CodeUnknownDevice},
		{"lab.echo_server", "laptop", map[string]any{"key": "x2"}, registry.CodeUnknownDevice},
		{"lab.effect", "laptop", map[string]any{"key": ""}, registry.CodeValidation},
		{"lab.effect", "laptop", map[string]any{"key": "x3", "extra": 1}, registry.CodeValidation},
		{"lab.nothing", "", map[string]any{}, registry.CodeUnknownTool},
	} {
		rc := r.do(c.tool, c.input, c.device, 0)
		require.NotNil(t, rc.Error, "%s on %q", c.tool, c.device)
		require.Equal(t, c.code, rc.Error.Code, "%s on %q: %s", c.tool, c.device, rc.Error.Message)
	}
	for _, k := range []string{"x1", "x2", "x3", ""} {
		require.Zero(t, r.lab.count("effect", k)+r.lab.count("whoami", k))
	}

	// POST /calls and MCP tools/call name a device too.
	var created struct {
		OK      bool              `json:"ok"`
		Receipt *registry.Receipt `json:"receipt"`
	}
	_, err := r.api(context.Background(), "POST", "/calls", map[string]any{"tool": "lab.effect", "input": map[string]any{"key": "api"},
		"device": "server", "wait_timeout_ms": 20000}, &created)
	require.NoError(t, err)
	require.True(t, created.OK)
	require.Equal(t, "server", created.Receipt.Device)
	rpc, err := newMCPHTTP(context.Background(), r.client, r.brain)
	require.NoError(t, err)
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	require.NoError(t, rpc.rpc(context.Background(), 7, "tools/call", map[string]any{"name": "lab.effect", "arguments": map[string]any{"key": "mcp"},
		"_meta": map[string]any{"gem/device": "laptop"}}, &res))
	require.False(t, res.IsError, string(res.StructuredContent))
	require.JSONEq(t, `{"device": "laptop", "hits": 1}`, string(res.StructuredContent))

	// The audit views show the device.
	ctx := context.Background()
	var ranOn string
	var tried []string
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT ran_on_device, devices_tried FROM core_calls WHERE input ->> 'key' = 'named'`).Scan(&ranOn, &tried))
	require.Equal(t, "laptop", ranOn)
	require.Equal(t, []string{"laptop"}, tried)
	var failures int
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT count(*) FROM core_recent_failures WHERE error_code = 'unknown_device'`).Scan(&failures))
	require.Equal(t, 2, failures)
}

// A keyed device tool keeps its key across the call's two transactions: a second call with the key while
// the first is with its device answers from the first (the service hears once), and a call that fails
// gives the key back.
// TestDeviceLimits: a device tool with a concurrency limit of one is handed to its device one call at a
// time (its slot is its attempt, given back with its receipt), and the calls that wait get their receipts.
func TestDeviceLimits(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	r.device("laptop", `{"version": "limited", "tools": [{
		"name": "lab.slow_lookup",
		"description": "Looks something up at the lab service, one request at a time.",
		"input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}},
			"required": ["key"], "additionalProperties": false},
		"output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
		"permissions": ["read:external"],
		"idempotency": {"mode": "safe-retry"},
		"timeout_ms": 20000,
		"limits": {"concurrency": {"max": 1}, "max_wait_ms": 30000},
		"implementation": {"type": "rest", "method": "GET", "url": "${GEM_LAB_URL}/whoami?device=laptop&key={key}&sleep_ms={sleep_ms}"}
	}]}`, "")
	ctx := context.Background()
	var ids []uuid.UUID
	for i := range 4 {
		id, err := r.call(ctx, "lab.slow_lookup", map[string]any{"key": fmt.Sprint("k", i), "sleep_ms": 300}, "laptop", 0)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	for _, id := range ids {
		rc, err := r.receipt(ctx, id, 40*time.Second)
		require.NoError(t, err)
		require.Equal(t, registry.StatusSucceeded, rc.Status, "%+v", rc.Error)
		require.NotNil(t, rc.LimitWaitMS)
	}
	require.Equal(t, 1, r.lab.most("whoami"), "requests served at once")
	var open int
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT count(*) FROM core_device_attempts WHERE limit_key IS NOT NULL AND state IN ('queued', 'sent')`).Scan(&open))
	require.Zero(t, open)
}

func TestDeviceIdempotencyKey(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	r.device("laptop", "", "")
	ctx := context.Background()

	first, err := r.call(ctx, "lab.order", map[string]any{"key": "k1", "sleep_ms": 3000}, "laptop", 0)
	require.NoError(t, err)
	require.Equal(t, "laptop", r.awaitStarted("k1"))
	secondID, err := r.call(ctx, "lab.order", map[string]any{"key": "k1"}, "laptop", 0)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var status string
		err := r.pool.QueryRow(ctx, `SELECT status FROM core_calls WHERE id = $1`, secondID).Scan(&status)
		return err == nil && status == "running"
	}, 10*time.Second, 10*time.Millisecond, "the second call is taken up")
	var firstStatus string
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT status FROM core_calls WHERE id = $1`, first).Scan(&firstStatus))
	require.Equal(t, "running", firstStatus, "the second call came while the first was with its device")
	second, err := r.receipt(ctx, secondID, 40*time.Second)
	require.NoError(t, err)
	rc, err := r.receipt(ctx, first, 40*time.Second)
	require.NoError(t, err)
	_, hits := labResult(t, rc)
	require.Equal(t, 1, hits)
	require.False(t, rc.IdempotencyHit)
	require.Equal(t, registry.StatusSucceeded, second.Status, "%+v", second.Error)
	require.True(t, second.IdempotencyHit)
	require.NotNil(t, second.IdempotencyOf)
	require.Equal(t, first, *second.IdempotencyOf)
	require.JSONEq(t, string(rc.Result), string(second.Result))
	require.Equal(t, 1, r.lab.count("order", "k1"), "the service heard the key once")

	refused := r.do("lab.order", map[string]any{"key": "k2", "fail": true}, "laptop", 0)
	require.Equal(t, registry.StatusFailed, refused.Status)
	again := r.do("lab.order", map[string]any{"key": "k2"}, "laptop", 0)
	require.False(t, again.IdempotencyHit, "a failed call gives its key back")
	_, hits = labResult(t, again)
	require.Equal(t, 2, hits)
	var holders int
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT count(*) FROM core_idempotency_keys WHERE tool_name = 'lab.order'`).Scan(&holders))
	require.Equal(t, 2, holders, "k1 and k2, each held by its call that succeeded")
}

// An executor killed while its call is with a device that is then killed too: the executor that takes the
// call up finds no device alive, but the call's attempt, not the devices alive, decides its end — the effect
// may have happened, so outcome_unknown, never device_unavailable (which says it did not run).
func TestDeviceAndExecutorKilledMidCall(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	r.device("laptop", "", "")
	ctx := context.Background()

	id, err := r.call(ctx, "lab.effect", map[string]any{"key": "both", "sleep_ms": 3000}, "laptop", 1000)
	require.NoError(t, err)
	require.Equal(t, "laptop", r.awaitStarted("both"))
	r.executor.kill()
	r.procs["laptop"].kill()
	time.Sleep(1500 * time.Millisecond) // past the call's wait bound for a device
	ex, err := r.startExecutor("executor-devices-2")
	require.NoError(t, err)
	t.Cleanup(func() { ex.kill() })
	rc, err := r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	require.Equal(t, registry.StatusFailed, rc.Status)
	require.Equal(t, registry.CodeOutcomeUnknown, rc.Error.Code, rc.Error.Message)
	require.Equal(t, "laptop", rc.Device)
	require.Equal(t, 1, r.lab.count("effect", "both"))
}

// An agnostic call of a tool safe to repeat, whose device is killed mid-call, runs again on another device;
// a named call of a tool with an outside effect whose device is killed mid-call ends outcome_unknown and is
// never run again; a named call for a device that stays away ends device_unavailable.
func TestDeviceKilledMidCall(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	r.device("laptop", "", "")
	r.device("server", "", "")
	ctx := context.Background()

	id, err := r.call(ctx, "lab.whoami", map[string]any{"key": "agnostic", "sleep_ms": 2000}, "", 0)
	require.NoError(t, err)
	victim := r.awaitStarted("agnostic")
	r.procs[victim].kill()
	rc, err := r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	dev, _ := labResult(t, rc)
	survivor := map[string]string{"laptop": "server", "server": "laptop"}[victim]
	require.Equal(t, survivor, dev)
	require.Equal(t, survivor, rc.Device)
	require.Equal(t, []string{victim, survivor}, rc.DevicesTried)
	require.Equal(t, 2, r.lab.count("whoami", "agnostic"), "once on each device")

	// The survivor runs an effect and is killed mid-call: the effect may have happened, so it is not run again.
	id, err = r.call(ctx, "lab.effect", map[string]any{"key": "once", "sleep_ms": 2000}, survivor, 0)
	require.NoError(t, err)
	require.Equal(t, survivor, r.awaitStarted("once"))
	r.procs[survivor].kill()
	rc, err = r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	require.Equal(t, registry.CodeOutcomeUnknown, rc.Error.Code, rc.Error.Message)
	require.Equal(t, survivor, rc.Device)
	require.Equal(t, 1, r.lab.count("effect", "once"))

	// Both devices are away: a call for one waits its bound and ends device_unavailable, never run elsewhere.
	start := time.Now()
	rc = r.do("lab.effect", map[string]any{"key": "nobody"}, "laptop", 1000)
	require.Equal(t, registry.CodeDeviceUnavailable, rc.Error.Code, rc.Error.Message)
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.Zero(t, r.lab.count("effect", "nobody"))

	// A named call of a tool safe to repeat waits for its device to come back and runs there.
	id, err = r.call(ctx, "lab.echo_laptop", map[string]any{"key": "comeback"}, "laptop", 20000)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	r.device("laptop", "", "")
	rc, err = r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	dev, _ = labResult(t, rc)
	require.Equal(t, "laptop", dev)
}

// A device killed mid-call and started again at once, before its heartbeat deadline (10 s here), registers
// knowing nothing of the call: its registration ends the attempt lost there and then, so the call ends
// outcome_unknown at once. (A registration naming no running calls used to end nothing: the attempt stayed
// sent until the tool's 20 s timeout, and `make chaos` found calls whose job ran out of attempts meanwhile.)
func TestDeviceRestartedMidCall(t *testing.T) {
	t.Parallel()
	r := newRigT(t, "GEM_DEVICE_MISSED_HEARTBEATS=50")
	r.device("laptop", "", "")
	ctx := context.Background()

	id, err := r.call(ctx, "lab.effect", map[string]any{"key": "restarted", "sleep_ms": 5000}, "laptop", 0)
	require.NoError(t, err)
	require.Equal(t, "laptop", r.awaitStarted("restarted"))
	r.procs["laptop"].kill()
	killed := time.Now()
	r.device("laptop", "", "")
	var state string
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT state FROM core_device_attempts WHERE call_id = $1`, id).Scan(&state))
	require.Equal(t, gemsql.AttemptLost, state, "the new registration names no running call: the attempt it was sent ended")

	rc, err := r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	require.Equal(t, registry.CodeOutcomeUnknown, rc.Error.Code, rc.Error.Message)
	require.Less(t, time.Since(killed), 10*time.Second, "ended by the registration, not by the tool's timeout")
	require.Equal(t, 1, r.lab.count("effect", "restarted"))
}

// The freshest device's hub dies: its device can no longer be reached, the call handed to it is never sent,
// and after the device's heartbeat deadline it goes to the device on the other hub.
func TestDeviceFailoverAcrossHubs(t *testing.T) {
	t.Parallel()
	// Devices are dead after 5 s here: on a loaded machine the call may take a while to be routed, and it
	// must find the laptop still counted alive (at 2 s it did not, once, with the machine's load at 9).
	slow := "GEM_DEVICE_MISSED_HEARTBEATS=25"
	r := newRigT(t, slow)
	hub2, err := startBrain(r.bins, r.dbURL, append(slices.Clone(deviceRigEnv), slow), r.logw)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hub2.stop(10 * time.Second) })
	server := r.device("server", "", hub2.url)
	r.device("laptop", "", "") // on the first hub

	// Hold the server's heartbeats a moment so the laptop is the freshest, then kill the laptop's hub: the
	// laptop loses its socket, and its hub cannot record it.
	require.NoError(t, server.cmd.Process.Signal(syscall.SIGSTOP))
	require.Eventually(t, func() bool { return freshest(r) == "laptop" }, 5*time.Second, 10*time.Millisecond)
	r.brain.kill()
	ctx := context.Background()
	// It may wait 30 s for a device: the laptop's deadline, then the server's coming back, fit in it.
	id, err := r.call(ctx, "lab.whoami", map[string]any{"key": "over"}, "", 30000)
	require.NoError(t, err)
	// The server comes back once the call is handed to the laptop (however slow this machine is).
	require.Eventually(t, func() bool {
		var n int
		err := r.pool.QueryRow(ctx, `SELECT count(*) FROM core_device_attempts WHERE call_id = $1 AND device = 'laptop'`, id).Scan(&n)
		return err == nil && n == 1
	}, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, server.cmd.Process.Signal(syscall.SIGCONT))
	rc, err := r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	dev, hits := labResult(t, rc)
	require.Equal(t, "server", dev)
	require.Equal(t, 1, hits)
	require.Equal(t, 1, r.lab.count("whoami", "over"))
	require.Equal(t, "server", rc.Device)
	require.Equal(t, []string{"laptop", "server"}, rc.DevicesTried, "handed to the laptop first, never sent, then to the server")
	var states []string
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT array_agg(state ORDER BY id) FROM core_device_attempts WHERE call_id = $1`, id).Scan(&states))
	require.Equal(t, []string{"unsent", "succeeded"}, states)
}

// catalogShows says whether GET /brain/tools (with the devices serving it) and MCP tools/list show a tool.
// It returns errors rather than failing: it runs inside require.Eventually's condition.
func (r *rigT) catalogShows(tool string) (inAPI, inMCP bool, err error) {
	ctx := context.Background()
	var list struct {
		Tools []struct {
			Name    string   `json:"name"`
			Devices []string `json:"devices"`
		} `json:"tools"`
	}
	if _, err := r.api(ctx, "GET", "/brain/tools", nil, &list); err != nil {
		return false, false, err
	}
	for _, tl := range list.Tools {
		if tl.Name == tool {
			inAPI = len(tl.Devices) > 0
		}
	}
	rpc, err := newMCPHTTP(ctx, r.client, r.brain)
	if err != nil {
		return false, false, err
	}
	var mcpList struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := rpc.rpc(ctx, 1, "tools/list", map[string]any{}, &mcpList); err != nil {
		return false, false, err
	}
	for _, tl := range mcpList.Tools {
		inMCP = inMCP || tl.Name == registry.PortableName(tool) // the name model APIs take (docs/mcp-server.md)
	}
	return inAPI, inMCP, nil
}

// freshest is the alive device with the latest heartbeat ("" if none, or on an error: it runs inside
// require.Eventually's condition).
func freshest(r *rigT) string {
	var name string
	_ = r.pool.QueryRow(context.Background(),
		`SELECT name FROM core_devices d WHERE gem_device_alive(d) ORDER BY last_heartbeat DESC LIMIT 1`).Scan(&name)
	return name
}

// A device that stops heartbeating (frozen) is dead after the missed heartbeats: its tools leave the
// catalog until it beats again.
func TestDeviceHeartbeatExpiry(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	p := r.device("laptop", "", "")
	ctx := context.Background()

	// While it is there, its tools are in the catalog: GET /brain/tools, tool search and MCP tools/list.
	require.Eventually(t, func() bool { a, m, err := r.catalogShows("lab.echo_laptop"); return err == nil && a && m }, 10*time.Second, 50*time.Millisecond)
	var found struct {
		Matches []struct {
			Name string `json:"name"`
		} `json:"matches"`
	}
	_, err := r.api(ctx, "GET", "/brain/tools?q=which+device+answered&limit=3", nil, &found)
	require.NoError(t, err)
	require.NotEmpty(t, found.Matches)
	require.Equal(t, "lab.whoami", found.Matches[0].Name)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	require.NoError(t, r.awaitAlive(nil, "laptop", false))
	// The hub's sweep records it: disconnected, though its socket never closed.
	require.Eventually(t, func() bool {
		d, err := gemsql.DeviceGet(ctx, r.pool, "laptop")
		return err == nil && !d.Connected && d.DisconnectedAt != nil
	}, 5*time.Second, 20*time.Millisecond)
	rc := r.do("lab.echo_laptop", map[string]any{"key": "frozen"}, "laptop", 300)
	require.Equal(t, registry.CodeDeviceUnavailable, rc.Error.Code)

	require.Eventually(t, func() bool { a, m, err := r.catalogShows("lab.echo_laptop"); return err == nil && !a && !m }, 10*time.Second, 50*time.Millisecond,
		"a dead device's tools leave the catalog")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
	require.NoError(t, r.awaitAlive(nil, "laptop", true))
	require.Eventually(t, func() bool { a, m, err := r.catalogShows("lab.echo_laptop"); return err == nil && a && m }, 10*time.Second, 50*time.Millisecond,
		"its tools come back with it")
	dev, _ := labResult(t, r.do("lab.echo_laptop", map[string]any{"key": "thawed"}, "laptop", 0))
	require.Equal(t, "laptop", dev)
}

// Registering again replaces the device's tools; a second process with the same token ends; a wrong token
// and a registration with problems are refused, and the device says why.
func TestDeviceRegistration(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	first := r.device("laptop", "", "")
	ctx := context.Background()

	// The same device started again: the newer connection wins, the older process is told and ends.
	var firstReg uuid.UUID
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT registration FROM core_devices WHERE name = 'laptop'`).Scan(&firstReg))
	path, err := r.writeRegistry("laptop", "")
	require.NoError(t, err)
	second, err := r.startDeviceAt("laptop", r.tokens["laptop"], path, "", false)
	require.NoError(t, err)
	t.Cleanup(func() { second.kill() })
	select {
	case <-first.done:
		require.Contains(t, first.tail(), "two devices share a token")
	case <-second.done:
		require.Contains(t, second.tail(), "two devices share a token")
	case <-time.After(20 * time.Second):
		t.Fatal("neither device process ended")
	}
	// The older connection is closed (and what it read stored) before the newer registration is recorded:
	// wait for that record, or it could land after the next process's.
	require.Eventually(t, func() bool {
		var reg uuid.UUID
		err := r.pool.QueryRow(ctx, `SELECT registration FROM core_devices WHERE name = 'laptop'`).Scan(&reg)
		return err == nil && reg != firstReg
	}, 20*time.Second, 20*time.Millisecond, "the newer connection's registration is recorded")
	first.kill()
	second.kill()

	// Registering with other tools replaces the device's tools.
	only := strings.Replace(strings.ReplaceAll(labTools, "DEVICE", "laptop"), `"name": "lab.echo_laptop"`, `"name": "lab.echo_again"`, 1)
	r.device("laptop", only, "")
	var tools []string
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT array_agg(tool_name ORDER BY tool_name) FROM core_device_tools WHERE device = 'laptop'`).Scan(&tools))
	require.Equal(t, []string{"lab.echo_again", "lab.effect", "lab.order", "lab.whoami"}, tools)
	rc := r.do("lab.echo_laptop", map[string]any{"key": "gone"}, "laptop", 0)
	require.Equal(t, registry.CodeUnknownDevice, rc.Error.Code, rc.Error.Message)

	// A wrong token is refused: the device exits 1 and says so.
	path, err = r.writeRegistry("intruder", "")
	require.NoError(t, err)
	bad, err := r.startDeviceAt("intruder", "gemdev_not-a-token", path, "", false)
	require.NoError(t, err)
	select {
	case <-bad.done:
		require.Equal(t, 1, bad.cmd.ProcessState.ExitCode())
		require.Contains(t, bad.tail(), "device token is not valid")
	case <-time.After(20 * time.Second):
		t.Fatal("a device with a wrong token kept running")
	}

	// An agnostic tool whose contract differs from another device's is refused, with the problem named.
	token, err := r.addDevice(ctx, "phone")
	require.NoError(t, err)
	r.tokens["phone"] = token
	differs := strings.Replace(strings.ReplaceAll(labTools, "DEVICE", "phone"), `"timeout_ms": 20000,
      "device_agnostic": true`, `"timeout_ms": 9000,
      "device_agnostic": true`, 1)
	path, err = r.writeRegistry("phone", differs)
	require.NoError(t, err)
	refused, err := r.startDeviceAt("phone", token, path, "", false)
	require.NoError(t, err)
	select {
	case <-refused.done:
		require.Equal(t, 1, refused.cmd.ProcessState.ExitCode())
		require.Contains(t, refused.tail(), "is device_agnostic but differs from device laptop's contract")
	case <-time.After(20 * time.Second):
		t.Fatal("a refused device kept running")
	}
	d, err := gemsql.DeviceGet(ctx, r.pool, "phone")
	require.NoError(t, err)
	require.False(t, d.Alive)
	require.Empty(t, d.Tools)

	// A device may serve only tools whose permissions its grants cover: the lab's write:external tools are
	// refused for one granted read:* alone, and named.
	var made struct {
		Token string `json:"token"`
	}
	status, err := r.api(ctx, "POST", "/devices", map[string]any{"name": "tablet", "permissions": []string{"read:*"}}, &made)
	require.NoError(t, err)
	require.Equal(t, 201, status)
	path, err = r.writeRegistry("tablet", "")
	require.NoError(t, err)
	narrow, err := r.startDeviceAt("tablet", made.Token, path, "", false)
	require.NoError(t, err)
	select {
	case <-narrow.done:
		require.Equal(t, 1, narrow.cmd.ProcessState.ExitCode())
		require.Contains(t, narrow.tail(), "needs [write:external], which device tablet may not serve")
	case <-time.After(20 * time.Second):
		t.Fatal("a device serving tools beyond its grants kept running")
	}
	// Granted them, it registers.
	status, err = r.api(ctx, "PATCH", "/devices/tablet", map[string]any{"permissions": []string{"read:*", "write:external"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 200, status)
	r.tokens["tablet"] = made.Token
	r.device("tablet", "", "")

	// A device deleted on the hub is told at its next heartbeat, and ends.
	var deleted map[string]any
	status, err = r.api(ctx, "DELETE", "/devices/laptop", nil, &deleted)
	require.NoError(t, err)
	require.Equal(t, 200, status, "%v", deleted)
	laptop := r.procs["laptop"]
	select {
	case <-laptop.done:
		require.Equal(t, 1, laptop.cmd.ProcessState.ExitCode())
		require.Contains(t, laptop.tail(), "deleted on the hub")
	case <-time.After(20 * time.Second):
		t.Fatal("a deleted device kept running")
	}
	status, err = r.api(ctx, "GET", "/devices/laptop", nil, &deleted)
	require.NoError(t, err)
	require.Equal(t, 404, status)
}

// scriptedDevice is a device speaking the protocol from the test itself, over a real WebSocket to the hub:
// it registers the lab tools and does exactly what the test says, nothing else (no heartbeats).
type scriptedDevice struct {
	t  *testing.T
	ws *websocket.Conn
}

// connectScripted connects as device name and registers the lab tools, naming no running call and no answer
// (a fresh process).
func (r *rigT) connectScripted(name string) *scriptedDevice {
	r.t.Helper()
	ctx := context.Background()
	reg, err := registry.Parse([]byte(strings.ReplaceAll(labTools, "DEVICE", name)))
	require.NoError(r.t, err)
	hello := registry.DeviceMessage{Type: registry.DeviceMsgRegister}
	for _, tl := range reg.Tools() {
		hello.Tools = append(hello.Tools, tl.Contract())
	}
	url := strings.Replace(r.brain.url, "http://", "ws://", 1) + "/devices/connect"
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + r.tokens[name]}}})
	require.NoError(r.t, err)
	r.t.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(1 << 20)
	require.NoError(r.t, wsjson.Write(ctx, ws, &hello))
	d := &scriptedDevice{t: r.t, ws: ws}
	require.Equal(r.t, registry.DeviceMsgRegistered, d.next(registry.DeviceMsgRegistered).Type)
	return d
}

// next reads messages until one of type typ.
func (d *scriptedDevice) next(typ string) registry.DeviceMessage {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var m registry.DeviceMessage
		require.NoError(d.t, wsjson.Read(ctx, d.ws, &m), "waiting for a %q message", typ)
		if m.Type == typ {
			return m
		}
	}
}

// answerAllThenVanish reads n calls, writes a succeeded answer to each in one burst, and cuts its socket at
// once, without a close frame: a device SIGKILLed right after it answered.
func (d *scriptedDevice) answerAllThenVanish(n int, device string) []int64 {
	d.t.Helper()
	calls := make([]registry.DeviceMessage, n)
	for i := range calls {
		calls[i] = d.next(registry.DeviceMsgCall)
	}
	ids := make([]int64, n)
	for i, c := range calls {
		ids[i] = c.Attempt
		ans := registry.DeviceAnswer{Attempt: c.Attempt, Status: registry.StatusSucceeded,
			Result: json.RawMessage(fmt.Sprintf(`{"device": %q, "hits": %d}`, device, i+1))}
		require.NoError(d.t, wsjson.Write(context.Background(), d.ws, &registry.DeviceMessage{Type: registry.DeviceMsgAnswer, Answer: &ans}))
	}
	require.NoError(d.t, d.ws.CloseNow())
	return ids
}

// A device that answers and is gone the next moment (its socket cut as by SIGKILL, before any ack): every
// answer the hub read is the call's result, whether the device comes back at once as a fresh process
// (which names no running call, so its registration ends every attempt it was sent) or never. The hub
// once dropped the answers its store had not finished when the socket ended, logging that the device
// would send them again: 6-45 answers a `make chaos` run, whose calls ended outcome_unknown (or ran again
// on another device, when they could).
func TestDeviceAnswersThenVanishes(t *testing.T) {
	t.Parallel()
	// A device is dead 10 s after its last heartbeat here: the scripted device sends none, and its calls must
	// reach it before its deadline however slow the machine is.
	r := newRigT(t, "GEM_DEVICE_MISSED_HEARTBEATS=50")
	ctx := context.Background()
	token, err := r.addDevice(ctx, "scripted")
	require.NoError(t, err)
	r.tokens["scripted"] = token
	const n = 8
	round := func(name string) []uuid.UUID {
		ids := make([]uuid.UUID, n)
		for i := range ids {
			ids[i], err = r.call(ctx, "lab.effect", map[string]any{"key": fmt.Sprint(name, i)}, "scripted", 0)
			require.NoError(t, err)
		}
		return ids
	}
	awaitSucceeded := func(ids []uuid.UUID) {
		t.Helper()
		for _, id := range ids {
			rc, err := r.receipt(ctx, id, 40*time.Second)
			require.NoError(t, err)
			require.Equal(t, registry.StatusSucceeded, rc.Status, "the device answered, yet: %+v", rc.Error)
			dev, _ := labResult(t, rc)
			require.Equal(t, "scripted", dev)
			var states []string
			require.NoError(t, r.pool.QueryRow(ctx, `SELECT array_agg(state ORDER BY id) FROM core_device_attempts WHERE call_id = $1`, id).Scan(&states))
			require.Equal(t, []string{gemsql.AttemptSucceeded}, states)
		}
	}

	// Answered, gone, and back at once as a fresh process.
	first := r.connectScripted("scripted")
	calls := round("back")
	first.answerAllThenVanish(n, "scripted")
	again := r.connectScripted("scripted")
	awaitSucceeded(calls)

	// Answered and gone for good: the calls end at its answers, not at its heartbeat deadline.
	calls = round("gone")
	again.answerAllThenVanish(n, "scripted")
	awaitSucceeded(calls)
}
