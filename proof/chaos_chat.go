package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The brain's part of the chaos run (docs/benchmarks.md#what-make-chaos-proves): a fleet of brains per LLM
// provider, each fleet behind its own round-robin "balancer", sessions chatting with the scripted LLM, one
// brain SIGKILLed (and started again) every few seconds.
//
// A brain has one LLM configuration, and a turn taken over is asked of the taker's LLM; brains take over the
// turns of their own provider first (postgres.RunsTakeOver), so each provider has two brains: a killed
// brain's turns are finished by its twin or by itself restarted, on the wire format they began on.

var chatProviders = []string{"openai", "anthropic"}

// chatFleet is the LLM brains, the scripted LLM and the sessions' record.
type chatFleet struct {
	bins   binaries
	dbURL  string
	env    []string
	logw   io.Writer
	token  string
	llm    *scriptedLLM
	client *http.Client

	mu     sync.Mutex
	brains map[string][]*brainProc // provider → its brains
	rr     map[string]int
	kills  int

	turns                              []*chatTurn
	pgDown, pgBack                     time.Time    // PostgreSQL's restart, when the run made one
	connErrors, serverErrors, accepted atomic.Int64 // answers that sent the client back to retry with its key
	busy                               atomic.Int64 // 409 answers (a session answering another turn: never expected)
}

// chatTurn is one message a session sent, and every answer it got.
type chatTurn struct {
	tag, session, key, provider string
	runIDs                      []uuid.UUID // the run named by every answer that named one, in order
	final                       *chatAnswer // the 200 answer that ended it
	attempts                    int
	unexpected                  string    // an answer a client cannot retry (a 4xx other than 409)
	sent, ended                 time.Time // its first try, and its last answer
}

type chatAnswer struct {
	OK       bool      `json:"ok"`
	Reply    string    `json:"reply"`
	RunID    uuid.UUID `json:"run_id"`
	Status   string    `json:"status"`
	Repeated bool      `json:"repeated"`
}

