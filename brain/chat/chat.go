// Package chat runs agents: the LLM tool loop, where every tool call the model asks for is validated,
// enqueued as a GEM call and answered from its receipt.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/testsignal"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Defaults of the chat loop.
const (
	// ToolSearchThresholdDefault: an agent with more tools than this is offered search_tools and
	// describe_tool instead of the full list.
	ToolSearchThresholdDefault = llm.ToolSearchThresholdDefault
	// WaitTimeoutDefault bounds the wait for one iteration's receipts.
	WaitTimeoutDefault = 30 * time.Second
	// historyMessages is how many stored messages of a session are sent back to the LLM.
	historyMessages = 60
	// toolResultMax caps the JSON of one tool result fed back to the LLM.
	toolResultMax = 16 << 10
	// MaxToolCallsPerAnswerDefault is the most tool calls one LLM answer may make: POST /brain/run's cap on
	// a plan.
	MaxToolCallsPerAnswerDefault = brain.MaxToolCallsMax
	// answerTextMax bounds an LLM answer's text as it is kept (the session's messages), sent back (the
	// reply) and fed to the next iteration; the rest is cut with a note.
	answerTextMax = 64 << 10
	// turnResponseMax bounds an LLM answer as brain_turns records it; a larger one is recorded in summary.
	turnResponseMax = 64 << 10
	// toolArgumentsMax bounds the arguments of one tool call of an LLM answer: a call with more is refused,
	// and its arguments are not kept.
	toolArgumentsMax = 64 << 10
	// RepeatWaitDefault bounds how long a repeated request (the same key) waits for the turn its first made
	// to end before it is answered 202 with the turn's run.
	RepeatWaitDefault = 60 * time.Second
)

// Meta-tools offered to agents with many tools. They are answered by the brain itself (they only read the
// registry), so they are not calls and have no receipts.
const (
	metaSearchTools  = "search_tools"
	metaDescribeTool = "describe_tool"
)

// metaToolNames are the names of every tool the brain answers itself (the search's, the skills', run_code).
var metaToolNames = []string{metaSearchTools, metaDescribeTool, metaLoadSkill, metaReadSkillFile, metaRunCode}

// Chat runs agents: the LLM tool loop, with every tool call going through the queue.
type Chat struct {
	llm       llm.Client
	reg       *registry.Registry
	pool      *pgxpool.Pool
	waiter    *gemsql.ReceiptWaiter
	ended     *gemsql.Listener // on postgres.RunEndedChannel
	threshold int
	// minCoverage is Config.ToolSearchMinCoverage.
	minCoverage float64
	wait        time.Duration
	maxCalls    int
	owner       string
	lease       time.Duration
	awayWait    time.Duration
	// textInterval is how often, at most, an LLM attempt's streamed text is written as a text event.
	textInterval time.Duration
	// runs are the chat runs this brain is working on, whose leases it renews.
	runs leases
	// stopLoops ends the lease renewal and takeover loop (Start), which closes loopsDone.
	stopLoops context.CancelFunc
	loopsDone chan struct{}
	// wake asks the loop to look for queued turns now (a turn ended), not at its next tick.
	wake chan struct{}
	// stumbles counts the calls agents stumble over (CountStumbles); nil counts nothing.
	stumbles *prometheus.CounterVec

	// TestSignals are events a test of the brain waits for; they do nothing unless the test inits them.
	TestSignals TestSignals
}

// TestSignals are the chat's events a test waits for instead of sleeping.
type TestSignals struct {
	// RepeatWaits is the run a repeated request (the same key) waits on, as it starts waiting.
	RepeatWaits testsignal.Signal[uuid.UUID]
	// TurnQueued is the run of a turn queued behind the session's running one (IfBusyEnqueue), once recorded.
	TurnQueued testsignal.Signal[uuid.UUID]
}

// Config tunes the loop.
type Config struct {
	// ToolSearchThreshold is the number of tools above which the meta-tools are offered. Defaults to 40
	// (GEM_BRAIN_TOOL_SEARCH_THRESHOLD).
	ToolSearchThreshold int
	// ToolSearchMinCoverage is the coverage of the request below which search_tools answers that no tool
	// fits (postgres.ToolsFit); 0 offers whatever matches. The brain's default is
	// postgres.ToolSearchMinCoverageDefault (GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE).
	ToolSearchMinCoverage float64
	// WaitTimeout bounds the wait for one iteration's receipts. Defaults to 30s (GEM_BRAIN_CHAT_WAIT_TIMEOUT).
	WaitTimeout time.Duration
	// MaxToolCallsPerAnswer is the most tool calls one LLM answer may make; the rest are answered to the
	// LLM as refused (too_many_tool_calls) and nothing is enqueued for them. Defaults to 50, POST
	// /brain/run's cap on a plan (GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN).
	MaxToolCallsPerAnswer int
	// Owner names this brain as the owner of the runs it works on (a brain id). Defaults to a new one.
	Owner string
	// Lease is how long a run stays this brain's without a renewal: a brain that dies, its runs are taken
	// over within about Lease (GEM_BRAIN_RUN_LEASE, 5s).
	Lease time.Duration
	// AwayWait is how long a turn's journal write that finds the database away waits for it to come back and
	// writes again, before the turn is left to its lease and its request answered 503 with its run. Defaults
	// to 30s (GEM_BRAIN_DB_AWAY_WAIT).
	AwayWait time.Duration
	// TextInterval is how often, at most, the text an LLM streams is written as its run's text events.
	// Defaults to 100ms (GEM_BRAIN_CHAT_TEXT_INTERVAL).
	TextInterval time.Duration
}

// New builds the loop; client may be nil (chat then answers that no LLM is configured). waiter and ended (a
// listener on postgres.RunEndedChannel) must be started. It logs through the logger in each request's
// context.
func New(client llm.Client, reg *registry.Registry, pool *pgxpool.Pool, waiter *gemsql.ReceiptWaiter, ended *gemsql.Listener, cfg Config) *Chat {
	if cfg.ToolSearchThreshold <= 0 {
		cfg.ToolSearchThreshold = ToolSearchThresholdDefault
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = WaitTimeoutDefault
	}
	if cfg.MaxToolCallsPerAnswer <= 0 {
		cfg.MaxToolCallsPerAnswer = MaxToolCallsPerAnswerDefault
	}
	if cfg.Owner == "" {
		cfg.Owner = NewOwner()
	}
	if cfg.Lease <= 0 {
		cfg.Lease = LeaseDefault
	}
	if cfg.AwayWait <= 0 {
		cfg.AwayWait = AwayWaitDefault
	}
	if cfg.TextInterval <= 0 {
		cfg.TextInterval = TextIntervalDefault
	}
	return &Chat{llm: client, reg: reg, pool: pool, waiter: waiter, ended: ended, threshold: cfg.ToolSearchThreshold, minCoverage: cfg.ToolSearchMinCoverage, wait: cfg.WaitTimeout,
		maxCalls: cfg.MaxToolCallsPerAnswer, owner: cfg.Owner, lease: cfg.Lease, awayWait: cfg.AwayWait, textInterval: cfg.TextInterval,
		runs: leases{claims: map[uuid.UUID]string{}}, wake: make(chan struct{}, 1)}
}

