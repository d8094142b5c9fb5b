// Package devicehub is the hub of GEM's devices (docs/devices.md): it accepts devices' WebSockets at
// /devices/connect, records the tools they register in PostgreSQL, hands them the calls executors relay
// through core_device_attempts, and stores their answers there. The hub never writes a receipt: the executor
// that relays a call does, in the usual transaction. Any number of brains may be hubs; a device is connected
// to one of them at a time.
package devicehub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/testsignal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// Defaults of Config.
const (
	// HeartbeatDefault is how often a device heartbeats.
	HeartbeatDefault = 5 * time.Second
	// MissedHeartbeatsDefault is how many heartbeats a device may miss before it is dead.
	MissedHeartbeatsDefault = 3
	// MaxMessageDefault bounds one message from a device (an answer's result, a registration).
	MaxMessageDefault = 16 << 20
	// registerWait is how long a new connection has to register.
	registerWait = 10 * time.Second
)

// Config configures the hub. Zero values mean the defaults.
type Config struct {
	// Heartbeat is how often devices heartbeat. Defaults to 5s (GEM_DEVICE_HEARTBEAT).
	Heartbeat time.Duration
	// MissedHeartbeats is how many heartbeats a device may miss before it is dead: its tools leave the
	// catalog and its open attempts end. Defaults to 3 (GEM_DEVICE_MISSED_HEARTBEATS).
	MissedHeartbeats int
	// HubID names this brain in core_devices.hub. Defaults to brain-<hostname>-<pid>.
	HubID string
	// MaxMessage bounds one message from a device, in bytes. Defaults to 16 MiB.
	MaxMessage int64
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Heartbeat == 0 {
		c.Heartbeat = HeartbeatDefault
	}
	if c.MissedHeartbeats == 0 {
		c.MissedHeartbeats = MissedHeartbeatsDefault
	}
	if c.HubID == "" {
		host, _ := os.Hostname()
		c.HubID = fmt.Sprintf("brain-%s-%d", host, os.Getpid())
	}
	if c.MaxMessage == 0 {
		c.MaxMessage = MaxMessageDefault
	}
	return c
}

// Validate reports what is wrong with the configuration (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	if c.Heartbeat < 100*time.Millisecond || c.Heartbeat > 5*time.Minute {
		errs = append(errs, fmt.Errorf("heartbeat must be between 100ms and 5m, not %s (GEM_DEVICE_HEARTBEAT)", c.Heartbeat))
	}
	if c.MissedHeartbeats < 1 || c.MissedHeartbeats > 100 {
		errs = append(errs, fmt.Errorf("MissedHeartbeats must be between 1 and 100, not %d (GEM_DEVICE_MISSED_HEARTBEATS)", c.MissedHeartbeats))
	}
	if c.MaxMessage < 64<<10 {
		errs = append(errs, fmt.Errorf("MaxMessage must be at least 64 KiB, not %d", c.MaxMessage))
	}
	return errors.Join(errs...)
}

// deadAfter is how long a device counts as alive after its last heartbeat.
func (c Config) deadAfter() time.Duration { return c.Heartbeat * time.Duration(c.MissedHeartbeats) }

// Params are what the hub needs.
type Params struct {
	Config   Config
	Registry *registry.Registry
	Pool     *pgxpool.Pool
	Log      zerolog.Logger
}

// Hub accepts devices and relays calls to them.
type Hub struct {
	cfg  Config
	reg  *registry.Registry
	pool *pgxpool.Pool
	// relayPool stores devices' answers without waiting for the disk (synchronous_commit off): the executor
	// waiting on an answer is told at once, and the device is acknowledged only after a write that does wait
	// (see session.acknowledge), since it forgets an answer once acknowledged. Marking an attempt sent, the
	// gate before a device may see a call, goes through the main pool and waits for the disk.
	relayPool *pgxpool.Pool
	log       zerolog.Logger
	listener  *gemsql.Listener

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	wg       sync.WaitGroup // every session's serve, counted under mu while not closed
	// base is the context of every session; Close cancels it, ending the sessions still registering.
	base       context.Context
	cancelBase context.CancelFunc

	stop       context.CancelFunc
	sweeping   chan struct{}
	cataloging chan struct{}

	onChange   []func(context.Context, CatalogChange)
	catalogMu  sync.Mutex
	catalog    map[string]*registry.Tool
	catalogKey [32]byte
	catalogSet bool
	contracts  map[[32]byte]*registry.Tool

	// TestSignals are events a test of the brain waits for; they do nothing unless the test inits them.
	TestSignals TestSignals
}

// TestSignals are the hub's events a test waits for instead of polling.
type TestSignals struct {
	// CatalogChanged is a change of the device tools, once the registry and every OnCatalogChange listener
	// have it.
	CatalogChanged testsignal.Signal[CatalogChange]
}

