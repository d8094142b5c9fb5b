package executor_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// helperProcess is an executor running in a process of its own (this test binary, re-executed).
type helperProcess struct {
	cmd  *exec.Cmd
	done chan error
}

func (b *testBundle) startHelper(t *testing.T, env ...string) *helperProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "DATABASE_URL="+b.url, "GEM_REGISTRY="+b.regPath,
		"GEM_TEST_OUTSIDE_LOG="+b.outsideLog, "GEM_EXECUTOR_ID=helper-"+uuid.NewString()[:8])
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = testWriter{t}
	require.NoError(t, cmd.Start())
	h := &helperProcess{cmd: cmd, done: make(chan error, 1)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.done
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
			}
		}
		h.done <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-h.done:
		h.done <- err // for the cleanup
		t.Fatalf("helper executor exited before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("helper executor did not start")
	}
	return h
}

func (h *helperProcess) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-time.After(within):
		t.Fatalf("helper executor still running after %s", within)
		return nil
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (b *testBundle) waitStatus(t *testing.T, ctx context.Context, id uuid.UUID, status registry.CallStatus) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := gemsql.CallGet(ctx, b.pool, id)
		return err == nil && c.Status == status
	}, 20*time.Second, 10*time.Millisecond, "call %s never reached %s", id, status)
}

// TestExecutorKilledMidCall kills an executor process with SIGKILL while it runs two calls: one that has
// already sent a message (outside effects) and one whose effects are only in its open transaction. Another
// executor takes both up at once: the first ends outcome_unknown without sending again, the second runs
// again and succeeds. Each ends with exactly one receipt.
func TestExecutorKilledMidCall(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	h := b.startHelper(t)

	sent := b.call(t, ctx, "test.outside", `{"ms": 60000, "to": "+61400000000"}`)
	dbOnly := b.call(t, ctx, "test.slow_db", `{"ms": 60000}`)
	b.waitStatus(t, ctx, dbOnly, registry.CallRunning)
	require.Eventually(t, func() bool { return len(b.outsideLines(t)) == 1 }, 20*time.Second, 10*time.Millisecond)

	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, h.wait(t, 10*time.Second))
	killedAt := time.Now()

	b.startExecutor(t, nil)
	rs := b.wait(t, ctx, sent, dbOnly)
	recovery := time.Since(killedAt)
	t.Logf("calls of the killed executor ended %s after the kill", recovery)
	require.Less(t, recovery, 10*time.Second, "taken up by liveness, not after the tools' timeouts")

	r := rs[sent]
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeOutcomeUnknown, r.Error.Code)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, []string{sent.String()}, b.outsideLines(t), "the message was not sent twice")

	r = rs[dbOnly]
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "slow "+dbOnly.String()),
		"the killed attempt's write was rolled back; only the second attempt's is kept")

	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM core_tool_receipts`))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_executors WHERE dead_at IS NOT NULL`))
	for _, id := range []uuid.UUID{sent, dbOnly} {
		c, err := gemsql.CallGet(ctx, b.pool, id)
		require.NoError(t, err)
		require.Equal(t, registry.CallStatus(rs[id].Status), c.Status)
		require.Equal(t, "completed", jobState(t, b, c.JobID))
	}
}

