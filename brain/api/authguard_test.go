package api

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// noCallers is a database where no token is found.
type noCallers struct{}

func (noCallers) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, nil
}
func (noCallers) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, pgx.ErrNoRows }
func (noCallers) QueryRow(context.Context, string, ...any) pgx.Row        { return noRow{} }

type noRow struct{}

func (noRow) Scan(...any) error { return pgx.ErrNoRows }

// TestUnknownTokensAtOnceShareTheBudget: unknown tokens sent at once from one address share its budget of
// lookups: all but authFailureBurst of them are answered 429. Its first ones once each made a budget of their
// own (a Get then an Add), all but the last lost: a flood got a lookup per request it sent at once. The guard
// reports each budget it makes; as two requests meet in that moment only now and then, each round sends its
// flood from an address of its own, and each must have made one budget.
func TestUnknownTokensAtOnceShareTheBudget(t *testing.T) {
	t.Parallel()
	const (
		sent   = 3 * authFailureBurst
		rounds = 100
	)
	g := newTokenGuard()
	g.budgetMade.Init(t)
	for round := range rounds {
		from := net.JoinHostPort(fmt.Sprintf("2001:db8:%x::7", round), "40000")
		var throttled, looked atomic.Int64
		start := time.Now()
		// The flood's requests wait until all are ready, the first two spinning on their processors so that
		// they go at the same moment (the others let them run).
		var wg sync.WaitGroup
		var arrived atomic.Int64
		for i := range sent {
			wg.Go(func() {
				arrived.Add(1)
				for arrived.Load() < sent {
					if i >= 2 {
						runtime.Gosched()
					}
				}
				_, err := g.byToken(context.Background(), noCallers{}, fmt.Sprintf("gem_unknown-%d-%d", round, i), from)
				if brain.ErrorCode(err) == brain.ETOOMANY {
					throttled.Add(1)
				} else {
					looked.Add(1)
				}
			})
		}
		wg.Wait()
		// The budget refills as the test runs: a lookup more for each whole refill.
		refill := int64(time.Since(start).Seconds() * authFailureRate)
		require.LessOrEqual(t, looked.Load(), authFailureBurst+refill, "lookups past the budget")
		require.GreaterOrEqual(t, throttled.Load(), sent-authFailureBurst-refill, "429s")

		// A token from an address of its own, sent once the flood is answered, makes the last budget reported.
		marker := net.JoinHostPort(fmt.Sprintf("2001:db8:ffff:%x::1", round), "40000")
		_, err := g.byToken(context.Background(), noCallers{}, fmt.Sprintf("gem_marker-%d", round), marker)
		require.ErrorIs(t, err, gemsql.ErrNotFound)
		made := 0
		for p := g.budgetMade.Wait(); p != clientPrefix(marker); p = g.budgetMade.Wait() {
			require.Equal(t, clientPrefix(from), p)
			made++
		}
		require.Equal(t, 1, made, "one budget for the address")
	}
}

// TestGetOrAddMakesOneValuePerKey: callers asking for one key at once get one value, made once. The first
// maker holds on until a second maker runs (the bug) or 200 ms pass, so the other callers ask while a value is
// being made, by construction rather than by luck.
func TestGetOrAddMakesOneValuePerKey(t *testing.T) {
	t.Parallel()
	const callers = 8
	c := newExpiringCache[string, *int](16, time.Minute)
	var made atomic.Int32
	secondMaker := make(chan struct{})
	maker := func() *int {
		switch made.Add(1) {
		case 1:
			select {
			case <-secondMaker:
			case <-time.After(200 * time.Millisecond):
			}
		case 2:
			close(secondMaker)
		}
		return new(int)
	}
	got := make(chan *int, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() { got <- c.GetOrAdd("203.0.113.7/32", maker) })
	}
	wg.Wait()
	close(got)
	require.Equal(t, int32(1), made.Load(), "callers asking at once made a value each")
	first := <-got
	for v := range got {
		require.Same(t, first, v, "callers asking at once got different values")
	}
}
