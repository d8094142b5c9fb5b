package gemsql_test

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// Months ahead of now stand for old ones: a fresh database has no partitions for past months (its history
// before partitioning is _p_before), so the test makes calls in next month and retires it with a clock
// that runs a year ahead.
func TestRetireArchivesAndDropsAMonth(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	pool := b.pool

	next := time.Now().UTC().AddDate(0, 1, 0)
	month := next.Format("2006_01")
	later := next.AddDate(0, 1, 0)
	_, err := gemsql.EnsureMonths(ctx, pool, time.Now())
	require.NoError(t, err)

	// Next month: a call with an idempotency key and a receipt, a call without one yet, a run with a turn.
	old, open, run := gemsql.NewIDAt(next), gemsql.NewIDAt(next.Add(time.Minute)), gemsql.NewIDAt(next)
	// The month after: a call answered from the first call's key, and a chat message of the old run.
	kept := gemsql.NewIDAt(later)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	exec(`INSERT INTO core_tool_calls (id, tool_name, input, run_id) VALUES ($1, 'os.create_note', '{"title": "a, \"quoted\"\nline"}', $3), ($2, 'os.health_check', '{}', NULL)`, old, open, run)
	exec(`INSERT INTO core_tool_receipts (call_id, tool_name, status, result) VALUES ($1, 'os.create_note', 'succeeded', '{"ok": true}')`, old)
	exec(`INSERT INTO core_idempotency_keys (tool_name, key_hash, key, call_id) VALUES ('os.create_note', sha256('k1'), 'k1', $1)`, old)
	exec(`INSERT INTO brain_runs (id, message, mode) VALUES ($1, 'note this', 'chat')`, run)
	exec(`INSERT INTO brain_turns (run_id, iteration, provider, model, request, latency_ms) VALUES ($1, 1, 'openai', 'm', '{}', 3)`, run)
	exec(`INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, 'os.create_note', '{}')`, kept)
	exec(`INSERT INTO core_tool_receipts (call_id, tool_name, status, idempotency_hit, idempotency_of) VALUES ($1, 'os.create_note', 'succeeded', true, $2)`, kept, old)

	months, err := gemsql.HistoryMonths(ctx, pool)
	require.NoError(t, err)
	var hm gemsql.HistoryMonth
	for _, m := range months {
		if m.Suffix == month {
			hm = m
		}
	}
	require.Equal(t, []string{"core_tool_calls", "core_tool_receipts", "brain_runs", "brain_turns", "brain_run_programs", "brain_run_events"}, hm.Tables)
	require.Equal(t, time.Date(next.Year(), next.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0), hm.End)

	// A call still waiting for its receipt keeps its month.
	dir := t.TempDir()
	_, err = gemsql.Retire(ctx, pool, dir, hm)
	require.ErrorIs(t, err, gemsql.ErrOpenCalls)
	require.NoFileExists(t, filepath.Join(dir, month, "manifest.json"))
	exec(`INSERT INTO core_tool_receipts (call_id, tool_name, status, error, error_code) VALUES ($1, 'os.health_check', 'failed', '{"code": "x"}', 'x')`, open)

	manifest, err := gemsql.Retire(ctx, pool, dir, hm)
	require.NoError(t, err)
	require.Equal(t, int64(2), manifest.Tables["core_tool_calls"].Rows)
	require.Equal(t, int64(2), manifest.Tables["core_tool_receipts"].Rows)
	require.Equal(t, int64(1), manifest.Tables["brain_runs"].Rows)
	require.Equal(t, int64(1), manifest.Tables["brain_turns"].Rows)
	require.Equal(t, int64(0), manifest.Tables["brain_run_programs"].Rows)
	require.Equal(t, int64(1), manifest.Tables["brain_run_events"].Rows, "the run's run_started goes with its month")

	// The archive: gzip-compressed CSV with a header, as the manifest says, that reads back whole.
	f := manifest.Tables["core_tool_calls"]
	raw, err := os.ReadFile(filepath.Join(dir, month, f.File))
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	require.Equal(t, f.SHA256, hex.EncodeToString(sum[:]))
	require.Equal(t, f.Bytes, int64(len(raw)))
	records := readArchive(t, filepath.Join(dir, month, f.File))
	require.Len(t, records, 3)
	require.Equal(t, "id", records[0][0])
	ids := []string{records[1][0], records[2][0]}
	require.ElementsMatch(t, []string{old.String(), open.String()}, ids)
	// The archive restores into the table it came from.
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	archived, err := os.Open(filepath.Join(dir, month, f.File))
	require.NoError(t, err)
	defer archived.Close()
	zr, err := gzip.NewReader(archived)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE TEMP TABLE restored (LIKE core_tool_calls)`)
	require.NoError(t, err)
	tag, err := conn.Conn().PgConn().CopyFrom(ctx, zr, `COPY restored FROM STDIN (FORMAT csv, HEADER)`)
	require.NoError(t, err)
	require.Equal(t, int64(2), tag.RowsAffected())
	var title string
	require.NoError(t, conn.QueryRow(ctx, `SELECT input ->> 'title' FROM restored WHERE id = $1`, old).Scan(&title))
	require.Equal(t, "a, \"quoted\"\nline", title)

	// The month is gone; what pointed at it went as its foreign keys say.
	for _, table := range hm.Tables {
		var exists bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table+"_p"+month).Scan(&exists))
		require.False(t, exists, table)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE id IN ($1, $2)`, old, open).Scan(&n))
	require.Zero(t, n)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM core_idempotency_keys WHERE key = 'k1'`).Scan(&n))
	require.Zero(t, n, "the key went with its call")
	var of *uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT idempotency_of FROM core_tool_receipts WHERE call_id = $1`, kept).Scan(&of))
	require.Nil(t, of, "a later receipt keeps its row, without the call it pointed at")

	// Again: nothing left to do, and the month is not listed.
	months, err = gemsql.HistoryMonths(ctx, pool)
	require.NoError(t, err)
	for _, m := range months {
		require.NotEqual(t, month, m.Suffix)
	}
}

