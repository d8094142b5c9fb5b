// Command proof measures GEM against bare River and proves its reliability promise.
//
//	proof bench [flags]    latency, throughput and memory against the bare River floor (make bench)
//	proof chaos [flags]    10,000 calls while executors are killed and PostgreSQL restarts (make chaos)
//
// Both talk only to PostgreSQL on loopback: bench to DATABASE_URL's server or the repository's private
// cluster, chaos always to a private cluster of its own (it restarts it). docs/benchmarks.md explains
// what is measured and how to read the output.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// roleEnv selects a hidden role when this program is started by itself (the bare River worker).
const roleEnv = "GEM_PROOF_ROLE"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if os.Getenv(roleEnv) == "river-worker" {
		return runRiverWorker(stdout, stderr)
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: proof bench|chaos [flags] (proof <command> -h for the flags)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "bench":
		return benchCommand(ctx, args[1:], stdout, stderr)
	case "chaos":
		return chaosCommand(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "unknown command %q (bench, chaos)\n", args[0])
		return 2
	}
}

func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := benchConfig{}
	fs.IntVar(&cfg.Calls, "calls", 2000, "sequential calls per run")
	fs.IntVar(&cfg.OpenCalls, "open-calls", 2000, "open-loop calls per run")
	fs.Float64Var(&cfg.Rate, "rate", 200, "open-loop calls per second")
	fs.IntVar(&cfg.Drain, "drain", 20000, "queued calls per throughput run")
	fs.IntVar(&cfg.Repeats, "repeats", 3, "runs of each measurement")
	fs.IntVar(&cfg.Warmup, "warmup", 200, "unmeasured calls before each latency scenario")
	fs.IntVar(&cfg.History, "history", historyDefault, "calls and receipts seeded as history for the history scenario (0: leave it out)")
	fs.IntVar(&cfg.Backlog, "backlog", backlogDefault, "calls queued behind the history for its drain")
	fs.DurationVar(&cfg.Timeout, "timeout", 90*time.Minute, "give up after")
	bin := fs.String("bin", "", "folder with the executor and brain binaries (default: build them)")
	jsonPath := fs.String("json", "", "also write the results as JSON to this file")
	verbose := fs.Bool("v", false, "show the children's logs")
	fs.StringVar(&cfg.Baseline, "baseline", "", "a repository folder with another build in its bin/ (make build): its /brain/run and one-call chat turn are measured alternating with this build's, in the same run")
	only := fs.String("only", "", "comma-separated scenarios to run: river, gem, brain, mcp, code, rest, limits, telemetry, takeover, drain, scale, history (default: all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *only != "" {
		cfg.Only = map[string]bool{}
		for _, s := range strings.Split(*only, ",") {
			switch s = strings.TrimSpace(s); s {
			case "river", "gem", "brain", "mcp", "code", "rest", "limits", "telemetry", "takeover", "drain", "scale", "history":
				cfg.Only[s] = true
			default:
				fmt.Fprintf(stderr, "bench: unknown scenario %q in -only (river, gem, brain, mcp, code, rest, limits, telemetry, takeover, drain, scale, history)\n", s)
				return 2
			}
		}
	}
	if cfg.History < 0 || cfg.Backlog < 1 {
		fmt.Fprintln(stderr, "bench: -history must not be negative and -backlog must be positive")
		return 2
	}
	if cfg.Calls < 1 || cfg.OpenCalls < 1 || cfg.Drain < 1 || cfg.Repeats < 1 || cfg.Rate <= 0 || cfg.Warmup < 0 {
		fmt.Fprintln(stderr, "bench: -calls, -open-calls, -drain, -repeats and -rate must be positive")
		return 2
	}
	if *verbose {
		cfg.Log = stderr
	}
	if cfg.Baseline != "" {
		if _, err := baselineBinaries(cfg.Baseline, ""); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
	}
	bins, cleanup, err := findBinaries(*bin)
	defer cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	c, err := benchCluster(bins.root)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	res, err := bench(ctx, cfg, c, bins)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	printBench(stdout, cfg, res)
	if *jsonPath != "" {
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonPath, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	return 0
}
