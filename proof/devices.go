package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The device rig: a hub (a brain), executors, devices (`executor device` processes) and the local HTTP
// service their rest tools call, which counts every request it gets: the proof that a call ran once.

// labTools is a device registry of three tools calling the lab service, for the device named DEVICE:
//   - lab.whoami: read-only, safe to repeat, and device_agnostic: any device may answer it;
//   - lab.effect: one outside effect per call (mode none): it must never run twice;
//   - lab.echo_<DEVICE>: a tool only this device serves;
//   - lab.order: one outside effect per idempotency key (mode keyed); fail: true makes the service refuse it.
//
// sleep_ms holds the request at the service, so a test can kill a device mid-call.
const labTools = `{
  "version": "lab",
  "tools": [
    {
      "name": "lab.whoami",
      "description": "Says which device answered, through the lab service.",
      "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}},
        "required": ["key"], "additionalProperties": false},
      "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
      "permissions": ["read:external"],
      "idempotency": {"mode": "safe-retry"},
      "timeout_ms": 20000,
      "device_agnostic": true,
      "implementation": {"type": "rest", "method": "GET", "url": "${GEM_LAB_URL}/whoami?device=DEVICE&key={key}&sleep_ms={sleep_ms}"}
    },
    {
      "name": "lab.effect",
      "description": "Makes one outside effect at the lab service; every call makes another.",
      "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0}},
        "required": ["key"], "additionalProperties": false},
      "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
      "permissions": ["write:external"],
      "idempotency": {"mode": "none"},
      "timeout_ms": 20000,
      "implementation": {"type": "rest", "method": "POST", "url": "${GEM_LAB_URL}/effect?device=DEVICE&key={key}&sleep_ms={sleep_ms}", "body": "none"}
    },
    {
      "name": "lab.echo_DEVICE",
      "description": "Echoes a key, through this device only.",
      "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}}, "required": ["key"], "additionalProperties": false},
      "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
      "permissions": ["read:external"],
      "idempotency": {"mode": "safe-retry"},
      "timeout_ms": 5000,
      "implementation": {"type": "rest", "method": "GET", "url": "${GEM_LAB_URL}/whoami?device=DEVICE&key={key}"}
    },
    {
      "name": "lab.order",
      "description": "Places an order at the lab service, once per key.",
      "input_schema": {"type": "object", "properties": {"key": {"type": "string", "minLength": 1}, "sleep_ms": {"type": "integer", "minimum": 0},
        "fail": {"type": "boolean"}}, "required": ["key"], "additionalProperties": false},
      "output_schema": {"type": "object", "properties": {"device": {"type": "string"}, "hits": {"type": "integer"}}, "required": ["device", "hits"]},
      "permissions": ["write:external"],
      "idempotency": {"mode": "keyed", "key_field": "key"},
      "timeout_ms": 20000,
      "implementation": {"type": "rest", "method": "POST", "url": "${GEM_LAB_URL}/order?device=DEVICE&key={key}&sleep_ms={sleep_ms}&fail={fail}", "body": "none"}
    }
  ]
}`

// labService is the HTTP service the lab tools call. It counts requests by path and key.
type labService struct {
	srv  *http.Server
	url  string
	mu   sync.Mutex
	hits map[string]int // "effect/key" → requests
	// answered counts the requests whose answer was written in full, by the same key: the device had the
	// result unless it died in the instant after.
	answered map[string]int
	// inFlight and mostInFlight count the requests being served, by kind ("whoami").
	inFlight, mostInFlight map[string]int
	// started is signalled when a request with sleep_ms begins, so a test knows a call is under way.
	started chan string
}

func startLabService() (*labService, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &labService{url: "http://" + ln.Addr().String(), hits: map[string]int{}, answered: map[string]int{}, started: make(chan string, 1000),
		inFlight: map[string]int{}, mostInFlight: map[string]int{}}
	mux := http.NewServeMux()
	handle := func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		kind := strings.TrimPrefix(r.URL.Path, "/")
		key := kind + "/" + q.Get("key")
		l.mu.Lock()
		l.hits[key]++
		n := l.hits[key]
		l.inFlight[kind]++
		l.mostInFlight[kind] = max(l.mostInFlight[kind], l.inFlight[kind])
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			l.inFlight[kind]--
			l.mu.Unlock()
		}()
		if ms, _ := strconv.Atoi(q.Get("sleep_ms")); ms > 0 {
			l.started <- q.Get("device") + " " + key
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Duration(ms) * time.Millisecond):
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if q.Get("fail") == "true" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "refused, as asked"})
			return
		}
		if json.NewEncoder(w).Encode(map[string]any{"device": q.Get("device"), "hits": n}) == nil {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			l.mu.Lock()
			l.answered[key]++
			l.mu.Unlock()
		}
	}
	mux.HandleFunc("GET /whoami", handle)
	mux.HandleFunc("POST /effect", handle)
	mux.HandleFunc("POST /order", handle)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

func (l *labService) count(kind, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits[kind+"/"+key]
}

// answeredCount is how many requests of kind and key got their whole answer written.
func (l *labService) answeredCount(kind, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered[kind+"/"+key]
}

// most is the most requests of kind the service has served at once.
func (l *labService) most(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mostInFlight[kind]
}

func (l *labService) close() { _ = l.srv.Close() }

// deviceRig is a hub with its executors, its devices and the lab service.
type deviceRig struct {
	bins     binaries
	dbURL    string
	pool     *pgxpool.Pool
	brain    *brainProc
	executor *proc
	lab      *labService
	dir      string
	logw     io.Writer
	client   *http.Client
}