// A retirement that stopped after detaching a partition is finished by the next one.
func TestRetireFinishesAnInterruptedRetirement(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	pool := b.pool
	_, err := gemsql.EnsureMonths(ctx, pool, time.Now())
	require.NoError(t, err)
	next := time.Now().UTC().AddDate(0, 2, 0)
	month := next.Format("2006_01")
	id := gemsql.NewIDAt(next)
	_, err = pool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name, input) VALUES ($1, 'os.health_check', '{}')`, id)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO core_tool_receipts (call_id, tool_name, status) VALUES ($1, 'os.health_check', 'succeeded')`, id)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ALTER TABLE core_tool_receipts DETACH PARTITION core_tool_receipts_p`+month)
	require.NoError(t, err)

	months, err := gemsql.HistoryMonths(ctx, pool)
	require.NoError(t, err)
	var hm gemsql.HistoryMonth
	for _, m := range months {
		if m.Suffix == month {
			hm = m
		}
	}
	require.Contains(t, hm.Tables, "core_tool_receipts", "a detached partition is still listed")
	manifest, err := gemsql.Retire(ctx, pool, t.TempDir(), hm)
	require.NoError(t, err)
	require.Equal(t, int64(1), manifest.Tables["core_tool_receipts"].Rows)
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname LIKE '%\_p' || $1`, month).Scan(&left))
	require.Zero(t, left)
}

// New calls and runs must have time-ordered ids; the default gives one.
func TestPartitionedIDs(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name) VALUES ('os.health_check') RETURNING id`).Scan(&id))
	require.Equal(t, uuid.Version(7), id.Version())
	var at time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT gem_uuid_time($1)`, id).Scan(&at))
	require.WithinDuration(t, time.Now(), at, time.Minute)

	_, err := b.pool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name) VALUES (gen_random_uuid(), 'os.health_check')`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code)
	require.Contains(t, pgErr.Message, "must be a UUIDv7")
	require.Contains(t, pgErr.Hint, "gem_uuid_v7()")
	var jobs int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs))
	require.Equal(t, 1, jobs, "a refused call makes no job")

	// A month no executor made yet (ten years on) is refused, not put where retention cannot find it.
	_, err = b.pool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name) VALUES ($1, 'os.health_check')`, gemsql.NewIDAt(time.Now().AddDate(10, 0, 0)))
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code)
	require.Contains(t, pgErr.Message, "no partition")
}

func readArchive(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	records, err := csv.NewReader(bufio.NewReader(zr)).ReadAll()
	require.NoError(t, err)
	return records
}

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"400d": 400 * 24 * time.Hour, " 9600h ": 9600 * time.Hour, "off": -1, "OFF": -1, "36500d": 36500 * 24 * time.Hour} {
		got, err := gemsql.ParseRetention(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "0", "0d", "-5d", "abc", "1.5d", "-3h", "99999999999d", "36501d", "d"} {
		_, err := gemsql.ParseRetention(bad)
		require.Error(t, err, "%q", bad)
	}
}