// chatRun is the state of one chat request.
type chatRun struct {
	agent   *brain.Agent
	req     *brain.ChatParams
	runID   uuid.UUID
	tools   *llm.ToolSet
	meta    bool
	offered map[string]bool // registry tools offered (the visible ones, or those described, with meta-tools)
	skills  []brain.AgentSkill
	loaded  map[string]bool // skills loaded with load_skill, in this run or earlier in the session
	visible map[string]bool // registry tools of always-on and loaded skills: what the LLM may be offered
	system  string
	history []llm.Message
	// userContent is this turn's user message: the decisions on the session's calls that waited for
	// approval, if any, then the message.
	userContent string
	// secretValues are the clear values of the secret inputs of this run's calls: every record of the run
	// (its turns, messages, programs and reply) is scrubbed of them.
	secretValues []string
	resp         *brain.ChatResponse
	calls        []brain.PlannedCall
	log          *zerolog.Logger
	// requester is the caller the agent acts for: its calls are made in that caller's name, with its grants.
	requester string
	// message is the turn's message as its run records it; queued says the turn waits behind another.
	message string
	queued  bool
	// claim is this brain's claim on the run (postgres.NewClaim): every journal write is fenced by it.
	claim string
	// journaled counts the run's assistant messages, one per journal write: a write tried again after the
	// database was away finds by it whether its try before committed.
	journaled int
	// startedAhead is the step whose first LLM request's llm_started event was written ahead, with the write
	// before it (the turn's start, the step before's settle), sparing the request a write of its own.
	startedAhead int
	// ending is the turn's last step, its reply: journaled with the run's end, in one transaction (drive).
	ending *step
	// searched says the turn used search_tools or describe_tool; described is the last tool it described.
	searched  bool
	described string
	// noToolFits says the turn's last search_tools or describe_tool was a search that answered no tool fits: a
	// turn that then made no call did what it was told, and did not stumble.
	noToolFits bool
}

// step is one step of a turn as the journal records it: the LLM answer (turn, when not nil), the step's
// messages, an assistant message first, and what else belongs to it (also: its calls), queued on the step's
// batch; written says a try before committed the step already, so also only reads what it needs.
type step struct {
	turn *turnRecord
	msgs []postgres.SessionMessage
	also func(b *pgx.Batch, written bool) error
}

// Chat handles one message to an agent. An error comes with a response when the run was recorded (its
// answer says what went wrong).
//
// A request with a key its caller sent before with the same request is answered with the first request's
// turn (Repeated), once it has ended or after RepeatWaitDefault; nothing is asked or made again.
func (c *Chat) Chat(ctx context.Context, slug string, req *brain.ChatParams, requester string) (*brain.ChatResponse, error) {
	if req.IdempotencyKey != "" {
		if err := postgres.RequestKeyCheck(ctx, c.pool, requester, req.IdempotencyKey, req.Fingerprint); err != nil {
			return c.Repeated(ctx, begunRepeat(req, err))
		}
	}
	agent, err := postgres.AgentGet(ctx, c.pool, slug)
	if err != nil {
		return nil, err
	}
	if !agent.Enabled {
		return nil, brain.Errorf(brain.ECONFLICT, "agent %q is disabled", slug)
	}
	if c.llm == nil {
		return nil, &brain.Error{Code: brain.ENOLLM, Message: "no LLM is configured, so agents cannot chat: set GEM_LLM_MODEL and GEM_LLM_API_KEY (or GEM_LLM_BASE_URL for a local server), and GEM_LLM_PROVIDER=anthropic for Claude; the rules planner (POST /brain/run) works without one"}
	}
	if req.SessionID == "" {
		req.SessionID = uuid.NewString()
	}

	r := &chatRun{agent: agent, req: req, runID: uuid.Must(uuid.NewV7()), requester: requester,
		resp: &brain.ChatResponse{SessionID: req.SessionID, ToolCalls: []brain.ChatToolCall{}, Decided: []brain.ChatDecided{}, Errors: []*brain.Error{}}}
	r.resp.RunID = r.runID
	r.log = brain.LogRun(ctx, r.runID)
	r.log.UpdateContext(func(c zerolog.Context) zerolog.Context { return c.Str("agent", slug).Str("session_id", req.SessionID) })

	if err := c.begin(ctx, r, requester); err != nil {
		return c.Repeated(ctx, begunRepeat(req, err))
	}
	if r.queued {
		c.TestSignals.TurnQueued.Signal(r.runID)
		if req.OnBegun != nil {
			req.OnBegun(r.runID) // its run exists: an async request answers it, a stream follows it
		}
		c.kick() // the turn before may have ended meanwhile
		// Answered as a repeat is: once it has run, or 202 with its run while it waits or runs.
		return c.answerRun(ctx, r.runID, false)
	}
	c.runs.add(r.runID, r.claim)
	defer c.runs.remove(r.runID)
	if req.OnBegun != nil {
		req.OnBegun(r.runID)
	}
	// The turn goes on if the client goes away: it is the run's, and a retry with its key answers it.
	work := context.WithoutCancel(ctx)
	conversation := append(append([]llm.Message{}, r.history...), llm.Message{Role: "user", Content: r.userContent})
	resp, err := c.drive(work, r, conversation, 1)
	if errors.Is(err, postgres.ErrTakenOver) {
		// This brain lost the run (its lease expired, as when the database was away): the brain that took
		// it over answers, and so does this request, with that answer.
		return c.answerRun(ctx, r.runID, false)
	}
	return resp, err
}

// drive runs a turn's loop from conversation, at iteration, and records its end.
// A nil conversation ends a turn whose last step is journaled already (the note of a turn out of rounds).
func (c *Chat) drive(ctx context.Context, r *chatRun, conversation []llm.Message, iteration int) (*brain.ChatResponse, error) {
	var loopErr error
	if conversation != nil {
		loopErr = c.loop(ctx, r, conversation, iteration)
	}
	if errors.Is(loopErr, postgres.ErrTakenOver) {
		return nil, loopErr
	}
	var away *databaseAway
	if errors.As(loopErr, &away) {
		// A journal write found the database away: the turn is not failed, it is left to its lease, and a
		// brain resumes it from its journal once the database is back.
		return c.leftToLease(r, away.err)
	}
	status := brain.RunCompleted
	if loopErr != nil {
		status = brain.RunFailed
		r.resp.Errors = append(r.resp.Errors, brain.AsError(loopErr))
		if r.resp.Reply == "" {
			r.resp.Reply = brain.AsError(loopErr).Message
		}
	}
	r.resp.OK = len(r.resp.Errors) == 0
	r.resp.Reply = r.scrub(r.resp.Reply)
	r.resp.Status = status
	// A turn that made no call and failed for want of the LLM or the database did no work: its key is given
	// up, so the client's retry tries again.
	noWork := loopErr != nil && brain.ErrorCode(loopErr) == brain.EUNAVAILABLE && len(r.calls) == 0
	response, _ := json.Marshal(r.resp)
	// The turn's last step and its end, in one transaction. Written again once the database is back: a
	// second write of an end under the same claim changes nothing, and a step found written is not written
	// again.
	var queued bool
	ending := step{}
	if loopErr == nil && r.ending != nil {
		ending = *r.ending
	}
	err := c.journal(ctx, r, ending, func(b *pgx.Batch) {
		postgres.RunFinishQueue(b, r.runID, r.req.SessionID, status, r.calls, r.resp.Reply, r.resp.Errors, response, noWork, &queued)
	})
	if queued {
		c.kick() // a turn queued behind this one starts now
	}
	if err == nil && status == brain.RunCompleted && r.searched && !r.noToolFits && len(r.calls) == 0 {
		c.stumbled(r.agent.Slug, r.described, StumbleSearchNoCall)
	}
	if err != nil {
		if errors.Is(err, postgres.ErrTakenOver) {
			return nil, err
		}
		if errors.As(err, &away) {
			return c.leftToLease(r, away.err)
		}
		return nil, err
	}
	if code := brain.ErrorCode(loopErr); code == brain.EUNAVAILABLE || code == brain.ELLMREJECTED {
		return r.resp, loopErr
	}
	return r.resp, nil
}

