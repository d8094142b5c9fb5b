package gemsql

import (
	"context"
	"errors"
	"github.com/gemhq/gem/sql/testsignal"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ReceiptWaiter waits for calls' receipts. One LISTEN connection serves every waiter: a receipt's insert
// notifies its call id at commit (a wake-up, never the receipt: any database login may NOTIFY gem_receipt),
// and one reader then reads the receipts of every awaited call it heard of since its last read, in one
// query with the waiter's own connection. A forged id only causes a read that finds the true receipt or
// none. After a lost connection it reconnects by itself and re-reads what its waiters still wait for, so
// no receipt is missed.
type ReceiptWaiter struct {
	pool   *pgxpool.Pool
	conn   listenConn
	logger *slog.Logger

	mu      sync.Mutex
	waiters map[uuid.UUID]map[*waiter]struct{}
	// watchers hear of every receipt (Watch).
	watchers map[*Watch]struct{}
	// toRead holds the awaited calls heard of and not read yet; wake tells the reader there are some.
	toRead map[uuid.UUID]struct{}
	wake   chan struct{}

	// TestSignals are the waiter's events a test waits for; they do nothing unless the test inits them.
	TestSignals WaiterTestSignals

	startMu      sync.Mutex
	started      bool
	stopped      bool
	readerCancel context.CancelFunc
	readerDone   chan struct{}
}

// WaiterTestSignals are a ReceiptWaiter's events a test waits for instead of sleeping.
type WaiterTestSignals struct {
	// Waiting is a wait that read what exists and now waits to hear of its calls' receipts; the value is
	// how many it still waits for.
	Waiting testsignal.Signal[int]
}

type waiter struct {
	receipts chan *registry.Receipt
}

// readBatchMax bounds the calls one read asks for (after a reconnection, every awaited call is re-read).
const readBatchMax = 1000

// readRetry is how long the reader waits after a failed read (the database may be restarting).
const readRetry = 200 * time.Millisecond

// NewReceiptWaiter returns a waiter that reads receipts through pool. Call Start before Wait.
func NewReceiptWaiter(pool *pgxpool.Pool, logger *slog.Logger) *ReceiptWaiter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &ReceiptWaiter{
		pool:    pool,
		logger:  logger,
		waiters: make(map[uuid.UUID]map[*waiter]struct{}),
		toRead:  make(map[uuid.UUID]struct{}),
		wake:    make(chan struct{}, 1),
	}
	w.conn = listenConn{pool: pool, name: "receipt listener", channels: []string{ReceiptChannel}, logger: logger,
		onReconnect: w.reconnected,
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
	readCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.readerCancel, w.readerDone = cancel, make(chan struct{})
	go w.read(readCtx)
	w.started = true
	return nil
}

// Stop stops listening and reading and waits for both to end. A later Start fails.
func (w *ReceiptWaiter) Stop() {
	w.startMu.Lock()
	defer w.startMu.Unlock()
	w.stopped = true
	w.conn.stop()
	if w.readerCancel != nil {
		w.readerCancel()
		<-w.readerDone
	}
}

// notified handles one notification, whose payload is a call id. Every receipt is announced to every
// listener, and most are for calls no one here waits on: those are dropped. Anything else on the channel
// (any login may NOTIFY it) is not an id and is dropped too.
func (w *ReceiptWaiter) notified(n *pgconn.Notification) {
	id, err := uuid.Parse(n.Payload)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for wa := range w.watchers {
		select {
		case wa.ch <- id:
		default:
			wa.lagged.Store(true)
		}
	}
	if len(w.waiters[id]) > 0 {
		w.toRead[id] = struct{}{}
		signal(w.wake)
	}
}

// reconnected re-reads every awaited call: receipts may have come while the listener was away.
func (w *ReceiptWaiter) reconnected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wa := range w.watchers {
		wa.lagged.Store(true)
	}
	for id := range w.waiters {
		w.toRead[id] = struct{}{}
	}
	signal(w.wake)
}

// read is the reader: each time it is woken it reads the receipts of the calls heard of since its last
// read, in one query (a burst of notifications costs one read), and hands each to the calls' waiters. A
// call with no receipt yet (a forged notification) stays awaited.
func (w *ReceiptWaiter) read(ctx context.Context) {
	defer close(w.readerDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		ids := w.takeToRead()
		if len(ids) == 0 {
			continue
		}
		found, err := ReceiptsGet(ctx, w.pool, ids)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.Warn("error reading receipts; retrying", slog.String("error", err.Error()), slog.Int("calls", len(ids)))
			w.mu.Lock()
			for _, id := range ids {
				w.toRead[id] = struct{}{}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(readRetry):
			}
			signal(w.wake)
			continue
		}
		w.deliver(found)
	}
}

// takeToRead takes up to readBatchMax of the calls to read that are still awaited, and wakes the reader
// again when it left some.
func (w *ReceiptWaiter) takeToRead() []uuid.UUID {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]uuid.UUID, 0, min(len(w.toRead), readBatchMax))
	for id := range w.toRead {
		if len(ids) == readBatchMax {
			signal(w.wake)
			break
		}
		delete(w.toRead, id)
		if len(w.waiters[id]) > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// deliver hands each receipt to the waiters of its call, which then no longer wait on it.
func (w *ReceiptWaiter) deliver(found map[uuid.UUID]*registry.Receipt) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, r := range found {
		for wt := range w.waiters[id] {
			// Each waiter is handed each call's receipt once (it is removed here), and its buffer holds
			// all its calls, so the send never blocks.
			wt.receipts <- r
		}
		delete(w.waiters, id)
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

func (w *ReceiptWaiter) register(wt *waiter, ids []uuid.UUID) {
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
	w   *ReceiptWaiter
	wt  *waiter
	ids []uuid.UUID
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
	sub := &Subscription{w: w, wt: &waiter{receipts: make(chan *registry.Receipt, len(ids))}, ids: ids}
	if len(ids) > 0 {
		w.register(sub.wt, ids)
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
	w, ids := sub.w, sub.ids
	res := &WaitResult{Receipts: make(map[uuid.UUID]*registry.Receipt, len(ids))}
	pending := make(map[uuid.UUID]struct{}, len(ids))
	for _, id := range ids {
		pending[id] = struct{}{}
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

	// load reads the pending calls' receipts: first, when the calls may have them already, and again after
	// a failed read (the database may be restarting), shortly after, instead of failing the wait.
	var retry <-chan time.Time
	load := func() {
		found, err := ReceiptsGet(ctx, w.pool, pendingIDs())
		if err != nil {
			if ctx.Err() == nil {
				w.logger.Warn("error reading receipts; retrying", slog.String("error", err.Error()))
				retry = time.After(readRetry)
			}
			return
		}
		for id, r := range found {
			res.Receipts[id] = r
			delete(pending, id)
		}
	}
	if reread && len(pending) > 0 {
		load()
	}
	if len(pending) > 0 {
		w.TestSignals.Waiting.Signal(len(pending))
	}
	for len(pending) > 0 {
		select {
		case r := <-sub.wt.receipts:
			res.Receipts[r.CallID] = r
			delete(pending, r.CallID)
		case <-retry:
			retry = nil
			load()
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
