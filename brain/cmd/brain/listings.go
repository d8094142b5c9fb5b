package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
)

// The listings a newcomer reaches for: brain tools, brain calls, brain runs. Each prints aligned columns,
// or the API's JSON answer with -json; their filters are the HTTP API's query parameters.

// parseInterleaved parses flags that may come before, between or after the positional arguments
// (brain tools create a task -limit 3), returning the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// listing is a listing command's request: its path, and the query its flags set.
type listing struct {
	name   string
	fs     *flag.FlagSet
	query  map[string]*string
	asJSON *bool
	client func() *cliClient
}

func newListing(name string, stderr io.Writer, getenv func(string) string) *listing {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &listing{name: name, fs: fs, query: map[string]*string{}, asJSON: fs.Bool("json", false, "print the API's JSON answer"),
		client: clientFrom(fs, getenv)}
}

// filter adds a flag that becomes a query parameter (of the same name, unless param names it).
func (l *listing) filter(name, usage string, param ...string) {
	key := name
	if len(param) > 0 {
		key = param[0]
	}
	l.query[key] = l.fs.String(name, "", usage)
}

// get sends the listing's request and decodes the answer into out; it prints the error answer and returns
// false when there is one (or the JSON answer with -json, which is then all there is to print).
func (l *listing) get(path string, extra url.Values, out any, stdout, stderr io.Writer) (done bool, code int) {
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	for k, v := range l.query {
		if *v != "" {
			q.Set(k, *v)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	c := l.client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw json.RawMessage
	status, err := c.Do(ctx, http.MethodGet, path, nil, &raw)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", l.name, err)
		return true, 1
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	if apiError(stdout, l.name, status, body) {
		tokenHint(stderr, status, c.tokenSource)
		return true, 1
	}
	if *l.asJSON {
		printIndented(stdout, raw)
		return true, 0
	}
	if err := json.Unmarshal(raw, out); err != nil {
		fmt.Fprintf(stderr, "%s: the answer does not fit: %v\n", l.name, err)
		return true, 1
	}
	return false, 0
}

// printIndented prints a JSON document indented.
func printIndented(w io.Writer, raw json.RawMessage) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		fmt.Fprintln(w, string(raw))
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// printTable prints rows under a header as aligned columns.
func printTable(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// clip shortens text to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// when shows a time in the local zone, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// toolsCommand searches the registry's tools: brain tools [QUERY...] [-limit N] [-agent SLUG [-user ID]].
func toolsCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	l := newListing("brain tools", stderr, getenv)
	l.filter("limit", "the most matches of a query (1..50; default 5)")
	l.filter("agent", "only the tools this agent's skills enable")
	l.filter("user", "with -agent: for this user", "user_id")
	words, err := parseInterleaved(l.fs, args)
	if err != nil {
		return flagExit(err)
	}
	extra := url.Values{}
	query := strings.Join(words, " ")
	if query != "" {
		extra.Set("q", query)
	}
	var answer struct {
		Version string `json:"version"`
		Tools   []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Idempotency struct {
				Mode string `json:"mode"`
			} `json:"idempotency"`
			Permissions []string `json:"permissions"`
		} `json:"tools"`
		Matches []struct {
			Score float64 `json:"score"`
		} `json:"matches"`
	}
	if done, code := l.get("/brain/tools", extra, &answer, stdout, stderr); done {
		return code
	}
	var rows [][]string
	header := []string{"TOOL", "IDEMPOTENCY", "PERMISSIONS", "DESCRIPTION"}
	if query != "" {
		header = append([]string{"SCORE"}, header...)
	}
	for i, t := range answer.Tools {
		row := []string{t.Name, t.Idempotency.Mode, orDash(strings.Join(t.Permissions, ",")), clip(t.Description, 70)}
		if query != "" && i < len(answer.Matches) {
			row = append([]string{fmt.Sprintf("%.2f", answer.Matches[i].Score)}, row...)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no tool matches")
		return 0
	}
	printTable(stdout, header, rows)
	if query == "" {
		fmt.Fprintf(stdout, "\n%d tools (registry %s); brain tools WORDS finds the best for a request\n", len(rows), answer.Version)
	}
	return 0
}

// callsCommand lists calls, newest first: brain calls [-tool T] [-status S] [-caller C] [-agent A] [-device D]
// [-since 1h] [-limit N] [-cursor C].
func callsCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	l := newListing("brain calls", stderr, getenv)
	l.filter("tool", "only calls of this tool")
	l.filter("status", "only calls of this status: awaiting_approval, queued, running, succeeded, failed, not_configured")
	l.filter("caller", "only calls this caller made")
	l.filter("agent", "only calls made for this agent")
	l.filter("device", "only calls naming, or run on, this device")
	l.filter("since", "only calls since an RFC 3339 time or a duration back from now (1h)")
	l.filter("limit", "the most calls (1..1000; default 50)")
	l.filter("cursor", "where the page starts (printed after a full page)")
	if rest, err := parseInterleaved(l.fs, args); err != nil || len(rest) > 0 {
		fmt.Fprintln(stderr, "usage: brain calls [-tool T] [-status S] [-caller C] [-agent A] [-device D] [-since 1h] [-limit N] [-cursor C] [-json]")
		return flagExit(err)
	}
	var answer struct {
		Calls []struct {
			ID          string    `json:"id"`
			Tool        string    `json:"tool"`
			Status      string    `json:"status"`
			Agent       string    `json:"agent"`
			RequestedBy string    `json:"requested_by"`
			Device      string    `json:"ran_on_device"`
			CreatedAt   time.Time `json:"created_at"`
			ErrorCode   string    `json:"error_code"`
		} `json:"calls"`
		NextCursor string `json:"next_cursor"`
	}
	if done, code := l.get("/calls", nil, &answer, stdout, stderr); done {
		return code
	}
	if len(answer.Calls) == 0 {
		fmt.Fprintln(stdout, "no calls")
		return 0
	}
	rows := make([][]string, 0, len(answer.Calls))
	for _, c := range answer.Calls {
		status := c.Status
		if c.ErrorCode != "" {
			status += " (" + c.ErrorCode + ")"
		}
		rows = append(rows, []string{when(c.CreatedAt), status, c.Tool, c.ID, orDash(c.RequestedBy), orDash(c.Agent), orDash(c.Device)})
	}
	printTable(stdout, []string{"CREATED", "STATUS", "TOOL", "CALL", "CALLER", "AGENT", "DEVICE"}, rows)
	if answer.NextCursor != "" {
		fmt.Fprintf(stdout, "\nmore: add -cursor %s\n", answer.NextCursor)
	}
	return 0
}

// runsCommand lists runs, newest first, or shows one: brain runs [RUN_ID] [-status S] [-mode M] [-agent A]
// [-caller C] [-limit N].
func runsCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	l := newListing("brain runs", stderr, getenv)
	l.filter("status", "only runs of this status: created, queued, planning, planned, enqueued, waiting, completed, failed")
	l.filter("mode", "only runs of this mode: answer, plan, enqueue, enqueue_and_wait, chat")
	l.filter("agent", "only runs of this agent")
	l.filter("caller", "only runs this caller made")
	l.filter("limit", fmt.Sprintf("the most runs (1..%d; default 50)", postgres.RunListMax))
	rest, err := parseInterleaved(l.fs, args)
	if err != nil || len(rest) > 1 {
		fmt.Fprintln(stderr, "usage: brain runs [RUN_ID] [-status S] [-mode M] [-agent A] [-caller C] [-limit N] [-json]")
		return flagExit(err)
	}
	if len(rest) == 1 {
		var resp brain.RunResponse
		if done, code := l.get("/brain/runs/"+url.PathEscape(rest[0]), nil, &resp, stdout, stderr); done {
			return code
		}
		printHuman(stdout, &resp, http.StatusOK)
		return 0
	}
	var answer struct {
		Runs []postgres.RunSummary `json:"runs"`
	}
	if done, code := l.get("/brain/runs", nil, &answer, stdout, stderr); done {
		return code
	}
	if len(answer.Runs) == 0 {
		fmt.Fprintln(stdout, "no runs")
		return 0
	}
	rows := make([][]string, 0, len(answer.Runs))
	for _, r := range answer.Runs {
		rows = append(rows, []string{when(r.CreatedAt), r.Status, r.Mode, fmt.Sprint(r.Calls), r.ID.String(), orDash(r.RequestedBy), orDash(r.Agent), clip(r.Message, 50)})
	}
	printTable(stdout, []string{"CREATED", "STATUS", "MODE", "CALLS", "RUN", "CALLER", "AGENT", "MESSAGE"}, rows)
	return 0
}