// begunRepeat tells req's OnBegun the run a repeated request answers (err a *postgres.RepeatedRequest),
// and returns err.
func begunRepeat(req *brain.ChatParams, err error) error {
	var repeat *postgres.RepeatedRequest
	if req.OnBegun != nil && errors.As(err, &repeat) {
		req.OnBegun(repeat.RunID)
	}
	return err
}

// Repeated answers a request whose key holds an earlier turn (err a *postgres.RepeatedRequest) with that
// turn's response, once the turn has ended or RepeatWaitDefault has passed (then its status says it is
// still answering). Any other err is returned as it is.
func (c *Chat) Repeated(ctx context.Context, err error) (*brain.ChatResponse, error) {
	var repeat *postgres.RepeatedRequest
	if !errors.As(err, &repeat) {
		return nil, err
	}
	c.TestSignals.RepeatWaits.Signal(repeat.RunID)
	return c.answerRun(ctx, repeat.RunID, true)
}

// answerRun answers with a turn's response once the turn has ended, or after RepeatWaitDefault with what its
// run says so far (its status: queued, planning or waiting). repeated marks a repeated request's answer.
func (c *Chat) answerRun(ctx context.Context, runID uuid.UUID, repeated bool) (*brain.ChatResponse, error) {
	waitCtx, cancel := context.WithTimeout(ctx, RepeatWaitDefault)
	defer cancel()
	rec, err := postgres.RunAwaitEnd(waitCtx, c.pool, c.ended, runID)
	if err != nil {
		return nil, err
	}
	resp := &brain.ChatResponse{}
	if len(rec.Response) == 0 || json.Unmarshal(rec.Response, resp) != nil {
		// Still answering (or ended without its response stored): what the run says so far.
		resp = &brain.ChatResponse{OK: rec.Status == brain.RunCompleted && len(rec.Errors) == 0, Reply: rec.AssistantMessage,
			SessionID: rec.ConversationID, ToolCalls: []brain.ChatToolCall{}, Decided: []brain.ChatDecided{}, Errors: rec.Errors}
		if resp.Errors == nil {
			resp.Errors = []*brain.Error{}
		}
	}
	resp.RunID, resp.Status, resp.Repeated = rec.ID, rec.Status, repeated
	return resp, nil
}

// begin claims the session, records the run and the user's message, and loads the agent's skills, tools
// and history, in four round trips.
func (c *Chat) begin(ctx context.Context, r *chatRun, requester string) error {
	run := &brain.Run{ID: r.runID, Message: r.req.Message, Mode: brain.ModeChat, ConversationID: r.req.SessionID, Status: brain.RunPlanning,
		Decision: brain.Decision{Mode: "chat", Planner: "llm:" + c.llm.Provider(), Reason: "agent " + r.agent.Slug}, PlannedCalls: []brain.PlannedCall{},
		Agent: r.agent.Slug, RequestedBy: requester, IdempotencyKey: r.req.IdempotencyKey, Fingerprint: r.req.Fingerprint}
	var busy uuid.UUID
	return postgres.BatchTx(ctx, c.pool, func(b *pgx.Batch) {
		if r.req.IdempotencyKey != "" {
			// First: a repeat racing its first request is a repeat, not a busy session.
			postgres.RunKeyClaimQueue(b, requester, r.req.IdempotencyKey, r.req.Fingerprint, r.runID)
		}
		postgres.SessionClaimQueue(b, r.req.SessionID, r.agent.ID, r.req.UserID, requester, r.runID, &busy)
	}, func(tx pgx.Tx, err error) error {
		if err != nil {
			if busy == uuid.Nil || r.req.IfBusy != brain.IfBusyEnqueue {
				return err
			}
			// Queued behind the running turn: recorded now, started by a brain once the session is free
			// (startQueued), its message stored then, after the running turn's.
			run.Status, r.queued = brain.RunQueued, true
			return postgres.RunInsert(ctx, tx, run)
		}
		if err := c.openTurn(ctx, tx, r); err != nil {
			return err
		}
		run.Message = r.message
		r.claim = postgres.NewClaim(c.owner)
		run.Owner = r.claim
		return c.startTurn(ctx, tx, r, func(b *pgx.Batch) { postgres.RunInsertLeasedQueue(b, run, c.lease) })
	})
}

// openTurn tells a turn what became of the session's calls since the agent was last told (decided
// approvals, calls that were still running), which opens its message to the agent.
func (c *Chat) openTurn(ctx context.Context, tx pgx.Tx, r *chatRun) error {
	var decided []postgres.Decided
	var running []uuid.UUID
	b := &pgx.Batch{}
	postgres.SessionDecisionsQueue(b, r.req.SessionID, r.runID, &decided)
	postgres.SessionCallsAwaitingReceiptsQueue(b, r.req.SessionID, &running)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	finished, err := c.settleFinished(ctx, tx, r, running)
	if err != nil {
		return err
	}
	if r.req.Resume && len(decided) == 0 && len(finished) == 0 {
		return brain.Errorf(brain.ECONFLICT, "nothing to resume: no call of session %q that waited for approval has been decided, and none that was still running has finished, since the agent was last told", r.req.SessionID)
	}
	r.userContent = joinNotes(decisionsNote(decided, r.resp), finishedNote(finished))
	r.message = r.req.Message
	if r.message == "" {
		r.message = fmt.Sprintf("(resumed: %d decided %s, %d finished)", len(decided), brain.Plural(len(decided), "call", "calls"), len(finished))
	} else if r.userContent != "" {
		r.userContent += "\n\n" + r.message
	}
	if r.userContent == "" {
		r.userContent = r.message
	}
	return nil
}