// deviceRigEnv tunes the rig for tests and chaos: heartbeats every 200 ms, a device dead after 5 missed (1 s;
// fewer declared a starved device dead on a busy two-core machine).
var deviceRigEnv = []string{"GEM_DEVICE_HEARTBEAT=200ms", "GEM_DEVICE_MISSED_HEARTBEATS=5"}

// newDeviceRig starts the lab service, an executor (the brain's health needs one) and a hub.
func newDeviceRig(bins binaries, dbURL string, pool *pgxpool.Pool, dir string, logw io.Writer, hubEnv ...string) (*deviceRig, error) {
	lab, err := startLabService()
	if err != nil {
		return nil, err
	}
	r := &deviceRig{bins: bins, dbURL: dbURL, pool: pool, lab: lab, dir: dir, logw: logw, client: &http.Client{Timeout: 30 * time.Second}}
	if r.executor, err = r.startExecutor("executor-devices-1"); err != nil {
		r.close()
		return nil, err
	}
	if r.brain, err = startBrain(bins, dbURL, append(slices.Clone(deviceRigEnv), hubEnv...), logw); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *deviceRig) close() {
	if r.brain != nil && !r.brain.exited() {
		_ = r.brain.stop(10 * time.Second)
	}
	if r.executor != nil {
		_ = r.executor.stop(10 * time.Second)
	}
	r.lab.close()
}

// startExecutor starts an executor of the rig (devices' calls wait GEM_DEVICE_WAIT=5s by default).
func (r *deviceRig) startExecutor(id string, env ...string) (*proc, error) {
	return startExecutor(r.bins, r.dbURL, id, append([]string{"GEM_DEVICE_WAIT=5s"}, env...), r.logw, r.pool, true)
}

// api makes a request to the brain's API and decodes the answer into out (when not nil).
func (r *deviceRig) api(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.brain.url+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+r.brain.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s answered %s: %.300s", method, path, resp.Status, data)
		}
	}
	return resp.StatusCode, nil
}

// addDevice makes a device and returns its token.
func (r *deviceRig) addDevice(ctx context.Context, name string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	status, err := r.api(ctx, http.MethodPost, "/devices", map[string]any{"name": name, "owner": "proof"}, &out)
	if err != nil {
		return "", err
	}
	if status != http.StatusCreated || out.Token == "" {
		return "", fmt.Errorf("POST /devices %s: %d", name, status)
	}
	return out.Token, nil
}

// writeRegistry writes the lab tools of a device (or the given document) and returns its path.
func (r *deviceRig) writeRegistry(name, doc string) (string, error) {
	if doc == "" {
		doc = strings.ReplaceAll(labTools, "DEVICE", name)
	}
	path := filepath.Join(r.dir, name+".registry.json")
	return path, os.WriteFile(path, []byte(doc), 0o600)
}

// startDeviceAt runs `executor device` for a device, connecting to hub (the rig's brain when empty), and
// with wait waits until it is alive.
func (r *deviceRig) startDeviceAt(name, token, registryPath, hub string, wait bool) (*proc, error) {
	if hub == "" {
		hub = r.brain.url
	}
	env := []string{"GEM_DEVICE_HUB=" + hub, "GEM_DEVICE_TOKEN=" + token, "GEM_DEVICE_REGISTRY=" + registryPath,
		"GEM_LAB_URL=" + r.lab.url, "GEM_LOG_LEVEL=warn"}
	var before *uuid.UUID
	_ = r.pool.QueryRow(context.Background(), `SELECT registration FROM core_devices WHERE name = $1`, name).Scan(&before)
	p, err := startProc("device-"+name, r.bins.executor, []string{"device"}, env, r.logw)
	if err != nil || !wait {
		return p, err
	}
	// Alive with a registration of its own: an earlier process of the device may still count as alive.
	err = p.awaitCondition(30*time.Second, func() (bool, error) {
		var reg *uuid.UUID
		var alive bool
		err := r.pool.QueryRow(context.Background(), `SELECT registration, gem_device_alive(d) FROM core_devices d WHERE name = $1`, name).Scan(&reg, &alive)
		return err == nil && alive && reg != nil && (before == nil || *reg != *before), err
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// awaitAlive waits until the hub counts the device alive (or, with alive false, dead).
func (r *deviceRig) awaitAlive(p *proc, name string, alive bool) error {
	check := func() (bool, error) {
		d, err := gemsql.DeviceGet(context.Background(), r.pool, name)
		if err != nil {
			return false, err
		}
		return d.Alive == alive, nil
	}
	if p != nil && alive {
		return p.awaitCondition(30*time.Second, check)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := check()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("device %s: alive is not %v after 30s (%v)", name, alive, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call makes a call by plain SQL, naming a device or not, and returns its id.
func (r *deviceRig) call(ctx context.Context, tool string, input map[string]any, device string, waitMS int) (uuid.UUID, error) {
	in, _ := json.Marshal(input)
	var dev, wait any
	if device != "" {
		dev = device
	}
	if waitMS > 0 {
		wait = waitMS
	}
	var id uuid.UUID
	err := r.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, device, device_wait_ms)
		VALUES ($1, $2, $3, $4) RETURNING id`, tool, string(in), dev, wait).Scan(&id)
	return id, err
}

// receipt waits for a call's receipt.
func (r *deviceRig) receipt(ctx context.Context, id uuid.UUID, within time.Duration) (*registry.Receipt, error) {
	w := gemsql.NewReceiptWaiter(r.pool, nil)
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop()
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return w.WaitOne(wctx, id)
}
