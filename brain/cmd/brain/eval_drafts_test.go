package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestEvalFromReceipts: brain eval --from-receipts writes a draft case of the search suite for each run whose
// agent stumbled — its request, the tools its calls that succeeded named (none: []), where it came from — into
// a new file of evals/drafts, skipping a request already a case of a suite; run again, it drafts nothing twice.
func TestEvalFromReceipts(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	fake := llmfake.NewOpenAI(t, fakeKey,
		// A schema the model got wrong, then right.
		llmfake.Turn{Calls: []llmfake.Call{{ID: "bad", Name: "os__create_task", Arguments: `{"title": "Ring the supplier", "domain": "business", "priority": "asap", "description": null, "due_at": null, "context_ref": null}`}}},
		llmfake.Turn{Calls: []llmfake.Call{{ID: "good", Name: "os__create_task", Arguments: `{"title": "Ring the supplier", "domain": "business", "priority": "high", "description": null, "due_at": null, "context_ref": null}`}}},
		llmfake.Turn{Text: "Done."},
		// A tool that does not exist, and no call after.
		llmfake.Turn{Calls: []llmfake.Call{{ID: "unknown", Name: "weather__forecast", Arguments: `{"place": "Parramatta"}`}}},
		llmfake.Turn{Text: "I cannot tell the weather."},
		// A tool the agent may not use: the suite has this request already.
		llmfake.Turn{Calls: []llmfake.Call{{ID: "note", Name: "os__create_note", Arguments: `{"domain": "business", "title": "x", "content": "y"}`}}},
		llmfake.Turn{Text: "I cannot write notes."},
	)
	a := llmBrainOn(t, dbURL, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{} })
	agent := agentWithSkills(t, a, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})
	turn := func(message string) string {
		resp, status := chatWith(t, a, agent, message, "")
		require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
		return resp.RunID.String()
	}
	remind := turn("remind me to ring the supplier: it's urgent")
	weather := turn("whats the wether doing tmrw in parramatta")
	turn("jot down: the supplier's number changed")

	evals := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(evals, "search.yaml"), []byte("# the search suite\n- q: \"jot down:  the supplier's number CHANGED\"\n  tools: [os.create_note]\n  split: tune\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(evals, "thresholds.yaml"), []byte("search:\n  held_out:\n    recall_at_3: 0.95\n"), 0o644))
	drafts := filepath.Join(evals, "drafts")
	draft := func(args ...string) (int, string, string) {
		return fromReceipts(dbURL, append([]string{"--out", drafts, "--dir", evals}, args...)...)
	}

	code, stdout, stderr := draft("--since", "1h")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Wrote 2 draft case(s) to "+drafts)
	files, err := filepath.Glob(filepath.Join(drafts, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Regexp(t, `/\d{4}-\d\d-\d\dT\d{4}Z\.yaml$`, files[0])
	text, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Regexp(t, `^# Draft cases from stumbles since \d{4}-\d\d-\d\d: confirm the tools, set the split, move into evals/search.yaml.\n`, string(text))
	type from struct {
		Run, Agent, Reason, Tool, Property string
	}
	var cases []struct {
		Q     string
		Tools []string
		Split string
		From  from
	}
	require.NoError(t, yaml.Unmarshal(text, &cases), string(text))
	require.Len(t, cases, 2, string(text))
	require.Equal(t, "remind me to ring the supplier: it's urgent", cases[0].Q)
	require.Equal(t, []string{"os.create_task"}, cases[0].Tools, "the tool the run ended up calling")
	require.Equal(t, "tune", cases[0].Split)
	require.Equal(t, from{Run: remind, Agent: agent, Reason: "validation_error", Tool: "os.create_task", Property: "/priority"}, cases[0].From)
	require.Equal(t, "whats the wether doing tmrw in parramatta", cases[1].Q)
	require.Empty(t, cases[1].Tools, "no call: no tool fits")
	require.Equal(t, from{Run: weather, Agent: agent, Reason: "unknown_tool", Tool: "weather.forecast"}, cases[1].From)

	// Again: each is a draft already.
	code, stdout, stderr = draft("--since", "1h")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "No new stumbles since")
	files, err = filepath.Glob(filepath.Join(drafts, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 1)

	code, _, stderr = draft("--since", "a while")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "neither a duration")
}

// TestEvalFromReceiptsWhateverTheRequest: a request with quotes, newlines, "#", ": ", a YAML list of its own,
// control characters and unicode, and very long, is drafted as itself: once a person sets its tools, the
// draft loads as the search suite with the request unchanged, and the next run reads the draft back and
// drafts nothing twice.
func TestEvalFromReceiptsWhateverTheRequest(t *testing.T) {
	t.Parallel()
	request := "remind me: \"ring\" the # supplier\x7f at 9\u0080 \u0085 über 日本 'x' \ufffe\n- q: injected\n  tools: [os.create_note]\t" +
		strings.Repeat("and again ", 300) + "&anchor *alias {flow: [x]} %tag @at `tick` | > !"
	dbURL := stumbledOnce(t, request)

	suites := t.TempDir()
	drafts := filepath.Join(suites, "drafts")
	draft := func() (int, string, string) {
		return fromReceipts(dbURL, "--since", "1h", "--out", drafts, "--dir", suites)
	}
	code, stdout, stderr := draft()
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Wrote 1 draft case(s)")
	files, err := filepath.Glob(filepath.Join(drafts, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	text, err := os.ReadFile(files[0])
	require.NoError(t, err)

	// A person sets its tools and moves it into the suite.
	confirmed := strings.Replace(string(text), "tools: []", "tools: [os.create_task]", 1)
	require.NoError(t, os.WriteFile(filepath.Join(suites, "search.yaml"), []byte(confirmed), 0o644))
	cases, err := evals.LoadSearch(suites, func(string) bool { return true })
	require.NoError(t, err, confirmed)
	require.Len(t, cases, 1)
	require.Equal(t, strings.TrimSpace(request), cases[0].Q)
	require.Equal(t, []string{"os.create_task"}, cases[0].Tools)

	code, stdout, stderr = draft()
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "No new stumbles since")
}

// TestEvalFromReceiptsDraftsBesideTheSuites: without --out, the drafts go into the drafts folder of the
// suites' folder (--dir) wherever the command runs, and the drafts already there are not drafted again.
func TestEvalFromReceiptsDraftsBesideTheSuites(t *testing.T) {
	t.Parallel()
	dbURL := stumbledOnce(t, "what's the weather in Parramatta")

	suites := filepath.Join(t.TempDir(), "suites")
	require.NoError(t, os.Mkdir(suites, 0o755))
	draft := func() (int, string, string) { return fromReceipts(dbURL, "--since", "1h", "--dir", suites) }
	code, stdout, stderr := draft()
	require.Equal(t, 0, code, stderr)
	drafts := filepath.Join(suites, "drafts")
	require.Contains(t, stdout, "Wrote 1 draft case(s) to "+drafts)
	files, err := filepath.Glob(filepath.Join(drafts, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 1)

	code, stdout, stderr = draft()
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "No new stumbles since")
}

// TestEvalFromReceiptsAtOnce: runs of brain eval --from-receipts at the same time into one folder draft each
// stumble once between them, as runs one after another do.
func TestEvalFromReceiptsAtOnce(t *testing.T) {
	t.Parallel()
	dbURL := stumbledOnce(t, "what's the weather in Parramatta")

	suites := t.TempDir()
	const runs = 4
	codes := make(chan string, runs)
	for range runs {
		go func() {
			code, _, stderr := fromReceipts(dbURL, "--since", "1h", "--dir", suites)
			codes <- fmt.Sprint(code, " ", stderr)
		}()
	}
	for range runs {
		require.Equal(t, "0 ", <-codes)
	}
	files, err := filepath.Glob(filepath.Join(suites, "drafts", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one run drafts the stumble, the others find it drafted")
}

// stumbledOnce starts a brain on a new database whose agent is asked request and calls a tool that does not
// exist: a stumble to draft. It returns the database's URL.
func stumbledOnce(t *testing.T, request string) string {
	t.Helper()
	_, dbURL := sqltest.NewDB(t)
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "unknown", Name: "weather__forecast", Arguments: `{}`}}},
		llmfake.Turn{Text: "I cannot."},
	)
	a := llmBrainOn(t, dbURL, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{} })
	agent := agentWithSkills(t, a, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})
	resp, status := chatWith(t, a, agent, request, "")
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)
	return dbURL
}