// startTurn loads the history its turn is given, stores the turn's message after it, prepares the turn and
// says its first LLM request starts, in one round trip with what first queues (the run's insert).
func (c *Chat) startTurn(ctx context.Context, tx pgx.Tx, r *chatRun, first func(*pgx.Batch)) error {
	b := &pgx.Batch{}
	if first != nil {
		first(b)
	}
	postgres.SessionMessageListQueue(b, r.req.SessionID, historyMessages, &r.history)
	postgres.SessionMessageInsertQueue(b, r.req.SessionID, r.runID, postgres.SessionMessage{Message: llm.Message{Role: "user", Content: r.userContent}})
	var tools []*registry.Tool
	postgres.AgentToolsQueue(b, c.reg, r.agent.Slug, r.req.UserID, &tools)
	postgres.AgentSkillsQueue(b, r.agent.Slug, r.req.UserID, &r.skills)
	if err := postgres.RunEventAddQueue(b, r.runID, postgres.EventLLMStarted, llmStarted(1, 1, c.model(r))); err != nil {
		return err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	r.startedAhead = 1
	c.prepareWith(r, tools)
	return nil
}

// prepare gives a turn its agent's tools and skills for its user, what its history loaded, and its system
// prompt.
func (c *Chat) prepare(ctx context.Context, db gemsql.DBTX, r *chatRun) error {
	tools, err := postgres.AgentTools(ctx, db, c.reg, r.agent.Slug, r.req.UserID)
	if err != nil {
		return err
	}
	if r.skills, err = postgres.AgentSkills(ctx, db, r.agent.Slug, r.req.UserID); err != nil {
		return err
	}
	c.prepareWith(r, tools)
	return nil
}

// prepareWith is prepare once the agent's tools and skills (r.skills) are loaded.
func (c *Chat) prepareWith(r *chatRun, tools []*registry.Tool) {
	r.tools = llm.NewToolSet(tools)
	r.meta = r.tools.Len() > c.threshold
	r.offered = map[string]bool{}
	r.discloseSkills()

	var b strings.Builder
	b.WriteString(strings.TrimSpace(r.agent.Instructions))
	writeSkills(&b, r.skills)
	b.WriteString("\n\n# Tools\n\nEach tool result is JSON: {\"status\": \"succeeded\", \"result\": ...} or {\"status\": \"failed\", \"error\": {\"code\", \"message\", \"details\"}}. " +
		"When a call fails, correct the input if you can, or tell the user what went wrong. Never invent a result.")
	if r.meta {
		b.WriteString(fmt.Sprintf(" You have %d tools: find them with %s, read one's input schema with %s, and then call it by the name %s gives.",
			r.tools.Len(), metaSearchTools, metaDescribeTool, metaDescribeTool))
	}
	r.system = strings.TrimSpace(b.String())
}

// model is the model a turn's agent asks.
func (c *Chat) model(r *chatRun) string {
	if r.agent.Model != nil && *r.agent.Model != "" {
		return *r.agent.Model
	}
	return c.llm.DefaultModel()
}

// llmStarted is an llm_started event's data.
func llmStarted(iteration, attempt int, model string) map[string]any {
	return map[string]any{"iteration": iteration, "attempt": attempt, "model": model}
}

// loop asks the LLM, runs the tool calls it wants through the queue, feeds back their receipts, and
// repeats until the LLM answers in text or the agent's max_tool_iterations is reached.
func (c *Chat) loop(ctx context.Context, r *chatRun, conversation []llm.Message, first int) error {
	model := c.model(r)
	for iteration := first; ; iteration++ {
		req := &llm.Request{Model: model, System: r.system, Messages: conversation, Tools: c.offeredDefs(r), Temperature: r.agent.Temperature}
		turn := turnRecord{iteration: iteration, attempt: 1, model: model, req: req, secretsKnown: len(r.secretValues)}
		// A watcher learns each attempt began, then reads its text as the provider streams it (events are a
		// view: a failed write does not stop the turn).
		var text *textStream
		req.OnAttempt = func(n int) {
			turn.attempt, text = n, c.newTextStream(ctx, r)
			if n == 1 && r.startedAhead == iteration {
				return // written with the write before the request
			}
			if err := postgres.RunEventAddFenced(ctx, c.pool, r.runID, r.claim, postgres.EventLLMStarted, llmStarted(iteration, n, model)); err != nil {
				r.log.Warn().Err(err).Msg("error recording an llm_started event")
			}
		}
		req.OnText = func(s string) {
			if text != nil {
				text.add(s)
			}
		}
		// Every attempt is recorded: those retried as they fail, the last with its outcome.
		req.OnRetry = func(a llm.Attempt) {
			failed := turnRecord{iteration: iteration, attempt: a.N, model: model, req: req, err: a.Err, latency: a.Latency}
			var wrote bool
			failed.text, wrote = text.end()
			turn.textWritten = turn.textWritten || wrote || failed.text != ""
			c.recordTurn(ctx, r, failed)
		}
		start := time.Now()
		resp, err := c.llm.Complete(ctx, req)
		turn.resp, turn.err, turn.latency = resp, err, time.Since(start)
		var wrote bool
		turn.text, wrote = text.end()
		turn.textWritten = turn.textWritten || wrote
		if err != nil {
			c.recordTurn(ctx, r, turn)
			return err
		}
		r.resp.Iterations = iteration
		resp.Content = boundText(resp.Content, answerTextMax)
		assistant := llm.Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls}
		if len(resp.ToolCalls) == 0 {
			r.resp.Reply = r.scrub(resp.Content)
			r.ending = &step{turn: &turn, msgs: []postgres.SessionMessage{{Message: assistant}}}
			return nil
		}
		results, err := c.runToolCalls(ctx, r, iteration, &turn, assistant)
		if err != nil {
			return err
		}
		conversation = append(conversation, assistant)
		for _, m := range results {
			conversation = append(conversation, m.Message)
		}
		if iteration >= r.agent.MaxToolIterations {
			// The agent did not finish: the turn is not ok, though its calls were made.
			r.limitReached(iteration)
			note := fmt.Sprintf("I stopped after %d rounds of tool calls, the limit for agent %s, before finishing.", iteration, r.agent.Slug)
			if strings.TrimSpace(resp.Content) != "" {
				note = strings.TrimSpace(resp.Content) + "\n\n" + note
			}
			r.resp.Reply = note
			// Journaled on its own: a turn taken over after a failed end finds it, and ends out of rounds.
			return c.journal(ctx, r, step{msgs: []postgres.SessionMessage{{Message: llm.Message{Role: "assistant", Content: note}}}}, nil)
		}
	}
}

// limitReached marks the turn as one that ran out of rounds: not ok, though its calls were made.
func (r *chatRun) limitReached(iteration int) {
	r.resp.LimitReached = true
	r.resp.Errors = append(r.resp.Errors, &brain.Error{Code: brain.ETOOLITERATIONS,
		Message: fmt.Sprintf("agent %s made %d rounds of tool calls, its max_tool_iterations, without answering", r.agent.Slug, iteration),
		Details: map[string]any{"max_tool_iterations": r.agent.MaxToolIterations}})
}

// offeredDefs are the functions offered this iteration: the agent's tools, or the meta-tools plus the tools
// described so far.
func (c *Chat) offeredDefs(r *chatRun) []llm.ToolDef {
	var defs []llm.ToolDef
	if r.meta {
		defs = append(defs, metaToolDefs()...)
	}
	if r.skillMetaOffered() {
		defs = append(defs, skillMetaToolDefs()...)
	}
	if r.agent.CodeMode {
		defs = append(defs, runCodeDef())
	}
	for _, d := range r.tools.Defs() {
		if t, _ := r.tools.Tool(d.Name); t != nil && r.offered[t.Name] {
			defs = append(defs, d)
		}
	}
	return defs
}

func metaToolDefs() []llm.ToolDef {
	return []llm.ToolDef{
		{Name: metaSearchTools, Description: "Find tools by what they do. Returns the best matches with their names and descriptions.", Strict: true,
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"query", "limit"}, "properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "words describing the task"},
				"limit": map[string]any{"type": []any{"integer", "null"}, "description": "most results (default 8)"},
			}}},
		{Name: metaDescribeTool, Description: "Show a tool's description and input schema, and make it callable.", Strict: true,
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"}, "properties": map[string]any{
				"name": map[string]any{"type": "string", "description": "the tool's name, as search_tools gave it"},
			}}},
	}
}

// programRunning is a run_code tool message while its program runs: the journal holds it so, and a brain
// that takes the turn over finds it so if the program's brain died (programInterrupted).
const programRunning = `{"status":"running","message":"the program is running"}`

// toolOutcome is one tool call's result message, with what to report about it.
type toolOutcome struct {
	// program is a run_code call, run once its step is journaled.
	program *llm.ToolCall
	msg     postgres.SessionMessage
	report  brain.ChatToolCall
	call    *gemsql.CallInsertParams
	tool    *registry.Tool
}

