package gemsql

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ReceiptWaiter waits for calls' receipts. One LISTEN connection serves every waiter: a receipt's insert
// notifies its call id at commit, and the waiter then reads the receipt. After a lost connection it
// reconnects by itself and re-reads what its waiters still wait for, so no receipt is missed.
type ReceiptWaiter struct {
	pool *pgxpool.Pool
	conn listenConn

	mu      sync.Mutex
	waiters map[uuid.UUID]map[*waiter]struct{}
	// watchers hear of every receipt (Watch).
	watchers map[*Watch]struct{}
	// resync is closed (and replaced) each time the listener reconnects, telling waiters to re-read.
	resync chan struct{}

	startMu sync.Mutex
	started bool
	stopped bool
}

type waiter struct {
	notify chan notice
}

// notice is one notification: a call id, and its receipt when the notification carried it.
type notice struct {
	id      uuid.UUID
	receipt *registry.Receipt
}

// NewReceiptWaiter returns a waiter that reads receipts through pool. Call Start before Wait.
func NewReceiptWaiter(pool *pgxpool.Pool, logger *slog.Logger) *ReceiptWaiter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &ReceiptWaiter{
		pool:    pool,
		waiters: make(map[uuid.UUID]map[*waiter]struct{}),
		resync:  make(chan struct{}),
	}
	w.conn = listenConn{pool: pool, name: "receipt listener", channels: []string{ReceiptChannel}, logger: logger,
		onReconnect: w.broadcastResync,
		onNotify:    w.notified}
	return w
}

// Start connects and listens. It returns an error at once if the first connection fails; later losses are
// retried in the background until Stop. Once started, Start does nothing, so a process that waits rarely
// (an executor: for its nested calls) starts listening on first use, and hears no receipts until then.
func (w *ReceiptWaiter) Start(ctx context.Context) error {
	w.startMu.Lock()
	defer w.startMu.Unlock()
	switch {
	case w.stopped:
		return errors.New("the receipt waiter is stopped")
	case w.started:
		return nil
	}
	if err := w.conn.start(ctx); err != nil {
		return err
	}
	w.started = true
	return nil
}

// Stop stops listening and waits for the listener to end. A later Start fails.
func (w *ReceiptWaiter) Stop() {
	w.startMu.Lock()
	defer w.startMu.Unlock()
	w.stopped = true
	w.conn.stop()
}

// notified handles one notification. Every receipt is announced to every listener, and most are for calls
// no one here waits on: those are dropped after reading their call id only.
func (w *ReceiptWaiter) notified(n *pgconn.Notification) {
	id, ok := noticeID(n.Payload)
	if !ok {
		return
	}
	w.mu.Lock()
	wanted := len(w.watchers) > 0 || len(w.waiters[id]) > 0
	w.mu.Unlock()
	if !wanted {
		return
	}
	nt := notice{id: id}
	if strings.HasPrefix(n.Payload, "{") {
		if nt, ok = parseNotice(n.Payload); !ok {
			return
		}
	}
	w.dispatch(nt)
}

// noticeID reads the call id of a notification's payload: the receipt as JSON, or the id alone.
func noticeID(payload string) (uuid.UUID, bool) {
	if !strings.HasPrefix(payload, "{") {
		id, err := uuid.Parse(payload)
		return id, err == nil
	}
	var r struct {
		CallID uuid.UUID `json:"call_id"`
	}
	if err := json.Unmarshal([]byte(payload), &r); err != nil || r.CallID == uuid.Nil {
		return uuid.Nil, false
	}
	return r.CallID, true
}

// parseNotice reads a notification's payload: the receipt as JSON, or just the call id (a receipt too large
// for a notification, which the waiter then reads).
func parseNotice(payload string) (notice, bool) {
	if strings.HasPrefix(payload, "{") {
		var r registry.Receipt
		if err := json.Unmarshal([]byte(payload), &r); err != nil || r.CallID == uuid.Nil {
			return notice{}, false
		}
		normalizeReceipt(&r)
		return notice{id: r.CallID, receipt: &r}, true
	}
	id, err := uuid.Parse(payload)
	return notice{id: id}, err == nil
}