// New builds a hub; Start it before serving.
func New(p *Params) (*Hub, error) {
	cfg := p.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// synchronous_commit is set at connect, which a transaction pooler refuses: the session URL.
	relayCfg := gemsql.Session(p.Pool)
	relayCfg.MaxConns, relayCfg.MinConns = 8, 0
	relayCfg.ConnConfig.RuntimeParams["application_name"] = "gem-brain-devices"
	relayCfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	relayPool, err := pgxpool.NewWithConfig(context.Background(), relayCfg)
	if err != nil {
		return nil, fmt.Errorf("error creating the devices' pool: %w", err)
	}
	base, cancelBase := context.WithCancel(context.Background())
	return &Hub{
		base: base, cancelBase: cancelBase,
		cfg: cfg, reg: p.Registry, pool: p.Pool, relayPool: relayPool, log: p.Log.With().Str("component", "devices").Logger(),
		listener: gemsql.NewListener(p.Pool, "device hub listener", []string{gemsql.DeviceDispatchChannel, gemsql.DeviceChangedChannel}, gemlog.Slog(p.Log)),
		sessions: map[string]*session{}, contracts: map[[32]byte]*registry.Tool{},
	}, nil
}

// Start listens for attempts to dispatch, expires devices that stop heartbeating, and keeps the registry's
// device tools current (the first read is done before Start returns).
func (h *Hub) Start(ctx context.Context) error {
	if err := h.listener.Start(ctx); err != nil {
		return err
	}
	if err := h.RefreshCatalog(ctx); err != nil {
		h.log.Warn().Err(err).Msg("could not read the devices' tools; retrying in the background")
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.stop, h.sweeping, h.cataloging = cancel, make(chan struct{}), make(chan struct{})
	go h.sweep(sctx)
	go h.watchCatalog(sctx)
	return nil
}

// Close closes every device's socket (devices reconnect, to this brain restarted or another) and stops.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	sessions := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	// Each close waits for the device's close frame (up to seconds): all at once, then the rest are cut.
	var closing sync.WaitGroup
	for _, s := range sessions {
		closing.Add(1)
		go func() {
			defer closing.Done()
			s.close(websocket.StatusGoingAway, "the hub is shutting down")
		}()
	}
	closing.Wait()
	h.cancelBase()
	h.wg.Wait()
	if h.stop != nil {
		h.stop()
		<-h.sweeping
		<-h.cataloging
	}
	h.listener.Stop()
	h.relayPool.Close()
}

// sweep expires devices whose heartbeat deadline passed, once per heartbeat interval.
func (h *Hub) sweep(ctx context.Context) {
	defer close(h.sweeping)
	t := time.NewTicker(h.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = gemlog.Guarded(&h.log, "expiring silent devices", func() error { h.expire(ctx); return nil })
	}
}

// expire ends the devices whose heartbeat deadline passed.
func (h *Hub) expire(ctx context.Context) {
	rows, err := h.pool.Query(ctx, `SELECT gem_devices_expire()`)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn().Err(err).Msg("could not expire silent devices")
		}
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		h.log.Warn().Str("device", n).Dur("dead_after", h.cfg.deadAfter()).Msg("device stopped heartbeating: its tools leave the catalog and its open calls end")
	}
}

// httpError answers before the WebSocket is accepted, as the brain's API does.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gem-devices"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "errors": []map[string]string{{"code": code, "message": msg}}})
}

// ServeHTTP accepts a device's WebSocket: GET /devices/connect with Authorization: Bearer <device token>.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		httpError(w, http.StatusUnauthorized, "unauthorized", "missing device token (send Authorization: Bearer <device token>)")
		return
	}
	// Tokens are stored as SHA-256 hashes and found by their hash: a guess reveals nothing by its timing.
	var name string
	var grants registry.Grants
	err := h.pool.QueryRow(r.Context(), `SELECT name, permissions FROM core_devices WHERE token_hash = $1`, gemsql.TokenHash(token)).Scan(&name, &grants)
	if errors.Is(err, pgx.ErrNoRows) {
		httpError(w, http.StatusUnauthorized, "unauthorized", "invalid device token")
		return
	}
	if err != nil {
		if !gemsql.DatabaseAway(err) {
			h.log.Error().Err(err).Msg("error reading a device token")
			httpError(w, http.StatusInternalServerError, "internal", "internal error")
			return
		}
		h.log.Warn().Err(err).Msg("cannot read a device token: the database is away")
		httpError(w, http.StatusServiceUnavailable, "unavailable", "the database cannot be reached")
		return
	}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.wg.Add(1) // under mu: Close, once it has set closed, waits for every session counted
	}
	h.mu.Unlock()
	if closed {
		httpError(w, http.StatusServiceUnavailable, "unavailable", "the hub is shutting down")
		return
	}
	defer h.wg.Done()
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the request
	}
	ws.SetReadLimit(h.cfg.MaxMessage)
	s := &session{h: h, name: name, grants: grants, ws: ws, log: h.log.With().Str("device", name).Logger(), inflight: map[int64]bool{},
		answers: make(chan *registry.DeviceAnswer, 16), acks: make(chan int64, 1024), stored: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(h.base)
	s.guarded(s.serve)
}
