package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A baseline is another build of GEM (-baseline: a repository folder whose bin/ holds its executor and brain,
// as make build leaves them), measured in the same run as this one: its /brain/run and its one-call chat
// turn alternate call by call with this build's, each stack on a database of its own in the same PostgreSQL,
// so both see the same machine at the same moments. Their ratio is what a change costs, without the drift
// between two runs (which on a small machine is larger than the costs being measured).

// Scenario names of the baseline build.
const (
	scBrainBaseline  = scBrain + ", the baseline build"
	scAgent1Baseline = scAgent1 + ", the baseline build"
)

// baselineStack is the baseline build running: its executor and brain on their own database.
type baselineStack struct {
	pool     *pgxpool.Pool
	executor *proc
	brain    *brainProc
}

// baselineBinaries are the programs of the baseline build in repository folder dir.
func baselineBinaries(dir string, self string) (binaries, error) {
	b := binaries{root: dir, executor: filepath.Join(dir, "bin", "executor"), brain: filepath.Join(dir, "bin", "brain"), self: self}
	for _, f := range []string{b.executor, b.brain, filepath.Join(dir, "tools.registry.json")} {
		if _, err := os.Stat(f); err != nil {
			return b, fmt.Errorf("the baseline %s has no %s (run make build in it): %w", dir, f, err)
		}
	}
	return b, nil
}

// startBaseline migrates dbURL with the baseline's own migrations and starts its executor and brain, the
// brain asking the fake LLM at llmURL as this build's does.
func startBaseline(ctx context.Context, cfg benchConfig, bins binaries, dbURL, llmURL string) (_ *baselineStack, err error) {
	base, err := baselineBinaries(cfg.Baseline, bins.self)
	if err != nil {
		return nil, err
	}
	migrate := exec.CommandContext(ctx, base.executor, "migrate")
	migrate.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+filepath.Join(base.root, "tools.registry.json"), "GEM_LOG_LEVEL=warn")
	if out, err := migrate.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("error migrating the baseline's database: %w: %s", err, out)
	}
	s := &baselineStack{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if s.pool, err = gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-bench-baseline", MaxConns: 4}); err != nil {
		return nil, err
	}
	if s.executor, err = startExecutor(base, dbURL, "bench-baseline-executor", nil, cfg.Log, s.pool, true); err != nil {
		return nil, err
	}
	if s.brain, err = startBrainAs(base, dbURL, "baseline-brain", randomHex(24), []string{"GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL=" + llmURL,
		"GEM_LLM_API_KEY=" + fakeLLMKey, "GEM_LLM_MODEL=bench-fake", "GEM_EXECUTOR_METRICS_ADDR=off", "GEM_BRAIN_METRICS_ADDR=off"}, cfg.Log); err != nil {
		return nil, err
	}
	return s, nil
}

// rig is the baseline's brain as the agent-loop scenarios drive it, its bench agent set up.
func (s *baselineStack) rig(ctx context.Context) (*deviceRig, error) {
	rig := &deviceRig{brain: s.brain, client: &http.Client{Timeout: 60 * time.Second}}
	return rig, setUpAgents(ctx, rig)
}

// settle vacuums the baseline's tables, as the bench does this build's between measurements.
func (s *baselineStack) settle(ctx context.Context) error { return vacuum(s.pool, gemTables...)(ctx) }

func (s *baselineStack) stop() {
	if s.brain != nil {
		_ = s.brain.stop(15 * time.Second)
	}
	if s.executor != nil {
		_ = s.executor.stop(15 * time.Second)
	}
	if s.pool != nil {
		s.pool.Close()
	}
}

// both settles this build's tables and, with a baseline, the baseline's.
func both(settle func(context.Context) error, base *baselineStack) func(context.Context) error {
	if base == nil {
		return settle
	}
	return func(ctx context.Context) error {
		if err := settle(ctx); err != nil {
			return err
		}
		return base.settle(ctx)
	}
}

// baselineTargets compares this build with the baseline, when the run measured one.
func baselineTargets(r *benchResult) []targetResult {
	brain, brainBase := r.latency(scBrain, loadSeq), r.latency(scBrainBaseline, loadSeq)
	chat, chatBase := r.latency(scAgent1, loadSeq), r.latency(scAgent1Baseline, loadSeq)
	if brainBase.N == 0 && chatBase.N == 0 {
		return nil
	}
	ratio := func(a, b summary) float64 { return float64(a.P50) / float64(b.P50) }
	return []targetResult{
		{"brain one-call run p50 / the baseline build's, alternating", fmt.Sprintf("%.2f× (%.2f vs %.2f ms)", ratio(brain, brainBase), ms(brain.P50), ms(brainBase.P50)),
			"≤ 1.05×", ratio(brain, brainBase) <= 1.05, brain.N > 0 && brainBase.N > 0},
		{"chat turn, 1 tool call, p50 / the baseline build's, alternating", fmt.Sprintf("%.2f× (%.2f vs %.2f ms)", ratio(chat, chatBase), ms(chat.P50), ms(chatBase.P50)),
			"≤ 1.1×", ratio(chat, chatBase) <= 1.1, chat.N > 0 && chatBase.N > 0},
	}
}
