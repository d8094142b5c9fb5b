package gemsql

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// History is kept in monthly partitions (migration 00033, docs/retention.md). EnsureMonths makes the months
// ahead; Retire archives a month to compressed files and drops it.

// MonthsAhead is how many months after the current one EnsureMonths makes: an executor that stops for
// less than that never leaves inserts without a partition.
const MonthsAhead = 3

// EnsureMonths makes the partitions of the month of now and of the MonthsAhead months after it, and says
// how many tables' partitions it made.
func EnsureMonths(ctx context.Context, db DBTX, now time.Time) (int, error) {
	first := monthOf(now)
	made := 0
	for i := range MonthsAhead + 1 {
		var n int
		if err := db.QueryRow(ctx, `SELECT gem_ensure_month($1)`, first.AddDate(0, i, 0)).Scan(&n); err != nil {
			return made, fmt.Errorf("error making the partitions of %s: %w", first.AddDate(0, i, 0).Format("2006-01"), err)
		}
		made += n
	}
	return made, nil
}

func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// HistoryMonth is one month of history: the partitions of every partitioned table that hold it.
type HistoryMonth struct {
	// Suffix names the month ("2026_11", or "before" and "nonv7" for the rows made before partitioning);
	// Partition gives its tables' partitions.
	Suffix string
	// End is when the month ends: every row in it was made before End.
	End time.Time
	// Tables are the partitioned tables that have this month, parents first.
	Tables []string
	// Bytes is the size of its partitions, with their indexes and TOAST.
	Bytes int64
	// Calls is PostgreSQL's estimate of its calls (reltuples, as of the last ANALYZE); -1 when unknown.
	Calls int64
}

// partitionName matches the partitions gem_ensure_month and migration 00033 make.
var partitionName = regexp.MustCompile(`^(core_tool_calls|core_tool_receipts|brain_runs|brain_turns|brain_run_programs|brain_run_events)_p_?(\d{4}_\d{2}|before|nonv7)$`)

// Partition is the name of table's partition for the month: table_p2026_11, or table_p_before and
// table_p_nonv7.
func (m HistoryMonth) Partition(table string) string {
	if m.Suffix == "before" || m.Suffix == "nonv7" {
		return table + "_p_" + m.Suffix
	}
	return table + "_p" + m.Suffix
}

// HistoryMonths lists the months of history there are, oldest first. The legacy partitions (_p_before and
// _p_nonv7) end when the first month begins. A table detached but not yet dropped (a retirement that
// stopped half-way) still counts.
func HistoryMonths(ctx context.Context, db DBTX) ([]HistoryMonth, error) {
	rows, err := db.Query(ctx, `
		SELECT c.relname, gem_uuid_time((regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([0-9a-f-]{36})''\)'))[1]::uuid),
		       pg_total_relation_size(c.oid), c.reltuples::bigint
		FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
		  AND c.relname ~ '^(core_tool_calls|core_tool_receipts|brain_runs|brain_turns|brain_run_programs|brain_run_events)_p'`)
	if err != nil {
		return nil, fmt.Errorf("error listing the history partitions: %w", err)
	}
	type part struct {
		table, suffix string
		end           *time.Time
		bytes, rows   int64
	}
	var parts []part
	for rows.Next() {
		var name string
		var end *time.Time
		var bytes, tuples int64
		if err := rows.Scan(&name, &end, &bytes, &tuples); err != nil {
			rows.Close()
			return nil, err
		}
		m := partitionName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		parts = append(parts, part{m[1], m[2], end, bytes, tuples})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	bySuffix := map[string]*HistoryMonth{}
	var legacyEnd, firstMonth time.Time
	for _, p := range parts {
		hm := bySuffix[p.suffix]
		if hm == nil {
			hm = &HistoryMonth{Suffix: p.suffix, Calls: -1}
			bySuffix[p.suffix] = hm
		}
		hm.Tables = append(hm.Tables, p.table)
		hm.Bytes += p.bytes
		if p.table == "core_tool_calls" {
			hm.Calls = p.rows // -1 before the first ANALYZE
		}
		if start, err := time.Parse("2006_01", p.suffix); err == nil {
			hm.End = start.AddDate(0, 1, 0)
			if firstMonth.IsZero() || start.Before(firstMonth) {
				firstMonth = start
			}
		} else if p.suffix == "before" && p.end != nil {
			legacyEnd = *p.end
		}
	}
	if legacyEnd.IsZero() {
		// _p_before is gone or detached (a retirement that stopped half-way): the legacy rows ended where
		// the months began, which is at most the oldest month left.
		legacyEnd = firstMonth
	}
	if legacyEnd.IsZero() {
		legacyEnd = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) // nothing tells: keep them
	}
	out := make([]HistoryMonth, 0, len(bySuffix))
	for _, hm := range bySuffix {
		if hm.Suffix == "before" || hm.Suffix == "nonv7" {
			hm.End = legacyEnd
		}
		slices.SortFunc(hm.Tables, func(a, b string) int { return tableOrder(a) - tableOrder(b) })
		out = append(out, *hm)
	}
	slices.SortFunc(out, func(a, b HistoryMonth) int {
		if c := a.End.Compare(b.End); c != 0 {
			return c
		}
		return strings.Compare(a.Suffix, b.Suffix)
	})
	return out, nil
}