// TestEvalFromReceiptsSinceLongAgo: a window reaching further back than PostgreSQL's dates reads every
// stumble, as the longest it can.
func TestEvalFromReceiptsSinceLongAgo(t *testing.T) {
	t.Parallel()
	dbURL := stumbledOnce(t, "what's the weather in Parramatta")
	for _, since := range []string{"100000d", "99999999999d", "9000000000000000000d"} {
		code, stdout, stderr := fromReceipts(dbURL, "--since", since, "--dir", t.TempDir())
		require.Equal(t, 0, code, "%s: %s", since, stderr)
		require.Contains(t, stdout, "Wrote 1 draft case(s)", since)
	}
}

// TestDraftsWriteFilesTheNextRunReads: drafts of long requests are split into files the next run reads back
// (each at most the size a file of evals may have); a request too long for a file of its own is left out.
func TestDraftsWriteFilesTheNextRunReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var cases []draftCase
	for i := range 12 {
		cases = append(cases, draftCase{q: fmt.Sprintf("request %d %s", i, strings.Repeat("long ", 200_000)), tools: []string{}})
	}
	cases = append(cases, draftCase{q: strings.Repeat("x", evals.FileMax), tools: []string{}})
	paths, written, err := draftsWrite(dir, time.Now(), time.Now(), cases)
	require.NoError(t, err)
	require.Equal(t, 12, written)
	require.Greater(t, len(paths), 1)
	for _, p := range paths {
		info, err := os.Stat(p)
		require.NoError(t, err)
		require.LessOrEqual(t, info.Size(), int64(evals.FileMax))
	}
	known, err := draftKnownRequests(dir)
	require.NoError(t, err)
	require.Len(t, known, 12)
}

