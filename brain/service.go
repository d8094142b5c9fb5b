package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// RunResponse is the answer to POST /brain/run, POST /brain/runs/{id}/approve and GET /brain/runs/{id}.
type RunResponse struct {
	// OK is true when the run did what was asked: its plan was valid and every call it waited for succeeded.
	OK    bool      `json:"ok"`
	RunID uuid.UUID `json:"run_id"`
	// Status is the run's status: planned, enqueued, waiting, completed or failed.
	Status           string        `json:"status"`
	Decision         Decision      `json:"decision"`
	PlannedToolCalls []PlannedCall `json:"planned_tool_calls"`
	// Enqueued lists the calls made, in plan order.
	Enqueued []uuid.UUID `json:"enqueued"`
	// Receipts are the receipts of the calls that have one.
	Receipts []*registry.Receipt `json:"receipts"`
	// Pending lists calls still without a receipt (they keep running).
	Pending          []uuid.UUID `json:"pending,omitempty"`
	AssistantMessage string      `json:"assistant_message"`
	NextActions      []string    `json:"next_actions"`
	Errors           []*Error    `json:"errors"`

	// recorded, when set, reports the commit of the run's answer, which may still be under way; see
	// Recorded.
	recorded <-chan error
}

// Recorded waits until the run's answer is recorded in brain_runs and returns the error, if any. A response
// may be sent before: the answer is derived from the calls' receipts, and GET /brain/runs/{id} derives it
// again for a run still waiting.
func (r *RunResponse) Recorded() error {
	if r.recorded == nil {
		return nil
	}
	return <-r.recorded
}

// HTTPStatus is the response's status: that of its first error with a non-200 status, else 200.
func (r *RunResponse) HTTPStatus() int {
	for _, e := range r.Errors {
		if s := HTTPStatus(e.Code); s != 200 {
			return s
		}
	}
	return 200
}

// Service plans, records, enqueues and waits. It never runs a tool itself.
type Service struct {
	reg     *registry.Registry
	planner Planner
	pool    *pgxpool.Pool
	waiter  *gemsql.ReceiptWaiter
	log     zerolog.Logger
	now     func() time.Time
}

// NewService builds the service; the waiter must be started.
func NewService(reg *registry.Registry, planner Planner, pool *pgxpool.Pool, waiter *gemsql.ReceiptWaiter, log zerolog.Logger) *Service {
	return &Service{reg: reg, planner: planner, pool: pool, waiter: waiter, log: log, now: time.Now}
}