// An executor's death does not spend a call's attempts: a call on its last attempt is taken up again. A call
// that has already lived through crashRescuesMax deaths (one that kills every executor) is discarded.
func TestExecutorDeathsDoNotSpendAttempts(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	h := b.startHelper(t)

	insert := func() uuid.UUID {
		var id uuid.UUID
		require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, max_attempts)
			VALUES ('test.slow_db', '{"ms": 60000}', 1) RETURNING id`).Scan(&id))
		return id
	}
	lastAttempt, poison := insert(), insert()
	b.waitStatus(t, ctx, lastAttempt, registry.CallRunning)
	b.waitStatus(t, ctx, poison, registry.CallRunning)
	_, err := b.pool.Exec(ctx, `UPDATE river_job SET errors = (SELECT array_agg(jsonb_build_object('at', now(), 'attempt', 1,
		'error', 'executor x stopped during this attempt', 'trace', '', 'executor_died', true)) FROM generate_series(1, 10))
		WHERE id = (SELECT job_id FROM core_tool_calls WHERE id = $1)`, poison)
	require.NoError(t, err)

	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, h.wait(t, 10*time.Second))
	b.startExecutor(t, nil)
	rs := b.wait(t, ctx, lastAttempt, poison)

	r := rs[lastAttempt]
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Equal(t, 2, r.Attempt)
	r = rs[poison]
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeJobDiscarded, r.Error.Code)
}

// The database going away under a call does not spend the call's attempts: its connection is ended in the
// middle of its transaction, as a restart ends every connection, and the call, on its last attempt, runs
// again and succeeds. (It was discarded: `make chaos` found calls whose attempts executor deaths had brought
// to the last one, and which a restart then ended.)
func TestDatabaseAwayDoesNotSpendAttempts(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startHelper(t)
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, max_attempts)
		VALUES ('test.slow_db', '{"ms": 1500}', 1) RETURNING id`).Scan(&id))
	// Its handler has written its note and sleeps: the transaction is open on the helper's call connection.
	var pid int
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
			AND application_name = 'gem-executor-calls' AND state = 'idle in transaction'`).Scan(&pid)
		return err == nil
	}, 20*time.Second, 5*time.Millisecond)
	_, err := b.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)

	r := b.waitOne(t, ctx, id)
	if r.Error != nil {
		t.Fatalf("%s %s: %s %s", r.Status, r.Error.Code, r.Error.Message, r.Error.Details)
	}
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.Equal(t, 1, r.Attempt, "the run the database cut short spent no attempt")
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "slow "+id.String()),
		"the cut-short run's note was rolled back with it")
}

// TestSIGTERMDrains stops an executor with SIGTERM while it runs three calls: the short one finishes within
// the drain deadline; the long one is cancelled at the deadline, rolled back and finished by another
// executor; the one that had sent a message is not sent again (River retries an interrupted run with the
// same attempt number, so the outside-effects marker must not rely on it).
func TestSIGTERMDrains(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	h := b.startHelper(t, "GEM_EXECUTOR_DRAIN_TIMEOUT=1500ms")

	short := b.call(t, ctx, "test.slow_db", `{"ms": 500}`)
	long := b.call(t, ctx, "test.slow_db", `{"ms": 60000}`)
	sent := b.call(t, ctx, "test.outside", `{"ms": 60000}`)
	b.waitStatus(t, ctx, short, registry.CallRunning)
	b.waitStatus(t, ctx, long, registry.CallRunning)
	require.Eventually(t, func() bool { return len(b.outsideLines(t)) == 1 }, 20*time.Second, 10*time.Millisecond)

	stopAt := time.Now()
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, h.wait(t, 10*time.Second), "a drained executor exits 0")
	stopped := time.Since(stopAt)
	require.Greater(t, stopped, 1400*time.Millisecond, "it waited for the drain deadline")
	require.Less(t, stopped, 5*time.Second)

	r, err := gemsql.ReceiptGet(ctx, b.pool, short)
	require.NoError(t, err, "the short call finished during the drain")
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.Equal(t, 1, r.Attempt)
	_, err = gemsql.ReceiptGet(ctx, b.pool, long)
	require.ErrorIs(t, err, gemsql.ErrNotFound, "the long call was cancelled, not failed")
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title = $1`, "slow "+long.String()))

	b.startExecutor(t, nil)
	r = b.waitOne(t, ctx, long)
	require.Equal(t, registry.StatusSucceeded, r.Status)
	require.Equal(t, 1, r.Attempt, "River does not count an attempt interrupted by a shutdown")
	r = b.waitOne(t, ctx, sent)
	require.Equal(t, registry.StatusFailed, r.Status)
	require.Equal(t, registry.CodeOutcomeUnknown, r.Error.Code)
	require.Equal(t, []string{sent.String()}, b.outsideLines(t), "the message was not sent twice")
	var stoppedAt *time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT stopped_at FROM core_executors WHERE id LIKE 'helper-%'`).Scan(&stoppedAt))
	require.NotNil(t, stoppedAt, "a stopped executor says so")
}

// TestDuplicateExecutorIDRefused checks that two executors cannot share an id (which would defeat liveness).
func TestDuplicateExecutorIDRefused(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	e := b.startExecutor(t, nil)
	id := e.Config().ID

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "DATABASE_URL="+b.url, "GEM_REGISTRY="+b.regPath, "GEM_EXECUTOR_ID="+id)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), fmt.Sprintf("another executor with id %q is running", id))
}

// A run of a device call that hands it to another device (its attempt never reached its device) does not
// when the call has its receipt, also one being committed while it hands it out: the insert waits for that
// commit and then inserts nothing. Two runs of one call can overlap (another executor takes a call up while
// the executor waiting on its device has lost its liveness connection), and a device must never run a call
// whose receipt says it did not run (device_unavailable).
func TestNoAttemptForReceiptedCall(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	id := b.call(t, ctx, "os.health_check", `{}`)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code, attempt)
		VALUES ($1, 'os.health_check', 'failed', '{"code": "device_unavailable", "message": "no device came"}', 'device_unavailable', 1)`, id)
	require.NoError(t, err)

	inserted := make(chan error, 1)
	go func() {
		var attempt int64
		inserted <- b.pool.QueryRow(ctx, executor.AttemptInsertSQL, id, "laptop", 1000).Scan(&attempt)
	}()
	select {
	case err := <-inserted:
		t.Fatalf("the insert did not wait for the receipt's transaction: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, tx.Commit(ctx))
	select {
	case err := <-inserted:
		require.ErrorIs(t, err, pgx.ErrNoRows, "nothing is handed out for a call that has its receipt")
	case <-time.After(10 * time.Second):
		t.Fatal("the insert still waits after the receipt committed")
	}
	require.Zero(t, b.count(t, ctx, `SELECT count(*) FROM core_device_attempts WHERE call_id = $1`, id))
}
