// Package deviceagent is `executor device`: the agent a person's machine runs to serve tools to GEM's hub
// (docs/devices.md). It connects out to a brain over an authenticated WebSocket, registers the tools of a
// local registry file (rest and mcp tools: their implementations stay here), runs the calls the hub hands
// it, and answers until the hub acknowledges — across dropped connections and hub restarts. It holds no
// database credentials; every receipt is written on the hub side.
package deviceagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/remote"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Defaults of Config.
const (
	// RegistryPathDefault is the device's registry file.
	RegistryPathDefault = "device.registry.json"
	// MaxRunningDefault is how many calls the device runs at once.
	MaxRunningDefault = 32
	// ReconnectMaxDefault bounds the wait between two connection attempts.
	ReconnectMaxDefault = 10 * time.Second
	// ConnectPath is the hub's WebSocket route.
	ConnectPath = "/devices/connect"
	// maxMessage bounds one message from the hub (a call's input).
	maxMessage = 16 << 20
)

// Hub close codes (brain/devicehub): a refused registration and a replaced connection end the agent, since
// reconnecting cannot help.
const (
	closeRefused  websocket.StatusCode = 4000
	closeReplaced websocket.StatusCode = 4001
	closeDeleted  websocket.StatusCode = 4002
)

// Config configures a device.
type Config struct {
	// HubURL is the brain's base URL (http://host:port, https://…, or ws:// and wss://). Required
	// (GEM_DEVICE_HUB).
	HubURL string
	// Token is the device's token, from POST /devices (brain devices add). Required (GEM_DEVICE_TOKEN, or
	// GEM_DEVICE_TOKEN_FILE naming a file that holds it).
	Token string
	// RegistryPath is the registry file of the tools the device serves. Defaults to device.registry.json
	// (GEM_DEVICE_REGISTRY).
	RegistryPath string
	// MaxRunning is how many calls run at once; more wait. Defaults to 32 (GEM_DEVICE_MAX_RUNNING).
	MaxRunning int
	// ReconnectMax bounds the wait between connection attempts. Defaults to 10s.
	ReconnectMax time.Duration
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.RegistryPath == "" {
		c.RegistryPath = RegistryPathDefault
	}
	if c.MaxRunning == 0 {
		c.MaxRunning = MaxRunningDefault
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = ReconnectMaxDefault
	}
	return c
}

// Validate reports what is wrong with the configuration, naming the variables to set.
func (c Config) Validate() error {
	var errs []error
	if c.HubURL == "" {
		errs = append(errs, errors.New("the hub's URL is required (GEM_DEVICE_HUB, e.g. http://127.0.0.1:8088)"))
	} else if _, err := connectURL(c.HubURL); err != nil {
		errs = append(errs, err)
	}
	if c.Token == "" {
		errs = append(errs, errors.New("the device token is required (GEM_DEVICE_TOKEN or GEM_DEVICE_TOKEN_FILE; `brain devices add NAME` makes one)"))
	}
	if c.MaxRunning < 1 || c.MaxRunning > 10_000 {
		errs = append(errs, fmt.Errorf("MaxRunning must be between 1 and 10000, not %d (GEM_DEVICE_MAX_RUNNING)", c.MaxRunning))
	}
	return errors.Join(errs...)
}

// connectURL is the hub's WebSocket URL for a base URL.
func connectURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("GEM_DEVICE_HUB %q is not a URL like http://127.0.0.1:8088", base)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("GEM_DEVICE_HUB %q must be http, https, ws or wss", base)
	}
	if !strings.HasSuffix(u.Path, ConnectPath) {
		u.Path += ConnectPath
	}
	return u.String(), nil
}

// Agent is a running device.
type Agent struct {
	cfg      Config
	url      string
	reg      *registry.Registry
	handlers executor.Handlers
	log      zerolog.Logger
	closeFn  func()
	sem      chan struct{}

	mu      sync.Mutex
	ws      *websocket.Conn // the current connection, nil between connections
	running map[int64]context.CancelFunc
	unacked map[int64]registry.DeviceAnswer
	// acked are answers the hub acknowledged, kept a while: an attempt handed over again (the hub's record
	// of it lost with a crash of its database) gets the same answer instead of a second run.
	acked    map[int64]ackedAnswer
	ackOrder []int64
	wg       sync.WaitGroup
}