// Run handles one request: plan, validate, record, and — by mode — enqueue and wait.
func (s *Service) Run(ctx context.Context, req *RunRequest, requester string) (*RunResponse, error) {
	rec := &runRecord{
		ID:             uuid.Must(uuid.NewV7()),
		Message:        req.Message,
		Mode:           req.Mode,
		ConversationID: req.ConversationID,
		Context:        req.Context,
		Limits:         Limits{MaxToolCalls: req.maxToolCalls(), WaitTimeoutMS: int(req.waitTimeout().Milliseconds())},
		Decision:       Decision{Mode: req.Mode, Planner: s.planner.Name()},
		RequestedBy:    requester,
	}
	log := s.log.With().Str("run_id", rec.ID.String()).Str("mode", string(req.Mode)).Logger()

	plan, err := s.planner.Plan(ctx, PlanRequest{Message: req.Message, Context: req.Context, Now: s.now()})
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			log.Error().Err(err).Msg("planner failed")
		}
		return s.fail(ctx, rec, asError(err))
	}
	rec.Decision.Reason, rec.Decision.Rules, rec.PlannedCalls = plan.Reason, plan.Rules, plan.Calls
	if rec.PlannedCalls == nil {
		rec.PlannedCalls = []PlannedCall{}
	}
	if len(plan.Calls) == 0 {
		rec.Status = RunCompleted
		rec.AssistantMessage = plan.Help
		rec.Errors = []*Error{{Code: ENOPLAN, Message: "nothing in the message matched what I can do", Details: map[string]any{"message": req.Message}}}
		return s.record(ctx, rec)
	}
	if max := req.maxToolCalls(); len(plan.Calls) > max {
		return s.fail(ctx, rec, &Error{Code: EINVALID, Message: fmt.Sprintf("the plan has %d calls, more than limits.max_tool_calls (%d); nothing was enqueued", len(plan.Calls), max)})
	}
	if errs := prepareCalls(s.reg, rec.PlannedCalls, req.Context); len(errs) > 0 {
		rec.Status = RunFailed
		rec.Errors = errs
		rec.AssistantMessage = "The plan is not valid, so nothing was enqueued: " + errs[0].Message
		return s.record(ctx, rec)
	}
	if len(plan.Unmatched) > 0 {
		rec.Errors = append(rec.Errors, &Error{Code: ENOPLAN, Message: "I did not understand part of the message: " + strings.Join(plan.Unmatched, "; "),
			Details: map[string]any{"unmatched": plan.Unmatched}})
	}

	switch req.Mode {
	case ModeAnswer:
		rec.Status = RunCompleted
		rec.AssistantMessage = "I would run:\n" + describePlan(rec.PlannedCalls)
		return s.record(ctx, rec)
	case ModePlan:
		rec.Status = RunPlanned
		rec.AssistantMessage = "I plan to run:\n" + describePlan(rec.PlannedCalls) + "\nApprove the plan to run it."
		rec.NextActions = []string{fmt.Sprintf("approve: POST /brain/runs/%s/approve", rec.ID)}
		return s.record(ctx, rec)
	}

	wait := req.Mode == ModeEnqueueAndWait
	if err := s.enqueue(ctx, rec, wait); err != nil {
		return nil, err
	}
	log.Info().Int("calls", len(rec.CallIDs)).Msg("run enqueued")
	if !wait {
		return s.response(rec, nil, rec.CallIDs), nil
	}
	return s.waitAndAnswer(ctx, rec, req.waitTimeout())
}

// enqueue records the run and makes its calls in one transaction, so a run never points at calls that do
// not exist, nor a call at a run that does not.
func (s *Service) enqueue(ctx context.Context, rec *runRecord, wait bool) error {
	params := make([]gemsql.CallInsertParams, len(rec.PlannedCalls))
	rec.CallIDs = make([]uuid.UUID, len(rec.PlannedCalls))
	for i, pc := range rec.PlannedCalls {
		id := uuid.Must(uuid.NewV7())
		rec.CallIDs[i] = id
		rec.PlannedCalls[i].CallID = &id
		params[i] = gemsql.CallInsertParams{ID: id, ToolName: pc.Tool, Input: pc.Input, RunID: &rec.ID, Agent: rec.Agent,
			RequestedBy: rec.RequestedBy}
	}
	rec.Status = RunEnqueued
	if wait {
		rec.Status = RunWaiting
	}
	// One round trip: a batch without BEGIN is one implicit transaction.
	b := &pgx.Batch{}
	queueInsertRun(b, rec)
	if _, err := gemsql.QueueCallInsertMany(b, params); err != nil {
		return err
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return unavailable(err)
	}
	return nil
}

// waitAndAnswer waits for the run's receipts and records the answer. A wait that times out leaves the
// calls running and says which are pending.
func (s *Service) waitAndAnswer(ctx context.Context, rec *runRecord, timeout time.Duration) (*RunResponse, error) {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.waiter.Wait(waitCtx, rec.CallIDs)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // the client went away; the calls go on and GET /brain/runs/{id} will answer
	}
	return s.answer(ctx, rec, res.Receipts, res.Pending)
}