// runToolCalls answers meta-tools, refuses malformed or disallowed calls, enqueues the rest together (one
// transaction), waits for their receipts and returns one tool message per call, in the LLM's order.
func (c *Chat) runToolCalls(ctx context.Context, r *chatRun, iteration int, turn *turnRecord, assistant llm.Message) ([]postgres.SessionMessage, error) {
	calls := assistant.ToolCalls
	outcomes := make([]*toolOutcome, len(calls))
	var planned []brain.PlannedCall // the calls of this step, the run's once the step is journaled
	var params []gemsql.CallInsertParams
	var ids []uuid.UUID
	for i, tc := range calls {
		o := &toolOutcome{msg: postgres.SessionMessage{Message: llm.Message{Role: "tool", ToolCallID: tc.ID}}, report: brain.ChatToolCall{Tool: tc.Name, Iteration: iteration}}
		outcomes[i] = o
		tool, input := c.screenCall(ctx, r, calls, i, o)
		if tool == nil {
			continue
		}
		r.noteSecrets(tool, input)
		input, err := brain.SealInput(c.reg, tool.Name, input)
		if err != nil {
			e := brain.AsError(err)
			o.fail(registry.CodeNotConfigured, e.Message, nil)
			o.report.Status = brain.ChatCallInvalidArguments
			continue
		}
		id := uuid.Must(uuid.NewV7())
		o.report.CallID = &id
		params = append(params, gemsql.CallInsertParams{ID: id, ToolName: tool.Name, Input: input, RunID: &r.runID,
			Agent: r.agent.Slug, UserID: r.req.UserID, RequestedBy: r.requester})
		ids = append(ids, id)
		planned = append(planned, brain.PlannedCall{Tool: tool.Name, Input: input, Reason: fmt.Sprintf("LLM tool call %s (iteration %d)", tc.ID, iteration), CallID: &id})
	}

	// The journal: the answer, its messages (a call's tool message says it is pending until its receipt)
	// and its calls, in one transaction. Recorded once the calls are prepared: their secret inputs are
	// known then, and scrubbed from it.
	msgs := []postgres.SessionMessage{{Message: assistant}}
	for _, o := range outcomes {
		o.msg.CallID = o.report.CallID
		if o.report.CallID != nil {
			o.msg.Content, o.msg.IsError, _ = toolResultContent(nil, *o.report.CallID, nil, true)
			o.msg.AwaitingReceipt = true
		}
		msgs = append(msgs, o.msg)
	}
	var sub *gemsql.Subscription
	if len(ids) > 0 {
		sub = c.waiter.Subscribe(ids) // before the calls exist, so the wait need not read first
		defer sub.Close()
	}
	turn.enqueued = nil
	for _, p := range params {
		turn.enqueued = append(turn.enqueued, postgres.EnqueuedCall{CallID: p.ID, Tool: p.ToolName})
	}
	var made []gemsql.Inserted
	enqueueCtx, enqueued := ctx, func(error) {}
	if len(params) > 0 {
		enqueueCtx, enqueued = gemsql.StartEnqueue(ctx, params) // the calls carry the span that sends them
	}
	err := c.journal(ctx, r, step{turn: turn, msgs: msgs, also: func(b *pgx.Batch, written bool) error {
		made = nil // a try that failed may have read some
		if len(params) == 0 {
			return nil
		}
		if written {
			// A try before made them, its answer lost: what it made is read back.
			gemsql.CallsInsertedQueue(b, ids, &made)
			return nil
		}
		if _, err := gemsql.CallInsertQueue(enqueueCtx, b, &made, params...); err != nil {
			return err
		}
		postgres.RunAddCallsQueue(b, r.runID, ids, append(slices.Clone(r.calls), planned...))
		// Their call_enqueued events went with the answer's llm_ended; those held for approval add theirs.
		postgres.RunCallsHeldQueue(b, r.runID, ids)
		return nil
	}}, nil)
	enqueued(err)
	if err != nil {
		return nil, err
	}
	awaiting := gemsql.InsertedAwaiting(made)
	r.calls = append(r.calls, planned...)
	// Programs run now, their step journaled; each one's tool message is settled with what it returned.
	known := len(r.secretValues)
	defer func() {
		// A program's calls may name secrets the step's records were written without: they are scrubbed
		// of them now (the program's code holds what it passed its tools).
		if len(r.secretValues) > known {
			if err := postgres.StepScrub(context.WithoutCancel(ctx), c.pool, r.req.SessionID, r.runID, iteration, r.scrub); err != nil {
				r.log.Warn().Err(err).Msg("error scrubbing a step's records of its program's secrets")
			}
		}
	}()
	for _, o := range outcomes {
		if o.program == nil {
			continue
		}
		o.msg.Content, o.msg.IsError = c.runCode(ctx, r, iteration, *o.program)
		o.msg.AwaitingReceipt = false
		if err := c.untilBack(ctx, func(int) error {
			return postgres.ToolMessageSettleByToolCall(ctx, c.pool, r.req.SessionID, r.runID, o.program.ID, r.scrub(o.msg.Content))
		}); err != nil {
			if brain.ErrorCode(err) == brain.EUNAVAILABLE {
				return nil, &databaseAway{err: err}
			}
			return nil, err
		}
	}
	if len(ids) > 0 {
		receipts, pending := c.waitReceipts(ctx, sub, ids, awaiting)
		var settled []uuid.UUID
		var contents []string
		for _, o := range outcomes {
			if o.report.CallID == nil {
				continue
			}
			id := *o.report.CallID
			if awaiting[id] {
				o.msg.Content, o.msg.IsError, o.report.Status = awaitingContent(id), false, brain.ChatCallAwaitingApproval
			} else {
				o.msg.Content, o.msg.IsError, o.report.Status = toolResultContent(receipts[id], id, nil, slices.Contains(pending, id))
				c.receiptStumbled(r.agent.Slug, receipts[id])
			}
			if o.report.Status == brain.ChatCallPending {
				continue // still awaiting its receipt: the next turn settles it and tells the agent (settleFinished)
			}
			o.msg.AwaitingReceipt = false
			settled, contents = append(settled, id), append(contents, r.scrub(o.msg.Content))
		}
		// The next step's llm_started goes with the settle, which comes just before its request (the first try
		// only: one whose answer was lost may have committed it).
		next := iteration < r.agent.MaxToolIterations
		if err := c.untilBack(ctx, func(try int) error {
			b := &pgx.Batch{}
			postgres.ToolMessagesSettleQueue(b, r.req.SessionID, settled, contents)
			if b.Len() == 0 {
				return nil
			}
			ahead := next && try == 1
			if ahead {
				if err := postgres.RunEventAddFencedQueue(b, r.runID, r.claim, postgres.EventLLMStarted, llmStarted(iteration+1, 1, c.model(r))); err != nil {
					return err
				}
			}
			if err := postgres.LazyCommitBatch(ctx, c.pool, b); err != nil {
				return err
			}
			if ahead {
				r.startedAhead = iteration + 1
			}
			return nil
		}); err != nil {
			if brain.ErrorCode(err) == brain.EUNAVAILABLE {
				return nil, &databaseAway{err: err}
			}
			return nil, err
		}
	}
	results := make([]postgres.SessionMessage, len(outcomes))
	for i, o := range outcomes {
		results[i] = o.msg
		r.resp.ToolCalls = append(r.resp.ToolCalls, o.report)
	}
	return results, nil
}

