// Package run handles a run: plan a message, validate the plan, record it and — by mode — enqueue its calls,
// wait for their receipts and answer from them. It never runs a tool itself: the executor does, and the two
// meet only in PostgreSQL.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
)

// Span names of a run, under its HTTP request's span (the enqueue's is gemsql.SpanEnqueue; the wait for
// receipts is the gap before the answer, where the executor's spans are).
const (
	SpanPlan   = "gem.plan"
	SpanAnswer = "gem.answer"
)

// Service plans, records, enqueues and waits. It never runs a tool itself.
type Service struct {
	reg     *registry.Registry
	planner brain.Planner
	rules   brain.Planner
	pool    *pgxpool.Pool
	waiter  *gemsql.ReceiptWaiter
	now     func() time.Time
	zone    *time.Location // answers say times in it
	// sentences say what succeeded calls did (UseSentences).
	sentences Sentences
	// recordings are the answers being recorded after their responses were made (Recorded, Close).
	recordings recordings
}

// NewService builds the service; the waiter must be started.
// It logs through the logger in each request's context.
func NewService(reg *registry.Registry, planner brain.Planner, pool *pgxpool.Pool, waiter *gemsql.ReceiptWaiter) *Service {
	return &Service{reg: reg, planner: planner, pool: pool, waiter: waiter, now: time.Now, zone: time.Local}
}

// UseTimezone sets the zone answers say times in: the one the planner reads them in. It defaults to the
// local zone.
func (s *Service) UseTimezone(loc *time.Location) {
	if loc != nil {
		s.zone = loc
	}
}

// Planner is the service's planner.
func (s *Service) Planner() brain.Planner { return s.planner }

// Run handles one request: plan, validate, record, and — by mode — enqueue and wait. agent is the agent the
// calls are made for ("" for none): the only agent of a caller limited to some (docs/governance.md).
func (s *Service) Run(ctx context.Context, req *brain.RunParams, requester, agent string) (*brain.RunResponse, error) {
	return s.run(ctx, s.planner, req, requester, agent)
}

func (s *Service) run(ctx context.Context, planner brain.Planner, req *brain.RunParams, requester, agent string) (*brain.RunResponse, error) {
	if req.Mode == "" {
		req.Mode = brain.ModeDefault
	}
	if req.IdempotencyKey != "" {
		// A repeat is answered before it is planned again; two requests at once are decided by the insert.
		if err := postgres.RequestKeyCheck(ctx, s.pool, requester, req.IdempotencyKey, req.Fingerprint); err != nil {
			return s.repeated(ctx, err, req, requester)
		}
	}
	resp, err := s.plan(ctx, planner, req, requester, agent)
	if err != nil {
		return s.repeated(ctx, err, req, requester)
	}
	return resp, nil
}

// repeated answers a request whose key holds an earlier run (err a *postgres.RepeatedRequest) with that
// run, as GET /brain/runs/{id} answers it: a run still waiting for receipts is waited for up to the
// request's wait_timeout_ms first, as the first request was. Any other err is returned as it is.
func (s *Service) repeated(ctx context.Context, err error, req *brain.RunParams, requester string) (*brain.RunResponse, error) {
	var repeat *postgres.RepeatedRequest
	if !errors.As(err, &repeat) {
		return nil, err
	}
	rec, err := postgres.RunGet(ctx, s.pool, repeat.RunID, false)
	if err != nil {
		return nil, err
	}
	// An async repeat (OnRecorded set) is answered at once, from the run as it is: 202 while it goes on, and
	// as its first request was when it was refused.
	if req.OnRecorded == nil && rec.Status == brain.RunWaiting {
		waitCtx, cancel := context.WithTimeout(ctx, req.WaitTimeout())
		_, _ = s.waiter.Wait(waitCtx, rec.CallIDs) // GetRun answers from the receipts there are
		cancel()
	}
	resp, err := s.GetRun(ctx, repeat.RunID, brain.Reader{Name: requester})
	if err != nil {
		return nil, err
	}
	resp.Repeated = true
	return resp, nil
}