// answer records what the receipts say and returns the response.
func (s *Service) answer(ctx context.Context, rec *runRecord, receipts map[uuid.UUID]*registry.Receipt, pending []uuid.UUID) (*RunResponse, error) {
	ordered := make([]*registry.Receipt, 0, len(receipts))
	for _, id := range rec.CallIDs {
		if r, ok := receipts[id]; ok {
			ordered = append(ordered, r)
		}
	}
	rec.Receipts = compact(ordered)
	rec.AssistantMessage, rec.NextActions = describeReceipts(s.reg, ordered, pending)
	rec.Errors = slicesDeleteCodes(rec.Errors, ECALLFAILED, ETIMEOUT)
	for _, r := range ordered {
		if r.Status != registry.StatusSucceeded {
			rec.Errors = append(rec.Errors, &Error{Code: ECALLFAILED, Message: fmt.Sprintf("%s %s: %s", r.ToolName, r.Status, r.Error.Message),
				Details: map[string]any{"call_id": r.CallID, "tool": r.ToolName, "error": r.Error}})
		}
	}
	if len(pending) > 0 {
		rec.Errors = append(rec.Errors, &Error{Code: ETIMEOUT, Message: fmt.Sprintf("%d of %d calls have no receipt yet; they keep running", len(pending), len(rec.CallIDs)),
			Details: map[string]any{"pending": pending}})
	} else {
		rec.Status = RunCompleted
	}
	// The answer is recorded while the response goes out (see RunResponse.recorded): the client does not wait
	// for the database, and a lost update only leaves the run waiting until GET /brain/runs/{id}.
	args := updateRunArgs(rec)
	recorded := make(chan error, 1)
	go func() { recorded <- updateRunAnswer(context.WithoutCancel(ctx), s.pool, args) }()
	resp := s.response(rec, ordered, pending)
	resp.recorded = recorded
	return resp, nil
}

