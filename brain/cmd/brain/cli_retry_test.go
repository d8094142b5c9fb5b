package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// TestCLIRetriesWhileTheDatabaseIsAway: `brain run` and `brain call` sent while PostgreSQL is away are
// answered 503; each command sends its request again, under the key it made up, until the database is back,
// and ends with the answer: one run, one call. Before, each printed the 503 and failed at once, and a person
// who ran it again could not know whether the first try had done its work (a run answered 503 after its
// call was made, as `brain run --follow` once met, was made twice by running the command again).
func TestCLIRetriesWhileTheDatabaseIsAway(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	executor, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(executor.Stop)
	cut, viaCut := newDBCut(t, dbURL)
	m, err := startBrain(viaCut, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })

	// The commands reach the brain through a proxy that counts its 503s.
	var unavailable atomic.Int64
	target, err := url.Parse(m.Server.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode == http.StatusServiceUnavailable {
			unavailable.Add(1)
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	env := map[string]string{"GEM_BRAIN_URL": front.URL, "GEM_BRAIN_TOKEN": testToken}

	for _, c := range []struct {
		name  string
		args  []string
		count string // the work the command did, counted
	}{
		{"run", []string{"run", "-t", "30s", "-m", "list urgent tasks"},
			`SELECT count(*) FROM brain_runs r JOIN core_tool_calls c ON c.run_id = r.id WHERE r.idempotency_key LIKE 'cli-run-%'`},
		{"call", []string{"call", "os.create_note", `{"domain": "business", "title": "sent through an outage", "content": "x"}`},
			`SELECT count(*) FROM os_notes WHERE title = 'sent through an outage'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cut.cut()
			before := unavailable.Load()
			var out, errOut bytes.Buffer
			exited := make(chan int, 1)
			go func() { exited <- cli(c.args, func(k string) string { return env[k] }, &out, &errOut) }()
			require.Eventually(t, func() bool { return unavailable.Load() >= before+2 }, 30*time.Second, 10*time.Millisecond,
				"the command was answered 503 and sent its request again")
			require.NoError(t, cut.restore())
			select {
			case code := <-exited:
				require.Equal(t, 0, code, "%s\n%s", out.String(), errOut.String())
			case <-time.After(60 * time.Second):
				t.Fatalf("brain %s did not end:\n%s\n%s", c.name, out.String(), errOut.String())
			}
			var n int
			require.NoError(t, pool.QueryRow(t.Context(), c.count).Scan(&n))
			require.Equal(t, 1, n, "done once")
		})
	}
}
