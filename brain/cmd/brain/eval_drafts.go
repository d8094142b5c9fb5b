package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/sql/gemsql"
	"go.yaml.in/yaml/v3"
)

// Defaults of brain eval --from-receipts.
const (
	// evalDraftsSinceDefault is how far back the stumbles are read.
	evalDraftsSinceDefault = "7d"
	// evalDraftsOutDefault is where the drafts are written in the suites' folder, a file per run of the command.
	evalDraftsOutDefault = "drafts"
	// evalSuitesDefault holds the suites whose cases are not drafted again.
	evalSuitesDefault = "evals"
)

const evalDraftsUsage = "usage: brain eval --from-receipts [--since 7d] [--out DIR/drafts] [--dir evals]"

// evalFromReceipts writes the stumbles agents made since a time (docs/evals.md#where-agents-stumble-from-production)
// as draft cases of the search suite, for a person to confirm and move into evals/search.yaml: a case per run
// that stumbled, its request as q and the tools the run's calls that succeeded named (none: []). A request
// already a case of a suite (--dir) or of an earlier draft (--out) is not drafted again. It reads the
// database as brain serve does (DATABASE_URL).
func evalFromReceipts(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("eval --from-receipts", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Bool("from-receipts", true, "draft cases from the agents' stumbles (this command)")
	sinceFlag := flags.String("since", evalDraftsSinceDefault, "how far back: a duration (7d, 36h) or a date (2026-11-29)")
	out := flags.String("out", "", "the drafts' folder: a file per run, named by its time (default DIR/"+evalDraftsOutDefault+")")
	suites := flags.String("dir", evalSuitesDefault, "the suites' folder: requests that are cases there are not drafted")
	if err := flags.Parse(args); err != nil {
		return flagExit(err)
	}
	if flags.NArg() > 0 {
		fmt.Fprintln(stderr, evalDraftsUsage)
		return 2
	}
	if *out == "" {
		// Beside the suites, wherever the command runs: the drafts are read back to draft nothing twice.
		*out = filepath.Join(*suites, evalDraftsOutDefault)
	}
	now := time.Now().UTC()
	since, err := parseDraftsSince(*sinceFlag, now)
	if err != nil {
		fmt.Fprintf(stderr, "brain eval: --since: %v\n", err)
		return 2
	}
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: cfg.DatabaseURL, SessionURL: cfg.SessionURL, ApplicationName: "gem-brain-eval", MaxConns: 2})
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 1
	}
	defer pool.Close()
	// Runs at once into one folder take turns from reading the drafts to writing theirs, or each would draft
	// what the others are drafting.
	tx, err := pool.Begin(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 1
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	folder, err := filepath.Abs(*out)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 1
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "gem-brain-eval-drafts:"+folder); err != nil {
		fmt.Fprintln(stderr, "brain eval: error waiting for another drafts run:", err)
		return 1
	}
	known, err := draftKnownRequests(*suites, *out)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 1
	}
	stumbles, err := postgres.Stumbles(ctx, tx, since)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval: error reading the stumbles:", err)
		return 1
	}
	cases := draftCases(stumbles, known)
	if len(cases) == 0 {
		fmt.Fprintf(stdout, "No new stumbles since %s (%d run(s) stumbled, each a case already).\n", since.Format(time.DateOnly), len(stumbles))
		return 0
	}
	paths, written, err := draftsWrite(*out, now, since, cases)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 1
	}
	if written < len(cases) {
		fmt.Fprintf(stderr, "brain eval: %d request(s) too long for a file of evals (%d MiB) were not drafted.\n", len(cases)-written, evals.FileMax>>20)
	}
	if written == 0 {
		return 1
	}
	fmt.Fprintf(stdout, "Wrote %d draft case(s) to %s: confirm the tools, set the split, move them into %s.\n", written,
		strings.Join(paths, ", "), filepath.Join(*suites, "search.yaml"))
	return 0
}

// draftsSinceEarliest is the earliest --since: every stumble happened after it.
var draftsSinceEarliest = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)

// parseDraftsSince reads --since: a duration back from now (with d for days), or a date (UTC).
func parseDraftsSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("%q is not a number of days", s)
		}
		// Further back than year 1 is every stumble; PostgreSQL refuses such dates, and AddDate overflows.
		if int64(n) >= (now.Unix()-draftsSinceEarliest.Unix())/(24*60*60) {
			return draftsSinceEarliest, nil
		}
		return now.AddDate(0, 0, -n), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (7d, 36h) nor a date (2026-11-29)", s)
}

