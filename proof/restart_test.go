package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/packs"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// PostgreSQL stops at once (an immediate shutdown, as a crash) for a few seconds and starts again under a
// stream of POST /calls to a real brain and executor, neither of which is killed:
//
//   - no request gets a 500: one the restart refuses gets 503 unavailable with a Retry-After (30 of 400
//     requests got 500 internal: the brain classified a refused connection as a bug);
//   - every call made gets its receipt within seconds of the server's return. The restart leaves calls
//     running whose hand-off from River to the executor, or whose end River was recording, it cut: nothing
//     gave them back before River's rescue of stuck jobs, after the longest tool timeout + 15 s (2.5 minutes).
func TestPostgresRestartUnderLoad(t *testing.T) {
	// In parallel: its PostgreSQL is a private cluster of its own, and it mostly waits on restarts and leases.
	t.Parallel()
	bins := testBinaries(t)
	ctx := context.Background()
	c, dbURL, pool, logs := restartableDB(t, ctx, bins, "restart")
	wait := "GEM_DB_CONNECT_WAIT=2m"
	ex, err := startExecutor(bins, dbURL, "restart-1", []string{wait, "GEM_EXECUTOR_METRICS_ADDR=off"}, logs, pool, true)
	require.NoError(t, err)
	t.Cleanup(func() { ex.kill() })
	brain, err := startBrain(bins, dbURL, []string{wait}, logs)
	require.NoError(t, err)
	t.Cleanup(func() { brain.kill() })

	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		noRetry  int
		made     []uuid.UUID
		failures []string
	)
	post := func(i int) {
		body, _ := json.Marshal(map[string]any{"tool": "os.create_note",
			"input": map[string]any{"domain": "business", "title": fmt.Sprintf("restart %d", i), "content": "under load"}})
		req, _ := http.NewRequest(http.MethodPost, brain.url+"/calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+brain.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures = append(failures, err.Error())
			return
		}
		defer resp.Body.Close()
		var out struct {
			Call struct {
				ID uuid.UUID `json:"id"`
			} `json:"call"`
			Errors []struct {
				Code, Message string
			} `json:"errors"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		statuses[resp.StatusCode]++
		switch resp.StatusCode {
		case http.StatusOK:
			made = append(made, out.Call.ID)
		case http.StatusServiceUnavailable:
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
				noRetry++
			}
		default:
			failures = append(failures, fmt.Sprintf("%d %+v", resp.StatusCode, out.Errors))
		}
	}
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for w := range 8 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for i := w; ; i += 8 {
				select {
				case <-stop:
					return
				default:
				}
				post(i)
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}

	time.Sleep(3 * time.Second)
	// Stopped at once, while the brain still trusts the callers it read (2 s), and down for longer than River
	// takes to give up recording a run's end (three tries, about 3 s).
	require.NoError(t, c.crash())
	time.Sleep(5 * time.Second)
	_, err = c.run("start")
	require.NoError(t, err)
	back := time.Now()
	time.Sleep(3 * time.Second)
	close(stop)
	clients.Wait()

	mu.Lock()
	t.Logf("answers by status: %v; calls made: %d", statuses, len(made))
	// Not fatal: the receipts are checked as well.
	assert.Empty(t, failures[:min(len(failures), 5)], "every request is answered 200, or 503 while the database is away (%d were not)", len(failures))
	assert.Zero(t, noRetry, "every 503 says when to try again")
	require.Positive(t, statuses[http.StatusServiceUnavailable], "the restart was seen")
	mu.Unlock()

	// Every call made gets its receipt within seconds of the server's return.
	bound := 30 * time.Second
	w := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, w.Start(ctx))
	defer w.Stop()
	wctx, cancel := context.WithDeadline(ctx, back.Add(bound))
	defer cancel()
	res, err := w.Wait(wctx, made)
	require.NoError(t, err, "%d calls still without a receipt %s after the server came back: %v", len(res.Pending), bound, res.Pending)
	var longest []float64
	rows, err := pool.Query(ctx, `SELECT extract(epoch FROM r.finished_at - c.created_at)::float8 FROM core_tool_calls c
		JOIN core_tool_receipts r ON r.call_id = c.id`)
	require.NoError(t, err)
	for rows.Next() {
		var s float64
		require.NoError(t, rows.Scan(&s))
		longest = append(longest, s)
	}
	require.NoError(t, rows.Err())
	sort.Float64s(longest)
	t.Logf("calls from insert to receipt: median %.2fs, longest %.2fs", longest[len(longest)/2], longest[len(longest)-1])
	var failed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_receipts WHERE status <> 'succeeded'`).Scan(&failed))
	require.Zero(t, failed, "the restart failed no call")
}

// restartableDB starts a new private cluster of the test's own (under $TMPDIR, a folder the server's user
// can reach, on a port no other cluster looks at: quietPort), which the test may stop, crash and restart,
// with a fresh migrated database named gem_<name>. The processes' logs go to logs, shown when the test
// fails.
func restartableDB(t *testing.T, ctx context.Context, bins binaries, name string) (c *cluster, dbURL string, pool *pgxpool.Pool, logs *sqltest.SyncBuffer) {
	t.Helper()
	parent, err := os.MkdirTemp("", "gem-pg-"+name+"-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(parent, 0o755)) // the server's user must reach it when the test runs as root
	port, err := quietPort()
	require.NoError(t, err)
	c, err = startClusterOn(bins.root, filepath.Join(parent, "cluster"), port)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.destroy()
		_ = os.RemoveAll(parent)
	})
	dbURL, err = c.freshDatabase(ctx, "gem_"+name)
	require.NoError(t, err)
	pool, err = gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-proof", MaxConns: 5, ConnectWait: time.Minute})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = gemsql.Migrate(ctx, pool, nil, packs.Lines()...)
	require.NoError(t, err)
	logs = &sqltest.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("\n" + logs.String())
		}
	})
	return c, dbURL, pool, logs
}