func (w *ReceiptWaiter) dispatch(nt notice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wa := range w.watchers {
		select {
		case wa.ch <- nt.id:
		default:
			wa.lagged.Store(true)
		}
	}
	for wt := range w.waiters[nt.id] {
		// Each waiter hears of each id once (it is removed here), and its buffer holds all its ids, so the
		// send never blocks.
		wt.notify <- nt
	}
	delete(w.waiters, nt.id)
}

func (w *ReceiptWaiter) broadcastResync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.resync)
	w.resync = make(chan struct{})
	for wa := range w.watchers {
		wa.lagged.Store(true) // receipts may have come while the listener was away
	}
}

// Watch hears of every receipt's call id, for live views. A watcher that falls behind (more than its
// buffer) loses ids and is told so by Lagged, as it is after the listener reconnects: it should reload.
type Watch struct {
	w      *ReceiptWaiter
	ch     chan uuid.UUID
	lagged atomic.Bool
}

// Watch starts a watch whose channel holds up to buffer ids. Close it when done.
func (w *ReceiptWaiter) Watch(buffer int) *Watch {
	wa := &Watch{w: w, ch: make(chan uuid.UUID, max(buffer, 1))}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watchers == nil {
		w.watchers = make(map[*Watch]struct{})
	}
	w.watchers[wa] = struct{}{}
	return wa
}

// C delivers the call ids of receipts as they are written.
func (wa *Watch) C() <-chan uuid.UUID { return wa.ch }

// Lagged reports (once) that ids were lost since the last time it said so.
func (wa *Watch) Lagged() bool { return wa.lagged.Swap(false) }

// Close stops the watch.
func (wa *Watch) Close() {
	wa.w.mu.Lock()
	defer wa.w.mu.Unlock()
	delete(wa.w.watchers, wa)
}

func (w *ReceiptWaiter) register(wt *waiter, ids []uuid.UUID) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		set := w.waiters[id]
		if set == nil {
			set = make(map[*waiter]struct{}, 1)
			w.waiters[id] = set
		}
		set[wt] = struct{}{}
	}
	return w.resync
}

func (w *ReceiptWaiter) unregister(wt *waiter, ids []uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if set := w.waiters[id]; set != nil {
			delete(set, wt)
			if len(set) == 0 {
				delete(w.waiters, id)
			}
		}
	}
}

func (w *ReceiptWaiter) resyncChan() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resync
}

// WaitResult is what Wait found.
type WaitResult struct {
	// Receipts holds the receipts that exist, keyed by call id.
	Receipts map[uuid.UUID]*registry.Receipt
	// Pending lists the calls still without a receipt when the wait ended, in the order asked.
	Pending []uuid.UUID
}

// Wait waits until every call has a receipt or ctx ends (give it a deadline). It returns the receipts found;
// when ctx ends first it also returns ctx's error, and Pending lists the calls still running (they go on
// running: a wait never cancels a call).
func (w *ReceiptWaiter) Wait(ctx context.Context, callIDs []uuid.UUID) (*WaitResult, error) {
	sub := w.Subscribe(callIDs)
	defer sub.Close()
	// Subscribed before reading, so a receipt committed in between is either read or notified.
	return sub.wait(ctx, true)
}

// Subscription hears of the receipts of some calls. Subscribe before the calls are inserted (before the
// transaction that inserts them commits), and the wait hears of every receipt without reading first.
type Subscription struct {
	w      *ReceiptWaiter
	wt     *waiter
	ids    []uuid.UUID
	resync <-chan struct{}
}