// historyTables are the partitioned tables, parents before the tables that reference them.
var historyTables = []string{"core_tool_calls", "core_tool_receipts", "brain_runs", "brain_turns", "brain_run_programs", "brain_run_events"}

func tableOrder(t string) int { return slices.Index(historyTables, t) }

// partitionKeys are the columns the tables are partitioned by.
var partitionKeys = map[string]string{
	"core_tool_calls": "id", "core_tool_receipts": "call_id", "brain_runs": "id", "brain_turns": "run_id",
	"brain_run_programs": "run_id", "brain_run_events": "run_id",
}

// ArchiveManifest describes an archived month: manifest.json beside its files.
type ArchiveManifest struct {
	Month      string                  `json:"month"`
	End        time.Time               `json:"end"`
	ArchivedAt time.Time               `json:"archived_at"`
	Tables     map[string]ArchivedFile `json:"tables"`
}

// ArchivedFile is one table's partition, as gzip-compressed CSV with a header line (restore with
// `\copy table FROM PROGRAM 'gunzip -c file' (FORMAT csv, HEADER)`).
type ArchivedFile struct {
	File   string `json:"file"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ErrOpenCalls is returned by Retire for a month that still has calls without a receipt: it is not dropped.
var ErrOpenCalls = errors.New("the month has calls without a receipt")

// Retire archives a month of history into dir/<suffix>/ (one gzip-compressed CSV file per table and a
// manifest.json, each written under a temporary name, synced and renamed) and then drops its partitions.
// Rows elsewhere that point at the month's calls and runs go as their foreign keys say (idempotency keys,
// approvals and device attempts with their call; a later call's idempotency_of and a chat message's run
// become NULL). A month with a call that has no receipt yet is left alone (ErrOpenCalls). Retire is
// idempotent: a retirement that stopped half-way is finished by the next one.
func Retire(ctx context.Context, pool *pgxpool.Pool, dir string, month HistoryMonth) (ArchiveManifest, error) {
	manifest, err := archiveMonth(ctx, pool, dir, month)
	if err != nil {
		return manifest, err
	}
	if err := dropMonth(ctx, pool, month, manifest); err != nil {
		return manifest, err
	}
	return manifest, nil
}

// archiveMonth writes the month's archive, or reads it back when a complete one is already there.
func archiveMonth(ctx context.Context, pool *pgxpool.Pool, dir string, month HistoryMonth) (ArchiveManifest, error) {
	monthDir := filepath.Join(dir, month.Suffix)
	manifestPath := filepath.Join(monthDir, "manifest.json")
	if b, err := os.ReadFile(manifestPath); err == nil {
		var m ArchiveManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return m, fmt.Errorf("error reading %s: %w", manifestPath, err)
		}
		return m, nil
	}
	if err := os.MkdirAll(monthDir, 0o750); err != nil {
		return ArchiveManifest{}, fmt.Errorf("error making the archive folder: %w", err)
	}
	manifest := ArchiveManifest{Month: month.Suffix, End: month.End, Tables: map[string]ArchivedFile{}}
	// One snapshot for every table, so the files agree with each other and with the counts checked before
	// dropping.
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if slices.Contains(month.Tables, "core_tool_calls") {
			// A call's receipt is in the same month (its partition may be detached already).
			if !slices.Contains(month.Tables, "core_tool_receipts") {
				return fmt.Errorf("%w: %s is missing", ErrOpenCalls, month.Partition("core_tool_receipts"))
			}
			var open int64
			if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s c WHERE NOT EXISTS (SELECT 1 FROM %s r WHERE r.call_id = c.id)`,
				pgx.Identifier{month.Partition("core_tool_calls")}.Sanitize(),
				pgx.Identifier{month.Partition("core_tool_receipts")}.Sanitize())).Scan(&open); err != nil {
				return err
			}
			if open > 0 {
				return fmt.Errorf("%w: %d in %s", ErrOpenCalls, open, month.Suffix)
			}
		}
		for _, table := range month.Tables {
			f, err := archiveTable(ctx, tx.Conn(), monthDir, month.Partition(table))
			if err != nil {
				return fmt.Errorf("error archiving %s: %w", month.Partition(table), err)
			}
			manifest.Tables[table] = f
		}
		return nil
	})
	if err != nil {
		return manifest, err
	}
	manifest.ArchivedAt = time.Now().UTC()
	b, _ := json.MarshalIndent(manifest, "", "  ")
	if err := writeFileSynced(manifestPath, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return manifest, err
	}
	return manifest, syncDir(monthDir)
}

