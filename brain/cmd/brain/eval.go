package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/packs/plans"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5/pgxpool"
)

const evalUsage = `usage: brain eval [-suite all|search|plan|chat] [-split all|tune|held_out] [-dir evals] [-thresholds FILE|none] [-json]
                  [-llm [MODEL]]... [-runs N] [-hold-models]
       brain eval -from-receipts [-since 7d] [-out DIR/drafts] [-dir evals]

Scores this build's tool selection against the suites in DIR (docs/evals.md): prints each suite's metrics per
split and every miss with what came instead, and exits 1 when a metric is below its floor in the thresholds
file (default DIR/thresholds.yaml). Needs DATABASE_URL (a migrated database: the search runs in PostgreSQL)
and reads the registry and the search's settings as brain serve does (GEM_REGISTRY,
GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE).

The chat suite talks to a model: -llm runs it against the configured LLM (GEM_LLM_*), with its model or
MODEL; -llm given again with another MODEL runs it against that one too, and prints them side by side;
-runs N holds each case N times (every_run: the share of cases right in all of them). Without -llm the chat
suite is skipped; -llm without the chat suite (another -suite, or no chat.yaml in DIR) is refused. No call is
made: each call's result is the case's. A model's report is compared, not held to the floors, unless
-hold-models is given.

With -from-receipts it writes the agents' stumbles since a time as draft cases for a person to confirm
instead (docs/evals.md).
`

// evalSuites are the suites brain eval knows, in the order it runs them.
var evalSuites = []string{evals.SearchSuite, evals.PlanSuite, evals.ChatSuite}

// evalCommand runs brain eval.
func evalCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "from-receipts" || !strings.HasPrefix(a, "-") {
			continue
		}
		// -from-receipts=false is brain eval itself (a value that is not a boolean fails in either's flags).
		if on, err := strconv.ParseBool(value); !hasValue || err != nil || on {
			return evalFromReceipts(args, getenv, stdout, stderr)
		}
	}
	flags := flag.NewFlagSet("eval", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() { fmt.Fprint(stderr, evalUsage) }
	suite := flags.String("suite", "all", "the suite to run: all, or one of "+strings.Join(evalSuites, ", "))
	split := flags.String("split", "all", "the split to score: all, tune or held_out")
	dir := flags.String("dir", "evals", "the folder holding the suites")
	thresholdsPath := flags.String("thresholds", "", "the floors to hold (default DIR/thresholds.yaml; none for none)")
	asJSON := flags.Bool("json", false, "print the reports as JSON")
	holdModels := flags.Bool("hold-models", false, "hold the chat floors for the models -llm talks to too (make test's scripted model); without it they are compared, not held")
	flags.Bool("from-receipts", false, "draft cases from the agents' stumbles instead (brain eval -from-receipts)")
	runs := flags.Int("runs", 1, "with -llm, how many times to hold each chat case (a model answers differently each time)")
	var models evalModels
	flags.Var(&models, "llm", "run the chat suite against the configured LLM, with MODEL (again: another model, side by side)")
	if err := flags.Parse(withBareLLM(args)); err != nil {
		return flagExit(err)
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "brain eval: unexpected argument %q\n%s", flags.Arg(0), evalUsage)
		return 2
	}
	var problems []string
	// All the suites means every suite DIR has a file for; a floor for a suite DIR lacks fails below.
	var suites []string
	for _, s := range evalSuites {
		if _, err := os.Stat(filepath.Join(*dir, s+".yaml")); err == nil {
			suites = append(suites, s)
		}
	}
	if *suite == "all" && len(suites) == 0 {
		var files []string
		for _, s := range evalSuites {
			files = append(files, s+".yaml")
		}
		fmt.Fprintf(stderr, "brain eval: no suite in %s (%s)\n", *dir, strings.Join(files, ", "))
		return 1
	}
	if *suite != "all" {
		if !slices.Contains(evalSuites, *suite) {
			problems = append(problems, fmt.Sprintf("-suite %q is not all or one of %s", *suite, strings.Join(evalSuites, ", ")))
		}
		suites = []string{*suite}
	}
	if *runs < 1 || *runs > 100 {
		problems = append(problems, fmt.Sprintf("-runs %d is not between 1 and 100", *runs))
	} else if *runs > 1 && len(models) == 0 {
		problems = append(problems, "-runs holds the chat suite's cases against a model: it needs -llm")
	}
	// Without the chat suite no model is asked: the command would pass as if one had been measured.
	switch {
	case len(models) == 0 || slices.Contains(suites, evals.ChatSuite):
	case *suite != "all":
		problems = append(problems, fmt.Sprintf("-llm holds the chat suite against a model: -suite %s has no chat suite", *suite))
	default:
		problems = append(problems, fmt.Sprintf("-llm holds the chat suite against a model: %s has no %s.yaml", *dir, evals.ChatSuite))
	}
	if *split != "all" && !slices.Contains(evals.Splits, *split) {
		problems = append(problems, fmt.Sprintf("-split %q is not all, tune or held_out", *split))
	}
	if len(problems) > 0 {
		fmt.Fprintln(stderr, "brain eval: "+strings.Join(problems, "; "))
		return 2
	}
	var thresholds evals.Thresholds
	switch path := *thresholdsPath; path {
	case "none":
	default:
		if path == "" {
			path = filepath.Join(*dir, "thresholds.yaml")
		}
		t, err := evals.LoadThresholds(path)
		if err != nil && !(*thresholdsPath == "" && errors.Is(err, fs.ErrNotExist)) {
			fmt.Fprintln(stderr, "brain eval:", err)
			return 1
		}
		thresholds = t
	}

	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 2
	}
	cfg = cfg.WithDefaults()
	if cfg.DatabaseURL == "" {
		fmt.Fprintln(stderr, "brain eval: DATABASE_URL is not set (the tool search runs in PostgreSQL; make eval starts a private one)")
		return 2
	}
	var lm *evalLLM
	if len(models) > 0 {
		if cfg.LLM.Model == "" {
			cfg.LLM.Model = models[0] // -llm MODEL names one: GEM_LLM_MODEL need not
		}
		client, err := llm.New(cfg.LLM, nil)
		if err != nil {
			fmt.Fprintln(stderr, "brain eval: -llm:", err)
			return 2
		}
		lm = &evalLLM{client: client, models: models, runs: *runs, chat: cfg.Chat}
	}
	timeout := 10 * time.Minute
	if lm != nil {
		timeout += time.Duration(len(lm.models)*lm.runs) * 30 * time.Minute // a model answers a few times per case
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	reports, err := loadAndRunEvals(ctx, cfg, *dir, suites, lm)
	if err != nil {
		fmt.Fprintln(stderr, "brain eval:", err)
		return 1
	}
	return printEvals(reports, *suite == "all", *split, thresholds, *holdModels, *asJSON, stdout, stderr)
}