// Subscribe registers to hear of the calls' receipts. Close it when done.
func (w *ReceiptWaiter) Subscribe(callIDs []uuid.UUID) *Subscription {
	seen := make(map[uuid.UUID]struct{}, len(callIDs))
	ids := make([]uuid.UUID, 0, len(callIDs))
	for _, id := range callIDs {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			ids = append(ids, id)
		}
	}
	sub := &Subscription{w: w, wt: &waiter{notify: make(chan notice, len(ids))}, ids: ids}
	if len(ids) > 0 {
		sub.resync = w.register(sub.wt, ids)
	}
	return sub
}

// Close stops hearing of the calls.
func (sub *Subscription) Close() {
	if len(sub.ids) > 0 {
		sub.w.unregister(sub.wt, sub.ids)
	}
}

// Wait waits until every call has a receipt or ctx ends, as ReceiptWaiter.Wait does. Call it once.
func (sub *Subscription) Wait(ctx context.Context) (*WaitResult, error) {
	return sub.wait(ctx, false)
}

// wait waits for the calls' receipts; reread reads them first (the calls may have them already).
func (sub *Subscription) wait(ctx context.Context, reread bool) (*WaitResult, error) {
	w, ids, resync := sub.w, sub.ids, sub.resync
	res := &WaitResult{Receipts: make(map[uuid.UUID]*registry.Receipt, len(ids))}
	if len(ids) == 0 {
		return res, nil
	}
	pending := make(map[uuid.UUID]struct{}, len(ids))
	for _, id := range ids {
		pending[id] = struct{}{}
	}
	wt := sub.wt

	var retry <-chan time.Time
	load := func(batch []uuid.UUID) error {
		found, err := ReceiptsGet(ctx, w.pool, batch)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The database may be restarting: try again shortly instead of failing the wait.
			w.conn.logger.Warn("error reading receipts; retrying", slog.String("error", err.Error()))
			retry = time.After(200 * time.Millisecond)
			return nil
		}
		for id, r := range found {
			res.Receipts[id] = r
			delete(pending, id)
		}
		return nil
	}
	pendingIDs := func() []uuid.UUID {
		out := make([]uuid.UUID, 0, len(pending))
		for _, id := range ids {
			if _, ok := pending[id]; ok {
				out = append(out, id)
			}
		}
		return out
	}

	if reread {
		if err := load(ids); err != nil {
			res.Pending = pendingIDs()
			return res, err
		}
	}
	for len(pending) > 0 {
		select {
		case nt := <-wt.notify:
			var batch []uuid.UUID
			take := func(nt notice) {
				if nt.receipt != nil {
					res.Receipts[nt.id] = nt.receipt
					delete(pending, nt.id)
				} else {
					batch = append(batch, nt.id)
				}
			}
			take(nt)
		drain:
			for {
				select {
				case more := <-wt.notify:
					take(more)
				default:
					break drain
				}
			}
			if len(batch) > 0 {
				if err := load(batch); err != nil {
					res.Pending = pendingIDs()
					return res, err
				}
			}
		case <-resync:
			resync = w.resyncChan()
			if err := load(pendingIDs()); err != nil {
				res.Pending = pendingIDs()
				return res, err
			}
		case <-retry:
			retry = nil
			if err := load(pendingIDs()); err != nil {
				res.Pending = pendingIDs()
				return res, err
			}
		case <-ctx.Done():
			res.Pending = pendingIDs()
			return res, ctx.Err()
		}
	}
	return res, nil
}

// WaitOne waits for one call's receipt until ctx ends.
func (w *ReceiptWaiter) WaitOne(ctx context.Context, callID uuid.UUID) (*registry.Receipt, error) {
	res, err := w.Wait(ctx, []uuid.UUID{callID})
	return receiptOf(res, err, callID)
}

// receiptOf picks one call's receipt from a wait's result.
func receiptOf(res *WaitResult, err error, callID uuid.UUID) (*registry.Receipt, error) {
	if r, ok := res.Receipts[callID]; ok {
		return r, nil
	}
	if err == nil {
		err = errors.New("receipt not found")
	}
	return nil, err
}
