package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/gemhq/gem/packs"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/business/handlers/twiliotest"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// chaosConfig configures one chaos run.
type chaosConfig struct {
	Calls           int           // calls made by the run
	Rate            float64       // calls inserted per second
	Executors       int           // executors running at once
	KillEvery       time.Duration // one executor is SIGKILLed and restarted this often
	RestartPG       bool          // restart PostgreSQL once, when 40% of the calls are in
	Brain           bool          // run the brain and make runs through it during the chaos
	PGDir           string        // the private cluster's folder
	SettleTime      time.Duration // how long calls may take to finish after the last insert
	Devices         int           // devices serving the lab tools (needs Brain); one is SIGKILLed and restarted each KillDeviceEvery
	KillDeviceEvery time.Duration
	ChatSessions    int           // sessions chatting with the scripted LLM through the LLM brains (0: none)
	ChatBrains      int           // LLM brains per provider (OpenAI, Anthropic)
	KillBrainEvery  time.Duration // one LLM brain is SIGKILLed and restarted this often
	Seed            uint64
	Log             io.Writer
}

// chaosReport is what the run found.
type chaosReport struct {
	Counts     [][2]string // printed in order
	Violations []string
}

func (r *chaosReport) count(name string, v any) {
	r.Counts = append(r.Counts, [2]string{name, fmt.Sprint(v)})
}

func (r *chaosReport) violation(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

func (r *chaosReport) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range r.Counts {
		fmt.Fprintf(tw, "  %s\t%s\n", c[0], c[1])
	}
	_ = tw.Flush()
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "\nchaos: no violations: every call has exactly one receipt, none lost or left running, keyed effects once per key, no outside effect twice;"+
			" every chat turn answered once, by its run, no journaled LLM step asked again nor its calls made twice")
		return
	}
	fmt.Fprintf(w, "\nchaos: %d VIOLATIONS\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintln(w, "  - "+v)
	}
}

// chaosCall is one call the run makes.
type chaosCall struct {
	id     uuid.UUID
	tool   string
	input  map[string]any
	device string // the device a call names, if any
}

// planChaos draws the calls: every idempotency mode, keyed calls sharing keys, a send (SMS: safe to retry
// by key, but never sent twice) and a none-mode tool with database effects (notes).
//
// With devices, 15% of the calls go to them: an agnostic read safe to repeat (lab.whoami), and an outside
// effect on a named device that must never happen twice (lab.effect); a third of them are held at the lab
// service for a while, so device kills land mid-call.
func planChaos(n int, seed uint64, devices int) []chaosCall {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	keys := max(1, n/10) // about 2.5 keyed calls per key
	calls := make([]chaosCall, n)
	for i := range calls {
		c := chaosCall{id: uuid.Must(uuid.NewV7())}
		if devices > 0 && rng.IntN(100) < 15 {
			c.input = map[string]any{"key": c.id.String()}
			if rng.IntN(3) == 0 {
				c.input["sleep_ms"] = 300
			}
			if rng.IntN(2) == 0 {
				c.tool = "lab.whoami"
			} else {
				c.tool, c.device = "lab.effect", chaosDeviceName(rng.IntN(devices))
			}
			calls[i] = c
			continue
		}
		switch p := rng.IntN(100); {
		case p < 35: // none, database effects
			c.tool, c.input = ospack.CreateNote, map[string]any{"domain": "business", "title": fmt.Sprintf("chaos note %d", i), "content": c.id.String()}
		case p < 45: // an outside effect that must never happen twice
			c.tool, c.input = businesspack.SendSMS, map[string]any{"to": fmt.Sprintf("+6141%07d", i), "message": "chaos " + c.id.String(),
				"context_ref": map[string]any{"type": "personal", "id": c.id.String()}}
		case p < 70: // keyed, keys repeated across calls
			k := rng.IntN(keys)
			c.tool, c.input = businesspack.CreateLead, map[string]any{"name": fmt.Sprintf("Chaos Lead %d", k), "phone": fmt.Sprintf("0499%06d", k), "suburb": "Newtown", "source": "other"}
		case p < 85: // safe-retry
			c.tool, c.input = ospack.HealthCheck, map[string]any{}
		default:
			c.tool, c.input = ospack.SearchNotes, map[string]any{"query": "chaos", "limit": 5}
		}
		calls[i] = c
	}
	return calls
}

func chaosDeviceName(i int) string { return fmt.Sprintf("device-%c", 'a'+i) }

