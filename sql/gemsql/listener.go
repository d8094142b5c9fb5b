package gemsql

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listenConn is one connection that LISTENs to a fixed set of channels and reconnects by itself: it hands
// every notification to onNotify, and calls onReconnect after each reconnection (notifications may have
// been missed while it was away). ReceiptWaiter and Listener are built on it.
type listenConn struct {
	pool        *pgxpool.Pool
	name        string // in log messages; with dashes, the suffix of the connection's application_name
	channels    []string
	logger      *slog.Logger
	onNotify    func(*pgconn.Notification)
	onReconnect func()

	cancel context.CancelFunc
	done   chan struct{}
}

// start connects and listens. It returns an error at once if the first connection fails; later losses are
// retried in the background until stop.
func (l *listenConn) start(ctx context.Context) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	l.done = make(chan struct{})
	go l.run(runCtx, conn)
	return nil
}

// stop stops listening and waits for the loop to end.
func (l *listenConn) stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
}

func (l *listenConn) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg := Session(l.pool).ConnConfig
	cfg.RuntimeParams["application_name"] = cfg.RuntimeParams["application_name"] + "-" + strings.ReplaceAll(l.name, " ", "-")
	// Waiting for a notification is not a query a cancel request can stop: end it by closing the socket.
	cfg.BuildContextWatcherHandler = func(pgConn *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pgConn.Conn()}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting the %s: %w", l.name, err)
	}
	for _, ch := range l.channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			_ = conn.Close(ctx)
			return nil, fmt.Errorf("error listening on %s: %w", ch, err)
		}
	}
	return conn, nil
}

func (l *listenConn) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		if conn == nil {
			c, err := l.connect(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				l.logger.Warn(l.name+" cannot reconnect; retrying", slog.String("error", err.Error()), slog.Duration("backoff", backoff))
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, 2*time.Second)
				continue
			}
			conn, backoff = c, 50*time.Millisecond
			l.logger.Info(l.name + " reconnected")
			l.safely("reconnect", l.onReconnect)
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			l.logger.Warn(l.name+" lost its connection", slog.String("error", err.Error()))
			_ = conn.Close(context.Background())
			conn = nil
			continue
		}
		l.safely("notification", func() { l.onNotify(n) })
	}
}

// safely runs a handler of the loop: a panic in it (a bug meeting a payload any database login can NOTIFY)
// is logged and the loop goes on, rather than ending the process.
func (l *listenConn) safely(what string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			l.logger.Error(l.name+": handling a "+what+" panicked; recovered",
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
		}
	}()
	fn()
}

// Listener wakes goroutines when PostgreSQL notifies a channel with a given payload. A watcher is woken,
// never told what happened, and then reads the state it cares about; after a lost connection every
// watcher is woken, since notifications may have been missed.
type Listener struct {
	conn listenConn

	mu       sync.Mutex
	watchers map[watchKey]map[chan struct{}]struct{}
}

type watchKey struct{ channel, payload string }

// NewListener returns a listener for channels; name is in its log messages and its connection's
// application_name. Call Start before Watch wakes anything.
func NewListener(pool *pgxpool.Pool, name string, channels []string, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Listener{watchers: map[watchKey]map[chan struct{}]struct{}{}}
	l.conn = listenConn{pool: pool, name: name, channels: channels, logger: logger, onReconnect: l.wakeAll,
		onNotify: func(n *pgconn.Notification) {
			l.wake(watchKey{n.Channel, n.Payload})
			l.wake(watchKey{n.Channel, ""})
		}}
	return l
}

// Start connects and listens. It returns an error at once if the first connection fails; later losses are
// retried in the background until Stop.
func (l *Listener) Start(ctx context.Context) error { return l.conn.start(ctx) }

// Stop stops listening and waits for the listener to end.
func (l *Listener) Stop() { l.conn.stop() }

// Watch returns a channel that receives (at most one pending value at a time) whenever channel is notified
// with payload, or with any payload when payload is "", and after every reconnection. stop ends the watch.
func (l *Listener) Watch(channel, payload string) (wake <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	k := watchKey{channel, payload}
	l.mu.Lock()
	if l.watchers[k] == nil {
		l.watchers[k] = map[chan struct{}]struct{}{}
	}
	l.watchers[k][ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.watchers[k], ch)
		if len(l.watchers[k]) == 0 {
			delete(l.watchers, k)
		}
		l.mu.Unlock()
	}
}

func (l *Listener) wake(k watchKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.watchers[k] {
		signal(ch)
	}
}

func (l *Listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.watchers {
		for ch := range set {
			signal(ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
