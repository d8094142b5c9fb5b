package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// A chat turn survives its brain (docs/durable-runs.md): each LLM answer is journaled with its calls before
// the brain acts on it, the brain working on a run holds a lease it renews, and a brain that finds a lease
// expired takes the run over and finishes it from the journal.

// LeaseDefault is how long a run stays its brain's without a renewal (GEM_BRAIN_RUN_LEASE).
const LeaseDefault = 5 * time.Second

// takeoverInterval is how often a brain looks for runs whose lease expired; takeoverBatch how many it takes
// at once.
const (
	takeoverInterval = time.Second
	takeoverBatch    = 8
)

// NewOwner makes a brain id: the host, the process and a random part.
func NewOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
}

// leases are the runs a brain is working on, each with its claim.
type leases struct {
	mu     sync.Mutex
	claims map[uuid.UUID]string
}

func (l *leases) add(id uuid.UUID, claim string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims[id] = claim
}

func (l *leases) remove(id uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.claims, id)
}

func (l *leases) list() ([]uuid.UUID, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids, claims := make([]uuid.UUID, 0, len(l.claims)), make([]string, 0, len(l.claims))
	for id, claim := range l.claims {
		ids, claims = append(ids, id), append(claims, claim)
	}
	return ids, claims
}

// Owner is this brain's id as the owner of runs.
func (c *Chat) Owner() string { return c.owner }

// Start renews this brain's leases and takes over the runs of brains that died, until Stop. Without an LLM
// there is nothing to take over: a run is resumed with this brain's LLM.
func (c *Chat) Start(ctx context.Context, log *zerolog.Logger) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stopLoops = cancel
	c.loopsDone = make(chan struct{})
	go func() {
		defer close(c.loopsDone)
		renew := time.NewTicker(c.lease / 3)
		defer renew.Stop()
		takeover := time.NewTicker(takeoverInterval)
		defer takeover.Stop()
		// A database away stops every brain renewing its leases, so they all lapse together: once it is back,
		// this brain takes no run over for a lease (lost, then back), and the brains that were only cut off
		// renew theirs first; a dead brain's runs are taken over a lease later than they would be.
		var lost bool
		var back time.Time
		noteAway := func(err error) {
			if err != nil && away(err) {
				lost = true
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew.C:
				if ids, claims := c.runs.list(); len(ids) > 0 {
					err := postgres.RunLeasesRenew(ctx, c.pool, ids, claims, c.lease)
					if err != nil && ctx.Err() == nil {
						log.Warn().Err(err).Int("runs", len(ids)).Msg("error renewing run leases")
					}
					noteAway(err)
				}
			case <-takeover.C:
				if lost {
					if c.pool.Ping(ctx) != nil {
						continue
					}
					lost, back = false, time.Now()
				}
				if time.Since(back) >= c.lease {
					noteAway(c.takeOver(ctx, log, func(ctx context.Context, db gemsql.DBTX, owner string, d time.Duration, limit int, busy []uuid.UUID) ([]postgres.Taken, error) {
						return postgres.RunsTakeOver(ctx, db, owner, "llm:"+c.llm.Provider(), d, limit, busy)
					}, "error looking for runs to take over"))
				}
				noteAway(c.takeOver(ctx, log, postgres.QueuedTurnsStart, "error starting queued turns"))
			case <-c.wake:
				noteAway(c.takeOver(ctx, log, postgres.QueuedTurnsStart, "error starting queued turns"))
			}
		}
	}()
}

// kick asks the loop to start queued turns now.
func (c *Chat) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// takeOver takes the runs take gives this brain and resumes each in the background. It returns take's error.
func (c *Chat) takeOver(ctx context.Context, log *zerolog.Logger,
	take func(context.Context, gemsql.DBTX, string, time.Duration, int, []uuid.UUID) ([]postgres.Taken, error), failure string) error {
	if c.llm == nil {
		return nil // a run is resumed with this brain's LLM
	}
	busy, _ := c.runs.list()
	taken, err := take(ctx, c.pool, c.owner, c.lease, takeoverBatch, busy)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn().Err(err).Msg(failure)
		}
		return err
	}
	for _, t := range taken {
		id := t.ID
		c.runs.add(id, t.Claim)
		go func() {
			defer c.runs.remove(id)
			_ = gemlog.Guarded(log, "resuming a run", func() error {
				if err := c.Resume(log.WithContext(ctx), id, t.Claim); err != nil && !errors.Is(err, postgres.ErrTakenOver) && ctx.Err() == nil {
					log.Warn().Err(err).Str("run_id", id.String()).Msg("error resuming a run")
				}
				return nil
			})
		}()
	}
	return nil
}