// screenCall screens call i of an LLM answer as the loop does before making it: it answers a meta-tool,
// refuses a call that is malformed, disallowed or beyond the answer's cap (o then holds the tool message),
// or returns the call's tool and its input, read back from the arguments and valid against the tool's schema.
func (c *Chat) screenCall(ctx context.Context, r *chatRun, calls []llm.ToolCall, i int, o *toolOutcome) (*registry.Tool, json.RawMessage) {
	tc := calls[i]
	if i >= c.maxCalls {
		// The answer as kept and sent again (calls is its slice) holds no arguments of calls not made.
		calls[i].Arguments = "{}"
		o.fail(codeTooManyToolCalls, fmt.Sprintf("this answer asked for %d tool calls and one answer may make at most %d: this call (number %d) was not made; "+
			"make the calls still needed in a later answer", len(calls), c.maxCalls, i+1), nil)
		o.report.Status = brain.ChatCallTooMany
		return nil, nil
	}
	if n := len(tc.Arguments); n > toolArgumentsMax {
		calls[i].Arguments = "{}"
		code, status := registry.CodeValidation, brain.ChatCallInvalidArguments
		message := fmt.Sprintf("the arguments were %d bytes, more than the %d one call may have: the call was not made", n, toolArgumentsMax)
		// A name no tool has is an unknown tool whatever its arguments: the stumbles page and the metric keep
		// every such name to one row, which a validation_error would not.
		if _, known := c.reg.Tool(registry.DottedName(tc.Name)); !known && !slices.Contains(metaToolNames, tc.Name) {
			code, status, message = registry.CodeUnknownTool, brain.ChatCallUnknownTool, fmt.Sprintf("there is no tool %q you may use", tc.Name)
		}
		o.fail(code, message, nil)
		o.report.Status = status
		c.refused(r, tc.Name, code)
		return nil, nil
	}
	if r.skillMetaOffered() && (tc.Name == metaLoadSkill || tc.Name == metaReadSkillFile) {
		o.msg.Content, o.msg.IsError = c.answerSkillMeta(ctx, r, tc)
		o.report.Status = brain.ChatCallAnswered
		return nil, nil
	}
	if r.meta && (tc.Name == metaSearchTools || tc.Name == metaDescribeTool) {
		r.noteSearch()
		o.msg.Content, o.msg.IsError = c.answerMeta(ctx, r, tc)
		o.report.Status = brain.ChatCallAnswered
		return nil, nil
	}
	if r.agent.CodeMode && tc.Name == metaRunCode {
		// Run once the answer is journaled: a program makes calls, which must belong to a journaled step.
		o.program = &calls[i]
		o.msg.Content, o.msg.IsError, o.msg.AwaitingReceipt = programRunning, false, true
		o.report.Status = brain.ChatCallAnswered
		return nil, nil
	}
	tool, ok := r.tools.Tool(tc.Name)
	switch {
	case !ok:
		_, inRegistry := c.reg.Tool(registry.DottedName(tc.Name))
		code, status := registry.CodeUnknownTool, brain.ChatCallUnknownTool
		if inRegistry {
			code, status = registry.CodeToolNotEnabled, brain.ChatCallNotEnabled
		}
		o.fail(code, fmt.Sprintf("there is no tool %q you may use", tc.Name), nil)
		o.report.Status = status
		c.refused(r, tc.Name, code)
		return nil, nil
	case !r.visible[tool.Name]:
		o.report.Tool = tool.Name
		o.fail(codeSkillNotLoaded, r.notLoaded(tool.Name), nil)
		o.report.Status = brain.ChatCallSkillNotLoaded
		return nil, nil
	case !r.offered[tool.Name]:
		o.report.Tool = tool.Name
		o.fail(codeNotDescribed, fmt.Sprintf("call %s with the name %s after describing it with %s", metaDescribeTool, tc.Name, metaDescribeTool), nil)
		o.report.Status = brain.ChatCallInvalidArguments
		return nil, nil
	}
	o.report.Tool, o.tool = tool.Name, tool
	input, err := llm.InputFromArguments(tool, tc.Arguments)
	if err == nil {
		err = tool.ValidateInput(input)
	}
	if err != nil {
		var details any
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			registry.RedactViolations(tool, ve.Violations)
			details = map[string]any{"violations": ve.Violations}
		}
		o.fail(registry.CodeValidation, "the arguments were not used: "+err.Error(), details)
		o.report.Status = brain.ChatCallInvalidArguments
		c.refused(r, tool.Name, registry.CodeValidation)
		return nil, nil
	}
	return tool, input
}

// databaseAway is a journal write that found the database away (gemsql.DatabaseAway).
type databaseAway struct{ err error }

func (e *databaseAway) Error() string { return e.err.Error() }
func (e *databaseAway) Unwrap() error { return e.err }

// leftToLease answers a turn that could not be recorded because the database was away: 503 with its run,
// still planning, which a brain resumes from its journal once its lease lapses (this brain no longer renews
// it), so the client's retry with its key, or GET /brain/runs/{id}, finds the answer.
func (c *Chat) leftToLease(r *chatRun, err error) (*brain.ChatResponse, error) {
	// The driver's error names the database's host, port and user: the log has it, the client does not.
	r.log.Warn().Err(err).Msg("the database was away while the turn was recorded; the turn is left to its lease")
	e := &brain.Error{Code: brain.EUNAVAILABLE, Message: fmt.Sprintf("the database was away while the turn was recorded; the turn is not lost: "+
		"it goes on once the database is back (GET /brain/runs/%s, or send the request again with its key)", r.runID),
		Details: map[string]any{"run_id": r.runID}}
	r.resp.OK, r.resp.Status, r.resp.Reply = false, brain.RunPlanning, ""
	r.resp.Errors = append(r.resp.Errors, e)
	return r.resp, e
}

// journal records one step of the turn in one transaction, under the run's fence: the LLM answer (st.turn,
// when not nil), the step's messages and what also belongs to it (st.also: its calls), then what end queues
// (the run's end, for the turn's last step). A brain that no longer owns the run records nothing
// (postgres.ErrTakenOver).
//
// A step that finds the database away is written again once it is back (untilBack). A try whose commit's
// answer was lost may have committed: the step is then found journaled (the run has one more assistant
// message than before it) and not written again, and also is told so (written), to read what it needs.
func (c *Chat) journal(ctx context.Context, r *chatRun, st step, end func(b *pgx.Batch)) error {
	msgs, turn, also := st.msgs, st.turn, st.also
	if len(r.secretValues) > 0 {
		msgs = slices.Clone(msgs)
		for i := range msgs {
			msgs[i].Content = r.scrub(msgs[i].Content)
			msgs[i].ToolCalls = r.scrubCalls(msgs[i].ToolCalls)
		}
	}
	// The step's calls name secrets its text streamed before they were known: its text events are scrubbed of
	// them, as its messages are (a read and a rewrite, after the turn's last text event is written).
	scrubText := turn != nil && turn.textWritten && len(r.secretValues) > turn.secretsKnown
	queueTurn := func(b *pgx.Batch) {
		if turn != nil {
			postgres.TurnInsertQueue(b, c.turnParams(r, *turn))
		}
	}
	queueRest := func(b *pgx.Batch) error {
		postgres.SessionMessageInsertQueue(b, r.req.SessionID, r.runID, msgs...)
		if also != nil {
			if err := also(b, false); err != nil {
				return err
			}
		}
		if end != nil {
			end(b)
		}
		return nil
	}
	// A step with nothing after it but the turn's end (the note of a turn out of rounds) commits lazily: the
	// end, written next under a commit that waits for the disk, flushes it with its own.
	lazy := also == nil && end == nil
	err := c.untilBack(ctx, func(try int) error {
		if try == 1 && !scrubText {
			// The usual step: one round trip.
			return postgres.RunFencedBatch(ctx, c.pool, r.runID, r.claim, lazy, func(b *pgx.Batch) error {
				queueTurn(b)
				return queueRest(b)
			})
		}
		return postgres.RunFenced(ctx, c.pool, r.runID, r.claim, lazy, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			if try > 1 && len(msgs) > 0 {
				// The try before may have committed, its answer lost: the step is then journaled already (and
				// so is the end written with it).
				n, err := postgres.RunAssistantMessages(ctx, tx, r.runID)
				if err != nil {
					return err
				}
				if n > r.journaled {
					if also == nil {
						return nil
					}
					if err := also(b, true); err != nil {
						return err
					}
					return tx.SendBatch(ctx, b).Close()
				}
			}
			queueTurn(b)
			if scrubText {
				if err := tx.SendBatch(ctx, b).Close(); err != nil {
					return err
				}
				if err := postgres.StepTextScrub(ctx, tx, r.runID, turn.iteration, r.scrub); err != nil {
					return err
				}
				b = &pgx.Batch{}
			}
			if err := queueRest(b); err != nil {
				return err
			}
			return tx.SendBatch(ctx, b).Close()
		})
	})
	if err == nil && len(msgs) > 0 {
		r.journaled++
		if turn != nil {
			c.logTurn(r, *turn)
		}
	}
	if errors.Is(err, postgres.ErrTakenOver) {
		return err
	}
	if err != nil && away(err) {
		return &databaseAway{err: err}
	}
	return err
}