func slicesDeleteCodes(errs []*Error, codes ...string) []*Error {
	out := errs[:0:0]
	for _, e := range errs {
		keep := true
		for _, c := range codes {
			if e.Code == c {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

// Approve enqueues a stored plan (mode plan) and, when wait is set, waits for its receipts.
func (s *Service) Approve(ctx context.Context, id uuid.UUID, wait bool, timeout time.Duration, requester string) (*RunResponse, error) {
	var rec *runRecord
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if rec, err = getRun(ctx, tx, id, true); err != nil {
			return err
		}
		if rec.Status != RunPlanned {
			return Errorf(ECONFLICT, "run %s is %s; only a planned run (mode plan) can be approved", id, rec.Status)
		}
		// The registry may have changed since the plan was made.
		if errs := prepareCalls(s.reg, rec.PlannedCalls, nil); len(errs) > 0 {
			return &Error{Code: ECONFLICT, Message: "the stored plan no longer fits the registry: " + errs[0].Message, Details: map[string]any{"errors": errs}}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	// Enqueue with a conditional update so two approvals cannot both enqueue.
	if err := s.enqueueApproved(ctx, rec, wait); err != nil {
		return nil, err
	}
	s.log.Info().Str("run_id", id.String()).Str("approved_by", requester).Int("calls", len(rec.CallIDs)).Msg("plan approved")
	if !wait {
		return s.response(rec, nil, rec.CallIDs), nil
	}
	return s.waitAndAnswer(ctx, rec, timeout)
}

func (s *Service) enqueueApproved(ctx context.Context, rec *runRecord, wait bool) error {
	params := make([]gemsql.CallInsertParams, len(rec.PlannedCalls))
	rec.CallIDs = make([]uuid.UUID, len(rec.PlannedCalls))
	for i, pc := range rec.PlannedCalls {
		id := uuid.Must(uuid.NewV7())
		rec.CallIDs[i] = id
		rec.PlannedCalls[i].CallID = &id
		params[i] = gemsql.CallInsertParams{ID: id, ToolName: pc.Tool, Input: pc.Input, RunID: &rec.ID, Agent: rec.Agent, RequestedBy: rec.RequestedBy}
	}
	rec.Status = RunEnqueued
	if wait {
		rec.Status = RunWaiting
	}
	rec.AssistantMessage = fmt.Sprintf("Approved; enqueued %d %s.", len(params), plural(len(params), "call", "calls"))
	rec.NextActions = nil
	return unavailable(pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		if err := tx.QueryRow(ctx, `SELECT status FROM brain_runs WHERE id = $1 FOR UPDATE`, rec.ID).Scan(&status); err != nil {
			return fmt.Errorf("error locking run: %w", err)
		}
		if status != RunPlanned {
			return Errorf(ECONFLICT, "run %s is %s; only a planned run (mode plan) can be approved", rec.ID, status)
		}
		if err := updateRun(ctx, tx, rec); err != nil {
			return err
		}
		_, err := gemsql.CallInsertMany(ctx, tx, params)
		return err
	}))
}

// GetRun returns a run; a run still waiting is brought up to date from its calls' receipts.
func (s *Service) GetRun(ctx context.Context, id uuid.UUID) (*RunResponse, error) {
	rec, err := getRun(ctx, s.pool, id, false)
	if err != nil {
		return nil, unavailable(err)
	}
	receipts, err := gemsql.ReceiptsGet(ctx, s.pool, rec.CallIDs)
	if err != nil {
		return nil, unavailable(err)
	}
	var pending []uuid.UUID
	for _, id := range rec.CallIDs {
		if _, ok := receipts[id]; !ok {
			pending = append(pending, id)
		}
	}
	if (rec.Status == RunEnqueued || rec.Status == RunWaiting) && len(pending) == 0 {
		return s.answer(ctx, rec, receipts, nil)
	}
	ordered := make([]*registry.Receipt, 0, len(receipts))
	for _, id := range rec.CallIDs {
		if r, ok := receipts[id]; ok {
			ordered = append(ordered, r)
		}
	}
	return s.response(rec, ordered, pending), nil
}

// fail records a run that failed before anything was enqueued.
func (s *Service) fail(ctx context.Context, rec *runRecord, e *Error) (*RunResponse, error) {
	rec.Status = RunFailed
	rec.Errors = []*Error{e}
	rec.AssistantMessage = e.Message
	if rec.PlannedCalls == nil {
		rec.PlannedCalls = []PlannedCall{}
	}
	return s.record(ctx, rec)
}

func (s *Service) record(ctx context.Context, rec *runRecord) (*RunResponse, error) {
	if err := insertRun(ctx, s.pool, rec); err != nil {
		return nil, unavailable(err)
	}
	return s.response(rec, nil, nil), nil
}

func (s *Service) response(rec *runRecord, receipts []*registry.Receipt, pending []uuid.UUID) *RunResponse {
	resp := &RunResponse{
		RunID:            rec.ID,
		Status:           rec.Status,
		Decision:         rec.Decision,
		PlannedToolCalls: rec.PlannedCalls,
		Enqueued:         rec.CallIDs,
		Receipts:         receipts,
		Pending:          pending,
		AssistantMessage: rec.AssistantMessage,
		NextActions:      rec.NextActions,
		Errors:           rec.Errors,
	}
	if resp.Enqueued == nil {
		resp.Enqueued = []uuid.UUID{}
	}
	if resp.Receipts == nil {
		resp.Receipts = []*registry.Receipt{}
	}
	if resp.NextActions == nil {
		resp.NextActions = []string{}
	}
	if resp.Errors == nil {
		resp.Errors = []*Error{}
	}
	if resp.Status == RunEnqueued && len(resp.NextActions) == 0 {
		for _, id := range resp.Enqueued {
			resp.NextActions = append(resp.NextActions, fmt.Sprintf("receipt: GET /calls/%s?wait=5s", id))
		}
	}
	resp.OK = len(resp.Errors) == 0 && resp.Status != RunFailed
	return resp
}

func compact(rs []*registry.Receipt) []compactReceipt {
	out := make([]compactReceipt, len(rs))
	for i, r := range rs {
		out[i] = compactReceipt{CallID: r.CallID, Tool: r.ToolName, Status: string(r.Status), Summary: r.Summary}
		if r.Error != nil {
			out[i].Error, _ = json.Marshal(r.Error)
		}
	}
	return out
}

// unavailable marks a database that cannot be reached as EUNAVAILABLE. *Error values and cancellations pass
// through; an error PostgreSQL itself returned is a bug, left for the error handler to log as internal.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &pgErr) && pgErr.Code[:2] != "08" && pgErr.Code[:2] != "57" && pgErr.Code[:2] != "53":
		return err
	}
	return &Error{Code: EUNAVAILABLE, Message: "the database cannot be reached: " + err.Error()}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
