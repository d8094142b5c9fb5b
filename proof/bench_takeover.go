package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	ospack "github.com/gemhq/gem/packs/os"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Takeover: how long a chat turn whose brain was SIGKILLed takes to end, finished by another brain from its
// journal (docs/durable-runs.md#owners-and-leases).
const (
	scTakeover    = "chat turn taken over after its brain's SIGKILL (lease 1 s), kill → turn's end"
	takeoverLease = time.Second
	// takeoverSamples per repeat: each starts a brain, so the scenario takes a few seconds a sample.
	takeoverSamples = 8
)

// takeoverScript is the bench's LLM: one task, then the reply, at once.
func takeoverScript(tag string, step int) (string, []scriptedCall, time.Duration) {
	if step > 0 {
		return "Done " + tag + ".", nil, 0
	}
	return "", []scriptedCall{{id: "call_task", tool: ospack.CreateTask, tag: tag,
		args: map[string]any{"title": "bench task " + tag, "domain": "business", "priority": nil, "description": nil, "due_at": nil, "context_ref": nil}}}, 0
}

// benchTakeover measures, per sample: brain A answers a turn whose first LLM answer made a task; A asks for
// the second answer (which the fake holds for A) and is SIGKILLed; brain B, running throughout, takes the
// turn over when A's lease expires and asks the fake, which answers at once. The sample is from the kill to
// the run's completed_at. Its floor is the lease plus up to the takeover loop's 1 s interval.
func benchTakeover(ctx context.Context, cfg benchConfig, res *benchResult, bins binaries, gemURL string, gemPool *pgxpool.Pool,
	progress func(string, ...any)) (err error) {
	progress("takeover: a chat turn's brain SIGKILLed while it waits for the LLM; another brain finishes the turn (lease %s)", takeoverLease)
	exec, err := startExecutor(bins, gemURL, "bench-takeover-executor", nil, cfg.Log, gemPool, true)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := exec.stop(40 * time.Second); err == nil {
			err = stopErr
		}
	}()
	llm, err := startScriptedLLM(randomHex(16))
	if err != nil {
		return err
	}
	defer llm.close()
	llm.script = takeoverScript
	fleet := &chatFleet{bins: bins, dbURL: gemURL, logw: cfg.Log, token: randomHex(24), llm: llm, client: &http.Client{Timeout: 60 * time.Second},
		env: []string{"GEM_BRAIN_RUN_LEASE=" + takeoverLease.String(), "GEM_LLM_API_KEY=" + llm.key, "GEM_LLM_MODEL=bench-fake"}}
	startA := func(base string, name string) (*brainProc, error) {
		env := append([]string{"GEM_LLM_PROVIDER=openai", "GEM_LLM_BASE_URL=" + base}, fleet.env...)
		return startBrainAs(bins, gemURL, name, fleet.token, env, cfg.Log)
	}
	b, err := startA(llm.url+"/v1", "brain-b")
	if err != nil {
		return err
	}
	defer func() { _ = b.stop(15 * time.Second) }()
	if err := fleet.api(ctx, b, http.MethodPost, "/skills", map[string]any{"slug": "bench-tasks", "name": "Tasks", "instructions": "Make tasks.",
		"tools": []string{ospack.CreateTask}}, nil); err != nil {
		return err
	}
	if err := fleet.api(ctx, b, http.MethodPost, "/agents", map[string]any{"slug": "bench-takeover", "name": "Bench takeover", "max_tool_iterations": 3}, nil); err != nil {
		return err
	}
	if err := fleet.api(ctx, b, http.MethodPut, "/agents/bench-takeover/skills/bench-tasks", nil, nil); err != nil {
		return err
	}

	result := latencyResult{Scenario: scTakeover, Load: loadSeq}
	for rep := range cfg.Repeats {
		var samples []time.Duration
		for i := range takeoverSamples {
			tag := fmt.Sprintf("[chaos s%02d t%02d]", rep, i)
			a, err := startA(llm.url+"/held/v1", "brain-a")
			if err != nil {
				return err
			}
			key := "bench-takeover-" + randomHex(8)
			body := map[string]any{"message": tag + " add a task", "user_id": "bench", "session_id": fmt.Sprintf("bench-takeover-%d-%d", rep, i)}
			header := map[string]string{"Idempotency-Key": key}
			lost := make(chan struct{})
			go func() {
				defer close(lost)
				_, _, _ = fleet.do(ctx, a.url, http.MethodPost, "/agents/bench-takeover/chat", body, header)
			}()
			select {
			case <-llm.held:
			case <-time.After(30 * time.Second):
				a.kill()
				return fmt.Errorf("brain A never asked for the second answer")
			case <-ctx.Done():
				a.kill()
				return ctx.Err()
			}
			a.kill()
			killed := time.Now()
			<-lost
			// The client's retry, to B, answers the turn B finished.
			status, data, err := fleet.do(ctx, b.url, http.MethodPost, "/agents/bench-takeover/chat", body, header)
			if err != nil {
				return err
			}
			var answer chatAnswer
			if status != http.StatusOK || json.Unmarshal(data, &answer) != nil || !answer.OK || answer.Reply != "Done "+tag+"." {
				return fmt.Errorf("the retry after the takeover answered %d: %.300s", status, data)
			}
			var ended time.Time
			if err := gemPool.QueryRow(ctx, `SELECT completed_at FROM brain_runs WHERE id = $1`, answer.RunID).Scan(&ended); err != nil {
				return err
			}
			samples = append(samples, ended.Sub(killed))
		}
		s := summarize(samples)
		progress("takeover, run %d: p50 %.0f ms, max %.0f ms (%d turns)", rep+1, ms(s.P50), ms(s.Max), s.N)
		result.Runs = append(result.Runs, s)
	}
	res.Latency = append(res.Latency, result)
	return nil
}
