package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
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

// leases are the runs a brain is working on.
type leases struct {
	mu  sync.Mutex
	ids map[uuid.UUID]struct{}
}

func (l *leases) add(id uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids[id] = struct{}{}
}

func (l *leases) remove(id uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ids, id)
}

func (l *leases) list() []uuid.UUID {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]uuid.UUID, 0, len(l.ids))
	for id := range l.ids {
		out = append(out, id)
	}
	return out
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
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew.C:
				if ids := c.runs.list(); len(ids) > 0 {
					if err := postgres.RunLeasesRenew(ctx, c.pool, ids, c.owner, c.lease); err != nil && ctx.Err() == nil {
						log.Warn().Err(err).Int("runs", len(ids)).Msg("error renewing run leases")
					}
				}
			case <-takeover.C:
				c.takeOver(ctx, log, func(ctx context.Context, db gemsql.DBTX, owner string, d time.Duration, limit int) ([]uuid.UUID, error) {
					return postgres.RunsTakeOver(ctx, db, owner, "llm:"+c.llm.Provider(), d, limit)
				}, "error looking for runs to take over")
				c.takeOver(ctx, log, postgres.QueuedTurnsStart, "error starting queued turns")
			case <-c.wake:
				c.takeOver(ctx, log, postgres.QueuedTurnsStart, "error starting queued turns")
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

// takeOver takes the runs take gives this brain and resumes each in the background.
func (c *Chat) takeOver(ctx context.Context, log *zerolog.Logger,
	take func(context.Context, gemsql.DBTX, string, time.Duration, int) ([]uuid.UUID, error), failure string) {
	if c.llm == nil {
		return // a run is resumed with this brain's LLM
	}
	ids, err := take(ctx, c.pool, c.owner, c.lease, takeoverBatch)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn().Err(err).Msg(failure)
		}
		return
	}
	for _, id := range ids {
		c.runs.add(id)
		go func() {
			defer c.runs.remove(id)
			_ = gemsql.Guarded(log, "resuming a run", func() error {
				if err := c.Resume(log.WithContext(ctx), id); err != nil && !errors.Is(err, postgres.ErrTakenOver) && ctx.Err() == nil {
					log.Warn().Err(err).Str("run_id", id.String()).Msg("error resuming a run")
				}
				return nil
			})
		}()
	}
}

// Stop ends the loops and hands this brain's runs over: their leases end now, so another brain takes them
// over within a second instead of after the lease.
func (c *Chat) Stop(ctx context.Context) error {
	if c.stopLoops == nil {
		return nil
	}
	c.stopLoops()
	<-c.loopsDone
	c.stopLoops = nil
	if ids := c.runs.list(); len(ids) > 0 {
		return postgres.RunLeasesGive(ctx, c.pool, ids, c.owner)
	}
	return nil
}

