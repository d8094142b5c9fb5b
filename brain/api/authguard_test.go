package api

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
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
// own (a Get then an Add), all but the last lost: a flood got a lookup per request it sent at once. Making
// a budget is held open here until a second one is made (or a moment passes), so that they meet.
func TestUnknownTokensAtOnceShareTheBudget(t *testing.T) {
	t.Parallel()
	const sent = 3 * authFailureBurst
	g := newTokenGuard()
	var made atomic.Int64
	second := make(chan struct{})
	g.newBudget = func() *rate.Limiter {
		if made.Add(1) == 2 {
			close(second)
		}
		select {
		case <-second:
		case <-time.After(200 * time.Millisecond):
		}
		return rate.NewLimiter(authFailureRate, authFailureBurst)
	}
	var throttled, looked atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sent {
		wg.Go(func() {
			_, err := g.byToken(context.Background(), noCallers{}, fmt.Sprintf("gem_unknown-%d", i), "203.0.113.7:40000")
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
	require.EqualValues(t, 1, made.Load(), "one budget for the address")
}