// loadAndRunEvals loads the registry and opens the database as brain serve does, then runs the suites.
func loadAndRunEvals(ctx context.Context, cfg Config, dir string, suites []string, lm *evalLLM) ([]*evals.Report, error) {
	path, err := registry.Find(cfg.RegistryPath)
	if err != nil {
		return nil, err
	}
	reg, err := registry.Load(path)
	if err != nil {
		return nil, err
	}
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: cfg.DatabaseURL, ApplicationName: "gem-brain-eval", ConnectWait: cfg.DBConnectWait})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return runEvals(ctx, pool, reg, cfg, dir, suites, lm)
}

// runEvals runs the suites against this build: the search suite through the brain's own tool search, the plan
// suite through the rules planner, the chat suite through the agents' rehearsals with lm's models (skipped
// without).
func runEvals(ctx context.Context, pool *pgxpool.Pool, reg *registry.Registry, cfg Config, dir string, suites []string, lm *evalLLM) ([]*evals.Report, error) {
	known := func(name string) bool { _, ok := reg.Tool(name); return ok }
	var reports []*evals.Report
	for _, suite := range suites {
		switch suite {
		case evals.SearchSuite:
			cases, err := evals.LoadSearch(dir, known)
			if err != nil {
				return nil, err
			}
			if err := postgres.ToolCatalogLoad(ctx, pool, reg.Tools()); err != nil {
				return nil, err
			}
			r, err := evals.RunSearch(ctx, cases, func(ctx context.Context, q string, limit int) (evals.SearchResult, error) {
				hits, err := postgres.ToolSearch(ctx, pool, reg.Tools(), q, limit)
				res := evals.SearchResult{Fits: postgres.ToolsFit(hits, cfg.Chat.ToolSearchMinCoverage)}
				for _, h := range hits {
					res.Hits = append(res.Hits, evals.SearchHit{Tool: h.Tool.Name, Score: h.Score, Coverage: h.Coverage})
				}
				return res, err
			})
			if err != nil {
				return nil, err
			}
			reports = append(reports, r)
		case evals.PlanSuite:
			r, err := runPlanEval(ctx, reg, cfg, dir)
			if err != nil {
				return nil, err
			}
			reports = append(reports, r)
		case evals.ChatSuite:
			r, err := runChatEval(ctx, pool, reg, dir, lm)
			if err != nil {
				return nil, err
			}
			reports = append(reports, r...)
		}
	}
	return reports, nil
}