func startChatFleet(ctx context.Context, bins binaries, dbURL string, perProvider int, logw io.Writer) (*chatFleet, error) {
	llm, err := startScriptedLLM(randomHex(16))
	if err != nil {
		return nil, err
	}
	f := &chatFleet{bins: bins, dbURL: dbURL, logw: logw, token: randomHex(24), llm: llm, brains: map[string][]*brainProc{}, rr: map[string]int{},
		client: &http.Client{Timeout: 90 * time.Second},
		// A short lease so turns of a killed brain are taken over within about 2 s.
		env: []string{"GEM_DB_CONNECT_WAIT=2m", "GEM_BRAIN_RUN_LEASE=1500ms", "GEM_LLM_API_KEY=" + llm.key, "GEM_LLM_MODEL=chaos-model", "GEM_LLM_TIMEOUT=10s"}}
	for _, provider := range chatProviders {
		for i := range perProvider {
			b, err := f.start(provider, i)
			if err != nil {
				f.close()
				return nil, err
			}
			f.brains[provider] = append(f.brains[provider], b)
		}
	}
	// Two agents with the same tools; a session's agent says which fleet it talks to.
	b := f.brains[chatProviders[0]][0]
	if err := f.api(ctx, b, http.MethodPost, "/skills", map[string]any{"slug": "chaos-records", "name": "Records", "description": "Tasks, notes and leads.",
		"instructions": "Record what the customer asks for.", "tools": []string{ospack.CreateTask, ospack.CreateNote, businesspack.CreateLead}}, nil); err != nil {
		f.close()
		return nil, err
	}
	for _, provider := range chatProviders {
		agent := "chaos-" + provider
		if err := f.api(ctx, b, http.MethodPost, "/agents", map[string]any{"slug": agent, "name": "Chaos " + provider,
			"instructions": "You help a roofing business.", "max_tool_iterations": 5}, nil); err != nil {
			f.close()
			return nil, err
		}
		if err := f.api(ctx, b, http.MethodPut, "/agents/"+agent+"/skills/chaos-records", nil, nil); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

func (f *chatFleet) start(provider string, i int) (*brainProc, error) {
	env := append([]string{"GEM_LLM_PROVIDER=" + provider, "GEM_LLM_BASE_URL=" + f.llm.baseURL(provider)}, f.env...)
	return startBrainAs(f.bins, f.dbURL, fmt.Sprintf("brain-%s-%d", provider, i), f.token, env, f.logw)
}

// api makes a request that must succeed (setting the agents up).
func (f *chatFleet) api(ctx context.Context, b *brainProc, method, path string, body, out any) error {
	status, data, err := f.do(ctx, b.url, method, path, body, nil)
	if err != nil {
		return err
	}
	if status >= 300 {
		return fmt.Errorf("%s %s: %d %.300s", method, path, status, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (f *chatFleet) do(ctx context.Context, base, method, path string, body any, header map[string]string) (int, []byte, error) {
	a, err := apiRequest(ctx, f.client, base, f.token, method, path, body, header)
	return a.status, a.body, err
}

// apiAnswer is an answer of a brain's API.
type apiAnswer struct {
	status int
	header http.Header
	body   []byte
}

// apiRequest sends a JSON request (body, when not nil) with a bearer token and header to a brain at base.
func apiRequest(ctx context.Context, client *http.Client, base, token, method, path string, body any, header map[string]string) (apiAnswer, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return apiAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return apiAnswer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return apiAnswer{status: resp.StatusCode, header: resp.Header, body: data}, err
}

// next is the provider's balancer: its brains in turn, a dead one included (the client then retries).
func (f *chatFleet) next(provider string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	bs := f.brains[provider]
	f.rr[provider]++
	return bs[f.rr[provider]%len(bs)].url
}

// killLoop SIGKILLs one LLM brain every period, in turn over both fleets, and starts it again at once.
func (f *chatFleet) killLoop(ctx context.Context, every time.Duration, progress func(string, ...any)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		provider := chatProviders[n%len(chatProviders)]
		f.mu.Lock()
		i := (n / len(chatProviders)) % len(f.brains[provider])
		victim := f.brains[provider][i]
		f.kills++
		f.mu.Unlock()
		victim.kill()
		b, err := f.start(provider, i)
		if err != nil {
			progress("restarting a brain: %v", err)
			continue
		}
		f.mu.Lock()
		f.brains[provider][i] = b
		f.mu.Unlock()
	}
}

// converse runs sessions that chat until ctx ends, each finishing the turn it is in (until done ends).
func (f *chatFleet) converse(ctx, done context.Context, sessions int, seed uint64) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(s)))
			provider := chatProviders[s%len(chatProviders)]
			session := fmt.Sprintf("chaos-s%02d", s)
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
			for t := 1; ctx.Err() == nil; t++ {
				turn := &chatTurn{tag: fmt.Sprintf("[chaos s%02d t%02d]", s, t), session: session, provider: provider,
					key: fmt.Sprintf("chaos-%d-s%02d-t%02d", seed, s, t)}
				mu.Lock()
				f.turns = append(f.turns, turn)
				mu.Unlock()
				f.send(done, turn)
				if turn.final == nil {
					return // the session cannot go on without its turn's answer
				}
				time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

// send sends one turn's message until it is answered, as a client behind a balancer does: the same key on
// every try, to the next brain, after a connection error, a 5xx or a 202 (its turn still running).
func (f *chatFleet) send(ctx context.Context, turn *chatTurn) {
	body := map[string]any{"message": turn.tag + " new customer Dana Fox on 0455 123 987 wants an inspection; record it and book a call back",
		"user_id": "chaos-user", "session_id": turn.session}
	header := map[string]string{"Idempotency-Key": turn.key}
	turn.sent = time.Now()
	defer func() { turn.ended = time.Now() }()
	for ctx.Err() == nil {
		turn.attempts++
		status, data, err := f.do(ctx, f.next(turn.provider), http.MethodPost, "/agents/chaos-"+turn.provider+"/chat", body, header)
		if err != nil {
			f.connErrors.Add(1)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var named struct {
			RunID uuid.UUID `json:"run_id"`
		}
		if json.Unmarshal(data, &named) == nil && named.RunID != uuid.Nil {
			turn.runIDs = append(turn.runIDs, named.RunID)
		}
		switch {
		case status == http.StatusOK:
			var a chatAnswer
			if err := json.Unmarshal(data, &a); err != nil {
				turn.unexpected = fmt.Sprintf("200 that is not a chat answer: %.200s", data)
				return
			}
			turn.final = &a
			return
		case status == http.StatusAccepted:
			f.accepted.Add(1)
		case status >= 500:
			f.serverErrors.Add(1)
		case status == http.StatusConflict:
			f.busy.Add(1)
		default:
			turn.unexpected = fmt.Sprintf("%d %.300s", status, data)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// close stops the brains (SIGTERM: they hand their turns over) and the scripted LLM.
func (f *chatFleet) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, bs := range f.brains {
		for _, b := range bs {
			if !b.exited() {
				_ = b.stop(15 * time.Second)
			}
		}
	}
	f.llm.close()
}

// awaitTurns waits until no chat run is planning, waiting or queued, or until deadline.
func awaitTurns(ctx context.Context, pool *pgxpool.Pool, deadline time.Time) error {
	for {
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM brain_runs WHERE mode = 'chat' AND status IN ('planning', 'waiting', 'queued')`).Scan(&open); err != nil {
			return err
		}
		if open == 0 || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// chatRun is a chat run as the database holds it.
type chatRun struct {
	id                 uuid.UUID
	tag, status, key   string
	response           bool
	calls, finals      int
	journaled          []time.Time // the run's assistant messages (one per LLM answer journaled), in order
	answers, providers int         // brain_turns rows with a response; providers those rows name
	requests           int         // brain_turns rows (every LLM request the run recorded)
	journalBytes       int         // what the journal records (journalPayload)
	rowBytes           int         // the whole rows, as JSON
}

// journalPayload is what a run's journal records, in bytes: each LLM request's summary and answer
// (brain_turns.request and response) and each message (agent_messages.content and tool_calls); the rows'
// ids, times and column names are left out (rowBytes counts them).
const journalPayload = `coalesce((SELECT sum(octet_length(t.request::text) + coalesce(octet_length(t.response::text), 0)) FROM brain_turns t WHERE t.run_id = r.id), 0) +
	coalesce((SELECT sum(octet_length(m.content) + coalesce(octet_length(m.tool_calls::text), 0)) FROM agent_messages m WHERE m.run_id = r.id), 0)`

// journalStepAllowance is the journal's fixed cost per LLM request beyond 2x the transcript: its summary
// (the functions offered, the message count, the system prompt's size) and its usage.
const journalStepAllowance = 512

// check verifies the promises of the brain's part on what the database, the fake and the clients hold.
func (f *chatFleet) check(ctx context.Context, pool *pgxpool.Pool, rep *chaosReport) error {
	runs := map[uuid.UUID]*chatRun{}
	byTag := map[string][]*chatRun{}
	rows, err := pool.Query(ctx, `SELECT r.id, substring(r.message from '\[chaos s\d+ t\d+\]'), r.status, coalesce(r.idempotency_key, ''), r.response IS NOT NULL,
			(SELECT count(*) FROM core_tool_calls c WHERE c.run_id = r.id),
			(SELECT count(*) FROM agent_messages m WHERE m.run_id = r.id AND m.role = 'assistant' AND coalesce(jsonb_array_length(m.tool_calls), 0) = 0),
			coalesce((SELECT array_agg(m.created_at ORDER BY m.id) FROM agent_messages m WHERE m.run_id = r.id AND m.role = 'assistant'), '{}'),
			(SELECT count(*) FROM brain_turns t WHERE t.run_id = r.id AND t.response IS NOT NULL),
			(SELECT count(DISTINCT t.provider) FROM brain_turns t WHERE t.run_id = r.id),
			(SELECT count(*) FROM brain_turns t WHERE t.run_id = r.id),
			`+journalPayload+`,
			coalesce((SELECT sum(octet_length(row_to_json(t)::text)) FROM brain_turns t WHERE t.run_id = r.id), 0) +
			coalesce((SELECT sum(octet_length(row_to_json(m)::text)) FROM agent_messages m WHERE m.run_id = r.id), 0)
		FROM brain_runs r WHERE r.mode = 'chat'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		r := &chatRun{}
		var tag *string
		if err := rows.Scan(&r.id, &tag, &r.status, &r.key, &r.response, &r.calls, &r.finals, &r.journaled, &r.answers, &r.providers, &r.requests, &r.journalBytes, &r.rowBytes); err != nil {
			rows.Close()
			return err
		}
		if tag != nil {
			r.tag = *tag
		}
		runs[r.id] = r
		byTag[r.tag] = append(byTag[r.tag], r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}

	// givenUp: a run that failed before making anything gives its key up; the client's retry makes another.
	givenUp := func(r *chatRun) bool { return r.status == "failed" && r.calls == 0 && len(r.journaled) == 0 }
	var answered, unanswered, unexpected, retried, okTurns, failedTurns, twoRuns, otherRun, notFinal, badReply, open, noResponse, twoFinals, twoProviders int
	var repeatedAnswers, givenUpRuns, duringOutage, duringOutageOK int
	for _, t := range f.turns {
		if t.attempts > 1 {
			retried++
		}
		if !f.pgBack.IsZero() && t.sent.Before(f.pgBack) && t.ended.After(f.pgDown) {
			duringOutage++
			if t.final != nil && t.final.OK {
				duringOutageOK++
			}
		}
		if t.unexpected != "" {
			unexpected++
			rep.violation("turn %s got an answer a client cannot retry: %s", t.tag, t.unexpected)
			continue
		}
		if t.final == nil {
			unanswered++
			continue
		}
		answered++
		if t.final.Repeated {
			repeatedAnswers++
		}
		final := runs[t.final.RunID]
		if final == nil || final.tag != t.tag {
			otherRun++
			rep.violation("turn %s was answered with run %s, not a run of its message", t.tag, t.final.RunID)
			continue
		}
		for _, id := range t.runIDs {
			if r := runs[id]; id != final.id && (r == nil || !givenUp(r)) {
				otherRun++
				rep.violation("key %s was answered with runs %s and %s", t.key, id, final.id)
				break
			}
		}
		for _, r := range byTag[t.tag] {
			if r.id != final.id {
				if !givenUp(r) {
					twoRuns++
					rep.violation("turn %s made two runs that did work: %s (%s) and %s", t.tag, r.id, r.status, final.id)
				} else {
					givenUpRuns++
				}
			}
		}
		switch {
		case final.status == "completed" && t.final.OK:
			okTurns++
			if !strings.Contains(t.final.Reply, "Done "+t.tag) {
				badReply++
				rep.violation("turn %s answered %q, not the LLM's reply", t.tag, t.final.Reply)
			}
		case final.status == "completed" || final.status == "failed":
			failedTurns++
		default:
			notFinal++
		}
	}
	for _, r := range runs {
		switch {
		case r.status != "completed" && r.status != "failed":
			open++
			rep.violation("chat run %s (%s) is still %s", r.id, r.tag, r.status)
		case !r.response:
			noResponse++
			rep.violation("chat run %s (%s) ended %s without a response", r.id, r.tag, r.status)
		}
		if (r.status == "completed" && r.finals != 1) || r.finals > 1 {
			twoFinals++
			rep.violation("chat run %s (%s, %s) has %d final assistant messages", r.id, r.tag, r.status, r.finals)
		}
		if r.providers > 1 {
			twoProviders++
			rep.violation("chat run %s (%s) was asked of two providers", r.id, r.tag)
		}
	}
	if unanswered > 0 {
		rep.violation("%d chat turns were never answered 200", unanswered)
	}
	if f.busy.Load() > 0 {
		rep.violation("%d chat messages were refused 409 (busy) although their session sends one at a time", f.busy.Load())
	}

	// LLM steps: a step may be asked again only while its answer is not journaled (the run's assistant
	// message of the step, written with its brain_turns row, in one transaction whose time is before any
	// later request could see it).
	f.llm.mu.Lock()
	steps := make([]*scriptedStep, 0, len(f.llm.steps))
	for _, s := range f.llm.steps {
		steps = append(steps, s)
	}
	transcripts := map[string]*scriptedTurn{}
	for k, v := range f.llm.turns {
		transcripts[k] = v
	}
	badRequests := append([]string(nil), f.llm.bad...)
	f.llm.mu.Unlock()
	for _, b := range badRequests {
		rep.violation("the scripted LLM got a request it could not read: %s", b)
	}
	finalRun := map[string]*chatRun{}
	for _, t := range f.turns {
		if t.final != nil {
			finalRun[t.tag] = runs[t.final.RunID]
		}
	}
	var requests, askedAgain, askedAfterJournal, journaledSteps, unjournaledAnswers int
	scripted := map[string]string{} // call tag → tool, of the calls of journaled answers
	for _, s := range steps {
		requests += len(s.asked)
		if len(s.asked) > 1 {
			askedAgain++
		}
		r := finalRun[s.tag]
		if r == nil || s.step >= len(r.journaled) {
			continue
		}
		journaledSteps++
		at := r.journaled[s.step]
		for _, t := range s.asked {
			if t.After(at) {
				askedAfterJournal++
				rep.violation("LLM step %s/%d was asked again at %s, after its answer was journaled at %s (run %s)",
					s.tag, s.step, t.Format("15:04:05.000"), at.Format("15:04:05.000"), r.id)
				break
			}
		}
		for _, c := range s.calls {
			scripted[c.tag] = c.tool
		}
	}
	for _, r := range finalRun {
		if r != nil && r.answers < len(r.journaled) {
			unjournaledAnswers++
			rep.violation("chat run %s has %d assistant messages but %d LLM answers in brain_turns", r.id, len(r.journaled), r.answers)
		}
	}

	// Calls: each call of a journaled answer enqueued exactly once; each none-mode effect once per call.
	enqueued := map[string]int{}
	crow, err := pool.Query(ctx, `SELECT substring(c.input::text from '\[chaos s\d+ t\d+\] s\d+ c\d+'), count(*) FROM core_tool_calls c
		WHERE c.run_id IS NOT NULL AND c.input::text LIKE '%[chaos s%' GROUP BY 1`)
	if err != nil {
		return err
	}
	for crow.Next() {
		var tag string
		var n int
		if err := crow.Scan(&tag, &n); err != nil {
			crow.Close()
			return err
		}
		enqueued[tag] = n
	}
	crow.Close()
	if err := crow.Err(); err != nil {
		return err
	}
	var twice, missing, stray int
	for tag, n := range enqueued {
		if n > 1 {
			twice++
			rep.violation("the LLM's call %s was enqueued %d times", tag, n)
		}
		if _, ok := scripted[tag]; !ok {
			stray++
			rep.violation("call %s was enqueued but its answer is not journaled", tag)
		}
	}
	for tag := range scripted {
		if enqueued[tag] == 0 {
			missing++
			rep.violation("the journaled call %s was never enqueued", tag)
		}
	}
	q := func(sql string) (int, error) {
		var n int
		err := pool.QueryRow(ctx, sql).Scan(&n)
		return n, err
	}
	effects := []struct {
		name, sql, violation string
	}{
		{"chat tasks made twice for one requested call", `SELECT count(*) FROM (SELECT title FROM os_tasks WHERE title LIKE 'chaos task [chaos%' GROUP BY 1 HAVING count(*) > 1) x`,
			"a none-mode task call of the LLM made its task twice"},
		{"chat notes written twice for one requested call", `SELECT count(*) FROM (SELECT substring(content from '\[chaos s\d+ t\d+\] s\d+ c\d+') FROM os_notes
			WHERE content LIKE 'chaos note [chaos%' GROUP BY 1 HAVING count(*) > 1) x`, "a none-mode note call of the LLM wrote its note twice"},
		{"succeeded chat calls without their effect", `SELECT count(*) FROM core_tool_calls c JOIN core_tool_receipts r ON r.call_id = c.id
			WHERE c.run_id IS NOT NULL AND r.status = 'succeeded' AND (
			  (c.tool_name = 'os.create_task' AND NOT EXISTS (SELECT 1 FROM os_tasks t WHERE t.title = c.input->>'title')) OR
			  (c.tool_name = 'os.create_note' AND NOT EXISTS (SELECT 1 FROM os_notes n WHERE n.created_by_call = c.id)))`,
			"a succeeded chat call has no task or note"},
	}
	effectCounts := make([]int, len(effects))
	for i, e := range effects {
		n, err := q(e.sql)
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		effectCounts[i] = n
		if n > 0 {
			rep.violation("%d: %s", n, e.violation)
		}
	}

	// Sessions: each run's messages contiguous.
	interleaved := 0
	mrows, err := pool.Query(ctx, `SELECT session_id, run_id FROM agent_messages WHERE session_id LIKE 'chaos-s%' ORDER BY session_id, id`)
	if err != nil {
		return err
	}
	var session string
	var last uuid.UUID
	seen := map[uuid.UUID]bool{}
	for mrows.Next() {
		var s string
		var run *uuid.UUID
		if err := mrows.Scan(&s, &run); err != nil {
			mrows.Close()
			return err
		}
		if s != session {
			session, last, seen = s, uuid.Nil, map[uuid.UUID]bool{}
		}
		if run == nil || *run == last {
			continue
		}
		if seen[*run] {
			interleaved++
			rep.violation("session %s interleaves run %s with another turn", s, *run)
		}
		seen[*run], last = true, *run
	}
	mrows.Close()
	if err := mrows.Err(); err != nil {
		return err
	}

	// The journal against the transcript: in all, at most 2x; each run at most 2x plus a fixed allowance per
	// LLM request (which a journal that wrote the conversation again at each step would exceed as the
	// session's history grows).
	var journal, rowsBytes, transcript int
	worst := 0.0
	over := 0
	for tag, r := range finalRun {
		t := transcripts[tag]
		if r == nil || t == nil || t.transcript == 0 {
			continue
		}
		journal += r.journalBytes
		rowsBytes += r.rowBytes
		transcript += t.transcript
		worst = max(worst, float64(r.journalBytes)/float64(t.transcript))
		if r.journalBytes > 2*t.transcript+journalStepAllowance*r.requests {
			over++
			rep.violation("chat run %s (%s) journals %d bytes for a transcript of %d in %d LLM requests (more than 2x + %d per request)",
				r.id, tag, r.journalBytes, t.transcript, r.requests, journalStepAllowance)
		}
	}
	if transcript > 0 && journal > 2*transcript {
		rep.violation("the chat runs' journals are %.2fx their transcripts (more than 2x)", float64(journal)/float64(transcript))
	}

	f.mu.Lock()
	kills := f.kills
	f.mu.Unlock()
	perProvider := map[string]int{}
	for _, t := range f.turns {
		if t.final != nil {
			perProvider[t.provider]++
		}
	}
	provs := make([]string, 0, len(perProvider))
	for p, n := range perProvider {
		provs = append(provs, fmt.Sprintf("%s %d", p, n))
	}
	sort.Strings(provs)
	rep.count("chat: brains SIGKILLed (and restarted)", kills)
	rep.count("chat: turns sent / answered 200 (by provider)", fmt.Sprintf("%d / %d (%s)", len(f.turns), answered, strings.Join(provs, ", ")))
	rep.count("chat: turns answered ok / failed", fmt.Sprintf("%d / %d", okTurns, failedTurns))
	rep.count("chat: turns retried by their client (same key)", retried)
	if !f.pgBack.IsZero() {
		rep.count("chat: turns in flight while PostgreSQL was down / answered ok", fmt.Sprintf("%d / %d", duringOutage, duringOutageOK))
	}
	rep.count("chat: client retries after a connection error / 5xx / 202", fmt.Sprintf("%d / %d / %d", f.connErrors.Load(), f.serverErrors.Load(), f.accepted.Load()))
	rep.count("chat: answers marked repeated", repeatedAnswers)
	rep.count("chat: runs that gave their key up (failed before any work)", givenUpRuns)
	rep.count("chat: turns unanswered / unexpected answers / 409 busy", fmt.Sprintf("%d / %d / %d", unanswered, unexpected, f.busy.Load()))
	rep.count("chat: turns with another run's answer / two working runs", fmt.Sprintf("%d / %d", otherRun, twoRuns))
	rep.count("chat: runs left open / without a response / with two finals", fmt.Sprintf("%d / %d / %d", open+notFinal, noResponse, twoFinals))
	rep.count("chat: replies not the LLM's / runs asked of two providers", fmt.Sprintf("%d / %d", badReply, twoProviders))
	rep.count("chat: LLM requests / steps / steps journaled", fmt.Sprintf("%d / %d / %d", requests, len(steps), journaledSteps))
	rep.count("chat: steps asked again (answer lost with its brain)", askedAgain)
	rep.count("chat: steps asked after their answer was journaled", askedAfterJournal)
	rep.count("chat: runs with fewer brain_turns answers than messages", unjournaledAnswers)
	rep.count("chat: LLM calls journaled / enqueued twice / never / not journaled", fmt.Sprintf("%d / %d / %d / %d", len(scripted), twice, missing, stray))
	rep.count("chat: tasks twice / notes twice / succeeded without effect", fmt.Sprintf("%d / %d / %d", effectCounts[0], effectCounts[1], effectCounts[2]))
	rep.count("chat: sessions interleaving turns", interleaved)
	if transcript > 0 {
		rep.count("chat: journal / transcript bytes (all runs; worst run)", fmt.Sprintf("%d / %d = %.2fx; %.2fx", journal, transcript, float64(journal)/float64(transcript), worst))
		rep.count("chat: journal rows as JSON / transcript", fmt.Sprintf("%d = %.2fx", rowsBytes, float64(rowsBytes)/float64(transcript)))
		rep.count("chat: runs over 2x transcript + 512 B per LLM request", over)
	}
	return nil
}