// draftCase is one draft case of the search suite.
type draftCase struct {
	q     string
	tools []string
	from  postgres.Stumble
}

// draftCases makes a case of each run's first stumble whose request is not known (a case already), in the
// order they happened.
func draftCases(stumbles []postgres.Stumble, known map[string]bool) []draftCase {
	var cases []draftCase
	for _, s := range stumbles {
		q := strings.TrimSpace(s.Message)
		if q == "" {
			q = strings.TrimSpace(s.Query)
		}
		if q == "" || known[draftRequestKey(q)] {
			continue
		}
		known[draftRequestKey(q)] = true
		tools := []string{}
		for _, t := range s.Called {
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
		cases = append(cases, draftCase{q: q, tools: tools, from: s})
	}
	return cases
}

// draftRequestKey is how two requests are told the same: their words, ignoring case and spacing.
func draftRequestKey(q string) string { return strings.ToLower(strings.Join(strings.Fields(q), " ")) }

// draftKnownRequests are the requests of the cases in the suites' and the drafts' YAML files (a suite file is a
// list of cases, each with q or message); files of another shape (thresholds) hold none.
func draftKnownRequests(dirs ...string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, dir := range dirs {
		// Listed, not globbed: a folder's name may hold a pattern's characters.
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			f := filepath.Join(dir, e.Name())
			b, err := evals.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var doc any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				return nil, fmt.Errorf("error reading %s: %w", f, err)
			}
			list, _ := doc.([]any)
			for _, item := range list {
				c, _ := item.(map[string]any)
				for _, field := range []string{"q", "message"} {
					if q, ok := c[field].(string); ok {
						known[draftRequestKey(q)] = true
					}
				}
			}
		}
	}
	return known, nil
}

// draftsWrite writes the cases into new files of dir named by now (another run in the same minute gets a
// suffix), each at most evals.FileMax bytes so the next run can read it back, and returns their paths and how
// many cases it wrote (a case too big for a file of its own is left out).
func draftsWrite(dir string, now, since time.Time, cases []draftCase) ([]string, int, error) {
	header := fmt.Sprintf("# Draft cases from stumbles since %s: confirm the tools, set the split, move into evals/search.yaml.\n", since.UTC().Format(time.DateOnly))
	var files []*bytes.Buffer
	written := 0
	for _, c := range cases {
		text := draftText(c)
		if len(header)+len(text) > evals.FileMax {
			continue
		}
		if len(files) == 0 || files[len(files)-1].Len()+len(text) > evals.FileMax {
			files = append(files, bytes.NewBufferString(header))
		}
		files[len(files)-1].WriteString(text)
		written++
	}
	if len(files) == 0 {
		return nil, 0, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("error making %s: %w", dir, err)
	}
	name := now.UTC().Format("2006-01-02T1504Z")
	var paths []string
	n := 1
	for _, b := range files {
		for ; ; n++ {
			path := filepath.Join(dir, name+".yaml")
			if n > 1 {
				path = filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", name, n))
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				return paths, 0, fmt.Errorf("error writing the drafts: %w", err)
			}
			_, err = f.Write(b.Bytes())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return paths, 0, fmt.Errorf("error writing %s: %w", path, err)
			}
			paths = append(paths, path)
			break
		}
	}
	return paths, written, nil
}

// draftText is a case as the drafts write it, in YAML the next run reads back (yaml.v3 quotes and escapes
// what would read as something else, or could not stand in a file): its tools and where it came from flow on
// one line each.
func draftText(c draftCase) string {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	tools := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{}}
	for _, t := range c.tools {
		tools.Content = append(tools.Content, str(t))
	}
	from := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, kv := range [][2]string{{"run", c.from.RunID.String()}, {"agent", c.from.Agent}, {"reason", c.from.Reason},
		{"tool", c.from.Tool}, {"property", c.from.Property}} {
		if kv[1] != "" {
			from.Content = append(from.Content, str(kv[0]), str(kv[1]))
		}
	}
	item := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		str("q"), str(c.q), str("tools"), tools, str("split"), str("tune"), str("from"), from}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	// A node of strings always encodes.
	_ = enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{item}})
	_ = enc.Close()
	return b.String()
}
