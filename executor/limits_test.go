package executor_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// running counts the calls of the limited test tools that are inside their handler, by tool and key,
// across every executor of the test process, and keeps the most seen at once.
type running struct {
	mu     sync.Mutex
	now    map[string]int
	most   map[string]int
	starts map[string][]time.Time
}

// outsideMu serialises the test handlers' appends to the outside-effects log.
var outsideMu sync.Mutex

// logOutside records an outside effect of a call in the test's log, as a provider would see it happen.
func logOutside(path string, id uuid.UUID) error {
	outsideMu.Lock()
	defer outsideMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, id)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

var limited = &running{now: map[string]int{}, most: map[string]int{}, starts: map[string][]time.Time{}}

func (r *running) enter(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now[key]++
	r.most[key] = max(r.most[key], r.now[key])
	r.starts[key] = append(r.starts[key], time.Now())
}

func (r *running) leave(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now[key]--
}

func (r *running) mostAt(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most[key]
}

// addLimitedHandlers registers the handlers of the test tools with concurrency and rate limits.
func addLimitedHandlers(h executor.Handlers, outsideLog string) {
	sleeper := func(tool string) executor.Handler {
		return executor.Handler{Isolated: true, Run: func(ctx context.Context, c *executor.Call) (any, error) {
			var in struct {
				MS    int    `json:"ms"`
				Phone string `json:"phone"`
			}
			if err := c.Bind(&in); err != nil {
				return nil, err
			}
			key := tool + "/" + in.Phone
			limited.enter(key)
			defer limited.leave(key)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			}
			return map[string]any{"ran": true}, nil
		}}
	}
	for _, tool := range []string{"test.slots", "test.slots_per_phone", "test.rated", "test.short_wait"} {
		h.Add(tool, sleeper(tool))
	}
	h.Add("test.send_limited", executor.Handler{Run: func(ctx context.Context, c *executor.Call) (any, error) {
		limited.enter("test.send_limited/")
		defer limited.leave("test.send_limited/")
		if err := logOutside(outsideLog, c.ID); err != nil {
			return nil, err
		}
		c.RecordOutside(registry.OutsideEffect{Kind: "sms", Target: "test", Reference: c.ID.String()})
		time.Sleep(30 * time.Millisecond)
		return map[string]any{"ran": true}, nil
	}})
}

// TestConcurrencyAndRateLimits: calls of tools with limits keep them across two executors, wait for their
// turn (the wait in the receipt) instead of failing, and fail rate_limited past their bound; a limit per
// input property is counted per value; an outside-effects call that waited runs once.
func TestConcurrencyAndRateLimits(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	b.startExecutor(t, nil)
	limited.mu.Lock()
	clear(limited.now)
	clear(limited.most)
	clear(limited.starts)
	limited.mu.Unlock()

	insert := func(tool, input string, n int) []uuid.UUID {
		ids := make([]uuid.UUID, n)
		for i := range ids {
			ids[i] = b.call(t, ctx, tool, input)
		}
		return ids
	}
	allSucceeded := func(got map[uuid.UUID]*registry.Receipt) (waited int) {
		t.Helper()
		for _, r := range got {
			require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
			require.NotNil(t, r.LimitWaitMS, "a limited call's receipt says how long it waited")
			if *r.LimitWaitMS > 0 {
				waited++
			}
		}
		return waited
	}

	// Concurrency 2: twelve calls of 100 ms, both executors at once. Never three at once; two at once (the
	// limit is not one); and most waited.
	start := time.Now()
	got := b.wait(t, ctx, insert("test.slots", `{"ms": 100}`, 12)...)
	took := time.Since(start)
	waited := allSucceeded(got)
	require.Equal(t, 2, limited.mostAt("test.slots/"), "the most test.slots calls running at once")
	require.GreaterOrEqual(t, took, 550*time.Millisecond, "12 calls of 100 ms, two at a time")
	require.GreaterOrEqual(t, waited, 6)

	// Per phone: one at a time for each number, so two numbers run side by side.
	ids := append(insert("test.slots_per_phone", `{"ms": 80, "phone": "+15550001"}`, 4),
		insert("test.slots_per_phone", `{"ms": 80, "phone": "+15550002"}`, 4)...)
	allSucceeded(b.wait(t, ctx, ids...))
	require.Equal(t, 1, limited.mostAt("test.slots_per_phone/+15550001"))
	require.Equal(t, 1, limited.mostAt("test.slots_per_phone/+15550002"))

	// Rate 5 per 500 ms: fifteen calls take at least two more windows, and no 500 ms holds more than five
	// handler starts (give or take the few milliseconds between the limiter's start and the handler's).
	start = time.Now()
	allSucceeded(b.wait(t, ctx, insert("test.rated", `{}`, 15)...))
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	limited.mu.Lock()
	starts := slices.SortedFunc(slices.Values(limited.starts["test.rated/"]), time.Time.Compare)
	limited.mu.Unlock()
	require.Len(t, starts, 15)
	for i := range starts {
		in := 0
		for _, s := range starts[i:] {
			// The limiter's windows hold five starts; a handler starts a little after its reserved start, by
			// more on a busy machine, which the 25 ms guard need not cover.
			if s.Sub(starts[i]) < 400*time.Millisecond {
				in++
			}
		}
		require.LessOrEqual(t, in, 5, "starts within 500 ms of %s: %v", starts[i], starts)
	}

	// A bound on the wait: one call of 3 s holds the only slot; the others give up after 300 ms, each
	// finished before the one holding the slot.
	first := b.call(t, ctx, "test.short_wait", `{"ms": 3000}`)
	require.Eventually(t, func() bool { return limited.mostAt("test.short_wait/") == 1 }, 5*time.Second, 5*time.Millisecond)
	rest := insert("test.short_wait", `{"ms": 10}`, 3)
	got = b.wait(t, ctx, rest...)
	held := b.waitOne(t, ctx, first)
	require.Equal(t, registry.StatusSucceeded, held.Status)
	for _, r := range got {
		require.True(t, r.FinishedAt.Before(held.FinishedAt), "gave up before the slot was free: %s, the slot freed %s", r.FinishedAt, held.FinishedAt)
		require.Equal(t, registry.StatusFailed, r.Status)
		require.Equal(t, registry.CodeRateLimited, r.Error.Code, r.Error.Message)
		d := decodeDetails(t, r)
		require.Equal(t, "concurrency 1", d["limit"])
		require.GreaterOrEqual(t, d["waited_ms"], float64(290))
		require.EqualValues(t, 300, d["max_wait_ms"])
		require.Equal(t, 0, r.Attempt-1, "waiting used no attempt")
	}

	// An outside-effects call that waits had its marker set before it found the limit full: it must run
	// once, not end outcome_unknown.
	ids = insert("test.send_limited", `{}`, 6)
	allSucceeded(b.wait(t, ctx, ids...))
	require.Equal(t, 1, limited.mostAt("test.send_limited/"))
	sent := b.outsideLines(t)
	for _, id := range ids {
		require.Equal(t, 1, countOf(sent, id.String()), "call %s sent once", id)
	}

	// Nothing is left holding a slot or a wait.
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2`))
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls WHERE status NOT IN ('succeeded', 'failed')`))
}

func countOf(lines []string, s string) int {
	return len(slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.TrimSpace(l) != s }))
}