type ackedAnswer struct {
	answer registry.DeviceAnswer
	at     time.Time
}

// ackedKeep bounds how long and how many acknowledged answers are kept.
const (
	ackedKeep = 10 * time.Minute
	ackedMax  = 10_000
)

// rememberAcked moves an acknowledged answer to acked (mu held).
func (a *Agent) rememberAcked(id int64) {
	ans, ok := a.unacked[id]
	if !ok {
		return
	}
	delete(a.unacked, id)
	a.acked[id] = ackedAnswer{answer: ans, at: time.Now()}
	a.ackOrder = append(a.ackOrder, id)
	for len(a.ackOrder) > 0 {
		oldest := a.ackOrder[0]
		if e, ok := a.acked[oldest]; ok && len(a.ackOrder) <= ackedMax && time.Since(e.at) < ackedKeep {
			break
		}
		delete(a.acked, oldest)
		a.ackOrder = a.ackOrder[1:]
	}
}

// ErrRefused is returned by Run when the hub refused the device for good: its registration (the problems
// are logged), its token, or another process connected with the same token.
var ErrRefused = errors.New("the hub refused the device")

// New loads the device's registry and prepares its tools. Every tool must be a rest, mcp or script tool: a
// device has no database for Go handlers.
func New(ctx context.Context, cfg Config, log zerolog.Logger) (*Agent, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := connectURL(cfg.HubURL)
	reg, err := registry.Load(cfg.RegistryPath)
	if err != nil {
		return nil, err
	}
	var goTools []string
	for _, t := range reg.Tools() {
		if t.Implementation == nil {
			goTools = append(goTools, t.Name)
		}
	}
	if len(goTools) > 0 {
		return nil, fmt.Errorf("%s: a device runs rest, mcp and script tools; these have no implementation: %s", cfg.RegistryPath, strings.Join(goTools, ", "))
	}
	h := executor.Handlers{}
	closeFn, err := remote.Register(ctx, reg, h, remote.Options{Log: log.With().Str("component", "remote").Logger()})
	if err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg, url: u, reg: reg, handlers: h, log: log, closeFn: closeFn, sem: make(chan struct{}, cfg.MaxRunning),
		running: map[int64]context.CancelFunc{}, unacked: map[int64]registry.DeviceAnswer{}, acked: map[int64]ackedAnswer{}}, nil
}

// Tools are the tools the device serves.
func (a *Agent) Tools() []*registry.Tool { return a.reg.Tools() }

// Run serves the hub until ctx ends, reconnecting after every lost connection. It returns ErrRefused
// (wrapped) when reconnecting cannot help. Calls still running when ctx ends are cancelled.
func (a *Agent) Run(ctx context.Context) error {
	defer a.closeFn()
	defer a.wg.Wait()
	defer a.cancelAll()
	backoff := 250 * time.Millisecond
	for {
		start := time.Now()
		err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrRefused) {
			return err
		}
		if time.Since(start) > time.Minute {
			backoff = 250 * time.Millisecond // it was up for a while: the drop is news, not a loop
		}
		a.log.Warn().Err(err).Dur("retry_in", backoff).Msg("not connected to the hub; reconnecting")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, a.cfg.ReconnectMax)
	}
}

func (a *Agent) cancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, cancel := range a.running {
		cancel()
	}
}

