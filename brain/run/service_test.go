package run_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
	"github.com/gemhq/gem/packs/plans"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// requester is the caller the tests' runs are made for; it holds every permission, as the brain's
// configured token does.
const requester = "tester"

type testBundle struct {
	pool   *pgxpool.Pool
	waiter *gemsql.ReceiptWaiter
	runs   *run.Service
}

// setup is a run service as the brain builds it (the repository's registry, the rules planner, GEM's
// sentences) on dbURL's database: the shared one, which an executor serves, unless a test brings its own.
func setup(t *testing.T, dbURL string) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, gemsql.CallerEnsure(ctx, pool, requester, gemsql.CallerToken, []string{"*"}, "the run service's tests"))
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	waiter := gemsql.NewReceiptWaiter(pool, nil)
	require.NoError(t, waiter.Start(ctx))
	t.Cleanup(waiter.Stop)
	rules, err := planner.NewRulesPlanner(reg, plans.Rules, time.UTC, "")
	require.NoError(t, err)
	s := run.NewService(reg, rules, pool, waiter)
	s.UseRules(rules)
	s.UseSentences(plans.Sentences)
	s.UseTimezone(time.UTC)
	t.Cleanup(s.Close)
	return &testBundle{pool: pool, waiter: waiter, runs: s}
}

// run makes a run for requester.
func (b *testBundle) run(t *testing.T, req *brain.RunParams) *brain.RunResponse {
	t.Helper()
	resp, err := b.runs.Run(context.Background(), req, requester, "")
	require.NoError(t, err)
	return resp
}

// runOK makes a run that must succeed.
func (b *testBundle) runOK(t *testing.T, req *brain.RunParams) *brain.RunResponse {
	t.Helper()
	resp := b.run(t, req)
	require.True(t, resp.OK, "%+v", resp.Errors)
	return resp
}

// getRun reads a run as its requester does.
func (b *testBundle) getRun(t *testing.T, id uuid.UUID) *brain.RunResponse {
	t.Helper()
	resp, err := b.runs.GetRun(context.Background(), id, brain.Reader{Name: requester, All: true, Approver: true})
	require.NoError(t, err)
	return resp
}

func TestRunEnqueueAndWait(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	resp := b.runOK(t, &brain.RunParams{Message: "create a task to call John about the gutters, urgent", Mode: brain.ModeEnqueueAndWait})
	require.Equal(t, brain.RunCompleted, resp.Status)
	require.Equal(t, brain.ModeEnqueueAndWait, resp.Decision.Mode)
	require.Equal(t, "rules", resp.Decision.Planner)
	require.Equal(t, []string{"create_task"}, resp.Decision.Rules)
	require.Len(t, resp.PlannedToolCalls, 1)
	require.Len(t, resp.Enqueued, 1)
	require.Equal(t, "os.create_task", resp.Enqueued[0].ToolName)
	require.Len(t, resp.Receipts, 1)
	r := resp.Receipts[0]
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Equal(t, resp.Enqueued[0].CallID, r.CallID)
	require.Contains(t, resp.AssistantMessage, "Created task “call John about the gutters” (high priority)")
	require.NotEmpty(t, resp.NextActions)

	// The run, its call and the receipt are in the database, tied together. (The answer is recorded while
	// the response goes out: Recorded returns once it is.)
	b.runs.Recorded(context.Background(), resp.RunID)
	require.Equal(t, brain.RunCompleted, testenv.RunStatus(t, b.pool, resp.RunID))
	c, err := gemsql.CallGet(context.Background(), b.pool, resp.Enqueued[0].CallID)
	require.NoError(t, err)
	require.Equal(t, &resp.RunID, c.RunID)
	require.Equal(t, requester, c.RequestedBy)
	require.Equal(t, registry.CallSucceeded, c.Status)

	// Reading the run answers the same.
	got := b.getRun(t, resp.RunID)
	require.True(t, got.OK)
	require.Equal(t, brain.RunCompleted, got.Status)
	require.Len(t, got.Receipts, 1)
}

func TestRunAnswerEnqueuesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	resp := b.runOK(t, &brain.RunParams{Message: "create a task to order tiles", Mode: brain.ModeAnswer})
	require.Equal(t, brain.RunCompleted, resp.Status)
	require.Empty(t, resp.Enqueued)
	require.Contains(t, resp.AssistantMessage, "I would run")
	require.Contains(t, resp.AssistantMessage, "os.create_task")
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
}

func TestRunEnqueueReturnsCallIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	resp := b.runOK(t, &brain.RunParams{Message: "note that the Jones job needs a second ladder", Mode: brain.ModeEnqueue})
	require.Equal(t, brain.RunEnqueued, resp.Status)
	require.Len(t, resp.Enqueued, 1)
	require.Empty(t, resp.Receipts)
	require.Contains(t, resp.AssistantMessage, "Enqueued 1 call: os.create_note")
	require.Contains(t, resp.NextActions[0], "/calls/"+resp.Enqueued[0].CallID.String())

	// Wait for the call's receipt.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	receipt, err := b.waiter.WaitOne(ctx, resp.Enqueued[0].CallID)
	require.NoError(t, err)
	require.NotNil(t, receipt)
	require.Equal(t, registry.StatusSucceeded, receipt.Status)
	c, err := gemsql.CallGet(context.Background(), b.pool, resp.Enqueued[0].CallID)
	require.NoError(t, err)
	require.Equal(t, registry.CallSucceeded, c.Status)
	require.Equal(t, "os.create_note", c.ToolName)

	// Reading the run brings it up to date.
	got := b.getRun(t, resp.RunID)
	require.Equal(t, brain.RunCompleted, got.Status)
	require.Contains(t, got.AssistantMessage, "Saved a business note")
}

func TestPlanAndApprove(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)
	ctx := context.Background()
	approver := &run.Approver{Name: requester, Grants: registry.Grants{"*"}}

	resp := b.runOK(t, &brain.RunParams{Message: "new lead Priya Nair 0433 222 111 in Ashfield via facebook", Mode: brain.ModePlan})
	require.Equal(t, brain.RunPlanned, resp.Status)
	require.Empty(t, resp.Enqueued)
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
	var input map[string]any
	require.NoError(t, json.Unmarshal(resp.PlannedToolCalls[0].Input, &input))
	require.Equal(t, map[string]any{"name": "Priya Nair", "phone": "0433 222 111", "suburb": "Ashfield", "source": "meta"}, input)

	approved, err := b.runs.Approve(ctx, resp.RunID, true, brain.WaitTimeoutDefault, approver)
	require.NoError(t, err)
	require.True(t, approved.OK, "%+v", approved.Errors)
	require.Equal(t, brain.RunCompleted, approved.Status)
	require.Len(t, approved.Receipts, 1)
	require.Equal(t, registry.StatusSucceeded, approved.Receipts[0].Status)
	require.Contains(t, approved.AssistantMessage, "Recorded a new lead: Priya Nair")
	require.Equal(t, 1, testenv.CountCalls(t, b.pool, resp.RunID))

	// A plan is approved once.
	_, err = b.runs.Approve(ctx, resp.RunID, false, 0, approver)
	require.Equal(t, brain.ECONFLICT, brain.ErrorCode(err), "%v", err)
	require.Equal(t, 1, testenv.CountCalls(t, b.pool, resp.RunID))

	// Approving without waiting returns the call ids.
	resp = b.run(t, &brain.RunParams{Message: "create a task to measure the Nair roof", Mode: brain.ModePlan})
	enq, err := b.runs.Approve(ctx, resp.RunID, false, 0, approver)
	require.NoError(t, err)
	require.Equal(t, brain.RunEnqueued, enq.Status)
	require.Len(t, enq.Enqueued, 1)
}