// archiveTable copies one partition out as gzip-compressed CSV.
func archiveTable(ctx context.Context, conn *pgx.Conn, dir, part string) (ArchivedFile, error) {
	name := part + ".csv.gz"
	out := ArchivedFile{File: name}
	var sum hash.Hash = sha256.New()
	err := writeFileSynced(filepath.Join(dir, name), func(w io.Writer) error {
		counted := &countingWriter{w: io.MultiWriter(w, sum)}
		zw, _ := gzip.NewWriterLevel(counted, gzip.BestSpeed)
		tag, err := conn.PgConn().CopyTo(ctx, zw, fmt.Sprintf(`COPY %s TO STDOUT (FORMAT csv, HEADER)`, pgx.Identifier{part}.Sanitize()))
		if err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		out.Rows, out.Bytes = tag.RowsAffected(), counted.n
		return nil
	})
	out.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return out, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeFileSynced writes path through a temporary file that is synced before it takes the name, so a file
// under its final name is always whole.
func writeFileSynced(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// dropMonth drops the month's partitions once their rows are the archived ones.
func dropMonth(ctx context.Context, pool *pgxpool.Pool, month HistoryMonth, manifest ArchiveManifest) error {
	bound, err := monthBounds(ctx, pool, month)
	if err != nil {
		return err
	}
	// The rows still there must be the ones archived: a month that changed since (it should not) is
	// archived again next time.
	for _, table := range month.Tables {
		part := month.Partition(table)
		var n int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{part}.Sanitize()).Scan(&n); err != nil {
			return fmt.Errorf("error counting %s: %w", part, err)
		}
		if a, ok := manifest.Tables[table]; !ok || a.Rows != n {
			return fmt.Errorf("%s has %d rows, the archive %d: it is archived again next time", part, n, a.Rows)
		}
	}
	// Rows that point at the month from outside its partitions.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
			return err
		}
		for _, parent := range []string{"core_tool_calls", "brain_runs"} {
			lo, hi, ok := bound.of(parent)
			if !ok {
				continue
			}
			stmts, err := referencingStatements(ctx, tx, parent)
			if err != nil {
				return err
			}
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s, lo, hi); err != nil {
					return fmt.Errorf("error clearing what points at %s's month %s: %w", parent, month.Suffix, err)
				}
			}
			if parent == "core_tool_calls" {
				// The before-images of the month's calls' writes: nothing can roll those calls back any more.
				if _, err := tx.Exec(ctx, `DELETE FROM core_undo_log WHERE call_id >= $1 AND call_id < $2`, lo, hi); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Children first: a parent's partition cannot go while another table's partition refers to it.
	for i := len(historyTables) - 1; i >= 0; i-- {
		table := historyTables[i]
		if !slices.Contains(month.Tables, table) {
			continue
		}
		if err := dropPartition(ctx, pool, table, month.Partition(table)); err != nil {
			return err
		}
	}
	return nil
}

// monthRange is the id range of a month in each parent table.
type monthRange map[string][2]string

func (m monthRange) of(parent string) (lo, hi string, ok bool) {
	r, ok := m[parent]
	return r[0], r[1], ok
}

// monthBounds reads the partition bounds of the month's parent partitions (MINVALUE and MAXVALUE become
// the smallest and largest uuid).
func monthBounds(ctx context.Context, db DBTX, month HistoryMonth) (monthRange, error) {
	out := monthRange{}
	for _, parent := range []string{"core_tool_calls", "brain_runs"} {
		if !slices.Contains(month.Tables, parent) {
			continue
		}
		var lo, hi *string
		err := db.QueryRow(ctx, `
			SELECT (regexp_match(b, 'FROM \(''([0-9a-f-]{36})''\)'))[1], (regexp_match(b, 'TO \(''([0-9a-f-]{36})''\)'))[1]
			FROM (SELECT pg_get_expr(relpartbound, oid) AS b FROM pg_class WHERE oid = to_regclass($1)) x`,
			pgx.Identifier{month.Partition(parent)}.Sanitize()).Scan(&lo, &hi)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if lo == nil && hi == nil {
			// Detached already (its bound is gone): what pointed at it was cleared before the detach.
			continue
		}
		r := [2]string{"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"}
		if lo != nil {
			r[0] = *lo
		}
		if hi != nil {
			r[1] = *hi
		}
		out[parent] = r
	}
	return out, nil
}