// Resume finishes a chat run this brain has just taken over, from its journal: the history its turn was
// given and its own messages. A step whose answer is journaled is never asked of the LLM again and its calls
// are never made again: calls whose receipts had not come are waited for, and the loop goes on from the
// next step (or the turn ends, when its last answer was the reply).
func (c *Chat) Resume(ctx context.Context, runID uuid.UUID) error {
	rec, err := postgres.RunGet(ctx, c.pool, runID, false)
	if err != nil {
		return err
	}
	if rec.Mode != brain.ModeChat || (rec.Status != brain.RunPlanning && rec.Status != brain.RunWaiting) {
		return nil
	}
	agent, err := postgres.AgentGet(ctx, c.pool, rec.Agent)
	if err != nil {
		return err
	}
	userID, err := postgres.SessionOf(ctx, c.pool, rec.ConversationID)
	if err != nil {
		return err
	}
	history, own, err := postgres.RunMessages(ctx, c.pool, rec.ConversationID, runID, historyMessages)
	if err != nil {
		return err
	}
	r := &chatRun{agent: agent, runID: runID, requester: rec.RequestedBy, calls: rec.PlannedCalls,
		req:  &brain.ChatParams{SessionID: rec.ConversationID, UserID: userID, IdempotencyKey: rec.IdempotencyKey},
		resp: &brain.ChatResponse{RunID: runID, SessionID: rec.ConversationID, ToolCalls: []brain.ChatToolCall{}, Decided: []brain.ChatDecided{}, Errors: []*brain.Error{}}}
	r.log = brain.LogRun(ctx, runID)
	r.log.UpdateContext(func(c zerolog.Context) zerolog.Context {
		return c.Str("agent", agent.Slug).Str("session_id", rec.ConversationID).Bool("resumed", true)
	})
	if len(own) == 0 {
		// A turn queued behind another (or taken over before its message was stored, which the first
		// transaction of a turn never leaves): it starts here.
		return c.startQueued(ctx, r, rec.Message)
	}
	if own[0].Role != "user" {
		return c.finishResumed(ctx, r, fmt.Errorf("run %s has no message to answer", runID))
	}
	r.userContent = own[0].Content

	// What the turn knew: its skills and tools, and what its journaled steps loaded and described.
	mine := make([]llm.Message, len(own))
	for i, m := range own {
		mine[i] = m.Message
	}
	r.history = append(slices.Clone(history), mine...)
	if err := c.prepare(ctx, c.pool, r); err != nil {
		return err
	}
	r.history = history
	r.replayDescribed(mine)

	// Calls whose receipts had not come when their step was journaled.
	var waiting []uuid.UUID
	for _, m := range own {
		if m.AwaitingReceipt && m.CallID != nil {
			waiting = append(waiting, *m.CallID)
		}
	}
	if len(waiting) > 0 {
		awaiting, err := postgres.CallsAwaitingApproval(ctx, c.pool, waiting)
		if err != nil {
			return err
		}
		waitCtx, cancel := context.WithTimeout(ctx, c.wait)
		rest := slices.DeleteFunc(slices.Clone(waiting), func(id uuid.UUID) bool { return awaiting[id] })
		res, _ := c.waiter.Wait(waitCtx, rest)
		cancel()
		contents := make([]string, len(waiting))
		byCall := map[uuid.UUID]string{}
		for i, id := range waiting {
			if awaiting[id] {
				contents[i] = awaitingContent(id)
			} else {
				contents[i], _, _ = toolResultContent(res.Receipts[id], id, nil, slices.Contains(res.Pending, id))
			}
			byCall[id] = contents[i]
		}
		if err := postgres.ToolMessagesSettle(ctx, c.pool, r.req.SessionID, waiting, contents); err != nil {
			return err
		}
		for i, m := range own {
			if m.CallID != nil && byCall[*m.CallID] != "" {
				mine[i].Content = byCall[*m.CallID]
			}
		}
	}
	r.reportJournaled(ctx, c.pool, own)

	steps := 0
	for _, m := range mine {
		if m.Role == "assistant" {
			steps++
		}
	}
	r.resp.Iterations = steps
	if last := mine[len(mine)-1]; last.Role == "assistant" && len(last.ToolCalls) == 0 {
		// The reply is journaled: the turn only has to end.
		r.resp.Reply = last.Content
		_, err := c.drive(ctx, r, nil, 0)
		return err
	}
	conversation := append(append([]llm.Message{}, history...), mine...)
	_, err = c.drive(ctx, r, conversation, steps+1)
	return err
}

// finishResumed ends a taken-over run that cannot go on, failed with err.
func (c *Chat) finishResumed(ctx context.Context, r *chatRun, err error) error {
	e := brain.AsError(err)
	r.resp.Errors, r.resp.Reply, r.resp.Status = []*brain.Error{e}, e.Message, brain.RunFailed
	response, _ := json.Marshal(r.resp)
	return postgres.RunFinish(ctx, c.pool, r.runID, r.req.SessionID, brain.RunFailed, r.calls, r.resp.Reply, r.resp.Errors, response, false)
}

// replayDescribed makes callable again the tools the turn's journaled steps described (with describe_tool).
func (r *chatRun) replayDescribed(mine []llm.Message) {
	answers := map[string]string{}
	for _, m := range mine {
		if m.Role == "tool" {
			answers[m.ToolCallID] = m.Content
		}
	}
	for _, m := range mine {
		for _, tc := range m.ToolCalls {
			if tc.Name != metaDescribeTool {
				continue
			}
			var answer struct {
				Status string `json:"status"`
				Result struct {
					Name string `json:"name"`
				} `json:"result"`
			}
			if json.Unmarshal([]byte(answers[tc.ID]), &answer) == nil && answer.Status == "succeeded" {
				if t, ok := r.tools.Tool(answer.Result.Name); ok {
					r.offered[t.Name] = true
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
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := postgres.RunFence(ctx, tx, r.runID, c.owner); err != nil {
			return err
		}
		if err := c.openTurn(ctx, tx, r); err != nil {
			return err
		}
		return c.startTurn(ctx, tx, r)
	})
	if err != nil {
		if errors.Is(err, postgres.ErrTakenOver) {
			return err
		}
		return c.finishResumed(ctx, r, postgres.Error(err))
	}
	conversation := append(append([]llm.Message{}, r.history...), llm.Message{Role: "user", Content: r.userContent})
	_, err = c.drive(ctx, r, conversation, 1)
	return err
}
