package executor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestApprovals: a call of a tool that requires approval waits, without a job, until a caller holding
// "approve" decides: approved, it runs; rejected or expired, it gets its one receipt and never runs. A second
// decision, a late one, and one by a caller without the permission are refused with their own SQLSTATEs.
func TestApprovals(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant('boss', '{approve}'), gem_caller_grant('clerk', '{read:*}')`)
	require.NoError(t, err)

	awaiting := func() uuid.UUID {
		t.Helper()
		id := b.call(t, ctx, "test.approve_me", `{}`)
		var status, requiredBy string
		var job *int64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT c.status, c.job_id, p.required_by FROM core_calls c
			JOIN core_pending_approvals p ON p.call_id = c.id WHERE c.id = $1`, id).Scan(&status, &job, &requiredBy))
		require.Equal(t, "awaiting_approval", status)
		require.Nil(t, job, "a call awaiting approval has no job")
		require.Equal(t, "tool", requiredBy)
		return id
	}
	decide := func(id uuid.UUID, approve bool, reason, decider string) (string, error) {
		var status string
		err := b.pool.QueryRow(ctx, `SELECT gem_call_decide($1, $2, $3, $4)`, id, approve, reason, decider).Scan(&status)
		return status, err
	}
	refused := func(err error, code, contains string) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%v", err)
		require.Equal(t, code, pgErr.Code, pgErr.Message)
		require.Contains(t, pgErr.Message, contains)
	}

	// Approved: it runs, and its receipt is the handler's.
	id := awaiting()
	_, err = decide(id, true, "looks right", "clerk")
	refused(err, "GA004", `caller clerk may not decide approvals`)
	status, err := decide(id, true, "looks right", "boss")
	require.NoError(t, err)
	require.Equal(t, "queued", status)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	_, err = decide(id, false, "changed my mind", "boss")
	refused(err, "GA001", "already approved by boss")

	// Rejected: its receipt says who and why; it never ran.
	id = awaiting()
	status, err = decide(id, false, "not today", "boss")
	require.NoError(t, err)
	require.Equal(t, "failed", status)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodeRejected, r.Error.Code)
	require.Equal(t, "rejected by boss: not today", r.Error.Message)
	require.Equal(t, map[string]any{"decided_by": "boss", "reason": "not today"}, decodeDetails(t, r))
	require.Equal(t, 0, r.Attempt, "no attempt ran")

	// Expired: the receipt comes within a second of the bound (1.5 s), and a decision after it is refused.
	id = awaiting()
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodeApprovalExpired, r.Error.Code, r.Error.Message)
	var late time.Duration
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT r.finished_at - a.expires_at FROM core_tool_receipts r
		JOIN core_approvals a ON a.call_id = r.call_id WHERE r.call_id = $1`, id).Scan(&late))
	require.GreaterOrEqual(t, late, time.Duration(0))
	require.Less(t, late, time.Second, "the expiry fired %s after its bound", late)
	t.Logf("the expiry fired %s after its bound", late)
	_, err = decide(id, true, "", "boss")
	refused(err, "GA002", "expired")

	// A call that needs none cannot be decided; nor can one that does not exist.
	plain := b.call(t, ctx, "test.no_db", `{}`)
	_, err = decide(plain, true, "", "boss")
	refused(err, "GA003", "does not await approval")
	b.waitOne(t, ctx, plain)
	_, err = decide(uuid.New(), true, "", "boss")
	refused(err, "GA003", "does not await approval")

	// Every one of them has exactly one receipt.
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls c WHERE c.tool_name = 'test.approve_me'
		AND (SELECT count(*) FROM core_tool_receipts r WHERE r.call_id = c.id) <> 1`))
}

// TestApprovalPolicies: a policy by permission makes calls wait, only those made for an agent when it says so.
func TestApprovalPolicies(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	var policy int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_approval_policies (permission, agents_only, expires_ms)
		VALUES ('write:*', true, 60000) RETURNING id`).Scan(&policy))

	// Made for an agent: it waits, naming the policy.
	var agentCall uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, agent)
		VALUES ('test.no_db', '{}', 'office-assistant'), ('test.sleep', '{"ms": 1, "how": "go"}', 'office-assistant') RETURNING id`).Scan(&agentCall))
	var requiredBy string
	var expiresIn time.Duration
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT required_by, expires_at - created_at FROM core_pending_approvals
		WHERE tool_name = 'test.sleep'`).Scan(&requiredBy, &expiresIn))
	require.Contains(t, requiredBy, "write:*")
	require.InDelta(t, 60, expiresIn.Seconds(), 1)
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM core_pending_approvals WHERE tool_name = 'test.no_db'`),
		"test.no_db declares no permission the policy matches")

	// Made by no agent: it runs at once.
	r := b.waitOne(t, ctx, b.call(t, ctx, "test.sleep", `{"ms": 1, "how": "go"}`))
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)

	// Without the policy, an agent's call runs too.
	_, err := b.pool.Exec(context.Background(), `DELETE FROM core_approval_policies WHERE id = $1`, policy)
	require.NoError(t, err)
	// Its status as made (read after, the executor may have run it already).
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, agent) VALUES ('test.sleep', '{"ms": 1, "how": "go"}', 'office-assistant')
		RETURNING status`).Scan(&status))
	require.Equal(t, "queued", status)
}

// TestAssignmentSettings: a skill's assignment to an agent narrows the agent's calls of its tools: a shorter
// timeout (applied by the executor), fewer attempts and a priority (on the call's job); calls made for no
// agent keep the tool's.
func TestAssignmentSettings(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	_, err := b.pool.Exec(ctx, `WITH a AS (INSERT INTO agents (slug, name) VALUES ('hasty', 'Hasty') RETURNING id),
		s AS (INSERT INTO skills (slug, name, tools) VALUES ('sleepy', 'Sleepy', '{test.sleep}') RETURNING id)
		INSERT INTO agent_skills (agent_id, skill_id, call_timeout_ms, call_max_attempts, call_priority)
		SELECT a.id, s.id, 100, 2, 3 FROM a, s`)
	require.NoError(t, err)

	agentCall := func(input string) uuid.UUID {
		var id uuid.UUID
		require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, agent, max_attempts)
			VALUES ('test.sleep', $1, 'hasty', 5) RETURNING id`, input).Scan(&id))
		return id
	}
	// The job carries the fewer attempts and the priority.
	id := agentCall(`{"ms": 1, "how": "go"}`)
	var attempts, priority int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT j.max_attempts, j.priority FROM river_job j JOIN core_tool_calls c ON c.job_id = j.id
		WHERE c.id = $1`, id).Scan(&attempts, &priority))
	require.Equal(t, 2, attempts)
	require.Equal(t, 3, priority)
	require.Equal(t, registry.StatusSucceeded, b.waitOne(t, ctx, id).Status)

	// 200 ms is within test.sleep's own timeout (300 ms), but not the agent's 100 ms.
	r := b.waitOne(t, ctx, agentCall(`{"ms": 200, "how": "go"}`))
	require.Equal(t, registry.CodeTimeout, r.Error.Code, r.Error.Message)
	require.Contains(t, r.Error.Message, "100ms")

	// Made for no agent, the same call runs under the tool's timeout.
	r = b.waitOne(t, ctx, b.call(t, ctx, "test.sleep", `{"ms": 200, "how": "go"}`))
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
}