// TestEvalFromReceiptsFolderNamesAsTheyAre: folders whose names hold a pattern's characters ([, ], *, ?) are
// read as named: the drafts there are read back, and nothing is drafted twice.
func TestEvalFromReceiptsFolderNamesAsTheyAre(t *testing.T) {
	t.Parallel()
	dbURL := stumbledOnce(t, "what's the weather in Parramatta")
	for _, name := range []string{"evals[1]", "evals[2", "evals*?"} {
		suites := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.Mkdir(suites, 0o755))
		for i, want := range []string{"Wrote 1 draft case(s)", "No new stumbles since"} {
			code, stdout, stderr := fromReceipts(dbURL, "--since", "1h", "--dir", suites)
			require.Equal(t, 0, code, "%s, run %d: %s", name, i+1, stderr)
			require.Contains(t, stdout, want, "%s, run %d", name, i+1)
		}
	}
}

// TestEvalFromReceiptsReadsARunOnce: a run that stumbled many times is read once, its first stumble with its
// request, however long the request and however many calls the model invented.
func TestEvalFromReceiptsReadsARunOnce(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	var invented []llmfake.Call
	for i := range 40 {
		invented = append(invented, llmfake.Call{ID: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("made_up__tool_%d", i), Arguments: `{}`})
	}
	fake := llmfake.NewOpenAI(t, fakeKey, llmfake.Turn{Calls: invented}, llmfake.Turn{Text: "I cannot."})
	a := llmBrainOn(t, dbURL, llmconfig.ProviderOpenAI, fake, func(c *Config) { c.Chat = chat.Config{} })
	agent := agentWithSkills(t, a, 4, map[string][]string{uniq("tasks"): {"os.create_task"}})
	resp, status := chatWith(t, a, agent, "sort out the supplier "+strings.Repeat("and the rest of this long email ", 60), "")
	require.Equal(t, http.StatusOK, status, "%+v", resp.Errors)

	suites := t.TempDir()
	for _, want := range []string{"Wrote 1 draft case(s)", "No new stumbles since"} {
		code, stdout, stderr := fromReceipts(dbURL, "--since", "1h", "--dir", suites)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, want)
	}
	stumbles, err := postgres.Stumbles(context.Background(), a.brain.Pool, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, stumbles, 1, "one row per run")
	require.Equal(t, "made_up.tool_0", stumbles[0].Tool, "its first stumble")
}

// fromReceipts runs brain eval -from-receipts with args against the database at dbURL.
func fromReceipts(dbURL string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	env := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	code = cli(append([]string{"eval", "--from-receipts"}, args...), env, &out, &errOut)
	return code, out.String(), errOut.String()
}
