package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// listener observes notifications on one channel from its own connection and records when each payload
// arrived: the "observed by a LISTEN waiter" end of a latency measurement. The payload is an id (a
// gem_receipt notification's is the call id, the River floor's bench_receipt one's the job id). An id may
// arrive before anyone waits for it (the insert's reply can come after the receipt's notification).
type listener struct {
	conn *pgx.Conn

	mu      sync.Mutex
	arrived map[string]time.Time
	waiting map[string]chan time.Time
	err     error
	done    chan struct{}
	cancel  context.CancelFunc
}

func listen(ctx context.Context, dbURL, channel string) (*listener, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &listener{conn: conn, arrived: map[string]time.Time{}, waiting: map[string]chan time.Time{},
		done: make(chan struct{}), cancel: cancel}
	go l.run(lctx)
	return l, nil
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	for {
		n, err := l.conn.WaitForNotification(ctx)
		now := time.Now()
		if err != nil {
			l.mu.Lock()
			l.err = err
			for _, ch := range l.waiting {
				close(ch)
			}
			l.waiting = map[string]chan time.Time{}
			l.mu.Unlock()
			return
		}
		key := n.Payload
		l.mu.Lock()
		if ch, ok := l.waiting[key]; ok {
			delete(l.waiting, key)
			ch <- now
		} else {
			l.arrived[key] = now
		}
		l.mu.Unlock()
	}
}

var errListenerClosed = errors.New("listener connection ended")

// wait returns when key's notification arrived.
func (l *listener) wait(ctx context.Context, key string) (time.Time, error) {
	l.mu.Lock()
	if t, ok := l.arrived[key]; ok {
		delete(l.arrived, key)
		l.mu.Unlock()
		return t, nil
	}
	if l.err != nil {
		l.mu.Unlock()
		return time.Time{}, errListenerClosed
	}
	ch := make(chan time.Time, 1)
	l.waiting[key] = ch
	l.mu.Unlock()
	select {
	case t, ok := <-ch:
		if !ok {
			return time.Time{}, errListenerClosed
		}
		return t, nil
	case <-ctx.Done():
		l.mu.Lock()
		delete(l.waiting, key)
		l.mu.Unlock()
		return time.Time{}, ctx.Err()
	}
}

func (l *listener) close() {
	l.cancel()
	<-l.done
	_ = l.conn.Close(context.Background())
}