// Stop ends the loops and hands this brain's runs over: their leases end now, so another brain takes them
// over within a second instead of after the lease.
func (c *Chat) Stop(ctx context.Context) error {
	if c.stopLoops == nil {
		return nil // not started, or stopped already
	}
	c.stopLoops()
	<-c.loopsDone
	c.stopLoops = nil
	if ids, claims := c.runs.list(); len(ids) > 0 {
		return postgres.RunLeasesGive(ctx, c.pool, ids, claims)
	}
	return nil
}

// Resume finishes a chat run this brain has just taken over, from its journal: the history its turn was
// given and its own messages. A step whose answer is journaled is never asked of the LLM again and its calls
// are never made again: calls whose receipts had not come are waited for, and the loop goes on from the
// next step (or the turn ends, when its last answer was the reply).
//
// claim is this brain's claim on the run, which fences its writes. A run that cannot go on (its agent or
// session gone) ends failed; one the database was away for is left to its lease and taken up again.
func (c *Chat) Resume(ctx context.Context, runID uuid.UUID, claim string) error {
	rec, err := postgres.RunGet(ctx, c.pool, runID, false)
	if err != nil {
		return err
	}
	if rec.Mode != brain.ModeChat || (rec.Status != brain.RunPlanning && rec.Status != brain.RunWaiting) {
		return nil
	}
	r := &chatRun{runID: runID, requester: rec.RequestedBy, calls: rec.PlannedCalls, claim: claim,
		agent: &brain.Agent{Slug: rec.Agent},
		req:   &brain.ChatParams{SessionID: rec.ConversationID, IdempotencyKey: rec.IdempotencyKey},
		resp:  &brain.ChatResponse{RunID: runID, SessionID: rec.ConversationID, ToolCalls: []brain.ChatToolCall{}, Decided: []brain.ChatDecided{}, Errors: []*brain.Error{}}}
	r.log = brain.LogRun(ctx, runID)
	r.log.UpdateContext(func(c zerolog.Context) zerolog.Context {
		return c.Str("agent", rec.Agent).Str("session_id", rec.ConversationID).Bool("resumed", true)
	})
	// A turn that cannot go on ends failed; the database being away leaves it to its lease.
	cannot := func(err error) error {
		if brain.ErrorCode(err) == brain.EUNAVAILABLE || errors.Is(err, postgres.ErrTakenOver) {
			return err
		}
		return c.finishResumed(ctx, r, err)
	}
	if r.agent, err = postgres.AgentGet(ctx, c.pool, rec.Agent); err != nil {
		r.agent = &brain.Agent{Slug: rec.Agent}
		return cannot(err)
	}
	if r.req.UserID, err = postgres.SessionOf(ctx, c.pool, rec.ConversationID); err != nil {
		return cannot(err)
	}
	history, own, err := postgres.RunMessages(ctx, c.pool, rec.ConversationID, runID, historyMessages)
	if err != nil {
		return cannot(err)
	}
	c.recallSecrets(r)
	if len(own) == 0 {
		// A turn queued behind another: it starts here.
		return c.startQueued(ctx, r, rec.Message)
	}
	if err := postgres.RunEventAdd(ctx, c.pool, runID, postgres.EventRunResumed, map[string]any{"owner": c.owner}); err != nil {
		r.log.Warn().Err(err).Msg("error recording a run_resumed event")
	}
	if own[0].Role != "user" {
		return cannot(fmt.Errorf("run %s has no message to answer", runID))
	}
	r.userContent = own[0].Content
	for _, m := range own {
		if m.Role == "assistant" {
			r.journaled++
		}
	}

	// What the turn knew: its skills and tools, and what its journaled steps loaded and described.
	mine := make([]llm.Message, len(own))
	for i, m := range own {
		mine[i] = m.Message
	}
	r.history = append(slices.Clone(history), mine...)
	if err := c.prepare(ctx, c.pool, r); err != nil {
		return cannot(err)
	}
	r.history = history
	r.replaySearches(mine)

	// Calls whose receipts had not come when their step was journaled are waited for; a program whose brain
	// died while it ran is told to the agent as interrupted, with the calls it made — it is never run again.
	var waiting []uuid.UUID
	for _, m := range own {
		if m.AwaitingReceipt && m.CallID != nil {
			waiting = append(waiting, *m.CallID)
		}
	}
	settled := map[uuid.UUID]string{}
	if len(waiting) > 0 {
		made, err := gemsql.CallsInserted(ctx, c.pool, waiting)
		if err != nil {
			return err
		}
		awaiting := gemsql.InsertedAwaiting(made)
		waitCtx, cancel := context.WithTimeout(ctx, c.wait)
		rest := slices.DeleteFunc(slices.Clone(waiting), func(id uuid.UUID) bool { return awaiting[id] })
		res, _ := c.waiter.Wait(waitCtx, rest)
		cancel()
		var ids []uuid.UUID
		var contents []string
		for _, id := range waiting {
			content := awaitingContent(id)
			if !awaiting[id] {
				var status string
				if content, _, status = toolResultContent(res.Receipts[id], id, nil, slices.Contains(res.Pending, id)); status == brain.ChatCallPending {
					continue // still running: the next turn tells the agent (settleFinished)
				}
			}
			settled[id] = r.scrub(content)
			ids, contents = append(ids, id), append(contents, settled[id])
		}
		if err := postgres.ToolMessagesSettle(ctx, c.pool, r.req.SessionID, ids, contents); err != nil {
			return err
		}
	}
	for i, m := range own {
		switch {
		case m.CallID != nil && settled[*m.CallID] != "":
			mine[i].Content = settled[*m.CallID]
			own[i].Content = mine[i].Content
		case m.AwaitingReceipt && m.CallID == nil && m.Role == "tool":
			mine[i].Content = r.programInterrupted(m.ToolCallID)
			own[i].Content = mine[i].Content
			if err := postgres.ToolMessageSettleByToolCall(ctx, c.pool, r.req.SessionID, runID, m.ToolCallID, mine[i].Content); err != nil {
				return err
			}
		}
	}
	r.reportJournaled(ctx, c.pool, own)

	steps, err := postgres.RunSteps(ctx, c.pool, runID)
	if err != nil {
		return err
	}
	answered := map[int]bool{}
	for _, s := range steps {
		if s.Error == nil {
			answered[s.Iteration] = true
		}
	}
	r.resp.Iterations = len(answered)
	if last := mine[len(mine)-1]; last.Role == "assistant" && len(last.ToolCalls) == 0 {
		// The last step is journaled (the note of a turn out of rounds, or a reply an earlier build journaled
		// on its own): the turn only has to end.
		r.resp.Reply = last.Content
		if toolSteps(mine) == len(answered) {
			// No LLM answer for it: the note of a turn that ran out of rounds.
			r.limitReached(r.resp.Iterations)
		}
		_, err := c.drive(ctx, r, nil, 0)
		return err
	}
	conversation := append(append([]llm.Message{}, history...), mine...)
	_, err = c.drive(ctx, r, conversation, r.resp.Iterations+1)
	return err
}