func TestContextIsMergedIntoInputs(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	leadID := uuid.NewString()
	// An id the tool's schema has goes into its input; GEM's tasks have none, but a context_ref: the most
	// specific id the context gives (here the lead). Keys no tool has are left out.
	resp := b.runOK(t, &brain.RunParams{Message: "create a task to call Tom back", Mode: brain.ModeAnswer,
		Context: map[string]any{"lead_id": leadID, "channel": "web"}})
	var input map[string]any
	require.NoError(t, json.Unmarshal(resp.PlannedToolCalls[0].Input, &input))
	require.Equal(t, map[string]any{"type": "lead", "id": leadID}, input["context_ref"])
	require.NotContains(t, input, "channel")

	jobID := uuid.NewString()
	resp = b.run(t, &brain.RunParams{Message: "create a task to order the sheets\ncomplete the job", Mode: brain.ModeAnswer,
		Context: map[string]any{"lead_id": leadID, "job_id": jobID}})
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.NoError(t, json.Unmarshal(resp.PlannedToolCalls[0].Input, &input))
	require.Equal(t, map[string]any{"type": "job", "id": jobID}, input["context_ref"], "the job is more specific than its lead")
	var second map[string]any
	require.NoError(t, json.Unmarshal(resp.PlannedToolCalls[1].Input, &second))
	require.Equal(t, map[string]any{"job_id": jobID}, second)

	// The call runs with the merged input (about a lead that exists).
	lead := b.run(t, &brain.RunParams{Message: "new lead Tom Hardy 0400 999 888 in Glebe", Mode: brain.ModeEnqueueAndWait})
	require.True(t, lead.OK, "%+v", lead.Errors)
	var made struct {
		LeadID string `json:"lead_id"`
	}
	require.NoError(t, json.Unmarshal(lead.Receipts[0].Result, &made))
	leadID = made.LeadID
	resp = b.run(t, &brain.RunParams{Message: "create a task to call Tom back", Mode: brain.ModeEnqueueAndWait, Context: map[string]any{"lead_id": leadID}})
	require.True(t, resp.OK, "%+v %+v", resp.Errors, resp.Receipts)
	c, err := gemsql.CallGet(context.Background(), b.pool, resp.Enqueued[0].CallID)
	require.NoError(t, err)
	require.JSONEq(t, `{"title": "call Tom back", "domain": "business", "priority": "normal", "context_ref": {"type": "lead", "id": "`+leadID+`"}}`, string(c.Input))
}

func TestInvalidPlanEnqueuesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	// A context id that breaks the tool's schema (a number, as JSON decodes it): every violation is
	// reported, nothing is enqueued.
	resp := b.run(t, &brain.RunParams{Message: "log call: no answer", Mode: brain.ModeEnqueueAndWait, Context: map[string]any{"entity_id": float64(42)}})
	require.False(t, resp.OK)
	require.Equal(t, brain.RunFailed, resp.Status)
	require.Equal(t, brain.EINVALID, resp.Errors[0].Code)
	details := detailsOf(t, resp.Errors[0])
	violations, _ := details["violations"].([]any)
	require.Len(t, violations, 1)
	require.Equal(t, "/entity_id", violations[0].(map[string]any)["path"])
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
	require.Equal(t, brain.RunFailed, testenv.RunStatus(t, b.pool, resp.RunID))

	// A rule that understood the request but lacks something says what.
	resp = b.run(t, &brain.RunParams{Message: "new lead Bob Lee 0412 345 678", Mode: brain.ModeEnqueueAndWait})
	require.Equal(t, brain.EINVALID, resp.Errors[0].Code)
	require.Contains(t, resp.Errors[0].Message, "which suburb is Bob Lee in?")
	missing := detailsOf(t, resp.Errors[0])["missing"].([]any)
	require.Equal(t, "suburb", missing[0].(map[string]any)["field"])
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))

	// More calls than limits.max_tool_calls: nothing is enqueued.
	resp = b.run(t, &brain.RunParams{Message: "create a task to a\ncreate a task to b\ncreate a task to c", Limits: &brain.Limits{MaxToolCalls: 2}})
	require.Equal(t, brain.EINVALID, resp.Errors[0].Code)
	require.Contains(t, resp.Errors[0].Message, "max_tool_calls")
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
}