// plan handles a request that is no repeat: plan, validate, record, and — by mode — enqueue and wait.
func (s *Service) plan(ctx context.Context, planner brain.Planner, req *brain.RunParams, requester, agent string) (*brain.RunResponse, error) {
	rec := &brain.Run{
		ID:             uuid.Must(uuid.NewV7()),
		Message:        req.Message,
		Mode:           req.Mode,
		ConversationID: req.ConversationID,
		Context:        req.Context,
		Limits:         brain.Limits{MaxToolCalls: req.MaxToolCalls(), WaitTimeoutMS: int(req.WaitTimeout().Milliseconds())},
		Decision:       brain.Decision{Mode: req.Mode, Planner: planner.Name()},
		RequestedBy:    requester,
		Agent:          agent,
		IdempotencyKey: req.IdempotencyKey,
		Fingerprint:    req.Fingerprint,
	}
	log := brain.LogRun(ctx, rec.ID)

	planCtx, span := telemetry.Start(ctx, SpanPlan, attribute.String("gem.planner", planner.Name()), attribute.String("gem.mode", string(req.Mode)))
	plan, err := planner.Plan(planCtx, brain.PlanRequest{Message: req.Message, Context: req.Context, Now: s.now()})
	if plan != nil {
		span.SetAttributes(attribute.Int("gem.planned_calls", len(plan.Calls)))
	}
	telemetry.End(span, err)
	if err != nil {
		var e *brain.Error
		if !errors.As(err, &e) {
			log.Error().Err(err).Msg("planner failed")
		}
		if brain.ErrorCode(err) == brain.EUNAVAILABLE {
			// Nothing was done (the LLM planner could not be asked): the key is not spent, so the client's
			// retry with it tries again.
			rec.IdempotencyKey, rec.Fingerprint = "", nil
		}
		return s.fail(ctx, rec, brain.AsError(err))
	}
	rec.Decision.Reason, rec.Decision.Rules, rec.PlannedCalls = plan.Reason, plan.Rules, plan.Calls
	if rec.PlannedCalls == nil {
		rec.PlannedCalls = []brain.PlannedCall{}
	}
	if len(plan.Calls) == 0 {
		// Nothing to run: the run answers (GEM's brain switches to answer too), with the explanation asked
		// for, or with what it can do when it did not understand.
		rec.Status = brain.RunCompleted
		rec.Decision.Mode = brain.ModeAnswer
		if plan.Answer != "" {
			rec.AssistantMessage = plan.Answer
			return s.record(ctx, rec)
		}
		rec.AssistantMessage = plan.Help
		rec.Errors = []*brain.Error{{Code: brain.ENOPLAN, Message: "nothing in the message matched what I can do", Details: map[string]any{"message": req.Message}}}
		return s.record(ctx, rec)
	}
	// A plan is all or nothing: a client that retries a message it was told failed must not make the part
	// that was understood twice.
	if len(plan.Unmatched) > 0 {
		rec.Status = brain.RunFailed
		rec.Errors = []*brain.Error{{Code: brain.ENOPLAN,
			Message: "I did not understand part of the message, so nothing was run: " + strings.Join(quoted(plan.Unmatched), "; "),
			Details: map[string]any{"unmatched": plan.Unmatched, "understood": plan.Rules}}}
		rec.AssistantMessage = rec.Errors[0].Message + ". I understood:\n" + brain.DescribePlan(rec.PlannedCalls) +
			"\nSay again what you meant by the rest, or send the parts I understood on their own."
		return s.record(ctx, rec)
	}
	if max := req.MaxToolCalls(); len(plan.Calls) > max {
		return s.fail(ctx, rec, &brain.Error{Code: brain.EINVALID, Message: fmt.Sprintf("the plan has %d calls, more than limits.max_tool_calls (%d); nothing was enqueued", len(plan.Calls), max)})
	}
	if errs := brain.PrepareCalls(s.reg, rec.PlannedCalls, req.Context); len(errs) > 0 {
		rec.Status = brain.RunFailed
		rec.Errors = errs
		rec.AssistantMessage = "The plan is not valid, so nothing was enqueued: " + errs[0].Message
		return s.record(ctx, rec)
	}
	if e, err := s.agentRefuses(ctx, rec.Agent, rec.PlannedCalls); err != nil {
		return nil, err
	} else if e != nil {
		return s.fail(ctx, rec, e)
	}

	switch req.Mode {
	case brain.ModeAnswer:
		rec.Status = brain.RunCompleted
		rec.AssistantMessage = "I would run:\n" + brain.DescribePlan(rec.PlannedCalls)
		return s.record(ctx, rec)
	case brain.ModePlan:
		rec.Status = brain.RunPlanned
		rec.AssistantMessage = "I plan to run:\n" + brain.DescribePlan(rec.PlannedCalls) + "\nApprove the plan to run it."
		rec.NextActions = []string{fmt.Sprintf("approve: POST /brain/runs/%s/approve", rec.ID)}
		return s.record(ctx, rec)
	}

	wait := req.Mode == brain.ModeEnqueueAndWait
	params := s.callParams(rec, wait)
	if !wait {
		rec.AssistantMessage = describeEnqueued(rec.PlannedCalls)
	}
	// A waiter hears of the receipts from before the calls exist, so it never reads them first.
	var sub *gemsql.Subscription
	if wait {
		sub = s.waiter.Subscribe(rec.CallIDs)
		defer sub.Close()
	}
	awaiting, err := s.enqueue(ctx, rec, params)
	if err != nil {
		return nil, err
	}
	log.Info().Str("mode", string(req.Mode)).Int("calls", len(rec.CallIDs)).Int("awaiting_approval", len(awaiting)).Msg("run enqueued")
	if req.OnRecorded != nil {
		req.OnRecorded(rec.ID)
	}
	if !wait {
		return s.response(rec, nil, rec.CallIDs), nil
	}
	return s.waitAndAnswer(ctx, rec, sub, req.WaitTimeout(), awaiting)
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// enqueue records the run and makes its calls in one transaction, so a run never points at calls that do
// not exist, nor a call at a run that does not. It returns the calls that await approval.
func (s *Service) enqueue(ctx context.Context, rec *brain.Run, params []gemsql.CallInsertParams) (_ map[uuid.UUID]bool, err error) {
	ctx, end := gemsql.StartEnqueue(ctx, params)
	defer func() { end(err) }()
	// One round trip: a batch without BEGIN is one implicit transaction.
	b := &pgx.Batch{}
	postgres.RunInsertQueue(b, rec)
	var made []gemsql.Inserted
	ids, err := gemsql.CallInsertQueue(ctx, b, &made, params...)
	if err != nil {
		return nil, err
	}
	// The run's insert numbered the calls' events (call_enqueued) from its plan; the calls held for approval
	// add theirs.
	postgres.RunCallsHeldQueue(b, rec.ID, ids)
	if err := postgres.BatchSend(ctx, s.pool, b); err != nil {
		return nil, err
	}
	return gemsql.InsertedAwaiting(made), nil
}

// waitAndAnswer waits for the run's receipts (sub, subscribed before the calls were made) and records the
// answer. A wait that times out leaves the calls running and says which are pending.
// Calls that await approval are not waited for: they are answered as such at once.
func (s *Service) waitAndAnswer(ctx context.Context, rec *brain.Run, sub *gemsql.Subscription, timeout time.Duration, awaiting map[uuid.UUID]bool) (*brain.RunResponse, error) {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res *gemsql.WaitResult
	var err error
	if len(awaiting) == 0 {
		res, err = sub.Wait(waitCtx)
	} else if rest := slices.DeleteFunc(slices.Clone(rec.CallIDs), func(id uuid.UUID) bool { return awaiting[id] }); len(rest) > 0 {
		res, err = s.waiter.Wait(waitCtx, rest) // reads first: receipts may have come before this subscription
	} else {
		res = &gemsql.WaitResult{Receipts: map[uuid.UUID]*registry.Receipt{}}
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // the client went away; the calls go on and GET /brain/runs/{id} will answer
	}
	var waiting []uuid.UUID
	for _, id := range rec.CallIDs {
		if awaiting[id] {
			waiting = append(waiting, id)
		}
	}
	return s.answer(ctx, rec, res.Receipts, res.Pending, waiting)
}

// answer records what the receipts say and returns the response.
// Calls awaiting approval (awaiting) are pending too, with an error of their own.
func (s *Service) answer(ctx context.Context, rec *brain.Run, receipts map[uuid.UUID]*registry.Receipt, pending, awaiting []uuid.UUID) (*brain.RunResponse, error) {
	_, span := telemetry.Start(ctx, SpanAnswer, attribute.Int("gem.receipts", len(receipts)), attribute.Int("gem.pending", len(pending)+len(awaiting)))
	defer span.End()
	ordered := make([]*registry.Receipt, 0, len(receipts))
	for _, id := range rec.CallIDs {
		if r, ok := receipts[id]; ok {
			ordered = append(ordered, r)
		}
	}
	rec.Receipts = brain.Compact(ordered)
	rec.AssistantMessage, rec.NextActions = describeReceipts(s.reg, s.sentences, inputsByCall(rec.PlannedCalls), ordered, pending, s.zone)
	rec.Errors = slices.DeleteFunc(slices.Clone(rec.Errors), func(e *brain.Error) bool {
		return e.Code == brain.ECALLFAILED || e.Code == brain.ETIMEOUT || e.Code == brain.EAWAITING
	})
	for _, r := range ordered {
		if r.Status != registry.StatusSucceeded {
			rec.Errors = append(rec.Errors, &brain.Error{Code: brain.ECALLFAILED, Message: fmt.Sprintf("%s %s: %s", r.ToolName, r.Status, r.Error.Message),
				Details: map[string]any{"call_id": r.CallID, "tool": r.ToolName, "error": r.Error}})
		}
	}
	if len(pending) > 0 {
		rec.Errors = append(rec.Errors, &brain.Error{Code: brain.ETIMEOUT, Message: fmt.Sprintf("%d of %d calls have no receipt yet; they keep running", len(pending), len(rec.CallIDs)),
			Details: map[string]any{"pending": pending}})
	}
	if len(awaiting) > 0 {
		rec.Errors = append(rec.Errors, &brain.Error{Code: brain.EAWAITING, Message: fmt.Sprintf(
			"%d of %d calls await approval: they run once a person approves them (POST /calls/{id}/approve)", len(awaiting), len(rec.CallIDs)),
			Details: map[string]any{"awaiting_approval": awaiting}})
		pending = append(slices.Clone(pending), awaiting...)
	}
	if len(pending) == 0 {
		rec.Status = brain.RunCompleted
	}
	// The answer is recorded while the response goes out (recordings; Recorded waits for it).
	s.recordAnswer(ctx, rec.ID, postgres.RunUpdateArgs(rec))
	return s.response(rec, ordered, pending), nil
}

// Approver is the caller approving a stored plan: its name, grants and (when not nil) the only agents it may
// act as.
type Approver struct {
	Name   string
	Grants registry.Grants
	Agents []string
}

// mayApprove refuses (403) an approval the approver may not give: another caller's plan without approve, or
// a plan with a call the approver could not make itself — the calls run with no more than it holds.
func (a *Approver) mayApprove(rec *brain.Run, reg *registry.Registry) error {
	if rec.RequestedBy != a.Name && !a.Grants.Allows(registry.PermissionApprove) {
		return &brain.Error{Code: brain.EFORBIDDEN, Message: fmt.Sprintf("caller %q lacks permission %s, which approving another caller's plan needs",
			a.Name, registry.PermissionApprove), Details: map[string]any{"caller": a.Name, "missing": []string{registry.PermissionApprove}}}
	}
	if a.Agents != nil && !slices.Contains(a.Agents, rec.Agent) {
		return &brain.Error{Code: brain.EFORBIDDEN, Message: fmt.Sprintf("caller %q may act only as agents %v, and the plan's calls are made for %q",
			a.Name, a.Agents, rec.Agent), Details: map[string]any{"caller": a.Name, "agents": a.Agents, "agent": rec.Agent}}
	}
	var lacking []map[string]any
	var missing []string
	for _, pc := range rec.PlannedCalls {
		t, ok := reg.Tool(pc.Tool)
		if !ok {
			continue // PrepareCalls says so
		}
		if m := a.Grants.Missing(t.Permissions); m != nil {
			lacking = append(lacking, map[string]any{"tool": t.Name, "missing": m})
			for _, p := range m {
				if !slices.Contains(missing, p) {
					missing = append(missing, p)
				}
			}
		}
	}
	if lacking != nil {
		return &brain.Error{Code: brain.EFORBIDDEN, Message: fmt.Sprintf("caller %q lacks permission %s, which the plan's calls need: "+
			"its calls run with no more than the approver holds", a.Name, strings.Join(missing, ", ")),
			Details: map[string]any{"caller": a.Name, "missing": missing, "calls": lacking}}
	}
	return nil
}

// Approve enqueues a stored plan (mode plan) and, when wait is set, waits for its receipts. The run is
// locked, checked against the registry (which may have changed since the plan was made) and the approver's
// grants, updated and its calls inserted in one transaction, so two approvals cannot both enqueue. The calls
// are made in the author's name and carry the approver's (approved_by): the executor checks both.
func (s *Service) Approve(ctx context.Context, id uuid.UUID, wait bool, timeout time.Duration, approver *Approver) (*brain.RunResponse, error) {
	var rec *brain.Run
	var sub *gemsql.Subscription
	var awaiting map[uuid.UUID]bool
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if rec, err = postgres.RunGet(ctx, tx, id, true); err != nil {
			return err
		}
		if rec.RequestedBy != approver.Name && !approver.Grants.Allows(registry.PermissionApprove) {
			return approver.mayApprove(rec, s.reg) // before saying anything of the run
		}
		if rec.Status != brain.RunPlanned {
			return brain.Errorf(brain.ECONFLICT, "run %s is %s; only a planned run (mode plan) can be approved", id, rec.Status)
		}
		if errs := brain.PrepareCalls(s.reg, rec.PlannedCalls, nil); len(errs) > 0 {
			return &brain.Error{Code: brain.ECONFLICT, Message: "the stored plan no longer fits the registry: " + errs[0].Message, Details: map[string]any{"errors": errs}}
		}
		if err := approver.mayApprove(rec, s.reg); err != nil {
			return err
		}
		if e, err := s.agentRefusesIn(ctx, tx, rec.Agent, rec.PlannedCalls); err != nil {
			return err
		} else if e != nil {
			return e
		}
		rec.ApprovedBy = approver.Name
		params := s.callParams(rec, wait)
		if wait {
			sub = s.waiter.Subscribe(rec.CallIDs) // before the calls commit
		}
		rec.AssistantMessage = "Approved. " + describeEnqueued(rec.PlannedCalls)
		rec.NextActions = nil
		if err := postgres.RunUpdate(ctx, tx, rec); err != nil {
			return err
		}
		made, err := gemsql.CallInsert(ctx, tx, params...)
		if err != nil {
			return err
		}
		awaiting = gemsql.InsertedAwaiting(made)
		return postgres.RunCallsAdded(ctx, tx, rec.ID, gemsql.InsertedIDs(made))
	})
	if err != nil {
		return nil, err
	}
	brain.LogRun(ctx, id).Info().Str("approved_by", approver.Name).Int("calls", len(rec.CallIDs)).Msg("plan approved")
	if !wait {
		return s.response(rec, nil, rec.CallIDs), nil
	}
	return s.waitAndAnswer(ctx, rec, sub, timeout, awaiting)
}

