package gemsql

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listener wakes goroutines when PostgreSQL notifies a channel with a given payload. It holds one connection
// that LISTENs to a fixed set of channels; a watcher is woken, never told what happened, and then reads the
// state it cares about. After a lost connection it reconnects by itself and wakes every watcher, since
// notifications may have been missed. (The ReceiptWaiter is the same idea with receipts in the payloads.)
type Listener struct {
	pool     *pgxpool.Pool
	name     string
	channels []string
	logger   *slog.Logger

	mu       sync.Mutex
	watchers map[watchKey]map[chan struct{}]struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

type watchKey struct{ channel, payload string }

// NewListener returns a listener for channels; name goes into the connection's application_name. Call Start
// before Watch wakes anything.
func NewListener(pool *pgxpool.Pool, name string, channels []string, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{pool: pool, name: name, channels: channels, logger: logger, watchers: map[watchKey]map[chan struct{}]struct{}{}}
}

// Start connects and listens. It returns an error at once if the first connection fails; later losses are
// retried in the background until Stop.
func (l *Listener) Start(ctx context.Context) error {
	conn, err := l.listen(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	l.done = make(chan struct{})
	go l.run(runCtx, conn)
	return nil
}

// Stop stops listening and waits for the listener to end.
func (l *Listener) Stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
}

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

func (l *Listener) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := l.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = cfg.RuntimeParams["application_name"] + "-" + l.name
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

func (l *Listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		if conn == nil {
			c, err := l.listen(ctx)
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
			l.wakeAll()
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
		l.wake(watchKey{n.Channel, n.Payload})
		l.wake(watchKey{n.Channel, ""})
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