// session is one connection: register, then serve calls until it drops.
func (a *Agent) session(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	ws, resp, err := websocket.Dial(dctx, a.url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + a.cfg.Token}},
	})
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%w: the device token is not valid (401)", ErrRefused)
		}
		return fmt.Errorf("error connecting to %s: %w", a.url, err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(maxMessage)

	hello := a.hello()
	if err := a.write(ctx, ws, hello); err != nil {
		return err
	}
	var reply registry.DeviceMessage
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = wsjson.Read(rctx, ws, &reply)
	cancel()
	if err != nil {
		return a.closed(err)
	}
	if len(reply.Problems) > 0 {
		for _, p := range reply.Problems {
			a.log.Error().Str("tool", p.Tool).Str("field", p.Field).Msg(p.Message)
		}
		return fmt.Errorf("%w: the registration has %d problems (logged above)", ErrRefused, len(reply.Problems))
	}
	if reply.Type != registry.DeviceMsgRegistered || reply.HeartbeatMS <= 0 {
		return fmt.Errorf("the hub answered %q to the registration", reply.Type)
	}
	a.log.Info().Str("device", reply.Device).Int("tools", len(hello.Tools)).Int("running", len(hello.Running)).
		Int("answers", len(hello.Answers)).Msg("registered with the hub")

	a.mu.Lock()
	a.ws = ws
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.ws = nil
		a.mu.Unlock()
	}()

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go a.heartbeat(sctx, ws, time.Duration(reply.HeartbeatMS)*time.Millisecond)
	for {
		var m registry.DeviceMessage
		if err := wsjson.Read(sctx, ws, &m); err != nil {
			return a.closed(err)
		}
		switch m.Type {
		case registry.DeviceMsgCall:
			a.start(ctx, m)
		case registry.DeviceMsgAck:
			a.mu.Lock()
			a.rememberAcked(m.Attempt)
			a.mu.Unlock()
		case registry.DeviceMsgCancel:
			a.mu.Lock()
			if cancel := a.running[m.Attempt]; cancel != nil {
				cancel()
			}
			a.mu.Unlock()
		default:
			a.log.Warn().Str("type", m.Type).Msg("unknown message from the hub; ignored")
		}
	}
}

// closed turns a read error into the session's error: refusals end the agent.
func (a *Agent) closed(err error) error {
	switch websocket.CloseStatus(err) {
	case closeReplaced:
		return fmt.Errorf("%w: another process connected as this device (two devices share a token)", ErrRefused)
	case closeRefused:
		return fmt.Errorf("%w: %v", ErrRefused, err)
	case closeDeleted:
		return fmt.Errorf("%w: the device was deleted on the hub (brain devices remove)", ErrRefused)
	}
	return err
}

// hello is the registration: the tools, and what the device is running or has answered unacknowledged.
func (a *Agent) hello() *registry.DeviceMessage {
	m := &registry.DeviceMessage{Type: registry.DeviceMsgRegister, Version: executor.Version}
	for _, t := range a.reg.Tools() {
		m.Tools = append(m.Tools, t.Contract())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range a.running {
		if _, answered := a.unacked[id]; !answered {
			m.Running = append(m.Running, id)
		}
	}
	for _, ans := range a.unacked {
		m.Answers = append(m.Answers, ans)
	}
	sort.Slice(m.Running, func(i, j int) bool { return m.Running[i] < m.Running[j] })
	sort.Slice(m.Answers, func(i, j int) bool { return m.Answers[i].Attempt < m.Answers[j].Attempt })
	return m
}

func (a *Agent) write(ctx context.Context, ws *websocket.Conn, m *registry.DeviceMessage) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return wsjson.Write(wctx, ws, m)
}

func (a *Agent) heartbeat(ctx context.Context, ws *websocket.Conn, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.write(ctx, ws, &registry.DeviceMessage{Type: registry.DeviceMsgHeartbeat}); err != nil {
			ws.CloseNow() // the reader sees it and the agent reconnects
			return
		}
	}
}