// agentRefuses is the 403 of a plan with a call the agent it is made for may not make (its skills do not
// enable the tool), checked as the executor checks (gem_agent_may_call): a plan is all or nothing. It is nil
// for a run made for no agent.
func (s *Service) agentRefuses(ctx context.Context, agent string, calls []brain.PlannedCall) (*brain.Error, error) {
	return s.agentRefusesIn(ctx, s.pool, agent, calls)
}

func (s *Service) agentRefusesIn(ctx context.Context, db gemsql.DBTX, agent string, calls []brain.PlannedCall) (*brain.Error, error) {
	if agent == "" || len(calls) == 0 {
		return nil, nil
	}
	tools := make([]string, len(calls))
	for i, pc := range calls {
		tools[i] = pc.Tool
	}
	missing, err := postgres.AgentToolsMissing(ctx, db, agent, "", tools)
	if err != nil || missing == nil {
		return nil, err
	}
	return &brain.Error{Code: brain.EFORBIDDEN, Message: fmt.Sprintf("agent %q, which the calls are made for, has no enabled skill with %s; nothing was enqueued",
		agent, strings.Join(missing, ", ")), Details: map[string]any{"agent": agent, "tools": missing}}, nil
}

// callParams gives each planned call its id and the run its status (enqueued, or waiting when the caller
// waits), and returns the calls' inserts.
func (s *Service) callParams(rec *brain.Run, wait bool) []gemsql.CallInsertParams {
	params := make([]gemsql.CallInsertParams, len(rec.PlannedCalls))
	rec.CallIDs = make([]uuid.UUID, len(rec.PlannedCalls))
	for i, pc := range rec.PlannedCalls {
		id := uuid.Must(uuid.NewV7())
		rec.CallIDs[i] = id
		rec.PlannedCalls[i].CallID = &id
		params[i] = gemsql.CallInsertParams{ID: id, ToolName: pc.Tool, Input: pc.Input, RunID: &rec.ID, Agent: rec.Agent,
			RequestedBy: rec.RequestedBy, ApprovedBy: rec.ApprovedBy}
		if pc.IdempotencyKey != nil {
			params[i].IdempotencyKey = *pc.IdempotencyKey
		}
	}
	rec.Status = brain.RunEnqueued
	if wait {
		rec.Status = brain.RunWaiting
	}
	return params
}