// detailsOf is an error's details as a client reads them (JSON objects), whatever Go type they were made as.
func detailsOf(t *testing.T, e *brain.Error) map[string]any {
	t.Helper()
	data, err := json.Marshal(e.Details)
	require.NoError(t, err)
	var details map[string]any
	require.NoError(t, json.Unmarshal(data, &details))
	return details
}

func TestSeveralCallsInOneRun(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	resp := b.runOK(t, &brain.RunParams{Message: "Create a task to order 40 tiles. Note that the Baker roof has asbestos sheeting\nlist urgent tasks", Mode: brain.ModeEnqueueAndWait})
	require.Len(t, resp.Receipts, 3)
	tools := []string{resp.Receipts[0].ToolName, resp.Receipts[1].ToolName, resp.Receipts[2].ToolName}
	require.Equal(t, []string{"os.create_task", "os.create_note", "os.list_tasks"}, tools)
}

func TestNoRuleMatches(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	resp := b.run(t, &brain.RunParams{Message: "sing me a song about gutters", Mode: brain.ModeEnqueueAndWait})
	require.False(t, resp.OK)
	require.Equal(t, brain.ENOPLAN, resp.Errors[0].Code)
	require.Equal(t, brain.ModeAnswer, resp.Decision.Mode, "nothing to run: the run answers, as GEM's does")
	require.Contains(t, resp.AssistantMessage, "I can, for example")
	require.Contains(t, resp.AssistantMessage, "create a task")
	require.Equal(t, 0, testenv.CountCalls(t, b.pool, resp.RunID))
}

func TestFailedCallIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t, shared.dbURL)

	missing := uuid.New()
	resp := b.run(t, &brain.RunParams{Message: "complete task " + missing.String(), Mode: brain.ModeEnqueueAndWait})
	require.False(t, resp.OK)
	require.Equal(t, brain.RunCompleted, resp.Status)
	require.Equal(t, registry.StatusFailed, resp.Receipts[0].Status)
	require.Equal(t, registry.CodeNotFound, resp.Receipts[0].Error.Code)
	require.Equal(t, brain.ECALLFAILED, resp.Errors[0].Code)
	require.Contains(t, resp.AssistantMessage, "not_found")
}

// TestWaitTimeout uses a database no executor serves: the wait times out, says which calls are pending and
// leaves them queued; once an executor starts they run, and the run is answered when it is read.
func TestWaitTimeout(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	b := setup(t, dbURL)

	start := time.Now()
	resp := b.run(t, &brain.RunParams{Message: "health check", Mode: brain.ModeEnqueueAndWait, Limits: &brain.Limits{WaitTimeoutMS: 1000}})
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.False(t, resp.OK)
	require.Equal(t, brain.RunWaiting, resp.Status)
	require.Equal(t, []uuid.UUID{resp.Enqueued[0].CallID}, resp.Pending)
	require.Equal(t, brain.ETIMEOUT, resp.Errors[0].Code)
	require.Contains(t, resp.AssistantMessage, "still running")
	c, err := gemsql.CallGet(context.Background(), b.pool, resp.Enqueued[0].CallID)
	require.NoError(t, err)
	require.Equal(t, registry.CallQueued, c.Status, "the call was left in the queue, not cancelled")

	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	defer e.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	receipt, err := b.waiter.WaitOne(ctx, resp.Enqueued[0].CallID)
	require.NoError(t, err)
	require.NotNil(t, receipt)
	got := b.getRun(t, resp.RunID)
	require.True(t, got.OK, "%+v", got.Errors)
	require.Equal(t, brain.RunCompleted, got.Status)
	require.Contains(t, got.AssistantMessage, "GEM is ")
}