// toolSteps counts the journaled LLM answers that asked for tool calls.
func toolSteps(mine []llm.Message) int {
	n := 0
	for _, m := range mine {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			n++
		}
	}
	return n
}

// recallSecrets learns the secret values of a resumed run's calls (sealed in storage; this brain holds the
// key that sealed them), so the rest of the turn's records are scrubbed of them as the first brain's were.
func (c *Chat) recallSecrets(r *chatRun) {
	for _, pc := range r.calls {
		tool, ok := c.reg.Tool(pc.Tool)
		if !ok || !tool.HasSecrets() {
			continue
		}
		if clear, err := c.reg.OpenInput(pc.Tool, pc.Input); err == nil {
			r.noteSecrets(tool, clear)
		}
	}
}

// programInterrupted is what the agent is told of a run_code program whose brain died while it ran: it did
// not finish, and these calls it made, with their outcomes so far.
func (r *chatRun) programInterrupted(toolCallID string) string {
	var made []map[string]any
	for _, pc := range r.calls {
		if pc.CallID != nil && strings.HasPrefix(pc.Reason, "run_code program") {
			made = append(made, map[string]any{"call_id": pc.CallID, "tool": pc.Tool})
		}
	}
	return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": "interrupted",
		"message": "the program was interrupted when the brain running it stopped, and was not run again: do not assume it finished; " +
			"the calls it made are listed (look at their results before making them again)", "details": map[string]any{"calls": made}}})
}