// GetRun returns a run the reader may read (404 for another's: brain.Reader); a run still waiting is brought
// up to date from its calls' receipts.
func (s *Service) GetRun(ctx context.Context, id uuid.UUID, reader brain.Reader) (*brain.RunResponse, error) {
	rec, err := postgres.RunGet(ctx, s.pool, id, false)
	if err != nil {
		return nil, err
	}
	if !reader.MayReadRun(rec.RequestedBy, rec.ApprovedBy, rec.Status) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no run %s", id)
	}
	receipts, err := gemsql.ReceiptsGet(ctx, s.pool, rec.CallIDs)
	if err != nil {
		return nil, err
	}
	var pending []uuid.UUID
	for _, id := range rec.CallIDs {
		if _, ok := receipts[id]; !ok {
			pending = append(pending, id)
		}
	}
	if rec.Mode == brain.ModeChat {
		// A chat turn is answered by its brain, never derived here: its journal, owner and lease say where it is.
		resp := s.response(rec, orderedReceipts(rec, receipts), pending)
		if resp.Steps, err = postgres.RunSteps(ctx, s.pool, id); err != nil {
			return nil, err
		}
		if rec.Status == brain.RunPlanning || rec.Status == brain.RunWaiting {
			resp.Owner, resp.LeaseUntil = rec.Owner, rec.LeaseUntil
		}
		return resp, nil
	}
	if (rec.Status == brain.RunEnqueued || rec.Status == brain.RunWaiting) && len(pending) == 0 {
		return s.answer(ctx, rec, receipts, nil, nil)
	}
	return s.response(rec, orderedReceipts(rec, receipts), pending), nil
}

