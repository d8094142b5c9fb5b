package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/sql/gemsql"
)

// history lists the months of history and, with -retire, retires those past the retention now.
func history(args []string, stdout, stderr io.Writer) int {
	fs, retire := historyFlagSet()
	if code, ok := parseNoArgFlags(fs, "history", args, stdout, stderr); !ok {
		return code
	}
	cfg, err := executor.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "executor history:", err)
		return 2
	}
	cfg = cfg.WithDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour) // a retirement copies whole months
	defer cancel()
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: cfg.DatabaseURL, SessionURL: cfg.SessionURL, ApplicationName: "gem-history"})
	if err != nil {
		fmt.Fprintln(stderr, "executor history:", err)
		return 1
	}
	defer pool.Close()
	now := time.Now()
	if *retire {
		if cfg.Retention < 0 {
			fmt.Fprintln(stderr, "executor history: GEM_RETENTION is off: nothing is retired")
			return 2
		}
		done, err := gemsql.RetireBefore(ctx, pool, now.Add(-cfg.Retention), cfg.ArchiveDir)
		for _, r := range done {
			if r.Err != nil {
				fmt.Fprintf(stdout, "kept %s: %v\n", r.Month.Suffix, r.Err)
				continue
			}
			fmt.Fprintf(stdout, "retired %s in %s: %d calls, %d receipts, %d runs archived to %s\n", r.Month.Suffix,
				r.Took.Round(time.Millisecond), r.Manifest.Tables["core_tool_calls"].Rows, r.Manifest.Tables["core_tool_receipts"].Rows,
				r.Manifest.Tables["brain_runs"].Rows, filepath.Join(cfg.ArchiveDir, r.Month.Suffix))
		}
		if err != nil {
			fmt.Fprintln(stderr, "executor history:", err)
			return 1
		}
	}
	months, err := gemsql.HistoryMonths(ctx, pool)
	if err != nil {
		fmt.Fprintln(stderr, "executor history:", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MONTH\tENDS\tCALLS (ESTIMATE)\tSIZE\tRETIRED")
	for _, m := range months {
		ends, when := m.End.Format("2006-01-02"), "never (GEM_RETENTION=off)"
		if m.End.Year() >= 9999 {
			ends = "-"
		}
		if cfg.Retention >= 0 {
			at := m.End.Add(cfg.Retention)
			when = "from " + at.Format("2006-01-02")
			if !at.After(now) {
				when = "due (past GEM_RETENTION)"
			}
		}
		calls := "-"
		if m.Calls >= 0 {
			calls = fmt.Sprint(m.Calls)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Suffix, ends, calls, humanBytes(m.Bytes), when)
	}
	_ = tw.Flush()
	return 0
}

// humanBytes prints a size in B, kB, MB, GB (powers of 1000, as PostgreSQL's pg_size_pretty does not).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