// referencingStatements are the statements ($1, $2: the id range) that do to the rows pointing at a range of
// parent's ids what their foreign keys' ON DELETE says, except in the partitioned tables partitioned by that
// key (their partition of the month is dropped with it).
func referencingStatements(ctx context.Context, tx pgx.Tx, parent string) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT c.conrelid::regclass::text, a.attname, c.confdeltype
		FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
		WHERE c.contype = 'f' AND c.confrelid = to_regclass($1) AND c.conparentid = 0 AND cardinality(c.conkey) = 1`, parent)
	if err != nil {
		return nil, err
	}
	var stmts []string
	for rows.Next() {
		var table, column, action string
		if err := rows.Scan(&table, &column, &action); err != nil {
			rows.Close()
			return nil, err
		}
		if partitionKeys[table] == column {
			continue
		}
		where := fmt.Sprintf(`%s >= $1 AND %s < $2`, pgx.Identifier{column}.Sanitize(), pgx.Identifier{column}.Sanitize())
		switch action {
		case "c":
			stmts = append(stmts, fmt.Sprintf(`DELETE FROM %s WHERE %s`, table, where))
		case "n":
			stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET %s = NULL WHERE %s`, table, pgx.Identifier{column}.Sanitize(), where))
		default:
			rows.Close()
			return nil, fmt.Errorf("%s.%s refers to %s with ON DELETE %s: retention cannot tell what to do with it", table, column, parent, action)
		}
	}
	return stmts, rows.Err()
}

// dropPartition detaches a partition without blocking inserts (DETACH … CONCURRENTLY, which waits for
// transactions that might use it), finishing a detach that was interrupted, and drops it.
func dropPartition(ctx context.Context, pool *pgxpool.Pool, parent, part string) error {
	var attached, pending bool
	err := pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1)),
		       EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhdetachpending)`,
		pgx.Identifier{part}.Sanitize()).Scan(&attached, &pending)
	if err != nil {
		return err
	}
	p, t := pgx.Identifier{parent}.Sanitize(), pgx.Identifier{part}.Sanitize()
	switch {
	case pending:
		_, err = pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s FINALIZE`, p, t))
	case attached:
		_, err = pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s CONCURRENTLY`, p, t))
	}
	if err != nil {
		return fmt.Errorf("error detaching %s: %w", part, err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE IF EXISTS `+t); err != nil {
		return fmt.Errorf("error dropping %s: %w", part, err)
	}
	return nil
}

// retentionLockKey names the session advisory lock held by whoever retires months: one at a time.
const retentionLockKey = "gem.retention"

// RetiredMonth is one month RetireBefore retired, or could not.
type RetiredMonth struct {
	Month    HistoryMonth
	Manifest ArchiveManifest
	Took     time.Duration
	// Err is why the month was kept: ErrOpenCalls, or what stopped its archive or drop.
	Err error
}

// ErrRetiring is returned by RetireBefore when another process is retiring months.
var ErrRetiring = errors.New("another executor is retiring months of history")

// RetireBefore retires, oldest first, every month of history that ended at or before cutoff into dir, under
// an advisory lock (ErrRetiring when another holds it). A month with calls still open is kept and the rest
// go on; any other error stops the pass (the month is tried again next time). It returns what it did.
func RetireBefore(ctx context.Context, pool *pgxpool.Pool, cutoff time.Time, dir string) ([]RetiredMonth, error) {
	// A session advisory lock: on a connection of its own, which a transaction pooler would not keep.
	conn, err := ConnectSession(ctx, pool, "retention")
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, retentionLockKey).Scan(&mine); err != nil {
		return nil, err
	}
	if !mine {
		return nil, ErrRetiring
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, retentionLockKey)
	}()
	months, err := HistoryMonths(ctx, pool)
	if err != nil {
		return nil, err
	}
	var out []RetiredMonth
	for _, m := range months {
		if m.End.After(cutoff) {
			continue
		}
		start := time.Now()
		manifest, err := Retire(ctx, pool, dir, m)
		out = append(out, RetiredMonth{Month: m, Manifest: manifest, Took: time.Since(start), Err: err})
		if err != nil && !errors.Is(err, ErrOpenCalls) {
			return out, err
		}
	}
	return out, nil
}

// ParseRetention reads a retention period: a Go duration, or a whole number of days ("400d"). "off" keeps
// everything: it is returned as -1.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return -1, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		// A century at most: more would overflow a Duration and come out negative, which means "keep everything".
		if err != nil || n <= 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not a whole number of days from 1 to 36500 (like 400d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a retention (like 400d or 9600h, or off)", s)
	}
	return d, nil
}

// NewIDAt is a UUIDv7 made as if at t (the ids of seeded or imported history, and of tests).
func NewIDAt(t time.Time) uuid.UUID {
	id := uuid.Must(uuid.NewV7())
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (8 * (5 - i)))
	}
	return id
}