// orderedReceipts are a run's receipts in the order of its calls.
func orderedReceipts(rec *brain.Run, receipts map[uuid.UUID]*registry.Receipt) []*registry.Receipt {
	ordered := make([]*registry.Receipt, 0, len(receipts))
	for _, id := range rec.CallIDs {
		if r, ok := receipts[id]; ok {
			ordered = append(ordered, r)
		}
	}
	return ordered
}

// fail records a run that failed before anything was enqueued.
func (s *Service) fail(ctx context.Context, rec *brain.Run, e *brain.Error) (*brain.RunResponse, error) {
	rec.Status = brain.RunFailed
	rec.Errors = []*brain.Error{e}
	rec.AssistantMessage = e.Message
	if rec.PlannedCalls == nil {
		rec.PlannedCalls = []brain.PlannedCall{}
	}
	return s.record(ctx, rec)
}

func (s *Service) record(ctx context.Context, rec *brain.Run) (*brain.RunResponse, error) {
	if err := postgres.RunInsert(ctx, s.pool, rec); err != nil {
		return nil, err
	}
	return s.response(rec, nil, nil), nil
}

func (s *Service) response(rec *brain.Run, receipts []*registry.Receipt, pending []uuid.UUID) *brain.RunResponse {
	resp := &brain.RunResponse{
		RunID:            rec.ID,
		Status:           rec.Status,
		Decision:         rec.Decision,
		PlannedToolCalls: rec.PlannedCalls,
		Enqueued:         enqueued(rec),
		Receipts:         brain.RunReceipts(receipts),
		Pending:          pending,
		AssistantMessage: rec.AssistantMessage,
		NextActions:      rec.NextActions,
		Errors:           rec.Errors,
		RequestedBy:      rec.RequestedBy,
		ApprovedBy:       rec.ApprovedBy,
	}
	if resp.NextActions == nil {
		resp.NextActions = []string{}
	}
	if resp.Errors == nil {
		resp.Errors = []*brain.Error{}
	}
	if resp.Status == brain.RunEnqueued && len(resp.NextActions) == 0 {
		for _, e := range resp.Enqueued {
			resp.NextActions = append(resp.NextActions, fmt.Sprintf("receipt: GET /calls/%s?wait=5s", e.CallID))
		}
	}
	resp.OK = len(resp.Errors) == 0 && resp.Status != brain.RunFailed
	return resp
}