// start runs a call the hub handed over, unless it is already running or answered (a call sent again after
// a reconnection is the same attempt).
func (a *Agent) start(ctx context.Context, m registry.DeviceMessage) {
	a.mu.Lock()
	_, running := a.running[m.Attempt]
	ans, answered := a.unacked[m.Attempt]
	if done, ok := a.acked[m.Attempt]; ok {
		// Acknowledged before, and handed over again: answer again, and wait for the new ack.
		ans, answered = done.answer, true
		a.unacked[m.Attempt] = ans
		delete(a.acked, m.Attempt)
	}
	if running || answered {
		a.mu.Unlock()
		if answered {
			a.send(ctx, &registry.DeviceMessage{Type: registry.DeviceMsgAnswer, Answer: &ans})
		}
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	a.running[m.Attempt] = cancel
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		ans := a.runCall(cctx, m)
		a.mu.Lock()
		delete(a.running, m.Attempt)
		a.unacked[m.Attempt] = ans
		a.mu.Unlock()
		a.send(ctx, &registry.DeviceMessage{Type: registry.DeviceMsgAnswer, Answer: &ans})
	}()
}

// send writes a message on the current connection, if there is one: an answer not sent now goes with the
// next registration.
func (a *Agent) send(ctx context.Context, m *registry.DeviceMessage) {
	a.mu.Lock()
	ws := a.ws
	a.mu.Unlock()
	if ws == nil {
		return
	}
	if err := a.write(ctx, ws, m); err != nil {
		ws.CloseNow()
	}
}

// runCall runs one call: the tool is this device's, the input is checked against its contract, and a
// transient failure is retried (within the tool's timeout) when the tool may run twice.
func (a *Agent) runCall(ctx context.Context, m registry.DeviceMessage) registry.DeviceAnswer {
	fail := func(code registry.ErrorCode, msg string) registry.DeviceAnswer {
		return registry.DeviceAnswer{Attempt: m.Attempt, Status: registry.StatusFailed, Error: &registry.CallError{Code: code, Message: msg}}
	}
	t, ok := a.reg.Tool(m.Tool)
	h, hok := a.handlers[m.Tool]
	if !ok || !hok {
		return fail(registry.CodeUnknownTool, fmt.Sprintf("this device does not serve %s", m.Tool))
	}
	select {
	case a.sem <- struct{}{}:
		defer func() { <-a.sem }()
	case <-ctx.Done():
		return fail(registry.CodeTimeout, "the call was cancelled before it started")
	}
	callID, _ := uuid.Parse(m.CallID)
	log := a.log.With().Str("call_id", m.CallID).Str("tool", m.Tool).Int64("device_attempt", m.Attempt).Logger()
	deadline := time.Now().Add(t.Timeout())
	var res executor.DetachedResult
	for try := 1; ; try++ {
		res = (&executor.Detached{CallID: callID, Tool: t, Handler: h, Input: m.Input, Log: log}).Run(ctx)
		if !res.Retryable || t.RunsAtMostOnce() || t.Idempotency.Mode == registry.ModeNone || try == 3 {
			break
		}
		wait := time.Duration(try*try) * 200 * time.Millisecond
		if time.Now().Add(wait).After(deadline) {
			break
		}
		log.Warn().Str("error", res.Error.Message).Dur("retry_in", wait).Msg("transient failure; retrying")
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	if res.Error != nil {
		log.Warn().Str("error_code", string(res.Error.Code)).Str("error", res.Error.Message).Msg("call failed")
		return registry.DeviceAnswer{Attempt: m.Attempt, Status: registry.StatusFailed, Error: res.Error}
	}
	log.Info().Msg("call succeeded")
	return registry.DeviceAnswer{Attempt: m.Attempt, Status: registry.StatusSucceeded, Result: res.Result}
}

// ConfigFromEnv reads the configuration from the environment.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{HubURL: getenv("GEM_DEVICE_HUB"), Token: strings.TrimSpace(getenv("GEM_DEVICE_TOKEN")), RegistryPath: getenv("GEM_DEVICE_REGISTRY")}
	var errs []error
	if f := getenv("GEM_DEVICE_TOKEN_FILE"); f != "" && c.Token == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("GEM_DEVICE_TOKEN_FILE: %w", err))
		}
		c.Token = strings.TrimSpace(string(b))
	}
	if s := getenv("GEM_DEVICE_MAX_RUNNING"); s != "" {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("GEM_DEVICE_MAX_RUNNING: %q is not a positive whole number", s))
		}
		c.MaxRunning = n
	}
	return c, errors.Join(errs...)
}