// codeNotDescribed answers a call of a tool the agent has not described yet (with the meta-tools).
const codeNotDescribed = "not_described"

// codeTooManyToolCalls answers the calls of one LLM answer beyond Config.MaxToolCallsPerAnswer.
const codeTooManyToolCalls = brain.ChatCallTooMany

func (o *toolOutcome) fail(code registry.ErrorCode, message string, details any) {
	body := map[string]any{"status": "failed", "error": map[string]any{"code": code, "message": message}}
	if details != nil {
		body["error"].(map[string]any)["details"] = details
	}
	o.msg.Content, o.msg.IsError = capJSON(body), true
}

// waitReceipts waits for the receipts of a step's calls (sub, subscribed before they were made), those that
// do not await approval, up to the chat's wait.
func (c *Chat) waitReceipts(ctx context.Context, sub *gemsql.Subscription, ids []uuid.UUID, awaiting map[uuid.UUID]bool) (map[uuid.UUID]*registry.Receipt, []uuid.UUID) {
	waitCtx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	if len(awaiting) == 0 {
		res, _ := sub.Wait(waitCtx)
		return res.Receipts, res.Pending
	}
	rest := slices.DeleteFunc(slices.Clone(ids), func(id uuid.UUID) bool { return awaiting[id] })
	if len(rest) == 0 {
		return map[uuid.UUID]*registry.Receipt{}, nil
	}
	res, _ := c.waiter.Wait(waitCtx, rest) // reads first: receipts may have come before this subscription
	return res.Receipts, res.Pending
}

// awaitingContent tells the LLM a call waits for a person's decision, so it does not make it again.
func awaitingContent(id uuid.UUID) string {
	return capJSON(map[string]any{"status": brain.ChatCallAwaitingApproval, "call_id": id,
		"message": "awaiting approval, call id " + id.String() + ": a person must approve it before it runs; do not make it again. " +
			"Tell the user it waits for approval."})
}

// toolResultContent is what the LLM is told about a call: compact JSON of its status and result or error.
func toolResultContent(rec *registry.Receipt, id uuid.UUID, enqueueErr error, pending bool) (string, bool, string) {
	switch {
	case enqueueErr != nil:
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": brain.EUNAVAILABLE, "message": brain.AsError(enqueueErr).Message}}), true, string(registry.StatusFailed)
	case rec == nil || pending:
		return capJSON(map[string]any{"status": "pending", "call_id": id,
			"message": "the call is still running; its receipt will be at GET /calls/" + id.String()}), false, brain.ChatCallPending
	case rec.Status == registry.StatusSucceeded:
		body := map[string]any{"status": "succeeded", "result": json.RawMessage(rec.Result)}
		if rec.IdempotencyHit {
			body["idempotency_hit"] = true
		}
		return capJSON(body), false, string(rec.Status)
	default:
		return capJSON(map[string]any{"status": rec.Status, "error": rec.Error}), true, string(rec.Status)
	}
}

// must drops the error of a marshal that cannot fail.
func must(b []byte, _ error) []byte { return b }

// decisionsNote tells the agent what became of its calls that waited for approval, as the start of the
// turn's user message (a tool result cannot be given twice); it lists them in resp too. "" when none.
func decisionsNote(decided []postgres.Decided, resp *brain.ChatResponse) string {
	if len(decided) == 0 {
		return ""
	}
	list := make([]map[string]any, 0, len(decided))
	for _, d := range decided {
		item := map[string]any{"call_id": d.CallID, "tool": d.Tool, "status": d.Status}
		out := brain.ChatDecided{CallID: d.CallID, Tool: d.Tool, Status: d.Status}
		if len(d.Error) > 0 {
			item["error"] = json.RawMessage(d.Error)
			var e struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal(d.Error, &e)
			out.ErrorCode = e.Code
		} else {
			item["result"] = json.RawMessage(d.Result)
		}
		list = append(list, item)
		resp.Decided = append(resp.Decided, out)
	}
	return "[GEM] Calls you made earlier that waited for a person's approval have been decided (approved calls have run): " +
		capJSON(map[string]any{"status": "decided", "calls": list})
}

// settleFinished gives the session's tool messages of calls that were still running when their turn's wait
// ended the content of the receipts they have now, and returns those calls (with their receipts' status)
// for the agent to be told, in the transaction that starts the next turn.
func (c *Chat) settleFinished(ctx context.Context, tx pgx.Tx, r *chatRun, ids []uuid.UUID) ([]brain.ChatDecided, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	receipts, err := gemsql.ReceiptsGet(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	var settled []uuid.UUID
	var contents []string
	var finished []brain.ChatDecided
	for _, id := range ids {
		rec := receipts[id]
		if rec == nil {
			continue
		}
		content, _, status := toolResultContent(rec, id, nil, false)
		settled, contents = append(settled, id), append(contents, content)
		c.receiptStumbled(r.agent.Slug, rec)
		f := brain.ChatDecided{CallID: id, Tool: rec.ToolName, Status: status}
		if rec.Error != nil {
			f.ErrorCode = string(rec.Error.Code)
		}
		finished = append(finished, f)
	}
	if err := postgres.ToolMessagesSettle(ctx, tx, r.req.SessionID, settled, contents); err != nil {
		return nil, err
	}
	r.resp.Finished = append(r.resp.Finished, finished...)
	return finished, nil
}

// finishedNote tells the agent which of its calls that were still running have finished since: their
// results are now in the tool messages that said they were pending. "" when none.
func finishedNote(finished []brain.ChatDecided) string {
	if len(finished) == 0 {
		return ""
	}
	return "[GEM] Calls you made earlier that were still running have finished; their results replace the pending results above: " +
		capJSON(map[string]any{"status": "finished", "calls": finished})
}

// joinNotes joins the non-empty notes with a blank line.
func joinNotes(notes ...string) string {
	return strings.Join(slices.DeleteFunc(notes, func(s string) bool { return s == "" }), "\n\n")
}

// capJSON marshals v, replacing a result too large for the LLM with a note.
func capJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) <= toolResultMax {
		return string(b)
	}
	status := "succeeded"
	if m, ok := v.(map[string]any); ok {
		status = fmt.Sprint(m["status"])
	}
	b, _ = json.Marshal(map[string]any{"status": status, "truncated": true,
		"message": fmt.Sprintf("the result was %d bytes, more than the %d that are passed back; ask for less (a smaller limit, a narrower search)", len(b), toolResultMax),
		"start":   string(b[:toolResultMax/2])})
	return string(b)
}