// runPlanEval runs the plan suite through the rules planner built as brain serve builds it, reading dates in
// the suite's zone (so the suite means the same wherever it runs).
func runPlanEval(ctx context.Context, reg *registry.Registry, cfg Config, dir string) (*evals.Report, error) {
	suite, err := evals.LoadPlan(dir, reg)
	if err != nil {
		return nil, err
	}
	rules, err := planner.NewRulesPlanner(reg, plans.Rules, suite.Location, cfg.PhoneRegion)
	if err != nil {
		return nil, err
	}
	return evals.RunPlan(ctx, suite, reg, func(ctx context.Context, message string, now time.Time) (*brain.Plan, error) {
		return rules.Plan(ctx, brain.PlanRequest{Message: message, Now: now})
	})
}

// printEvals prints the reports (only the split asked for) and holds them to the thresholds: 1 when one is
// below a floor.
func printEvals(reports []*evals.Report, all bool, split string, thresholds evals.Thresholds, holdModels, asJSON bool, stdout, stderr io.Writer) int {
	var failed []string
	if split != "all" {
		thresholds = thresholds.Split(split)
	}
	for _, r := range reports {
		if split != "all" {
			r.Splits = slices.DeleteFunc(r.Splits, func(s evals.SplitReport) bool { return s.Split != split })
			r.Misses = slices.DeleteFunc(r.Misses, func(m evals.Miss) bool { return m.Split != split })
		}
		if r.Model != "" && !holdModels {
			continue // a model's chat suite is compared with others, not held to the scripted run's floors
		}
		failed = append(failed, thresholds.Check(r)...)
	}
	// A misspelt suite would hold none of its floors, as a misspelt metric would hold none.
	for _, suite := range slices.Sorted(maps.Keys(thresholds)) {
		if !slices.Contains(evalSuites, suite) {
			failed = append(failed, fmt.Sprintf("the thresholds hold floors for a suite %q, not one of %s", suite, strings.Join(evalSuites, ", ")))
		}
	}
	if all {
		for _, suite := range evalSuites {
			if _, floors := thresholds[suite]; floors && !slices.ContainsFunc(reports, func(r *evals.Report) bool { return r.Suite == suite }) {
				failed = append(failed, fmt.Sprintf("%s: the thresholds hold floors for it, and there is no %s.yaml", suite, suite))
			}
		}
	}
	if failed == nil {
		failed = []string{}
	}
	if asJSON {
		printIndented(stdout, encoded(map[string]any{"reports": reports, "below_floor": failed}))
	} else {
		// The reports of one suite against several models print side by side.
		for i := 0; i < len(reports); {
			j := i + 1
			for j < len(reports) && reports[j].Suite == reports[i].Suite {
				j++
			}
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			evals.WriteSideBySide(stdout, reports[i:j])
			i = j
		}
	}
	if len(failed) > 0 {
		for _, f := range failed {
			fmt.Fprintln(stderr, "brain eval: below the floor:", f)
		}
		return 1
	}
	return 0
}

// evalLLM is the LLM brain eval -llm talks to: the configured provider's client, the models to ask ("" for the
// configured one), how many times each case is held, and the chat loop's configuration.
type evalLLM struct {
	client llm.Client
	models []string
	runs   int
	chat   chat.Config
}

// evalModels are the -llm flags' models, in order.
type evalModels []string

func (m *evalModels) String() string { return strings.Join(*m, ",") }

func (m *evalModels) Set(model string) error {
	if slices.Contains(*m, model) {
		return fmt.Errorf("model %q is given twice", model)
	}
	*m = append(*m, model)
	return nil
}

// withBareLLM lets -llm stand alone, for the configured model: brain eval takes no arguments, so a -llm
// followed by another flag, or by nothing, names no model.
func withBareLLM(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if (a == "-llm" || a == "--llm") && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			a += "="
		}
		out = append(out, a)
	}
	return out
}

// runChatEval runs the chat suite against each of lm's models, each case a rehearsal of its agent with no
// effects; without lm, the report says the suite was skipped.
func runChatEval(ctx context.Context, pool *pgxpool.Pool, reg *registry.Registry, dir string, lm *evalLLM) ([]*evals.Report, error) {
	cases, err := evals.LoadChat(dir, reg)
	if err != nil {
		return nil, err
	}
	if lm == nil {
		return []*evals.Report{{Suite: evals.ChatSuite, Splits: []evals.SplitReport{}, Misses: []evals.Miss{},
			Skipped: "no model to talk to: brain eval -llm runs the chat suite against the configured LLM (GEM_LLM_*)"}}, nil
	}
	// search_tools searches the catalog, as the brain's does.
	if err := postgres.ToolCatalogLoad(ctx, pool, reg.Tools()); err != nil {
		return nil, err
	}
	open := func(ctx context.Context, agent string) (*chat.Rehearsal, error) {
		return chat.NewRehearsal(ctx, lm.client, pool, reg, agent, lm.chat)
	}
	var reports []*evals.Report
	for _, model := range lm.models {
		r, err := evals.RunChat(ctx, cases, lm.client, model, lm.runs, open)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}