// finishResumed ends a taken-over run that cannot go on, failed with err.
func (c *Chat) finishResumed(ctx context.Context, r *chatRun, err error) error {
	e := brain.AsError(err)
	r.resp.Errors, r.resp.Reply, r.resp.Status = []*brain.Error{e}, e.Message, brain.RunFailed
	response, _ := json.Marshal(r.resp)
	return postgres.RunFinish(ctx, c.pool, r.runID, r.claim, r.req.SessionID, brain.RunFailed, r.calls, r.resp.Reply, r.resp.Errors, response, false)
}

// replaySearches gives a resumed turn what its journaled steps' searches left it: the tools they described
// (with describe_tool) callable again, and whether the turn searched, what it described last and whether its
// last search answered that no tool fits, so the turn counts as a stumble or not as brain_tool_attempts reads
// its journal, not as a turn that never searched.
func (r *chatRun) replaySearches(mine []llm.Message) {
	answers := map[string]string{}
	for _, m := range mine {
		if m.Role == "tool" {
			answers[m.ToolCallID] = m.Content
		}
	}
	for _, m := range mine {
		for _, tc := range m.ToolCalls {
			if tc.Name != metaSearchTools && tc.Name != metaDescribeTool {
				continue
			}
			r.noteSearch()
			var answer struct {
				Status string `json:"status"`
				Result struct {
					Name string `json:"name"`
					Fits *bool  `json:"fits"`
				} `json:"result"`
			}
			if json.Unmarshal([]byte(answers[tc.ID]), &answer) != nil || answer.Status != "succeeded" {
				continue
			}
			switch tc.Name {
			case metaSearchTools:
				r.noToolFits = answer.Result.Fits != nil && !*answer.Result.Fits
			case metaDescribeTool:
				if t, ok := r.tools.Tool(answer.Result.Name); ok {
					r.offered[t.Name] = true
					r.described = t.Name
				}
			}
		}
	}
}

// reportJournaled lists the journaled steps' tool calls in the response, as the turn reported them: a call
// with its receipt's status (or pending), anything else as its tool message says.
func (r *chatRun) reportJournaled(ctx context.Context, db gemsql.DBTX, own []postgres.SessionMessage) {
	var ids []uuid.UUID
	for _, m := range own {
		if m.CallID != nil {
			ids = append(ids, *m.CallID)
		}
	}
	receipts, _ := gemsql.ReceiptsGet(ctx, db, ids)
	byToolCall := map[string]postgres.SessionMessage{}
	for _, m := range own {
		if m.Role == "tool" {
			byToolCall[m.ToolCallID] = m
		}
	}
	step := 0
	for _, m := range own {
		if m.Role != "assistant" {
			continue
		}
		step++
		for _, tc := range m.ToolCalls {
			report := brain.ChatToolCall{Tool: tc.Name, Iteration: step}
			if t, ok := r.tools.Tool(tc.Name); ok {
				report.Tool = t.Name
			}
			answer := byToolCall[tc.ID]
			var said struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal([]byte(answer.Content), &said)
			report.Status = said.Status
			if answer.CallID != nil {
				report.CallID = answer.CallID
				if rc := receipts[*answer.CallID]; rc != nil {
					report.Status = string(rc.Status)
				}
			} else if said.Status == string(registry.StatusSucceeded) {
				report.Status = brain.ChatCallAnswered
			}
			r.resp.ToolCalls = append(r.resp.ToolCalls, report)
		}
	}
}

// startQueued starts a turn that was queued behind another, now that it has the session's turn: it is told
// what became of the session's calls, its message is stored after the turn before it, and it runs.
func (c *Chat) startQueued(ctx context.Context, r *chatRun, message string) error {
	r.req.Message = message
	err := postgres.RunFenced(ctx, c.pool, r.runID, r.claim, false, func(tx pgx.Tx) error {
		if err := c.openTurn(ctx, tx, r); err != nil {
			return err
		}
		return c.startTurn(ctx, tx, r, nil)
	})
	if err != nil {
		if errors.Is(err, postgres.ErrTakenOver) {
			return err
		}
		return c.finishResumed(ctx, r, err)
	}
	conversation := append(append([]llm.Message{}, r.history...), llm.Message{Role: "user", Content: r.userContent})
	_, err = c.drive(ctx, r, conversation, 1)
	return err
}