// answerMeta answers search_tools and describe_tool from the registry; describing a tool makes it callable.
func (c *Chat) answerMeta(ctx context.Context, r *chatRun, tc llm.ToolCall) (string, bool) {
	var args struct {
		Query string `json:"query"`
		Limit *int   `json:"limit"`
		Name  string `json:"name"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": registry.CodeValidation, "message": "the arguments are not valid JSON: " + err.Error()}}), true
	}
	if tc.Name == metaSearchTools {
		if strings.TrimSpace(args.Query) == "" {
			// Nothing was searched: "no tool fits" would be false (GET /brain/tools refuses an empty q too).
			return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": registry.CodeValidation,
				"message": "query must say what the tool should do, in words"}}), true
		}
		limit := 8
		if args.Limit != nil && *args.Limit > 0 {
			limit = min(*args.Limit, 25)
		}
		type hit struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		var hits []hit
		found, err := postgres.ToolSearch(ctx, c.pool, r.tools.Tools(), args.Query, limit)
		if err != nil {
			return capJSON(map[string]any{"status": "failed", "error": brain.AsError(err)}), true
		}
		r.noToolFits = !postgres.ToolsFit(found, c.minCoverage)
		if r.noToolFits {
			// Offering the least bad tools invites a call that does the wrong thing: say so instead.
			return capJSON(map[string]any{"status": "succeeded", "result": map[string]any{"tools": []hit{}, "fits": false,
				"note": "no tool fits this request; ask the person what they need, or answer without a tool"}}), false
		}
		for _, f := range found {
			fn, _ := r.tools.Function(f.Tool.Name)
			hits = append(hits, hit{Name: fn, Description: f.Tool.Description})
		}
		return capJSON(map[string]any{"status": "succeeded", "result": map[string]any{"tools": hits, "fits": true}}), false
	}
	tool, ok := r.tools.Tool(args.Name)
	if !ok {
		if t, found := c.reg.Tool(args.Name); found {
			if fn, allowed := r.tools.Function(t.Name); allowed {
				tool, ok = t, true
				args.Name = fn
			}
		}
	}
	if !ok {
		return capJSON(map[string]any{"status": "failed", "error": map[string]any{"code": registry.CodeUnknownTool, "message": fmt.Sprintf("no tool %q; use %s to find one", args.Name, metaSearchTools)}}), true
	}
	if !r.visible[tool.Name] {
		return skillFailure(codeSkillNotLoaded, r.notLoaded(tool.Name))
	}
	r.offered[tool.Name] = true
	r.described = tool.Name
	def, _ := r.tools.Def(tool.Name)
	return capJSON(map[string]any{"status": "succeeded", "result": map[string]any{"name": def.Name, "description": def.Description,
		"input_schema": def.Parameters, "idempotency": tool.Idempotency.Mode, "note": "you can call this tool now"}}), false
}

// noteSecrets remembers the clear values of a call's secret inputs, to scrub them from the run's records.
func (r *chatRun) noteSecrets(tool *registry.Tool, input []byte) {
	if !tool.HasSecrets() {
		return
	}
	for _, v := range registry.SecretValues(tool, input) {
		if len(v) >= 4 && !slices.Contains(r.secretValues, v) {
			r.secretValues = append(r.secretValues, v)
		}
	}
	// The longest first, so a value containing another is replaced whole.
	slices.SortFunc(r.secretValues, func(a, b string) int { return len(b) - len(a) })
}

// scrub replaces the run's secret values in a text, as they are and as JSON quotes them.
func (r *chatRun) scrub(s string) string { return scrubValues(s, r.secretValues) }

// scrubJSON scrubs a JSON document; the result stays JSON (a value is replaced inside its quotes).
func (r *chatRun) scrubJSON(b []byte) []byte {
	if len(r.secretValues) == 0 || len(b) == 0 {
		return b
	}
	return []byte(r.scrub(string(b)))
}

// scrubCalls scrubs the arguments of an LLM's tool calls.
func (r *chatRun) scrubCalls(calls []llm.ToolCall) []llm.ToolCall {
	if len(calls) == 0 || len(r.secretValues) == 0 {
		return calls
	}
	out := slices.Clone(calls)
	for i := range out {
		out[i].Arguments = r.scrub(out[i].Arguments)
	}
	return out
}

// turnRecord is one attempt of an LLM turn, as brain_turns records it.
type turnRecord struct {
	iteration, attempt int
	model              string
	req                *llm.Request
	resp               *llm.Response
	err                error
	latency            time.Duration
	// text is the attempt's streamed text not yet written as text events (written with its llm_ended);
	// textWritten says the step wrote some before (this attempt or one before it); secretsKnown is how many
	// secret values the run knew as the step began.
	text         string
	textWritten  bool
	secretsKnown int
	// enqueued are the calls the answer makes: their call_enqueued events are written with it.
	enqueued []postgres.EnqueuedCall
}

// recordTurn stores one attempt of an LLM turn with the run (what was asked, in summary, and what came
// back, bounded).
func (c *Chat) recordTurn(ctx context.Context, r *chatRun, t turnRecord) {
	if dbErr := postgres.TurnInsert(context.WithoutCancel(ctx), c.pool, c.turnParams(r, t)); dbErr != nil {
		r.log.Warn().Err(dbErr).Msg("error recording an LLM turn")
	}
	c.logTurn(r, t)
}

// turnParams is an LLM turn as brain_turns records it: what was asked, in summary, and what came back.
func (c *Chat) turnParams(r *chatRun, t turnRecord) *postgres.TurnInsertParams {
	req, resp, err := t.req, t.resp, t.err
	tools := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = t.Name
	}
	request, _ := json.Marshal(map[string]any{"messages": len(req.Messages), "tools": tools, "system_chars": len(req.System),
		"last_message": req.Messages[len(req.Messages)-1]})
	request = r.scrubJSON(request)
	var response, usage, errJSON []byte
	if resp != nil {
		response = r.scrubJSON(must(json.Marshal(resp)))
		if len(response) > turnResponseMax {
			response = r.scrubJSON(must(json.Marshal(map[string]any{"truncated": true, "bytes": len(response),
				"content": boundText(resp.Content, turnResponseMax/2), "tool_calls": len(resp.ToolCalls),
				"stop_reason": resp.StopReason, "usage": resp.Usage})))
		}
		usage, _ = json.Marshal(resp.Usage)
	}
	if err != nil {
		errJSON, _ = json.Marshal(brain.AsError(err))
	}
	return &postgres.TurnInsertParams{RunID: r.runID, Iteration: t.iteration, Attempt: t.attempt,
		Provider: c.llm.Provider(), Model: t.model, Request: request, Response: response, Error: errJSON, Usage: usage, Latency: t.latency,
		Text: r.scrub(t.text), Enqueued: t.enqueued}
}

// logTurn logs an LLM turn.
func (c *Chat) logTurn(r *chatRun, t turnRecord) {
	ev := r.log.Info()
	if t.err != nil {
		ev = r.log.Warn().Err(t.err)
	}
	calls := 0
	if t.resp != nil {
		calls = len(t.resp.ToolCalls)
	}
	ev.Int("iteration", t.iteration).Int("attempt", t.attempt).Str("model", t.model).Int("tool_calls", calls).
		Float64("latency_ms", float64(t.latency.Microseconds())/1000).Msg("llm turn")
}

// boundText cuts s to at most limit bytes (at a character's start), saying so at the end.
func boundText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("\n\n[GEM: the answer was %d bytes; only the first %d are kept]", len(s), limit)
	cut := limit - len(note)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}