// enqueued lists a run's calls with their tools, in plan order (GEM's enqueued).
func enqueued(rec *brain.Run) []brain.EnqueuedCall {
	out := make([]brain.EnqueuedCall, 0, len(rec.CallIDs))
	tools := map[uuid.UUID]string{}
	for _, pc := range rec.PlannedCalls {
		if pc.CallID != nil {
			tools[*pc.CallID] = pc.Tool
		}
	}
	for _, id := range rec.CallIDs {
		out = append(out, brain.EnqueuedCall{CallID: id, ToolName: tools[id]})
	}
	return out
}

// inputsByCall maps each enqueued call to its planned input, for the sentences that describe receipts.
func inputsByCall(calls []brain.PlannedCall) map[uuid.UUID]json.RawMessage {
	out := make(map[uuid.UUID]json.RawMessage, len(calls))
	for _, pc := range calls {
		if pc.CallID != nil {
			out[*pc.CallID] = pc.Input
		}
	}
	return out
}

// describeEnqueued says what was enqueued, for a run that does not wait.
func describeEnqueued(calls []brain.PlannedCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Tool
	}
	return fmt.Sprintf("Enqueued %d %s: %s. They run in the background; each call's receipt is at GET /calls/{call_id}.",
		len(calls), brain.Plural(len(calls), "call", "calls"), strings.Join(names, ", "))
}