// defaultChaosDir is a folder the PostgreSQL server user can reach, one per repository.
func defaultChaosDir(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(os.TempDir(), "gem-chaos-postgres-"+hex.EncodeToString(sum[:4]))
}

// chaos runs the whole experiment and returns its report; an error means the run itself could not be
// made (no database, a binary missing), not that GEM broke a promise.
func chaos(ctx context.Context, cfg chaosConfig, bins binaries, out io.Writer) (*chaosReport, error) {
	progress := func(format string, args ...any) { fmt.Fprintf(out, "chaos: "+format+"\n", args...) }
	started := time.Now()
	c, err := startCluster(bins.root, cfg.PGDir)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	dbURL, err := c.freshDatabase(ctx, "gem_chaos")
	if err != nil {
		return nil, err
	}
	pool, err := gemsql.NewPool(ctx, gemsql.PoolConfig{URL: dbURL, ApplicationName: "gem-chaos", MaxConns: 20})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := gemsql.Migrate(ctx, pool, nil, packs.Lines()...); err != nil {
		return nil, err
	}
	twilio := twiliotest.New()
	defer twilio.Close()

	// Executors restart within a second after a kill, so calls of a dead executor are taken up quickly.
	execEnv := append(twilio.Env(), "GEM_EXECUTOR_RESCUE_INTERVAL=500ms", "GEM_DB_CONNECT_WAIT=2m")
	rep := &chaosReport{}
	var (
		mu          sync.Mutex
		slots       = make([]*proc, cfg.Executors)
		generation  int
		kills       int
		selfExits   []string
		pgDown      time.Time // when the restart began
		pgRestarted time.Time
	)
	startSlot := func(i int, wait bool) error {
		generation++
		p, err := startExecutor(bins, dbURL, fmt.Sprintf("chaos-%c-%d", 'a'+i, generation), execEnv, cfg.Log, pool, wait)
		if err != nil {
			return err
		}
		slots[i] = p
		return nil
	}
	// restartExited notes and replaces executors that exited without being killed (mu held).
	restartExited := func() {
		for i, p := range slots {
			if p.exited() {
				selfExits = append(selfExits, fmt.Sprintf("%s: %v: %s", p.name, p.err, lastLine(p.tail())))
				_ = startSlot(i, false)
			}
		}
	}
	for i := range slots {
		if err := startSlot(i, true); err != nil {
			return nil, err
		}
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range slots {
			if p != nil && !p.exited() {
				p.kill()
			}
		}
	}()

	var brain *brainProc
	if cfg.Brain {
		if brain, err = startBrain(bins, dbURL, append([]string{"GEM_DB_CONNECT_WAIT=2m"}, deviceRigEnv...), cfg.Log); err != nil {
			return nil, err
		}
		defer func() { _ = brain.stop(15 * time.Second) }()
	}
	var fleet *chaosFleet
	if cfg.Devices > 0 {
		if brain == nil {
			return nil, fmt.Errorf("devices need the brain (their hub)")
		}
		if fleet, err = startFleet(ctx, bins, dbURL, pool, brain, cfg); err != nil {
			return nil, err
		}
		defer fleet.close()
	}

	var chat *chatFleet
	if cfg.ChatSessions > 0 {
		if chat, err = startChatFleet(ctx, bins, dbURL, cfg.ChatBrains, cfg.Log); err != nil {
			return nil, err
		}
		defer chat.close()
		progress("%d chat sessions through %d brains per provider (openai, anthropic), one SIGKILLed every %s",
			cfg.ChatSessions, cfg.ChatBrains, cfg.KillBrainEvery)
	}

	calls := planChaos(cfg.Calls, cfg.Seed, cfg.Devices)
	progress("%d calls at %.0f/s, %d executors, one SIGKILLed every %s, PostgreSQL restart: %v, brain: %v, devices: %d (one SIGKILLed every %s)",
		cfg.Calls, cfg.Rate, cfg.Executors, cfg.KillEvery, cfg.RestartPG, cfg.Brain, cfg.Devices, cfg.KillDeviceEvery)

	runCtx, stopChaos := context.WithCancel(ctx)
	var background sync.WaitGroup

	// The killer: SIGKILL one executor (taking turns) and start a new one in its place; an executor that
	// exited by itself is restarted too, and noted.
	background.Add(1)
	go func() {
		defer background.Done()
		tick := time.NewTicker(cfg.KillEvery)
		defer tick.Stop()
		next := 0
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			restartExited()
			slots[next].kill()
			kills++
			if err := startSlot(next, false); err != nil {
				progress("restarting an executor: %v", err)
			}
			next = (next + 1) % len(slots)
			mu.Unlock()
		}
	}()

	if fleet != nil {
		background.Add(1)
		go func() {
			defer background.Done()
			fleet.killLoop(runCtx, cfg.KillDeviceEvery, progress)
		}()
	}

	// The chat sessions send turns while the calls are made; each then finishes the turn it is in, for up to
	// two minutes after the last call.
	chatDone, endChat := context.WithCancel(ctx)
	defer endChat()
	if chat != nil {
		background.Add(2)
		go func() {
			defer background.Done()
			chat.killLoop(runCtx, cfg.KillBrainEvery, progress)
		}()
		go func() {
			defer background.Done()
			chat.converse(runCtx, chatDone, cfg.ChatSessions, cfg.Seed)
		}()
	}

	// The brain: runs one after another through the chaos; runs refused while PostgreSQL is down are
	// expected, but runs must succeed again after it is back.
	var brainOK, brainFailed, brainOKAfterRestart atomic.Int64
	if brain != nil {
		background.Add(1)
		go func() {
			defer background.Done()
			client := &http.Client{Timeout: 20 * time.Second}
			for i := 0; runCtx.Err() == nil; i++ {
				_, err := brainRun(runCtx, client, brain, fmt.Sprintf("note that chaos brain run %d", i))
				switch {
				case err == nil:
					brainOK.Add(1)
					mu.Lock()
					if !pgRestarted.IsZero() {
						brainOKAfterRestart.Add(1)
					}
					mu.Unlock()
				case runCtx.Err() == nil:
					brainFailed.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}

	// The inserters: plain SQL inserts on a fixed schedule. A failed insert (the server restarting) is
	// retried with the same call id; ON CONFLICT makes the retry harmless if the first try committed.
	work := make(chan chaosCall)
	var inserters sync.WaitGroup
	var inserted, insertRetries atomic.Int64
	for range 16 { // enough that a slow insert does not hold the schedule back
		inserters.Add(1)
		go func() {
			defer inserters.Done()
			for call := range work {
				for {
					var device any
					if call.device != "" {
						device = call.device
					}
					_, err := pool.Exec(ctx, `INSERT INTO core_tool_calls (id, tool_name, input, device) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
						call.id, call.tool, call.input, device)
					if err == nil {
						inserted.Add(1)
						break
					}
					if ctx.Err() != nil {
						return
					}
					insertRetries.Add(1)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	period := time.Duration(float64(time.Second) / cfg.Rate)
	begin := time.Now()
	restartAt := cfg.Calls * 4 / 10
	for i, call := range calls {
		if cfg.RestartPG && i == restartAt {
			// In the background: calls keep coming while the server is down.
			background.Add(1)
			go func() {
				defer background.Done()
				progress("restarting PostgreSQL after %d calls", i)
				mu.Lock()
				pgDown = time.Now()
				mu.Unlock()
				if err := c.restart(); err != nil {
					progress("restarting PostgreSQL: %v", err)
					return
				}
				mu.Lock()
				pgRestarted = time.Now()
				mu.Unlock()
				progress("PostgreSQL is back")
			}()
		}
		time.Sleep(time.Until(begin.Add(time.Duration(i) * period)))
		select {
		case work <- call:
		case <-ctx.Done():
			stopChaos()
			return nil, ctx.Err()
		}
		if (i+1)%max(1, cfg.Calls/10) == 0 {
			mu.Lock()
			k := kills
			mu.Unlock()
			progress("%d calls made, %d kills so far", i+1, k)
		}
	}
	close(work)
	inserters.Wait()
	stopChaos()
	stopChat := time.AfterFunc(2*time.Minute, endChat)
	background.Wait()
	stopChat.Stop()
	progress("all calls made in %s; waiting for every receipt (up to %s)", time.Since(begin).Round(time.Millisecond), cfg.SettleTime)

	// Let the surviving executors finish; restart any that died.
	mu.Lock()
	restartExited()
	mu.Unlock()
	deadline := time.Now().Add(cfg.SettleTime)
	// allReceipted waits until every call has a receipt, or until the deadline.
	allReceipted := func() (bool, error) {
		for {
			var open int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls c
				WHERE NOT EXISTS (SELECT 1 FROM core_tool_receipts r WHERE r.call_id = c.id)`).Scan(&open); err != nil {
				return false, err
			}
			if open == 0 {
				return true, nil
			}
			if time.Now().After(deadline) {
				return false, nil
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	if chat != nil {
		// Turns of brains killed last are finished by the others; their calls need receipts too.
		if err := awaitTurns(ctx, pool, deadline); err != nil {
			return nil, err
		}
	}
	settled, err := allReceipted()
	if err != nil {
		return nil, err
	}
	// The brain must serve runs again after the restart. Runs in flight during it may wait a while (their
	// calls' retries back off), so this is checked once the calls have settled, with runs of its own.
	if brain != nil && !pgRestarted.IsZero() && brainOKAfterRestart.Load() == 0 {
		client := &http.Client{Timeout: 45 * time.Second}
		for try := range 3 {
			_, err := brainRun(ctx, client, brain, fmt.Sprintf("note that chaos brain check %d", try))
			if err == nil {
				brainOK.Add(1)
				brainOKAfterRestart.Add(1)
				break
			}
			progress("brain run after the chaos: %v", err)
		}
		// A failed run's call needs its receipt too.
		if settled, err = allReceipted(); err != nil {
			return nil, err
		}
	}
	mu.Lock()
	for _, p := range slots {
		if err := p.stop(40 * time.Second); err != nil && !p.exited() {
			rep.violation("executor did not stop: %v", err)
		}
	}
	mu.Unlock()
	if brain != nil {
		if err := brain.stop(15 * time.Second); err != nil {
			rep.violation("brain did not stop cleanly: %v", err)
		}
	}

	rep.count("calls made by the run", cfg.Calls)
	rep.count("executors SIGKILLed", kills)
	restarts := 0
	if !pgRestarted.IsZero() {
		restarts = 1
	} else if cfg.RestartPG {
		rep.violation("PostgreSQL did not restart")
	}
	rep.count("PostgreSQL restarts", restarts)
	rep.count("inserts retried (server down)", insertRetries.Load())
	if brain != nil {
		rep.count("brain runs ok / refused", fmt.Sprintf("%d / %d", brainOK.Load(), brainFailed.Load()))
		if restarts > 0 && brainOKAfterRestart.Load() == 0 {
			rep.violation("the brain never completed a run after PostgreSQL restarted")
		}
	}
	if !settled {
		rep.violation("calls still without a receipt %s after the last insert", cfg.SettleTime)
	}
	for _, s := range selfExits {
		rep.violation("an executor exited without being killed: %s", s)
	}
	if err := checkChaos(ctx, pool, calls, smsByBody(twilio.Messages()), rep); err != nil {
		return nil, err
	}
	if fleet != nil {
		if err := fleet.check(ctx, pool, rep); err != nil {
			return nil, err
		}
	}
	if chat != nil {
		chat.close()
		mu.Lock()
		chat.pgDown, chat.pgBack = pgDown, pgRestarted
		mu.Unlock()
		if err := chat.check(ctx, pool, rep); err != nil {
			return nil, err
		}
	}
	rep.count("duration", time.Since(started).Round(time.Second))
	return rep, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// checkChaos verifies the promises on what the database and the fake SMS provider hold.
func checkChaos(ctx context.Context, pool *pgxpool.Pool, calls []chaosCall, sms map[string]int, rep *chaosReport) error {
	q := func(sql string, args ...any) (int, error) {
		var n int
		err := pool.QueryRow(ctx, sql, args...).Scan(&n)
		return n, err
	}
	ids := make([]uuid.UUID, len(calls))
	for i, c := range calls {
		ids[i] = c.id
	}
	checks := []struct {
		name, sql string
		args      []any
		want      func(int) bool
		violation string
	}{
		{"calls in the database", `SELECT count(*) FROM core_tool_calls`, nil, nil, ""},
		{"receipts", `SELECT count(*) FROM core_tool_receipts`, nil, nil, ""},
		{"calls of the run missing (lost inserts)", `SELECT count(*) FROM unnest($1::uuid[]) AS u(id) WHERE NOT EXISTS (SELECT 1 FROM core_tool_calls c WHERE c.id = u.id)`,
			[]any{ids}, zero, "calls of the run are not in core_tool_calls"},
		{"calls without a receipt", `SELECT count(*) FROM core_tool_calls c WHERE NOT EXISTS (SELECT 1 FROM core_tool_receipts r WHERE r.call_id = c.id)`,
			nil, zero, "calls have no receipt"},
		{"calls with more than one receipt", `SELECT count(*) FROM (SELECT call_id FROM core_tool_receipts GROUP BY call_id HAVING count(*) > 1) x`,
			nil, zero, "calls have more than one receipt"},
		{"calls left queued or running", `SELECT count(*) FROM core_tool_calls WHERE status IN ('queued', 'running')`,
			nil, zero, "calls are still queued or running"},
		{"calls whose status differs from their receipt", `SELECT count(*) FROM core_tool_calls c JOIN core_tool_receipts r ON r.call_id = c.id WHERE c.status <> r.status`,
			nil, zero, "calls' status differs from their receipt's"},
		{"River jobs not finalized", `SELECT count(*) FROM river_job WHERE kind = 'gem.tool_call' AND finalized_at IS NULL`,
			nil, zero, "River jobs are left unfinished"},
		{"receipts succeeded", `SELECT count(*) FROM core_tool_receipts WHERE status = 'succeeded'`, nil, nil, ""},
		// Device calls (the lab tools) are counted, and their failures judged, in the devices' section.
		{"receipts failed: outcome_unknown (killed during an SMS send)", `SELECT count(*) FROM core_tool_receipts WHERE error_code = 'outcome_unknown' AND tool_name NOT LIKE 'lab.%'`, nil, nil, ""},
		{"receipts failed: other codes", `SELECT count(*) FROM core_tool_receipts WHERE status <> 'succeeded' AND error_code <> 'outcome_unknown' AND tool_name NOT LIKE 'lab.%'`, nil, nil, ""},
		{"calls taken up again after a kill (attempt > 1)", `SELECT count(*) FROM core_tool_receipts WHERE attempt > 1`, nil, nil, ""},
		{"keyed idempotency hits", `SELECT count(*) FROM core_tool_receipts WHERE idempotency_hit`, nil, nil, ""},
		{"keys with more than one lead", `SELECT count(*) FROM (SELECT phone_digits FROM leads GROUP BY phone_digits HAVING count(*) > 1) x`,
			nil, zero, "a keyed call's effect happened twice"},
		{"keys whose succeeded calls name different leads", `SELECT count(*) FROM (SELECT c.input->>'phone' FROM core_tool_calls c JOIN core_tool_receipts r ON r.call_id = c.id
			WHERE c.tool_name = 'leads.create' AND r.status = 'succeeded' GROUP BY 1 HAVING count(DISTINCT r.result->>'lead_id') > 1) x`,
			nil, zero, "calls with one key answered with different leads"},
		{"notes written more than once for a call", `SELECT count(*) FROM (SELECT created_by_call FROM os_notes WHERE created_by_call IS NOT NULL GROUP BY 1 HAVING count(*) > 1) x`,
			nil, zero, "a none-mode call wrote its note twice"},
		{"succeeded note calls without exactly one note", `SELECT count(*) FROM core_tool_receipts r WHERE r.tool_name = 'os.create_note' AND r.status = 'succeeded'
			AND (SELECT count(*) FROM os_notes n WHERE n.created_by_call = r.call_id) <> 1`, nil, zero, "a succeeded note call has no note or several"},
		{"failed note calls that left a note", `SELECT count(*) FROM core_tool_receipts r WHERE r.tool_name = 'os.create_note' AND r.status <> 'succeeded'
			AND EXISTS (SELECT 1 FROM os_notes n WHERE n.created_by_call = r.call_id)`, nil, zero, "a failed call's effects were not rolled back"},
	}
	for _, c := range checks {
		n, err := q(c.sql, c.args...)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		rep.count(c.name, n)
		if c.want != nil && !c.want(n) {
			rep.violation("%d %s", n, c.violation)
		}
	}

	// SMS: each call's message went out at most once; a succeeded call's exactly once; a call
	// that failed with a definite error (not outcome_unknown) sent nothing.
	rows, err := pool.Query(ctx, `SELECT c.input->>'message', r.status, coalesce(r.error_code, '') FROM core_tool_calls c
		JOIN core_tool_receipts r ON r.call_id = c.id WHERE c.tool_name = 'comms.send_sms'`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var smsCalls, twice, missing, sentOnFailure int
	for rows.Next() {
		var body, status, code string
		if err := rows.Scan(&body, &status, &code); err != nil {
			return err
		}
		smsCalls++
		n := sms[body]
		switch {
		case n > 1:
			twice++
		case status == "succeeded" && n != 1:
			missing++
		case status != "succeeded" && code != "outcome_unknown" && n > 0:
			sentOnFailure++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	total := 0
	for _, n := range sms {
		total += n
	}
	rep.count("SMS calls / messages accepted by the provider", fmt.Sprintf("%d / %d", smsCalls, total))
	rep.count("SMS sent more than once for a call", twice)
	if twice > 0 {
		rep.violation("%d none-mode SMS calls sent their message more than once", twice)
	}
	if missing > 0 {
		rep.violation("%d succeeded SMS calls have no message at the provider", missing)
	}
	if sentOnFailure > 0 {
		rep.violation("%d SMS calls failed with a definite error although their message went out", sentOnFailure)
	}

	codes, err := pool.Query(ctx, `SELECT error_code, count(*) FROM core_tool_receipts WHERE error_code IS NOT NULL GROUP BY 1 ORDER BY 2 DESC`)
	if err != nil {
		return err
	}
	defer codes.Close()
	var parts []string
	for codes.Next() {
		var code string
		var n int
		if err := codes.Scan(&code, &n); err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%s %d", code, n))
	}
	sort.Strings(parts)
	if len(parts) > 0 {
		rep.count("error codes", strings.Join(parts, ", "))
	}
	return codes.Err()
}

func zero(n int) bool { return n == 0 }

// smsByBody counts the messages the SMS provider accepted, by body.
func smsByBody(messages []url.Values) map[string]int {
	out := make(map[string]int, len(messages))
	for _, m := range messages {
		out[m.Get("Body")]++
	}
	return out
}

func chaosCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := chaosConfig{}
	fs.IntVar(&cfg.Calls, "calls", 10000, "calls to make")
	fs.Float64Var(&cfg.Rate, "rate", 150, "calls made per second")
	fs.IntVar(&cfg.Executors, "executors", 2, "executors running at once")
	fs.DurationVar(&cfg.KillEvery, "kill-every", 2*time.Second, "SIGKILL an executor this often")
	fs.BoolVar(&cfg.RestartPG, "restart-postgres", true, "restart PostgreSQL once during the run")
	fs.BoolVar(&cfg.Brain, "brain", true, "run the brain and make runs through it during the chaos")
	fs.StringVar(&cfg.PGDir, "pg-dir", "", "the private cluster's folder (default: one per repository under $TMPDIR)")
	fs.DurationVar(&cfg.SettleTime, "settle", 3*time.Minute, "how long calls may take to finish after the last one is made")
	fs.IntVar(&cfg.Devices, "devices", 2, "devices serving tools through the brain (0: none)")
	fs.DurationVar(&cfg.KillDeviceEvery, "kill-device-every", 1500*time.Millisecond, "SIGKILL a device (and restart it) this often")
	fs.IntVar(&cfg.ChatSessions, "chat-sessions", 24, "sessions chatting with the scripted LLM through the LLM brains (0: none)")
	fs.IntVar(&cfg.ChatBrains, "chat-brains", 2, "LLM brains per provider (OpenAI, Anthropic)")
	fs.DurationVar(&cfg.KillBrainEvery, "kill-brain-every", 3*time.Second, "SIGKILL an LLM brain (and restart it) this often")
	seed := fs.Uint64("seed", 0, "random seed (default: from the clock)")
	bin := fs.String("bin", "", "folder with the executor and brain binaries (default: build them)")
	verbose := fs.Bool("v", false, "show the children's logs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.Calls < 1 || cfg.Rate <= 0 || cfg.Executors < 1 || cfg.KillEvery <= 0 || (cfg.ChatSessions > 0 && (cfg.ChatBrains < 1 || cfg.KillBrainEvery <= 0)) {
		fmt.Fprintln(stderr, "chaos: -calls, -rate, -executors, -kill-every (and with chat sessions -chat-brains and -kill-brain-every) must be positive")
		return 2
	}
	cfg.Seed = *seed
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if *verbose {
		cfg.Log = stderr
	}
	bins, cleanup, err := findBinaries(*bin)
	defer cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 1
	}
	if cfg.PGDir == "" {
		cfg.PGDir = defaultChaosDir(bins.root)
	}
	fmt.Fprintf(stdout, "chaos: seed %d, private PostgreSQL in %s\n", cfg.Seed, cfg.PGDir)
	rep, err := chaos(ctx, cfg, bins, stdout)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "chaos: interrupted")
		} else {
			fmt.Fprintln(stderr, "chaos:", err)
		}
		return 1
	}
	rep.print(stdout)
	if len(rep.Violations) > 0 {
		return 1
	}
	return 0
}
